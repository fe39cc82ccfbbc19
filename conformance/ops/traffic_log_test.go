package ops

import (
	"strconv"
	"strings"
	"testing"

	"github.com/verbsim/verbsim/conformance/simdev"
	"github.com/verbsim/verbsim/internal/scenario"
	"github.com/verbsim/verbsim/sim"
	"pgregory.net/rapid"
)

// TestTrafficLogReplaysAsScenario checks that a traffic run's log is a
// scenario that does what the run did: run by package scenario (the code
// of verbsim run) on verbsim, every step has the outcome the call had in
// the run, the same errno, and for a poll the same completions, under
// every built-in profile, with and without faults. Each run is replayed
// by the timeline's interpreter, so it runs fewer checks than
// TestTrafficStateMachine by default (-rapid.checks sets more).
func TestTrafficLogReplaysAsScenario(t *testing.T) {
	defaultFlag(t, "rapid.steps", strconv.Itoa(trafficSteps))
	defaultFlag(t, "rapid.checks", "20")
	for _, p := range sim.Profiles() {
		for _, faults := range []bool{false, true} {
			name := p.Name
			if faults {
				name += "/faults"
			}
			t.Run(name, func(t *testing.T) {
				rapid.Check(t, func(rt *rapid.T) {
					r := runTraffic(rt, simdev.TrafficFabric(p), faults)
					trafficReplayed(rt, r.log, r.outcomes)
				})
			})
		}
	}
}

// trafficReplayed runs log as a scenario and compares each step's outcome
// with outcomes.
func trafficReplayed(t *rapid.T, log []TrafficOp, outcomes []string) {
	t.Helper()
	text := TrafficLog(log)
	s, err := scenario.Parse("traffic.scen", []byte(text))
	if err != nil {
		t.Fatalf("the log is no scenario: %v\n%s", err, text)
	}
	res, err := scenario.Run(s, "default")
	if err != nil {
		t.Fatalf("the scenario stopped: %v\n%s", err, text)
	}
	if len(res.Steps) != len(log) {
		t.Fatalf("%d steps for %d operations", len(res.Steps), len(log))
	}
	for i, st := range res.Steps {
		got := st.Errno
		if _, poll := log[i].(TPoll); poll && got == "" {
			got = polled(st.Said)
		}
		if got != outcomes[i] {
			t.Fatalf("step %d %q: outcome %q on replay, %q in the run\n%s", i, st.Command, got, outcomes[i], text)
		}
	}
}

// polled reads the completions a poll_cq step printed, as wcWords renders
// them.
func polled(said []string) string {
	var out []string
	for _, l := range said {
		if f := strings.Fields(l); len(f) >= 3 && f[0] == "wr_id" {
			out = append(out, f[0]+" "+f[1]+" "+f[2])
		}
	}
	return strings.Join(out, "; ")
}
