package wc

import (
	"strconv"
	"strings"
)

// Opcode is the operation a work completion reports, enum ibv_wc_opcode.
//
// It is a different enumeration from WROpcode, with different numbers
// (WC-07): convert with WROpcode.SendCompletion or WROpcode.RecvCompletion,
// never with a type conversion.
type Opcode uint32

// Work-completion opcodes with their verbs.h values (WC-07). Value 8 is
// unassigned.
const (
	Send      Opcode = 0 // IBV_WC_SEND: send side of SEND, SEND_WITH_IMM, SEND_WITH_INV
	RDMAWrite Opcode = 1 // IBV_WC_RDMA_WRITE: send side of RDMA_WRITE and RDMA_WRITE_WITH_IMM
	RDMARead  Opcode = 2 // IBV_WC_RDMA_READ
	CompSwap  Opcode = 3 // IBV_WC_COMP_SWAP: ATOMIC_CMP_AND_SWP
	FetchAdd  Opcode = 4 // IBV_WC_FETCH_ADD: ATOMIC_FETCH_AND_ADD
	BindMW    Opcode = 5 // IBV_WC_BIND_MW
	LocalInv  Opcode = 6 // IBV_WC_LOCAL_INV
	TSO       Opcode = 7 // IBV_WC_TSO
	// AtomicWrite is IBV_WC_ATOMIC_WRITE, the send side of ATOMIC_WRITE.
	AtomicWrite Opcode = 9

	// Recv is IBV_WC_RECV (1<<7): a receive WR consumed by an incoming SEND,
	// SEND_WITH_IMM or SEND_WITH_INV. Its bit is what IsRecv tests.
	Recv Opcode = 128
	// RecvRDMAWithImm is IBV_WC_RECV_RDMA_WITH_IMM: a receive WR consumed by
	// an incoming RDMA_WRITE_WITH_IMM.
	RecvRDMAWithImm Opcode = 129

	// The tag-matching and driver opcodes below are listed so that every
	// ABI value has a name; the simulator never emits them (WC-06).

	TMAdd   Opcode = 130 // IBV_WC_TM_ADD
	TMDel   Opcode = 131 // IBV_WC_TM_DEL
	TMSync  Opcode = 132 // IBV_WC_TM_SYNC
	TMRecv  Opcode = 133 // IBV_WC_TM_RECV
	TMNoTag Opcode = 134 // IBV_WC_TM_NO_TAG
	// Driver1 is IBV_WC_DRIVER1, which man:ibv_poll_cq says answers an
	// IBV_WR_DRIVER1 work request: a send-side completion despite having
	// the Recv bit set.
	Driver1 Opcode = 135
	Driver2 Opcode = 136 // IBV_WC_DRIVER2: provider-specific
	Driver3 Opcode = 137 // IBV_WC_DRIVER3: provider-specific
)

var opcodeNames = map[Opcode]string{
	Send:            "IBV_WC_SEND",
	RDMAWrite:       "IBV_WC_RDMA_WRITE",
	RDMARead:        "IBV_WC_RDMA_READ",
	CompSwap:        "IBV_WC_COMP_SWAP",
	FetchAdd:        "IBV_WC_FETCH_ADD",
	BindMW:          "IBV_WC_BIND_MW",
	LocalInv:        "IBV_WC_LOCAL_INV",
	TSO:             "IBV_WC_TSO",
	AtomicWrite:     "IBV_WC_ATOMIC_WRITE",
	Recv:            "IBV_WC_RECV",
	RecvRDMAWithImm: "IBV_WC_RECV_RDMA_WITH_IMM",
	TMAdd:           "IBV_WC_TM_ADD",
	TMDel:           "IBV_WC_TM_DEL",
	TMSync:          "IBV_WC_TM_SYNC",
	TMRecv:          "IBV_WC_TM_RECV",
	TMNoTag:         "IBV_WC_TM_NO_TAG",
	Driver1:         "IBV_WC_DRIVER1",
	Driver2:         "IBV_WC_DRIVER2",
	Driver3:         "IBV_WC_DRIVER3",
}

// Valid reports whether o is a value of enum ibv_wc_opcode: 0 to 7, 9, or
// 128 to 137. It is a few comparisons, cheap enough for every completion.
func (o Opcode) Valid() bool {
	return o <= TSO || o == AtomicWrite || o >= Recv && o <= Driver3
}

// Name returns the C enumerator name of o, such as "IBV_WC_RECV", or "" if
// o is not a value of enum ibv_wc_opcode.
func (o Opcode) Name() string { return opcodeNames[o] }

// String returns the C enumerator name of o. libibverbs has no string
// function for WC opcodes, so an unassigned value is rendered in the form
// "IBV_WC_OPCODE(8)".
func (o Opcode) String() string {
	if n, ok := opcodeNames[o]; ok {
		return n
	}
	return "IBV_WC_OPCODE(" + strconv.FormatUint(uint64(o), 10) + ")"
}

// IsRecv reports whether o has the Recv bit (128) set: o&Recv != 0. This is
// the test verbs.h suggests for spotting receive completions.
//
// It is only exact for the classic opcodes. The tag-matching opcodes
// (TMAdd..TMNoTag) and Driver1..Driver3 also have bit 7 set, so IsRecv is
// true for them too, even though Driver1 completes a send-side WR (WC-06).
// Use IsClassicRecv to ask "did this consume a posted receive WR?". On an
// error WC the opcode itself is undefined (WC-03), so neither answer means
// anything there.
func (o Opcode) IsRecv() bool { return o&Recv != 0 }

// IsClassicRecv reports whether o is Recv or RecvRDMAWithImm, the two
// opcodes that report a consumed receive WR.
func (o Opcode) IsClassicRecv() bool { return o == Recv || o == RecvRDMAWithImm }

// Flags is the wc_flags bit set of a work completion, enum ibv_wc_flags
// (WC-08). The bits are only meaningful on a successful WC (WC-03).
type Flags uint32

// Work-completion flag bits with their verbs.h values (WC-08).
const (
	// GRH: the first 40 bytes of the receive buffer hold a Global Routing
	// Header (UD receives; always on RoCE).
	GRH Flags = 1 << 0
	// WithImm: WC.ImmData holds immediate data. Never set together with
	// WithInv.
	WithImm Flags = 1 << 1
	// IPCSumOK: the device verified the IPv4 header and TCP/UDP checksums.
	IPCSumOK Flags = 1 << 2
	// WithInv: WC.InvalidatedRkey holds the rkey a SEND_WITH_INV
	// invalidated. Never set together with WithImm.
	WithInv Flags = 1 << 3
	// TMSyncReq is IBV_WC_TM_SYNC_REQ (tag matching; never set by the
	// simulator).
	TMSyncReq Flags = 1 << 4
	// TMMatch is IBV_WC_TM_MATCH (tag matching; never set by the
	// simulator).
	TMMatch Flags = 1 << 5
	// TMDataValid is IBV_WC_TM_DATA_VALID (tag matching; never set by the
	// simulator).
	TMDataValid Flags = 1 << 6
)

// flagNames is indexed by bit number.
var flagNames = [...]string{
	"GRH", "WITH_IMM", "IP_CSUM_OK", "WITH_INV",
	"TM_SYNC_REQ", "TM_MATCH", "TM_DATA_VALID",
}

// knownFlags is the union of all defined bits.
const knownFlags = Flags(1<<len(flagNames) - 1)

// Valid reports whether f has only bits of enum ibv_wc_flags.
func (f Flags) Valid() bool { return f&^knownFlags == 0 }

// Name returns the C enumerator name when f is exactly one defined bit
// (Name of WithImm is "IBV_WC_WITH_IMM"), and "" otherwise.
func (f Flags) Name() string {
	for i, n := range flagNames {
		if f == 1<<i {
			return "IBV_WC_" + n
		}
	}
	return ""
}

// String renders f as its bit names without the IBV_WC_ prefix, in bit
// order and joined by "|", such as "GRH|WITH_IMM". Undefined bits are
// appended as one hexadecimal number ("WITH_IMM|0x100"); zero is "0".
func (f Flags) String() string {
	if f == 0 {
		return "0"
	}
	var parts []string
	for i, n := range flagNames {
		if f&(1<<i) != 0 {
			parts = append(parts, n)
		}
	}
	if rest := f &^ knownFlags; rest != 0 {
		parts = append(parts, "0x"+strconv.FormatUint(uint64(rest), 16))
	}
	return strings.Join(parts, "|")
}
