package sim

import (
	"github.com/verbsim/verbsim/sim/internal/qp"
	"github.com/verbsim/verbsim/sim/trace"
	"github.com/verbsim/verbsim/verbs"
)

// WirePacket is one packet as it travels between adapters: the fields of
// its headers and its payload. AppendFrame encodes it as a frame of
// Fabric.Receive, which delivers it to the port that has its destination
// address as a packet from another adapter. It is how a test plays a buggy
// or hostile peer: a packet of the right QP numbers and PSNs with lengths
// that do not add up (XFER-34), from an address that is not the connected
// peer's (XFER-27), or acknowledging what was never sent (XFER-35). Fields a
// kind of packet does not have are ignored.
type WirePacket struct {
	Kind        trace.PacketKind
	Transport   verbs.QPType   // RC, UC, UD, XRC_SEND (an XRC request) or XRC_RECV
	Op          verbs.WROpcode // a request's opcode
	First, Last bool           // where the packet sits in its message
	SE          bool           // solicited event
	SrcQPN      uint32
	DstQPN      uint32
	PSN         uint32
	Imm         uint32 // immediate data, or the rkey a SEND_WITH_INV invalidates
	RemoteAddr  uint64 // RETH or atomic ETH
	RKey        uint32
	DMALen      uint32
	CompareAdd  uint64
	Swap        uint64
	QKey        uint32
	SRQN        uint32        // XRCETH
	NAK         trace.NAKKind // of an acknowledgement: which NAK, or trace.NotNAK for an ACK
	RNRTimer    uint8         // of an RNR NAK
	Orig        uint64        // an atomic acknowledgement's original value
	Payload     []byte

	// The addresses: LIDs, and GIDs when Global (a GRH; on RoCE always).
	SLID, DLID uint16
	Global     bool
	SGID, DGID verbs.GID
	// The GRH's other fields (AV-05).
	TrafficClass, HopLimit uint8
	FlowLabel              uint32
	SL                     uint8
}

// FrameSource returns the source address a frame claims: its LID, and
// its GID when it carries a GRH. ok is false when frame is not a frame
// Fabric.Receive would take. A carrier that knows which station a frame
// really came from checks the claim with it (XFER-27).
func FrameSource(frame []byte) (slid uint16, sgid verbs.GID, global, ok bool) {
	if checkFrame(frame) != nil {
		return 0, verbs.GID{}, false, false
	}
	var p qp.Packet
	decodeFrame(frame[:frameHeader], &p)
	return p.SLID, p.SGID, p.Global, true
}

// AppendFrame appends the frame of p to b, for Fabric.Receive of any
// fabric. A frame carries at most MaxFramePayload bytes of payload; a
// longer Payload, and a kind, transport, opcode or syndrome outside its
// enumeration, make a frame that Receive refuses with EINVAL.
func AppendFrame(b []byte, p *WirePacket) []byte {
	q := qp.Packet{
		Kind: qp.PacketKind(p.Kind), Transport: p.Transport, Op: p.Op, First: p.First, Last: p.Last, SE: p.SE,
		SrcQPN: p.SrcQPN, DstQPN: p.DstQPN, PSN: p.PSN, Imm: p.Imm, RemoteAddr: p.RemoteAddr, RKey: p.RKey,
		DMALen: p.DMALen, CompareAdd: p.CompareAdd, Swap: p.Swap, QKey: p.QKey, SRQN: p.SRQN,
		Syndrome: qp.Syndrome(p.NAK), RNRTimer: p.RNRTimer, Orig: p.Orig, Payload: p.Payload,
		SLID: p.SLID, DLID: p.DLID, Global: p.Global, SGID: p.SGID, DGID: p.DGID, SL: p.SL,
		TClass: p.TrafficClass, HopLimit: p.HopLimit, FlowLabel: p.FlowLabel,
	}
	return appendFrame(b, &q)
}
