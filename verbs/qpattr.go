package verbs

import "time"

// PSNMask keeps the 24 bits a packet sequence number has on the wire.
const PSNMask = 0xFFFFFF

// GlobalRoute is the global routing header of an address vector, struct
// ibv_global_route. It is used only when AHAttr.IsGlobal is set.
type GlobalRoute struct {
	DGID         [16]byte // destination GID, network byte order as in union ibv_gid
	FlowLabel    uint32   // 20-bit IPv6 flow label
	SGIDIndex    uint8    // index of the source GID in the port's GID table
	HopLimit     uint8    // IPv6 hop limit
	TrafficClass uint8    // IPv6 traffic class
}

// AHAttr is an address vector, the fields of struct ibv_ah_attr: where the
// packets of a connected QP (QPAttrAV, QPAttrAltPath) go.
type AHAttr struct {
	GRH         GlobalRoute // meaningful only when IsGlobal
	DLID        uint16      // destination LID
	SL          uint8       // service level
	SrcPathBits uint8       // source path bits (low LID bits when LMC > 0)
	StaticRate  uint8       // enum ibv_rate; 0 means port rate
	// IsGlobal says a WCGRH is present. Ports that report
	// IBV_QPF_GRH_REQUIRED, and every RoCE port, insist on it.
	IsGlobal bool
	PortNum  uint8 // local port the path leaves from (1-based)
}

// QPCap holds the work-queue capacities of a QP, struct ibv_qp_cap. A modify
// never changes them (QPAttrCap is refused, QP-21); creation and query use
// them.
type QPCap struct {
	MaxSendWR     uint32 // send WRs that may be outstanding
	MaxRecvWR     uint32 // receive WRs that may be outstanding (0 with an SRQ)
	MaxSendSGE    uint32 // scatter/gather entries per send WR
	MaxRecvSGE    uint32 // scatter/gather entries per receive WR
	MaxInlineData uint32 // largest inline payload in bytes
}

// QPAttr holds the attributes of a QP, every field of struct ibv_qp_attr.
// ibv_modify_qp reads the fields its mask names and ignores the rest;
// ibv_query_qp fills them in. Comments name the mask bit that covers each
// field and the transports it means something for.
type QPAttr struct {
	// QPState is the target state of a modify (QPAttrState), and the current
	// state in a query.
	QPState QPState
	// CurQPState is the state the caller believes the QP is in
	// (QPAttrCurState). What is done with it is up to the implementation (Readings.CurStateTrusted).
	CurQPState QPState
	// PathMTU is the path MTU, RC and UC (QPAttrPathMTU). It must not exceed
	// the port's maximum.
	PathMTU MTU
	// PathMigState is the automatic path migration state (QPAttrPathMigState).
	PathMigState MigState
	// QKey is the Q_Key of a UD QP (QPAttrQKey).
	QKey uint32
	// RQPSN is the first PSN the receive side expects, RC and UC
	// (QPAttrRQPSN). Only the low 24 bits are kept.
	RQPSN uint32
	// SQPSN is the first PSN the send side uses (QPAttrSQPSN). Only the low
	// 24 bits are kept.
	SQPSN uint32
	// DestQPNum is the remote QP number of an RC or UC QP (QPAttrDestQPN).
	DestQPNum uint32
	// QPAccessFlags are the remote operations the QP accepts as a
	// responder, RC and UC (QPAttrAccessFlags); bits outside QPAccessBits are
	// refused, but for AccessOnDemand, accepted and ignored (ODP-03).
	QPAccessFlags AccessFlags
	// Cap is the queue capacity (QPAttrCap, which no modify accepts).
	Cap QPCap
	// AHAttr is the primary path of an RC or UC QP (QPAttrAV).
	AHAttr AHAttr
	// AltAHAttr is the alternate path (QPAttrAltPath).
	AltAHAttr AHAttr
	// PKeyIndex is the index of the primary P_Key in the port's table
	// (QPAttrPKeyIndex).
	PKeyIndex uint16
	// AltPKeyIndex is the P_Key index for the alternate path (QPAttrAltPath).
	AltPKeyIndex uint16
	// EnSQDAsyncNotify asks for IBV_EVENT_SQ_DRAINED once QPStateRTS→QPStateSQD has
	// finished draining (QPAttrEnSQDAsyncNotify; a uint8 flag in C).
	EnSQDAsyncNotify bool
	// SQDraining is reported by a query in QPStateSQD: true while send WRs that
	// had started are still completing (a uint8 flag in C). A modify
	// ignores it.
	SQDraining bool
	// MaxRDAtomic is how many RDMA reads and atomics this QP may have
	// outstanding as requester, RC only (QPAttrMaxQPRDAtomic).
	MaxRDAtomic uint8
	// MaxDestRDAtomic is how many incoming RDMA reads and atomics this QP
	// can serve at once as responder, RC only (QPAttrMaxDestRDAtomic).
	MaxDestRDAtomic uint8
	// MinRNRTimer is the 5-bit code of the delay an RC responder asks for
	// in an RNR NAK (QPAttrMinRNRTimer).
	MinRNRTimer uint8
	// PortNum is the local port, 1-based (QPAttrPort).
	PortNum uint8
	// Timeout is the 5-bit code of the RC local ACK timeout,
	// 4.096 µs × 2^Timeout; 0 waits forever (QPAttrTimeout).
	Timeout uint8
	// RetryCnt is how often an RC requester retransmits after a timeout,
	// 0..7 (QPAttrRetryCnt).
	RetryCnt uint8
	// RNRRetry is how often an RC requester retries after an RNR NAK, 0..7;
	// 7 means without limit (QPAttrRNRRetry).
	RNRRetry uint8
	// AltPortNum is the port of the alternate path (QPAttrAltPath).
	AltPortNum uint8
	// AltTimeout is the ACK timeout code of the alternate path
	// (QPAttrAltPath).
	AltTimeout uint8
	// RateLimit is the packet pacing rate in kbps (QPAttrRateLimit, raw
	// packet QPs only).
	RateLimit uint32
}

// NormalizeQPAttr returns attr as the kernel stores it: a PSN named by the mask
// loses its bits above 24 (QP-22; _ib_modify_qp masks them and only warns).
// Fields the mask does not name are returned unchanged.
func NormalizeQPAttr(attr QPAttr, mask QPAttrMask) QPAttr {
	if mask&QPAttrRQPSN != 0 {
		attr.RQPSN &= PSNMask
	}
	if mask&QPAttrSQPSN != 0 {
		attr.SQPSN &= PSNMask
	}
	return attr
}

// Apply copies into a the fields of src that mask names, normalized as by
// NormalizeQPAttr. It is the "set" half of ibv_modify_qp; call it only after
// the implementation's checks accepted the same (attr, mask), so that a failed modify
// changes nothing (QP-13).
//
// The state bits are left to the caller: QPAttrState and QPAttrCurState change
// neither QPState nor CurQPState, because entering a state has side
// effects (flushing, resetting queues) that belong to the QP object. A nil
// a or src does nothing.
func (a *QPAttr) Apply(src *QPAttr, mask QPAttrMask) {
	if a == nil || src == nil {
		return
	}
	s := NormalizeQPAttr(*src, mask)
	if mask&QPAttrEnSQDAsyncNotify != 0 {
		a.EnSQDAsyncNotify = s.EnSQDAsyncNotify
	}
	if mask&QPAttrAccessFlags != 0 {
		a.QPAccessFlags = s.QPAccessFlags
	}
	if mask&QPAttrPKeyIndex != 0 {
		a.PKeyIndex = s.PKeyIndex
	}
	if mask&QPAttrPort != 0 {
		a.PortNum = s.PortNum
	}
	if mask&QPAttrQKey != 0 {
		a.QKey = s.QKey
	}
	if mask&QPAttrAV != 0 {
		a.AHAttr = s.AHAttr
	}
	if mask&QPAttrPathMTU != 0 {
		a.PathMTU = s.PathMTU
	}
	if mask&QPAttrTimeout != 0 {
		a.Timeout = s.Timeout
	}
	if mask&QPAttrRetryCnt != 0 {
		a.RetryCnt = s.RetryCnt
	}
	if mask&QPAttrRNRRetry != 0 {
		a.RNRRetry = s.RNRRetry
	}
	if mask&QPAttrRQPSN != 0 {
		a.RQPSN = s.RQPSN
	}
	if mask&QPAttrMaxQPRDAtomic != 0 {
		a.MaxRDAtomic = s.MaxRDAtomic
	}
	if mask&QPAttrAltPath != 0 {
		a.AltAHAttr = s.AltAHAttr
		a.AltPKeyIndex = s.AltPKeyIndex
		a.AltPortNum = s.AltPortNum
		a.AltTimeout = s.AltTimeout
	}
	if mask&QPAttrMinRNRTimer != 0 {
		a.MinRNRTimer = s.MinRNRTimer
	}
	if mask&QPAttrSQPSN != 0 {
		a.SQPSN = s.SQPSN
	}
	if mask&QPAttrMaxDestRDAtomic != 0 {
		a.MaxDestRDAtomic = s.MaxDestRDAtomic
	}
	if mask&QPAttrPathMigState != 0 {
		a.PathMigState = s.PathMigState
	}
	if mask&QPAttrCap != 0 {
		a.Cap = s.Cap
	}
	if mask&QPAttrDestQPN != 0 {
		a.DestQPNum = s.DestQPNum
	}
	if mask&QPAttrRateLimit != 0 {
		a.RateLimit = s.RateLimit
	}
}

// ACKTimeout is the RC local ACK timeout of code t (QPAttr.Timeout):
// 4.096 µs × 2^t, and 0 for t = 0, which waits forever (XFER-10). Codes
// above 31 count as 31.
func ACKTimeout(t uint8) time.Duration {
	if t == 0 {
		return 0
	}
	return 4096 << min(t, 31)
}
