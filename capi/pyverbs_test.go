package main

import (
	"bufio"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The rdma-core test suite that Debian's python3-pyverbs ships (rdma-core
// 44's tests/, run by run_tests.py with the system python), run unmodified
// against the drop-in library: docs/c-programs.md has the results by file
// and every skip's reason.

// pyverbsSuite is where Debian's python3-pyverbs puts rdma-core's tests/
// (some files gzipped, as Debian compresses documentation).
const pyverbsSuite = "/usr/share/doc/rdma-core/tests"

// pyverbsPython is the interpreter python3-pyverbs is built for: the
// system's, whatever python3 comes first on the PATH.
const pyverbsPython = "/usr/bin/python3"

// pyverbsRuns are the runs of the suite: a profile, a link layer and the
// floor of passing tests (a run below it fails: a regression makes tests
// skip or vanish). rdma-core's tests are written on mlx5 and assume its
// readings where the man pages leave a choice (ibv_rereg_mr keeps the MR's
// keys: test_mr_rereg_access caches the rkey before it, MR-15 B; RESET
// deletes the QP's completions from its CQs: test_mr_rereg_pd polls after
// a reset, CQ-26 B), so the mlx5 profile runs it on both link layers with
// no reading picked by hand (VERBSIM_READINGS empty): 127 pass on
// InfiniBand ports and 128 on Ethernet ones (test_create_ah_roce). siw and
// irdma run it on their Ethernet ports: what their devices lack skips
// (34 and 62 pass). The default and rxe profiles fail the tests that
// assume mlx5's readings (docs/c-programs.md).
var pyverbsRuns = []struct {
	profile, link string
	minPass       int
}{
	{"mlx5", "ib", 127},
	{"mlx5", "eth", 128},
	{"siw", "eth", 34},
	{"irdma", "eth", 62},
}

// pyverbsResult is one test's outcome in the -v output.
type pyverbsResult struct {
	id, status, reason string // status: ok, skipped, ERROR, FAIL, expected failure, unexpected success
}

// pyverbsStart matches the line that names a test in unittest's -v output
// (its docstring's first line, if any, follows on the next line).
var pyverbsStart = regexp.MustCompile(`^(test\S*) \((tests\.[\w.]+)\)`)

// pyverbsStatus matches the end of the line that gives its outcome; when
// the test prints something, the outcome comes alone on a later line.
var pyverbsStatus = regexp.MustCompile(`(?:^| \.\.\. )(ok|ERROR|FAIL|skipped '(.*)'|skipped "(.*)"|expected failure|unexpected success)$`)

// parsePyverbs returns the outcome of every test in out, in order.
func parsePyverbs(out string) []pyverbsResult {
	var res []pyverbsResult
	id := ""
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := pyverbsStart.FindStringSubmatch(line); m != nil {
			id = m[2]
		}
		if id == "" {
			continue
		}
		if m := pyverbsStatus.FindStringSubmatch(line); m != nil {
			r := pyverbsResult{id: id, status: m[1]}
			if strings.HasPrefix(m[1], "skipped") {
				r.status, r.reason = "skipped", m[2]+m[3]
			}
			res = append(res, r)
			id = ""
		}
	}
	return res
}

// copySuite copies the suite into dir, uncompressing the gzipped files.
func copySuite(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(pyverbsSuite)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		src, err := os.Open(filepath.Join(pyverbsSuite, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		var r io.Reader = src
		name := e.Name()
		if n, ok := strings.CutSuffix(name, ".gz"); ok {
			zr, err := gzip.NewReader(src)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			r, name = zr, n
		}
		dst, err := os.Create(filepath.Join(dir, name))
		if err == nil {
			_, err = io.Copy(dst, r)
			if cerr := dst.Close(); err == nil {
				err = cerr
			}
		}
		src.Close()
		if err != nil {
			t.Fatalf("copying %s: %v", name, err)
		}
	}
}

// pyverbsLogDir is where the suite's output is kept: $VERBSIM_PYVERBS_LOGS
// when set (CI keeps it), else verbsim-pyverbs under the temporary
// directory.
func pyverbsLogDir() string {
	if dir := os.Getenv("VERBSIM_PYVERBS_LOGS"); dir != "" {
		return dir
	}
	return filepath.Join(os.TempDir(), "verbsim-pyverbs")
}

// TestPyverbs runs rdma-core's test suite from python3-pyverbs (installed
// with apt-get when missing and possible; skipped with a message
// otherwise) against the library, once for each of pyverbsRuns (mlx5 on
// InfiniBand and on Ethernet (RoCE) ports, siw, irdma), each in a fabric
// private to the process. A run fails on any failure or error, or below
// its floor of passes. The output of each run is kept in a file.
func TestPyverbs(t *testing.T) {
	dir := lib(t)
	runner := filepath.Join(pyverbsSuite, "run_tests.py")
	if _, err := os.Stat(runner); err != nil {
		aptPackage(t, "python3-pyverbs")
		if _, err := os.Stat(runner); err != nil {
			t.Skipf("python3-pyverbs installed but %s is missing", runner)
		}
	}
	if _, err := os.Stat(pyverbsPython); err != nil {
		t.Skipf("%s, the interpreter python3-pyverbs is built for, is missing", pyverbsPython)
	}
	suite := t.TempDir()
	copySuite(t, suite)
	logs := pyverbsLogDir()
	if err := os.MkdirAll(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, run := range pyverbsRuns {
		link := run.link
		name := run.profile + "-" + link
		t.Run(name, func(t *testing.T) {
			// The suite takes about a second; the bound only stops a hang
			// (a completion that never comes makes pyverbs poll for ever).
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, pyverbsPython, "run_tests.py", "-v")
			cmd.Dir = suite
			cmd.Env = append(os.Environ(), "LD_LIBRARY_PATH="+dir, "VERBSIM_FABRIC=none",
				"VERBSIM_LINK="+link, "VERBSIM_PROFILE="+run.profile, "VERBSIM_READINGS=")
			start := time.Now()
			outb, err := cmd.CombinedOutput()
			took := time.Since(start)
			out := string(outb)
			logf := filepath.Join(logs, "pyverbs-"+name+".log")
			if werr := os.WriteFile(logf, outb, 0o644); werr != nil {
				t.Errorf("keeping the output: %v", werr)
			}
			if ctx.Err() != nil {
				t.Fatalf("the suite did not finish in time (output in %s); last lines:\n%s", logf, tail(out, 20))
			}
			res := parsePyverbs(out)
			counts := map[string]int{}
			for _, r := range res {
				switch r.status {
				case "ERROR", "FAIL", "unexpected success":
					counts["bad"]++
					t.Errorf("%s: %s", r.id, r.status)
				default:
					counts[r.status]++
				}
			}
			ran := pyverbsRan(out)
			if ran < 0 || ran != len(res) {
				t.Errorf("the summary says %d tests ran, the output gives %d outcomes (run_tests.py: %v); output in %s\n%s",
					ran, len(res), err, logf, tail(out, 20))
			}
			if counts["ok"] < run.minPass {
				t.Errorf("%d tests pass, below the floor of %d", counts["ok"], run.minPass)
			}
			t.Logf("VERBSIM_PROFILE=%s VERBSIM_LINK=%s: %d tests in %v: %d pass, %d skip, %d fail or error; output in %s",
				run.profile, link, ran, took.Round(time.Millisecond), counts["ok"], counts["skipped"], counts["bad"], logf)
			t.Logf("by file (pass/fail/skip):\n%s", pyverbsByFile(res))
		})
	}
}

// aptPackage installs pkg with apt-get, or skips the test with a message
// when it cannot (not root, no apt-get, no network).
func aptPackage(t *testing.T, pkg string) {
	t.Helper()
	if _, err := exec.LookPath("apt-get"); err != nil || os.Geteuid() != 0 {
		t.Skipf("%s not installed and cannot be installed here (needs root and apt-get)", pkg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "apt-get", "install", "-y", "-qq", pkg)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("%s could not be installed (no network?): %v\n%s", pkg, err, out)
	}
}

// pyverbsRan reads "Ran N tests" from unittest's summary, or returns -1.
func pyverbsRan(out string) int {
	m := regexp.MustCompile(`(?m)^Ran (\d+) tests? in `).FindStringSubmatch(out)
	if m == nil {
		return -1
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// pyverbsByFile counts the outcomes of each test file and lists the skip
// reasons with their counts.
func pyverbsByFile(res []pyverbsResult) string {
	type row struct{ pass, fail, skip int }
	files := map[string]*row{}
	reasons := map[string]int{}
	for _, r := range res {
		f := strings.Split(r.id, ".")[1]
		if files[f] == nil {
			files[f] = &row{}
		}
		switch r.status {
		case "ok":
			files[f].pass++
		case "skipped":
			files[f].skip++
			reasons[r.reason]++
		default:
			files[f].fail++
		}
	}
	names := make([]string, 0, len(files))
	for f := range files {
		names = append(names, f)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, f := range names {
		r := files[f]
		fmt.Fprintf(&b, "| %s | %d | %d | %d |\n", f, r.pass, r.fail, r.skip)
	}
	rs := make([]string, 0, len(reasons))
	for r := range reasons {
		rs = append(rs, r)
	}
	sort.Slice(rs, func(i, j int) bool {
		return reasons[rs[i]] > reasons[rs[j]] || reasons[rs[i]] == reasons[rs[j]] && rs[i] < rs[j]
	})
	for _, r := range rs {
		fmt.Fprintf(&b, "%4d skipped: %s\n", reasons[r], r)
	}
	return b.String()
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// TestParsePyverbs checks the reading of unittest's -v output: an outcome
// on the name's line, after a docstring line, alone after the test's own
// output, and skips with either quote.
func TestParsePyverbs(t *testing.T) {
	out := `test_a (tests.test_x.C.test_a) ... ok
test_b (tests.test_x.C.test_b)
Docstring of b ... skipped 'Not here'
test_c (tests.test_y.D.test_c) ... printed = 2
ok
test_d (tests.test_y.D.test_d) ... skipped "Device sim0 doesn't have net interface"
test_e (tests.test_y.D.test_e)
Doc ... ERROR

Ran 5 tests in 0.010s
`
	got := parsePyverbs(out)
	want := []pyverbsResult{
		{"tests.test_x.C.test_a", "ok", ""},
		{"tests.test_x.C.test_b", "skipped", "Not here"},
		{"tests.test_y.D.test_c", "ok", ""},
		{"tests.test_y.D.test_d", "skipped", "Device sim0 doesn't have net interface"},
		{"tests.test_y.D.test_e", "ERROR", ""},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("parsePyverbs:\n got %v\nwant %v", got, want)
	}
	if n := pyverbsRan(out); n != 5 {
		t.Errorf("pyverbsRan: %d, want 5", n)
	}
}

// TestParentDomain: parent domains from C (capi/testdata/parentdomain.c):
// an MR, an extended CQ and an RC QP of a parent domain carry a WRITE and
// a SEND; the wrapped PD is EBUSY while a parent domain uses it.
func TestParentDomain(t *testing.T) {
	dir := lib(t)
	bin := cprog(t, dir, "parentdomain")
	out, err := run(t, dir, []string{"VERBSIM_FABRIC=none"}, bin)
	if err != nil || !strings.Contains(out, "parentdomain: OK") {
		t.Errorf("parentdomain: %v\n%s", err, out)
	}
}
