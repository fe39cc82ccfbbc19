package verbs

import "strconv"

// WROpcode is the operation of a send work request, enum ibv_wr_opcode.
//
// It is a different enumeration from Opcode, with different numbers
// (WC-07): WRSend is 2 here while the WCSend completion is 0. Map between the
// two with SendCompletion and RecvCompletion.
type WROpcode uint32

// Work-request opcodes with their verbs.h values (WC-07). Values 12..14 are
// unassigned.
const (
	WRRDMAWrite         WROpcode = 0  // IBV_WR_RDMA_WRITE
	WRRDMAWriteWithImm  WROpcode = 1  // IBV_WR_RDMA_WRITE_WITH_IMM
	WRSend              WROpcode = 2  // IBV_WR_SEND
	WRSendWithImm       WROpcode = 3  // IBV_WR_SEND_WITH_IMM
	WRRDMARead          WROpcode = 4  // IBV_WR_RDMA_READ
	WRAtomicCmpAndSwp   WROpcode = 5  // IBV_WR_ATOMIC_CMP_AND_SWP
	WRAtomicFetchAndAdd WROpcode = 6  // IBV_WR_ATOMIC_FETCH_AND_ADD
	WRLocalInv          WROpcode = 7  // IBV_WR_LOCAL_INV
	WRBindMW            WROpcode = 8  // IBV_WR_BIND_MW
	WRSendWithInv       WROpcode = 9  // IBV_WR_SEND_WITH_INV
	WRTSO               WROpcode = 10 // IBV_WR_TSO
	WRDriver1           WROpcode = 11 // IBV_WR_DRIVER1: provider-specific operation
	WRAtomicWrite       WROpcode = 15 // IBV_WR_ATOMIC_WRITE
)

// wrInfo describes each WR opcode: its C name and the completion opcode
// its requester sees (WC-04).
// An array, not a map: SendCompletion runs once per send completion.
var wrInfo = [...]struct {
	name string
	send WCOpcode
}{
	WRRDMAWrite:         {"IBV_WR_RDMA_WRITE", WCRDMAWrite},
	WRRDMAWriteWithImm:  {"IBV_WR_RDMA_WRITE_WITH_IMM", WCRDMAWrite},
	WRSend:              {"IBV_WR_SEND", WCSend},
	WRSendWithImm:       {"IBV_WR_SEND_WITH_IMM", WCSend},
	WRRDMARead:          {"IBV_WR_RDMA_READ", WCRDMARead},
	WRAtomicCmpAndSwp:   {"IBV_WR_ATOMIC_CMP_AND_SWP", WCCompSwap},
	WRAtomicFetchAndAdd: {"IBV_WR_ATOMIC_FETCH_AND_ADD", WCFetchAdd},
	WRLocalInv:          {"IBV_WR_LOCAL_INV", WCLocalInv},
	WRBindMW:            {"IBV_WR_BIND_MW", WCBindMW},
	WRSendWithInv:       {"IBV_WR_SEND_WITH_INV", WCSend},
	WRTSO:               {"IBV_WR_TSO", WCTSO},
	WRDriver1:           {"IBV_WR_DRIVER1", WCDriver1},
	WRAtomicWrite:       {"IBV_WR_ATOMIC_WRITE", WCAtomicWrite},
}

// Name returns the C enumerator name of o, such as "IBV_WR_SEND", or "" if
// o is not a value of enum ibv_wr_opcode.
func (o WROpcode) Name() string {
	if int(o) < len(wrInfo) {
		return wrInfo[o].name
	}
	return ""
}

// String returns the C enumerator name of o, or "IBV_WR_OPCODE(12)" style
// for an unassigned value (libibverbs has no string function for these).
func (o WROpcode) String() string {
	if n := o.Name(); n != "" {
		return n
	}
	return "IBV_WR_OPCODE(" + strconv.FormatUint(uint64(o), 10) + ")"
}

// SendCompletion returns the opcode of the WC the requester gets for a WR
// with opcode o (WC-04), and false for an unassigned o.
//
// The three SEND kinds all complete as WCSend and both RDMA WRITE kinds as
// WCRDMAWrite; the immediate or invalidation is visible only at the
// responder (rxe also flags WCWithImm on the requester's WC; see WC-13). Two pairs are not in WC-04's list and come from elsewhere:
// WRAtomicWrite completes as WCAtomicWrite (the enumerators pair up in
// verbs.h, and rxe maps them so), and WRDriver1 completes as WCDriver1
// (man:ibv_poll_cq NOTES: IBV_WC_DRIVER1 is the answer to IBV_WR_DRIVER1).
// Only the opcode is mapped: an error WC's opcode is undefined (WC-03).
func (o WROpcode) SendCompletion() (WCOpcode, bool) {
	if int(o) >= len(wrInfo) || wrInfo[o].name == "" {
		return 0, false
	}
	return wrInfo[o].send, true
}

// RecvCompletion returns the opcode of the WC the responder gets when a WR
// with opcode o arrives, and false when the responder gets no WC at all
// (WC-05). SEND, SEND_WITH_IMM and SEND_WITH_INV consume a receive WR and
// complete as WCRecv; RDMA_WRITE_WITH_IMM consumes one and completes as
// WCRecvRDMAWithImm. Plain RDMA WRITE, RDMA READ, the atomics, and the local
// operations (LOCAL_INV, BIND_MW, WCTSO, DRIVER1) produce nothing at the
// responder.
func (o WROpcode) RecvCompletion() (WCOpcode, bool) {
	switch o {
	case WRSend, WRSendWithImm, WRSendWithInv:
		return WCRecv, true
	case WRRDMAWriteWithImm:
		return WCRecvRDMAWithImm, true
	}
	return 0, false
}

// HasImm reports whether o carries immediate data: WRSendWithImm or
// WRRDMAWriteWithImm. The responder's WC then has WCWithImm set (WC-09).
func (o WROpcode) HasImm() bool { return o == WRSendWithImm || o == WRRDMAWriteWithImm }

// IsSend reports whether o is one of the three SEND kinds (WRSend,
// WRSendWithImm, WRSendWithInv), the opcodes that consume a receive WR and
// complete as WCRecv at the responder.
func (o WROpcode) IsSend() bool { return o == WRSend || o == WRSendWithImm || o == WRSendWithInv }
