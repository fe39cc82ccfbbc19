package explore

import (
	"context"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
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
	for i := range 2 {
		ch, _ := ctx.CreateCompChannel()
		q, _ := ctx.CreateCQ(16, nil, ch, 0)
		q.ReqNotify(false)
		w.Go("producer", func(context.Context) {
			for j := range 2 {
				q.Push(verbs.WC{WRID: uint64(j), Status: verbs.WCSuccess, Opcode: verbs.WCRecv}, false)
			}
		})
		w.Go("consumer", func(c context.Context) {
			wcs := make([]verbs.WC, 4)
			for got := 0; got < 2; {
				q, _, err := ch.GetEvent(c)
				if err != nil {
					return
				}
				q.AckEvents(1)
				q.ReqNotify(false)
				for n, _ := q.Poll(wcs); n > 0; n, _ = q.Poll(wcs) {
					got += n
				}
			}
		})
		_ = i
	}
}

// Outcomes exports outcomes to the tests of package explore_test.
var Outcomes = outcomes

// IndependentCQs exports independentCQs.
var IndependentCQs = independentCQs
