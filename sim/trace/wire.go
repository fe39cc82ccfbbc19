package trace

import (
	"strconv"

	"github.com/verbsim/verbsim/verbs"
)

// PacketKind says what a packet on the wire carries.
type PacketKind uint8

// The packet kinds. Requests flow from requester to responder, the rest
// back.
const (
	PacketSend      PacketKind = iota // SEND, SEND_WITH_IMM, SEND_WITH_INV
	PacketWrite                       // RDMA WRITE, RDMA WRITE WITH IMMEDIATE
	PacketReadReq                     // RDMA READ request
	PacketAtomic                      // CMP_AND_SWP, FETCH_AND_ADD, ATOMIC_WRITE request
	PacketReadResp                    // RDMA READ response
	PacketAtomicAck                   // atomic response (ATOMIC_WRITE: without a value)
	PacketAck                         // ACK, or a NAK (Packet.NAK)
	numPacketKinds
)

var packetKindNames = [numPacketKinds]string{"SEND", "WRITE", "READ_REQ", "ATOMIC", "READ_RESP", "ATOMIC_ACK", "ACK"}

// String names the kind: SEND, WRITE, READ_REQ, ATOMIC, READ_RESP,
// ATOMIC_ACK or ACK.
func (k PacketKind) String() string { return enumName(k, packetKindNames[:], "PacketKind") }

// NAKKind is what a NAK says (the syndrome of its AETH): why a responder
// refused a request.
type NAKKind uint8

// The NAK kinds. NotNAK, the zero value, is an ACK or no acknowledgement
// at all.
const (
	NotNAK       NAKKind = iota // not a NAK
	NAKRNR                      // receiver not ready: no receive WR (XFER-07); the requester waits and retries
	NAKSeqErr                   // PSN sequence error: the requester resends from the PSN expected
	NAKInvReq                   // invalid request: the requester completes with IBV_WC_REM_INV_REQ_ERR
	NAKRemAccess                // remote access error: IBV_WC_REM_ACCESS_ERR
	NAKRemOp                    // remote operational error: IBV_WC_REM_OP_ERR
	numNAKKinds
)

// The names of the NAKs, and "ACK" for NotNAK: an acknowledgement packet
// is described by its syndrome.
var nakNames = [numNAKKinds]string{"ACK", "RNR_NAK", "NAK_SEQ", "NAK_INV_REQ", "NAK_REM_ACCESS", "NAK_REM_OP"}

// String names the NAK as the trace does: RNR_NAK, NAK_SEQ, NAK_INV_REQ,
// NAK_REM_ACCESS or NAK_REM_OP; ACK for NotNAK.
func (k NAKKind) String() string { return enumName(k, nakNames[:], "NAKKind") }

// TimerKind names the timers of a QP.
type TimerKind uint8

// The timers. TimerNone, the zero value, is no timer.
const (
	TimerNone TimerKind = iota
	TimerACK            // the local ACK timeout: no answer in time, retransmit (XFER-10)
	TimerRNR            // the wait after an RNR NAK before the retry (XFER-07, XFER-08)
	numTimerKinds
)

var timerNames = [numTimerKinds]string{"none", "ACK timeout", "RNR wait"}

// String names the timer: "ACK timeout" or "RNR wait".
func (k TimerKind) String() string { return enumName(k, timerNames[:], "TimerKind") }

// Packet describes a packet on the wire: its transport and kind, its PSN,
// its payload length and place in its message, and for an acknowledgement
// whether it is a NAK. A record of a responder's decision to NAK carries a
// Packet with only NAK set (Transport 0).
type Packet struct {
	Transport   verbs.QPType // RC, UC, UD, XRC_SEND
	Kind        PacketKind
	PSN         uint32
	Len         int  // payload bytes (SEND, WRITE and READ_RESP)
	First, Last bool // where it sits in its message (SEND, WRITE and READ_RESP)
	NAK         NAKKind
}

// String renders the packet as the trace shows it: "RC SEND psn=0 len=64
// first last", "RC ACK psn=3", "RC RNR_NAK psn=0".
func (p *Packet) String() string {
	b := make([]byte, 0, 40)
	b = append(b, p.Transport.String()...)
	b = append(b, ' ')
	if p.Kind == PacketAck {
		b = append(b, p.NAK.String()...)
	} else {
		b = append(b, p.Kind.String()...)
	}
	b = append(b, " psn="...)
	b = strconv.AppendUint(b, uint64(p.PSN), 10)
	switch p.Kind {
	case PacketSend, PacketWrite, PacketReadResp:
		b = append(b, " len="...)
		b = strconv.AppendInt(b, int64(p.Len), 10)
		if p.First {
			b = append(b, " first"...)
		}
		if p.Last {
			b = append(b, " last"...)
		}
	}
	return string(b)
}
