package patterns_test

import (
	"testing"

	"github.com/verbsim/verbsim/explore"
	"github.com/verbsim/verbsim/explore/patterns"
)

func TestPatterns(t *testing.T) {
	for _, p := range patterns.All() {
		t.Run(p.Name, func(t *testing.T) {
			for _, s := range []explore.Strategy{explore.Random, explore.PCT} {
				res := explore.Explore(p.World, explore.Options{Strategy: s, Seed: 1, Schedules: 300})
				t.Logf("%v", res)
				switch {
				case p.Want == 0 && res.Failure != nil:
					t.Errorf("%v\n%s", res.Failure, res.Failure.Timeline)
				case p.Want != 0 && res.Failure != nil && res.Failure.Kind != p.Want:
					t.Errorf("found %v, want %v: %v\n%s", res.Failure.Kind, p.Want, res.Failure, res.Failure.Timeline)
				}
			}
		})
	}
}
