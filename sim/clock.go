package sim

import (
	"fmt"
	"io"
	"math"
	"runtime"
	"syscall"
	"time"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/verbs"

	"github.com/verbsim/verbsim/sim/trace"
	"github.com/verbsim/verbsim/sim/verr"
)

// This file is the fabric's control surface for the engine: the clock, the
// modes, faults, link state and the trace. docs/time.md explains when
// timers fire in each mode.

// Mode returns the execution mode.
func (f *Fabric) Mode() Mode {
	if f == nil {
		return 0
	}
	return f.eng.mode
}

// Now returns the virtual time in ticks (one tick is one nanosecond of
// simulated time). In Background mode it first brings the clock up to the
// wall clock, running what falls due on the way, as the fabric's clock
// goroutine does when it looks: that goroutine looks only as often as it
// must (bgQuantum), so without this a reading could lag the wall clock.
func (f *Fabric) Now() uint64 {
	if f == nil {
		return 0
	}
	f.d.Enter(domain.Op{})
	defer f.d.Leave(domain.Op{}, nil)
	e := f.eng
	if b := e.bg; b != nil {
		e.advanceLocked(b.targetLocked(e.now))
	}
	return e.now
}

// Step runs one ready engine event, chosen by the schedule, and reports
// whether there was one. It never moves the clock.
func (f *Fabric) Step() bool {
	if f == nil {
		return false
	}
	f.d.Enter(domain.Op{})
	defer f.d.Leave(domain.Op{}, nil)
	return f.eng.stepLocked()
}

// Stabilize runs ready events until none is left at the current tick and
// returns how many ran. It never moves the clock.
func (f *Fabric) Stabilize() int {
	if f == nil {
		return 0
	}
	f.d.Enter(domain.Op{})
	defer f.d.Leave(domain.Op{}, nil)
	return f.eng.stabilizeLocked()
}

// MaxTick is the last tick of virtual time: 2^63-1 ticks, about 292 years
// of simulated time. The clock saturates there: Tick, AdvanceToNext,
// RunUntilIdle and Background mode never move it further, and a timer or
// delayed packet due after MaxTick never fires (docs/time.md).
const MaxTick uint64 = 1<<63 - 1

// later returns the tick n ticks after t, saturating at math.MaxUint64
// instead of wrapping; the clock never gets there (MaxTick).
func later(t, n uint64) uint64 {
	if n > math.MaxUint64-t {
		return math.MaxUint64
	}
	return t + n
}

// Tick moves the clock n ticks forward. Every timer and delayed packet due
// on the way runs at its own tick, and the engine stabilizes after each,
// and at the end. The clock stops at MaxTick: a Tick that would pass it
// (Tick(math.MaxUint64), say) moves the clock to MaxTick, where it stays.
func (f *Fabric) Tick(n uint64) {
	if f == nil {
		return
	}
	f.d.Enter(domain.Op{})
	defer f.d.Leave(domain.Op{}, nil)
	f.eng.advanceLocked(later(f.eng.now, n))
}

// AdvanceToNext stabilizes, then moves the clock to the next timer or
// delayed packet and runs what is due there. It reports false when nothing
// is pending before MaxTick, and the clock does not move.
func (f *Fabric) AdvanceToNext() bool {
	if f == nil {
		return false
	}
	f.d.Enter(domain.Op{})
	defer f.d.Leave(domain.Op{}, nil)
	e := f.eng
	e.stabilizeLocked()
	at, ok := e.nextDue()
	if !ok || at > MaxTick {
		return false
	}
	e.advanceLocked(max(at, e.now))
	return true
}

// RunUntilIdle advances the clock from timer to timer until nothing is
// pending at all, or until limit ticks have passed (0: no limit). It
// reports whether the engine is idle. With retry timers armed against a
// silent peer this runs to RETRY_EXC_ERR; with rnr_retry = 7 against a
// peer that never posts a receive it never ends, hence the limit. Time
// ends at MaxTick: an event due later leaves the clock there and the
// engine not idle.
func (f *Fabric) RunUntilIdle(limit uint64) bool {
	if f == nil {
		return false
	}
	f.d.Enter(domain.Op{})
	defer f.d.Leave(domain.Op{}, nil)
	e := f.eng
	end := later(e.now, limit)
	if limit == 0 {
		end = MaxTick
	}
	for {
		e.stabilizeLocked()
		at, ok := e.nextDue()
		if !ok {
			return true
		}
		if at > end {
			e.advanceLocked(end)
			return false
		}
		e.advanceLocked(max(at, e.now))
	}
}

// Pending returns the number of engine events ready now and in the future
// (armed timers and delayed packets).
func (f *Fabric) Pending() (ready, future int) {
	if f == nil {
		return 0, 0
	}
	f.d.Enter(domain.Op{})
	defer f.d.Leave(domain.Op{}, nil)
	e := f.eng
	return e.pending(), e.later.len() + e.timers.len()
}

// SetFaults replaces the packet faults. A probability outside [0, 1] is
// EINVAL, and the faults stay as they were.
func (f *Fabric) SetFaults(x Faults) error {
	if f == nil {
		return errNilFabric("set_faults")
	}
	if err := x.validate(); err != nil {
		return configErr("set_faults", err)
	}
	f.d.Enter(domain.Op{})
	defer f.d.Leave(domain.Op{}, nil)
	f.eng.faults = x
	if f.eng.tracing() {
		f.eng.emit(trace.Record{Kind: trace.KindFault, Object: "fabric", Name: "faults", Detail: fmt.Sprintf("drop=%v duplicate=%v delay=%v", x.Drop, x.Duplicate, x.Delay)})
	}
	return nil
}

// Stats returns what the engine has done so far.
func (f *Fabric) Stats() EngineStats {
	if f == nil {
		return EngineStats{}
	}
	f.d.Enter(domain.Op{})
	defer f.d.Leave(domain.Op{}, nil)
	return f.eng.stats
}

// TraceRecords returns a copy of the trace, or nil when the fabric has
// none.
func (f *Fabric) TraceRecords() []trace.Record {
	if f == nil {
		return nil
	}
	f.d.Enter(domain.Op{})
	defer f.d.Leave(domain.Op{}, nil)
	if f.eng.log == nil {
		return nil
	}
	return f.eng.log.Records()
}

// WriteTrace writes the trace as text, one record per line. A fabric
// without a trace writes nothing; a nil writer is EINVAL.
func (f *Fabric) WriteTrace(w io.Writer) error {
	if f == nil || w == nil {
		return verr.New("write_trace", syscall.EINVAL, "nil fabric or writer")
	}
	f.d.Enter(domain.Op{})
	defer f.d.Leave(domain.Op{}, nil)
	if f.eng.log == nil {
		return nil
	}
	return f.eng.log.WriteText(w)
}

// SetPortState takes port n (1-based) of the device down or up, as a cable
// pull would (a link flap). Packets to and from a down port are lost, so RC
// peers retry and eventually fail (XFER-10); every open context of the
// device receives IBV_EVENT_PORT_ERR or IBV_EVENT_PORT_ACTIVE with the port
// number (ASYNC-16). Setting the state a port already has does nothing.
func (d *Device) SetPortState(n uint8, up bool) error {
	const verb = "set_port_state"
	if d == nil || n == 0 || int(n) > len(d.ports) {
		return verr.Errorf(verb, syscall.EINVAL, "no port %d", n)
	}
	f := d.fabric
	f.d.Enter(domain.Op{})
	defer f.d.Leave(domain.Op{}, nil)
	if d.removed && up {
		return verr.Errorf(verb, syscall.ENODEV, "device %q has been removed (CM-24)", d.name)
	}
	p := d.ports[n-1]
	state, ev := verbs.PortDown, verbs.EventPortErr
	if up {
		state, ev = verbs.PortActive, verbs.EventPortActive
	}
	if p.attr.State == state {
		return nil
	}
	p.attr.State = state
	f.topo++
	if f.eng.tracing() {
		f.eng.emit(trace.Record{Kind: trace.KindFault, Object: fmt.Sprintf("%s/port %d", d.name, n), Name: "link " + state.String(), Why: "fault: link flap"})
	}
	for _, c := range d.contexts {
		c.async.RaiseLocked(ev, nil, nil, n)
	}
	return nil
}

// Close stops the background goroutine of a Background fabric and waits
// for it to end. The fabric's objects stay usable; the clock then moves
// only through Tick and its relatives. Closing twice does nothing.
func (f *Fabric) Close() error {
	if f == nil {
		return errNilFabric("close")
	}
	f.d.Lock()
	b := f.eng.bg
	f.eng.bg = nil
	if f.check != nil && !f.closed {
		f.check.Close("exit")
	}
	f.closed = true
	f.d.Unlock()
	if b != nil {
		close(b.stop)
		<-b.done
	}
	return nil
}

// background drives a Background fabric's clock from the wall clock.
type background struct {
	stop  chan struct{}
	kickc chan struct{}
	done  chan struct{}
	// The mapping of wall time to ticks, guarded by the fabric's lock:
	// tick base + (time since start) / dur.
	start time.Time
	base  uint64
	dur   time.Duration
	// The goroutine's plan, guarded by the fabric's lock (kickLocked):
	// deadline is the tick by which it will next look at the clock (0 while
	// it is awake or already kicked); stale says that verbs have asked for
	// the clock to move on since it last looked; polling says that it
	// looks every bgQuantum while they keep asking.
	deadline uint64
	stale    bool
	polling  bool
}

// bgBudget is how many events the Background goroutine runs in one hold of
// the fabric's lock. A fabric that falls behind the wall clock (a burst of
// retries, a host that did not run it for a while) would otherwise hold
// the lock until it caught up, which it may never do while the verbs that
// would end the burst wait for the lock: the per-host daemon's programs
// posting receives during an RNR storm did.
const bgBudget = 256

// bgQuantum is how often a Background fabric's goroutine brings the clock
// up to the wall clock while verbs keep arming timers due after its next
// look (or, on the direct path, would have armed them). Every such arm
// used to wake it: under a stream of messages it woke once per message,
// took the fabric's lock on the other core each time, and the verbs spun
// on the lock. Virtual time is unchanged (every event runs at its own
// tick); only the wall time at which the clock catches up moves, by at
// most this much.
const bgQuantum = 10 * time.Microsecond

// kickLocked tells the goroutine that something is now due at tick at (a
// caller that only wants the clock to move on passes math.MaxUint64). It
// wakes the goroutine at once when at falls before its next look, or when
// it sleeps without polling; otherwise it only marks the clock stale, and
// the goroutine's next look, at most bgQuantum away, catches up. It reads
// no clock: a clock read cost more than the rest of a direct message.
//
// Precondition: the fabric's lock is held.
func (b *background) kickLocked(at uint64) {
	b.stale = true
	if at < b.deadline || !b.polling {
		b.deadline = 0 // kicked: when it runs it sees every timer
		b.polling = true
		b.kick()
	}
}

// targetLocked is the tick the wall clock has reached, never below now
// (a Tick may have moved the clock ahead: the mapping shifts so that it
// stays monotonic).
func (b *background) targetLocked(now uint64) uint64 {
	target := b.base + uint64(time.Since(b.start)/b.dur)
	if now > target {
		b.base += now - target
		target = now
	}
	return target
}

// kick wakes the goroutine to recompute its next deadline.
func (b *background) kick() {
	select {
	case b.kickc <- struct{}{}:
	default:
	}
}

func (f *Fabric) startBackground(dur time.Duration) {
	if dur == 0 {
		dur = time.Nanosecond // the default; a negative one is refused by validate
	}
	b := &background{stop: make(chan struct{}), kickc: make(chan struct{}, 1), done: make(chan struct{}), start: time.Now(), dur: dur}
	f.eng.bg = b
	go f.runBackground(b, dur)
}

func (f *Fabric) runBackground(b *background, dur time.Duration) {
	defer close(b.done)
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		f.d.Lock()
		e := f.eng
		b.deadline = 0 // what advancing arms, it sees below: no kick to itself
		target := b.targetLocked(e.now)
		if !e.advanceBoundedLocked(target, bgBudget) {
			// Behind the wall clock with more to run than one hold of the
			// lock should take: let the verbs that wait for it in (a
			// receive posted ends an RNR storm), then go on.
			b.deadline = 0
			f.d.Unlock()
			runtime.Gosched()
			select {
			case <-b.stop:
				return
			default:
			}
			continue
		}
		at, ok := e.nextDue()
		// Waits past Config.WaitBound give up; wake by the next one's end.
		if end, bounded := f.d.ExpireWaitsLocked(); bounded && (!ok || end < at) {
			at, ok = end, true
		}
		wait := time.Hour
		if ok && at <= MaxTick && at-target < uint64(time.Hour/dur) {
			wait = time.Duration(at-target) * dur // cannot overflow: below an hour
		}
		// Verbs asked for the clock to move on since the last look: look
		// again within a quantum. A quantum without a request ends the
		// polling; the next request wakes the goroutine (kickLocked).
		if b.stale {
			wait = min(wait, bgQuantum)
		} else {
			b.polling = false
		}
		b.stale = false
		b.deadline = later(target, uint64(wait/dur))
		f.d.Unlock()
		t.Reset(wait)
		select {
		case <-b.stop:
			return
		case <-b.kickc:
		case <-t.C:
		}
	}
}

// ForceStatus makes the next completion of q's send WR (or, with recv, its
// receive WR) with the given wr_id complete with status st, as if the
// adapter had failed it; the QP then reacts as to any failed WR (RC: ERR,
// later WRs flushed). st must be an error status. The fault is spent by that
// next completion whatever it is (a WR that fails on its own, or is
// flushed, keeps its own status), and RESET forgets it. A QP of another
// fabric, or one destroyed, is EINVAL.
func (f *Fabric) ForceStatus(q *QP, wrID uint64, recv bool, st verbs.WCStatus) error {
	const verb = "force_status"
	if q == nil || st == verbs.WCSuccess || st > verbs.WCTMRndvIncomplete {
		return verr.New(verb, syscall.EINVAL, "a QP and an error status are needed")
	}
	if err := checkOwner(verb, "the QP", f, q, sameFabric); err != nil {
		return err
	}
	f.d.Enter(domain.Op{})
	defer f.d.Leave(domain.Op{}, nil)
	if q.q.DestroyedLocked() {
		return verr.New(verb, syscall.EINVAL, "the QP has been destroyed")
	}
	q.q.ForceStatusLocked(wrID, recv, st)
	return nil
}

// InjectSRQError makes s hit a catastrophic error: IBV_EVENT_SRQ_ERR names
// it (ASYNC-15) and every QP receiving through it goes to ERR with
// IBV_EVENT_QP_FATAL, as an adapter that can no longer read the SRQ does
// (ASYNC-15). A nil SRQ, one of another fabric or one
// destroyed is EINVAL.
func (f *Fabric) InjectSRQError(s *SRQ) error {
	if err := checkOwner("inject_srq_error", "the SRQ", f, s, sameFabric); err != nil {
		return err
	}
	return s.InjectError()
}

// InjectFatal makes q hit a catastrophic work-queue error (ASYNC-08): it
// goes to ERR, its queues are flushed and IBV_EVENT_QP_FATAL names it. A QP
// already in ERR stays there without another event. A nil QP, one of
// another fabric or one destroyed is EINVAL.
func (f *Fabric) InjectFatal(q *QP) error {
	const verb = "inject_fatal"
	if err := checkOwner(verb, "the QP", f, q, sameFabric); err != nil {
		return err
	}
	f.d.Enter(domain.Op{})
	defer f.d.Leave(domain.Op{}, nil)
	if q.q.DestroyedLocked() {
		return verr.New(verb, syscall.EINVAL, "the QP has been destroyed")
	}
	q.q.FatalLocked()
	return nil
}
