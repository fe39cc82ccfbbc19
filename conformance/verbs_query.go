package conformance

import "github.com/verbsim/verbsim/verbs"

// The query verbs (rules QUERY-01..07) are optional capabilities: a device
// that lacks one has its cases log "not checked" and pass.

// QPMaskQuerier is an optional capability of a QP: ibv_query_qp with its
// attr_mask, returning the init_attr as well (QUERY-01, QUERY-02).
type QPMaskQuerier interface {
	QueryMask(mask verbs.QPAttrMask) (verbs.QPAttr, QPQueryInit, error)
}

// QPQueryInit holds the fields of the init_attr ibv_query_qp returns that
// the suite compares: the real capacities, the type, sq_sig_all, whether
// the QP has an SRQ and qp_context.
type QPQueryInit struct {
	Cap      verbs.QPCap
	Type     verbs.QPType
	SQSigAll bool
	HasSRQ   bool
	Context  any
}

// DeviceQuerier is an optional capability of a Context: ibv_query_device_ex
// (QUERY-03), ibv_query_port's remaining fields (QUERY-04) and the GID
// table with types (QUERY-05, QUERY-06).
type DeviceQuerier interface {
	// QueryDeviceEx is ibv_query_device_ex with an input whose comp_mask is
	// compMask.
	QueryDeviceEx(compMask uint32) (DeviceAttrEx, error)
	// QueryPortEx is ibv_query_port, the fields PortInfo does not hold.
	QueryPortEx(port uint8) (PortAttrEx, error)
	// QueryGIDEx is ibv_query_gid_ex.
	QueryGIDEx(port, index, flags uint32) (GIDEntry, error)
	// QueryGIDTable is ibv_query_gid_table with room for maxEntries; the
	// entries read are returned.
	QueryGIDTable(maxEntries int, flags uint32) ([]GIDEntry, error)
}

// DeviceAttrEx holds the fields of struct ibv_device_attr_ex the suite
// checks. Unsupported sums the extended capabilities a device without
// them reports as zero; verbsim has none of them (the timestamp clock has
// fields of its own).
type DeviceAttrEx struct {
	PhysPortCnt      uint8  // orig_attr.phys_port_cnt
	DeviceCapFlags   uint32 // orig_attr.device_cap_flags
	CompMask         uint32 // comp_mask
	DeviceCapFlagsEx uint64 // device_cap_flags_ex
	PhysPortCntEx    uint32 // phys_port_cnt_ex
	// CompletionTimestampMask and HCACoreClock are completion_timestamp_mask
	// and hca_core_clock: non-zero exactly when the device timestamps
	// completions (QUERY-03, CQX-09).
	CompletionTimestampMask, HCACoreClock uint64
	// SameAsQueryDevice says orig_attr equals what ibv_query_device returns.
	SameAsQueryDevice bool
	// Unsupported is non-zero when any capability the device does not
	// implement (ODP, timestamps, TSO, ...) reads non-zero.
	Unsupported uint64
}

// PortAttrEx holds fields of struct ibv_port_attr beyond PortInfo.
type PortAttrEx struct {
	State     uint8 // state (enum ibv_port_state)
	PhysState uint8 // phys_state: 5 LINK_UP, 3 DISABLED
}

// GIDEntry is struct ibv_gid_entry.
type GIDEntry struct {
	GID         [16]byte
	GIDIndex    uint32
	PortNum     uint32
	GIDType     uint32 // 0 IB, 1 RoCE v1, 2 RoCE v2
	NdevIfindex uint32
}

// SRQNumGetter is an optional capability of an SRQ: ibv_get_srq_num
// (QUERY-07).
type SRQNumGetter interface {
	GetSRQNum() (uint32, error)
}
