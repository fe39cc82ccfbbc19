package verbs

import (
	"strconv"
	"strings"
)

// QPState is the state of a queue pair, enum ibv_qp_state. The numbers are
// fixed by the verbs ABI (QP-06): QPStateReset is 0.
type QPState uint32

// QP states with their verbs.h values (QP-06).
const (
	QPStateReset QPState = 0 // IBV_QPS_RESET: just created, or reset; no WR is processed
	QPStateInit  QPState = 1 // IBV_QPS_INIT: receives may be posted, nothing moves yet
	QPStateRTR   QPState = 2 // IBV_QPS_RTR: ready to receive
	QPStateRTS   QPState = 3 // IBV_QPS_RTS: ready to send
	QPStateSQD   QPState = 4 // IBV_QPS_SQD: send queue drained (or draining)
	QPStateSQE   QPState = 5 // IBV_QPS_SQE: send queue error; UD and UC only
	QPStateErr   QPState = 6 // IBV_QPS_ERR: error; everything outstanding is flushed
	// QPStateUnknown is IBV_QPS_UNKNOWN. It exists in the enum but is never the
	// state of a QP and never a legal target of a modify.
	QPStateUnknown QPState = 7
)

var stateNames = [...]string{"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR", "UNKNOWN"}

// String returns the short state name used in kernel and rdma-core
// diagnostics ("RESET", "RTS", "ERR"), or "State(N)" outside the enum.
func (s QPState) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "State(" + strconv.FormatUint(uint64(s), 10) + ")"
}

// Name returns the C enumerator, such as "IBV_QPS_RTS", or "" outside the
// enum.
func (s QPState) Name() string {
	if int(s) < len(stateNames) {
		return "IBV_QPS_" + stateNames[s]
	}
	return ""
}

// Valid reports whether s is one of the seven states a QP can be in
// (QPStateReset..QPStateErr). QPStateUnknown is not.
func (s QPState) Valid() bool { return s <= QPStateErr }

// QPType is the transport service of a QP, enum ibv_qp_type.
//
// Every value of the enum has a constant, but verbsim implements only
// RC, UC and UD and rejects the others.
type QPType uint32

// QP types with their verbs.h values.
const (
	QPTypeRC        QPType = 2    // IBV_QPT_RC: reliable connected
	QPTypeUC        QPType = 3    // IBV_QPT_UC: unreliable connected
	QPTypeUD        QPType = 4    // IBV_QPT_UD: unreliable datagram
	QPTypeRawPacket QPType = 8    // IBV_QPT_RAW_PACKET: not simulated
	QPTypeXRCSend   QPType = 9    // IBV_QPT_XRC_SEND: an XRC initiator (see docs/xrc.md)
	QPTypeXRCRecv   QPType = 10   // IBV_QPT_XRC_RECV: an XRC target (see docs/xrc.md)
	QPTypeDriver    QPType = 0xff // IBV_QPT_DRIVER: not simulated
)

var typeNames = map[QPType]string{
	QPTypeRC: "RC", QPTypeUC: "UC", QPTypeUD: "UD",
	QPTypeRawPacket: "RAW_PACKET", QPTypeXRCSend: "XRC_SEND", QPTypeXRCRecv: "XRC_RECV", QPTypeDriver: "DRIVER",
}

// String returns the short name ("RC", "RAW_PACKET"), or "Type(N)" outside
// the enum.
func (t QPType) String() string {
	if n, ok := typeNames[t]; ok {
		return n
	}
	return "Type(" + strconv.FormatUint(uint64(t), 10) + ")"
}

// Name returns the C enumerator, such as "IBV_QPT_RC", or "" outside the
// enum.
func (t QPType) Name() string {
	if n, ok := typeNames[t]; ok {
		return "IBV_QPT_" + n
	}
	return ""
}

// MTU is a path or port MTU, enum ibv_mtu. The enum value is a code, not a
// byte count: use Bytes for the size.
type MTU uint32

// MTU codes with their verbs.h values. There is no zero value in the enum.
const (
	MTU256  MTU = 1 // IBV_MTU_256
	MTU512  MTU = 2 // IBV_MTU_512
	MTU1024 MTU = 3 // IBV_MTU_1024
	MTU2048 MTU = 4 // IBV_MTU_2048
	MTU4096 MTU = 5 // IBV_MTU_4096
)

// Valid reports whether m is one of the five MTU codes.
func (m MTU) Valid() bool { return m >= MTU256 && m <= MTU4096 }

// Bytes returns the MTU in bytes (256 << (m-1)), or 0 when m is not a valid
// code.
func (m MTU) Bytes() int {
	if !m.Valid() {
		return 0
	}
	return 256 << (m - 1)
}

// String returns the size in bytes ("1024"), as ibv_devinfo prints it, or
// "MTU(N)" for an invalid code.
func (m MTU) String() string {
	if !m.Valid() {
		return "MTU(" + strconv.FormatUint(uint64(m), 10) + ")"
	}
	return strconv.Itoa(m.Bytes())
}

// Name returns the C enumerator, such as "IBV_MTU_1024", or "" for an
// invalid code.
func (m MTU) Name() string {
	if !m.Valid() {
		return ""
	}
	return "IBV_MTU_" + m.String()
}

// MigState is the path-migration state of a QP, enum ibv_mig_state. It
// matters only to automatic path migration, which verbsim does not
// perform; the value is validated and stored.
type MigState uint32

// Migration states with their verbs.h values.
const (
	MigMigrated MigState = 0 // IBV_MIG_MIGRATED
	MigRearm    MigState = 1 // IBV_MIG_REARM
	MigArmed    MigState = 2 // IBV_MIG_ARMED
)

var migNames = [...]string{"MIGRATED", "REARM", "ARMED"}

// Valid reports whether m is one of the three migration states.
func (m MigState) Valid() bool { return m <= MigArmed }

// String returns "MIGRATED", "REARM" or "ARMED", or "MigState(N)".
func (m MigState) String() string {
	if m.Valid() {
		return migNames[m]
	}
	return "MigState(" + strconv.FormatUint(uint64(m), 10) + ")"
}

// Name returns the C enumerator, such as "IBV_MIG_ARMED", or "".
func (m MigState) Name() string {
	if m.Valid() {
		return "IBV_MIG_" + migNames[m]
	}
	return ""
}

// AccessFlags is a set of enum ibv_access_flags bits. The same bits serve
// memory registration (MR-05) and, restricted to QPAccessBits, the remote
// operations a QP accepts (qp_access_flags).
type AccessFlags uint32

// Access bits with their verbs.h values (MR-05).
const (
	AccessLocalWrite   AccessFlags = 1 << 0 // IBV_ACCESS_LOCAL_WRITE
	AccessRemoteWrite  AccessFlags = 1 << 1 // IBV_ACCESS_REMOTE_WRITE
	AccessRemoteRead   AccessFlags = 1 << 2 // IBV_ACCESS_REMOTE_READ
	AccessRemoteAtomic AccessFlags = 1 << 3 // IBV_ACCESS_REMOTE_ATOMIC
	AccessMWBind       AccessFlags = 1 << 4 // IBV_ACCESS_MW_BIND
	AccessZeroBased    AccessFlags = 1 << 5 // IBV_ACCESS_ZERO_BASED
	AccessOnDemand     AccessFlags = 1 << 6 // IBV_ACCESS_ON_DEMAND
	AccessHugeTLB      AccessFlags = 1 << 7 // IBV_ACCESS_HUGETLB
	// AccessRelaxedOrdering is IBV_ACCESS_RELAXED_ORDERING, the first of
	// the "optional" bits (IBV_ACCESS_OPTIONAL_FIRST) that a provider may
	// ignore.
	AccessRelaxedOrdering AccessFlags = 1 << 20
)

// QPAccessBits are the access bits a QP's qp_access_flags may hold. rxe
// refuses any other bit with EINVAL, and so does verbsim, but for
// AccessOnDemand, which both accept and ignore (ODP-03).
const QPAccessBits = AccessLocalWrite | AccessRemoteWrite | AccessRemoteRead | AccessRemoteAtomic

var accessNames = []struct {
	f    AccessFlags
	name string
}{
	{AccessLocalWrite, "LOCAL_WRITE"},
	{AccessRemoteWrite, "REMOTE_WRITE"},
	{AccessRemoteRead, "REMOTE_READ"},
	{AccessRemoteAtomic, "REMOTE_ATOMIC"},
	{AccessMWBind, "MW_BIND"},
	{AccessZeroBased, "ZERO_BASED"},
	{AccessOnDemand, "ON_DEMAND"},
	{AccessHugeTLB, "HUGETLB"},
	{AccessRelaxedOrdering, "RELAXED_ORDERING"},
}

// String renders the set as "LOCAL_WRITE|REMOTE_READ" (the enumerator names
// without IBV_ACCESS_), unnamed bits as one trailing hex number, and the
// empty set as "0".
func (f AccessFlags) String() string {
	if f == 0 {
		return "0"
	}
	var parts []string
	var known AccessFlags
	for _, a := range accessNames {
		known |= a.f
		if f&a.f != 0 {
			parts = append(parts, a.name)
		}
	}
	if rest := f &^ known; rest != 0 {
		parts = append(parts, "0x"+strconv.FormatUint(uint64(rest), 16))
	}
	return strings.Join(parts, "|")
}
