package patterns_test

import (
	"strings"
	"testing"

	"github.com/verbsim/verbsim/explore"
	"github.com/verbsim/verbsim/explore/patterns"
)

func TestPatterns(t *testing.T) {
	for _, p := range patterns.All() {
		t.Run(p.Name, func(t *testing.T) {
			found := false
			for _, s := range []explore.Strategy{explore.Random, explore.PCT, explore.Exhaustive} {
				res := explore.Explore(p.World, explore.Options{Strategy: s, Seed: 1, Schedules: 300})
				t.Logf("%v", res)
				switch f := res.Failure; {
				case p.Want == 0 && f != nil:
					t.Errorf("%v\n%s", f, f.Timeline)
				case p.Want != 0 && f != nil && !p.Expected(f.Kind):
					t.Errorf("found %v, want %v: %v\n%s", f.Kind, p.Want, f, f.Timeline)
				case f != nil:
					found = true
				}
			}
			if p.Want != 0 && !found {
				t.Errorf("no strategy found the %v", p.Want)
			}
		})
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
