package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// The library is built once per test binary, into a temporary directory.
var (
	libOnce sync.Once
	libDir  string
	libErr  string // why the C toolchain is missing, or the build output
	libTmp  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if libTmp != "" {
		os.RemoveAll(libTmp)
	}
	// Every daemon the tests started exits with its last program.
	if left := leftDaemons(60 * time.Second); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "daemons still serving after the tests: %v\n", left)
		code = 1
	}
	if daemonDir != "" {
		os.RemoveAll(filepath.Dir(daemonDir))
	}
	os.Exit(code)
}

// toolchain reports why the library cannot be built here, or "".
func toolchain() string {
	if _, err := exec.LookPath("cc"); err != nil {
		return "no C compiler (cc)"
	}
	if _, err := os.Stat("/usr/include/infiniband/verbs.h"); err != nil {
		return "no libibverbs headers (/usr/include/infiniband/verbs.h; Debian: libibverbs-dev)"
	}
	return ""
}

// lib builds the drop-in library with build.sh and returns its directory.
// It skips the test only when the C toolchain is missing.
func lib(t *testing.T) string {
	t.Helper()
	if why := toolchain(); why != "" {
		t.Skipf("C toolchain missing: %s; CI installs it", why)
	}
	libOnce.Do(func() {
		dir, err := os.MkdirTemp("", "verbsim-capi-")
		if err != nil {
			libErr = err.Error()
			return
		}
		libTmp = dir
		out, err := exec.Command("bash", "build.sh", dir).CombinedOutput()
		if err != nil {
			libErr = "build.sh: " + err.Error() + "\n" + string(out)
			return
		}
		libDir = dir
	})
	if libDir == "" {
		t.Fatal(libErr)
	}
	return libDir
}

// run runs prog with the library first on the search path, bounded in
// time, and returns its combined output.
func run(t *testing.T, dir string, env []string, prog string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Env = append(append(os.Environ(), "LD_LIBRARY_PATH="+dir), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func readPairs(t *testing.T, name string) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "abi", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) == 2 {
			m[fs[0]] = fs[1]
		}
	}
	return m
}

// TestExportedSymbols reads the built library's dynamic symbol table: it
// must define exactly the names the real libibverbs.so.1 (rdma-core 44)
// exports, each at the real default version node, every (symbol, version)
// pair a consumer imports, and nothing else (the Go runtime stays hidden).
func TestExportedSymbols(t *testing.T) {
	dir := lib(t)
	so := filepath.Join(dir, "libibverbs.so.1")
	if _, err := exec.LookPath("readelf"); err != nil {
		t.Skip("readelf missing (binutils)")
	}
	out, err := exec.Command("readelf", "-d", so).CombinedOutput()
	if err != nil {
		t.Fatalf("readelf -d: %v\n%s", err, out)
	}
	if !bytes.Contains(out, []byte("Library soname: [libibverbs.so.1]")) {
		t.Errorf("SONAME is not libibverbs.so.1:\n%s", out)
	}
	got, nodes := dynamicSymbols(t, so)
	want := readPairs(t, "real_default_versions.txt")
	bad := exportDiff(got, want)
	for _, f := range []string{"REQUIRED_all.txt", "utils_union.txt"} {
		for sym, ver := range readPairs(t, f) {
			if got[sym] != ver {
				bad = append(bad, f+": "+sym+"@"+ver+" not provided")
			}
		}
	}
	b, err := os.ReadFile(filepath.Join("testdata", "abi", "required_version_nodes.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range strings.Fields(string(b)) {
		if !nodes[n] {
			bad = append(bad, "version node "+n+" not defined")
		}
	}
	sort.Strings(bad)
	for _, s := range bad {
		t.Error(s)
	}
	if len(want) < 140 {
		t.Errorf("real_default_versions.txt lists only %d names", len(want))
	}
	t.Logf("%d exports, %d version nodes", len(got), len(nodes))
}

// exportDiff lists how the exports got (symbol -> default version node)
// differ from want: names missing, at another node, or extra.
func exportDiff(got, want map[string]string) []string {
	var bad []string
	for sym, ver := range want {
		if g, ok := got[sym]; !ok {
			bad = append(bad, "missing "+sym+"@@"+ver)
		} else if g != ver {
			bad = append(bad, sym+" is at "+g+", want "+ver)
		}
	}
	for sym, ver := range got {
		if _, ok := want[sym]; !ok {
			bad = append(bad, "extra export "+sym+" "+ver)
		}
	}
	return bad
}

// dynamicSymbols reads the dynamic symbol table of the library so: every
// defined symbol with its default version node, and the version nodes
// defined.
func dynamicSymbols(t *testing.T, so string) (got map[string]string, nodes map[string]bool) {
	t.Helper()
	out, err := exec.Command("readelf", "--dyn-syms", "-W", so).CombinedOutput()
	if err != nil {
		t.Fatalf("readelf --dyn-syms: %v\n%s", err, out)
	}
	got = map[string]string{} // defined symbol -> default version
	nodes = map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		fs := strings.Fields(line)
		// Num: Value Size Type Bind Vis Ndx Name
		if len(fs) < 8 || !strings.HasSuffix(fs[0], ":") || fs[0] == "Num:" || fs[6] == "UND" {
			continue
		}
		if fs[4] == "LOCAL" {
			continue
		}
		name := fs[7]
		if sym, ver, ok := strings.Cut(name, "@@"); ok {
			got[sym] = ver
			continue
		}
		if fs[6] == "ABS" && (strings.HasPrefix(name, "IBVERBS_") || strings.HasPrefix(name, "VERBSIM_")) {
			nodes[name] = true
			continue
		}
		if strings.Contains(name, "@") {
			got[name] = "(non-default version)"
			continue
		}
		got[name] = "(unversioned)"
	}
	return got, nodes
}

// The test-mode library (build.sh --test-hooks), built once per test
// binary when a test asks for it.
var (
	testLibOnce sync.Once
	testLibDir  string
	testLibErr  string
)

// testLib builds the test-mode library into a directory of its own under
// the production library's temporary directory.
func testLib(t *testing.T) string {
	t.Helper()
	lib(t)
	testLibOnce.Do(func() {
		dir := filepath.Join(libTmp, "test-hooks")
		out, err := exec.Command("bash", "build.sh", "--test-hooks", dir).CombinedOutput()
		if err != nil {
			testLibErr = "build.sh --test-hooks: " + err.Error() + "\n" + string(out)
			return
		}
		testLibDir = dir
	})
	if testLibDir == "" {
		t.Fatal(testLibErr)
	}
	return testLibDir
}

// TestTestHookSymbols checks the test-mode library's exports: exactly the
// production library's (same names, same version nodes) plus the hooks of
// verbsim_test.h, each at VERBSIM_TEST_1 (testhooks.map).
func TestTestHookSymbols(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the library a second time")
	}
	prod := lib(t)
	dir := testLib(t)
	if _, err := exec.LookPath("readelf"); err != nil {
		t.Skip("readelf missing (binutils)")
	}
	want, wantNodes := dynamicSymbols(t, filepath.Join(prod, "libibverbs.so.1"))
	hooks := []string{"verbsim_test_cq_push", "verbsim_test_cq_ref", "verbsim_test_cq_unref",
		"verbsim_test_mr_ref", "verbsim_test_mr_unref", "verbsim_test_device"}
	for _, h := range hooks {
		want[h] = "VERBSIM_TEST_1"
	}
	hooks2 := []string{"verbsim_test_qp_fatal", "verbsim_test_qp_force_status", "verbsim_test_qp_outstanding",
		"verbsim_test_srq_take", "verbsim_test_srq_len", "verbsim_test_srq_error",
		"verbsim_test_channel_len", "verbsim_test_port_state", "verbsim_test_faults"}
	for _, h := range hooks2 {
		want[h] = "VERBSIM_TEST_2"
	}
	hooks = append(hooks, hooks2...)
	want["verbsim_test_receive"] = "VERBSIM_TEST_3"
	hooks = append(hooks, "verbsim_test_receive")
	wantNodes["VERBSIM_TEST_1"] = true
	wantNodes["VERBSIM_TEST_2"] = true
	wantNodes["VERBSIM_TEST_3"] = true
	got, nodes := dynamicSymbols(t, filepath.Join(dir, "libibverbs.so.1"))
	bad := exportDiff(got, want)
	for n := range wantNodes {
		if !nodes[n] {
			bad = append(bad, "version node "+n+" not defined")
		}
	}
	for n := range nodes {
		if !wantNodes[n] {
			bad = append(bad, "extra version node "+n)
		}
	}
	sort.Strings(bad)
	for _, s := range bad {
		t.Error(s)
	}
	if len(want) != len(got) {
		t.Errorf("%d exports, want %d", len(got), len(want))
	}
	t.Logf("%d exports (%d hooks), %d version nodes", len(got), len(hooks), len(nodes))
}

// utils makes sure Debian's ibverbs-utils are installed, installing them
// with apt-get when possible, and skips the test otherwise.
func utils(t *testing.T) { aptTool(t, "ibverbs-utils", "ibv_devinfo") }

// aptTool makes sure Debian's package pkg, which installs bin, is there:
// installed with apt-get when missing and possible, else the test is
// skipped with the reason.
func aptTool(t *testing.T, pkg, bin string) {
	t.Helper()
	if _, err := exec.LookPath(bin); err == nil {
		return
	}
	aptPackage(t, pkg)
	if _, err := exec.LookPath(bin); err != nil {
		t.Skipf("%s installed but %s not found", pkg, bin)
	}
}

// TestUtils runs ibv_devices and ibv_devinfo -v, unmodified Debian
// binaries, against the drop-in library.
func TestUtils(t *testing.T) {
	dir := lib(t)
	utils(t)
	out, err := run(t, dir, []string{"VERBSIM_DEVICES=2"}, "ibv_devices")
	if err != nil {
		t.Fatalf("ibv_devices: %v\n%s", err, out)
	}
	for _, w := range []string{"sim0", "sim1", "node GUID"} {
		if !strings.Contains(out, w) {
			t.Errorf("ibv_devices output lacks %q:\n%s", w, out)
		}
	}
	for _, tc := range []struct {
		env  []string
		want []string
	}{
		{[]string{"VERBSIM_DEVICES=2", "VERBSIM_PORTS=2"}, []string{"hca_id:\tsim0", "hca_id:\tsim1",
			"phys_port_cnt:\t\t\t2", "port:\t2", "PORT_ACTIVE (4)", "link_layer:\t\tInfiniBand",
			"max_qp_wr:", "GID[  0]:", "board_id:\t\t\tVERBSIM"}},
		{[]string{"VERBSIM_PROFILE=rxe"}, []string{"hca_id:\tsim0", "link_layer:\t\tEthernet", "RoCE v2"}},
	} {
		out, err := run(t, dir, tc.env, "ibv_devinfo", "-v")
		if err != nil {
			t.Fatalf("%v ibv_devinfo -v: %v\n%s", tc.env, err, out)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v: ibv_devinfo -v output lacks %q:\n%s", tc.env, w, out)
			}
		}
	}
	// A bad setting fails cleanly, naming the variable.
	out, err = run(t, dir, []string{"VERBSIM_DEVICES=lots"}, "ibv_devices")
	if err == nil || !strings.Contains(out, "VERBSIM_DEVICES") {
		t.Errorf("VERBSIM_DEVICES=lots: err %v, output:\n%s", err, out)
	}
}

// cprog compiles testdata/name.c against the system's verbs.h, linked with
// the drop-in library, and returns the binary.
func cprog(t *testing.T, dir, name string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	out, err := exec.Command("cc", "-Wall", "-Wextra", "-Werror", "-g", "-o", bin,
		filepath.Join("testdata", name+".c"), "-L"+dir, "-libverbs").CombinedOutput()
	if err != nil {
		t.Fatalf("cc %s.c: %v\n%s", name, err, out)
	}
	return bin
}

// TestLoopback runs testdata/loopback.c, an ordinary libibverbs program:
// RC loopback between two QPs of one process with -e style events on a
// pollable channel descriptor, RDMA WRITE, an inline SEND, the extended
// QP's builders and the extended CQ's iterator, and bad arguments.
func TestLoopback(t *testing.T) {
	dir := lib(t)
	bin := cprog(t, dir, "loopback")
	for _, env := range [][]string{
		nil,
		{"VERBSIM_MODE=auto"},
		{"VERBSIM_PROFILE=rxe", "VERBSIM_LINK=ib"},
	} {
		out, err := run(t, dir, env, bin)
		if err != nil || !strings.Contains(out, "loopback: OK") {
			t.Errorf("%v loopback: %v\n%s", env, err, out)
		}
	}
}

// TestMWRereg: memory windows (ibv_alloc_mw, ibv_bind_mw, ibv_dealloc_mw)
// and ibv_rereg_mr from C (capi/testdata/mwrereg.c), under the default and
// the rxe profile (whose rereg keeps the keys, MR-15).
func TestMWRereg(t *testing.T) {
	dir := lib(t)
	bin := cprog(t, dir, "mwrereg")
	for _, env := range [][]string{nil, {"VERBSIM_PROFILE=rxe", "VERBSIM_LINK=ib"}} {
		out, err := run(t, dir, env, bin)
		if err != nil || !strings.Contains(out, "mwrereg: OK") {
			t.Errorf("%v mwrereg: %v\n%s", env, err, out)
		}
	}
}

// TestUDGRH: the GRH of a UD receive from C (capi/testdata/udgrh.c, AV-05):
// the AH's traffic class, hop limit and flow label, in the InfiniBand and
// the RoCE form, and the reply path ibv_create_ah_from_wc builds from it,
// under the default and the rxe profile (whose GRHs have flow label 0).
func TestUDGRH(t *testing.T) {
	dir := lib(t)
	bin := cprog(t, dir, "udgrh")
	for _, env := range [][]string{nil, {"VERBSIM_LINK=eth"}, {"VERBSIM_PROFILE=rxe"}, {"VERBSIM_PROFILE=rxe", "VERBSIM_LINK=ib"}} {
		out, err := run(t, dir, env, bin)
		if err != nil || !strings.Contains(out, "udgrh: OK") {
			t.Errorf("%v udgrh: %v\n%s", env, err, out)
		}
	}
}

// valgrindGODEBUG keeps the Go runtime inside the library from timing
// with RDTSCP, which valgrind 3.19 cannot decode on some hosts (it reports
// the instruction in CPUID and then raises SIGILL on it in
// runtime.cputicks). The program's and the glue's code are unaffected.
const valgrindGODEBUG = "GODEBUG=cpu.rdtscp=off"

// TestLoopbackValgrind runs the loopback program under valgrind and fails
// on any error report whose stack passes through the C glue or the
// program. The Go runtime's own reports are false positives (valgrind does
// not know Go's memory management) and are not counted.
func TestLoopbackValgrind(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	dir := lib(t)
	if _, err := exec.LookPath("valgrind"); err != nil {
		t.Skip("valgrind not installed")
	}
	bin := cprog(t, dir, "loopback")
	out, err := run(t, dir, []string{valgrindGODEBUG}, "valgrind", "--num-callers=40", "--leak-check=full", bin)
	if !strings.Contains(out, "loopback: OK") {
		t.Fatalf("valgrind loopback: %v\n%s", err, out)
	}
	ours := 0
	for _, block := range strings.Split(out, "== \n") {
		if !strings.Contains(block, "glue.c") && !strings.Contains(block, "misc.c") &&
			!strings.Contains(block, "loopback.c") {
			continue
		}
		if strings.Contains(block, "Invalid") || strings.Contains(block, "uninitialised") ||
			strings.Contains(block, "Conditional jump") || strings.Contains(block, "definitely lost") {
			ours++
			t.Errorf("valgrind report in our code:\n%s", block)
		}
	}
	t.Logf("valgrind: %d reports in the C glue or the program", ours)
}
