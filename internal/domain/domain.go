// Package domain is the one seam between a goroutine and the engine of a
// fabric: every verb enters and leaves through a Domain, and every blocking
// wait waits through it.
//
// A Domain owns
//   - the lock that guards every object of a fabric (what the ...Locked
//     methods of the engine packages expect to be held);
//   - the single trace sink, told about every verb (Leave) and every engine
//     event (Emit), each as a typed trace.Record;
//   - the engine hooks the fabric installs: settle after a verb in Auto
//     mode, advance the clock to the next pending timer or delayed packet,
//     describe what is pending, read the clock;
//   - an optional Scheduler, the hook through which a schedule explorer runs
//     goroutines one at a time and switches between them at verb
//     boundaries and blocking waits;
//   - the table of blocked waiters: which operation waits for what object,
//     since which tick.
//
// With no sink and no scheduler, Enter and Leave cost a Lock and an Unlock
// plus a few branches, and allocate nothing.
package domain

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/verbsim/verbsim/sim/trace"
	"github.com/verbsim/verbsim/sim/verr"
)

// Object is an engine object that can be named in the trace. Every object
// carries its own name, given when it is created ("dev0/cq#1",
// "dev0/qp 0x11").
type Object interface {
	TraceName() string
}

// Op describes one verb call. It is a small value: building one allocates
// nothing.
type Op struct {
	// Verb is the verb's name as the trace shows it ("post_send"). An
	// empty Verb is a call that is not recorded: a read that changes
	// nothing, or a call whose record the verb has decided to skip (the
	// second of consecutive empty polls). The op given to Enter names
	// the verb about to run, for the scheduler (Yield); a verb that
	// leaves it empty is one the scheduler cannot tell apart from others
	// on its object.
	Verb string
	// Obj is the object the verb acts on; nil names the domain itself.
	Obj Object
	// Rec, if set, is the record of the call, filled in beyond its kind,
	// name and object (a verb that names an event, a peer or a detail):
	// a verb builds it only when Tracing reports true, so an untraced call
	// formats nothing.
	Rec *trace.Record
}

// Sink receives trace records, with Object filled in and Tick and Seq left
// to it. It is called with the domain lock held.
type Sink func(r trace.Record)

// Hooks are the engine's entry points a Domain calls, all with its lock
// held. Any of them may be nil.
type Hooks struct {
	// Settle runs the engine after a verb (Auto and Background modes: until
	// nothing is ready at the current tick). Leave calls it: after every
	// verb, or, with OnKick, only after a verb during which Kick was called.
	Settle func()
	// OnKick says that the engine calls Kick whenever it makes work ready,
	// and that Settle leaves nothing ready that a later Settle would run:
	// Leave then calls Settle only when Kick was called since the last
	// Settle, and a verb that made nothing ready leaves with an Unlock.
	OnKick bool
	// Advance moves the clock to the next pending timer or delayed packet
	// and runs what is due there; it reports false when nothing is
	// pending. Auto-mode waits call it (see Wait).
	Advance func() bool
	// Pending describes what is pending (timers, delayed packets), for
	// the error of a wait that gave up; "" when nothing is.
	Pending func() string
	// Now returns the virtual time in ticks.
	Now func() uint64
	// WaitBound, if not zero, is the most virtual time, in ticks, a wait
	// that time can satisfy lets pass: see Wait. Zero: no bound.
	WaitBound uint64
	// Deadline, if set, is told the first tick past the bound of a wait
	// that begins to block outside Auto mode, so that whatever moves the
	// clock then (Background mode's goroutine) wakes by that tick and
	// calls ExpireWaitsLocked.
	Deadline func(at uint64)
}

// Scheduler controls which goroutine runs. A schedule explorer implements
// it; with none attached, goroutines run as the Go runtime schedules them.
//
// Every method is called without the domain lock held.
type Scheduler interface {
	// Yield is called before a verb takes the lock: the scheduler may run
	// other goroutines first and returns when the caller may proceed.
	Yield(op Op)
	// Block is called when w cannot proceed: the calling goroutine hands
	// control to the scheduler, which returns once w has been unblocked
	// (Unblock) and picked to run again, or when ctx ends (then with ctx's
	// error). The caller re-checks its condition after Block returns.
	Block(ctx context.Context, w *Waiter) error
	// Unblock is told that the state w waits on changed: w may proceed
	// when next picked. It is called with the domain lock held and must
	// not block.
	Unblock(w *Waiter)
}

// Observer is implemented by a Scheduler that wants to hear of every object
// created in the domain (a schedule explorer lists the CQs and channels of
// a world this way, to report what they hold).
type Observer interface {
	// Created is told of obj, just created and named. It is called with the
	// domain lock held and must not block.
	Created(obj any)
}

// Waiter is one blocked operation: who waits for what.
type Waiter struct {
	Verb  string // the operation that waits ("ibv_get_cq_event")
	Obj   Object // the object whose change can satisfy it (Wake's key, compared by identity)
	For   string // what it waits for ("an event", "acks of events read")
	Since uint64 // the tick it began waiting at
	// Timeless marks a wait that the passing of virtual time cannot
	// satisfy (acks only come from the application): in Auto mode it does
	// not advance the clock.
	Timeless bool

	ch    chan struct{}
	index int // position in the domain's table; -1 when not waiting
}

// String renders the waiter for errors and listings.
func (w *Waiter) String() string {
	name := "domain"
	if w.Obj != nil {
		name = w.Obj.TraceName()
	}
	return fmt.Sprintf("%s on %s waits for %s since t=%d", w.Verb, name, w.For, w.Since)
}

// Domain is a fabric's lock, trace sink, engine hooks, scheduler and
// waiter table. The zero value is not ready; use New.
type Domain struct {
	mu    sync.Mutex
	sink  Sink
	sched Scheduler
	hooks Hooks
	auto  bool
	// slow says that Leave has more to do than an Unlock: a sink is
	// installed, or the Settle hook is due (always without OnKick; after
	// a Kick with it). Kept in one field so that Leave's fast path is one
	// load and one branch.
	slow    bool
	kicked  bool // Kick was called since the last Settle (OnKick)
	waiters []*Waiter
}

// New returns a domain with no sink, no scheduler and no hooks.
func New() *Domain { return &Domain{} }

// Lock takes the domain lock, for a caller of ...Locked methods. Verbs use
// Enter instead.
func (d *Domain) Lock() { d.mu.Lock() }

// Unlock releases the domain lock taken with Lock.
func (d *Domain) Unlock() { d.mu.Unlock() }

// SetSinkLocked installs the trace sink (nil: none).
func (d *Domain) SetSinkLocked(s Sink) { d.sink = s; d.updateSlow() }

// SetHooksLocked installs the engine hooks; auto says that blocking waits
// let virtual time pass (Auto mode, see Wait).
//
// With h.OnKick the first Leave settles whether or not Kick was called: the
// engine may have been given work before its hooks were installed.
func (d *Domain) SetHooksLocked(h Hooks, auto bool) {
	d.hooks, d.auto = h, auto
	d.kicked = true
	d.updateSlow()
}

// updateSlow recomputes slow from the sink, the hooks and kicked.
func (d *Domain) updateSlow() {
	settle := d.hooks.Settle != nil && (!d.hooks.OnKick || d.kicked)
	d.slow = d.sink != nil || settle
}

// Kick tells the domain that the engine has made work ready: the next
// Leave calls the Settle hook (see Hooks.OnKick). It costs two stores.
//
// Precondition: the lock is held.
func (d *Domain) Kick() {
	d.kicked = true
	d.slow = true
}

// Yield is a scheduling point for a verb that takes no lock (the ex-CQ's
// read methods): with a scheduler attached it calls it as Enter would;
// otherwise it does nothing. It must not be called with the lock held.
func (d *Domain) Yield(op Op) {
	if d.sched != nil {
		d.yield(op)
	}
}

// SetScheduler attaches s (nil detaches). Call it while no verb runs.
func (d *Domain) SetScheduler(s Scheduler) {
	d.mu.Lock()
	d.sched = s
	d.mu.Unlock()
}

// Created tells the attached scheduler, if it is an Observer, that obj was
// just created in the domain. With no scheduler it costs one comparison.
//
// Precondition: the lock is held.
func (d *Domain) Created(obj any) {
	if d.sched == nil {
		return
	}
	if o, ok := d.sched.(Observer); ok {
		o.Created(obj)
	}
}

// Tracing reports whether a sink is installed, so that a caller formats a
// record only when one is wanted.
//
// Precondition: the lock is held.
func (d *Domain) Tracing() bool { return d.sink != nil }

// Emit adds r, a trace record about obj, if a sink is installed; it
// fills in r.Object from obj unless r names its object already. A caller
// that formats anything for r checks Tracing first.
//
// Precondition: the lock is held.
func (d *Domain) Emit(obj Object, r trace.Record) {
	if d.sink != nil {
		if r.Object == "" {
			r.Object = nameOf(obj)
		}
		d.sink(r)
	}
}

// Failed fills in the errno and the cause of r, the record of a verb that
// returned err; nothing when err is nil.
func Failed(r *trace.Record, err error) {
	if err != nil {
		r.Errno, r.Why = verr.Errno(err), err.Error()
	}
}

func nameOf(obj Object) string {
	if obj == nil {
		return "domain"
	}
	return obj.TraceName()
}

// Enter begins a verb: with a scheduler attached it first yields to it,
// outside the lock; then it takes the lock.
func (d *Domain) Enter(op Op) {
	if d.sched != nil {
		d.yield(op)
	}
	d.mu.Lock()
}

// TryEnter is the fast path of Enter, small enough to inline into a verb
// (Enter is not): with no scheduler attached and the lock free it takes
// the lock and reports true. Otherwise it does nothing and reports false,
// and the caller calls Enter. The hot verbs (poll, arm, ack, get event,
// push) begin with
//
//	if !d.TryEnter() {
//		d.Enter(op)
//	}
//
// so that the op is only built when a scheduler may look at it.
func (d *Domain) TryEnter() bool { return d.sched == nil && d.mu.TryLock() }

// FastLeave reports whether Leave would do nothing but release the lock
// (no sink, nothing to settle); a hot verb then calls Unlock instead, which
// inlines where Leave does not:
//
//	if d.FastLeave() {
//		d.Unlock()
//	} else {
//		d.Leave(op, err)
//	}
//
// Precondition: the lock is held.
func (d *Domain) FastLeave() bool { return !d.slow }

// yield is Enter's call to the scheduler, apart so that Enter stays small.
func (d *Domain) yield(op Op) { d.sched.Yield(op) }

// Leave ends a verb begun with Enter: it records the call (op and err's
// text) if a sink is installed and op.Verb is set, settles the engine
// (the Settle hook; with Hooks.OnKick only after a Kick), and releases the
// lock. With no sink and nothing to settle it is an Unlock (see
// FastLeave).
func (d *Domain) Leave(op Op, err error) {
	if d.slow {
		d.leaveSlow(op, err)
		return
	}
	d.mu.Unlock()
}

// leaveSlow is Leave when a sink is installed or a settle is due.
func (d *Domain) leaveSlow(op Op, err error) {
	if d.sink != nil && op.Verb != "" {
		d.recordOp(op, err)
	}
	if d.hooks.Settle != nil && (d.kicked || !d.hooks.OnKick) {
		d.hooks.Settle()
		d.kicked = false
		d.updateSlow()
	}
	d.mu.Unlock()
}

// recordOp records op: its Rec, or a record of its verb.
func (d *Domain) recordOp(op Op, err error) {
	var r trace.Record
	if op.Rec != nil {
		r = *op.Rec
	}
	r.Kind = trace.KindVerb
	if r.Name == "" {
		r.Name = op.Verb
	}
	if r.Object == "" {
		r.Object = nameOf(op.Obj)
	}
	Failed(&r, err)
	d.sink(r)
}

// Now returns the virtual time (0 with no clock hook).
//
// Precondition: the lock is held.
func (d *Domain) Now() uint64 {
	if d.hooks.Now == nil {
		return 0
	}
	return d.hooks.Now()
}

// Waiters returns the operations blocked in Wait now, oldest first.
//
// Precondition: the lock is held.
func (d *Domain) Waiters() []Waiter {
	out := make([]Waiter, len(d.waiters))
	for i, w := range d.waiters {
		out[i] = *w
		out[i].ch = nil
	}
	return out
}

// Wake tells the waiters on obj that its state changed; they re-check
// their condition. With no one waiting it costs one comparison.
//
// Precondition: the lock is held.
func (d *Domain) Wake(obj Object) {
	if len(d.waiters) != 0 {
		d.wake(obj)
	}
}

func (d *Domain) wake(obj Object) {
	for _, w := range d.waiters {
		if sameObject(w.Obj, obj) {
			d.signal(w)
		}
	}
}

// sameObject reports whether a and b hold the same dynamic type and data
// word: the same object, for the pointers every engine object is. It reads
// the two words of each interface instead of comparing them with ==, which
// calls the runtime on every waiter a push wakes. Objects are compared by
// identity (Waiter.Obj).
func sameObject(a, b Object) bool {
	x := (*[2]unsafe.Pointer)(unsafe.Pointer(&a))
	y := (*[2]unsafe.Pointer)(unsafe.Pointer(&b))
	return x[0] == y[0] && x[1] == y[1]
}

// Broadcast wakes every waiter.
//
// Precondition: the lock is held.
func (d *Domain) Broadcast() {
	for _, w := range d.waiters {
		d.signal(w)
	}
}

func (d *Domain) signal(w *Waiter) {
	if d.sched != nil {
		d.sched.Unblock(w)
		return
	}
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

// nothingPending is what a wait's error says when nothing at all was
// pending.
const nothingPending = "nothing is pending in the engine: only a verb call from another goroutine can satisfy it"

// Wait blocks until ready reports true or ctx ends. It is called with the
// lock held, returns with it held, and releases it while blocked; ready is
// always evaluated under the lock. w says who waits for what: it is listed
// in Waiters while blocked, and Wake(w.Obj) or Broadcast makes it re-check.
//
// In Auto mode (SetHooksLocked's auto) a wait that cannot be satisfied now
// lets virtual time pass, unless w is Timeless: it advances the clock to the
// next pending timer or delayed packet (the Advance hook, as
// Fabric.AdvanceToNext does), re-checks, and repeats until ready holds or
// nothing is pending; only then does it block for other goroutines. Between
// two advances it releases the lock for a moment, so other goroutines keep
// their turn. In Manual and Background modes it only blocks.
//
// With Hooks.WaitBound set, a wait that is not Timeless gives up with
// ErrWaitBound once the clock stands more than WaitBound ticks past the
// tick it began at: checked after each of its own advances (Auto mode) and
// whenever it wakes; ExpireWaitsLocked wakes the waits past their bound.
//
// With a scheduler attached, blocking hands control to it (Block) instead
// of waiting on a channel.
//
// When ctx ends first, Wait returns an error that wraps ctx.Err() and
// names what w waited for and what was pending in the engine then.
func (d *Domain) Wait(ctx context.Context, w *Waiter, ready func() bool) error {
	if ready() {
		return nil
	}
	return d.WaitNotReady(ctx, w, ready)
}

// WaitNotReady is Wait for a caller that has just seen its condition false
// under the lock it still holds: it skips Wait's first evaluation of ready
// and goes straight to blocking (or, in Auto mode, to advancing the clock),
// re-checking ready after every change as Wait does. A blocked read that
// has found its queue empty calls it.
func (d *Domain) WaitNotReady(ctx context.Context, w *Waiter, ready func() bool) error {
	w.Since = d.Now()
	if w.ch == nil && d.sched == nil {
		w.ch = make(chan struct{}, 1)
	}
	d.add(w)
	if d.hooks.Deadline != nil && d.hooks.WaitBound != 0 && !d.auto && !w.Timeless {
		d.hooks.Deadline(w.Since + d.hooks.WaitBound + 1)
	}
	err := d.block(ctx, w, ready)
	d.remove(w) // not deferred: a blocked read pays for every instruction
	return err
}

// block is Wait's loop, for a waiter already in the table.
func (d *Domain) block(ctx context.Context, w *Waiter, ready func() bool) error {
	// ready is evaluated after every change the lock let happen: the
	// caller's first check holds until the lock is released.
	// A context whose Done is nil can never end (context.Context): its Err
	// is nil for good, and it is not asked again.
	done := ctx.Done()
	for {
		if done != nil {
			if err := ctx.Err(); err != nil {
				return d.waitErr(w, err)
			}
		}
		if d.auto && !w.Timeless && d.hooks.Advance != nil && d.hooks.Advance() {
			if ready() {
				return nil
			}
			if d.pastBound(w) {
				return d.waitErr(w, ErrWaitBound)
			}
			// Let the other goroutines act between two steps of time.
			d.mu.Unlock()
			runtime.Gosched()
			d.mu.Lock()
			if ready() {
				return nil
			}
			continue
		}
		d.mu.Unlock()
		var err error
		if s := d.sched; s != nil {
			err = s.Block(ctx, w)
		} else if done == nil {
			<-w.ch // a context that cannot end: a plain receive
		} else {
			select {
			case <-w.ch:
			case <-done:
				err = ctx.Err()
			}
		}
		d.mu.Lock()
		if ready() {
			return nil
		}
		if err != nil {
			return d.waitErr(w, err)
		}
		if d.pastBound(w) {
			return d.waitErr(w, ErrWaitBound)
		}
	}
}

// WaitError is the error of a wait whose context ended first. It wraps the
// context's error.
type WaitError struct {
	Waiter  string // who waited for what
	Pending string // what the engine had pending
	Err     error  // ctx.Err()
}

func (e *WaitError) Error() string {
	return fmt.Sprintf("%s; %s: %v", e.Waiter, e.Pending, e.Err)
}

// Unwrap returns the context's error.
func (e *WaitError) Unwrap() error { return e.Err }

func (d *Domain) waitErr(w *Waiter, err error) error {
	pending := nothingPending
	if d.hooks.Pending != nil {
		if p := d.hooks.Pending(); p != "" {
			pending = "pending: " + p
		}
	}
	desc := fmt.Sprintf("%s waited for %s from t=%d to t=%d", nameOf(w.Obj), w.For, w.Since, d.Now())
	return &WaitError{Waiter: desc, Pending: strings.TrimSpace(pending), Err: err}
}

func (d *Domain) add(w *Waiter) {
	w.index = len(d.waiters)
	d.waiters = append(d.waiters, w)
}

func (d *Domain) remove(w *Waiter) {
	i := w.index
	if i < 0 || i >= len(d.waiters) || d.waiters[i] != w {
		return
	}
	w.index = -1
	if last := len(d.waiters) - 1; i == last { // the usual case: one waiter
		d.waiters[last] = nil
		d.waiters = d.waiters[:last]
		return
	}
	copy(d.waiters[i:], d.waiters[i+1:])
	d.waiters[len(d.waiters)-1] = nil
	d.waiters = d.waiters[:len(d.waiters)-1]
	for j := i; j < len(d.waiters); j++ {
		d.waiters[j].index = j
	}
	w.index = -1
}

// IsWaitError reports whether err came from a wait whose context ended.
func IsWaitError(err error) bool {
	var we *WaitError
	return errors.As(err, &we)
}
