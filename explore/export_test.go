package explore

import (
	"regexp"

	"github.com/verbsim/verbsim/sim"
)

// stepNumbers are the step numbers of a failure's message: two schedules
// equivalent up to the order of independent steps reach the same state
// and fail the same way, at steps numbered differently.
var stepNumbers = regexp.MustCompile(`step \d+`)

// independentCQs: two producers each feed a CQ on a channel of its own,
// two consumers each run the recipe on one: most steps commute.
func independentCQs(w *World) {
	f, _ := w.NewFabric(sim.Config{Devices: []sim.DeviceConfig{{Name: "a"}}})
	ctx, _ := f.Devices()[0].Open()
	for range 2 {
		recipePair(w, ctx, 2)
	}
}

// IndependentCQs exports independentCQs.
var IndependentCQs = independentCQs

// OutcomesOf runs every schedule of the exhaustive search of world with
// the given reduction ("none", "sleep", "dpor"), not stopping at failures,
// and returns the set of outcomes (each failure's kind and message, its
// step numbers left out; "pass") and the schedules run.
func OutcomesOf(world func(*World), bound int, reduction string) (set map[string]bool, runs, pruned int) {
	set = map[string]bool{}
	o := Options{Strategy: Exhaustive}.fill()
	var st strategy
	switch reduction {
	case "none":
		st = &dfs{bound: bound}
	case "sleep":
		st = &dfs{bound: bound, reduce: true}
	default:
		st = newDPOR(bound)
	}
	for i := 0; i < 1<<20; i++ {
		p := st.next(i)
		if p == nil {
			break
		}
		r := runOnce(world, p, o.MaxSteps, false, &o)
		st.done(r)
		runs++
		switch {
		case r.pruned:
			pruned++
		case r.failure != nil:
			set[r.failure.Kind.String()+": "+stepNumbers.ReplaceAllString(r.failure.Message, "step _")] = true
		default:
			set["pass"] = true
		}
	}
	return set, runs, pruned
}
