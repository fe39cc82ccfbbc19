package explore

import (
	"fmt"
	"strings"
)

// exploreAuto is the Auto strategy: iterative deepening of the exhaustive
// search on the preemption bound, with PCT (at a depth one more than the
// bound, deepening too) and the random walk between the bounds, within
// the budget of o.Schedules schedules (and o.Time).
//
// Each bound gets half of what is left of the budget. A bound whose
// search completes is followed by as many randomized schedules as it took
// (at least 50), PCT and the random walk half each, and then the next
// bound; the first bound that does not complete, or the bound o.Preemptions
// sets, ends the deepening, and the rest of the budget goes to PCT at
// depths 2 to 5 in turn and the random walk. A search that completes
// without leaving any option out for its bound has covered every schedule
// there is (up to equivalence): the exploration stops there, complete.
func exploreAuto(world func(*World), o *Options) Result {
	res := Result{Strategy: Auto, Bound: -1}
	left := func() int { return o.Schedules - res.Schedules }
	exBudget := o.budget
	if o.MaxFaults == 0 {
		exBudget = 1 // so that each bound's search stays finite
	}
	var cover []string
	randomized := 0
	depths := [2]int{1 << 30, 0}
	random := func(depth, n int) bool {
		if n <= 0 {
			return false
		}
		before := res.Schedules
		po := *o
		po.Strategy, po.Depth, po.Seed = PCT, depth, mix(o.Seed, uint64(depth))
		runStrategy(world, &po, newStrategy(&po), (n+1)/2, &res)
		if res.Failure == nil && !res.TimedOut {
			po.Strategy = Random
			runStrategy(world, &po, newStrategy(&po), n/2, &res)
		}
		randomized += res.Schedules - before
		depths[0], depths[1] = min(depths[0], depth), max(depths[1], depth)
		return res.Failure != nil || res.TimedOut
	}
	for b := 0; b <= o.Preemptions && left() > 0; b++ {
		eo := *o
		eo.Strategy, eo.Preemptions, eo.budget = Exhaustive, b, exBudget
		st := newDPOR(b)
		before := res.Schedules
		complete := runStrategy(world, &eo, st, max(1, left()/2), &res)
		ran := res.Schedules - before
		if res.Failure != nil {
			cover = append(cover, fmt.Sprintf("found with %s, after %d schedule(s) with that bound", preemptions(b), ran))
			break
		}
		if res.TimedOut {
			cover = append(cover, fmt.Sprintf("%s not finished (%d schedule(s); out of time)", preemptions(b), ran))
			break
		}
		if !complete {
			cover = append(cover, fmt.Sprintf("%s not finished (%d schedule(s))", preemptions(b), ran))
			break
		}
		res.Bound = b
		if !st.cut {
			res.Complete = true
			cover = append(cover, fmt.Sprintf("complete: every schedule, with %s at most (%d schedule(s))", preemptions(b), ran))
			break
		}
		cover = append(cover, fmt.Sprintf("complete up to %s (%d schedule(s) with that bound)", preemptions(b), ran))
		if random(b+2, min(left(), max(50, ran))) {
			break
		}
	}
	for d := 2; left() > 0 && res.Failure == nil && !res.TimedOut && !res.Complete; d++ {
		if random(d, min(left(), 500)) {
			break
		}
		if d == 5 {
			d = 1
		}
	}
	// "complete up to 1 preemption (6 schedules); complete up to 2 ..." reads
	// best as the last completed bound and the unfinished one.
	var last []string
	for _, c := range cover {
		if strings.HasPrefix(c, "complete up to") && len(last) > 0 && strings.HasPrefix(last[len(last)-1], "complete up to") {
			last[len(last)-1] = c
			continue
		}
		last = append(last, c)
	}
	if randomized > 0 {
		d := fmt.Sprintf("%d", depths[0])
		if depths[1] != depths[0] {
			d = fmt.Sprintf("%d-%d", depths[0], depths[1])
		}
		last = append(last, fmt.Sprintf("PCT (depth %s) and the random walk: %d schedule(s)", d, randomized))
	}
	res.Coverage = strings.Join(last, "; ")
	return res
}

func preemptions(b int) string {
	if b == 1 {
		return "1 preemption"
	}
	return fmt.Sprintf("%d preemptions", b)
}
