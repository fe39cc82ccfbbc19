package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The cross-process fabric, proven by Debian's ibverbs-utils: each
// pingpong runs as a server and a client, two processes each with its own
// simulated fabric, joined by the abstract unix sockets of VERBSIM_FABRIC.
// Every pair gets a fabric id of its own, so tests running at the same time
// on one machine never meet.

// pingpongOut is where the programs' output is kept: $VERBSIM_PINGPONG_LOGS
// when set (CI keeps it), else only the test log.
func keepOutput(t *testing.T, name, out string) {
	t.Helper()
	t.Logf("%s:\n%s", name, out)
	if dir := os.Getenv("VERBSIM_PINGPONG_LOGS"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err == nil {
			fn := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name() + "-" + name)
			_ = os.WriteFile(filepath.Join(dir, fn+".log"), []byte(out), 0o644)
		}
	}
}

// freePort returns a TCP port nobody listens on, for the programs' own
// out-of-band exchange of addresses.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// listening reports whether some socket listens on TCP port p, reading
// /proc/net/tcp{,6} (connecting would use up the server's one accept).
func listening(p int) bool {
	want := fmt.Sprintf(":%04X ", p)
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		fh, err := os.Open(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) > 3 && strings.HasSuffix(fields[1]+" ", want) && fields[3] == "0A" {
				fh.Close()
				return true
			}
		}
		fh.Close()
	}
	return false
}

type ppResult struct {
	srv, cli       string
	srvErr, cliErr error
	took           time.Duration
}

// pingpong runs prog as a server (with srvEnv added) and as a client on
// loopback, each bounded by limit, and returns their output.
func pingpong(t *testing.T, dir string, limit time.Duration, env, srvEnv []string, prog string, args ...string) ppResult {
	t.Helper()
	return pingpongUnder(t, dir, limit, env, srvEnv, nil, prog, args...)
}

// pingpongUnder is pingpong with both programs run under the command
// wrap (valgrind and its options, say).
func pingpongUnder(t *testing.T, dir string, limit time.Duration, env, srvEnv, wrap []string, prog string, args ...string) ppResult {
	t.Helper()
	port := freePort(t)
	fabric := fmt.Sprintf("test%d-%d", os.Getpid(), port)
	// VERBSIM_TICK: virtual time at a tenth of real speed, so that an RC
	// retry timer (the programs' timeout 14: 67 ms, 7 retries) waits out a
	// peer process the loaded machine does not run for up to 5 s, not
	// 0.5 s; the traffic itself is not slowed (a lost packet's retry is:
	// rc-drop takes 8 s instead of 1). A caller's env overrides it.
	env = append(append(os.Environ(), "LD_LIBRARY_PATH="+dir, "VERBSIM_FABRIC="+fabric, "VERBSIM_TICK=10ns"), env...)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	pargs := append([]string{"-p", fmt.Sprint(port)}, args...)
	command := func(extra ...string) *exec.Cmd {
		argv := append(append(append(append([]string{}, wrap...), prog), pargs...), extra...)
		return exec.CommandContext(ctx, argv[0], argv[1:]...)
	}
	srv := command()
	srv.Env = append(append([]string{}, env...), srvEnv...)
	var srvOut strings.Builder
	srv.Stdout, srv.Stderr = &srvOut, &srvOut
	start := time.Now()
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	for !listening(port) {
		if ctx.Err() != nil || srv.ProcessState != nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cli := command("localhost")
	cli.Env = env
	cliOut, cliErr := cli.CombinedOutput()
	srvErr := srv.Wait()
	r := ppResult{srv: srvOut.String(), cli: string(cliOut), srvErr: srvErr, cliErr: cliErr, took: time.Since(start)}
	if ctx.Err() != nil {
		r.cliErr = fmt.Errorf("timed out after %v (client: %v, server: %v)", limit, cliErr, srvErr)
	}
	keepOutput(t, "server", r.srv)
	keepOutput(t, "client", r.cli)
	return r
}

// TestPingpong: ibv_rc_pingpong (plain, -e, -N, larger -s), ibv_uc_pingpong,
// ibv_ud_pingpong and ibv_srq_pingpong complete their default iterations
// on both sides, server and client in two processes; and rc_pingpong on
// RoCE ports (the rxe profile, GID routing) and with packets lost.
func TestPingpong(t *testing.T) {
	dir := lib(t)
	utils(t)
	for _, c := range pingpongCases {
		t.Run(c.name, func(t *testing.T) { runPingpongCase(t, dir, 60*time.Second, nil, c) })
	}
}

// ppCase is one run of an ibv_*_pingpong pair.
type ppCase struct {
	name string
	env  []string
	prog string
	args []string
}

// pingpongCases are the pingpong runs of both libraries (TestPingpong,
// TestDaemonPingpong).
var pingpongCases = []ppCase{
	{"rc", nil, "ibv_rc_pingpong", nil},
	{"rc-e", nil, "ibv_rc_pingpong", []string{"-e"}},
	{"rc-N", nil, "ibv_rc_pingpong", []string{"-N"}},
	// Completion timestamps: ibv_query_device_ex reports the clock
	// (QUERY-03) and the receive completions carry its cycles (CQX-09).
	{"rc-t", nil, "ibv_rc_pingpong", []string{"-t"}},
	{"rc-s65536", nil, "ibv_rc_pingpong", []string{"-s", "65536", "-n", "200"}},
	{"rc-s1M", nil, "ibv_rc_pingpong", []string{"-s", "1048576", "-n", "20", "-m", "4096"}},
	{"uc", nil, "ibv_uc_pingpong", nil},
	{"ud", nil, "ibv_ud_pingpong", nil},
	{"srq", nil, "ibv_srq_pingpong", nil},
	{"rc-rxe", []string{"VERBSIM_PROFILE=rxe"}, "ibv_rc_pingpong", []string{"-g", "0"}},
	// 2 % of the packets lost on arrival: RC recovers by retransmission
	// (67 ms ACK timeouts), so fewer iterations.
	{"rc-drop", []string{"VERBSIM_DROP=0.02", "VERBSIM_SEED=7"}, "ibv_rc_pingpong", []string{"-n", "100"}},
}

// runPingpongCase runs c as a server and a client on the library in dir,
// with env added, and checks that both complete and report.
func runPingpongCase(t *testing.T, dir string, limit time.Duration, env []string, c ppCase) {
	t.Helper()
	if _, err := exec.LookPath(c.prog); err != nil {
		t.Skipf("%s not installed", c.prog)
	}
	r := pingpong(t, dir, limit, append(append([]string{}, env...), c.env...), nil, c.prog, c.args...)
	for _, side := range []struct {
		name string
		out  string
		err  error
	}{{"server", r.srv, r.srvErr}, {"client", r.cli, r.cliErr}} {
		if side.err != nil {
			t.Errorf("%s: %v", side.name, side.err)
		}
		if c.prog == "ibv_xsrq_pingpong" { // it prints no summary
			continue
		}
		if !strings.Contains(side.out, " bytes in ") || !strings.Contains(side.out, " seconds = ") || !strings.Contains(side.out, " iters in ") {
			t.Errorf("%s printed no bytes/iters line", side.name)
		}
		if c.name == "rc-t" && !strings.Contains(side.out, "Average receive completion clock cycles = ") {
			t.Errorf("%s printed no completion clock cycles", side.name)
		}
	}
	t.Logf("%s %s: both sides done in %v", c.prog, strings.Join(c.args, " "), r.took.Round(time.Millisecond))
}

// TestPingpongDeadPeer: the server dies (SIGKILL) in the middle of a long
// run; the client's next SEND is never acknowledged and ends, after
// retry_cnt timeouts, in a RETRY_EXC_ERR completion (status 12), which
// rc_pingpong reports before it exits with an error: no hang.
//
// The server kills itself when a chosen frame arrives, before its engine
// sees it (VERBSIM_DIE_AFTER), so that the client always has a SEND in
// flight: a peer killed from outside at a random instant may die after
// acknowledging the client's SEND and before sending its reply, and then
// the client, which only waits to receive, would wait for ever, as it
// would on hardware.
func TestPingpongDeadPeer(t *testing.T) {
	dir := lib(t)
	utils(t)
	start := time.Now()
	r := pingpong(t, dir, 30*time.Second, []string{"VERBSIM_TICK=1ns"}, []string{"VERBSIM_DIE_AFTER=300"}, "ibv_rc_pingpong", "-n", "100000")
	if r.cliErr == nil {
		t.Fatal("the client succeeded with its server dead")
	}
	if strings.Contains(r.cliErr.Error(), "timed out") {
		t.Fatalf("the client hung: %v", r.cliErr)
	}
	if !strings.Contains(r.cli, "transport retry counter exceeded (12)") {
		t.Errorf("the client did not report RETRY_EXC_ERR (12)")
	}
	if !strings.Contains(r.srv, "VERBSIM_DIE_AFTER") {
		t.Errorf("the server did not die as planned")
	}
	t.Logf("client failed as expected after %v", time.Since(start).Round(time.Millisecond))
}
