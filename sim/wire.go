package sim

import (
	"fmt"

	"github.com/verbsim/verbsim/internal/simhook"
	"github.com/verbsim/verbsim/sim/internal/qp"
	"github.com/verbsim/verbsim/sim/trace"
	"github.com/verbsim/verbsim/verbs"
)

// Faults are the seeded, fabric-wide packet faults (docs/transport.md). Every
// fault that fires is visible in the trace. The zero value injects
// nothing.
type Faults struct {
	// Drop is the probability that a packet is lost.
	Drop float64
	// Duplicate is the probability that a packet arrives twice.
	Duplicate float64
	// Delay is the probability that a packet arrives late: 1..MaxDelay
	// ticks after it was sent (MaxDelay 0 means 10,000 ticks). A delayed
	// packet may be overtaken by later ones.
	Delay    float64
	MaxDelay uint64
}

func (f Faults) validate() error {
	for _, p := range []float64{f.Drop, f.Duplicate, f.Delay} {
		if !(p >= 0 && p <= 1) {
			return fmt.Errorf("sim: fault probability %v outside [0, 1]", p)
		}
	}
	return nil
}

// sendLocked puts p on the wire from device d: it fills the source address,
// routes p to the destination port, applies the faults and queues the
// arrival. A packet for an address no port of the fabric has leaves
// through Config.Remote when one is set (sendRemoteLocked), with no fault
// applied here: the receiving fabric applies its own.
func (e *engine) sendLocked(d *Device, from *qp.QP, p *qp.Packet) {
	e.stats.Packets++
	if p.Kind == qp.PktAck && p.Syndrome != qp.SynACK {
		e.countNAK(p.Syndrome)
	}
	var src *port
	if p.Port >= 1 && int(p.Port) <= len(d.ports) {
		src = d.ports[p.Port-1]
	}
	if src == nil {
		e.dropLocked(d, from, p, "no such local port", 0)
		return
	}
	p.SLID, p.SGID = src.attr.LID, src.gidAt(p.SGIDIndex)
	if src.attr.LinkLayer == verbs.LinkLayerEthernet {
		p.Global = true
	}
	dst := e.f.route(p)
	tracing := e.tracing()
	switch {
	case src.attr.State != verbs.PortActive:
		e.dropLocked(d, from, p, "the local port is down", 0)
		return
	case dst == nil && e.remote != nil:
		e.sendRemoteLocked(d, from, p)
		return
	case dst == nil:
		e.dropLocked(d, from, p, "no port has the destination address", 0)
		return
	case dst.attr.State != verbs.PortActive:
		e.dropLocked(d, from, p, "the remote port is down", 0)
		return
	}
	if tracing {
		e.packetLocked(from, "", "send", p, qpName(dst.dev, p.DstQPN), "", 0)
	}
	if len(e.aimed) > 0 {
		switch act, x := e.aimLocked(d, dst, p); act {
		case FaultDrop:
			e.dropLocked(d, from, p, fmt.Sprintf("fault #%d: drop", x.id), x.id)
			return
		case FaultDuplicate:
			e.stats.Duplicated++
			if tracing {
				e.packetLocked(from, "", "duplicate", p, "", fmt.Sprintf("fault #%d: duplicate", x.id), x.id)
			}
			e.arriveAtLocked(dst, e.clonePacket(p), e.now)
			e.arriveAtLocked(dst, p, e.now)
			return
		case FaultDelay:
			e.stats.Delayed++
			at := e.now + x.spec.Delay
			if at < e.now {
				at = ^uint64(0)
			}
			if tracing {
				e.packetLocked(nil, dst.dev.name, "delay", p, "", fmt.Sprintf("fault #%d: arrives at t=%d", x.id, at), x.id)
			}
			e.arriveAtLocked(dst, p, at)
			return
		}
	}
	f := &e.faults
	if e.choose != nil && (f.Drop > 0 || f.Duplicate > 0 || f.Delay > 0) {
		e.chosenFaultLocked(d, from, dst, p)
		return
	}
	if f.Drop > 0 && e.rng.Float64() < f.Drop {
		e.dropLocked(d, from, p, "fault: drop", 0)
		return
	}
	if f.Duplicate > 0 && e.rng.Float64() < f.Duplicate {
		e.stats.Duplicated++
		if tracing {
			e.packetLocked(from, "", "duplicate", p, "", "fault: duplicate", 0)
		}
		e.arriveLocked(dst, e.clonePacket(p))
	}
	e.arriveLocked(dst, p)
}

// faultOutcomes lists the outcomes the faults f make possible for one
// packet, no fault first, with their probabilities. A delay is offered at
// its two extremes: 1 tick (after everything ready now, before any timer
// due later) and MaxDelay ticks.
func faultOutcomes(out []simhook.FaultOutcome, f Faults) []simhook.FaultOutcome {
	keep := 1 - f.Drop
	if f.Drop < 1 && f.Duplicate < 1 && f.Delay < 1 {
		out = append(out, simhook.FaultOutcome{Kind: simhook.FaultDeliver, P: keep * (1 - f.Duplicate) * (1 - f.Delay)})
	}
	if f.Drop > 0 {
		out = append(out, simhook.FaultOutcome{Kind: simhook.FaultDrop, P: f.Drop})
	}
	if keep > 0 && f.Duplicate > 0 {
		out = append(out, simhook.FaultOutcome{Kind: simhook.FaultDuplicate, P: keep * f.Duplicate})
	}
	if keep > 0 && f.Delay > 0 {
		maxd := f.MaxDelay
		if maxd == 0 {
			maxd = 10_000
		}
		p := keep * (1 - f.Duplicate) * f.Delay
		if maxd == 1 {
			out = append(out, simhook.FaultOutcome{Kind: simhook.FaultDelay, Delay: 1, P: p})
		} else {
			out = append(out, simhook.FaultOutcome{Kind: simhook.FaultDelay, Delay: 1, P: p / 2},
				simhook.FaultOutcome{Kind: simhook.FaultDelay, Delay: maxd, P: p / 2})
		}
	}
	return out
}

// chosenFaultLocked is sendLocked's fault draw when a chooser (the schedule
// explorer) decides it: one decision per packet among the outcomes the
// configured faults make possible. The draw is traced with its outcome.
func (e *engine) chosenFaultLocked(d *Device, from *qp.QP, dst *port, p *qp.Packet) {
	dr := &e.draw
	dr.Packet = fmt.Sprintf("%s from %s qp %#x to %s qp %#x", describePacket(p), d.name, p.SrcQPN, dst.dev.name, p.DstQPN)
	dr.Outcomes = faultOutcomes(dr.Outcomes[:0], e.faults)
	c := 0
	if len(dr.Outcomes) > 1 {
		c = e.choose(dr)
		if c < 0 || c >= len(dr.Outcomes) {
			c = 0
		}
	}
	o := dr.Outcomes[c]
	if e.tracing() {
		e.f.d.Emit(from, trace.Record{Kind: trace.KindFault, Name: "fault draw", Packet: packetOf(p), Detail: o.String(),
			Why: fmt.Sprintf("chosen among %d outcome(s)", len(dr.Outcomes))})
	}
	switch o.Kind {
	case simhook.FaultDrop:
		e.dropLocked(d, from, p, "fault: drop", 0)
	case simhook.FaultDuplicate:
		e.stats.Duplicated++
		e.arriveAtLocked(dst, e.clonePacket(p), e.now)
		e.arriveAtLocked(dst, p, e.now)
	case simhook.FaultDelay:
		e.stats.Delayed++
		e.arriveAtLocked(dst, p, later(e.now, o.Delay))
	default:
		e.arriveAtLocked(dst, p, e.now)
	}
}

// arriveLocked queues the arrival of p at port dst: now, or later when the
// delay fault fires.
func (e *engine) arriveLocked(dst *port, p *qp.Packet) {
	ev := event{kind: EventPacket, seq: e.next(), pkt: p, dst: dst, dev: dst.dev}
	f := &e.faults
	if f.Delay > 0 && e.rng.Float64() < f.Delay {
		maxd := f.MaxDelay
		if maxd == 0 {
			maxd = 10_000
		}
		ev.at = later(e.now, 1+e.rng.Uint64N(maxd))
		e.stats.Delayed++
		if e.tracing() {
			e.packetLocked(nil, dst.dev.name, "delay", p, "", fmt.Sprintf("fault: arrives at t=%d", ev.at), 0)
		}
		e.later.push(ev)
		if e.bg != nil {
			e.bg.kickLocked(ev.at)
		}
		return
	}
	e.push(ev)
}

// arriveAtLocked queues the arrival of p at port dst at tick at, with no
// random fault: a targeted fault has decided its fate.
func (e *engine) arriveAtLocked(dst *port, p *qp.Packet, at uint64) {
	ev := event{kind: EventPacket, seq: e.next(), pkt: p, dst: dst, dev: dst.dev}
	if at <= e.now {
		e.push(ev)
		return
	}
	ev.at = at
	e.later.push(ev)
	if e.bg != nil {
		e.bg.kickLocked(ev.at)
	}
}

// dropLocked loses p, sent by from on d, because of why: by targeted
// fault number fault, or 0.
func (e *engine) dropLocked(d *Device, from *qp.QP, p *qp.Packet, why string, fault int) {
	e.stats.Dropped++
	if e.tracing() {
		e.packetLocked(from, "", "drop", p, "", why, fault)
	}
	e.freePacket(p)
}

// deliverLocked hands an arriving packet to its QP.
func (e *engine) deliverLocked(p *qp.Packet, dst *port) {
	if dst.attr.State != verbs.PortActive {
		e.stats.Dropped++
		if e.tracing() {
			e.packetLocked(nil, dst.dev.name, "drop", p, "", "the port went down", 0)
		}
		e.freePacket(p)
		return
	}
	q := dst.dev.qpLocked(p.DstQPN)
	if q == nil {
		e.stats.Dropped++
		if e.tracing() {
			e.packetLocked(nil, dst.dev.name, "drop", p, "", fmt.Sprintf("no QP %#x", p.DstQPN), 0)
		}
		e.freePacket(p)
		return
	}
	e.stats.Delivered++
	if e.tracing() {
		e.packetLocked(q, "", "receive", p, "", "", 0)
	}
	q.ReceiveLocked(p)
	e.freePacket(p) // no defer: ReceiveLocked does not panic on a packet
}

// route finds the port a packet is addressed to: by GID when it carries a
// GRH, by LID otherwise.
func (f *Fabric) route(p *qp.Packet) *port {
	if p.Global {
		return f.byGID[p.DGID]
	}
	if int(p.DLID) < len(f.lids) {
		return f.lids[p.DLID]
	}
	return f.byLID[p.DLID]
}

// countNAK counts a NAK put on the wire in EngineStats.
func (e *engine) countNAK(s qp.Syndrome) {
	switch s {
	case qp.SynRNR:
		e.stats.RNRNAKs++
	case qp.SynSeqErr:
		e.stats.SeqNAKs++
	default:
		e.stats.ErrorNAKs++
	}
}
