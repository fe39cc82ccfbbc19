package verbs

// WCExFlags is the wc_flags of struct ibv_cq_init_attr_ex, enum
// ibv_wc_flags_ex: which fields of a completion the poll iterator may read.
type WCExFlags uint64

// The bits of enum ibv_wc_flags_ex, with their verbs.h values.
const (
	WCExByteLen             WCExFlags = 1 << 0  // IBV_WC_EX_WITH_BYTE_LEN: ReadByteLen
	WCExImm                 WCExFlags = 1 << 1  // IBV_WC_EX_WITH_IMM: ReadImmData, ReadInvalidatedRkey
	WCExQPNum               WCExFlags = 1 << 2  // IBV_WC_EX_WITH_QP_NUM: ReadQPNum
	WCExSrcQP               WCExFlags = 1 << 3  // IBV_WC_EX_WITH_SRC_QP: ReadSrcQP
	WCExSLID                WCExFlags = 1 << 4  // IBV_WC_EX_WITH_SLID: ReadSLID
	WCExSL                  WCExFlags = 1 << 5  // IBV_WC_EX_WITH_SL: ReadSL
	WCExDLIDPathBits        WCExFlags = 1 << 6  // IBV_WC_EX_WITH_DLID_PATH_BITS: ReadDLIDPathBits
	WCExCompletionTimestamp WCExFlags = 1 << 7  // IBV_WC_EX_WITH_COMPLETION_TIMESTAMP: ReadCompletionTS
	WCExCVLAN               WCExFlags = 1 << 8  // IBV_WC_EX_WITH_CVLAN: never supported
	WCExFlowTag             WCExFlags = 1 << 9  // IBV_WC_EX_WITH_FLOW_TAG: never supported
	WCExTMInfo              WCExFlags = 1 << 10 // IBV_WC_EX_WITH_TM_INFO: never supported
	// WCExCompletionTimestampWallclock is
	// IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK: ReadCompletionWallclockNS.
	WCExCompletionTimestampWallclock WCExFlags = 1 << 11

	// WCStandardFlags is IBV_WC_STANDARD_FLAGS: the fields struct ibv_wc
	// carries. A CQ made by ibv_create_cq has these (CQX-03).
	WCStandardFlags = WCExByteLen | WCExImm | WCExQPNum | WCExSrcQP | WCExSLID | WCExSL | WCExDLIDPathBits
)

// CQInitAttrMask is comp_mask of struct ibv_cq_init_attr_ex, enum
// ibv_cq_init_attr_mask.
type CQInitAttrMask uint32

// The bits of enum ibv_cq_init_attr_mask.
const (
	CQInitAttrMaskFlags CQInitAttrMask = 1 << 0 // IBV_CQ_INIT_ATTR_MASK_FLAGS: Flags is given
	CQInitAttrMaskPD    CQInitAttrMask = 1 << 1 // IBV_CQ_INIT_ATTR_MASK_PD: a parent domain (not supported)
)

// CQCreateFlags is flags of struct ibv_cq_init_attr_ex, enum
// ibv_create_cq_attr_flags.
type CQCreateFlags uint32

// The bits of enum ibv_create_cq_attr_flags.
const (
	// CQCreateSingleThreaded is IBV_CREATE_CQ_ATTR_SINGLE_THREADED: the
	// application promises to use the CQ from one thread. verbsim accepts it
	// and still serializes the CQ's verbs with the rest of the fabric.
	CQCreateSingleThreaded CQCreateFlags = 1 << 0
	// CQCreateIgnoreOverrun is IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN (CQ-23).
	CQCreateIgnoreOverrun CQCreateFlags = 1 << 1
)
