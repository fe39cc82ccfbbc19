package verbs

import (
	"math/bits"
	"strconv"
	"strings"
)

// QPAttrMask says which fields of an QPAttr a modify sets, enum
// ibv_qp_attr_mask. Each bit names one field, or for QPAttrAltPath a group of
// fields.
type QPAttrMask uint32

// Mask bits with the values of rdma-core 44's verbs.h. Bits 21..24 were
// kernel-internal and are not part of libibverbs; they, and every bit above
// 25, are refused by verbsim's modify checks.
const (
	QPAttrState            QPAttrMask = 1 << 0  // IBV_QP_STATE: QPState, the target state
	QPAttrCurState         QPAttrMask = 1 << 1  // IBV_QP_CUR_STATE: CurQPState, the state the caller assumes
	QPAttrEnSQDAsyncNotify QPAttrMask = 1 << 2  // IBV_QP_EN_SQD_ASYNC_NOTIFY: EnSQDAsyncNotify
	QPAttrAccessFlags      QPAttrMask = 1 << 3  // IBV_QP_ACCESS_FLAGS: QPAccessFlags
	QPAttrPKeyIndex        QPAttrMask = 1 << 4  // IBV_QP_PKEY_INDEX: PKeyIndex
	QPAttrPort             QPAttrMask = 1 << 5  // IBV_QP_PORT: PortNum
	QPAttrQKey             QPAttrMask = 1 << 6  // IBV_QP_QKEY: QKey
	QPAttrAV               QPAttrMask = 1 << 7  // IBV_QP_AV: AHAttr, the primary path
	QPAttrPathMTU          QPAttrMask = 1 << 8  // IBV_QP_PATH_MTU: PathMTU
	QPAttrTimeout          QPAttrMask = 1 << 9  // IBV_QP_TIMEOUT: Timeout
	QPAttrRetryCnt         QPAttrMask = 1 << 10 // IBV_QP_RETRY_CNT: RetryCnt
	QPAttrRNRRetry         QPAttrMask = 1 << 11 // IBV_QP_RNR_RETRY: RNRRetry
	QPAttrRQPSN            QPAttrMask = 1 << 12 // IBV_QP_RQ_PSN: RQPSN
	QPAttrMaxQPRDAtomic    QPAttrMask = 1 << 13 // IBV_QP_MAX_QP_RD_ATOMIC: MaxRDAtomic
	// QPAttrAltPath is IBV_QP_ALT_PATH: AltAHAttr, AltPKeyIndex, AltPortNum
	// and AltTimeout together.
	QPAttrAltPath         QPAttrMask = 1 << 14
	QPAttrMinRNRTimer     QPAttrMask = 1 << 15 // IBV_QP_MIN_RNR_TIMER: MinRNRTimer
	QPAttrSQPSN           QPAttrMask = 1 << 16 // IBV_QP_SQ_PSN: SQPSN
	QPAttrMaxDestRDAtomic QPAttrMask = 1 << 17 // IBV_QP_MAX_DEST_RD_ATOMIC: MaxDestRDAtomic
	QPAttrPathMigState    QPAttrMask = 1 << 18 // IBV_QP_PATH_MIG_STATE: PathMigState
	// QPAttrCap is IBV_QP_CAP (resize the queues). No transition accepts it
	// (QP-21).
	QPAttrCap     QPAttrMask = 1 << 19
	QPAttrDestQPN QPAttrMask = 1 << 20 // IBV_QP_DEST_QPN: DestQPNum
	// QPAttrRateLimit is IBV_QP_RATE_LIMIT (packet pacing). Only raw-packet
	// QPs accept it, so it is foreign to RC, UC and UD.
	QPAttrRateLimit QPAttrMask = 1 << 25
)

// KnownQPAttrs is every bit of enum ibv_qp_attr_mask.
const KnownQPAttrs = QPAttrState | QPAttrCurState | QPAttrEnSQDAsyncNotify | QPAttrAccessFlags |
	QPAttrPKeyIndex | QPAttrPort | QPAttrQKey | QPAttrAV | QPAttrPathMTU | QPAttrTimeout |
	QPAttrRetryCnt | QPAttrRNRRetry | QPAttrRQPSN | QPAttrMaxQPRDAtomic | QPAttrAltPath |
	QPAttrMinRNRTimer | QPAttrSQPSN | QPAttrMaxDestRDAtomic | QPAttrPathMigState | QPAttrCap |
	QPAttrDestQPN | QPAttrRateLimit

// QueryableQPAttrs is every bit ibv_query_qp accepts in attr_mask:
// IBV_QP_STATE up to IBV_QP_DEST_QPN, and the four bits above it that older
// kernels knew. A bit from IBV_QP_RATE_LIMIT up is EOPNOTSUPP there, as
// libibverbs refuses it on that path (QUERY-02).
const QueryableQPAttrs = QPAttrRateLimit - 1

// maskNames holds the enumerator names without IBV_QP_, by bit position.
var maskNames = [32]string{
	0: "STATE", 1: "CUR_STATE", 2: "EN_SQD_ASYNC_NOTIFY", 3: "ACCESS_FLAGS",
	4: "PKEY_INDEX", 5: "PORT", 6: "QKEY", 7: "AV", 8: "PATH_MTU", 9: "TIMEOUT",
	10: "RETRY_CNT", 11: "RNR_RETRY", 12: "RQ_PSN", 13: "MAX_QP_RD_ATOMIC",
	14: "ALT_PATH", 15: "MIN_RNR_TIMER", 16: "SQ_PSN", 17: "MAX_DEST_RD_ATOMIC",
	18: "PATH_MIG_STATE", 19: "CAP", 20: "DEST_QPN", 25: "RATE_LIMIT",
}

// String renders the mask as "STATE|PKEY_INDEX|PORT" (the enumerator names
// without IBV_QP_, lowest bit first), unknown bits as one trailing hex
// number, and the empty mask as "0".
func (m QPAttrMask) String() string {
	if m == 0 {
		return "0"
	}
	var parts []string
	for b := m & KnownQPAttrs; b != 0; b &= b - 1 {
		parts = append(parts, maskNames[bits.TrailingZeros32(uint32(b))])
	}
	if rest := m &^ KnownQPAttrs; rest != 0 {
		parts = append(parts, "0x"+strconv.FormatUint(uint64(rest), 16))
	}
	return strings.Join(parts, "|")
}

// Name returns the C enumerator of a single known bit, such as
// "IBV_QP_SQ_PSN", or "" when m is not exactly one known bit.
func (m QPAttrMask) Name() string {
	if m&KnownQPAttrs == 0 || m&(m-1) != 0 {
		return ""
	}
	return "IBV_QP_" + maskNames[bits.TrailingZeros32(uint32(m))]
}

// Bits returns the single bits of m, lowest first.
func (m QPAttrMask) Bits() []QPAttrMask {
	var out []QPAttrMask
	for b := m; b != 0; b &= b - 1 {
		out = append(out, b&-b)
	}
	return out
}
