package patterns_test

import (
	"strings"
	"testing"

	"github.com/verbsim/verbsim/explore"
	"github.com/verbsim/verbsim/explore/patterns"
)

// TestPatterns: every buggy pattern is found by the default strategy
// (Auto, with its default budget) and fails only as documented under the
// others; every correct one passes them all.
func TestPatterns(t *testing.T) {
	for _, p := range patterns.All() {
		t.Run(p.Name, func(t *testing.T) {
			for _, s := range []explore.Strategy{explore.Auto, explore.Random, explore.PCT, explore.Exhaustive} {
				o := explore.Options{Strategy: s, Seed: 1, Schedules: 300}
				if s == explore.Auto {
					o.Schedules = 0 // the default budget
					if p.Want == 0 && testing.Short() {
						o.Schedules = 1000
					}
				}
				res := explore.Explore(p.World, o)
				t.Logf("%v", res)
				switch f := res.Failure; {
				case p.Want == 0 && f != nil:
					t.Errorf("%v\n%s", f, f.Timeline)
				case p.Want != 0 && f != nil && !p.Expected(f.Kind):
					t.Errorf("found %v, want %v: %v\n%s", f.Kind, p.Want, f, f.Timeline)
				case p.Want != 0 && f == nil && s == explore.Auto:
					t.Errorf("the default strategy did not find the %v: %v", p.Want, res)
				}
			}
		})
	}
}

// TestCorrectPatternsComplete: every correct pattern passes the complete
// exhaustive search with 2 preemptions (1 under -short).
func TestCorrectPatternsComplete(t *testing.T) {
	bound := 2
	if testing.Short() {
		bound = 1
	}
	for _, p := range patterns.All() {
		if p.Want != 0 {
			continue
		}
		res := explore.Explore(p.World, explore.Options{Strategy: explore.Exhaustive, Preemptions: bound, Schedules: 1 << 20})
		if !res.Complete || res.Failure != nil {
			t.Errorf("%s: %v", p.Name, res)
		}
		t.Logf("%s: %v", p.Name, res)
	}
}

// checkedRule is the rule the sanitizer names for each buggy pattern
// whose misuse it sees at the verb (the others it does not: a CQ of Push
// completions has no QP to size it by; a UD datagram lost is no misuse).
var checkedRule = map[string]string{
	"drain-then-arm":     "NOTIFY-15",
	"one-poll-per-event": "NOTIFY-15",
	"never-acked":        "CQ-13",
	"ack-wrong-cq":       "CHAN-07",
	"brpc-repoll-one-cq": "NOTIFY-15",
	"ucx-ack-last-cq":    "CHAN-07",
	"teardown-race":      "CHAN-13",
}

// TestPatternsChecked runs the catalogue with the sanitizer on
// (Options.Check): the correct recipes stay clean, and a buggy loop fails
// as before or, earlier, as a Misuse naming the rule it breaks.
func TestPatternsChecked(t *testing.T) {
	for _, p := range patterns.All() {
		t.Run(p.Name, func(t *testing.T) {
			for _, s := range []explore.Strategy{explore.Random, explore.Exhaustive} {
				res := explore.Explore(p.World, explore.Options{Strategy: s, Seed: 1, Schedules: 200, Check: true})
				f := res.Failure
				t.Logf("%v: %v", s, f)
				switch {
				case p.Want == 0 && f != nil:
					t.Errorf("%v\n%s", f, f.Timeline)
				case f != nil && f.Kind != explore.Misuse && !p.Expected(f.Kind):
					t.Errorf("found %v, want %v or a misuse: %v\n%s", f.Kind, p.Want, f, f.Timeline)
				case f != nil && f.Kind == explore.Misuse && !strings.Contains(f.Message, " "+checkedRule[p.Name]+" "):
					t.Errorf("a misuse not of %q: %v", checkedRule[p.Name], f)
				}
			}
		})
	}
}
