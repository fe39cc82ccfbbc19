package sim

import "github.com/verbsim/verbsim/verbs"

// The sources of the provider profiles. The paths name rdma-core 44
// (providers/..., libibverbs/...), the Linux kernel's RDMA drivers
// (drivers/infiniband/...) and google/rdma-unit-test's per-NIC
// introspection files (internal/introspection_*.h, public/introspection.h),
// which list where each NIC departs from the tests' expectations.
// docs/profiles.md prints them (TestProfilesDoc keeps it in step).

// siwDeviceAttr returns siw's device attributes: siw_query_device
// (drivers/infiniband/sw/siw/siw_verbs.c) reports the SIW_MAX_* limits of
// siw.h; the inline limit is rdma/siw-abi.h's SIW_MAX_INLINE (5 SGEs of 16
// bytes).
func siwDeviceAttr() verbs.DeviceAttr {
	a := DefaultDeviceAttr()
	a.FWVer = "0.0.0"
	a.MaxMRSize = ^uint64(0)
	a.VendorID = 0x626d74 // SIW_VENDOR_ID, "bmt"
	a.VendorPartID = 0
	a.MaxQP = 100 * 1024
	a.MaxQPWR = 32 * 1024
	a.DeviceCapFlags = verbs.DeviceMemMgtExtensions
	a.MaxSGE = 6   // SIW_MAX_SGE
	a.MaxSGERD = 1 // SIW_MAX_SGE_RD: "iwarp limitation"
	a.MaxCQ = 100 * 1024
	a.MaxCQE = 32 * 1024 * 100
	a.MaxMR = 100 * 1024 * 10
	a.MaxPD = 100 * 1024
	a.MaxQPRDAtom = 128     // SIW_MAX_ORD_QP
	a.MaxQPInitRDAtom = 128 // SIW_MAX_IRD_QP
	a.MaxSRQ = 100 * 1024
	a.MaxSRQWR = 32 * 1024 * 10
	a.MaxSRQSGE = 6
	a.MaxInline = 80 // SIW_MAX_INLINE
	a.MaxDMSize = 0
	a.HCACoreClock, a.CompletionTimestampMask = 0, 0
	return a
}

// irdmaDeviceAttr returns the attributes of an Intel E810-C (irdma gen 2):
// irdma_query_device (drivers/infiniband/hw/irdma/verbs.c) with the limits
// of rdma-core 44's providers/irdma/user.h and the kernel's defs.h.
func irdmaDeviceAttr() verbs.DeviceAttr {
	a := DefaultDeviceAttr()
	a.FWVer = "1.0"
	a.VendorID = 0x8086          // Intel
	a.VendorPartID = 0x1592      // ICE_DEV_ID_E810C_QSFP (providers/irdma/ice_devids.h)
	a.MaxMRSize = 0x200000000000 // IRDMA_MAX_MR_SIZE
	a.MaxQPWR = 4063             // IRDMA_MAX_QP_WRS(IRDMA_MAX_QUANTA_PER_WR): (32768 - 258) / 8
	a.DeviceCapFlags = verbs.DeviceMemWindow | verbs.DeviceMemMgtExtensions | verbs.DeviceRCRNRNakGen | verbs.DeviceMemWindow2B
	a.MaxSGE = 13                       // IRDMA_MAX_WQ_FRAGMENT_COUNT
	a.MaxSGERD = 13                     // IRDMA_MAX_SGE_RD
	a.MaxCQE = 1048575                  // IRDMA_MAX_CQ_SIZE
	a.MaxMW = a.MaxMR                   // max_mw = max_mr
	a.MaxInline = 101                   // IRDMA_MAX_INLINE_DATA_SIZE
	a.CompletionTimestampMask = 0x1ffff // HCA_CLOCK_TIMESTAMP_MASK (gen 2)
	return a
}

// profileSources gives, for each built-in provider profile, the source of
// each reading it sets, and of each one it leaves at the man pages' value
// where a source says so. A reading a profile leaves off without an entry
// here is the man pages' reading, not confirmed for that provider.
var profileSources = map[string]map[verbs.Reading]string{
	"rxe": { // drivers/infiniband/sw/rxe and providers/rxe, as the catalogue's rows cite them
		verbs.ReadingOverrunDrops:          "rxe_cq.c: a full CQ loses the completion and the CQ carries on (CQ-23)",
		verbs.ReadingOverrunSendIgnored:    "rxe_comp.c; rxe_resp.c RESPST_ERR_CQ_OVERFLOW: only the receive side errs the QP (CQ-24)",
		verbs.ReadingNoCQTimestamps:        "providers/rxe/rxe.c rxe_create_cq_ex: IBV_WC_STANDARD_FLAGS only (CQX-02)",
		verbs.ReadingSolicitedBitOnly:      "rxe_cq.c: a solicited arm fires for solicited completions only (NOTIFY-05)",
		verbs.ReadingCurStateTrusted:       "rxe_qp.c: the claimed state is the one checked (QP-12)",
		verbs.ReadingFreeSlotOnRetire:      "rxe_comp.c: the slot is free when the request retires (QP-29)",
		verbs.ReadingTransportOpLocQPOp:    "providers/rxe/rxe.c post_one_send validates no opcode per QP type; rxe_req.c next_opcode finds no packet opcode: LOC_QP_OP_ERR (QP-33)",
		verbs.ReadingSendOpsRXE:            "providers/rxe/rxe.c RXE_SUP_UC_QP_SEND_OPS_FLAGS, check_qp_queue_full (QPX-01, QPX-04)",
		verbs.ReadingSRQLimitAtCreate:      "rxe_srq.c: the limit given at creation is armed (SRQ-01)",
		verbs.ReadingSRQRecvQPPD:           "rxe_resp.c send_data_in: copy_data(qp->pd, ...) (SRQ-12)",
		verbs.ReadingNoXRC:                 "providers/rxe/rxe.c: no open_xrcd (XRC-03)",
		verbs.ReadingNoDM:                  "providers/rxe/rxe.c: no alloc_dm (DM-02)",
		verbs.ReadingDeregBoundEINVAL:      "rxe_dereg_mr, IBA 10.6.7.2.6 (MR-06)",
		verbs.ReadingReregFailKeepsMR:      "uverbs_cmd.c ib_uverbs_rereg_mr; rxe_rereg_user_mr (MR-14)",
		verbs.ReadingReregKeepsKeys:        "rxe_rereg_user_mr changes the MR in place (MR-15)",
		verbs.ReadingReregNoTranslation:    "rxe_rereg_user_mr RXE_MR_REREG_SUPPORTED (MR-16)",
		verbs.ReadingNoODP:                 "Linux 6.1, rdma-core 44's time: no rxe_odp.c (ODP-01)",
		verbs.ReadingMWType1NoZeroBased:    "rxe_check_bind_mw, IBTA o10-36.2.2 (MW-05)",
		verbs.ReadingRecvTooSmallRemInvReq: "rxe_resp.c RESPST_ERR_LENGTH (XFER-05)",
		verbs.ReadingInfiniteRetry7:        "rxe_comp.c: retry_cnt != 7 (XFER-10)",
		verbs.ReadingRecvProtQPOp:          "rxe_resp.c send_data_in (XFER-16)",
		verbs.ReadingWriteImmRKeyRemAccess: "rxe_resp.c check_resource, RESPST_ERR_RKEY_VIOLATION (XFER-30)",
		verbs.ReadingLateLocalCheck:        "rxe_comp.c do_read, do_atomic (XFER-31)",
		verbs.ReadingSendInvErrAcked:       "rxe_resp.c RESPST_ERR_INVALIDATE_RKEY, class J (XFER-29)",
		verbs.ReadingNoSQE:                 "rxe_qp_error on every error; SQE is not possible (FLUSH-10)",
		verbs.ReadingSendWCImm:             "rxe_comp.c make_send_cqe (WC-13)",
		verbs.ReadingNoQPEvents:            "rxe raises none of them (ASYNC-11)",
		verbs.ReadingAlwaysSQDrained:       "rxe_req.c req_check_sq_drain_done (ASYNC-13)",
		verbs.ReadingNoFlowLabel:           "rxe_net.c prepare_ipv6_hdr: ip6_flow_hdr with a zero flow label (AV-05)",
		verbs.ReadingResetPurgesCQ:         "rxe keeps a reset QP's completions in its CQs (CQ-26)",
	},
	"mlx5": {
		verbs.ReadingPostAnyState:          "providers/mlx5/verbs.c:2250 set_qp_operational_state: the SGE limit is -1 in RESET, the receive queue's max_gs from INIT, the send queue's from RTS (rdma-core 40, 988f90bc1; rdma-unit-test's SilentlyDropSendWrWhenResetInitRtr is the older mlx5's)",
		verbs.ReadingPostENOMEM:            "providers/mlx5/qp.c:849 _mlx5_post_send: num_sge > qp_state_max_gs is ENOMEM, and set_data_inl_seg: inline bytes above max_inline_data ENOMEM; the builders' wr_set_sge_list and wr_set_inline_data record ENOMEM for ibv_wr_complete (:3842 mlx5_post_recv: EINVAL; qp.c:1189 mlx5_send_wr_complete_error before RTS: EINVAL)",
		verbs.ReadingResetPurgesCQ:         "providers/mlx5/verbs.c:3021 mlx5_modify_qp to RESET and :2740 mlx5_destroy_qp call mlx5_cq_clean",
		verbs.ReadingReregKeepsKeys:        "drivers/infiniband/hw/mlx5/mr.c mlx5_ib_rereg_user_mr: the UMR fast path changes the MR in place",
		verbs.ReadingReregFailKeepsMR:      "uverbs_cmd.c ib_uverbs_rereg_mr: every check precedes the change",
		verbs.ReadingCurStateTrusted:       "drivers/infiniband/hw/mlx5/qp.c mlx5_ib_modify_qp: cur_state = attr->cur_qp_state",
		verbs.ReadingSendWCImm:             "providers/mlx5/cq.c:167 handle_good_req: IBV_WC_WITH_IMM on SEND_IMM and RDMA_WRITE_IMM",
		verbs.ReadingSendInvErrAcked:       "rdma-unit-test introspection.h NoNakOnSendInvalidateErrors (true; mlx5 keeps it)",
		verbs.ReadingFreeSlotOnRetire:      "providers/mlx5/qp.c:186 mlx5_wq_overflow: the tail moves in poll",
		verbs.ReadingNoCQTimestamps:        "providers/mlx5/cq.c: completion timestamps offered",
		verbs.ReadingNoXRC:                 "providers/mlx5/verbs.c mlx5_open_xrcd: XRC offered",
		verbs.ReadingNoDM:                  "providers/mlx5/verbs.c mlx5_alloc_dm: on-chip memory (MEMIC)",
		verbs.ReadingNoODP:                 "drivers/infiniband/hw/mlx5/odp.c: on-demand paging",
		verbs.ReadingOverrunDrops:          "rdma-unit-test introspection.h FullCqIdlesQp (true for mlx5): an overrun stops the CQ",
		verbs.ReadingInfiniteRetry7:        "IBTA: only rnr_retry 7 is unlimited (hardware)",
		verbs.ReadingPostENOTCONN:          "providers/mlx5/qp.c:849: ENOMEM, not ENOTCONN",
		verbs.ReadingRecvTooSmallRemInvReq: "hardware responder: LOC_LEN_ERR on the receive (not in provider code; unverified)",
		verbs.ReadingTransportOpLocQPOp:    "providers/mlx5/qp.c _mlx5_post_send: the per-QP-type switch builds a UD WQE whatever the opcode and has no READ or atomic case for UC, so the post succeeds and the device fails the WQE (the status, LOC_QP_OP_ERR, is the IBTA's for a WR the QP cannot execute; the hardware's syndrome is not in the sources)",
		verbs.ReadingNoFlowLabel:           "providers/mlx5/verbs.c mlx5_create_ah: the flow label goes into the address vector (av.grh_gid_fl)",
	},
	"siw": {
		verbs.ReadingOverrunDrops:       "siw_qp.c siw_sqe_complete/siw_rqe_complete: a full CQ loses the completion (-ENOMEM, IB_EVENT_CQ_ERR); the CQ carries on",
		verbs.ReadingSolicitedBitOnly:   "siw_qp.c siw_cq_notify_now: a solicited arm fires only for SIW_WQE_SOLICITED",
		verbs.ReadingFreeSlotOnRetire:   "siw_qp.c siw_activate_tx_from_sq: \"Clear SQE, can be re-used by application\"",
		verbs.ReadingSRQLimitAtCreate:   "siw_verbs.c siw_create_srq: srq->limit = attrs->srq_limit; armed when non-zero",
		verbs.ReadingSRQRecvQPPD:        "siw_qp_rx.c siw_proc_send: \"check with QP's PD if no SRQ present, SRQ's PD otherwise\"",
		verbs.ReadingNoCQTimestamps:     "providers/siw/siw.c: no create_cq_ex at all",
		verbs.ReadingNoXRC:              "providers/siw/siw.c siw_context_ops: no open_xrcd",
		verbs.ReadingNoDM:               "providers/siw/siw.c siw_context_ops: no alloc_dm",
		verbs.ReadingNoODP:              "siw_verbs.c siw_query_device: no odp_caps",
		verbs.ReadingPostENOTCONN:       "providers/siw/siw.c siw_post_send rings siw_db; siw_verbs.c siw_post_send: -ENOTCONN unless RTS",
		verbs.ReadingNoUD:               "siw_verbs.c siw_create_qp: \"only RC QP's supported\" (EOPNOTSUPP); providers/siw/siw.c: no create_ah",
		verbs.ReadingNoUC:               "siw_verbs.c siw_create_qp: \"only RC QP's supported\" (EOPNOTSUPP)",
		verbs.ReadingNoAtomics:          "siw_verbs.c siw_query_device: atomic_cap = 0; providers/siw/siw.c:489 map_send_opcode: atomics unsupported (EINVAL)",
		verbs.ReadingNoImmData:          "providers/siw/siw.c:489 map_send_opcode: SEND_WITH_IMM, RDMA_WRITE_WITH_IMM unsupported (EINVAL)",
		verbs.ReadingNoMW:               "siw.h SIW_MAX_MW 0; providers/siw/siw.c: no alloc_mw, map_send_opcode: BIND_MW, LOCAL_INV unsupported",
		verbs.ReadingNoCQEx:             "providers/siw/siw.c:821 siw_context_ops: no create_cq_ex (libibverbs: EOPNOTSUPP)",
		verbs.ReadingNoQPEx:             "providers/siw/siw.c:821 siw_context_ops: no create_qp_ex (verbs.h ibv_create_qp_ex: EOPNOTSUPP)",
		verbs.ReadingNoRereg:            "providers/siw/siw.c:821 siw_context_ops: no rereg_mr (libibverbs dummy_ops.c:465: EOPNOTSUPP)",
		verbs.ReadingPostAnyState:       "siw_verbs.c siw_post_send: refused unless RTS (the SQE stays in the ring; not modelled)",
		verbs.ReadingTransportOpLocQPOp: "siw has RC only, which takes every opcode siw runs; providers/siw/siw.c map_send_opcode refuses the rest with EINVAL at post",
		verbs.ReadingNoFlowLabel:        "no UD QPs and no address handles (NoUD): no GRH for a receiver to read",
	},
	"irdma": {
		verbs.ReadingPostAnyState:       "providers/irdma/uverbs.c:1579 irdma_upost_send and :1761 irdma_upost_recv never look at the QP state; rdma-unit-test introspection_irdma.h lists QpStateTest.PostSend{Reset,Init,Rtr}",
		verbs.ReadingNoUC:               "providers/irdma/uverbs.c:1298 irdma_ucreate_qp: RC and UD only (EOPNOTSUPP)",
		verbs.ReadingNoAtomics:          "drivers/infiniband/hw/irdma/verbs.c irdma_query_device: atomic_cap IB_ATOMIC_NONE; uverbs.c irdma_upost_send: other opcodes EINVAL",
		verbs.ReadingNoSRQ:              "providers/irdma/umain.c:79 irdma_uctx_ops: no create_srq (rdma-core 44)",
		verbs.ReadingNoQPEx:             "providers/irdma/umain.c:79 irdma_uctx_ops: no create_qp_ex",
		verbs.ReadingNoRereg:            "providers/irdma/umain.c:79 irdma_uctx_ops: no rereg_mr (libibverbs dummy_ops.c:465: EOPNOTSUPP)",
		verbs.ReadingNoXRC:              "providers/irdma/umain.c:79 irdma_uctx_ops: no open_xrcd",
		verbs.ReadingNoDM:               "providers/irdma/umain.c:79 irdma_uctx_ops: no alloc_dm",
		verbs.ReadingNoODP:              "irdma: no on-demand paging",
		verbs.ReadingNoCQTimestamps:     "providers/irdma/umain.h IRDMA_CQ_SUPPORTED_WC_FLAGS: completion timestamps offered",
		verbs.ReadingSendInvErrAcked:    "rdma-unit-test introspection_irdma.h NoNakOnSendInvalidateErrors false: a NAK",
		verbs.ReadingNoCQEx:             "providers/irdma/umain.c:79: create_cq_ex offered",
		verbs.ReadingTransportOpLocQPOp: "providers/irdma/uverbs.c irdma_upost_send looks at the QP type only for BIND_MW: an RDMA WRITE or READ on a UD QP is posted and the device fails it (the status is not in the sources; LOC_QP_OP_ERR assumed)",
		verbs.ReadingNoFlowLabel:        "drivers/infiniband/hw/irdma/verbs.c irdma_create_ah: ah_info->flow_label = grh.flow_label",
	},
}

// Source returns where the profile's reading r comes from: a file and
// function of the provider, the kernel driver or a published deviation
// list. It is "" for a profile that is not built in, and for a reading the
// profile leaves at the man pages' value without a source saying so.
func (p Profile) Source(r verbs.Reading) string { return profileSources[p.Name][r] }
