package ops

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/verbsim/verbsim/conformance/simdev"
	"github.com/verbsim/verbsim/internal/scenario"
	"github.com/verbsim/verbsim/sim"
	"pgregory.net/rapid"
)

// TestLogRoundTrip checks the printer against the parser: every operation
// a run of the state machine applies prints as a line that Parse reads back
// as the same operation.
func TestLogRoundTrip(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		m, err := NewMachine(simdev.Factory(sim.RXEProfile()))
		if err != nil {
			rt.Fatal(err)
		}
		defer m.Close()
		drive(rt, m)
		got, err := Parse([]byte(m.Log()))
		if err != nil {
			rt.Fatalf("%v\n%s", err, m.Log())
		}
		if d := cmp.Diff(m.Ops(), got); d != "" {
			rt.Fatalf("parsed log differs from the operations (-applied +parsed):\n%s", d)
		}
	})
}

// TestLogReplaysAsScenario checks that a Machine's log is a scenario that
// does what the Machine did: run by package scenario (the code of verbsim
// run) on verbsim, every step of a passing run has the outcome the
// operation had on the device, under the default profile and under the
// readings of another (which the log's fabric line states).
func TestLogReplaysAsScenario(t *testing.T) {
	for _, p := range profiles() {
		t.Run(p.Name, func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				m, err := NewMachine(simdev.Factory(p))
				if err != nil {
					rt.Fatal(err)
				}
				defer m.Close()
				drive(rt, m)
				replayed(rt, m)
			})
		})
	}
}

// replayed runs m's log as a scenario and compares each step's outcome
// with the operation's.
func replayed(t *rapid.T, m *Machine) {
	t.Helper()
	log := m.Log()
	s, err := scenario.Parse("log.scen", []byte(log))
	if err != nil {
		t.Fatalf("the log is no scenario: %v\n%s", err, log)
	}
	res, err := scenario.Run(s, "default")
	if err != nil {
		t.Fatalf("the scenario stopped: %v\n%s", err, log)
	}
	const header = 4 // fabric, open_device, alloc_pd, create_ah
	for i, st := range res.Steps[:header] {
		if st.Errno != "" {
			t.Fatalf("header step %d (%s) failed: %s %s", i, st.Command, st.Errno, st.Error)
		}
	}
	want := m.Outcomes()
	if len(res.Steps) != header+len(want) {
		t.Fatalf("%d steps for %d operations", len(res.Steps)-header, len(want))
	}
	for i, st := range res.Steps[header:] {
		if st.Errno != want[i] {
			t.Fatalf("step %q: outcome %q on replay, %q in the run\n%s", st.Command, st.Errno, want[i], log)
		}
	}
}
