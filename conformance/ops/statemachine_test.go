package ops

import (
	"flag"
	"strconv"
	"testing"

	"github.com/verbsim/verbsim/conformance/simdev"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
	"pgregory.net/rapid"
)

// profiles are the profiles the state machine runs under: every built-in
// one, plus one that takes the other reading of the rules the built-in
// profiles agree on (destroy with unacked events, CQ rounding, RESET→ERR).
func profiles() []sim.Profile {
	return append(sim.Profiles(), sim.Profile{
		Name: "busy-exact-ibta",
		Readings: verbs.Readings{
			DestroyBusyOnUnacked: true,
			ExactCQE:             true,
			ResetToErr:           true,
		},
	})
}

// TestStateMachine checks verbsim against the reference model
// (conformance/model) with random operation sequences, under every profile.
// A failure prints the run as a scenario (verbsim run replays it); rapid's
// -rapid.failfile or -rapid.seed flag replays it here.
func TestStateMachine(t *testing.T) {
	for _, p := range profiles() {
		t.Run(p.Name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				StateMachine(t, simdev.Factory(p))
			})
		})
	}
}

// trafficSteps is the average number of actions of one run of the traffic
// state machine when -rapid.steps is not given: a run is cheap (about a
// tenth of a millisecond per action), and long runs reach the states that
// need many connections, resets and retries.
const trafficSteps = 100

// defaultFlag sets flag name to value for the rest of the test unless the
// command line set it.
func defaultFlag(t *testing.T, name, value string) {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	if set {
		return
	}
	f := flag.Lookup(name)
	old := f.Value.String()
	if err := f.Value.Set(value); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Value.Set(old) })
}

// TestTrafficStateMachine runs random traffic between RC, UC and UD QPs on
// two verbsim devices against the traffic model, under every built-in
// profile, on a perfect fabric and on one that drops, duplicates and
// delays packets: rapid's 100 runs of 100 actions each by default. Replay
// a failure with the -rapid.failfile or -rapid.seed flag it prints; soak
// with -rapid.checks=2000.
func TestTrafficStateMachine(t *testing.T) {
	defaultFlag(t, "rapid.steps", strconv.Itoa(trafficSteps))
	for _, p := range sim.Profiles() {
		for _, faults := range []bool{false, true} {
			name := p.Name
			if faults {
				name += "/faults"
			}
			t.Run(name, func(t *testing.T) {
				rapid.Check(t, func(rt *rapid.T) {
					TrafficStateMachine(rt, simdev.TrafficFabric(p), faults)
				})
			})
		}
	}
}
