package explore

import (
	"slices"

	"github.com/verbsim/verbsim/internal/simhook"
	"github.com/verbsim/verbsim/sim"
)

// Partial-order reduction for the exhaustive search: sleep sets
// (Godefroid, "Partial-Order Methods for the Verification of Concurrent
// Systems", LNCS 1032, 1996), with a dependence relation at verb
// granularity computed in the state where the step is taken.
//
// A step's footprint is the set of cells it may read or write:
//
//   - a verb on a CQ (the domain names the CQ, not the verb) touches the
//     CQ's ring and arm, and its event counts; it also touches its
//     channel's event queue when the CQ is armed (a completion added now
//     may raise an event) or has an event queued there (a destroy
//     discards it);
//   - ibv_get_cq_event (a verb, or a woken wait) touches the channel's
//     queue and the event counts of every CQ on the channel;
//   - everything else is global, dependent on every step: verbs on QPs,
//     SRQs, contexts, PDs, a channel's destroy, verbs that name no object,
//     a CQ that is full (an overrun raises an async event), a wait of
//     another kind, the engine's events and the clock.
//
// Two steps are independent when neither is global and their cells are
// disjoint. The code a goroutine runs between two verbs is part of its
// step and is assumed to touch nothing shared but through verbs: with
// reduction on, goroutines must not communicate through Go variables.

// cellPart names a part of an object.
type cellPart uint8

const (
	cellCQ    cellPart = iota // a CQ's ring, arm and state
	cellEvent                 // a CQ's events read and acked
	cellQueue                 // a channel's event queue
)

type cell struct {
	obj  any
	part cellPart
}

// footprint is what a step may touch.
type footprint struct {
	global bool
	cells  []cell
}

func (a footprint) independent(b footprint) bool {
	if a.global || b.global {
		return false
	}
	for _, c := range a.cells {
		if slices.Contains(b.cells, c) {
			return false
		}
	}
	return true
}

var globalStep = footprint{global: true}

// footprint returns what action a may touch if taken now.
func (r *runner) footprint(a action) footprint {
	g := a.g
	if g == nil {
		return globalStep
	}
	var obj any
	var verb string
	switch g.state {
	case gYield:
		if g.op.Obj == nil {
			return globalStep
		}
		obj, verb = g.op.Obj, g.op.Verb
	case gBlocked:
		if g.waiter == nil || g.waiter.Obj == nil {
			return globalStep
		}
		obj, verb = g.waiter.Obj, g.waiter.Verb
	default:
		return globalStep
	}
	switch h := simhook.HandleOf(obj).(type) {
	case *sim.CQ:
		if h.Len() >= h.CQE() {
			return globalStep
		}
		fp := footprint{cells: []cell{{h, cellCQ}, {h, cellEvent}}}
		if ch := h.Channel(); ch != nil && (h.Armed() != sim.CQDisarmed || slices.Contains(ch.Pending(), h)) {
			fp.cells = append(fp.cells, cell{ch, cellQueue})
		}
		return fp
	case *sim.CompChannel:
		if verb != "get_cq_event" && verb != "ibv_get_cq_event" {
			return globalStep
		}
		fp := footprint{cells: []cell{{h, cellQueue}}}
		cqs, _ := r.cqs()
		for _, q := range cqs {
			if q.h.Channel() == h {
				fp.cells = append(fp.cells, cell{q.h, cellEvent})
			}
		}
		return fp
	}
	return globalStep
}

// asleep is a step in a sleep set: a goroutine's next step, and its
// footprint when it was put to sleep (unchanged while it sleeps: every
// step taken since was independent of it).
type asleep struct {
	thread int
	fp     footprint
}

func sleeping(set []asleep, thread int) bool {
	for _, s := range set {
		if s.thread == thread {
			return true
		}
	}
	return false
}

// wake keeps the entries of set independent of a step with footprint fp.
func wake(set []asleep, fp footprint) []asleep {
	var out []asleep
	for _, s := range set {
		if s.fp.independent(fp) {
			out = append(out, s)
		}
	}
	return out
}
