package patterns_test

import (
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
