// Package qp holds the queue-pair state machine of the simulator as pure
// data and functions: the verbs enums a QP is described with, the
// attribute record of ibv_modify_qp and ibv_query_qp, the table of legal
// transitions with the attributes each one takes per transport, and
// CheckModify, which validates a modify without changing anything.
//
// This package is the engine behind sim.QP and sim.SRQ, not a public API:
// it sits under sim/internal, so only package sim and its tests import it,
// and users reach a QP or SRQ through sim's handles, whose methods forward
// here (their doc comments are the verbs documentation). Its exported names
// (the ...Locked hooks, Tally, Handle, the Host and Memory interfaces) are
// for package sim. The vocabulary (states, attributes, WRs) is package
// verbs; this package aliases it.
//
// The QP object (its queues, posting, flushing) builds on these: it calls
// CheckModify, applies the change with Attr.Apply only when that succeeded,
// and then performs whatever entering the new state involves. Deciding
// first in pure code and acting afterwards is what makes ibv_modify_qp
// all-or-nothing (QP-13): nothing is touched until every check has passed.
//
// # Index
//
//   - State (Reset..Err, Unknown), Type (RC, UC, UD and the unsimulated
//     types), MTU, MigState and AccessFlags carry the verbs.h numbers; each
//     has String, and the enums have Name for the C enumerator.
//   - AttrMask is enum ibv_qp_attr_mask; its String renders
//     "STATE|PKEY_INDEX|PORT".
//   - Attr, AHAttr, GlobalRoute and Cap mirror struct ibv_qp_attr and its
//     members. Normalize cuts PSNs to 24 bits; Attr.Apply copies the
//     fields a mask names.
//   - Transition reports the required and optional bits of one
//     (from, to, transport); MinimalMask is an independent hand-written
//     list of the smallest legal masks, for tests.
//   - CheckModify validates a modify against the table, the CUR_STATE and
//     SQD-drain rules and the device Limits, under a Policy.
//   - SendOps is send_ops_flags of ibv_create_qp_ex; a QP created with
//     InitAttr.Ex has the ibv_wr_* work request builder (QP.WRStart,
//     the WR* builders and setters, QP.WRComplete, QP.WRAbort), which
//     posts its batches whole or not at all through PostSend's checks
//     (QPX-01..QPX-05).
//
// Rule IDs such as QP-07 refer to the verbs rules catalogue
// (spec/catalogue.md).
//
// # The state machine
//
// Every arrow is one ibv_modify_qp call with IBV_QP_STATE in its mask.
// Arrows into RESET and ERR exist from every state and are left out of the
// picture; they take IBV_QP_STATE and nothing else (QP-09). The loops are
// modifies that stay in a state while changing attributes, which is also
// what a mask without IBV_QP_STATE means (QP-11).
//
//	┌──────┐     ┌──────┐     ┌─────┐     ┌─────┐     ┌─────┐
//	│RESET ├────►│ INIT ├────►│ RTR ├────►│ RTS ├────►│ SQD │
//	└──┬───┘     └──┬───┘     └─────┘     └┬──┬─┘◄────┴──┬──┘
//	   ↺            ↺                      ↺  ▲          ↺
//	                                          │
//	                                       ┌──┴──┐  entered only by the
//	                                       │ SQE │  device, after a UD or
//	                                       └─────┘  UC send error
//
//	any state ──► RESET          any state but RESET ──► ERR
//	ERR ↺ (a repeated move to ERR is accepted)
//
// Illegal, and therefore EINVAL, are among others INIT→RTS, RTR→RTR (so
// even a mask-only modify fails in RTR, and likewise in SQE), RTS→RTR,
// RTR→SQD, SQE→SQE, and RESET→ERR (QP-08: the IBTA allows it, Linux does
// not; Policy.ResetToErr selects the IBTA reading).
//
// # What each transition takes
//
// Besides IBV_QP_STATE (R = required, O = optional):
//
//	RESET→INIT  RC, UC  R: PKEY_INDEX PORT ACCESS_FLAGS
//	            UD      R: PKEY_INDEX PORT QKEY
//	INIT→INIT   RC, UC  O: PKEY_INDEX PORT ACCESS_FLAGS
//	            UD      O: PKEY_INDEX PORT QKEY
//	INIT→RTR    RC      R: AV PATH_MTU DEST_QPN RQ_PSN MAX_DEST_RD_ATOMIC MIN_RNR_TIMER
//	                    O: ALT_PATH ACCESS_FLAGS PKEY_INDEX
//	            UC      R: AV PATH_MTU DEST_QPN RQ_PSN
//	                    O: ALT_PATH ACCESS_FLAGS PKEY_INDEX
//	            UD      O: PKEY_INDEX QKEY
//	RTR→RTS     RC      R: SQ_PSN TIMEOUT RETRY_CNT RNR_RETRY MAX_QP_RD_ATOMIC
//	                    O: CUR_STATE ALT_PATH ACCESS_FLAGS PATH_MIG_STATE MIN_RNR_TIMER
//	            UC      R: SQ_PSN   O: CUR_STATE ALT_PATH ACCESS_FLAGS PATH_MIG_STATE
//	            UD      R: SQ_PSN   O: CUR_STATE QKEY
//	RTS→RTS     RC      O: CUR_STATE ALT_PATH ACCESS_FLAGS PATH_MIG_STATE MIN_RNR_TIMER
//	and SQD→RTS UC      O: CUR_STATE ALT_PATH ACCESS_FLAGS PATH_MIG_STATE
//	            UD      O: CUR_STATE QKEY
//	RTS→SQD     all     O: EN_SQD_ASYNC_NOTIFY
//	SQD→SQD     RC      O: PORT AV TIMEOUT RETRY_CNT RNR_RETRY MAX_QP_RD_ATOMIC
//	                       MAX_DEST_RD_ATOMIC ALT_PATH ACCESS_FLAGS PKEY_INDEX
//	                       MIN_RNR_TIMER PATH_MIG_STATE
//	            UC      O: AV ALT_PATH ACCESS_FLAGS PKEY_INDEX PATH_MIG_STATE
//	            UD      O: PKEY_INDEX QKEY
//	SQE→RTS     UC      O: CUR_STATE ACCESS_FLAGS
//	            UD      O: CUR_STATE QKEY
//	            RC      nothing (RC never enters SQE: FLUSH-09)
//	RESET→RESET, INIT→RESET/ERR, RTR→RESET/ERR, RTS→RESET/ERR,
//	SQD→RESET/ERR, SQE→RESET/ERR, ERR→RESET/ERR: nothing
//
// Any other bit fails (QP-10). That makes attributes a transport does not
// have unusable on it (QKEY on RC, AV or DEST_QPN on UD) and refuses
// IBV_QP_CAP and IBV_QP_RATE_LIMIT everywhere (QP-21).
//
// # Beyond the table
//
// IBV_QP_CUR_STATE is accepted only where it is optional above, that is on
// the way into RTS from RTR, RTS, SQD or SQE (QP-12). What its value means
// is a Policy: by default it must be the QP's real state; rxe instead
// validates the whole call as if the QP were in the claimed state.
//
// While an SQD drain is in progress, every move with IBV_QP_STATE out of
// SQD except to ERR fails (QP-23, as rxe does; this includes SQD→RESET and
// an explicit SQD→SQD).
//
// Values are checked against the device (QP-22): ports exist; P_Key and GID
// indexes fall inside the port's tables; path_mtu is a valid code not above
// the port's max_mtu; timeout and min_rnr_timer are at most 31; retry_cnt
// and rnr_retry at most 7; max_rd_atomic and max_dest_rd_atomic at most
// the device's initiator and responder depths; on INIT→RTR the primary
// path leaves through the QP's own port; global addressing where the port
// requires it; alternate paths only on InfiniBand ports; qp_access_flags
// only the four QP bits. PSNs wider than 24 bits are not an error: the
// kernel cuts them, and so do Normalize and Attr.Apply.
//
// # Nil handles
//
// Methods of a nil *QP or *SRQ never panic, the engine's ...Locked hooks
// included: those that return an error return EINVAL, the others the zero
// value of each result (State reports RESET, Destroyed false, Tally nil).
// Package sim's doc states the convention for the whole API.
package qp
