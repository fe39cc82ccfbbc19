package explore_test

import (
	"testing"
	"time"

	"github.com/verbsim/verbsim/explore"
	"github.com/verbsim/verbsim/explore/patterns"
)

func TestZZRC(t *testing.T) {
	for _, n := range []int{2, 4, 8} {
		for _, b := range []int{1, 2, 3, explore.Unbounded} {
			t0 := time.Now()
			res := explore.Explore(patterns.RCStream(n), explore.Options{Strategy: explore.Exhaustive, Preemptions: b, Schedules: 200000})
			t.Logf("n=%d bound %d: %v (%v)", n, b, res, time.Since(t0))
			if !res.Complete {
				break
			}
		}
	}
}
