package explore

import "slices"

// Shrinking: before a failure is reported, its schedule is made smaller
// while it still fails the same way. The shrinker works on the list of
// threads picked at every decision with more than one option (a goroutine,
// the engine, or the outcome of a packet-fault draw), which survives edits
// better than the indices do: it runs variants of that list (the tail cut
// off, chunks removed, one decision replaced by the default) in which a
// thread that is not enabled, and every decision past the list, take the
// default, "let the thread that moved last go on" (no preemption; at a
// fault draw, the first outcome: deliver). It keeps a variant when it
// fails with the same Kind and is smaller: fewer preemptions first, then
// fewer faults, then fewer steps, then fewer decisions. The token is made from the indices the
// smallest run actually took, so it replays exactly.

// Size measures a schedule.
type Size struct {
	Steps       int // steps taken up to the failure
	Preemptions int // decisions that switched away from a thread that could go on
	Choices     int // decisions with more than one option (the token's length)
	Faults      int // packet faults drawn (outcomes other than deliver)
}

// less orders sizes: preemptions, then faults, then steps, then decisions.
func (a Size) less(b Size) bool {
	if a.Preemptions != b.Preemptions {
		return a.Preemptions < b.Preemptions
	}
	if a.Faults != b.Faults {
		return a.Faults < b.Faults
	}
	if a.Steps != b.Steps {
		return a.Steps < b.Steps
	}
	return a.Choices < b.Choices
}

func sizeOf(r *runner) Size {
	return Size{Steps: r.failure.Step, Preemptions: r.preempts, Choices: len(r.choices), Faults: r.faults}
}

// shrinkRuns bounds the schedules one shrink may run.
const shrinkRuns = 1000

// shrinkSearch bounds the schedules of one bounded exhaustive search for
// a failure with fewer preemptions.
const shrinkSearch = 200

// fill is the choice a shrinkPicker makes where its list says nothing.
const fill = -1

// shrinkPicker follows a list of threads; an entry that is fill or not
// enabled, and every decision past the list, picks the default: the
// thread that moved last when it can go on, else the first option.
type shrinkPicker struct {
	threads []int
	n       int
}

func (p *shrinkPicker) pick(r *runner, en []action) int {
	if p.n < len(p.threads) {
		t := p.threads[p.n]
		p.n++
		if t != fill {
			for i, a := range en {
				if a.thread() == t {
					return i
				}
			}
		}
	}
	for i, a := range en {
		if a.thread() == r.last {
			return i
		}
	}
	return 0
}

// shrink returns the smallest failing schedule it finds from r (a failed
// run of world): its choices, its size, and the schedules it ran.
func shrink(world func(*World), r *runner, o *Options) (choices []int, size Size, runs int) {
	kind := r.failure.Kind
	choices, best, bestSize := r.choices, append([]int(nil), r.threads...), sizeOf(r)
	try := func(cand []int) bool {
		if runs >= shrinkRuns {
			return false
		}
		runs++
		q := runOnce(world, &shrinkPicker{threads: cand}, o.MaxSteps, false, o)
		if q.failure == nil || q.failure.Kind != kind {
			return false
		}
		if s := sizeOf(q); s.less(bestSize) {
			choices, best, bestSize = q.choices, append([]int(nil), q.threads...), s
			return true
		}
		return false
	}
	for improved := true; improved && runs < shrinkRuns; {
		improved = false
		// A schedule with fewer preemptions, if a small bounded exhaustive
		// search finds one (local edits rarely remove two preemptions at
		// once).
		if bestSize.Preemptions > 0 {
			s := &dfs{bound: bestSize.Preemptions - 1}
			for i := 0; i < shrinkSearch && runs < shrinkRuns && !improved; i++ {
				p := s.next(i)
				if p == nil {
					break
				}
				runs++
				q := runOnce(world, p, o.MaxSteps, false, o)
				s.done(q)
				if q.failure != nil && q.failure.Kind == kind {
					if sz := sizeOf(q); sz.less(bestSize) {
						choices, best, bestSize = q.choices, append([]int(nil), q.threads...), sz
						improved = true
					}
				}
			}
			if improved {
				continue
			}
		}
		// Cut the tail: decide by default from decision k on.
		for k := 0; k < len(best) && !improved; k++ {
			improved = try(append([]int(nil), best[:k]...))
		}
		// Remove chunks of decisions, halving the chunk (delta debugging).
		for chunk := len(best) / 2; chunk >= 1 && !improved; chunk /= 2 {
			for i := 0; i+chunk <= len(best) && !improved; i += chunk {
				cand := append(append([]int(nil), best[:i]...), best[i+chunk:]...)
				improved = try(cand)
			}
		}
		// Replace one decision by the default.
		for i := 0; i < len(best) && !improved; i++ {
			if best[i] == fill {
				continue
			}
			cand := append([]int(nil), best...)
			cand[i] = fill
			improved = try(cand)
		}
		// Give one decision to the thread that moved before it, and drop
		// the next decision that thread got.
		for i := 1; i < len(best) && !improved; i++ {
			if best[i] == best[i-1] {
				continue
			}
			cand := append([]int(nil), best...)
			cand[i] = best[i-1]
			improved = try(cand)
		}
		// Give one decision to another thread of the schedule.
		for i := 0; i < len(best) && !improved; i++ {
			for _, t := range threadsOf(best) {
				if t == best[i] || improved {
					continue
				}
				cand := append([]int(nil), best...)
				cand[i] = t
				improved = try(cand)
			}
		}
	}
	return choices, bestSize, runs
}

// threadsOf lists the distinct threads of a list, in order of appearance.
func threadsOf(list []int) []int {
	var ts []int
	for _, t := range list {
		if t != fill && !slices.Contains(ts, t) {
			ts = append(ts, t)
		}
	}
	return ts
}
