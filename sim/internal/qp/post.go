package qp

import (
	"fmt"
	"syscall"

	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// The errors a post returns most, made once so a failed post in a hot loop
// (a full queue, say) allocates nothing. They carry nothing QP-specific.
var (
	errSendState = verr.New(verbSend, syscall.EINVAL, "send WRs can be posted only in RTS, SQD, SQE and ERR (QP-26)")
	errRecvState = verr.New(verbRecv, syscall.EINVAL, "receive WRs cannot be posted in RESET (QP-25)")
	errSendFull  = verr.New(verbSend, syscall.ENOMEM, "the send queue is full; a slot frees when the completion covering it is polled (QP-29)")
	errSendBusy  = verr.New(verbSend, syscall.ENOMEM, "the send queue is full; a slot frees when its request completes or is flushed (QP-29 reading B)")
	errRecvFull  = verr.New(verbRecv, syscall.ENOMEM, "the receive queue is full (QP-31)")
	errSendGone  = verr.New(verbSend, syscall.EINVAL, "the QP has been destroyed")
	errRecvGone  = verr.New(verbRecv, syscall.EINVAL, "the QP has been destroyed")
	errRecvXRC   = verr.New(verbRecv, syscall.EINVAL, "an XRC QP has no receive queue: an XRC_SEND QP receives nothing, an XRC_RECV QP's messages go to XRC SRQs (XRC-07)")
	errSendNoSQ  = verr.New(verbSend, syscall.EINVAL, "an XRC_RECV QP has no send queue (XRC-07)")
)

// opAllowed is the opcode × transport matrix of QP-33. TSO segmentation
// offload is not simulated: where the transport allows it, it is refused
// with EOPNOTSUPP rather than accepted and never run; elsewhere it is
// EINVAL like any opcode the transport does not allow. LOCAL_INV and
// BIND_MW run on RC and UC QPs (memory windows, MW-04, MW-07). An
// XRC_SEND QP has RC's operations (XRC-09).
func opAllowed(op verbs.WROpcode, t verbs.QPType) (ok bool, unsupported bool) {
	switch op {
	case verbs.WRSend, verbs.WRSendWithImm:
		return true, false
	case verbs.WRRDMAWrite, verbs.WRRDMAWriteWithImm, verbs.WRSendWithInv, verbs.WRLocalInv, verbs.WRBindMW:
		return t == verbs.QPTypeRC || t == verbs.QPTypeUC || t == verbs.QPTypeXRCSend, false
	case verbs.WRRDMARead, verbs.WRAtomicCmpAndSwp, verbs.WRAtomicFetchAndAdd, verbs.WRAtomicWrite:
		return t == verbs.QPTypeRC || t == verbs.QPTypeXRCSend, false
	case verbs.WRTSO:
		// Allowed on UD (and raw packet QPs), but not simulated.
		return false, t == verbs.QPTypeUD
	}
	return false, false
}

// lateOp reports whether op, which transport t does not take, is accepted
// at post and fails as it executes under QP-33 reading B (rxe): every
// opcode of the matrix but BIND_MW on UD, which rxe's provider refuses at
// post, and TSO, which is not simulated.
func lateOp(op verbs.WROpcode, t verbs.QPType) bool {
	switch op {
	case verbs.WRBindMW:
		return t != verbs.QPTypeUD
	case verbs.WRRDMAWrite, verbs.WRRDMAWriteWithImm, verbs.WRRDMARead, verbs.WRAtomicCmpAndSwp,
		verbs.WRAtomicFetchAndAdd, verbs.WRLocalInv, verbs.WRSendWithInv, verbs.WRAtomicWrite:
		return true
	}
	return false
}

// BindMW binds the type 1 memory window mw (a *sim.MW) as ibv_bind_mw
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
func (q *QP) BindMW(mw verbs.MW, wrID uint64, flags verbs.SendFlags, info verbs.MWBindInfo) (err error) {
	const verb = "ibv_bind_mw"
	if q == nil {
		return verr.New(verb, syscall.EINVAL, "nil QP")
	}
	q.enter()
	defer q.leave()
	if q.tracing() {
		defer func() { q.tracePostLocked("bind_mw", 1, 0, err) }()
	}
	if q.life != live {
		return errSendGone
	}
	switch q.state {
	case verbs.QPStateRTS, verbs.QPStateSQD, verbs.QPStateSQE, verbs.QPStateErr:
	default:
		return errSendState
	}
	if q.typ != verbs.QPTypeRC && q.typ != verbs.QPTypeUC && q.typ != verbs.QPTypeXRCSend {
		return verr.Errorf(verb, syscall.EINVAL, "memory windows are bound on RC, UC and XRC_SEND QPs, not %v", q.typ)
	}
	if q.cfg.Host == nil {
		return verr.New(verb, syscall.EOPNOTSUPP, "the QP has no adapter to bind windows with")
	}
	wr := verbs.SendWR{WRID: wrID, Opcode: verbs.WRBindMW, Flags: flags, MW: mw, Bind: info}
	if err := q.checkSendLocked(&wr, builtInline{}); err != nil {
		return err
	}
	if q.sq.full() {
		if q.sq.freeOnRetire {
			return errSendBusy
		}
		return errSendFull
	}
	key, err := q.cfg.Host.BindKeyLocked(mw)
	if err != nil {
		return err
	}
	wr.RKey = key
	if q.state == verbs.QPStateErr || q.state == verbs.QPStateSQE {
		defer q.flushSendLocked()
	}
	if err := q.enqueueSendLocked(&wr, builtInline{}); err != nil {
		return err // not reached: the queue has room and a bind has no inline data
	}
	q.scheduleLocked()
	return nil
}

// PostSend posts a list of send work requests (ibv_post_send). They are
// taken in order; the first that fails its checks stops the list: PostSend
// returns how many were posted before it and its error, so wrs[n] is the bad
// request (QP-27). The checks:
//
//   - the QP must be in RTS, SQD, SQE or ERR (QP-26): EINVAL otherwise;
//   - the opcode must suit the transport (QP-33): EINVAL, or EOPNOTSUPP for
//     opcodes verbsim does not execute; under Policy.TransportOpLate
//     (rxe) such a request is accepted and completes with LOC_QP_OP_ERR;
//   - at most max_send_sge elements (QP-32), known flags only, FENCE only on
//     RC, INLINE only on SEND and RDMA WRITE opcodes (QP-34), an inline
//     payload of at most max_inline_data bytes (QP-35): EINVAL;
//   - a UD request needs an address handle of the QP's device context,
//     not destroyed: EINVAL (AV-04; one of another PD of the context is
//     accepted and fails as it executes, PD-04);
//   - a free slot (QP-29): ENOMEM. Under the default reading a slot is
//     free once the completion covering its request has been polled; under
//     Policy.FreeSlotOnRetire once the request has completed or been
//     flushed.
//
// Requests posted in SQE or ERR are accepted and flushed at once (FLUSH-05).
// Inline payloads are copied now; other buffers are read when the request
// executes (QP-35, QP-36). PostSend allocates nothing.
func (q *QP) PostSend(wrs []verbs.SendWR) (n int, err error) {
	if q == nil {
		return 0, verr.New(verbSend, syscall.EINVAL, "nil QP")
	}
	q.enterVerb(verbSend)
	defer q.leave()
	n, err = q.postSendsLocked(wrs)
	if q.tracing() {
		q.tracePostLocked("post_send", len(wrs), n, err)
	}
	return n, err
}

// postSendsLocked is PostSend under the lock. Apart from PostSend so that
// both functions' defers stay open-coded (a function with many returns and
// several defers runs its defers through the runtime's slow path).
func (q *QP) postSendsLocked(wrs []verbs.SendWR) (int, error) {
	if q.life != live {
		return 0, errSendGone
	}
	if q.typ == verbs.QPTypeXRCRecv {
		return 0, errSendNoSQ
	}
	switch q.state {
	case verbs.QPStateRTS, verbs.QPStateSQD, verbs.QPStateSQE, verbs.QPStateErr:
	default:
		return 0, errSendState
	}
	if q.state == verbs.QPStateErr || q.state == verbs.QPStateSQE {
		defer q.flushSendLocked() // also what was posted before a bad request
	}
	for i := range wrs {
		if err := q.postSendLocked(&wrs[i]); err != nil {
			if i > 0 {
				q.scheduleLocked()
			}
			return i, err
		}
	}
	if len(wrs) == 1 && q.direct != nil && q.directLocked() {
		return 1, nil // carried out in the verb (direct.go)
	}
	if len(wrs) > 0 {
		q.scheduleLocked()
	}
	return len(wrs), nil
}

func (q *QP) postSendLocked(w *verbs.SendWR) error {
	if err := q.checkSendLocked(w, builtInline{}); err != nil {
		return err
	}
	return q.enqueueSendLocked(w, builtInline{})
}

// builtInline is the payload the builder's WRSetInlineData gave a request,
// when set is true: it replaces the bytes the request's SGList names
// (QPX-03). PostSend's requests have none.
type builtInline struct {
	data []byte
	set  bool
}

// checkSendLocked runs PostSend's checks of one request that need no
// slot: opcode, SGE count, flags, address handle, inline size (QP-32..35).
// in is the builder's inline payload of w, if any.
func (q *QP) checkSendLocked(w *verbs.SendWR, in builtInline) error {
	ok, unsupported := opAllowed(w.Opcode, q.typ)
	switch {
	case unsupported:
		return verr.Errorf(verbSend, syscall.EOPNOTSUPP, "opcode %v is not simulated", w.Opcode)
	case !ok && !(q.cfg.Policy.TransportOpLate && lateOp(w.Opcode, q.typ)):
		return verr.Errorf(verbSend, syscall.EINVAL, "opcode %v is not allowed on a %v QP (QP-33)", w.Opcode, q.typ)
	case len(w.SGList) > int(q.cap.MaxSendSGE):
		return verr.Errorf(verbSend, syscall.EINVAL, "num_sge %d above max_send_sge %d (QP-32)", len(w.SGList), q.cap.MaxSendSGE)
	case w.Flags&^sendFlagsKnown != 0:
		return verr.Errorf(verbSend, syscall.EINVAL, "unknown send flags %v", w.Flags&^sendFlagsKnown)
	case w.Flags&verbs.SendFence != 0 && q.typ != verbs.QPTypeRC && q.typ != verbs.QPTypeXRCSend:
		return verr.Errorf(verbSend, syscall.EINVAL, "IBV_SEND_FENCE on a %v QP (QP-34)", q.typ)
	case q.typ == verbs.QPTypeUD && w.AH == nil:
		return verr.New(verbSend, syscall.EINVAL, "a UD send needs an address handle")
	}
	if q.typ == verbs.QPTypeUD && q.cfg.Host != nil {
		if err := q.cfg.Host.CheckAHLocked(q.cfg.PD, w.AH); err != nil {
			return err
		}
	}
	inline := w.Flags&verbs.SendInline != 0
	if inline {
		switch w.Opcode {
		case verbs.WRSend, verbs.WRSendWithImm, verbs.WRSendWithInv, verbs.WRRDMAWrite, verbs.WRRDMAWriteWithImm, verbs.WRAtomicWrite:
		default:
			return verr.Errorf(verbSend, syscall.EINVAL, "IBV_SEND_INLINE on %v (QP-34)", w.Opcode)
		}
		n := verbs.SGEListLength(w.SGList)
		if in.set {
			n = uint64(len(in.data))
		}
		// The builder's ATOMIC_WRITE carries its 8 bytes in the request
		// itself, not as inline data (XFER-33).
		if w.Opcode == verbs.WRAtomicWrite && in.set {
			n = 0
		}
		if n > uint64(q.cap.MaxInlineData) {
			return verr.Errorf(verbSend, syscall.EINVAL, "inline payload of %d bytes above max_inline_data %d (QP-35)", n, q.cap.MaxInlineData)
		}
	}
	return nil
}

// enqueueSendLocked takes a slot for w, a request that passed
// checkSendLocked, capturing its inline payload: ENOMEM when the queue is
// full (QP-29), EFAULT when the inline data is not in registered memory.
func (q *QP) enqueueSendLocked(w *verbs.SendWR, in builtInline) error {
	inline := w.Flags&verbs.SendInline != 0
	if q.sq.full() {
		if q.sq.freeOnRetire {
			return errSendBusy
		}
		return errSendFull
	}
	// Capture the inline payload before claiming the slot, so a failure
	// leaves the queue as it was.
	var payload []byte
	if inline && in.set {
		payload = append(q.sq.slot(q.sq.tail).inline[:0], in.data...)
	} else if inline {
		e := q.sq.slot(q.sq.tail)
		payload = e.inline[:0]
		for _, s := range w.SGList {
			if s.Length == 0 {
				continue
			}
			var b []byte
			ok := false
			if q.cfg.Memory != nil {
				b, ok = q.cfg.Memory.ReadLocked(s.Addr, s.Length)
			}
			if !ok {
				return verr.Errorf(verbSend, syscall.EFAULT, "inline data at 0x%x+%d is not in registered memory", s.Addr, s.Length)
			}
			payload = append(payload, b...)
		}
	}
	if !q.sq.hasExt && (q.typ == verbs.QPTypeUD || q.typ == verbs.QPTypeXRCSend || needsExt(w)) {
		q.sq.allocExt()
	}
	e := q.sq.push()
	e.wrid = w.WRID
	e.setSGEs(w.SGList)
	e.inline = payload
	e.raddr, e.rkey, e.imm = w.RemoteAddr, w.RKey, w.Imm
	e.op, e.flags = w.Opcode, w.Flags
	e.psn, e.npkts, e.got, e.status = 0, 0, 0, verbs.WCSuccess
	e.fin, e.signaled = false, q.init.SQSigAll || w.Flags&verbs.SendSignaled != 0
	if x := e.x; x != nil {
		*x = wqeExt{compareAdd: w.CompareAdd, swap: w.Swap, ah: w.AH, mw: w.MW, bind: w.Bind,
			remoteQPN: w.RemoteQPN, remoteQKey: w.RemoteQKey, remoteSRQN: w.RemoteSRQN}
	}
	q.stats.SendPosted++
	return nil
}

// PostRecv posts a list of receive work requests (ibv_post_recv), in order,
// stopping at the first that fails: it returns how many were posted and the
// error, so wrs[n] is the bad request (QP-27). Receives may be posted in every
// state but RESET (QP-25: EINVAL); at most max_recv_sge elements (QP-32:
// EINVAL); ENOMEM when the queue is full (QP-31). Requests posted in ERR are
// flushed at once (FLUSH-05). PostRecv allocates nothing.
func (q *QP) PostRecv(wrs []verbs.RecvWR) (n int, err error) {
	if q == nil {
		return 0, verr.New(verbRecv, syscall.EINVAL, "nil QP")
	}
	q.enterVerb(verbRecv)
	defer q.leave()
	n, err = q.postRecvsLocked(wrs)
	if q.tracing() {
		q.tracePostLocked("post_recv", len(wrs), n, err)
	}
	return n, err
}

// postRecvsLocked is PostRecv under the lock (apart for the reason
// postSendsLocked is).
func (q *QP) postRecvsLocked(wrs []verbs.RecvWR) (int, error) {
	if q.life != live {
		return 0, errRecvGone
	}
	if q.typ == verbs.QPTypeXRCSend || q.typ == verbs.QPTypeXRCRecv {
		return 0, errRecvXRC
	}
	if q.state == verbs.QPStateReset {
		return 0, errRecvState
	}
	if q.init.SRQ != nil {
		return 0, verr.New(verbRecv, syscall.EINVAL, "the QP receives through its SRQ; post to the SRQ (SRQ-03)")
	}
	if q.state == verbs.QPStateErr {
		defer q.flushLocked() // also what was posted before a bad request
	}
	for i := range wrs {
		w := &wrs[i]
		if len(w.SGList) > int(q.cap.MaxRecvSGE) {
			return i, verr.Errorf(verbRecv, syscall.EINVAL, "num_sge %d above max_recv_sge %d (QP-32)", len(w.SGList), q.cap.MaxRecvSGE)
		}
		if q.rq.full() {
			return i, errRecvFull
		}
		e := q.rq.rpush()
		e.wrid = w.WRID
		e.setSGEs(w.SGList)
		q.stats.RecvPosted++
	}
	return len(wrs), nil
}

// Outstanding returns the number of send and receive work requests posted and
// not yet completed.
func (q *QP) Outstanding() (send, recv int) {
	if q == nil {
		return 0, 0
	}
	q.enter()
	defer q.leave()
	return q.sq.outstanding(), q.rq.outstanding()
}

// tracePostLocked records a post verb and its outcome.
func (q *QP) tracePostLocked(verb string, asked, n int, err error) {
	q.traceVerbLocked(verb, fmt.Sprintf("%d of %d WR(s) posted", n, asked), err)
}
