package simdev

import (
	"github.com/verbsim/verbsim/conformance"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/trace"
)

// Forge implements conformance.Forger: the packet goes to the fabric as a
// frame from another adapter (sim.AppendFrame, Fabric.Receive).
func (d device) Forge(p conformance.ForgedPacket) error {
	w := WirePacket(p)
	return d.d.Fabric().Receive(sim.AppendFrame(nil, &w))
}

// WirePacket returns the packet a conformance.ForgedPacket describes, for
// sim.AppendFrame: the frame the drop-in library's test hook delivers too.
func WirePacket(p conformance.ForgedPacket) sim.WirePacket {
	w := sim.WirePacket{
		Transport: p.Transport, Op: p.Op, First: p.First, Last: p.Last,
		SrcQPN: p.SrcQPN, DstQPN: p.DstQPN, PSN: p.PSN, Imm: p.Imm,
		RemoteAddr: p.RemoteAddr, RKey: p.RKey, DMALen: p.DMALen, Payload: p.Payload,
		SLID: p.SLID, DLID: p.DLID, Global: p.Global, SGID: p.SGID, DGID: p.DGID,
	}
	switch p.Kind {
	case conformance.ForgedSend:
		w.Kind = trace.PacketSend
	case conformance.ForgedWrite:
		w.Kind = trace.PacketWrite
	case conformance.ForgedACK:
		w.Kind = trace.PacketAck
	case conformance.ForgedNAKSeq:
		w.Kind, w.NAK = trace.PacketAck, trace.NAKSeqErr
	case conformance.ForgedReadResp:
		w.Kind = trace.PacketReadResp
	default:
		w.Kind = 255 // refused by Receive: EINVAL
	}
	return w
}

var _ conformance.Forger = device{}
