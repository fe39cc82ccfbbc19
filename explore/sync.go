package explore

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/sim"
)

// Go's own synchronisation inside a world. The explorer cannot see a
// goroutine that waits on a Go channel or a sync.Mutex: nothing tells it
// that the goroutine waits, or for what. The types of this file and of
// chan.go are the explorer's: each operation is a choice point, a wait is
// a wait the explorer knows (who waits for what, who holds it), and a
// deadlock that involves them is reported with its cycle. Outside a
// world, and in RunPlain, they are Go's own primitives: the same code runs
// in a test, under the explorer and in a program. docs/explore.md says why
// the explorer offers types rather than watching Go's (testing/synctest
// sees channels but not mutexes, and only inside tests).

// syncObj is what every synchronisation object of this package shares: in
// which schedule it is used, its name, and who holds it.
type syncObj struct {
	// bound is the runner of the schedule whose world uses the object, or
	// notExplored when a goroutine outside any world used it first.
	bound atomic.Pointer[runner]
	kind  string // "mutex", "rwmutex", "waitgroup", "cond", "once", "chan", "int64", "bool"
	label string // the world's name for it (Label), "" for none
	site  string // where a goroutine first used it in the schedule (file:line)
	idx   int    // its index in runner.syncs
	reset func() // empties the object's model when it is bound to a new schedule
	// holder holds it (a mutex; a Once's function), since step since.
	holder *gor
	since  int
}

// notExplored marks an object used outside any world.
var notExplored = &runner{}

// runnerOf returns the runner of the schedule the calling goroutine
// belongs to, binding the object to it on first use; nil outside any world.
func (o *syncObj) runnerOf(kind string, reset func()) *runner {
	r := o.bound.Load()
	if r == notExplored {
		return nil
	}
	if r != nil && !r.ended.Load() {
		return r
	}
	m, ok := memberOf()
	if !ok {
		o.bound.Store(notExplored)
		return nil
	}
	o.kind, o.reset, o.holder, o.since = kind, reset, nil, 0
	if reset != nil {
		reset()
	}
	o.site = callerSite()
	o.idx = len(m.r.syncs)
	m.r.syncs = append(m.r.syncs, o)
	o.bound.Store(m.r)
	return m.r
}

// callerSite is the first frame outside this package: where the world's
// code used the object.
func callerSite() string {
	pcs := make([]uintptr, 16)
	n := runtime.Callers(3, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	for {
		f, more := frames.Next()
		if !strings.Contains(f.Function, "verbsim/explore.") || strings.HasSuffix(f.File, "_test.go") {
			return fmt.Sprintf("%s:%d", filepath.Base(f.File), f.Line)
		}
		if !more {
			return ""
		}
	}
}

// TraceName names the object in reports and timelines: its label, or its
// kind and number, with where it was first used.
func (o *syncObj) TraceName() string {
	if o.label != "" {
		return o.kind + " " + o.label
	}
	if o.site != "" {
		return fmt.Sprintf("%s#%d (%s)", o.kind, o.idx+1, o.site)
	}
	return fmt.Sprintf("%s#%d", o.kind, o.idx+1)
}

func (o *syncObj) index(r *runner) int {
	if o.bound.Load() != r {
		return -1
	}
	return o.idx
}

// reads reports whether verb only reads the object: readers of an RWMutex
// commute with each other, loads with loads.
func (o *syncObj) reads(verb string) bool {
	switch verb {
	case "RLock", "RUnlock", "Load":
		return true
	}
	return false
}

// hold records that g holds the object from the current step on.
func (o *syncObj) hold(r *runner, g *gor) { o.holder, o.since = g, r.steps }

// holderName is "consumer (since step 4)", or "the world function".
func (o *syncObj) holderName() string {
	if o.holder == nil {
		return "the world function"
	}
	return fmt.Sprintf("%s (since step %d)", o.holder.name, o.since)
}

// syncOp is an operation a goroutine is paused before: its object and
// the other objects it touches (a Cond's lock; a select's channels).
type syncOp struct {
	obj   *syncObj
	verb  string
	extra []*syncObj
	recv  bool // a receive from obj (see syncWait.recv)
}

// syncWait is a goroutine blocked in an operation on a synchronisation
// object: it may go on when ready holds, and why says what it waits for,
// for a deadlock's report.
type syncWait struct {
	obj   *syncObj
	verb  string
	extra []*syncObj
	ready func() bool
	why   func() string
	// recv marks a receive (or a select with a receive case) from these
	// channels: an unbuffered send hands its value to such a waiter.
	recv []*syncObj
}

// syncDo carries out an operation on o for the calling goroutine of r: a
// choice point, then, when ready is false, a wait the explorer knows of
// (why says for what), then do. With no goroutine (the world function,
// or the checks of Finally) it runs at once, and an operation that would
// wait fails the schedule: nothing else runs then.
func (r *runner) syncDo(op syncOp, ready func() bool, why func() string, do func()) {
	g := r.cur
	if g != nil {
		g.sop = &op
		r.Yield(domain.Op{Verb: op.verb, Obj: op.obj})
		g.sop = nil
	}
	if ready != nil && !ready() {
		if g == nil {
			r.fail(Deadlock, fmt.Sprintf("the world function would wait: %s on %s, %s, while no goroutine runs yet", op.verb, op.obj.TraceName(), why()))
			runtime.Goexit()
		}
		w := &syncWait{obj: op.obj, verb: op.verb, extra: op.extra, ready: ready, why: why}
		if op.recv {
			w.recv = []*syncObj{op.obj}
		}
		r.syncBlock(g, w)
	}
	do()
}

// syncBlock hands the turn back until w may go on.
func (r *runner) syncBlock(g *gor, w *syncWait) {
	g.state, g.sw = gBlocked, w
	r.back <- struct{}{}
	<-g.turn
	g.sw = nil
	if g.abort || g.kill {
		runtime.Goexit() // the schedule is over and the wait cannot end
	}
}

// Label gives an object of the world a name for reports and timelines: a
// synchronisation object of this package (a *Mutex, *RWMutex,
// *WaitGroup, *Cond, *Once, *Chan, *Int64, *Bool: "mutex state" rather
// than "mutex#1 (world_test.go:42)"), or a sim object (a *sim.CQ,
// *sim.CompChannel, *sim.QP, *sim.SRQ: "a/cq#1 \"recv\""; a CQ whose
// cq_context is a string or a fmt.Stringer is named by it without a
// label). Call it in the world function, before any goroutine uses the
// object; any other value is ignored.
func (w *World) Label(obj any, name string) {
	if l, ok := obj.(labelled); ok {
		l.syncObject().label = name
		return
	}
	switch obj.(type) {
	case *sim.CQ, *sim.CompChannel, *sim.QP, *sim.SRQ:
		if w.r.labels == nil {
			w.r.labels = map[any]string{}
		}
		w.r.labels[obj] = name
	}
}

type labelled interface{ syncObject() *syncObj }

func (m *Mutex) syncObject() *syncObj      { return &m.o }
func (m *RWMutex) syncObject() *syncObj    { return &m.o }
func (wg *WaitGroup) syncObject() *syncObj { return &wg.o }
func (c *Cond) syncObject() *syncObj       { return &c.o }
func (o *Once) syncObject() *syncObj       { return &o.o }
func (v *Int64) syncObject() *syncObj      { return &v.o }
func (v *Bool) syncObject() *syncObj       { return &v.o }
