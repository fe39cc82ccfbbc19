package explore_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/verbsim/verbsim/explore"
	"github.com/verbsim/verbsim/explore/patterns"
)

// TestReductionSound: the exhaustive search reaches the same set of
// outcomes (every failure's kind and message, and passing) with no
// reduction, with sleep sets alone and with DPOR, on every pattern of the
// catalogue and on worlds of independent CQs and RC streams, at bounds 1
// and 2 and, where the unreduced search ends in reasonable time,
// unbounded; and the reduced searches run no more schedules than the
// unreduced one.
func TestReductionSound(t *testing.T) {
	worlds := map[string]func(*explore.World){
		"independent-cqs": explore.IndependentCQs,
		"rc-stream-1":     patterns.RCStream(1),
		"rc-stream-2":     patterns.RCStream(2),
	}
	for _, p := range patterns.All() {
		worlds[p.Name] = p.World
	}
	// Over a million schedules unreduced without a bound: the search
	// would stop at its cap and compare two partial searches.
	huge := map[string]bool{"independent-cqs": true, "cq-too-small": true, "ud-expects-every-packet": true, "rc-stream-2": true}
	for _, name := range slices.Sorted(maps.Keys(worlds)) {
		w := worlds[name]
		bounds := []int{1, 2, explore.Unbounded}
		switch {
		case testing.Short() && name != "ucx-ack-last-cq":
			bounds = []int{1}
		case testing.Short():
			// The world whose unbounded search showed that footprints kept
			// across schedules named objects by handle.
			bounds = []int{1, explore.Unbounded}
		}
		for _, b := range bounds {
			if b == explore.Unbounded && huge[name] {
				continue
			}
			full, n, _ := explore.OutcomesOf(w, b, "none")
			sleep, m, _ := explore.OutcomesOf(w, b, "sleep")
			dpor, k, pruned := explore.OutcomesOf(w, b, "dpor")
			if !maps.Equal(full, sleep) || !maps.Equal(full, dpor) {
				t.Errorf("%s, bound %d: outcomes differ:\nunreduced %q\nsleep sets %q\nDPOR %q", name, b,
					slices.Sorted(maps.Keys(full)), slices.Sorted(maps.Keys(sleep)), slices.Sorted(maps.Keys(dpor)))
			}
			if m > n || k > n {
				t.Errorf("%s, bound %d: unreduced %d schedules, sleep sets %d, DPOR %d", name, b, n, m, k)
			}
			t.Logf("%s, bound %d: %d schedules unreduced, %d with sleep sets, %d with DPOR (%d pruned); %d outcome(s)", name, b, n, m, k, pruned, len(full))
		}
	}
}
