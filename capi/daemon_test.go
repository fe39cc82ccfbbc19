package main

import (
	"bufio"
	"context"
	"fmt"
	"hash/fnv"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The C-only library of the per-host daemon (capi/build.sh --daemon,
// docs/daemon.md), tried as users would: Debian's programs and the
// reproductions of what ended programs on the in-process library. Every
// program of these tests reaches its daemons through a socket directory
// of the test binary's own, and each daemon exits as soon as its last
// program has (VERBSIM_NICD_LINGER=0s); TestMain checks that none is left.

var (
	daemonOnce sync.Once
	daemonDir  string // the library and verbsim
	daemonErr  string
	nicdDir    string // VERBSIM_NICD_DIR of every program
)

// daemonLib builds the C-only library and the verbsim binary beside it,
// once per test binary, and returns their directory.
func daemonLib(t *testing.T) string {
	t.Helper()
	if why := toolchain(); why != "" {
		t.Skipf("C toolchain missing: %s; CI installs it", why)
	}
	daemonOnce.Do(func() {
		dir, err := os.MkdirTemp("", "verbsim-nicd-")
		if err != nil {
			daemonErr = err.Error()
			return
		}
		nicdDir = filepath.Join(dir, "sockets")
		if out, err := exec.Command("bash", "build.sh", "--daemon", filepath.Join(dir, "lib")).CombinedOutput(); err != nil {
			daemonErr = "build.sh --daemon: " + err.Error() + "\n" + string(out)
			return
		}
		daemonDir = filepath.Join(dir, "lib")
	})
	if daemonDir == "" {
		t.Fatal(daemonErr)
	}
	return daemonDir
}

// hangGuard bounds every program run of the daemon tests in wall time:
// only a hang may reach it, never a correct run on a loaded machine (the
// slowest, valgrind's pingpong pair, takes under a minute at load 25 on
// two cores), so it is generous.
const hangGuard = 10 * time.Minute

// daemonEnv is the environment every daemon test gives its programs, on
// top of the test's own: the socket directory, no linger, the engine's own
// tick (the in-process tests' VERBSIM_TICK=10ns is of no use with one
// engine).
func daemonEnv(extra ...string) []string {
	return append([]string{"VERBSIM_NICD_DIR=" + nicdDir, "VERBSIM_NICD_LINGER=0s", "VERBSIM_TICK="}, extra...)
}

// fabricName is a fabric of the test's own.
func fabricName(t *testing.T) string {
	h := fnv.New32a()
	h.Write([]byte(t.Name()))
	return fmt.Sprintf("t%d-%08x", os.Getpid(), h.Sum32())
}

// daemonPID returns the pid of the daemon serving fabric, read off its
// socket (SO_PEERCRED), or 0.
func daemonPID(fabric string) int {
	c, err := net.Dial("unixpacket", filepath.Join(nicdDir, fabric+".sock"))
	if err != nil {
		return 0
	}
	defer c.Close()
	cred, err := peer(c.(*net.UnixConn))
	if err != nil {
		return 0
	}
	return int(cred.Pid)
}

func peer(c *net.UnixConn) (*syscall.Ucred, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *syscall.Ucred
	var cerr error
	if err := rc.Control(func(fd uintptr) {
		cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return nil, err
	}
	return cred, cerr
}

// leftDaemons waits, up to limit, for every daemon of the tests to exit
// (their sockets gone), and returns the sockets still there.
func leftDaemons(limit time.Duration) []string {
	if nicdDir == "" {
		return nil
	}
	deadline := time.Now().Add(limit)
	for {
		socks, _ := filepath.Glob(filepath.Join(nicdDir, "*.sock"))
		if len(socks) == 0 || time.Now().After(deadline) {
			return socks
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDaemonUtils: ibv_devices and ibv_devinfo -v list the daemon's
// devices; a bad setting fails naming the variable.
func TestDaemonUtils(t *testing.T) {
	dir := daemonLib(t)
	utils(t)
	fab := "VERBSIM_FABRIC=" + fabricName(t)
	out, err := run(t, dir, daemonEnv(fab, "VERBSIM_DEVICES=2"), "ibv_devices")
	if err != nil || !strings.Contains(out, "sim0") || !strings.Contains(out, "sim1") {
		t.Errorf("ibv_devices: %v\n%s", err, out)
	}
	out, err = run(t, dir, daemonEnv(fab+"-v", "VERBSIM_PORTS=2"), "ibv_devinfo", "-v")
	if err != nil || strings.Count(out, "PORT_ACTIVE (4)") != 2 || strings.Contains(out, "Failed") {
		t.Errorf("ibv_devinfo -v: %v\n%s", err, out)
	}
	out, err = run(t, dir, daemonEnv(fab+"-bad", "VERBSIM_DEVICES=lots"), "ibv_devices")
	if err == nil || !strings.Contains(out, "VERBSIM_DEVICES") {
		t.Errorf("VERBSIM_DEVICES=lots: err %v, output:\n%s", err, out)
	}
}

// TestDaemonPrograms runs the C test programs of testdata, written for
// the in-process library, on the daemon's.
func TestDaemonPrograms(t *testing.T) {
	dir := daemonLib(t)
	for _, c := range []struct {
		prog string
		env  []string
		args []string
	}{
		{"loopback", nil, []string{"daemon"}},
		{"loopback", []string{"VERBSIM_MODE=auto"}, []string{"daemon"}},
		{"loopback", []string{"VERBSIM_PROFILE=rxe", "VERBSIM_LINK=ib"}, []string{"daemon"}},
		{"mwrereg", nil, nil},
		{"mwrereg", []string{"VERBSIM_PROFILE=rxe", "VERBSIM_LINK=ib"}, nil},
		{"xrc", nil, nil},
		{"xrc", []string{"VERBSIM_PROFILE=rxe", "VERBSIM_LINK=ib"}, nil},
		{"dm", nil, []string{"daemon"}},
		{"parentdomain", nil, nil},
		{"odp", nil, nil},
	} {
		name := c.prog + strings.Join(c.env, ",")
		t.Run(name, func(t *testing.T) {
			bin := cprog(t, dir, c.prog)
			out, err := run(t, dir, daemonEnv(append(c.env, "VERBSIM_FABRIC="+fabricName(t))...), bin, c.args...)
			if err != nil || !strings.Contains(out, c.prog+": OK") {
				t.Errorf("%v\n%s", err, out)
			}
		})
	}
}

// TestDaemonRepro: the reproductions of testdata/nicd.c, each of which
// ended a program on the in-process library (issue 22): registration over
// unmapped memory is EFAULT, a registered buffer unmapped takes traffic
// without a crash, double destroys are EINVAL, exit() in a signal handler
// while threads are in verbs exits cleanly (32 times), a child of fork
// uses devices of its own, a signal without SA_RESTART interrupts a
// blocked ibv_get_cq_event (EINTR) and one with SA_RESTART does not.
func TestDaemonRepro(t *testing.T) {
	dir := daemonLib(t)
	bin := cprogLibs(t, dir, "nicd", "-lpthread")
	for _, c := range []struct {
		cmd  string
		runs int
		want string
	}{
		{"unmapped", 1, "unmapped: OK"},
		{"munmap", 1, "munmap: OK"},
		{"destroy", 1, "destroy: OK"},
		{"sigexit", 32, "sigexit: exiting"},
		{"fork", 1, "fork: OK"},
		{"signal", 1, "signal: OK"},
	} {
		t.Run(c.cmd, func(t *testing.T) {
			for i := range c.runs {
				out, err := run(t, dir, daemonEnv(fmt.Sprintf("VERBSIM_FABRIC=%s-%d", fabricName(t), i)), bin, c.cmd)
				if err != nil || !strings.Contains(out, c.want) {
					t.Fatalf("run %d: %v\n%s", i+1, err, out)
				}
			}
		})
	}
}

// cprogLibs is cprog with more libraries to link.
func cprogLibs(t *testing.T, dir, name string, libs ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	args := append([]string{"-Wall", "-Wextra", "-Werror", "-g", "-o", bin, filepath.Join("testdata", name+".c"),
		"-L" + dir, "-libverbs"}, libs...)
	if out, err := exec.Command("cc", args...).CombinedOutput(); err != nil {
		t.Fatalf("cc %s.c: %v\n%s", name, err, out)
	}
	return bin
}

// TestDaemonIdlePollNoSyscall: polling an empty CQ makes no system call,
// as with a hardware provider: strace sees nothing between the program's
// two marker writes around 100000 polls (testdata/nicd.c idlepoll).
func TestDaemonIdlePollNoSyscall(t *testing.T) {
	dir := daemonLib(t)
	if _, err := exec.LookPath("strace"); err != nil {
		aptTool(t, "strace", "strace")
	}
	bin := cprogLibs(t, dir, "nicd", "-lpthread")
	trace := filepath.Join(t.TempDir(), "strace.out")
	out, err := run(t, dir, daemonEnv("VERBSIM_FABRIC="+fabricName(t)), "strace", "-o", trace, bin, "idlepoll")
	if err != nil || !strings.Contains(out, "idlepoll: OK") {
		t.Fatalf("%v\n%s", err, out)
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i, j := strings.Index(s, `write(1, "polling\n"`), strings.Index(s, `write(1, "polled\n"`)
	if i < 0 || j < i {
		t.Fatalf("no marker writes in the trace:\n%s", s)
	}
	between := strings.Split(strings.TrimSpace(s[i:j]), "\n")[1:]
	if len(between) > 0 {
		t.Errorf("%d system calls while polling an empty CQ 100000 times:\n%s", len(between), strings.Join(between, "\n"))
	}
}

// TestDaemonCrash: a program blocked in ibv_get_cq_event when its daemon
// dies gets EIO at once, its channel's descriptor polls hung up, and every
// verb after fails with EIO: no hang.
func TestDaemonCrash(t *testing.T) {
	dir := daemonLib(t)
	bin := cprogLibs(t, dir, "nicd", "-lpthread")
	fabric := fabricName(t)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "crash")
	cmd.Env = append(append(os.Environ(), "LD_LIBRARY_PATH="+dir), daemonEnv("VERBSIM_FABRIC="+fabric)...)
	var out strings.Builder
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	sc := bufio.NewScanner(pr)
	waiting := false
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if sc.Text() == "waiting" {
			waiting = true
			break
		}
	}
	if !waiting {
		cmd.Wait()
		t.Fatalf("the program did not get to its wait:\n%s", out.String())
	}
	pid := daemonPID(fabric)
	if pid <= 0 {
		t.Fatal("no daemon serves the fabric")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
	}
	err = cmd.Wait()
	os.Remove(filepath.Join(nicdDir, fabric+".sock")) // the killed daemon's
	if err != nil || !strings.Contains(out.String(), "crash: OK") {
		t.Fatalf("%v\n%s", err, out.String())
	}
}

// TestDaemonPingpong: Debian's ibverbs-utils pingpongs as a server and a
// client process on one daemon, the cases of TestPingpong.
func TestDaemonPingpong(t *testing.T) {
	dir := daemonLib(t)
	utils(t)
	cases := append(slices.Clone(pingpongCases), ppCase{"xsrq", nil, "ibv_xsrq_pingpong", nil})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runPingpongCase(t, dir, hangGuard, daemonEnv(), c) })
	}
}

// TestDaemonValgrind: valgrind on an ibv_rc_pingpong pair reports
// nothing at all (no Go runtime in the program any more): no error, no
// leak it would show by default.
func TestDaemonValgrind(t *testing.T) {
	dir := daemonLib(t)
	utils(t)
	if _, err := exec.LookPath("valgrind"); err != nil {
		t.Skip("valgrind not installed")
	}
	vg := []string{"valgrind", "-q", "--error-exitcode=99", "--leak-check=full"}
	r := pingpongUnder(t, dir, hangGuard, daemonEnv(), nil, vg, "ibv_rc_pingpong", "-n", "100")
	for _, side := range []struct {
		name, out string
		err       error
	}{{"server", r.srv, r.srvErr}, {"client", r.cli, r.cliErr}} {
		if side.err != nil {
			t.Errorf("%s: %v", side.name, side.err)
		}
		if strings.Contains(side.out, "==") || !strings.Contains(side.out, " iters in ") {
			t.Errorf("%s: valgrind reported, or the program did not finish:\n%s", side.name, side.out)
		}
	}
}

// TestDaemonDeadPeer: the server of a long ibv_rc_pingpong run dies (the
// daemon kills it at its 300th packet, VERBSIM_DIE_AFTER) with the
// client's SEND in flight; its QPs go with it, and the client's retries
// run out: RETRY_EXC_ERR (12), in virtual time the client cannot fool.
func TestDaemonDeadPeer(t *testing.T) {
	dir := daemonLib(t)
	utils(t)
	r := pingpong(t, dir, hangGuard, daemonEnv(), []string{"VERBSIM_DIE_AFTER=300"}, "ibv_rc_pingpong", "-n", "100000")
	if r.cliErr == nil {
		t.Fatal("the client succeeded with its server dead")
	}
	if strings.Contains(r.cliErr.Error(), "timed out") {
		t.Fatalf("the client hung: %v", r.cliErr)
	}
	if !strings.Contains(r.cli, "transport retry counter exceeded (12)") {
		t.Errorf("the client did not report RETRY_EXC_ERR (12)")
	}
	if !strings.Contains(r.srv, "VERBSIM_DIE_AFTER") || r.srvErr == nil {
		t.Errorf("the server did not die as planned: %v", r.srvErr)
	}
}
