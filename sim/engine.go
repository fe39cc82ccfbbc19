package sim

import (
	"fmt"
	"math/rand/v2"

	"github.com/verbsim/verbsim/internal/simhook"
	"github.com/verbsim/verbsim/sim/internal/qp"
	"github.com/verbsim/verbsim/sim/trace"
)

// Mode says who drives the engine (docs/time.md).
type Mode uint8

// The execution modes.
const (
	// Auto: after every verb call that gives the engine work, the engine
	// runs until nothing is ready at the current tick. Virtual time passes
	// only through Tick, RunUntilIdle or AdvanceToNext.
	Auto Mode = iota
	// Manual: nothing runs until Step, Stabilize, Tick, RunUntilIdle or
	// AdvanceToNext is called; the scheduler picks among ready events.
	Manual
	// Background: like Auto, and a goroutine also advances virtual time
	// with the wall clock (Config.TickDuration per tick), so timers fire
	// on their own. Close stops it.
	Background
)

var modeNames = [...]string{"auto", "manual", "background"}

// String returns "auto", "manual" or "background".
func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// Schedule is how the engine picks the next ready event.
type Schedule uint8

// The schedules.
const (
	// FIFO runs ready events in the order they became ready.
	FIFO Schedule = iota
	// Random picks a ready event with the fabric's seeded source; the same
	// seed and calls give the same order. It never picks a packet while an
	// earlier packet of its path is ready (XFER-32, see Chooser).
	Random
)

// EventKind is the kind of an engine event.
type EventKind uint8

// The engine events.
const (
	EventRun    EventKind = iota // a requester has work to start
	EventPacket                  // a packet arrives
	EventTimer                   // a QP timer fires
)

var eventKindNames = [...]string{"run", "packet", "timer"}

// String names the kind.
func (k EventKind) String() string {
	if int(k) < len(eventKindNames) {
		return eventKindNames[k]
	}
	return fmt.Sprintf("EventKind(%d)", uint8(k))
}

// ReadyEvent describes an event ready to run, for a Chooser.
type ReadyEvent struct {
	Kind   EventKind
	Seq    uint64           // the order in which it was created
	Device string           // the device it happens on
	QPN    uint32           // the QP it runs on or is addressed to
	Packet trace.PacketKind // for EventPacket
	PSN    uint32           // for EventPacket
	// SrcQPN and SLID name the sender of a packet (EventPacket): its QP
	// and the LID of the port it left from. With Device, QPN, Packet and
	// PSN they tell one packet of the fabric from every other, whatever
	// order the events were created in (a schedule explorer names the
	// same packet in two schedules this way).
	SrcQPN uint32
	SLID   uint16
	// Behind is set on a packet that cannot arrive yet: an earlier packet
	// of its path is still ready, and a path delivers in the order it
	// was sent (XFER-32). Fabric.Ready reports such packets; a Chooser is
	// never offered one.
	Behind bool
}

// Chooser picks the next event among the ready ones that may run next (at
// least two): it returns an index into ready. It replaces the Schedule,
// which is how a schedule explorer drives the engine. It runs under the
// fabric's lock and must not call verbs.
//
// ready lists the events in the order they became ready, leaving out every
// packet that has an earlier packet of its path still ready (XFER-32): a
// path is one source QP's packets to one destination QP through one pair
// of port addresses on one service level, and it delivers in the order it
// sent. Only a fault (a delay) reorders a path. Runs, timers and packets
// of other paths are always offered. With a single event that may run,
// the Chooser is not asked.
type Chooser func(ready []ReadyEvent) int

// event is one engine event.
type event struct {
	kind  EventKind
	seq   uint64
	at    uint64 // for delayed packets
	q     *qp.QP // EventRun
	timer *qp.Timer
	pkt   *qp.Packet
	dst   *port // EventPacket: the port it arrives at
	dev   *Device
}

// engine is the discrete-event core of a fabric. Every field is guarded by
// the fabric's lock.
type engine struct {
	f       *Fabric
	mode    Mode
	now     uint64
	seq     uint64
	ready   []event // events ready at now; [head:] are pending
	head    int
	later   heap[event] // delayed packets, by (at, seq)
	timers  timerHeap   // armed timers, by (At, Seq); each knows its Index
	pool    []*qp.Packet
	rng     *rand.Rand
	sched   Schedule
	chooser Chooser
	scratch []ReadyEvent
	running bool
	faults  Faults
	aimed   []*Fault // armed targeted faults, in the order they were added
	// faultSeq numbers targeted faults in the trace.
	faultSeq int
	log      *trace.Log
	stats    EngineStats
	bg       *background
	remote   Remote // Config.Remote
	frame    []byte // sendRemoteLocked's frame, reused
	picked   event  // the event pick took last (kept until the next pick)

	// choose decides the packet-fault draws instead of rng when set (the
	// schedule explorer, through simhook.SetFaultChooser); draw is its
	// argument, reused.
	choose func(*simhook.FaultDraw) int
	draw   simhook.FaultDraw

	// elig is pick's scratch: the indices in ready of the events that may
	// run next. anyOrder lets Random and Chooser picks take any ready
	// event, as before XFER-32 (tests only: the mutant that the
	// regression tests must catch).
	elig     []int
	anyOrder bool

	// noDirect turns the direct path off (direct.go): every message goes
	// through the engine's events. Tests set it to compare the two paths.
	noDirect    bool
	directBuf   []byte // DirectScratchLocked's buffer
	directs     uint64 // messages the direct path carried out (tests read it)
	directMulti uint64 // of them, messages of several packets one way

	// advancing says that advanceLocked is moving the clock: what runs
	// then runs at its own tick, which is the present of what it arms.
	advancing bool
}

// EngineStats counts what the engine did.
type EngineStats struct {
	Events     uint64 // events run
	Packets    uint64 // packets put on the wire
	Delivered  uint64 // packets that reached a QP
	Dropped    uint64 // packets lost: faults, down links, no route, no QP
	Duplicated uint64 // packets duplicated by a fault
	Delayed    uint64 // packets delayed by a fault
	Timers     uint64 // timers fired
	Sent       uint64 // packets handed to Config.Remote
	Received   uint64 // frames that came in through Fabric.Receive

	// Of Packets, the NAKs by kind (NAKKind), as responders send them.
	RNRNAKs, SeqNAKs, ErrorNAKs uint64
	// Of Timers, by kind: an RC requester's ACK timeout (XFER-10) and the
	// end of its RNR wait (XFER-07), and the connection managers' timers
	// (CM-12, CM-14). A QP's own counters (QPStats) say what each did.
	ACKTimers, RNRTimers, CMTimers uint64
}

func newEngine(f *Fabric, cfg Config) *engine {
	seed := cfg.Seed
	e := &engine{
		later: heap[event]{less: func(a, b event) bool {
			return a.at < b.at || (a.at == b.at && a.seq < b.seq)
		}},
		f:       f,
		mode:    cfg.Mode,
		rng:     rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		sched:   cfg.Schedule,
		chooser: cfg.Chooser,
		faults:  cfg.Faults,
		log:     cfg.Trace,
		remote:  cfg.Remote,
	}
	return e
}

// next returns a fresh sequence number.
func (e *engine) next() uint64 { e.seq++; return e.seq }

// push makes ev ready now.
func (e *engine) push(ev event) {
	if e.head > 0 && e.head == len(e.ready) {
		e.ready, e.head = e.ready[:0], 0
	}
	e.ready = append(e.ready, ev)
	e.f.d.Kick() // the next verb's Leave settles
}

// pending is the number of events ready now.
func (e *engine) pending() int { return len(e.ready) - e.head }

// pick removes the next ready event and returns a pointer to it, valid
// until the next pick: events are 64 bytes, copied once here instead of at
// every return and call. FIFO takes the oldest; Random and a Chooser
// choose among the events that may run next (eligible). The rest keep the
// order in which they became ready.
func (e *engine) pick() *event {
	i := e.head
	if e.pending() > 1 && (e.chooser != nil || e.sched == Random) {
		el := e.eligible()
		if n := len(el); n > 1 {
			c := 0
			if e.chooser != nil {
				e.scratch = e.scratch[:0]
				for _, j := range el {
					e.scratch = append(e.scratch, e.describe(&e.ready[j]))
				}
				if c = e.chooser(e.scratch); c < 0 || c >= n {
					c = 0
				}
			} else {
				c = e.rng.IntN(n)
			}
			i = el[c]
		}
	}
	ev := &e.picked
	*ev = e.ready[i]
	if i != e.head { // FIFO picks the head: nothing to move
		copy(e.ready[e.head+1:i+1], e.ready[e.head:i])
	}
	e.ready[e.head] = event{}
	e.head++
	if e.head > 64 && e.head*2 > len(e.ready) {
		n := copy(e.ready, e.ready[e.head:])
		clear(e.ready[n:])
		e.ready, e.head = e.ready[:n], 0
	}
	return ev
}

// eligible lists in e.elig the indices of the ready events that may run
// next: every one but a packet with an earlier packet of its path still
// ready (XFER-32). ready is in the order the events became ready (push
// appends, pick keeps the order), so "earlier" is "before it in ready".
// A bitmap of path hashes spares the search for the usual packet that is
// alone on its path.
func (e *engine) eligible() []int {
	el := e.elig[:0]
	var seen [4]uint64
	for j := e.head; j < len(e.ready); j++ {
		if ev := &e.ready[j]; ev.kind == EventPacket && !e.anyOrder {
			h := pathHash(ev.pkt)
			if seen[h>>6]&(1<<(h&63)) != 0 && e.behind(j) {
				continue
			}
			seen[h>>6] |= 1 << (h & 63)
		}
		el = append(el, j)
	}
	e.elig = el
	return el
}

// behind reports whether the packet at ready[j] has an earlier packet of
// its path still ready. It looks back from j: packets of one message
// are usually next to each other.
func (e *engine) behind(j int) bool {
	ev := &e.ready[j]
	for k := j - 1; k >= e.head; k-- {
		if o := &e.ready[k]; o.kind == EventPacket && o.dst == ev.dst && samePath(o.pkt, ev.pkt) {
			return true
		}
	}
	return false
}

// samePath reports whether two packets arriving at one port travel on one
// path, which delivers in the order it sent (XFER-32): the same source
// and destination QP, the same source and destination addresses (LIDs and
// GIDs: another LID of a port, as LMC gives, may be routed another way)
// and the same service level.
func samePath(a, b *qp.Packet) bool {
	return a.SrcQPN == b.SrcQPN && a.DstQPN == b.DstQPN && a.SLID == b.SLID && a.DLID == b.DLID &&
		a.SL == b.SL && a.Global == b.Global && a.SGID == b.SGID && a.DGID == b.DGID
}

// pathHash is a hash of p's path in [0, 256).
func pathHash(p *qp.Packet) uint32 {
	h := p.SrcQPN*0x9e3779b1 ^ p.DstQPN*0x85ebca6b ^ (uint32(p.SLID)<<16|uint32(p.DLID))*0xc2b2ae35 ^ uint32(p.SL)
	return h >> 24
}

func (e *engine) describe(ev *event) ReadyEvent {
	r := ReadyEvent{Kind: ev.kind, Seq: ev.seq}
	switch ev.kind {
	case EventRun:
		r.QPN = ev.q.Num()
	case EventTimer:
		r.QPN = timerQPN(ev.timer)
	case EventPacket:
		r.QPN, r.Packet, r.PSN = ev.pkt.DstQPN, trace.PacketKind(ev.pkt.Kind), ev.pkt.PSN
		r.SrcQPN, r.SLID = ev.pkt.SrcQPN, ev.pkt.SLID
	}
	if ev.dev == nil && ev.timer != nil {
		ev.dev = e.f.timerDevice(ev.timer)
	}
	if ev.dev != nil {
		r.Device = ev.dev.name
	}
	return r
}

// timerQPN is the QP number a timer is reported under: its QP's, or the
// general services QP's (1) for the connection manager's timers.
func timerQPN(t *qp.Timer) uint32 {
	if t.QP == nil {
		return gsiQPN
	}
	return t.QP.Num()
}

// timerDevice finds the device of a timer's QP or owner.
func (f *Fabric) timerDevice(t *qp.Timer) *Device {
	if t.QP == nil {
		if o, ok := t.Owner.(interface{ device() *Device }); ok {
			return o.device()
		}
		return nil
	}
	return f.deviceOf(t.QP)
}

// deviceOf finds the device of a QP, for traces and choosers.
func (f *Fabric) deviceOf(q *qp.QP) *Device {
	for _, d := range f.devices {
		if d.qpByNum.get(q.Num()) == q {
			return d
		}
	}
	return nil
}

// stepLocked runs one ready event; false when none is ready.
func (e *engine) stepLocked() bool {
	if e.pending() == 0 {
		return false
	}
	ev := e.pick()
	e.stats.Events++
	switch ev.kind {
	case EventRun:
		ev.q.RunLocked()
	case EventTimer:
		e.stats.Timers++
		if t := ev.timer; t.QP == nil {
			e.stats.CMTimers++
			if e.tracing() {
				e.f.d.Emit(nil, trace.Record{Kind: trace.KindTimer, Object: t.Owner.TraceName(), Name: "timer fired", Timer: trace.TimerCM})
			}
			t.Owner.FireLocked()
			break
		}
		if ev.timer.Kind == qp.TimerRNR {
			e.stats.RNRTimers++
		} else {
			e.stats.ACKTimers++
		}
		if e.tracing() {
			e.f.d.Emit(ev.timer.QP, trace.Record{Kind: trace.KindTimer, Name: "timer fired", Timer: timerKinds[ev.timer.Kind], Why: timerNames[ev.timer.Kind]})
		}
		ev.timer.QP.TimerLocked(ev.timer.Kind)
	case EventPacket:
		e.deliverLocked(ev.pkt, ev.dst)
	}
	return true
}

var (
	timerNames = [...]string{qp.TimerRetry: "ACK timeout", qp.TimerRNR: "RNR wait over"}
	timerKinds = [...]trace.TimerKind{qp.TimerRetry: trace.TimerACK, qp.TimerRNR: trace.TimerRNR}
)

// stabilizeLocked runs ready events until none is left at the current
// tick, and returns how many ran.
func (e *engine) stabilizeLocked() int {
	if e.running {
		return 0
	}
	e.running = true
	defer func() { e.running = false }()
	n := 0
	for e.stepLocked() {
		n++
	}
	return n
}

// advanceBoundedLocked is advanceLocked that runs at most budget events
// and reports whether it reached target. Short of it, the clock stands at
// the tick of the last event run, with the rest ready or due: the next
// call, or the settle of the next verb, goes on from there.
func (e *engine) advanceBoundedLocked(target uint64, budget int) bool {
	target = min(target, MaxTick)
	if e.running {
		return true
	}
	if !e.advancing {
		e.advancing = true
		defer func() { e.advancing = false }()
	}
	n := e.stabilizeBoundedLocked(budget)
	for n < budget {
		at, ok := e.nextDue()
		if !ok || at > target {
			if target > e.now {
				e.now = target
			}
			return true
		}
		if at > e.now {
			e.now = at
		}
		e.releaseDue()
		n += e.stabilizeBoundedLocked(budget - n)
	}
	return false
}

// stabilizeBoundedLocked is stabilizeLocked that runs at most max events.
func (e *engine) stabilizeBoundedLocked(max int) int {
	if e.running {
		return 0
	}
	e.running = true
	defer func() { e.running = false }()
	n := 0
	for n < max && e.stepLocked() {
		n++
	}
	return n
}

// nextDue returns the tick of the earliest future event.
func (e *engine) nextDue() (uint64, bool) {
	at, ok := uint64(0), false
	if e.later.len() > 0 {
		at, ok = e.later.top().at, true
	}
	if e.timers.len() > 0 && (!ok || e.timers.top().At < at) {
		at, ok = e.timers.top().At, true
	}
	return at, ok
}

// releaseDue makes every future event due at now ready, in (tick, order)
// order.
func (e *engine) releaseDue() {
	for {
		lt, lok := uint64(0), false
		if e.later.len() > 0 && e.later.top().at <= e.now {
			lt, lok = e.later.top().seq, true
		}
		tok := e.timers.len() > 0 && e.timers.top().At <= e.now
		switch {
		case lok && (!tok || lt < e.timers.top().Seq):
			e.push(e.later.pop())
		case tok:
			t := e.timers.pop()
			t.Index = -1
			e.push(event{kind: EventTimer, seq: e.next(), timer: t})
		default:
			return
		}
	}
}

// advanceLocked moves the clock forward to target, running every event on
// the way at its own tick, and stabilizes at target.
func (e *engine) advanceLocked(target uint64) {
	target = min(target, MaxTick)
	if !e.advancing {
		e.advancing = true
		defer func() { e.advancing = false }()
	}
	e.stabilizeLocked()
	for {
		at, ok := e.nextDue()
		if !ok || at > target {
			break
		}
		if at > e.now {
			e.now = at
		}
		e.releaseDue()
		e.stabilizeLocked()
	}
	if target > e.now {
		e.now = target
	}
}

// settleLocked is the end of a verb (the domain's Settle hook, called by
// every Leave): Auto and Background run until idle; a Background fabric
// with a Remote first catches up with the wall clock.
func (e *engine) settleLocked() {
	e.catchUpLocked()
	if e.mode != Manual && e.pending() > 0 {
		e.stabilizeLocked()
	}
}

// packet pool: the steady state allocates nothing.

func (e *engine) newPacket() *qp.Packet {
	if n := len(e.pool); n > 0 {
		p := e.pool[n-1]
		e.pool = e.pool[:n-1]
		return p
	}
	return &qp.Packet{Payload: make([]byte, 0, 4096)}
}

func (e *engine) freePacket(p *qp.Packet) {
	buf := p.Payload[:0]
	*p = qp.Packet{Payload: buf}
	e.pool = append(e.pool, p)
}

func (e *engine) clonePacket(p *qp.Packet) *qp.Packet {
	c := e.newPacket()
	buf := append(c.Payload[:0], p.Payload...)
	*c = *p
	c.Payload = buf
	return c
}

// tracing reports whether records are wanted.
func (e *engine) tracing() bool { return e.log != nil }

// emit adds r, a record about the object named r.Object, if the fabric
// traces: it stamps r with the time and the next sequence number. It is
// also the domain's trace sink.
func (e *engine) emit(r trace.Record) {
	if e.log == nil {
		return
	}
	r.Tick, r.Seq = e.now, e.next()
	e.log.Add(r)
}

// armLocked (re)starts t to fire after the given ticks. A verb of a
// Background fabric whose clock goroutine sleeps (nothing was due, so the
// clock was left behind the wall clock) arms from the wall clock's tick:
// from the stale one, the timer would fall due as soon as the goroutine
// caught up, and an RC requester whose packets are lost after an idle
// spell would spend every retry at once (RETRY_EXC_ERR without waiting).
// While the goroutine polls the clock lags by bgQuantum at most, and
// what runs as the clock advances arms from its own tick.
func (e *engine) armLocked(t *qp.Timer, after uint64) {
	now := e.now
	if e.bg != nil && !e.advancing && !e.bg.polling {
		now = e.bg.targetLocked(now)
	}
	t.At, t.Seq = later(now, after), e.next()
	if i := t.Index; i >= 0 && i < e.timers.len() && e.timers.items[i] == t {
		e.timers.fix(i) // armed: re-keyed in place; the order of (At, Seq) keys is total
	} else {
		e.timers.push(t)
	}
	if e.bg != nil {
		e.bg.kickLocked(t.At)
	}
}

// stopTimer takes t out of the timer heap if it is armed.
func (e *engine) stopTimer(t *qp.Timer) {
	if i := t.Index; i >= 0 && i < e.timers.len() && e.timers.items[i] == t {
		e.timers.remove(i)
		t.Index = -1
	}
}

// clock returns the virtual time; the CQs' completion timestamps read it
// under the domain lock (CQX-09).
func (e *engine) clock() uint64 { return e.now }
