package explore

import (
	"hash/fnv"
	"strconv"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/sim"
)

// actor names who takes a step, the same in every schedule: a goroutine
// (by the order it was started), one engine event (by what it is: its
// kind, device, QP, packet and sender, and how many events of that sort
// came before it in the schedule), or the clock. The partial-order
// reduction (dpor.go) keeps actors across schedules, in a node's options
// and its sleep set, and compares them with the steps of later schedules:
// an engine event's sequence number would not do, since it counts the
// events in the order they were created, which differs from one schedule
// to another.
type actor uint64

const (
	clockActor actor = 1 << 62
	eventActor actor = 1 << 63
)

func goActor(g *gor) actor { return actor(g.id + 1) }

// stepInfo is what the partial-order reduction knows of one step.
type stepInfo struct {
	actor  actor
	thread int // action.thread, for the preemption bound
	fp     footprint
	// creator is the step that made the actor (started the goroutine,
	// created the event), -1 for the world function.
	creator int
	clock   bool
}

// stepper is a picker that decides every step, those with one option
// included, and is told each step's actor and footprint (the runner keeps
// them in infos): the partial-order reduction.
type stepper interface {
	picker
	// choose returns the index in en of the action to take, or -1 to stop
	// the schedule as redundant.
	choose(r *runner, en []action) int
}

// actorOf returns the actor of a.
func (r *runner) actorOf(a action) actor {
	switch {
	case a.g != nil:
		return goActor(a.g)
	case a.clock:
		return clockActor
	}
	return r.evActor[a.ev.Seq]
}

// stepInfo describes action a, about to be taken.
func (r *runner) stepInfo(a action) stepInfo {
	s := stepInfo{actor: r.actorOf(a), thread: a.thread(), fp: r.footprint(a), creator: -1, clock: a.clock}
	switch {
	case a.g != nil:
		s.creator = a.g.creator
	case !a.clock:
		if c, ok := r.evCreator[a.ev.Seq]; ok {
			s.creator = c
		}
	}
	return s
}

// labelEvents gives every engine event the runner sees for the first time
// its actor, and records the step that created it (the last step taken:
// events appear in Ready after the step that made them, or after the
// clock for timers and delayed packets).
func (r *runner) labelEvents(ready []sim.ReadyEvent) {
	if r.evActor == nil {
		r.evActor, r.evCreator, r.keyN = map[uint64]actor{}, map[uint64]int{}, map[uint64]int{}
	}
	for _, e := range ready {
		if _, ok := r.evActor[e.Seq]; ok {
			continue
		}
		k := eventKey(e)
		n := r.keyN[k]
		r.keyN[k] = n + 1
		r.evActor[e.Seq] = eventActor | actor(mix(k, uint64(n)))&^(eventActor|clockActor)
		r.evCreator[e.Seq] = r.steps - 1
	}
}

// eventKey hashes what an engine event is, without its sequence number.
func eventKey(e sim.ReadyEvent) uint64 {
	h := fnv.New64a()
	h.Write([]byte(e.Device))
	var b [32]byte
	v := strconv.AppendUint(b[:0], uint64(e.Kind)<<56|uint64(e.Packet)<<48|uint64(e.SLID)<<32|uint64(e.QPN), 16)
	v = append(v, '/')
	v = strconv.AppendUint(v, uint64(e.SrcQPN)<<32|uint64(e.PSN), 16)
	h.Write(v)
	return h.Sum64()
}

// mix combines two hashes.
func mix(a, b uint64) uint64 {
	x := a ^ (b + 0x9e3779b97f4a7c15 + a<<6 + a>>2)
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	return x
}

// mixString adds s to hash h (FNV-1a).
func mixString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return mix(h, uint64(len(s)))
}

// setupHash describes the world as its function left it: the objects it
// created and the goroutines it started, by name, and the verbs it called.
func (r *runner) setupHash() uint64 {
	h := mix(14695981039346656037, r.setupVerbs)
	for _, o := range r.objs {
		if t, ok := o.(domain.Object); ok {
			h = mixString(h, t.TraceName())
		}
	}
	for _, g := range r.gs {
		h = mixString(h, g.name)
	}
	return h
}

// hashStep adds a step to the hash of the schedule's path: who moved and,
// for a goroutine, the verb and the object.
func (r *runner) hashStep(a action) {
	h := r.path
	switch {
	case a.g != nil:
		h = mixString(h, a.g.name)
		switch a.g.state {
		case gYield:
			h = mixString(h, a.g.op.Verb)
			if a.g.op.Obj != nil {
				h = mixString(h, a.g.op.Obj.TraceName())
			}
		case gBlocked:
			h = mix(h, 1)
		}
	case a.clock:
		h = mix(h, 2)
	default:
		h = mix(h, eventKey(a.ev))
	}
	r.path = h
}

// pendingSteps records, when a schedule stops with actions still
// enabled (a failure, the step bound), the steps they would take, for the
// partial-order reduction: another schedule may take one of them earlier.
func (r *runner) pendingSteps() {
	for _, a := range r.enabled(nil) {
		r.pending = append(r.pending, r.stepInfo(a))
	}
}
