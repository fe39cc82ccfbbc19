package patterns_test

import (
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
