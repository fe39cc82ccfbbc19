package verbs

import (
	"fmt"
	"reflect"
	"strings"
)

// Readings states which reading of each implementation-defined rule a
// device follows: the rules the catalogue (spec/catalogue.md) marks [IMPL]
// or [CONFLICT], where the man pages, the kernel and the providers disagree
// or leave the choice open. One field per reading; each names its rule IDs
// and what true and false mean.
//
// The zero value is the man pages' reading of every rule (verbsim's default
// profile). Linux soft-RoCE (rxe) sets every field except
// DestroyBusyOnUnacked, ExactCQE and ResetToErr (sim.RXEProfile).
//
// The simulator's profiles hold a Readings (sim.Profile), the conformance
// suite holds an implementation to the Readings its device states, and the
// suite's reference model (conformance/model) predicts by the same value. A
// binding to real hardware states the readings its device follows.
type Readings struct {
	// Completion queues.

	// OverrunDrops: after an overrun only the completion that did not fit
	// is lost; once the consumer polls, the CQ stores completions again
	// (CQ-23 B, rxe). False: the CQ stays in error for good, every later
	// completion is lost with another IBV_EVENT_CQ_ERR, and ibv_poll_cq
	// fails with EIO (A).
	OverrunDrops bool
	// DestroyBusyOnUnacked: ibv_destroy_cq of a CQ with events read but not
	// acknowledged fails at once with EBUSY and changes nothing (the CQ-13
	// alternative; a stricter setting for tests, no adapter's behaviour).
	// False: it waits for the acknowledgements, as libibverbs does.
	DestroyBusyOnUnacked bool
	// ExactCQE: a CQ's capacity equals the cqe asked for (CQ-02; a stricter
	// setting for tests). False: any capacity of at least the request, up
	// to max_cqe (CQ-09); verbsim rounds up to the next 2^k-1, as rxe and
	// mlx5 do.
	ExactCQE bool
	// OverrunSendIgnored: a send completion lost to a CQ overrun leaves its
	// QP alone; only a receive completion lost that way moves the QP to ERR
	// (CQ-24 B, rxe). False: either moves it to ERR (A).
	OverrunSendIgnored bool
	// NoCQTimestamps: ibv_create_cq_ex refuses the completion-timestamp
	// wc_flags with EOPNOTSUPP, as rxe, whose provider offers only
	// IBV_WC_STANDARD_FLAGS (CQX-02). False: a CQ may ask for them.
	NoCQTimestamps bool
	// SolicitedBitOnly: an unsuccessful completion wakes a solicited-only
	// arm only when the producer marked it solicited, so send-side errors
	// and flushes never do (NOTIFY-05 B, rxe). False: every unsuccessful
	// completion wakes it, send or receive, flushes included (A).
	SolicitedBitOnly bool

	// Queue pairs.

	// ResetToErr: RESET→ERR is a legal transition that takes IBV_QP_STATE
	// alone (QP-08 A, the IBTA state diagram). False: it is EINVAL, as in
	// the Linux core's table (QP-08 B).
	ResetToErr bool
	// CurStateTrusted: the value of IBV_QP_CUR_STATE replaces the QP's real
	// state while a modify is validated and is never compared with it, as
	// rxe and rdmavt do (QP-12). False: it is an assertion; a value other
	// than the real state is EINVAL.
	CurStateTrusted bool
	// FreeSlotOnRetire: a send or receive slot is free again as soon as the
	// device completes or flushes its request, whether or not the
	// completion is polled or even stored (QP-29 B, QP-31, rxe); a stream
	// of unsignaled sends then never fills the queue (QP-30). False: only
	// once the completion of the request, or of a later one of its queue
	// that covers it, is polled (QP-29 A, mlx5).
	FreeSlotOnRetire bool
	// TransportOpLocQPOp: ibv_post_send accepts a request whose opcode the
	// QP's transport does not take (an RDMA or atomic opcode on UD, a READ
	// or atomic on UC, LOCAL_INV or SEND_WITH_INV on UD), and the request
	// completes with LOC_QP_OP_ERR when it executes, as rxe's user-space
	// provider posts it unchecked and its requester finds no packet
	// opcode for it (QP-33 B, rxe; mlx5's post path does not check the
	// opcode per QP type either). BIND_MW on UD stays EINVAL at post (rxe's
	// validate_send_wr). False: EINVAL at post, the request as bad_wr
	// (A: efa, hns, the kernel's own post path).
	TransportOpLocQPOp bool
	// SendOpsRXE: rxe's readings of the work request builder: a UC QP may
	// not ask for IBV_QP_EX_WITH_LOCAL_INV (QPX-01), and ibv_wr_complete
	// refuses a batch that overflows the send queue, max_send_sge or
	// max_inline_data with ENOSPC (QPX-04). False: the transport matrix
	// decides the supported operations (QP-33) and the errnos are those of
	// ibv_post_send (ENOMEM, EINVAL).
	SendOpsRXE bool

	// Shared receive queues and XRC.

	// SRQLimitAtCreate: a srq_limit given to ibv_create_srq arms the limit,
	// as rxe does (SRQ-01). False: it is ignored, as the man page says.
	SRQLimitAtCreate bool
	// SRQRecvQPPD: a receive WR taken from an SRQ is checked against the PD
	// of the QP the message arrived on, as rxe does (SRQ-12 B). False:
	// against the SRQ's own PD, as the IBTA has it (A).
	SRQRecvQPPD bool
	// NoXRC: the device has no XRC verbs: ibv_open_xrcd, the XRC QP types
	// and every ibv_create_srq_ex that ibv_create_srq cannot serve fail
	// with EOPNOTSUPP, libibverbs' answer for a provider without them, as
	// rxe (XRC-03). False: XRC domains, SRQs and QPs work.
	NoXRC bool
	// NoDM: the device has no device memory: max_dm_size is 0 and
	// ibv_alloc_dm fails with EOPNOTSUPP, libibverbs' answer for a provider
	// without alloc_dm, as rxe (DM-02). False: ibv_alloc_dm shares out
	// max_dm_size bytes of device memory.
	NoDM bool

	// Memory regions and windows.

	// DeregBoundEINVAL: ibv_dereg_mr of an MR with bound memory windows
	// fails with EINVAL, as rxe_dereg_mr does (MR-06). False: EBUSY, the
	// core's use count.
	DeregBoundEINVAL bool
	// ReregFailKeepsMR: after ibv_rereg_mr fails with IBV_REREG_MR_ERR_CMD
	// the MR is as it was and works, as in the kernel, whose every check
	// precedes any change (MR-14 B, rxe). False: it is unusable until
	// deregistered: its keys resolve no more and another ibv_rereg_mr is
	// EINVAL, as the man page says it "shouldn't be used" (A).
	ReregFailKeepsMR bool
	// ReregKeepsKeys: a successful ibv_rereg_mr keeps the lkey and rkey, as
	// rxe changes its MR in place (MR-15 B). False: every success gives new
	// keys and the old ones stop working, as a deregistration followed by a
	// registration would (A).
	ReregKeepsKeys bool
	// ReregNoTranslation: IBV_REREG_MR_CHANGE_TRANSLATION fails with
	// EOPNOTSUPP and IBV_REREG_MR_ERR_CMD, the MR as it was, as rxe
	// supports only CHANGE_PD and CHANGE_ACCESS (MR-16 B). False: supported
	// (A).
	ReregNoTranslation bool
	// NoODP: the device has no on-demand paging: odp_caps and xrc_odp_caps
	// read zero, ibv_reg_mr and ibv_rereg_mr refuse IBV_ACCESS_ON_DEMAND
	// with EOPNOTSUPP and ibv_advise_mr fails with EOPNOTSUPP, as rxe
	// in the kernels of rdma-core 44's time (Linux 6.1, no rxe_odp.c)
	// (ODP-01, ODP-02). False: on-demand MRs and ibv_advise_mr work, as on
	// mlx5.
	NoODP bool
	// MWType1NoZeroBased: binding a type 1 window with
	// IBV_ACCESS_ZERO_BASED fails with MW_BIND_ERR, as rxe enforces IBTA
	// o10-36.2.2 (MW-05). False: it binds, as the ibv_bind_mw man page lists
	// the flag without restriction.
	MWType1NoZeroBased bool

	// Transport.

	// RecvTooSmallRemInvReq: the responder of an RC SEND that does not fit
	// its receive WR completes that WR with REM_INV_REQ_ERR (XFER-05 B,
	// rxe). False: LOC_LEN_ERR (A).
	RecvTooSmallRemInvReq bool
	// InfiniteRetry7: retry_cnt = 7 retries without limit (XFER-10 B, rxe).
	// False: exactly seven retries, then RETRY_EXC_ERR (A).
	InfiniteRetry7 bool
	// RecvProtQPOp: a bad lkey in the receive WR an incoming SEND lands in
	// completes it with LOC_QP_OP_ERR (XFER-16 B, rxe). False: LOC_PROT_ERR.
	RecvProtQPOp bool
	// WriteImmRKeyRemAccess: an RC RDMA WRITE WITH IMMEDIATE whose rkey
	// check fails completes the responder's receive WR with REM_ACCESS_ERR
	// when the message is one packet, and flushes it when longer, since rxe
	// takes the receive WR only at the packet that carries the immediate
	// (XFER-30 B, rxe). False: the message consumes the receive WR at its
	// first packet and completes it with LOC_ACCESS_ERR (A).
	WriteImmRKeyRemAccess bool
	// LateLocalCheck: the local scatter list of an RDMA READ or an atomic
	// is checked only when the response arrives, so the remote's error wins
	// over a bad local SGE and a remote atomic executes before the local
	// error is found (XFER-31 B, rxe). False: every local SGE is checked
	// before the request is sent (A).
	LateLocalCheck bool
	// SendInvErrAcked: an RC SEND_WITH_INV whose rkey cannot be invalidated
	// at the responder is acknowledged: the requester's send completes
	// successfully and its QP stays in RTS, while the responder completes
	// the receive WR with REM_INV_REQ_ERR and moves to ERR, as rxe's
	// responder does (RESPST_ERR_INVALIDATE_RKEY, class J; XFER-29 B).
	// False: a NAK invalid request: the requester's send fails with
	// REM_INV_REQ_ERR, the receive WR with LOC_QP_OP_ERR, and both QPs
	// end in ERR (A).
	SendInvErrAcked bool
	// NoSQE: a send error of a UD or UC QP takes it to ERR, receive queue
	// included (FLUSH-10 B, rxe). False: to SQE; receives go on and SQE→RTS
	// is allowed (A).
	NoSQE bool
	// SendWCImm: send-side completions of *_WITH_IMM requests carry
	// IBV_WC_WITH_IMM (WC-13, rxe). False: only receive completions do.
	SendWCImm bool
	// NoQPEvents: the responder raises none of IBV_EVENT_QP_REQ_ERR,
	// IBV_EVENT_QP_ACCESS_ERR and IBV_EVENT_COMM_EST (ASYNC-11, rxe).
	// False: it raises them (ASYNC-09, ASYNC-10, ASYNC-12).
	NoQPEvents bool
	// AlwaysSQDrained: RTS→SQD raises IBV_EVENT_SQ_DRAINED whether or not
	// en_sqd_async_notify was set, as rxe does (ASYNC-13). False: only when
	// it was set.
	AlwaysSQDrained bool
	// NoFlowLabel: every packet with a GRH leaves with flow label 0,
	// whatever its address vector says, so a UD receiver's GRH reads 0
	// there (AV-05 B, rxe: prepare_ipv6_hdr in rxe_net.c gives
	// ip6_flow_hdr a zero label). False: the vector's flow label, as the
	// IBTA GRH and mlx5 carry it (A).
	NoFlowLabel bool
	// ResetPurgesCQ: moving a QP to RESET, or destroying it, deletes its
	// completions still waiting in its CQs, as mlx5 does (mlx5_cq_clean;
	// CQ-26 B). False: they stay to be polled, as on rxe (A). No built-in
	// profile sets it; the drop-in library's VERBSIM_READINGS does.
	ResetPurgesCQ bool
}

// names returns the name and value of every reading, in declaration order.
// TestReadingsString checks that it covers every field.
func (r Readings) names() []struct {
	name string
	on   bool
} {
	return []struct {
		name string
		on   bool
	}{
		{"OverrunDrops", r.OverrunDrops},
		{"DestroyBusyOnUnacked", r.DestroyBusyOnUnacked},
		{"ExactCQE", r.ExactCQE},
		{"OverrunSendIgnored", r.OverrunSendIgnored},
		{"NoCQTimestamps", r.NoCQTimestamps},
		{"SolicitedBitOnly", r.SolicitedBitOnly},
		{"ResetToErr", r.ResetToErr},
		{"CurStateTrusted", r.CurStateTrusted},
		{"FreeSlotOnRetire", r.FreeSlotOnRetire},
		{"TransportOpLocQPOp", r.TransportOpLocQPOp},
		{"SendOpsRXE", r.SendOpsRXE},
		{"SRQLimitAtCreate", r.SRQLimitAtCreate},
		{"SRQRecvQPPD", r.SRQRecvQPPD},
		{"NoXRC", r.NoXRC},
		{"NoDM", r.NoDM},
		{"DeregBoundEINVAL", r.DeregBoundEINVAL},
		{"ReregFailKeepsMR", r.ReregFailKeepsMR},
		{"ReregKeepsKeys", r.ReregKeepsKeys},
		{"ReregNoTranslation", r.ReregNoTranslation},
		{"NoODP", r.NoODP},
		{"MWType1NoZeroBased", r.MWType1NoZeroBased},
		{"RecvTooSmallRemInvReq", r.RecvTooSmallRemInvReq},
		{"InfiniteRetry7", r.InfiniteRetry7},
		{"RecvProtQPOp", r.RecvProtQPOp},
		{"WriteImmRKeyRemAccess", r.WriteImmRKeyRemAccess},
		{"LateLocalCheck", r.LateLocalCheck},
		{"SendInvErrAcked", r.SendInvErrAcked},
		{"NoSQE", r.NoSQE},
		{"SendWCImm", r.SendWCImm},
		{"NoQPEvents", r.NoQPEvents},
		{"AlwaysSQDrained", r.AlwaysSQDrained},
		{"NoFlowLabel", r.NoFlowLabel},
		{"ResetPurgesCQ", r.ResetPurgesCQ},
	}
}

// String names the readings that differ from the man pages (the fields that
// are true), space separated in declaration order, or returns "man-pages"
// for the zero value.
func (r Readings) String() string {
	var s []string
	for _, n := range r.names() {
		if n.on {
			s = append(s, n.name)
		}
	}
	if len(s) == 0 {
		return "man-pages"
	}
	return strings.Join(s, " ")
}

// Set turns on each named reading (a field name of Readings), or turns it
// off when the name has a '-' in front: r.Set("ReregKeepsKeys", "-NoXRC").
// A name that is no reading is an error naming the readings there are; the
// names before it are set.
func (r *Readings) Set(names ...string) error {
	v := reflect.ValueOf(r).Elem()
	for _, name := range names {
		on := true
		if rest, ok := strings.CutPrefix(name, "-"); ok {
			name, on = rest, false
		}
		f := v.FieldByName(name)
		if !f.IsValid() || f.Kind() != reflect.Bool || !f.CanSet() {
			var all []string
			for _, n := range r.names() {
				all = append(all, n.name)
			}
			return fmt.Errorf("%q is not a reading; the readings are %s, each optionally prefixed with '-'", name, strings.Join(all, ", "))
		}
		f.SetBool(on)
	}
	return nil
}
