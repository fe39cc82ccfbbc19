package verbs

import (
	"strconv"
	"strings"
)

// WCOpcode is the operation a work completion reports, enum ibv_wc_opcode.
//
// It is a different enumeration from WROpcode, with different numbers
// (WC-07): convert with WROpcode.SendCompletion or WROpcode.RecvCompletion,
// never with a type conversion.
type WCOpcode uint32

// Work-completion opcodes with their verbs.h values (WC-07). Value 8 is
// unassigned.
const (
	WCSend      WCOpcode = 0 // IBV_WC_SEND: send side of SEND, SEND_WITH_IMM, SEND_WITH_INV
	WCRDMAWrite WCOpcode = 1 // IBV_WC_RDMA_WRITE: send side of RDMA_WRITE and RDMA_WRITE_WITH_IMM
	WCRDMARead  WCOpcode = 2 // IBV_WC_RDMA_READ
	WCCompSwap  WCOpcode = 3 // IBV_WC_COMP_SWAP: ATOMIC_CMP_AND_SWP
	WCFetchAdd  WCOpcode = 4 // IBV_WC_FETCH_ADD: ATOMIC_FETCH_AND_ADD
	WCBindMW    WCOpcode = 5 // IBV_WC_BIND_MW
	WCLocalInv  WCOpcode = 6 // IBV_WC_LOCAL_INV
	WCTSO       WCOpcode = 7 // IBV_WC_TSO
	// WCAtomicWrite is IBV_WC_ATOMIC_WRITE, the send side of ATOMIC_WRITE.
	WCAtomicWrite WCOpcode = 9

	// WCRecv is IBV_WC_RECV (1<<7): a receive WR consumed by an incoming SEND,
	// SEND_WITH_IMM or SEND_WITH_INV. Its bit is what IsRecv tests.
	WCRecv WCOpcode = 128
	// WCRecvRDMAWithImm is IBV_WC_RECV_RDMA_WITH_IMM: a receive WR consumed by
	// an incoming RDMA_WRITE_WITH_IMM.
	WCRecvRDMAWithImm WCOpcode = 129

	// The tag-matching and driver opcodes below are listed so that every
	// ABI value has a name; verbsim never emits them (WC-06).

	WCTMAdd   WCOpcode = 130 // IBV_WC_TM_ADD
	WCTMDel   WCOpcode = 131 // IBV_WC_TM_DEL
	WCTMSync  WCOpcode = 132 // IBV_WC_TM_SYNC
	WCTMRecv  WCOpcode = 133 // IBV_WC_TM_RECV
	WCTMNoTag WCOpcode = 134 // IBV_WC_TM_NO_TAG
	// WCDriver1 is IBV_WC_DRIVER1, which man:ibv_poll_cq says answers an
	// IBV_WR_DRIVER1 work request: a send-side completion despite having
	// the WCRecv bit set.
	WCDriver1 WCOpcode = 135
	WCDriver2 WCOpcode = 136 // IBV_WC_DRIVER2: provider-specific
	WCDriver3 WCOpcode = 137 // IBV_WC_DRIVER3: provider-specific
)

var opcodeNames = map[WCOpcode]string{
	WCSend:            "IBV_WC_SEND",
	WCRDMAWrite:       "IBV_WC_RDMA_WRITE",
	WCRDMARead:        "IBV_WC_RDMA_READ",
	WCCompSwap:        "IBV_WC_COMP_SWAP",
	WCFetchAdd:        "IBV_WC_FETCH_ADD",
	WCBindMW:          "IBV_WC_BIND_MW",
	WCLocalInv:        "IBV_WC_LOCAL_INV",
	WCTSO:             "IBV_WC_TSO",
	WCAtomicWrite:     "IBV_WC_ATOMIC_WRITE",
	WCRecv:            "IBV_WC_RECV",
	WCRecvRDMAWithImm: "IBV_WC_RECV_RDMA_WITH_IMM",
	WCTMAdd:           "IBV_WC_TM_ADD",
	WCTMDel:           "IBV_WC_TM_DEL",
	WCTMSync:          "IBV_WC_TM_SYNC",
	WCTMRecv:          "IBV_WC_TM_RECV",
	WCTMNoTag:         "IBV_WC_TM_NO_TAG",
	WCDriver1:         "IBV_WC_DRIVER1",
	WCDriver2:         "IBV_WC_DRIVER2",
	WCDriver3:         "IBV_WC_DRIVER3",
}

// Valid reports whether o is a value of enum ibv_wc_opcode: 0 to 7, 9, or
// 128 to 137. It is a few comparisons, cheap enough for every completion.
func (o WCOpcode) Valid() bool {
	return o <= WCTSO || o == WCAtomicWrite || o >= WCRecv && o <= WCDriver3
}

// Name returns the C enumerator name of o, such as "IBV_WC_RECV", or "" if
// o is not a value of enum ibv_wc_opcode.
func (o WCOpcode) Name() string { return opcodeNames[o] }

// String returns the C enumerator name of o. libibverbs has no string
// function for WC opcodes, so an unassigned value is rendered in the form
// "IBV_WC_OPCODE(8)".
func (o WCOpcode) String() string {
	if n, ok := opcodeNames[o]; ok {
		return n
	}
	return "IBV_WC_OPCODE(" + strconv.FormatUint(uint64(o), 10) + ")"
}

// IsRecv reports whether o has the WCRecv bit (128) set: o&WCRecv != 0. This is
// the test verbs.h suggests for spotting receive completions.
//
// It is only exact for the classic opcodes. The tag-matching opcodes
// (WCTMAdd..WCTMNoTag) and WCDriver1..WCDriver3 also have bit 7 set, so IsRecv is
// true for them too, even though WCDriver1 completes a send-side WR (WC-06).
// Use IsClassicRecv to ask "did this consume a posted receive WR?". On an
// error WC the opcode itself is undefined (WC-03), so neither answer means
// anything there.
func (o WCOpcode) IsRecv() bool { return o&WCRecv != 0 }

// IsClassicRecv reports whether o is WCRecv or WCRecvRDMAWithImm, the two
// opcodes that report a consumed receive WR.
func (o WCOpcode) IsClassicRecv() bool { return o == WCRecv || o == WCRecvRDMAWithImm }

// WCFlags is the wc_flags bit set of a work completion, enum ibv_wc_flags
// (WC-08). The bits are only meaningful on a successful WC (WC-03).
type WCFlags uint32

// Work-completion flag bits with their verbs.h values (WC-08).
const (
	// WCGRH: the first 40 bytes of the receive buffer hold a Global Routing
	// Header (UD receives; always on RoCE).
	WCGRH WCFlags = 1 << 0
	// WCWithImm: WC.ImmData holds immediate data. Never set together with
	// WCWithInv.
	WCWithImm WCFlags = 1 << 1
	// WCIPCSumOK: the device verified the IPv4 header and TCP/UDP checksums.
	WCIPCSumOK WCFlags = 1 << 2
	// WCWithInv: WC.InvalidatedRkey holds the rkey a SEND_WITH_INV
	// invalidated. Never set together with WCWithImm.
	WCWithInv WCFlags = 1 << 3
	// WCTMSyncReq is IBV_WC_TM_SYNC_REQ (tag matching; never set by the
	// simulator).
	WCTMSyncReq WCFlags = 1 << 4
	// WCTMMatch is IBV_WC_TM_MATCH (tag matching; never set by the
	// simulator).
	WCTMMatch WCFlags = 1 << 5
	// WCTMDataValid is IBV_WC_TM_DATA_VALID (tag matching; never set by the
	// simulator).
	WCTMDataValid WCFlags = 1 << 6
)

// wcFlagNames is indexed by bit number.
var wcFlagNames = [...]string{
	"GRH", "WITH_IMM", "IP_CSUM_OK", "WITH_INV",
	"TM_SYNC_REQ", "TM_MATCH", "TM_DATA_VALID",
}

// knownWCFlags is the union of all defined bits.
const knownWCFlags = WCFlags(1<<len(wcFlagNames) - 1)

// Valid reports whether f has only bits of enum ibv_wc_flags.
func (f WCFlags) Valid() bool { return f&^knownWCFlags == 0 }

// Name returns the C enumerator name when f is exactly one defined bit
// (Name of WCWithImm is "IBV_WC_WITH_IMM"), and "" otherwise.
func (f WCFlags) Name() string {
	for i, n := range wcFlagNames {
		if f == 1<<i {
			return "IBV_WC_" + n
		}
	}
	return ""
}

// String renders f as its bit names without the IBV_WC_ prefix, in bit
// order and joined by "|", such as "WCGRH|WITH_IMM". Undefined bits are
// appended as one hexadecimal number ("WITH_IMM|0x100"); zero is "0".
func (f WCFlags) String() string {
	if f == 0 {
		return "0"
	}
	var parts []string
	for i, n := range wcFlagNames {
		if f&(1<<i) != 0 {
			parts = append(parts, n)
		}
	}
	if rest := f &^ knownWCFlags; rest != 0 {
		parts = append(parts, "0x"+strconv.FormatUint(uint64(rest), 16))
	}
	return strings.Join(parts, "|")
}
