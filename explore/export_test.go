package explore

import (
	"github.com/verbsim/verbsim/sim"
)

// outcomes runs every schedule of the exhaustive search of world (not
// stopping at failures) and returns the set of outcomes: the kind and
// message of every failure, "pass" for a schedule that passed. A pruned
// schedule has no outcome.
func outcomes(world func(*World), bound int, reduce bool) (set map[string]bool, runs, pruned int) {
	set = map[string]bool{}
	o := Options{Strategy: Exhaustive}.fill() // one packet fault at most
	s := &dfs{bound: bound, reduce: reduce}
	for i := 0; i < 1<<20; i++ {
		p := s.next(i)
		if p == nil {
			break
		}
		r := runOnce(world, p, o.MaxSteps, false, &o)
		s.done(r)
		runs++
		switch {
		case r.pruned:
			pruned++
		case r.failure != nil:
			set[r.failure.Kind.String()+": "+r.failure.Message] = true
		default:
			set["pass"] = true
		}
	}
	return set, runs, pruned
}

// independentCQs: two producers each feed a CQ on a channel of its own,
// two consumers each run the recipe on one: most steps commute.
func independentCQs(w *World) {
	f, _ := w.NewFabric(sim.Config{Devices: []sim.DeviceConfig{{Name: "a"}}})
	ctx, _ := f.Devices()[0].Open()
	for range 2 {
		recipePair(w, ctx, 2)
	}
}

// Outcomes exports outcomes to the tests of package explore_test.
var Outcomes = outcomes

// IndependentCQs exports independentCQs.
var IndependentCQs = independentCQs
