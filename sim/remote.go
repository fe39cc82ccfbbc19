package sim

import (
	"encoding/binary"
	"fmt"
	"syscall"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/sim/internal/qp"
	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// Remote carries packets between a fabric and ports that are not on it:
// the ports of fabrics in other processes (the drop-in libibverbs, capi/)
// or, later, on other hosts. It is the fabric's one extension point for a
// wire: set it in Config.Remote, and feed what arrives from the other side
// to Fabric.Receive.
//
// When the engine puts a packet on the wire and no port of the fabric has
// its destination address (LID, or GID when it carries a GRH), it encodes
// the packet as one frame (a packet never carries more than one path MTU
// of payload, so a message is already split by MTU) and calls Send instead
// of dropping it. The carrier maps the address to its own addressing and
// framing; the frame is independent of both.
//
// Semantics are those of a lossy wire: a frame the carrier cannot deliver
// (a full queue, a vanished peer) is a lost packet, which RC recovers by
// retransmission and ends in IBV_WC_RETRY_EXC_ERR when the peer never
// answers, and UC and UD report as loss. Nothing waits for the peer.
type Remote interface {
	// Send carries p to the port at its destination address. It is called
	// with the fabric's lock held, so it must neither block nor call the
	// fabric; p.Frame is valid only during the call (copy it to keep it).
	// An error means the packet is lost now; the trace records its text.
	Send(p RemotePacket) error
}

// RemotePacket is a packet leaving the fabric through Config.Remote.
type RemotePacket struct {
	Device string // the sending device
	Port   uint8  // and its port (1-based)
	// The destination: a LID, or a GID when Global (the packet carries a
	// GRH; always on Ethernet ports).
	DLID   uint16
	DGID   verbs.GID
	Global bool
	DQPN   uint32 // the destination QP number
	Frame  []byte // the encoded packet, for the other side's Fabric.Receive
}

// Receive is the arrival of a frame that a Remote of another fabric sent:
// the packet it encodes is routed to the port of this fabric that has its
// destination address and delivered as any packet on the wire, under the
// fabric's lock, with this fabric's random faults (Config.Faults) applied
// to it (a packet crossing fabrics meets the faults of the receiving one
// only; targeted faults see packets between ports of one fabric only). In
// Background mode the clock first catches up with the wall clock.
//
// A frame that does not decode is EINVAL and changes nothing; a packet for an address no port
// has, or for a port that is down, is dropped (and traced) and Receive
// returns nil, as a wire would. The frame is not kept after the call.
func (f *Fabric) Receive(frame []byte) error {
	if f == nil {
		return errNilFabric("receive")
	}
	if err := checkFrame(frame); err != nil {
		return verr.Wrap("receive", syscall.EINVAL, "", err)
	}
	f.d.Enter(domain.Op{})
	defer f.d.Leave(domain.Op{}, nil)
	e := f.eng
	e.catchUpLocked()
	e.stats.Received++
	p := e.newPacket()
	decodeFrame(frame, p)
	dst := f.route(p)
	switch {
	case dst == nil:
		e.stats.Dropped++
		if e.tracing() {
			e.packetLocked(nil, "wire", "drop", p, "", "no port has the destination address", 0)
		}
		e.freePacket(p)
		return nil
	case dst.attr.State != verbs.PortActive:
		e.stats.Dropped++
		if e.tracing() {
			e.packetLocked(nil, dst.dev.name, "drop", p, "", "the port is down", 0)
		}
		e.freePacket(p)
		return nil
	}
	if e.tracing() {
		e.packetLocked(nil, dst.dev.name, "arrive", p, "", fmt.Sprintf("from lid %#x qp %#x", p.SLID, p.SrcQPN), 0)
	}
	ff := &e.faults
	if ff.Drop > 0 && e.rng.Float64() < ff.Drop {
		e.stats.Dropped++
		if e.tracing() {
			e.packetLocked(nil, dst.dev.name, "drop", p, "", "fault: drop", 0)
		}
		e.freePacket(p)
		return nil
	}
	if ff.Duplicate > 0 && e.rng.Float64() < ff.Duplicate {
		e.stats.Duplicated++
		if e.tracing() {
			e.packetLocked(nil, dst.dev.name, "duplicate", p, "", "fault: duplicate", 0)
		}
		e.arriveLocked(dst, e.clonePacket(p))
	}
	e.arriveLocked(dst, p)
	return nil
}

// sendRemoteLocked hands p, for which no port of the fabric has the
// destination address, to the Remote.
func (e *engine) sendRemoteLocked(d *Device, from *qp.QP, p *qp.Packet) {
	e.frame = appendFrame(e.frame[:0], p)
	rp := RemotePacket{Device: d.name, Port: p.Port, DLID: p.DLID, DGID: p.DGID, Global: p.Global, DQPN: p.DstQPN, Frame: e.frame}
	if e.tracing() {
		to := fmt.Sprintf("to lid %#x qp %#x, off the fabric", p.DLID, p.DstQPN)
		if p.Global {
			to = fmt.Sprintf("to gid %v qp %#x, off the fabric", verbs.GID(p.DGID), p.DstQPN)
		}
		e.packetLocked(from, "", "send", p, "", to, 0)
	}
	if err := e.remote.Send(rp); err != nil {
		e.dropLocked(d, from, p, "remote: "+err.Error(), 0)
		return
	}
	e.stats.Sent++
	e.freePacket(p)
}

// catchUpLocked moves a Background fabric that has a Remote to the wall
// clock's tick, running what is due on the way. Packets from another
// process arrive on their own schedule, so the clock must not lag behind:
// a retry timer armed at a stale tick would fire as soon as the background
// goroutine looked at the wall clock.
func (e *engine) catchUpLocked() {
	if e.bg == nil || e.remote == nil || e.running {
		return
	}
	e.advanceLocked(e.bg.targetLocked(e.now))
}

// The frame of one packet: a fixed header of frameHeader bytes, big-endian,
// then the payload to the end of the frame.
//
//	0  magic "VS", version (2)
//	3  kind, transport, flags (first 1, last 2, SE 4, global 8), opcode,
//	   syndrome, RNR timer code, SL
//	10 source QPN, destination QPN, PSN, immediate (4 bytes each)
//	26 remote address (8), rkey (4), DMA length (4)
//	42 compare-add (8), swap (8), Q_Key (4), original value (8)
//	70 source LID, destination LID (2 each)
//	74 source GID, destination GID (16 each)
//	106 XRC SRQ number (4; the XRCETH of an XRC request, else 0)
//	110 traffic class, hop limit (1 each), flow label (4, 20 bits)
//	116 payload
//
// Version 2 added the SRQ number (and the XRC transports), so that
// ibv_xsrq_pingpong runs between two processes; version 3 the GRH's
// traffic class, hop limit and flow label, which a UD receiver reads
// (AV-05).
const (
	frameVersion = 3
	frameHeader  = 116
	// MaxFramePayload is the largest payload a frame carries: one packet
	// at the largest path MTU (4096 bytes).
	MaxFramePayload = 4096
	// MaxFrame is the size of the largest frame.
	MaxFrame = frameHeader + MaxFramePayload
)

const (
	frameFirst = 1 << iota
	frameLast
	frameSE
	frameGlobal
)

// appendFrame appends the frame of p to b.
func appendFrame(b []byte, p *qp.Packet) []byte {
	var flags byte
	if p.First {
		flags |= frameFirst
	}
	if p.Last {
		flags |= frameLast
	}
	if p.SE {
		flags |= frameSE
	}
	if p.Global {
		flags |= frameGlobal
	}
	be := binary.BigEndian
	b = append(b, 'V', 'S', frameVersion, byte(p.Kind), byte(p.Transport), flags, byte(p.Op), byte(p.Syndrome), p.RNRTimer, p.SL)
	b = be.AppendUint32(b, p.SrcQPN)
	b = be.AppendUint32(b, p.DstQPN)
	b = be.AppendUint32(b, p.PSN)
	b = be.AppendUint32(b, p.Imm)
	b = be.AppendUint64(b, p.RemoteAddr)
	b = be.AppendUint32(b, p.RKey)
	b = be.AppendUint32(b, p.DMALen)
	b = be.AppendUint64(b, p.CompareAdd)
	b = be.AppendUint64(b, p.Swap)
	b = be.AppendUint32(b, p.QKey)
	b = be.AppendUint64(b, p.Orig)
	b = be.AppendUint16(b, p.SLID)
	b = be.AppendUint16(b, p.DLID)
	b = append(b, p.SGID[:]...)
	b = append(b, p.DGID[:]...)
	b = be.AppendUint32(b, p.SRQN)
	b = append(b, p.TClass, p.HopLimit)
	b = be.AppendUint32(b, p.FlowLabel)
	return append(b, p.Payload...)
}

// checkFrame says why frame is not a frame of a packet, or nil. Frames
// come from another process, so every field that names a value of an
// enumeration is checked: the engine never sees a kind, transport or
// syndrome it does not know.
func checkFrame(frame []byte) error {
	switch {
	case len(frame) < frameHeader:
		return fmt.Errorf("frame of %d bytes is shorter than its %d-byte header", len(frame), frameHeader)
	case frame[0] != 'V' || frame[1] != 'S':
		return fmt.Errorf("frame has no magic")
	case frame[2] != frameVersion:
		return fmt.Errorf("frame version %d, want %d", frame[2], frameVersion)
	case len(frame)-frameHeader > MaxFramePayload:
		return fmt.Errorf("frame payload of %d bytes is above %d", len(frame)-frameHeader, MaxFramePayload)
	case qp.PacketKind(frame[3]) > qp.PktAck:
		return fmt.Errorf("unknown packet kind %d", frame[3])
	case !frameTransport(verbs.QPType(frame[4])):
		return fmt.Errorf("unknown transport %d", frame[4])
	case frame[5]&^(frameFirst|frameLast|frameSE|frameGlobal) != 0:
		return fmt.Errorf("unknown flags %#x", frame[5])
	case frame[6] > byte(verbs.WRAtomicWrite):
		return fmt.Errorf("unknown opcode %d", frame[6])
	case qp.Syndrome(frame[7]) > qp.SynRemOp:
		return fmt.Errorf("unknown syndrome %d", frame[7])
	case frame[8] > 31:
		return fmt.Errorf("RNR timer code %d is above 31", frame[8])
	case binary.BigEndian.Uint32(frame[112:]) > 1<<20-1:
		return fmt.Errorf("flow label %#x is wider than 20 bits", binary.BigEndian.Uint32(frame[112:]))
	}
	return nil
}

// frameTransport reports whether t is a transport whose packets cross
// between fabrics: RC, UC, UD and the two XRC types.
func frameTransport(t verbs.QPType) bool {
	switch t {
	case verbs.QPTypeRC, verbs.QPTypeUC, verbs.QPTypeUD, verbs.QPTypeXRCSend, verbs.QPTypeXRCRecv:
		return true
	}
	return false
}

// decodeFrame fills p (a packet from the pool, whose payload buffer it
// reuses) from frame, which checkFrame has accepted.
func decodeFrame(frame []byte, p *qp.Packet) {
	be := binary.BigEndian
	buf := p.Payload[:0]
	*p = qp.Packet{
		Kind:       qp.PacketKind(frame[3]),
		Transport:  verbs.QPType(frame[4]),
		First:      frame[5]&frameFirst != 0,
		Last:       frame[5]&frameLast != 0,
		SE:         frame[5]&frameSE != 0,
		Global:     frame[5]&frameGlobal != 0,
		Op:         verbs.WROpcode(frame[6]),
		Syndrome:   qp.Syndrome(frame[7]),
		RNRTimer:   frame[8],
		SL:         frame[9],
		SrcQPN:     be.Uint32(frame[10:]),
		DstQPN:     be.Uint32(frame[14:]),
		PSN:        be.Uint32(frame[18:]) & (1<<24 - 1),
		Imm:        be.Uint32(frame[22:]),
		RemoteAddr: be.Uint64(frame[26:]),
		RKey:       be.Uint32(frame[34:]),
		DMALen:     be.Uint32(frame[38:]),
		CompareAdd: be.Uint64(frame[42:]),
		Swap:       be.Uint64(frame[50:]),
		QKey:       be.Uint32(frame[58:]),
		Orig:       be.Uint64(frame[62:]),
		SLID:       be.Uint16(frame[70:]),
		DLID:       be.Uint16(frame[72:]),
	}
	copy(p.SGID[:], frame[74:90])
	copy(p.DGID[:], frame[90:106])
	p.SRQN = be.Uint32(frame[106:])
	p.TClass, p.HopLimit, p.FlowLabel = frame[110], frame[111], be.Uint32(frame[112:])
	p.Payload = append(buf, frame[frameHeader:]...)
	// Port is the sending port of the other fabric; it means nothing here.
}
