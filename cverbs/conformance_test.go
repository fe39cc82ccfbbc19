//go:build cgo && linux

package cverbs_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/verbsim/verbsim/conformance"
	"github.com/verbsim/verbsim/conformance/simdev"
	"github.com/verbsim/verbsim/cverbs"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// device is a cverbs device with the readings it follows: what the
// conformance suite needs and a libibverbs cannot say.
type device struct {
	verbs.Device
	readings verbs.Readings
}

func (d device) Profile() verbs.Readings { return d.readings }

// peerDevice is a device with a second adapter on the same fabric
// (conformance.PeerDevice): the transport cases then run between the two
// instead of in loopback.
type peerDevice struct {
	device
	peer verbs.Device
}

func (d peerDevice) Peer() (conformance.Device, error) {
	return wrap(d.peer, d.readings, nil), nil
}

// limitedDevice is a device of verbsim's test-mode library
// (cverbs.SimHooks): it makes fresh devices with small limits
// (conformance.LimitedDevice) through the library's test hook.
type limitedDevice struct{ device }

func (d limitedDevice) WithLimits(l conformance.Limits) (conformance.Device, error) {
	return withLimits(d.device, l)
}

// limitedPeerDevice is a peerDevice of the test-mode library.
type limitedPeerDevice struct{ peerDevice }

func (d limitedPeerDevice) WithLimits(l conformance.Limits) (conformance.Device, error) {
	return withLimits(d.device, l)
}

func withLimits(d device, l conformance.Limits) (conformance.Device, error) {
	nd, err := cverbs.WithLimits(d.Device, cverbs.Limits{
		MaxCQ: l.MaxCQ, MaxCQE: l.MaxCQE, NumCompVectors: l.NumCompVectors, MaxPD: l.MaxPD,
		MaxQPWR: l.MaxQPWR, MaxSGE: l.MaxSGE, MaxInline: l.MaxInline,
		MaxQPRDAtom: l.MaxQPRDAtom, MaxQPInitRDAtom: l.MaxQPInitRDAtom,
		MaxSRQWR: l.MaxSRQWR, MaxSRQSGE: l.MaxSRQSGE, PortMaxMTU: l.Port.MaxMTU,
	})
	if err != nil {
		return nil, err
	}
	return wrap(nd, d.readings, nil), nil
}

// controlledDevice is a limitedDevice of a test-mode library with the
// fabric's controls (cverbs.SimControls): it takes its port down and up
// (conformance.LinkControl) and sets packet faults (conformance.Faults).
type controlledDevice struct{ limitedDevice }

func (d controlledDevice) SetPortState(port uint8, up bool) error {
	return cverbs.SetPortState(d.Device, port, up)
}

func (d controlledDevice) SetFaults(drop, duplicate, delay float64) error {
	return cverbs.SetFaults(d.Device, drop, duplicate, delay)
}

// controlledPeerDevice is a limitedPeerDevice with the fabric's controls.
type controlledPeerDevice struct{ limitedPeerDevice }

func (d controlledPeerDevice) SetPortState(port uint8, up bool) error {
	return cverbs.SetPortState(d.Device, port, up)
}

func (d controlledPeerDevice) SetFaults(drop, duplicate, delay float64) error {
	return cverbs.SetFaults(d.Device, drop, duplicate, delay)
}

// Forge implements conformance.Forger through the library's hook of
// VERBSIM_TEST_3: the frame the in-process device would deliver.
func (d controlledDevice) Forge(p conformance.ForgedPacket) error { return forge(d.Device, p) }

// Forge is controlledDevice.Forge.
func (d controlledPeerDevice) Forge(p conformance.ForgedPacket) error { return forge(d.Device, p) }

func forge(d verbs.Device, p conformance.ForgedPacket) error {
	w := simdev.WirePacket(p)
	return cverbs.InjectFrame(d, sim.AppendFrame(nil, &w))
}

// wrap returns d as a conformance device following readings r, with peer
// as its second adapter if not nil, able to make devices with small
// limits when the library has verbsim's test hooks, and to control its
// link and the fabric's packet faults when it has those of
// VERBSIM_TEST_2.
func wrap(d verbs.Device, r verbs.Readings, peer verbs.Device) conformance.Device {
	base := device{d, r}
	switch {
	case peer == nil && !cverbs.SimHooks():
		return base
	case peer == nil && !cverbs.SimControls():
		return limitedDevice{base}
	case peer == nil:
		return controlledDevice{limitedDevice{base}}
	case !cverbs.SimHooks():
		return peerDevice{base, peer}
	case !cverbs.SimControls():
		return limitedPeerDevice{peerDevice{base, peer}}
	}
	return controlledPeerDevice{limitedPeerDevice{peerDevice{base, peer}}}
}

// readingsOf returns the readings of the built-in profile called name.
func readingsOf(name string) (verbs.Readings, bool) {
	for _, p := range sim.Profiles() {
		if p.Name == name {
			return p.Readings, true
		}
	}
	return verbs.Readings{}, false
}

// TestConformanceDevice runs the conformance suite through the binding
// against the device CVERBS_DEVICE of whatever libibverbs the process
// loaded, holding it to the readings of the profile CVERBS_PROFILE
// (default or rxe), with CVERBS_PEER (if set) as the second adapter of the
// transport cases. It runs only when CVERBS_DEVICE is set: by hand
// against a real adapter or soft-RoCE (docs/c-programs.md), and as the
// child process of TestConformanceThroughC against the drop-in library.
// Cases that need a capability only a simulator has fail saying "this case
// needs"; TestConformanceThroughC counts those as skipped.
func TestConformanceDevice(t *testing.T) {
	name, ok := os.LookupEnv("CVERBS_DEVICE")
	if !ok {
		t.Skip("CVERBS_DEVICE is not set (see docs/c-programs.md, The Go binding)")
	}
	prof := os.Getenv("CVERBS_PROFILE")
	if prof == "" {
		prof = "default"
	}
	r, ok := readingsOf(prof)
	if !ok {
		t.Fatalf("CVERBS_PROFILE=%q: want default or rxe", prof)
	}
	d, err := cverbs.Open(name)
	if err != nil {
		t.Fatalf("cverbs.Open(%q): %v", name, err)
	}
	// Without a virtual clock the transport cases let things settle for
	// Grace of wall time before they read what happened; through C, async
	// events cross one more goroutine (the drop-in's pump, or the kernel)
	// before ibv_get_async_event sees them, which 50 ms did not always
	// cover on a loaded machine (an element-naming case once found no
	// LAST_WQE_REACHED); 400 ms leaves room for a busy CI machine, and a case
	// that still fails is run once more alone before it counts.
	defer func(g time.Duration) { conformance.Grace = g }(conformance.Grace)
	conformance.Grace = 400 * time.Millisecond
	var peer verbs.Device
	if name := os.Getenv("CVERBS_PEER"); name != "" {
		if peer, err = cverbs.Open(name); err != nil {
			t.Fatalf("cverbs.Open(%q) (CVERBS_PEER): %v", name, err)
		}
	}
	dev := wrap(d, r, peer)
	if os.Getenv("CVERBS_WANT_HOOKS") != "" && !cverbs.SimHooks() {
		t.Fatalf("CVERBS_WANT_HOOKS is set and the library has no test hooks (build it with capi/build.sh --test-hooks)")
	}
	conformance.Run(t, func() (conformance.Device, error) { return dev, nil })
}

// dropIn returns the directory of the drop-in libibverbs.so.1 in its
// test mode: VERBSIM_LIB if set (which should be built with --test-hooks),
// else a fresh build of capi/ (capi/build.sh --test-hooks), whose test
// hooks back the simulator capabilities (cverbs.SimHooks).
func dropIn(t *testing.T) string {
	if dir := os.Getenv("VERBSIM_LIB"); dir != "" {
		return dir
	}
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skip("no C compiler: the drop-in library cannot be built")
	}
	dir := t.TempDir()
	out, err := exec.Command("bash", "../capi/build.sh", "--test-hooks", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("capi/build.sh: %v\n%s", err, out)
	}
	return dir
}

// testHooks says whether the library dropIn gives is the test-mode build:
// the one it builds, not one VERBSIM_LIB names.
func testHooks() bool { return os.Getenv("VERBSIM_LIB") == "" }

// dropInGaps are the cases the drop-in library is known to fail through C
// while the simulator passes them in process: bugs or gaps of capi/, each
// with what goes wrong. TestConformanceThroughC reports them without
// failing, and says when one passes so that it can be taken off the list.
//
// The rule IDs are spelled as family and numbers, not written out: this
// file does not check those rules, and internal/rulesdoc credits every
// _test.go file that names a rule with checking it.
var dropInGaps = []struct {
	family   string
	from, to int
	why      string
	profiles []string // the profiles it fails under; nil: all
}{
	// None known: XRC, type 2 window binds and CHANGE_TRANSLATION, the
	// gaps this list first held, are mapped by capi/ now.
}

// gapOf returns the known drop-in gap of a case ("ID/name") under a
// profile, if any.
func gapOf(name, profile string) (string, bool) {
	id, _, _ := strings.Cut(name, "/")
	for _, g := range dropInGaps {
		for n := g.from; n <= g.to; n++ {
			if id == fmt.Sprintf("%s-%02d", g.family, n) && (g.profiles == nil || slices.Contains(g.profiles, profile)) {
				return g.why, true
			}
		}
	}
	return "", false
}

// verdict is the outcome of one case in the child's output.
type verdict struct {
	name   string
	status string // PASS, FAIL, SKIP (a failure saying the case needs a simulator capability)
	lines  []string
}

var (
	runLine  = regexp.MustCompile(`^=== (?:RUN|NAME|CONT)\s+TestConformanceDevice/(\S+)`)
	doneLine = regexp.MustCompile(`^\s*--- (PASS|FAIL|SKIP): TestConformanceDevice/(\S+) \(`)
	// needLine is how a case says it needs an optional capability the
	// device does not have (conformance.Injector, Referencer, LimitedDevice,
	// verbs.ExCQCreator...).
	needLine = regexp.MustCompile(`\((conformance|verbs)\.(\w+)\); this case needs`)
)

// parse reads the -test.v output of TestConformanceDevice into verdicts.
func parse(out []byte) []*verdict {
	var all []*verdict
	byName := map[string]*verdict{}
	var cur *verdict
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		if m := runLine.FindStringSubmatch(line); m != nil {
			if cur = byName[m[1]]; cur == nil {
				cur = &verdict{name: m[1]}
				byName[m[1]] = cur
				all = append(all, cur)
			}
			continue
		}
		if m := doneLine.FindStringSubmatch(line); m != nil {
			if v := byName[m[2]]; v != nil {
				v.status = m[1]
			}
			cur = nil
			continue
		}
		if cur != nil {
			cur.lines = append(cur.lines, strings.TrimSpace(line))
		}
	}
	for _, v := range all {
		if v.status != "FAIL" {
			continue
		}
		needs := ""
		other := false
		for _, l := range v.lines {
			if m := needLine.FindStringSubmatch(l); m != nil {
				needs = m[1] + "." + m[2]
			} else if strings.Contains(l, ".go:") {
				other = true
			}
		}
		if needs != "" && !other {
			v.status = "SKIP"
			v.lines = []string{"needs " + needs}
		}
	}
	return all
}

// TestConformanceThroughC runs the whole conformance suite through the
// binding against verbsim's drop-in libibverbs.so.1, once per built-in
// profile, each in a child process (the library is found through
// LD_LIBRARY_PATH at exec, and takes its profile from VERBSIM_PROFILE). The
// simulator seen from C must pass every case it passes in process. The
// library is the test-mode build, whose hooks give the binding the
// simulator's capabilities the cases need (injected completions, held
// references, small limits): a case that still says it needs one fails
// the test. With VERBSIM_LIB naming another build, such cases are
// reported as skipped with the capability they need.
func TestConformanceThroughC(t *testing.T) {
	if os.Getenv("CVERBS_DEVICE") != "" {
		t.Skip("running as the suite's child process")
	}
	if testing.Short() {
		t.Skip("-short: the suite through C takes a minute per profile")
	}
	dir := dropIn(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range sim.Profiles() {
		t.Run(p.Name, func(t *testing.T) {
			start := time.Now()
			out, err := runChild(self, dir, p.Name)
			if hung := timedOut(out); hung != "" {
				t.Errorf("the child timed out during %s (its goroutines follow):\n%s", hung, tail(out, 80))
			}
			if os.Getenv("CVERBS_KEEP") != "" {
				_ = os.WriteFile(filepath.Join(os.Getenv("CVERBS_KEEP"), "cverbs-"+p.Name+".log"), out, 0o644)
			}
			vs := parse(out)
			if len(vs) == 0 {
				t.Fatalf("the child ran no case (%v):\n%s", err, tail(out, 40))
			}
			count := map[string]int{}
			needs := map[string]int{}
			notChecked := 0
			for _, v := range vs {
				gap, known := gapOf(v.name, p.Name)
				if known && (v.status == "FAIL" || v.status == "") {
					v.status = "GAP"
				}
				count[v.status]++
				switch v.status {
				case "SKIP":
					needs[strings.TrimPrefix(v.lines[0], "needs ")]++
					if testHooks() {
						t.Errorf("%s through C %s, which the test-mode library's hooks should give", v.name, v.lines[0])
					}
				case "GAP":
					t.Logf("%s: known drop-in gap: %s", v.name, gap)
				case "FAIL", "":
					// Without a virtual clock a case reads what happened
					// after Grace of wall time; on a loaded machine an event
					// crossing the library's goroutines can come later. A
					// case that fails is run once more alone: passing then,
					// it is reported as a timing flake, not a failure.
					again, _ := runChild(self, dir, p.Name, v.name)
					if rv := parse(again); len(rv) == 1 && rv[0].status == "PASS" {
						count[v.status]--
						count["RETRIED"]++
						t.Logf("TIMING: %s failed through C, then passed alone:\n\t%s", v.name, strings.Join(v.lines, "\n\t"))
						continue
					}
					t.Errorf("%s through C:\n\t%s", v.name, strings.Join(v.lines, "\n\t"))
				case "PASS":
					if known {
						t.Logf("%s passes through C: take it off dropInGaps (%s)", v.name, gap)
					}
					for _, l := range v.lines {
						if strings.Contains(l, "not checked") || strings.Contains(l, "nothing to check") || strings.Contains(l, "is not checked") || strings.Contains(l, "skipped") {
							notChecked++
							break
						}
					}
				}
			}
			var ns []string
			for k, n := range needs {
				ns = append(ns, fmt.Sprintf("%s %d", k, n))
			}
			sort.Strings(ns)
			t.Logf("profile %s through C: %d cases: %d passed (%d of them logged a part not checked), %d passed only when run again alone (timing), %d skipped (need: %s), %d known drop-in gaps, %d failed; %v",
				p.Name, len(vs), count["PASS"], notChecked, count["RETRIED"], count["SKIP"], strings.Join(ns, ", "), count["GAP"], count["FAIL"]+count[""], time.Since(start).Round(time.Second))
			if err != nil && count["FAIL"]+count[""] == 0 && count["SKIP"]+count["GAP"] == 0 {
				t.Errorf("the child failed (%v) with every case passing:\n%s", err, tail(out, 40))
			}
		})
	}
}

// runChild runs TestConformanceDevice in a child process on the drop-in
// library in dir under profile prof (only the case named by only, if
// given). A child that hangs is stopped by its
// -test.timeout, which prints every goroutine.
func runChild(self, dir, prof string, only ...string) ([]byte, error) {
	run := "^TestConformanceDevice$"
	for _, name := range only { // one case, by its exact subtest name
		for _, part := range strings.Split(name, "/") {
			run += "/^" + regexp.QuoteMeta(part) + "$"
		}
	}
	cmd := exec.Command(self, "-test.run="+run, "-test.v", "-test.count=1", "-test.timeout="+childTimeout)
	cmd.Env = append(os.Environ(),
		"CVERBS_DEVICE=sim0",
		"CVERBS_WANT_HOOKS="+map[bool]string{true: "1"}[testHooks()],
		"CVERBS_PROFILE="+prof,
		"VERBSIM_PROFILE="+prof,
		"VERBSIM_FABRIC=none", // this process only: no other test's stations
		"LD_LIBRARY_PATH="+dir+string(filepath.ListSeparator)+os.Getenv("LD_LIBRARY_PATH"),
	)
	return cmd.CombinedOutput()
}

// childTimeout bounds one child: the suite takes about 7 s through C, a
// minute under -race on a loaded machine.
const childTimeout = "4m"

// timedOut returns the case during which the child's -test.timeout fired,
// or "". A hang through C used to be ibv_destroy_qp waiting for ever for
// the ack of an async event already acknowledged (the ack woke waiters by
// the event's handle, the destroy waited by the engine object; fixed in
// sim/handle_event.go, sim.TestAckWakesDestroy).
func timedOut(out []byte) string {
	s := string(out)
	i := strings.Index(s, "panic: test timed out")
	if i < 0 {
		return ""
	}
	m := regexp.MustCompile(`(?m)^\s+TestConformanceDevice/(\S+) \(`).FindStringSubmatch(s[i:])
	if m == nil {
		return "an unknown case"
	}
	return m[1]
}

func tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// TestTimedOut checks that a child's timeout is recognised with the case it
// interrupted, and a run that ended is not taken for one.
func TestTimedOut(t *testing.T) {
	hung := []byte("=== RUN   TestConformanceDevice/XX-40/x\npanic: test timed out after 4m0s\n\trunning tests:\n\t\tTestConformanceDevice (4m0s)\n\t\tTestConformanceDevice/XX-40/max_rd_atomic (3m55s)\n\ngoroutine 7 [syscall]:\ngithub.com/verbsim/verbsim/cverbs._C2func_ibv_destroy_qp(0x7f)\n")
	if got := timedOut(hung); got != "XX-40/max_rd_atomic" {
		t.Errorf("timedOut of a hang = %q, want XX-40/max_rd_atomic", got)
	}
	if got := timedOut([]byte("--- PASS: TestConformanceDevice (7.00s)\n")); got != "" {
		t.Errorf("timedOut of a run that ended = %q", got)
	}
}
