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
//   - a verb on a CQ (the domain names the CQ and the verb, Op.Verb):
//     ibv_poll_cq touches the CQ's ring of completions; ibv_req_notify_cq
//     its arm (arming never looks at the completions already there,
//     NOTIFY-02); ibv_ack_cq_events its event counts; a completion added
//     (the simulator's CQ.Push) the ring and the arm, and the channel's
//     event queue when the CQ is armed (the completion raises an event);
//     any other verb on a CQ (destroy, resize, the extended poll, the
//     simulator's reads) all of those, and the channel's queue when the
//     CQ is armed or has an event queued there (a destroy discards it);
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
//
// A sleeping step keeps the footprint it was given when put to sleep. That
// is sound because what a footprint depends on (the CQ's fill, arm and
// queued events; the CQs on a channel) lies in the step's own cells, which
// no step taken since touched; a sleeping goroutine stays enabled (it is
// paused before a verb, or its wait was already woken), and a step that
// wakes a waiter writes the cell the waiter's footprint names.
//
// Cells name objects by their index in the world's creation order, never
// by handle: footprints are kept across schedules (a node's options, a
// sleep set) and every schedule builds a new world. Keyed by handle, no
// step of a later schedule shared a cell with a footprint kept from an
// earlier one, so a step put to sleep there was never woken
// (ucx-ack-last-cq lost an outcome that way).

// cellPart names a part of an object.
type cellPart uint8

const (
	cellRing  cellPart = iota // a CQ's ring of completions (and its overrun state)
	cellArm                   // a CQ's arm
	cellEvent                 // a CQ's events read and acked
	cellQueue                 // a channel's event queue
)

// cell is a part of an object, the object named by its index in
// runner.objs (the order of creation). Footprints outlive the schedule
// they were computed in (a node's options and a sleep set are computed
// once and compared with the steps of every later schedule through that
// node), and every schedule builds its world anew, so an object's handle
// is not the same from one schedule to the next; its index is, for every
// object that exists at the node: every schedule through the node runs
// the same steps up to it, and objects created later get higher indices.
type cell struct {
	obj  int
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
	var fp footprint
	add := func(h any, part cellPart) {
		id := r.objIndex(h)
		if id < 0 { // not an object of the world: assume the worst
			fp.global = true
		}
		fp.cells = append(fp.cells, cell{id, part})
	}
	switch h := simhook.HandleOf(obj).(type) {
	case *sim.CQ:
		switch verb {
		case "ibv_poll_cq":
			add(h, cellRing)
		case "ibv_req_notify_cq":
			add(h, cellArm)
		case "ibv_ack_cq_events":
			add(h, cellEvent)
		case "cq push":
			if h.Len() >= h.CQE() {
				return globalStep
			}
			add(h, cellRing)
			add(h, cellArm)
			if ch := h.Channel(); ch != nil && h.Armed() != sim.CQDisarmed {
				add(ch, cellQueue)
			}
		default: // any other verb on the CQ: all of it
			if h.Len() >= h.CQE() {
				return globalStep
			}
			add(h, cellRing)
			add(h, cellArm)
			add(h, cellEvent)
			if ch := h.Channel(); ch != nil && (h.Armed() != sim.CQDisarmed || slices.Contains(ch.Pending(), h)) {
				add(ch, cellQueue)
			}
		}
	case *sim.CompChannel:
		if verb != "get_cq_event" && verb != "ibv_get_cq_event" {
			return globalStep
		}
		add(h, cellQueue)
		cqs, _ := r.cqs()
		for _, q := range cqs {
			if q.h.Channel() == h {
				add(q.h, cellEvent)
			}
		}
	default:
		return globalStep
	}
	if fp.global {
		return globalStep
	}
	return fp
}

// objIndex returns the index in r.objs of the object whose handle is h,
// -1 when there is none.
func (r *runner) objIndex(h any) int {
	for i, o := range r.objs {
		if simhook.HandleOf(o) == h {
			return i
		}
	}
	return -1
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
