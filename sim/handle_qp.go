package sim

import (
	"context"

	"github.com/verbsim/verbsim/sim/internal/cq"
	"github.com/verbsim/verbsim/sim/internal/qp"
	"github.com/verbsim/verbsim/verbs"
)

// QP is a queue pair (struct ibv_qp, and struct ibv_qp_ex for a QP created
// with QPInitSendOpsFlags: the work request builder WRStart ... WRComplete).
// It is a handle on the engine's QP; every method is a verb or a view of
// the QP, safe to call from any goroutine.
// On a nil *QP every method returns EINVAL or zero values; see the package
// doc.
type QP struct{ q *qp.QP }

// QPStats counts what happened to a QP (QP.Stats): a simulator view with
// no verbs call of its own. The transport's counters are those of an RC
// (or XRC) requester and responder; providers export their like as
// hardware counters (rxe's and mlx5's names are given, as rdma statistic
// shows them), there per port, here per QP. Counters only grow: RESET
// keeps them.
type QPStats struct {
	SendPosted, RecvPosted   uint64 // work requests posted
	SendFlushed, RecvFlushed uint64 // work requests completed with IBV_WC_WR_FLUSH_ERR
	CQOverruns               uint64 // completions of this QP lost to a CQ overrun

	// As requester: the NAKs it acted on (a NAK for a PSN already
	// acknowledged is ignored and not counted), and its timers.
	RNRNAKsReceived   uint64 // RNR NAKs: wait min_rnr_timer, then send again (XFER-07; rxe rcvd_rnr_err)
	SeqNAKsReceived   uint64 // PSN sequence error NAKs: go back to the PSN (rxe rcvd_seq_err, mlx5 packet_seq_err)
	ErrorNAKsReceived uint64 // NAKs that fail the WR: invalid request, remote access or remote operational error
	RNRRetries        uint64 // RNR waits over: the message is sent again
	ACKTimeouts       uint64 // ACK timeouts with work outstanding (XFER-10; mlx5 local_ack_timeout_err): each retransmits, unless retry_cnt is spent
	ImpliedNAKs       uint64 // READ or atomic responses found lost and asked for again (mlx5 implied_nak_seq_err)
	RetryExceeded     uint64 // WRs failed with IBV_WC_RETRY_EXC_ERR (rxe retry_exceeded_err)
	RNRRetryExceeded  uint64 // WRs failed with IBV_WC_RNR_RETRY_EXC_ERR (rxe rnr_retry_exceeded_err)

	// As responder: the NAKs it sent, and the requests it had executed
	// already.
	RNRNAKsSent       uint64 // no receive WR for a SEND or WRITE WITH IMMEDIATE (rxe send_rnr_err)
	SeqNAKsSent       uint64 // a request beyond the expected PSN, NAKed once per gap (rxe counts every such request: out_of_seq_request)
	ErrorNAKsSent     uint64 // invalid request, remote access or remote operational error NAKs
	DuplicateRequests uint64 // requests behind the expected PSN, answered and not executed again (XFER-25; rxe duplicate_request)
}

// newQP makes the handle of an engine QP and records it there, so that the
// engine's returns (the QP of an async event) map back to it without
// allocating.
func newQP(e *qp.QP) *QP {
	h := &QP{q: e}
	e.Handle = h
	return h
}

// eng returns the engine QP, nil for a nil handle (whose engine methods
// then report EINVAL or zero values).
func (q *QP) eng() *qp.QP {
	if q == nil {
		return nil
	}
	return q.q
}

// qpHandle maps an engine QP back to its handle; nil for nil.
func qpHandle(e *qp.QP) *QP {
	if e == nil {
		return nil
	}
	h, _ := e.Handle.(*QP)
	return h
}

// cqOf maps a CQ as the QP engine holds it back to its handle.
func cqOf(c qp.CQ) *CQ {
	e, _ := c.(*cq.CQ)
	return cqHandle(e)
}

// initAttrHandles turns the creation attributes the engine reports into
// the QPInitAttr of handles that would create the same QP.
func initAttrHandles(in qp.InitAttr) QPInitAttr {
	a := QPInitAttr{
		Context: in.Context, SendCQ: cqOf(in.SendCQ), RecvCQ: cqOf(in.RecvCQ), SRQ: srqHandle(in.SRQ),
		Cap: in.Cap, Type: in.Type, SQSigAll: in.SQSigAll,
	}
	if in.Ex {
		a.CompMask, a.SendOpsFlags = QPInitPD|QPInitSendOpsFlags, in.SendOps
	}
	return a
}

// Modify changes the QP's attributes and state (ibv_modify_qp). The call is
// checked as a whole by CheckModify against the transition table (QP-07..12,
// QP-14..21), the value limits (QP-22) and the SQD-drain rule (QP-23), and
// either everything in mask takes effect or nothing does (QP-13). On a
// destroyed QP it returns EINVAL.
//
// Entering a state has these effects:
//   - ERR: every outstanding work request of both queues completes with
//     IBV_WC_WR_FLUSH_ERR (FLUSH-01..04); no async event (FLUSH-14).
//   - RESET: both queues are emptied without completions; the QP can be
//     taken through INIT, RTR and RTS again (FLUSH-08).
//   - SQD: the send queue stops taking new work; with nothing in flight the
//     drain is over at once, and with EnSQDAsyncNotify an
//     IBV_EVENT_SQ_DRAINED names the QP (ASYNC-13).
func (q *QP) Modify(attr *verbs.QPAttr, mask verbs.QPAttrMask) error {
	return q.eng().Modify(attr, mask)
}

// Num returns the QP number (qp_num).
func (q *QP) Num() uint32 { return q.eng().Num() }

// Type returns the transport type.
func (q *QP) Type() verbs.QPType { return q.eng().Type() }

// QPContext returns the qp_context given at creation (ibv_qp.qp_context).
func (q *QP) QPContext() any { return q.eng().Context() }

// Cap returns the QP's real capacities (QP-02).
func (q *QP) Cap() verbs.QPCap { return q.eng().Cap() }

// State returns the current state, as ibv_query_qp reports it (QP-24).
func (q *QP) State() verbs.QPState { return q.eng().State() }

// Stats returns the QP's counters.
func (q *QP) Stats() QPStats { return QPStats(q.eng().Stats()) }

// Query is ibv_query_qp(qp, &attr, attr_mask, &init_attr), as
// verbs.QP.Query is: it returns the QP's attributes and its creation
// attributes. The attribute holds every attribute set so far, the current
// state in QPState and CurQPState, and the real capacities in Cap (QP-24).
// The man page makes the mask a hint, the minimum to return; like rxe
// (rxe_qp_to_attr) and rdma-core's ibv_cmd_query_qp, which copy every
// field whatever the mask, verbsim returns every attribute for any
// accepted mask, 0 included (QUERY-01), so Query(verbs.QPAttrState) is
// enough to read them all. The QPInitAttr holds qp_context, the CQs, the
// SRQ, the type, sq_sig_all and the real capacities; with an SRQ,
// MaxRecvWR and MaxRecvSGE are 0. A mask with a bit from
// IBV_QP_RATE_LIMIT up is EOPNOTSUPP, as libibverbs refuses it on this
// path (QUERY-02).
func (q *QP) Query(mask verbs.QPAttrMask) (verbs.QPAttr, QPInitAttr, error) {
	a, in, err := q.eng().QueryMask(mask)
	return a, initAttrHandles(in), err
}

// Destroy destroys the QP (ibv_destroy_qp) and waits without a deadline for
// the acknowledgement of its async events already read. See DestroyContext.
func (q *QP) Destroy() error { return q.eng().Destroy() }

// DestroyContext destroys the QP (ibv_destroy_qp). Outstanding work requests
// vanish without completions (QP-37); completions already in a CQ stay there
// (CQ-26, sim default); the references on the CQs are dropped, so they can be
// destroyed next (PD-05); unread async events naming the QP are discarded.
// It waits, bounded by ctx, for the acks of the QP's async events already
// read (ASYNC-05), like a CQ's destroy. On a destroyed QP it returns EINVAL.
func (q *QP) DestroyContext(ctx context.Context) error { return q.eng().DestroyContext(ctx) }

// Destroyed reports whether the QP has been destroyed (or is waiting for acks
// to finish being destroyed). A nil QP reports false, the zero value, like
// every accessor on a nil handle.
func (q *QP) Destroyed() bool { return q.eng().Destroyed() }

// PD returns the protection domain the QP was created in (ibv_qp.pd).
func (q *QP) PD() *PD {
	pd, _ := q.eng().PD().(*PD)
	return pd
}

// Context returns the device context the QP was created through
// (ibv_qp.context): that of its PD, or of its XRC domain for an XRC_RECV
// QP. It is not the qp_context of QPInitAttr.Context, which is QPContext,
// and which Context returned until the handles of issue #9 (see
// CQ.Context).
func (q *QP) Context() *Context {
	if x := q.XRCD(); x != nil {
		return x.ctx
	}
	return q.PD().context()
}

// XRCD returns the XRC domain of an XRC_RECV QP (ibv_qp_init_attr_ex.xrcd),
// or nil for every other QP (XRC-06).
func (q *QP) XRCD() *XRCD {
	x, _ := q.eng().XRCD().(*XRCD)
	return x
}

// WRSetXRCSRQN gives the last request built the number of the XRC SRQ it
// is for (ibv_wr_set_xrc_srqn), on an XRC_SEND QP (XRC-09).
func (q *QP) WRSetXRCSRQN(remoteSRQN uint32) { q.eng().WRSetXRCSRQN(remoteSRQN) }

// SendCQ returns the CQ of the QP's send completions (ibv_qp.send_cq).
func (q *QP) SendCQ() *CQ { return cqOf(q.eng().SendCQ()) }

// RecvCQ returns the CQ of the QP's receive completions (ibv_qp.recv_cq).
func (q *QP) RecvCQ() *CQ { return cqOf(q.eng().RecvCQ()) }

// SRQ returns the shared receive queue the QP takes its receives from
// (ibv_qp.srq), or nil.
func (q *QP) SRQ() *SRQ { return srqHandle(q.eng().SRQ()) }

// BindMW binds the type 1 memory window mw as ibv_bind_mw
// does: it posts a BIND_MW work request with the given wr_id and send
// flags to q's send queue, which completes with IBV_WC_BIND_MW or, when a
// bind check fails as the request executes, MW_BIND_ERR (MW-04). As the
// verb returns, mw's rkey already reads as the key the window will have
// once bound (ibv_inc_rkey of the old one); the man page asks the caller
// to keep the old key in case the completion reports a failure, and the
// window then keeps it. A zero info.Length unbinds the window.
//
// Errors, with nothing posted: EINVAL for a nil QP, a mw that is not a
// live type 1 window of q's device (type 2 windows are bound with
// PostSend, MW-04), a QP that is not RC or UC, and every error of
// PostSend (state, flags, a full queue).
func (q *QP) BindMW(mw *MW, wrID uint64, flags verbs.SendFlags, info verbs.MWBindInfo) (err error) {
	return q.eng().BindMW(mw, wrID, flags, info)
}

// PostSend posts a list of send work requests (ibv_post_send). They are
// taken in order; the first that fails its checks stops the list: PostSend
// returns how many were posted before it and its error, so wrs[n] is the bad
// request (QP-27). The checks:
//
//   - the QP must be in RTS, SQD, SQE or ERR (QP-26): EINVAL otherwise;
//   - the opcode must suit the transport (QP-33): EINVAL, or EOPNOTSUPP for
//     opcodes verbsim does not execute;
//   - at most max_send_sge elements (QP-32), known flags only, FENCE only on
//     RC, INLINE only on SEND and RDMA WRITE opcodes (QP-34), an inline
//     payload of at most max_inline_data bytes (QP-35): EINVAL;
//   - a UD request needs an address handle: EINVAL;
//   - a free slot (QP-29): ENOMEM. Under the default reading a slot is
//     free once the completion covering its request has been polled; under
//     Profile.FreeSlotOnRetire once the request has completed or been
//     flushed.
//
// Requests posted in SQE or ERR are accepted and flushed at once (FLUSH-05).
// Inline payloads are copied now; other buffers are read when the request
// executes (QP-35, QP-36). PostSend allocates nothing.
func (q *QP) PostSend(wrs []verbs.SendWR) (n int, err error) { return q.eng().PostSend(wrs) }

// PostRecv posts a list of receive work requests (ibv_post_recv), in order,
// stopping at the first that fails: it returns how many were posted and the
// error, so wrs[n] is the bad request (QP-27). Receives may be posted in every
// state but RESET (QP-25: EINVAL); at most max_recv_sge elements (QP-32:
// EINVAL); ENOMEM when the queue is full (QP-31). Requests posted in ERR are
// flushed at once (FLUSH-05). PostRecv allocates nothing.
func (q *QP) PostRecv(wrs []verbs.RecvWR) (n int, err error) { return q.eng().PostRecv(wrs) }

// Outstanding returns the number of send and receive work requests posted and
// not yet completed. It is a simulator control with no verbs counterpart.
func (q *QP) Outstanding() (send, recv int) { return q.eng().Outstanding() }

// SendOpsFlags returns the send_ops_flags q was created with and whether
// it was created with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS at all (only then
// has it a builder; ibv_qp_to_qp_ex returns NULL otherwise).
func (q *QP) SendOpsFlags() (ops verbs.QPSendOps, ex bool) { return q.eng().SendOpsFlags() }

// SetWRID sets the wr_id that the next builders give their requests, the
// qpx->wr_id field of struct ibv_qp_ex: set it before calling the builder.
// It keeps its value from batch to batch.
func (q *QP) SetWRID(id uint64) { q.eng().SetWRID(id) }

// SetWRFlags sets the send flags that the next builders give their
// requests, the qpx->wr_flags field of struct ibv_qp_ex (SIGNALED, FENCE,
// SOLICITED, INLINE, IP_CSUM, checked as PostSend checks send_flags). It
// keeps its value from batch to batch.
func (q *QP) SetWRFlags(f verbs.SendFlags) { q.eng().SetWRFlags(f) }

// WRStart opens a batch of work requests (ibv_wr_start). The builders and
// setters that follow add to it; WRComplete posts it, WRAbort discards it.
// Calling WRStart while a batch is open is a misuse (in C the provider's
// send-queue lock would deadlock): the open batch is poisoned and its
// WRComplete fails with EINVAL, posting nothing (QPX-05).
func (q *QP) WRStart() { q.eng().WRStart() }

// WRAbort discards the open batch (ibv_wr_abort): nothing of it is
// posted. Without an open batch it does nothing.
func (q *QP) WRAbort() { q.eng().WRAbort() }

// WRSend starts a SEND (ibv_wr_send); its data comes from the next data
// setter.
func (q *QP) WRSend() { q.eng().WRSend() }

// WRSendImm starts a SEND_WITH_IMM carrying imm (ibv_wr_send_imm; the
// immediate data is opaque, in network byte order).
func (q *QP) WRSendImm(imm uint32) { q.eng().WRSendImm(imm) }

// WRSendInv starts a SEND_WITH_INV that invalidates rkey at the
// responder (ibv_wr_send_inv).
func (q *QP) WRSendInv(rkey uint32) { q.eng().WRSendInv(rkey) }

// WRRDMAWrite starts an RDMA WRITE to addr under rkey (ibv_wr_rdma_write).
func (q *QP) WRRDMAWrite(rkey uint32, addr uint64) { q.eng().WRRDMAWrite(rkey, addr) }

// WRRDMAWriteImm starts an RDMA WRITE_WITH_IMM (ibv_wr_rdma_write_imm).
func (q *QP) WRRDMAWriteImm(rkey uint32, addr uint64, imm uint32) {
	q.eng().WRRDMAWriteImm(rkey, addr, imm)
}

// WRRDMARead starts an RDMA READ from addr under rkey (ibv_wr_rdma_read);
// the data setter names where the bytes land.
func (q *QP) WRRDMARead(rkey uint32, addr uint64) { q.eng().WRRDMARead(rkey, addr) }

// WRAtomicCmpSwp starts an ATOMIC_CMP_AND_SWP on the 8 bytes at addr
// (ibv_wr_atomic_cmp_swp).
func (q *QP) WRAtomicCmpSwp(rkey uint32, addr, compare, swap uint64) {
	q.eng().WRAtomicCmpSwp(rkey, addr, compare, swap)
}

// WRAtomicFetchAdd starts an ATOMIC_FETCH_AND_ADD on the 8 bytes at addr
// (ibv_wr_atomic_fetch_add).
func (q *QP) WRAtomicFetchAdd(rkey uint32, addr, add uint64) {
	q.eng().WRAtomicFetchAdd(rkey, addr, add)
}

// WRAtomicWrite starts an ATOMIC_WRITE of the 8 bytes value to addr
// (ibv_wr_atomic_write, XFER-33); value is copied into the request.
func (q *QP) WRAtomicWrite(rkey uint32, addr uint64, value [8]byte) {
	q.eng().WRAtomicWrite(rkey, addr, value)
}

// WRBindMW starts a BIND_MW of the type 2 window mw (a *sim.MW) to the
// new rkey (ibv_wr_bind_mw); see PostSend and MW-04.
func (q *QP) WRBindMW(mw *MW, rkey uint32, info verbs.MWBindInfo) { q.eng().WRBindMW(mw, rkey, info) }

// WRLocalInv starts a LOCAL_INV of rkey (ibv_wr_local_inv, MW-07).
func (q *QP) WRLocalInv(rkey uint32) { q.eng().WRLocalInv(rkey) }

// WRSetSGE makes one buffer the data of the last request built
// (ibv_wr_set_sge). A zero length gives the request no data at all, as
// rxe's and mlx5's setters do: it is then what PostSend makes of a
// request with an empty SGList, not one with a zero-length element.
func (q *QP) WRSetSGE(lkey uint32, addr uint64, length uint32) { q.eng().WRSetSGE(lkey, addr, length) }

// WRSetSGEList makes the buffers of list, logically concatenated, the data
// of the last request built (ibv_wr_set_sge_list). The list is copied;
// more elements than max_send_sge fail the batch at WRComplete (QP-32).
func (q *QP) WRSetSGEList(list []verbs.SGE) { q.eng().WRSetSGEList(list) }

// WRSetInlineData makes a copy of data the inline payload of the last
// request built (ibv_wr_set_inline_data): the request is sent as with
// IBV_SEND_INLINE, and data may be reused at once. Only SEND and RDMA
// WRITE opcodes take inline data (QP-34); more than max_inline_data bytes
// fail the batch (QP-35).
func (q *QP) WRSetInlineData(data []byte) { q.eng().WRSetInlineData(data) }

// WRSetInlineDataList is WRSetInlineData for a list of buffers, logically
// concatenated (ibv_wr_set_inline_data_list).
func (q *QP) WRSetInlineDataList(bufs [][]byte) { q.eng().WRSetInlineDataList(bufs) }

// WRSetUDAddr gives the last request built its UD destination
// (ibv_wr_set_ud_addr): the address handle (a *sim.AH), the remote QP
// number and Q_Key. A UD request without one fails the batch.
func (q *QP) WRSetUDAddr(ah *AH, remoteQPN, remoteQKey uint32) {
	q.eng().WRSetUDAddr(ah, remoteQPN, remoteQKey)
}

// WRComplete posts the open batch and closes it (ibv_wr_complete). The
// batch is posted whole or not at all: the first deferred error of a
// builder call, or the first request that PostSend would refuse, fails it
// with nothing posted, and WRComplete returns that error with PostSend's
// errno (QPX-03, QPX-04): EINVAL for the state, opcode, flags, SGE count
// and inline size, ENOMEM when the queue has no room for the whole batch,
// EFAULT for inline SGEs outside registered memory. Under the rxe reading
// (Profile.SendOpsRXE) a full queue, too many SGEs and too much inline data
// are ENOSPC. EOPNOTSUPP for an operation the QP's send_ops_flags leave
// out, or a QP created without them, whatever the batch holds (QPX-02);
// EINVAL without an open batch or after a misuse (QPX-05). An empty batch
// of a QP with the builder succeeds. WRComplete allocates nothing.
func (q *QP) WRComplete() (err error) { return q.eng().WRComplete() }
