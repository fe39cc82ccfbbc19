package sim

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/sim/trace"
)

// FutureEvent describes one event of the fabric due later than now: an
// armed QP timer or a delayed packet.
type FutureEvent struct {
	At     uint64          // the tick it is due at
	Kind   EventKind       // EventTimer or EventPacket
	Device string          // the device it happens on (a delayed packet: where it arrives)
	QPN    uint32          // the QP whose timer it is, or the QP the packet is delivered to
	Timer  trace.TimerKind // for EventTimer: trace.TimerACK (XFER-10) or trace.TimerRNR (XFER-07)
	// For EventPacket: the delayed packet's kind, which NAK it is, and
	// its PSN.
	Packet trace.PacketKind
	NAK    trace.NAKKind
	PSN    uint32
	// What says it in words, for people: "ACK timeout", "RNR wait", or
	// the delayed packet ("delayed RC SEND psn=3 len=64 first last").
	What string
}

// String renders the event as "t=131072 a/qp 0x11: ACK timeout".
func (e FutureEvent) String() string {
	return fmt.Sprintf("t=%d %s/qp %#x: %s", e.At, e.Device, e.QPN, e.What)
}

// Future returns the fabric's future events, the armed timers and the
// delayed packets, in the order they are due: what AdvanceToNext and
// RunUntilIdle would run next. A test that waits for something uses it to
// say what could still happen (package simtest names them when a wait
// fails). Nil for a nil fabric or when nothing is pending.
func (f *Fabric) Future() []FutureEvent {
	if f == nil {
		return nil
	}
	f.d.Enter(domain.Op{})
	defer f.d.Leave(domain.Op{}, nil)
	e := f.eng
	type item struct {
		ev  FutureEvent
		seq uint64
	}
	var items []item
	for _, t := range e.timers.items {
		name := ""
		if d := f.deviceOf(t.QP); d != nil {
			name = d.name
		}
		k := timerKinds[t.Kind]
		items = append(items, item{FutureEvent{At: t.At, Kind: EventTimer, Device: name, QPN: t.QP.Num(), Timer: k, What: k.String()}, t.Seq})
	}
	for _, ev := range e.later.items {
		name := ""
		if ev.dev != nil {
			name = ev.dev.name
		}
		p := ev.pkt
		d := packetOf(p)
		items = append(items, item{FutureEvent{At: ev.at, Kind: EventPacket, Device: name, QPN: p.DstQPN,
			Packet: d.Kind, NAK: d.NAK, PSN: d.PSN, What: "delayed " + d.String()}, ev.seq})
	}
	slices.SortFunc(items, func(a, b item) int {
		return cmp.Or(cmp.Compare(a.ev.At, b.ev.At), cmp.Compare(a.seq, b.seq))
	})
	out := make([]FutureEvent, 0, len(items))
	for _, it := range items {
		out = append(out, it.ev)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Ready returns the engine events ready to run now, in the order they were
// created: QPs with work to do, timers that have come due, and packets on
// the wire waiting to be delivered. It is what a Manual fabric's Step and
// Stabilize would run next (in FIFO order; a Random schedule or a Chooser
// may pick another first, but never a packet marked Behind: an earlier
// packet of its path comes first, XFER-32), and the "packets in flight"
// of a timeline. It is read-only and takes the fabric's lock. Nil for a
// nil fabric or when nothing is ready.
func (f *Fabric) Ready() []ReadyEvent {
	if f == nil {
		return nil
	}
	f.d.Lock()
	defer f.d.Unlock()
	e := f.eng
	if e.pending() == 0 {
		return nil
	}
	out := make([]ReadyEvent, 0, e.pending())
	for j := e.head; j < len(e.ready); j++ {
		r := e.describe(&e.ready[j])
		r.Behind = e.ready[j].kind == EventPacket && !e.anyOrder && e.behind(j)
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b ReadyEvent) int { return cmp.Compare(a.Seq, b.Seq) })
	return out
}
