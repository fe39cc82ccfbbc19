package sim

import (
	"fmt"
	"syscall"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/verbs"

	"github.com/verbsim/verbsim/sim/internal/qp"
	"github.com/verbsim/verbsim/sim/trace"
	"github.com/verbsim/verbsim/sim/verr"
)

// The packet kinds of the trace (trace.PacketKind) are the engine's
// values, which the aim of a fault and the trace convert: these fail to
// compile when the two lists part.
var (
	_ = [1]int{}[trace.PacketSend-trace.PacketKind(qp.PktSend)]
	_ = [1]int{}[trace.PacketAck-trace.PacketKind(qp.PktAck)]
)

// Packet describes a packet on the wire to a PacketFault's Match function.
// It is a copy: changing it changes nothing.
type Packet struct {
	From, To    string           // the names of the sending and receiving devices
	Transport   verbs.QPType     // RC, UC or UD
	Kind        trace.PacketKind // what it carries
	Op          verbs.WROpcode   // the request's opcode (requests only)
	SrcQPN      uint32           // the sending QP
	DstQPN      uint32           // the QP it is addressed to
	PSN         uint32           // its packet sequence number (24 bits)
	First, Last bool             // where it sits in its message
	NAK         trace.NAKKind    // for a PacketAck: which NAK it is; trace.NotNAK for an ACK and every other kind
	Len         int              // payload bytes
	// Global says the packet carries a GRH, whose traffic class, hop
	// limit and flow label follow: the sender's address vector's (AV-05).
	Global       bool
	TrafficClass uint8
	HopLimit     uint8
	FlowLabel    uint32
}

// FaultAction is what a PacketFault does to the packets it matches.
type FaultAction uint8

// The actions of a PacketFault.
const (
	FaultDrop      FaultAction = iota + 1 // the packet is lost
	FaultDuplicate                        // the packet arrives twice
	FaultDelay                            // the packet arrives Delay ticks late
)

var faultActionNames = [...]string{FaultDrop: "drop", FaultDuplicate: "duplicate", FaultDelay: "delay"}

// String names the action.
func (a FaultAction) String() string {
	if int(a) < len(faultActionNames) && faultActionNames[a] != "" {
		return faultActionNames[a]
	}
	return fmt.Sprintf("FaultAction(%d)", uint8(a))
}

// PacketFault is a fault aimed at chosen packets, where Faults are
// fabric-wide probabilities: "drop the ACK of PSN 7", "drop the next three
// packets QP 0x12 sends", "delay every READ response by 50 µs". Every packet
// put on the wire is offered to the armed faults in the order they were
// added; the first whose Match accepts it, once past its Skip, applies its
// Action and counts one hit. A fault whose Count is spent no longer matches.
// Targeted faults draw no random numbers: the same run hits the same packets.
// Each hit is in the trace, named by the fault's number.
type PacketFault struct {
	// Match selects the packets; nil selects every packet. It runs with
	// the fabric's lock held, so it must not call verbs. FromQP, ToQP and
	// OfKind build common ones.
	Match func(Packet) bool
	// Action is what happens to a selected packet.
	Action FaultAction
	// Delay is how many ticks late a FaultDelay packet arrives (at least 1).
	Delay uint64
	// Skip is how many selected packets go through untouched first: Skip 2
	// with Count 1 aims at the third.
	Skip int
	// Count is how many packets the fault hits; 0 means every one.
	Count int
}

// Fault is a PacketFault armed on a fabric. Its methods are safe for
// concurrent use; on a nil Fault they do nothing and return zero values.
type Fault struct {
	f    *Fabric
	id   int
	spec PacketFault
	seen int  // selected packets so far, skipped ones included
	hits int  // packets the action was applied to
	gone bool // removed
}

// InjectPacketFault arms a targeted fault on the fabric. EINVAL for an
// unknown action, a FaultDelay without a delay, or a negative Skip or Count.
func (f *Fabric) InjectPacketFault(pf PacketFault) (*Fault, error) {
	const verb = "inject_packet_fault"
	if f == nil {
		return nil, verr.Errorf(verb, syscall.EINVAL, "nil fabric")
	}
	switch {
	case pf.Action < FaultDrop || pf.Action > FaultDelay:
		return nil, verr.Errorf(verb, syscall.EINVAL, "unknown action %v", pf.Action)
	case pf.Action == FaultDelay && pf.Delay == 0:
		return nil, verr.Errorf(verb, syscall.EINVAL, "a delay fault needs a delay of at least one tick")
	case pf.Skip < 0 || pf.Count < 0:
		return nil, verr.Errorf(verb, syscall.EINVAL, "negative skip %d or count %d", pf.Skip, pf.Count)
	}
	f.d.Enter(domain.Op{})
	defer f.d.Leave(domain.Op{}, nil)
	e := f.eng
	e.faultSeq++
	x := &Fault{f: f, id: e.faultSeq, spec: pf}
	e.aimed = append(e.aimed, x)
	if e.tracing() {
		e.emit(trace.Record{Kind: trace.KindFault, Object: "fabric", Name: "arm fault", Fault: x.id,
			Detail: fmt.Sprintf("#%d %v", x.id, pf.Action), Why: fmt.Sprintf("skip %d, count %d", pf.Skip, pf.Count)})
	}
	return x, nil
}

// Hits returns how many packets the fault has acted on.
func (x *Fault) Hits() int {
	if x == nil {
		return 0
	}
	x.f.d.Enter(domain.Op{})
	defer x.f.d.Leave(domain.Op{}, nil)
	return x.hits
}

// Spent reports whether the fault has hit its Count of packets, or was
// removed: it acts on no more. On a nil Fault it is false, the zero value,
// as every result-only method of verbsim's handles is.
func (x *Fault) Spent() bool {
	if x == nil {
		return false
	}
	x.f.d.Enter(domain.Op{})
	defer x.f.d.Leave(domain.Op{}, nil)
	return x.gone || x.spentLocked()
}

func (x *Fault) spentLocked() bool { return x.spec.Count > 0 && x.hits >= x.spec.Count }

// Remove disarms the fault. Removing it twice is harmless.
func (x *Fault) Remove() {
	if x == nil {
		return
	}
	x.f.d.Enter(domain.Op{})
	defer x.f.d.Leave(domain.Op{}, nil)
	if !x.gone {
		x.gone = true
		x.f.eng.disarmLocked(x)
	}
}

// disarmLocked takes x off the list of armed faults.
func (e *engine) disarmLocked(x *Fault) {
	for i, y := range e.aimed {
		if y == x {
			e.aimed = append(e.aimed[:i], e.aimed[i+1:]...)
			break
		}
	}
}

// FromQP selects the packets q sends.
func FromQP(q *QP) func(Packet) bool {
	num, dev := q.Num(), deviceOf(q)
	return func(p Packet) bool { return p.SrcQPN == num && p.From == dev }
}

// ToQP selects the packets addressed to q.
func ToQP(q *QP) func(Packet) bool {
	num, dev := q.Num(), deviceOf(q)
	return func(p Packet) bool { return p.DstQPN == num && p.To == dev }
}

// OfKind selects the packets of the given kinds.
func OfKind(kinds ...trace.PacketKind) func(Packet) bool {
	return func(p Packet) bool {
		for _, k := range kinds {
			if p.Kind == k {
				return true
			}
		}
		return false
	}
}

// All selects the packets every one of matches selects.
func All(matches ...func(Packet) bool) func(Packet) bool {
	return func(p Packet) bool {
		for _, m := range matches {
			if m != nil && !m(p) {
				return false
			}
		}
		return true
	}
}

// deviceOf names the device q was created on, or "" for a QP of no device.
func deviceOf(q *QP) string {
	if q == nil {
		return ""
	}
	if pd := q.PD(); pd != nil && pd.ctx != nil && pd.ctx.dev != nil {
		return pd.ctx.dev.name
	}
	return ""
}

// aimLocked offers p, about to travel from device from to port dst, to the
// armed targeted faults, and returns the action of the first that hits it
// (0 when none does) and that fault.
func (e *engine) aimLocked(from *Device, dst *port, p *qp.Packet) (FaultAction, *Fault) {
	view := Packet{
		From: from.name, To: dst.dev.name, Transport: p.Transport, Kind: trace.PacketKind(p.Kind), Op: p.Op,
		SrcQPN: p.SrcQPN, DstQPN: p.DstQPN, PSN: p.PSN, First: p.First, Last: p.Last,
		Len: len(p.Payload), Global: p.Global, TrafficClass: p.TClass, HopLimit: p.HopLimit, FlowLabel: p.FlowLabel,
	}
	if p.Kind == qp.PktAck {
		view.NAK = p.Syndrome.NAK()
	}
	for _, x := range e.aimed {
		if x.spec.Match != nil && !x.spec.Match(view) {
			continue
		}
		x.seen++
		if x.seen <= x.spec.Skip {
			continue
		}
		x.hits++
		if x.spentLocked() {
			e.disarmLocked(x)
		}
		return x.spec.Action, x
	}
	return 0, nil
}
