package qp

import (
	"strings"

	"github.com/verbsim/verbsim/sim/trace"
	"github.com/verbsim/verbsim/verbs"
)

// This file holds what the transport side of a QP shares with the engine
// that drives it (package sim): the packet, the timer, the Host interface
// through which a QP reaches memory, addresses, the wire and the clock, and
// the transport readings of a profile. requester.go, completer.go and
// responder.go hold the protocol.

// Host is what a QP needs of its adapter and fabric to move data. Package
// sim implements it; a QP created without one keeps its work requests
// queued and never executes them (the local HCA alone).
//
// Every method is called with the domain lock held.
type Host interface {
	Memory
	// LocalLocked resolves a local scatter/gather element of a QP in pd:
	// the bytes it names, or false when the lkey does not name a live MR of
	// pd that covers the range and grants LOCAL_WRITE where write is set
	// (MR-03, MR-04, MR-08). A zero-length element always resolves.
	LocalLocked(pd any, s verbs.SGE, write bool) ([]byte, bool)
	// RemoteLocked resolves the target of an incoming RDMA or atomic
	// request at responder q in pd: the n bytes at addr, or false when rkey
	// does not name a live MR of pd, or a memory window of pd bound for q,
	// that covers them and grants need (XFER-14 level 2, MW-06).
	RemoteLocked(q *QP, pd any, rkey uint32, addr uint64, n uint32, need verbs.AccessFlags) ([]byte, bool)
	// LocalMemLocked and RemoteMemLocked are LocalLocked and RemoteLocked
	// for memory of any MR, this process's or another's (Mem, Extern).
	// LocalLocked and RemoteLocked resolve a non-empty range of an MR over
	// another process's memory to no bytes (and true); the transport then
	// asks these for it. A fabric of a Go program never has such MRs.
	LocalMemLocked(pd any, s verbs.SGE, write bool) (Mem, bool)
	RemoteMemLocked(q *QP, pd any, rkey uint32, addr uint64, n uint32, need verbs.AccessFlags) (Mem, bool)
	// InvalidateLocked invalidates rkey in pd (SEND_WITH_INV, XFER-29;
	// LOCAL_INV, MW-07), reporting whether it named a live MR or a bound
	// type 2 memory window of pd.
	InvalidateLocked(pd any, rkey uint32) bool
	// BindLocked executes a BIND_MW work request of q (MW-04, MW-05) and
	// returns its status: Success or MWBindErr.
	BindLocked(q *QP, wr *verbs.SendWR) verbs.WCStatus
	// BindKeyLocked prepares ibv_bind_mw on mw: it returns the rkey the
	// type 1 window will have once bound (its rkey with the next tag), or
	// an error when mw is not a live type 1 window of this device.
	BindKeyLocked(mw any) (uint32, error)
	// AHLocked returns the address vector and PD of a UD send's AH.
	AHLocked(ah any) (attr verbs.AHAttr, pd any, ok bool)
	// CheckAHLocked returns EINVAL when ah cannot address a UD send posted
	// on a QP in pd (AV-04): it is no address handle of this simulator, or
	// of another fabric or device context, or it has been destroyed. An AH
	// of another PD of the QP's context passes: that request fails as it
	// executes (PD-04).
	CheckAHLocked(pd, ah any) error
	// PortLocked describes local port n (1-based).
	PortLocked(n uint8) PortInfo
	// NewPacketLocked returns a zeroed packet whose Payload is empty with
	// room for the largest MTU.
	NewPacketLocked() *Packet
	// SendLocked puts p on the wire from q's port. The engine owns p from
	// then on.
	SendLocked(from *QP, p *Packet)
	// ScheduleLocked asks for q.RunLocked to be called: the requester has
	// work to start.
	ScheduleLocked(q *QP)
	// ArmLocked starts (or restarts) t to fire after the given number of
	// ticks; StopLocked stops it. A fired timer calls its QP's
	// TimerLocked.
	ArmLocked(t *Timer, after uint64)
	StopLocked(t *Timer)
}

// XRCHost is implemented by a Host whose device has XRC SRQs: an XRC_RECV
// QP finds the SRQ a request names through it (XRC-10).
type XRCHost interface {
	// XRCSRQLocked returns the live XRC SRQ numbered num on the device,
	// or nil.
	XRCSRQLocked(num uint32) *SRQ
}

// PortInfo is what the transport needs of a local port.
type PortInfo struct {
	ActiveMTU verbs.MTU // the MTU of UD messages (XFER-20)
	MaxMsgSz  uint32    // max_msg_sz (XFER-23)
	Up        bool      // the port is ACTIVE
	Ethernet  bool      // the link layer is Ethernet: RoCE v2 (AV-05)
}

// TimerKind names the timers of a QP.
type TimerKind uint8

// The timers of an RC QP.
const (
	TimerRetry TimerKind = iota // the local ACK timeout (XFER-10)
	TimerRNR                    // the wait after an RNR NAK (XFER-07, XFER-08)
)

// Timer is one timer of a QP, or of another part of the engine (Owner). The
// engine keeps armed timers ordered by (At, Seq); Index is the engine's
// bookkeeping (its heap position, -1 when the timer is not armed). A QP
// owns its timers, so arming one allocates nothing.
type Timer struct {
	QP *QP
	// Owner fires a timer that belongs to no QP (QP is nil): the
	// connection manager's retransmission and timewait timers.
	Owner TimerOwner
	Kind  TimerKind
	At    uint64 // the tick it fires at
	Seq   uint64 // tie-break among timers of the same tick: arming order
	Index int    // position in the engine's heap; -1 when stopped
}

// TimerOwner is the owner of a timer that belongs to no QP.
type TimerOwner interface {
	// FireLocked is called, under the domain lock, when the timer fires.
	FireLocked()
	// TraceName names the timer's owner in the trace.
	TraceName() string
}

// PacketKind is what a packet carries.
type PacketKind uint8

// The packet kinds. Requests flow from requester to responder, the rest
// back.
const (
	PktSend      PacketKind = iota // SEND, SEND_WITH_IMM, SEND_WITH_INV
	PktWrite                       // RDMA WRITE and WRITE_WITH_IMM
	PktReadReq                     // RDMA READ request
	PktAtomic                      // CMP_AND_SWP, FETCH_AND_ADD
	PktReadResp                    // RDMA READ response
	PktAtomicAck                   // atomic response, with the original value
	PktAck                         // ACK or NAK (Syndrome)
)

var pktNames = [...]string{"SEND", "WRITE", "READ_REQ", "ATOMIC", "READ_RESP", "ATOMIC_ACK", "ACK"}

// String names the kind.
func (k PacketKind) String() string {
	if int(k) < len(pktNames) {
		return pktNames[k]
	}
	return "PKT?"
}

// Syndrome is the meaning of an ACK packet (the AETH syndrome).
type Syndrome uint8

// The syndromes.
const (
	SynACK       Syndrome = iota // positive acknowledgement
	SynRNR                       // receiver not ready (XFER-07)
	SynSeqErr                    // PSN sequence error: resend from PSN
	SynInvReq                    // invalid request → REM_INV_REQ_ERR
	SynRemAccess                 // remote access error → REM_ACCESS_ERR
	SynRemOp                     // remote operational error → REM_OP_ERR
	numSyndromes
)

var synNames = [numSyndromes]string{"ACK", "RNR_NAK", "NAK_SEQ", "NAK_INV_REQ", "NAK_REM_ACCESS", "NAK_REM_OP"}

// String names the syndrome.
func (s Syndrome) String() string {
	if s < numSyndromes {
		return synNames[s]
	}
	return "SYN?"
}

// Packet is one packet on the wire. The engine routes it by the destination
// address and QPN; the rest is the transport's headers and payload.
type Packet struct {
	Kind        PacketKind
	Transport   verbs.QPType
	First, Last bool           // position of the packet in its message
	Op          verbs.WROpcode // the request's opcode (requests)
	SrcQPN      uint32
	DstQPN      uint32
	PSN         uint32
	SE          bool   // solicited event (NOTIFY-06)
	Imm         uint32 // immediate data, or the rkey to invalidate (SEND_WITH_INV)
	RemoteAddr  uint64 // RETH / atomic ETH
	RKey        uint32
	DMALen      uint32 // length of the whole RDMA operation
	CompareAdd  uint64
	Swap        uint64
	QKey        uint32   // UD
	SRQN        uint32   // XRC: the XRC SRQ a request is for (XRCETH)
	Syndrome    Syndrome // PktAck
	RNRTimer    uint8    // the responder's min_rnr_timer code, in an RNR NAK
	Orig        uint64   // PktAtomicAck: the value found at the target
	Payload     []byte

	// Addressing. The sender fills Port, the destination and the GRH
	// fields of its address vector; the engine fills the source address
	// from the sending port (SGID from the GID table entry SGIDIndex).
	Port   uint8 // sending port (1-based)
	DLID   uint16
	DGID   [16]byte
	Global bool // a GRH is present
	SL     uint8
	SLID   uint16
	SGID   [16]byte
	// The GRH's other fields, from the sender's address vector (AV-05):
	// the traffic class, hop limit and 20-bit flow label.
	SGIDIndex uint8
	TClass    uint8
	HopLimit  uint8
	FlowLabel uint32
}

// reply prepares p as q's response to req, addressed back to its sender,
// with the GRH fields of q's own path (AV-05).
func (p *Packet) reply(req *Packet, q *QP, kind PacketKind) {
	p.Kind, p.Transport = kind, req.Transport
	p.SrcQPN, p.DstQPN = req.DstQPN, req.SrcQPN
	p.Port, p.DLID, p.DGID, p.Global, p.SL = q.attr.PortNum, req.SLID, req.SGID, req.Global, req.SL
	if av := &q.attr.AHAttr; av.IsGlobal {
		q.grhLocked(p, av)
	}
}

// grhLocked gives p the GRH fields of address vector av (AV-05): the
// source GID index, traffic class, hop limit and flow label, the last 0
// when the profile's adapter sends none (Readings.NoFlowLabel).
func (q *QP) grhLocked(p *Packet, av *verbs.AHAttr) {
	g := &av.GRH
	p.SGIDIndex, p.TClass, p.HopLimit, p.FlowLabel = g.SGIDIndex, g.TrafficClass, g.HopLimit, g.FlowLabel&flowLabelMask
	if p.FlowLabel != 0 {
		q.cfg.consult(verbs.ReadingNoFlowLabel) // carried or zeroed, by the reading
		if q.cfg.Transport.NoFlowLabel {
			p.FlowLabel = 0
		}
	}
}

// flowLabelMask keeps the 20 bits of a flow label.
const flowLabelMask = 1<<20 - 1

// PSNs are 24-bit sequence numbers that wrap.
const psnMask = 1<<24 - 1

func psnAdd(a uint32, n uint32) uint32 { return (a + n) & psnMask }

// psnDiff returns a - b as a signed 24-bit distance.
func psnDiff(a, b uint32) int32 { return int32(a-b) << 8 >> 8 }

// TimeoutTicks is the RC local ACK timeout of code t in ticks (one tick is
// one nanosecond): 4.096 µs × 2^t, and 0 for t = 0, which waits forever
// (XFER-10).
func TimeoutTicks(t uint8) uint64 { return uint64(verbs.ACKTimeout(t)) }

// rnrTenMicros are the RNR NAK delays of min_rnr_timer codes 0..31 in
// units of 10 µs; code 0 is the largest (XFER-08).
var rnrTenMicros = [32]uint32{
	65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192,
	256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152,
}

// RNRTicks is the delay an RNR NAK carrying min_rnr_timer code c asks for,
// in ticks (nanoseconds): 0.01 ms for code 1 up to 491.52 ms for 31, and
// 655.36 ms for 0 (XFER-08).
func RNRTicks(c uint8) uint64 { return uint64(rnrTenMicros[c&31]) * 10_000 }

// TransportPolicy holds the readings of the transport rules on which
// providers disagree. The zero value is the man-page reading (verbsim's
// default); RXETransport returns soft-RoCE's.
type TransportPolicy struct {
	// RecvTooSmallRemInvReq: the responder of an RC SEND that does not fit
	// its receive WR completes it with REM_INV_REQ_ERR (XFER-05 B, rxe);
	// false: LOC_LEN_ERR (A).
	RecvTooSmallRemInvReq bool
	// RecvProtQPOp: a bad lkey in a posted receive completes it with
	// LOC_QP_OP_ERR (XFER-16 B, rxe); false: LOC_PROT_ERR.
	RecvProtQPOp bool
	// InfiniteRetry7: retry_cnt = 7 retries without limit (XFER-10 B,
	// rxe); false: exactly seven retries.
	InfiniteRetry7 bool
	// NoQPEvents: no QP_REQ_ERR, QP_ACCESS_ERR or COMM_EST (ASYNC-11,
	// rxe); false: the responder raises them.
	NoQPEvents bool
	// AlwaysSQDrained: SQ_DRAINED is raised whether or not it was asked
	// for (ASYNC-13, rxe).
	AlwaysSQDrained bool
	// SendWCImm: send-side completions of *_WITH_IMM requests carry
	// IBV_WC_WITH_IMM (WC-13, rxe).
	SendWCImm bool
	// NoSQE: a UD or UC send error takes the QP to ERR rather than SQE
	// (FLUSH-10 B, rxe).
	NoSQE bool
	// OverrunSendIgnored: a completion of the send side lost to a CQ
	// overrun leaves the QP alone; only the receive side goes to ERR
	// (CQ-24 B, rxe). False: either side moves the QP to ERR (A).
	OverrunSendIgnored bool
	// WriteImmRKeyRemAccess: an RC RDMA WRITE WITH IMMEDIATE whose rkey
	// check fails completes the responder's receive WR with REM_ACCESS_ERR
	// when the message is a single packet, and flushes it otherwise, since
	// rxe takes the receive WR only at the packet that carries the
	// immediate (XFER-30 B, rxe). False: the message consumes the receive
	// WR at its first packet and completes it with LOC_ACCESS_ERR (A).
	WriteImmRKeyRemAccess bool
	// LateLocalCheck: the local scatter list of an RDMA READ or an atomic
	// is checked only when the response arrives, as soft-RoCE's completer
	// does: the remote's error wins over a bad local SGE, and a remote
	// atomic executes before the local error is found (XFER-31 B, rxe).
	// False: every local SGE is checked before the request is sent (A).
	LateLocalCheck bool
	// SendInvErrAcked: an RC SEND_WITH_INV whose rkey cannot be
	// invalidated is acknowledged; the responder alone fails, its receive
	// WR with REM_INV_REQ_ERR, and goes to ERR (XFER-29 B, rxe). False: a
	// NAK invalid request; the receive WR completes with LOC_QP_OP_ERR (A).
	SendInvErrAcked bool
	// SRQRecvQPPD: a receive WR taken from an SRQ is checked against the
	// PD of the QP the message arrived on, as rxe does (SRQ-12 B). False:
	// against the SRQ's own PD, as the IBTA has it (A).
	SRQRecvQPPD bool
	// ResetPurgesCQ: RESET and destroy delete the QP's completions still
	// in its CQs (CQ-26 B, mlx5). False: they stay (A, rxe).
	ResetPurgesCQ bool
	// NoFlowLabel: every GRH leaves with flow label 0, whatever the
	// address vector says (AV-05 B, rxe). False: the vector's (A).
	NoFlowLabel bool
}

// RXETransport returns the transport readings of Linux soft-RoCE (spec/catalogue.md
// §12).
func RXETransport() TransportPolicy {
	return TransportPolicy{
		RecvTooSmallRemInvReq: true, RecvProtQPOp: true, InfiniteRetry7: true, NoQPEvents: true,
		AlwaysSQDrained: true, SendWCImm: true, NoSQE: true, OverrunSendIgnored: true,
		WriteImmRKeyRemAccess: true, LateLocalCheck: true, SRQRecvQPPD: true,
		SendInvErrAcked: true, NoFlowLabel: true,
	}
}

// String lists the readings that differ from the man pages, comma
// separated, or returns "man-pages" for the zero value.
func (p TransportPolicy) String() string {
	var s []string
	add := func(on bool, name string) {
		if on {
			s = append(s, name)
		}
	}
	add(p.RecvTooSmallRemInvReq, "recv-too-small=REM_INV_REQ")
	add(p.RecvProtQPOp, "recv-bad-lkey=LOC_QP_OP")
	add(p.InfiniteRetry7, "retry7=infinite")
	add(p.NoQPEvents, "qp-events=none")
	add(p.AlwaysSQDrained, "sq-drained=always")
	add(p.SendWCImm, "send-wc-imm")
	add(p.NoSQE, "sqe=none")
	add(p.OverrunSendIgnored, "send-overrun=ignored")
	add(p.WriteImmRKeyRemAccess, "write-imm-bad-rkey=REM_ACCESS")
	add(p.LateLocalCheck, "read-atomic-local-check=late")
	add(p.SendInvErrAcked, "send-inv-bad-rkey=acked")
	add(p.SRQRecvQPPD, "srq-recv-pd=qp")
	add(p.ResetPurgesCQ, "reset-purges-cq")
	add(p.NoFlowLabel, "flow-label=0")
	if len(s) == 0 {
		return "man-pages"
	}
	return strings.Join(s, ",")
}

// NAK is the trace's name of the syndrome: NotNAK for an ACK.
func (s Syndrome) NAK() trace.NAKKind { return nakOf(s) }
