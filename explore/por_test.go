package explore_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/verbsim/verbsim/explore"
	"github.com/verbsim/verbsim/explore/patterns"
)

// TestSleepSetsSound: with and without sleep sets the exhaustive search
// reaches the same set of outcomes (every failure message, and passing),
// on worlds with failures and races of several kinds; the reduced search
// runs fewer schedules where steps commute.
func TestSleepSetsSound(t *testing.T) {
	worlds := map[string]func(*explore.World){"independent-cqs": explore.IndependentCQs}
	for _, p := range patterns.All() {
		worlds[p.Name] = p.World
	}
	bounds := []int{1, 2, 1000}
	if testing.Short() {
		bounds = []int{1}
	}
	for name, w := range worlds {
		bounds := bounds
		if testing.Short() && name == "ucx-ack-last-cq" {
			// A few seconds: the world whose unbounded search showed that
			// footprints kept across schedules named objects by handle.
			bounds = []int{1, 1000}
		}
		for _, b := range bounds {
			if (name == "independent-cqs" || name == "cq-too-small" || name == "ud-expects-every-packet") && b > 2 {
				// Over a million schedules unreduced: the search stops at
				// Outcomes' cap, so it would compare two partial searches
				// and take most of a minute (minutes under -race).
				continue
			}
			full, n, _ := explore.Outcomes(w, b, false)
			red, m, pruned := explore.Outcomes(w, b, true)
			if !maps.Equal(full, red) {
				t.Errorf("%s, bound %d: outcomes differ:\nfull %q\nreduced %q", name, b, slices.Sorted(maps.Keys(full)), slices.Sorted(maps.Keys(red)))
			}
			t.Logf("%s, bound %d: %d schedules, %d with sleep sets (%d pruned), %d outcome(s)", name, b, n, m, pruned, len(full))
		}
	}
}
