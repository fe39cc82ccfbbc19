package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestXRC runs testdata/xrc.c: XRC domains (by fd -1 and by file), XRC
// SRQs and their numbers, an XRC_RECV and an XRC_SEND QP, SENDs through
// ibv_post_send and ibv_wr_set_xrc_srqn, a remote access error for an SRQ
// of another domain, and the teardown order; under the rxe profile the XRC
// verbs fail with EOPNOTSUPP (XRC-03).
func TestXRC(t *testing.T) {
	dir := lib(t)
	bin := cprog(t, dir, "xrc")
	for _, c := range []struct {
		env  []string
		want string
	}{
		{nil, "xrc: OK\n"},
		{[]string{"VERBSIM_MODE=auto"}, "xrc: OK\n"},
		{[]string{"VERBSIM_PROFILE=rxe", "VERBSIM_LINK=ib"}, "xrc: OK (no XRC on this profile)"},
	} {
		out, err := run(t, dir, c.env, bin)
		if err != nil || !strings.Contains(out, c.want) {
			t.Errorf("%v xrc: %v\n%s", c.env, err, out)
		}
	}
}

// TestXSRQPingpong: Debian's ibv_xsrq_pingpong, server and client in two
// processes: each opens an XRC domain by file (/tmp/xrc_domain), creates
// an XRC SRQ, an XRC_RECV and an XRC_SEND QP, and sends to the other's SRQ
// by its number, which crosses the processes in every frame. The program
// prints no "bytes in" line: it ends with "success" and exit status 0.
func TestXSRQPingpong(t *testing.T) {
	dir := lib(t)
	utils(t)
	if _, err := exec.LookPath("ibv_xsrq_pingpong"); err != nil {
		t.Skip("ibv_xsrq_pingpong not installed")
	}
	for _, c := range []struct {
		name string
		args []string
	}{
		{"plain", nil},
		{"e", []string{"-e"}},
		{"n200-s16384", []string{"-n", "200", "-s", "16384"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := pingpong(t, dir, 60*time.Second, nil, nil, "ibv_xsrq_pingpong", c.args...)
			for _, side := range []struct {
				name, out string
				err       error
			}{{"server", r.srv, r.srvErr}, {"client", r.cli, r.cliErr}} {
				if side.err != nil {
					t.Errorf("%s: %v", side.name, side.err)
				}
				if !strings.Contains(side.out, "SRQN ") || !strings.HasSuffix(strings.TrimSpace(side.out), "success") {
					t.Errorf("%s did not end with success", side.name)
				}
			}
			t.Logf("ibv_xsrq_pingpong %s: both sides done in %v", strings.Join(c.args, " "), r.took.Round(time.Millisecond))
		})
	}
	// Two clients of one server (-c 2): the server's one XRC SRQ takes the
	// messages of both clients' XRC_SEND QPs, through two target QPs.
	t.Run("c2", func(t *testing.T) {
		port := freePort(t)
		env := append(os.Environ(), "LD_LIBRARY_PATH="+dir, fmt.Sprintf("VERBSIM_FABRIC=test%d-%d", os.Getpid(), port), "VERBSIM_TICK=10ns") // as pingpong
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		p := fmt.Sprint(port)
		srv := exec.CommandContext(ctx, "ibv_xsrq_pingpong", "-p", p, "-c", "2")
		srv.Env = env
		var srvOut strings.Builder
		srv.Stdout, srv.Stderr = &srvOut, &srvOut
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		for !listening(port) && ctx.Err() == nil {
			time.Sleep(10 * time.Millisecond)
		}
		outs := make(chan string, 2)
		for i := 0; i < 2; i++ {
			go func() {
				cli := exec.CommandContext(ctx, "ibv_xsrq_pingpong", "-p", p, "localhost")
				cli.Env = env
				out, err := cli.CombinedOutput()
				outs <- fmt.Sprintf("%s(exit: %v)", out, err)
			}()
		}
		for i := 0; i < 2; i++ {
			out := <-outs
			keepOutput(t, fmt.Sprintf("client%d", i), out)
			if !strings.Contains(out, "success\n(exit: <nil>)") {
				t.Errorf("client %d failed", i)
			}
		}
		err := srv.Wait()
		keepOutput(t, "server", srvOut.String())
		if err != nil || !strings.HasSuffix(strings.TrimSpace(srvOut.String()), "success") {
			t.Errorf("server: %v", err)
		}
	})
}

// TestXRCMWValgrind runs testdata/xrc.c and testdata/mwrereg.c under
// valgrind, as TestLoopbackValgrind runs loopback.c: no report whose stack
// passes through the C glue (glue.c, xrc.c, mw.c, misc.c) or the program.
func TestXRCMWValgrind(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	dir := lib(t)
	if _, err := exec.LookPath("valgrind"); err != nil {
		t.Skip("valgrind not installed")
	}
	for _, name := range []string{"xrc", "mwrereg"} {
		bin := cprog(t, dir, name)
		out, err := run(t, dir, []string{"VERBSIM_FABRIC=none", valgrindGODEBUG}, "valgrind", "--num-callers=40", "--leak-check=full", bin)
		if !strings.Contains(out, name+": OK") {
			t.Fatalf("valgrind %s: %v\n%s", name, err, out)
		}
		ours := 0
		for _, block := range strings.Split(out, "== \n") {
			if !strings.Contains(block, "glue.c") && !strings.Contains(block, "misc.c") &&
				!strings.Contains(block, "xrc.c") && !strings.Contains(block, "mw.c") &&
				!strings.Contains(block, name+".c") {
				continue
			}
			if strings.Contains(block, "Invalid") || strings.Contains(block, "uninitialised") ||
				strings.Contains(block, "Conditional jump") || strings.Contains(block, "definitely lost") {
				ours++
				t.Errorf("valgrind report in our code:\n%s", block)
			}
		}
		t.Logf("valgrind %s: %d reports in the C glue or the program", name, ours)
	}
}
