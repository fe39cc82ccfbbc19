package check_test

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/check"
)

// TestParse reads VERBSIM_CHECK's values.
func TestParse(t *testing.T) {
	for _, c := range []struct {
		in     string
		checks check.Set
		halt   bool
		on     bool
		bad    bool
	}{
		{in: ""},
		{in: "0"},
		{in: "off"},
		{in: "1", checks: check.All, on: true},
		{in: "all", checks: check.All, on: true},
		{in: "wait,ack", checks: check.Of(check.Wait, check.Ack), on: true},
		{in: "-leak", checks: check.All.Without(check.Leak), on: true},
		{in: "all,-leak,-thread", checks: check.All.Without(check.Leak, check.Thread), on: true},
		{in: "1,halt_on_error", checks: check.All, halt: true, on: true},
		{in: "halt_on_error", checks: check.All, halt: true, on: true},
		{in: "wait, buffer ,halt", checks: check.Of(check.Wait, check.Buffer), halt: true, on: true},
		{in: "waits", bad: true},
		{in: "wait,-nope", bad: true},
	} {
		checks, halt, on, err := check.Parse(c.in)
		if (err != nil) != c.bad {
			t.Errorf("Parse(%q): error %v", c.in, err)
			continue
		}
		if c.bad {
			if !strings.Contains(err.Error(), "lost-wakeup") {
				t.Errorf("Parse(%q): the error does not list the checks: %v", c.in, err)
			}
			continue
		}
		if checks != c.checks || halt != c.halt || on != c.on {
			t.Errorf("Parse(%q) = %v, %v, %v; want %v, %v, %v", c.in, checks, halt, on, c.checks, c.halt, c.on)
		}
	}
}

// TestSetNames: every check has a name that Parse reads back, and a Set
// prints as VERBSIM_CHECK takes it.
func TestSetNames(t *testing.T) {
	for _, c := range check.Checks() {
		back, ok := check.ParseCheck(c.String())
		if !ok || back != c {
			t.Errorf("%v does not read back", c)
		}
		if s, _, _, err := check.Parse(check.Of(c).String()); err != nil || s != check.Of(c) {
			t.Errorf("Of(%v).String() = %q reads back as %v, %v", c, check.Of(c).String(), s, err)
		}
	}
	if check.All.String() != "all" || check.Set(0).String() != "none" || check.All.Len() != len(check.Checks()) {
		t.Errorf("All = %q (%d checks), none = %q", check.All, check.All.Len(), check.Set(0))
	}
}

// TestSuppress: a suppression by check, by rule or by a frame silences
// the finding and counts it; the others stay.
func TestSuppress(t *testing.T) {
	sup, err := check.ParseSuppressions("CHAN-13@waitNoCQ; lost-wakeup")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := check.ParseSuppressions("wait@x;nonsense"); err == nil {
		t.Errorf("a suppression of no check or rule was accepted")
	}
	r := newRigWith(t, sim.Auto, check.Config{Suppress: sup})
	ch := r.channel(0)
	q := r.cq(0, 4, ch)
	ch.GetEvent(cancelled()) // unarmed: CHAN-13 here, not suppressed
	r.must(q.Destroy())
	r.must(ch.Destroy())
	waitNoCQ(r) // CHAN-13 in waitNoCQ: suppressed
	got := r.findings
	if len(got) != 1 || got[0].Rule != "CHAN-13" || got[0].Stack[0].Func == "" || strings.Contains(got[0].Stack[0].Func, "waitNoCQ") {
		t.Errorf("findings %v, want the first CHAN-13 alone", got)
	}
	if s := r.f.Check(); s.Suppressed != 1 || s.Findings != 1 {
		t.Errorf("summary %+v, want 1 finding and 1 suppressed", s)
	}
}

// TestOutput: one line per finding on Output, one JSON object per
// finding on Log, the summary at close; a finding reads back from its
// JSON.
func TestOutput(t *testing.T) {
	var out, log bytes.Buffer
	f, err := sim.NewFabric(sim.Config{Check: &check.Config{Checks: check.Of(check.Wait), Output: &out, Log: &log}})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := f.Devices()[0].Open()
	ch, _ := c.CreateCompChannel()
	ch.GetEvent(cancelled())
	f.Close()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "verbsim check: CHAN-13 wait: ibv_get_cq_event on vsim0/chan#1: ") ||
		lines[1] != "verbsim check: 1 finding (CHAN-13: 1); checks: wait" {
		t.Errorf("output:\n%s", out.String())
	}
	recs := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(recs) != 2 {
		t.Fatalf("log:\n%s", log.String())
	}
	var back check.Finding
	if err := json.Unmarshal([]byte(recs[0]), &back); err != nil || back.Check != check.Wait || back.Rule != "CHAN-13" ||
		len(back.Stack) == 0 || back.String() != lines[0] {
		t.Errorf("the JSON finding %s reads back as %+v (%v)", recs[0], back, err)
	}
	var sum struct{ Summary check.Summary }
	if err := json.Unmarshal([]byte(recs[1]), &sum); err != nil || sum.Summary.Findings != 1 || sum.Summary.Checks != check.Of(check.Wait) {
		t.Errorf("the summary %s reads back as %+v (%v)", recs[1], sum, err)
	}
}

// TestHaltOnError: the first finding halts, through Config.Halt, after the
// finding and the summary are written; nothing is reported after it.
func TestHaltOnError(t *testing.T) {
	var out bytes.Buffer
	halts := 0
	f, err := sim.NewFabric(sim.Config{Check: &check.Config{Output: &out, HaltOnError: true, Halt: func() { halts++ }}})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := f.Devices()[0].Open()
	ch, _ := c.CreateCompChannel()
	ch.GetEvent(cancelled())
	c.GetAsyncEvent(cancelled())
	if halts != 1 || strings.Count(out.String(), "\n") != 2 || !strings.Contains(out.String(), "1 finding") {
		t.Errorf("%d halts; output:\n%s", halts, out.String())
	}
}

// TestOffByDefault: a fabric without Config.Check has no sanitizer.
func TestOffByDefault(t *testing.T) {
	f, _ := sim.NewFabric(sim.Config{})
	c, _ := f.Devices()[0].Open()
	ch, _ := c.CreateCompChannel()
	ch.GetEvent(cancelled())
	if s := f.Check(); s.Checks != 0 || s.Findings != 0 {
		t.Errorf("summary %+v of a fabric without checks", s)
	}
}

// TestWaitBound: with sim.Config.WaitBound a wait that no event can end is
// still reported as it starts (CHAN-13), the finding saying that only the
// bound can end it.
func TestWaitBound(t *testing.T) {
	var got []check.Finding
	f, err := sim.NewFabric(sim.Config{WaitBound: 1000, Check: &check.Config{Output: io.Discard,
		Report: func(fd check.Finding) { got = append(got, fd) }}})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := f.Devices()[0].Open()
	ch, _ := c.CreateCompChannel()
	ch.GetEvent(cancelled())
	if len(got) != 1 || got[0].Rule != "CHAN-13" || !strings.Contains(got[0].Then, "no event can end this wait") ||
		!strings.Contains(got[0].Then, "WaitBound, 1000 ticks") {
		t.Errorf("findings %v", got)
	}
}
