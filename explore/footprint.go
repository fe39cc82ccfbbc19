package explore

import (
	"slices"

	"github.com/verbsim/verbsim/internal/simhook"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// The dependence relation of the partial-order reduction (dpor.go, and
// the sleep sets of the unreduced search, strategy.go): every step has a
// footprint, the cells of the world's state it may read or write,
// computed in the state where the step is taken. Two steps are dependent
// when one writes a cell the other reads or writes, or when either is
// global; independent steps commute: taking them in either order leaves
// the same state and enables the same steps.
//
// The cells, per object:
//
//   - a CQ: its ring of completions (and its overrun state), its arm, its
//     events read and acknowledged;
//   - a completion channel: its queue of events;
//   - a QP: its state, its send and receive queues and its transport
//     state (requester and responder), one cell;
//   - an SRQ: its queue;
//   - a device: the memory of its registered buffers;
//   - a synchronisation object of the world (Mutex, Chan, ...): its state.
//
// Footprints of a goroutine's step (the verb it is paused before, or the
// wait it returns from):
//
//   - ibv_poll_cq writes the ring, or reads it when the CQ is empty (an
//     empty poll changes nothing); ibv_req_notify_cq writes the arm
//     (arming never looks at the completions already there, NOTIFY-02);
//     ibv_ack_cq_events writes the event counts; a completion added by
//     the simulator (CQ.Push) writes the ring, and the arm and the
//     channel's queue when the CQ is armed (the completion raises an
//     event), and only reads the arm otherwise; any other verb on a CQ
//     (destroy, resize, the extended poll, the simulator's reads) writes
//     all of the CQ's cells and the channel's queue when the CQ is armed
//     or has an event queued there;
//   - ibv_get_cq_event writes the channel's queue and the event counts of
//     every CQ on the channel;
//   - a verb on a QP (post_send, post_recv, modify_qp, query_qp, the
//     extended post) writes the QP, its SRQ and the cells of its send and
//     receive CQs that a completion writes (a modify to ERR flushes work
//     requests into them); ibv_destroy_qp is global;
//   - ibv_post_srq_recv writes the SRQ;
//   - an operation on a synchronisation object writes it (RLock and
//     RUnlock read it: readers commute).
//
// Footprints of the engine's events (a requester run, a packet's arrival,
// a timer), by the QP they run on: they write the QP, its SRQ and the
// cells a completion writes in its CQs, and the memory of its device
// (a packet's arrival writes it; a run or a timer, which read what they
// send, read it). A packet sent, an ACK answered, a timer armed is the
// creation of another event: an order, not a dependence (dpor.go).
//
// Global, dependent on every step: any other verb (on contexts, PDs, MRs,
// AHs, the channel's destroy, verbs that name no object, an XRC QP), a CQ
// that is full (an overrun raises an async event and may move QPs to
// ERR), a wait of another kind, an event on a QP the world does not know,
// an engine event of a kind not modelled here, and the clock. Async
// events need no cell: every verb that reads them is global.
//
// The code a goroutine runs between two verbs is part of its step and is
// assumed to touch nothing shared but through verbs and the explorer's
// synchronisation objects: goroutines that talk through plain Go
// variables must guard them with an explore.Mutex (or set NoReduction).
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
	cellQP                    // a QP: its state, queues and transport state
	cellSRQ                   // an SRQ's queue
	cellMem                   // a device's memory (obj: the device's index in the fabric)
	cellSync                  // a synchronisation object (obj: its index in runner.syncs)
)

// cell is a part of an object, the object named by its index in
// runner.objs (the order of creation), in the fabric's devices (cellMem)
// or in runner.syncs (cellSync). Footprints outlive the schedule they
// were computed in (a node's options and a sleep set are computed once
// and compared with the steps of every later schedule through that node),
// and every schedule builds its world anew, so an object's handle is not
// the same from one schedule to the next; its index is, for every object
// that exists at the node: every schedule through the node runs the same
// steps up to it, and objects created later get higher indices.
type cell struct {
	obj  int32
	part cellPart
}

// access is a read or a write of a cell.
type access struct {
	c     cell
	write bool
}

// footprint is what a step may touch.
type footprint struct {
	global bool
	acc    []access
}

var globalStep = footprint{global: true}

// dependent reports whether a and b may not commute: either is global, or
// they share a cell that one of them writes.
func (a footprint) dependent(b footprint) bool {
	if a.global || b.global {
		return true
	}
	for _, x := range a.acc {
		for _, y := range b.acc {
			if x.c == y.c && (x.write || y.write) {
				return true
			}
		}
	}
	return false
}

func (a footprint) independent(b footprint) bool { return !a.dependent(b) }

// merge returns a footprint that covers a and b (a step whose footprint
// differed from one run to another, as after another outcome of a draw).
func (a footprint) merge(b footprint) footprint {
	if a.global || b.global {
		return globalStep
	}
	out := footprint{acc: slices.Clone(a.acc)}
	for _, y := range b.acc {
		i := slices.IndexFunc(out.acc, func(x access) bool { return x.c == y.c })
		switch {
		case i < 0:
			out.acc = append(out.acc, y)
		case y.write:
			out.acc[i].write = true
		}
	}
	return out
}

// fpBuilder collects a footprint; an object the world does not know makes
// it global.
type fpBuilder struct {
	r  *runner
	fp footprint
}

func (b *fpBuilder) add(obj int, part cellPart, write bool) {
	if obj < 0 {
		b.fp.global = true
		return
	}
	c := cell{int32(obj), part}
	for i, x := range b.fp.acc {
		if x.c == c {
			b.fp.acc[i].write = x.write || write
			return
		}
	}
	b.fp.acc = append(b.fp.acc, access{c, write})
}

func (b *fpBuilder) obj(h any, part cellPart, write bool) { b.add(b.r.objIndex(h), part, write) }

// completion adds what a completion pushed into q may touch: the ring,
// the arm (written when it fires, read when it does not) and the queue of
// q's channel when q is armed. A full CQ makes the step global.
func (b *fpBuilder) completion(q *sim.CQ) {
	if q == nil {
		return
	}
	if q.Len() >= q.CQE() {
		b.fp.global = true
		return
	}
	b.obj(q, cellRing, true)
	armed := q.Armed() != sim.CQDisarmed
	b.obj(q, cellArm, armed)
	if ch := q.Channel(); ch != nil && armed {
		b.obj(ch, cellQueue, true)
	}
}

func (b *fpBuilder) done() footprint {
	if b.fp.global {
		return globalStep
	}
	return b.fp
}

// footprint returns what action a may touch if taken now.
func (r *runner) footprint(a action) footprint {
	g := a.g
	if g == nil {
		if a.clock || a.draw() {
			return globalStep
		}
		return r.eventFootprint(a.ev)
	}
	var obj any
	var verb string
	switch {
	case g.state == gYield && g.sop != nil:
		return r.syncFootprint(g.sop.obj, g.sop.verb, g.sop.extra)
	case g.state == gBlocked && g.sw != nil:
		return r.syncFootprint(g.sw.obj, g.sw.verb, g.sw.extra)
	case g.state == gYield:
		if g.op.Obj == nil {
			return globalStep
		}
		obj, verb = g.op.Obj, g.op.Verb
	case g.state == gBlocked:
		if g.waiter == nil || g.waiter.Obj == nil {
			return globalStep
		}
		obj, verb = g.waiter.Obj, g.waiter.Verb
	default:
		return globalStep
	}
	b := fpBuilder{r: r}
	switch h := simhook.HandleOf(obj).(type) {
	case *sim.CQ:
		r.cqFootprint(&b, h, verb)
	case *sim.CompChannel:
		if verb != "get_cq_event" && verb != "ibv_get_cq_event" {
			return globalStep
		}
		b.obj(h, cellQueue, true)
		cqs, _ := r.cqs()
		for _, q := range cqs {
			if q.h.Channel() == h {
				b.obj(q.h, cellEvent, true)
			}
		}
	case *sim.QP:
		if verb == "ibv_destroy_qp" || verb == "ibv_create_qp" {
			return globalStep
		}
		r.qpFootprint(&b, h, false)
	case *sim.SRQ:
		if verb != "ibv_post_srq_recv" {
			return globalStep
		}
		b.obj(h, cellSRQ, true)
	default:
		return globalStep
	}
	return b.done()
}

// syncFootprint is what an operation on a synchronisation object touches:
// the object, and the others it names (a Cond's lock, a select's
// channels).
func (r *runner) syncFootprint(o *syncObj, verb string, extra []*syncObj) footprint {
	b := fpBuilder{r: r}
	b.add(o.index(r), cellSync, !o.reads(verb))
	for _, x := range extra {
		b.add(x.index(r), cellSync, true)
	}
	return b.done()
}

// cqFootprint adds what verb on q touches.
func (r *runner) cqFootprint(b *fpBuilder, q *sim.CQ, verb string) {
	switch verb {
	case "ibv_poll_cq":
		b.obj(q, cellRing, q.Len() > 0)
	case "ibv_req_notify_cq":
		b.obj(q, cellArm, true)
	case "ibv_ack_cq_events":
		b.obj(q, cellEvent, true)
	case "cq push":
		b.completion(q)
	default: // any other verb on the CQ: all of it
		if q.Len() >= q.CQE() {
			b.fp.global = true
			return
		}
		b.obj(q, cellRing, true)
		b.obj(q, cellArm, true)
		b.obj(q, cellEvent, true)
		if ch := q.Channel(); ch != nil && (q.Armed() != sim.CQDisarmed || slices.Contains(ch.Pending(), q)) {
			b.obj(ch, cellQueue, true)
		}
	}
}

// qpFootprint adds what a verb on q, or an engine event on it, touches:
// the QP, its SRQ, its CQs (what a completion writes) and, for an engine
// event, its device's memory (mem: written, as a packet's arrival does;
// otherwise read).
func (r *runner) qpFootprint(b *fpBuilder, q *sim.QP, engine bool, mem ...bool) {
	switch q.Type() {
	case verbs.QPTypeRC, verbs.QPTypeUC, verbs.QPTypeUD:
	default: // XRC QPs reach SRQs by number: not modelled
		b.fp.global = true
		return
	}
	b.obj(q, cellQP, true)
	if s := q.SRQ(); s != nil {
		b.obj(s, cellSRQ, true)
	}
	send, recv := q.SendCQ(), q.RecvCQ()
	b.completion(send)
	if recv != send {
		b.completion(recv)
	}
	if engine {
		b.add(r.deviceIndex(q), cellMem, len(mem) > 0 && mem[0])
	}
}

// eventFootprint returns what an engine event may touch. A kind of event
// this function does not model (a future one: the connection manager's,
// say) is global until it is modelled here.
func (r *runner) eventFootprint(ev sim.ReadyEvent) footprint {
	switch ev.Kind {
	case sim.EventRun, sim.EventTimer, sim.EventPacket:
	default:
		return globalStep
	}
	q := r.qpAt(ev.Device, ev.QPN)
	if q == nil {
		return globalStep
	}
	b := fpBuilder{r: r}
	r.qpFootprint(&b, q, true, ev.Kind == sim.EventPacket)
	return b.done()
}

// objIndex returns the index in r.objs of the object whose handle is h,
// -1 when there is none.
func (r *runner) objIndex(h any) int {
	if i, ok := r.objIdx[h]; ok {
		return i
	}
	for i, o := range r.objs {
		if simhook.HandleOf(o) == h {
			if r.objIdx == nil {
				r.objIdx = map[any]int{}
			}
			r.objIdx[h] = i
			return i
		}
	}
	return -1
}

// qpAt returns the QP of the world numbered qpn on the device named dev,
// nil when there is none.
func (r *runner) qpAt(dev string, qpn uint32) *sim.QP {
	k := qpKey{dev, qpn}
	if q, ok := r.qpByNum[k]; ok && !q.Destroyed() {
		return q
	}
	for _, o := range r.objs {
		q, ok := o.(*sim.QP)
		if !ok || q.Num() != qpn || q.Destroyed() {
			continue
		}
		if c := q.Context(); c == nil || c.Device().Name() != dev {
			continue
		}
		if r.qpByNum == nil {
			r.qpByNum = map[qpKey]*sim.QP{}
		}
		r.qpByNum[k] = q
		return q
	}
	return nil
}

type qpKey struct {
	dev string
	qpn uint32
}

// deviceIndex returns the index of q's device in the fabric, -1 when it
// has none.
func (r *runner) deviceIndex(q *sim.QP) int {
	c := q.Context()
	if c == nil || r.fabric == nil {
		return -1
	}
	d := c.Device()
	for i, x := range r.fabric.Devices() {
		if x == d {
			return i
		}
	}
	return -1
}

// asleep is a step in a sleep set: an actor's next step, and its
// footprint when it was put to sleep (unchanged while it sleeps: every
// step taken since was independent of it).
type asleep struct {
	actor actor
	fp    footprint
}

func sleeping(set []asleep, a actor) bool {
	for _, s := range set {
		if s.actor == a {
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
