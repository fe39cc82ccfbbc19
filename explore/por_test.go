package explore_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/verbsim/verbsim/explore"
	"github.com/verbsim/verbsim/explore/patterns"
)

// TestReductionSound: the exhaustive search with sleep sets alone and
// with DPOR reaches the outcomes (every failure's kind and message, and
// passing) of the unreduced search, on every pattern of the catalogue and
// on worlds of independent CQs and RC streams:
//
//   - without a bound, the same set, where the unreduced search ends in
//     reasonable time;
//   - with a bound of 1 or 2, nothing the unreduced search does not reach
//     within the same bound, and everything it reaches within the bound,
//     or at worst within the next one. A reduced search explores one
//     schedule of each class of equivalent ones, and the one it keeps may
//     need a preemption more than another of the class: the reduction
//     lags the bound by one at most (measured: pool-add-after-recv's "0 of
//     3 jobs done" needs bound 1 unreduced, 2 reduced). Auto deepens the
//     bound, so it only finds such a failure one bound later.
//
// The reduced searches run no more schedules than the unreduced one.
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
	huge := map[string]bool{"independent-cqs": true, "cq-too-small": true, "ud-expects-every-packet": true, "rc-stream-2": true,
		"pool": true, "pool-add-after-recv": true, "pool-never-closed": true}
	// Hundreds of thousands of schedules unreduced with 2 preemptions.
	large := map[string]bool{"pool": true, "pool-add-after-recv": true}
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
		case large[name]:
			bounds = []int{1}
		}
		for _, b := range bounds {
			if b == explore.Unbounded && huge[name] {
				continue
			}
			full, n, _ := explore.OutcomesOf(w, b, "none")
			for _, red := range []string{"sleep", "dpor"} {
				got, m, pruned := explore.OutcomesOf(w, b, red)
				if m > n {
					t.Errorf("%s, bound %d: %d schedules unreduced, %d with %s", name, b, n, m, red)
				}
				if extra := minus(got, full); len(extra) > 0 {
					t.Errorf("%s, bound %d, %s: outcomes the unreduced search does not reach: %q", name, b, red, extra)
				}
				missing := minus(full, got)
				if b == explore.Unbounded && len(missing) > 0 {
					t.Errorf("%s, unbounded, %s: outcomes missed: %q", name, red, missing)
				}
				if len(missing) > 0 {
					next, _, _ := explore.OutcomesOf(w, b+1, red)
					if still := minus(full, next); len(still) > 0 {
						t.Errorf("%s, bound %d, %s: outcomes missed even with bound %d: %q", name, b, red, b+1, still)
					}
					t.Logf("%s, bound %d, %s: %d outcome(s) found only with bound %d", name, b, red, len(missing), b+1)
				}
				t.Logf("%s, bound %d: %d schedules unreduced, %d with %s (%d pruned); %d outcome(s)", name, b, n, m, red, pruned, len(full))
			}
		}
	}
}

// minus lists the outcomes of a that b lacks.
func minus(a, b map[string]bool) []string {
	var out []string
	for k := range a {
		if !b[k] {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}
