package qp

import (
	"syscall"

	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// This file holds the extended post API of ibv_create_qp_ex and
// ibv_wr_post(3): the send_ops_flags a QP is created with and the work
// request builder (WRStart, the WR* builders and setters, WRComplete,
// WRAbort). The builder only collects requests; WRComplete hands the batch
// to the checks and the enqueueing of PostSend (post.go), so the posting
// rules live in one place.

// opSendOp maps a work request opcode to its send_ops_flags bit.
func opSendOp(op verbs.WROpcode) verbs.QPSendOps {
	switch op {
	case verbs.WRRDMAWrite:
		return verbs.QPExWithRDMAWrite
	case verbs.WRRDMAWriteWithImm:
		return verbs.QPExWithRDMAWriteImm
	case verbs.WRSend:
		return verbs.QPExWithSend
	case verbs.WRSendWithImm:
		return verbs.QPExWithSendImm
	case verbs.WRRDMARead:
		return verbs.QPExWithRDMARead
	case verbs.WRAtomicCmpAndSwp:
		return verbs.QPExWithAtomicCmpSwp
	case verbs.WRAtomicFetchAndAdd:
		return verbs.QPExWithAtomicFetchAdd
	case verbs.WRLocalInv:
		return verbs.QPExWithLocalInv
	case verbs.WRBindMW:
		return verbs.QPExWithBindMW
	case verbs.WRSendWithInv:
		return verbs.QPExWithSendInv
	case verbs.WRAtomicWrite:
		return verbs.QPExWithAtomicWrite
	}
	return 0
}

// SendOpsFlags returns the send_ops_flags q was created with and whether
// it was created with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS at all (only then
// has it a builder; ibv_qp_to_qp_ex returns NULL otherwise).
func (q *QP) SendOpsFlags() (ops verbs.QPSendOps, ex bool) {
	if q == nil {
		return 0, false
	}
	q.enter()
	defer q.leave()
	return q.init.SendOps, q.init.Ex
}

// wrBatch is the builder state of a QP: the requests collected since
// WRStart, with their SGE lists and inline payloads in per-QP arrays that
// are reused from batch to batch, so a steady stream of batches allocates
// nothing.
type wrBatch struct {
	open bool
	err  error // the first deferred error; WRComplete returns it
	// dropped: the last builder call was past the queue's capacity and
	// kept nothing, so the setters that follow it apply to nothing.
	dropped bool
	wrID    uint64
	flags   verbs.SendFlags
	wrs     []verbs.SendWR
	ext     []wrExt
	sge     []verbs.SGE
	inl     []byte
}

// wrExt says where the data of wrs[i] is kept until WRComplete.
type wrExt struct {
	sgeLo, sgeHi int
	inlLo, inlHi int
	base         verbs.SendFlags // wr_flags when the request was built
	hasInline    bool            // b.inl[inlLo:inlHi] replaces the bytes SGList names (QPX-03)
}

// inlineOf returns the inline payload of wrs[i], if the builder gave one.
func (b *wrBatch) inlineOf(i int) builtInline {
	x := &b.ext[i]
	if !x.hasInline {
		return builtInline{}
	}
	return builtInline{data: b.inl[x.inlLo:x.inlHi:x.inlHi], set: true}
}

var (
	errWRNotEx     = verr.New(verbWR, syscall.EOPNOTSUPP, "the QP was not created with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS (QPX-01)")
	errWROpNotSet  = verr.New(verbWR, syscall.EOPNOTSUPP, "the operation is not in the QP's send_ops_flags (QPX-02)")
	errWRNoCurrent = verr.New(verbWR, syscall.EINVAL, "a setter was called before any WR builder of the batch (QPX-05)")
	errWRTwice     = verr.New(verbWR, syscall.EINVAL, "ibv_wr_start called while a batch was open (QPX-05)")
	errWRNotOpen   = verr.New(verbWR, syscall.EINVAL, "ibv_wr_complete called without ibv_wr_start (QPX-05)")
	errWRSpace     = verr.New(verbWR, syscall.ENOSPC, "the batch does not fit the send queue, or a request has too many SGEs or inline bytes (QPX-04, rxe)")
)

func (b *wrBatch) fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

// reset closes the batch and forgets its requests, keeping the arrays.
func (b *wrBatch) reset() {
	clear(b.wrs) // drop references to AHs, MWs, MRs
	b.open, b.err, b.dropped = false, nil, false
	b.wrs, b.ext, b.sge, b.inl = b.wrs[:0], b.ext[:0], b.sge[:0], b.inl[:0]
}

// SetWRID sets the wr_id that the next builders give their requests, the
// qpx->wr_id field of struct ibv_qp_ex: set it before calling the builder.
// It keeps its value from batch to batch.
func (q *QP) SetWRID(id uint64) {
	if q == nil {
		return
	}
	q.enter()
	q.bld.wrID = id
	q.leave()
}

// SetWRFlags sets the send flags that the next builders give their
// requests, the qpx->wr_flags field of struct ibv_qp_ex (SIGNALED, FENCE,
// SOLICITED, INLINE, IP_CSUM, checked as PostSend checks send_flags). It
// keeps its value from batch to batch.
func (q *QP) SetWRFlags(f verbs.SendFlags) {
	if q == nil {
		return
	}
	q.enter()
	q.bld.flags = f
	q.leave()
}

// WRStart opens a batch of work requests (ibv_wr_start). The builders and
// setters that follow add to it; WRComplete posts it, WRAbort discards it.
// Calling WRStart while a batch is open is a misuse (in C the provider's
// send-queue lock would deadlock): the open batch is poisoned and its
// WRComplete fails with EINVAL, posting nothing (QPX-05).
func (q *QP) WRStart() {
	if q == nil {
		return
	}
	q.enter()
	defer q.leave()
	b := &q.bld
	if b.open {
		b.fail(errWRTwice)
		return
	}
	b.reset()
	b.open = true
}

// WRAbort discards the open batch (ibv_wr_abort): nothing of it is
// posted. Without an open batch it does nothing.
func (q *QP) WRAbort() {
	if q == nil {
		return
	}
	q.enter()
	q.bld.reset()
	q.leave()
}

// build starts a request of the open batch with the current wr_id and
// wr_flags. Outside a batch, or once the batch has failed, it does
// nothing.
func (q *QP) build(w verbs.SendWR) {
	if q == nil {
		return
	}
	q.enter()
	defer q.leave()
	q.buildLocked(w)
}

// buildLocked is build under the lock.
func (q *QP) buildLocked(w verbs.SendWR) {
	b := &q.bld
	switch {
	case !b.open || b.err != nil:
		return
	case !q.init.Ex:
		b.fail(errWRNotEx)
		return
	case q.init.SendOps&opSendOp(w.Opcode) == 0:
		b.fail(errWROpNotSet)
		return
	case len(b.wrs) > int(q.cap.MaxSendWR):
		// One request more than the queue can hold is kept, so that
		// WRComplete reports what PostSend would for it; further ones
		// change nothing and the batch fails as full anyway. Their
		// setters must not reach the last request kept.
		b.dropped = true
		return
	}
	b.dropped = false
	w.WRID, w.Flags = b.wrID, b.flags
	b.wrs = append(b.wrs, w)
	b.ext = append(b.ext, wrExt{base: b.flags})
}

// WRSend starts a SEND (ibv_wr_send); its data comes from the next data
// setter.
func (q *QP) WRSend() { q.build(verbs.SendWR{Opcode: verbs.WRSend}) }

// WRSendImm starts a SEND_WITH_IMM carrying imm (ibv_wr_send_imm; the
// immediate data is opaque, in network byte order).
func (q *QP) WRSendImm(imm uint32) { q.build(verbs.SendWR{Opcode: verbs.WRSendWithImm, Imm: imm}) }

// WRSendInv starts a SEND_WITH_INV that invalidates rkey at the
// responder (ibv_wr_send_inv).
func (q *QP) WRSendInv(rkey uint32) { q.build(verbs.SendWR{Opcode: verbs.WRSendWithInv, Imm: rkey}) }

// WRRDMAWrite starts an RDMA WRITE to addr under rkey (ibv_wr_rdma_write).
func (q *QP) WRRDMAWrite(rkey uint32, addr uint64) {
	q.build(verbs.SendWR{Opcode: verbs.WRRDMAWrite, RKey: rkey, RemoteAddr: addr})
}

// WRRDMAWriteImm starts an RDMA WRITE_WITH_IMM (ibv_wr_rdma_write_imm).
func (q *QP) WRRDMAWriteImm(rkey uint32, addr uint64, imm uint32) {
	q.build(verbs.SendWR{Opcode: verbs.WRRDMAWriteWithImm, RKey: rkey, RemoteAddr: addr, Imm: imm})
}

// WRRDMARead starts an RDMA READ from addr under rkey (ibv_wr_rdma_read);
// the data setter names where the bytes land.
func (q *QP) WRRDMARead(rkey uint32, addr uint64) {
	q.build(verbs.SendWR{Opcode: verbs.WRRDMARead, RKey: rkey, RemoteAddr: addr})
}

// WRAtomicCmpSwp starts an ATOMIC_CMP_AND_SWP on the 8 bytes at addr
// (ibv_wr_atomic_cmp_swp).
func (q *QP) WRAtomicCmpSwp(rkey uint32, addr, compare, swap uint64) {
	q.build(verbs.SendWR{Opcode: verbs.WRAtomicCmpAndSwp, RKey: rkey, RemoteAddr: addr, CompareAdd: compare, Swap: swap})
}

// WRAtomicFetchAdd starts an ATOMIC_FETCH_AND_ADD on the 8 bytes at addr
// (ibv_wr_atomic_fetch_add).
func (q *QP) WRAtomicFetchAdd(rkey uint32, addr, add uint64) {
	q.build(verbs.SendWR{Opcode: verbs.WRAtomicFetchAndAdd, RKey: rkey, RemoteAddr: addr, CompareAdd: add})
}

// WRAtomicWrite starts an ATOMIC_WRITE of the 8 bytes value to addr under
// rkey (ibv_wr_atomic_write, XFER-33). The bytes are copied into the
// request, so value may be reused at once; the request needs no data
// setter and, unlike inline data, no max_inline_data. A data setter called
// after it replaces the value, as with any request.
func (q *QP) WRAtomicWrite(rkey uint32, addr uint64, value [8]byte) {
	if q == nil {
		return
	}
	q.enter()
	defer q.leave()
	b := &q.bld
	n := len(b.wrs)
	q.buildLocked(verbs.SendWR{Opcode: verbs.WRAtomicWrite, RKey: rkey, RemoteAddr: addr})
	if len(b.wrs) == n+1 && !b.dropped {
		w, x := &b.wrs[n], &b.ext[n]
		x.inlLo = len(b.inl)
		b.inl = append(b.inl, value[:]...)
		x.inlHi = len(b.inl)
		x.sgeLo, x.sgeHi = 0, 0
		w.Flags, x.hasInline = x.base|verbs.SendInline, true
	}
}

// WRBindMW starts a BIND_MW of the type 2 window mw (a *sim.MW) to the
// new rkey, of which only the low byte counts (ibv_wr_bind_mw); see
// PostSend, MW-04 and MW-05.
func (q *QP) WRBindMW(mw verbs.MW, rkey uint32, info verbs.MWBindInfo) {
	q.build(verbs.SendWR{Opcode: verbs.WRBindMW, MW: mw, RKey: rkey, Bind: info})
}

// WRLocalInv starts a LOCAL_INV of rkey (ibv_wr_local_inv, MW-07).
func (q *QP) WRLocalInv(rkey uint32) { q.build(verbs.SendWR{Opcode: verbs.WRLocalInv, Imm: rkey}) }

// current returns the request the setters change, or nil (and poisons the
// batch) when there is none. Precondition: the domain lock held, q not nil.
func (q *QP) current() (*verbs.SendWR, *wrExt) {
	b := &q.bld
	if !b.open || b.err != nil {
		return nil, nil
	}
	if len(b.wrs) == 0 {
		b.fail(errWRNoCurrent)
		return nil, nil
	}
	if b.dropped {
		return nil, nil // the request being set up was not kept
	}
	i := len(b.wrs) - 1
	return &b.wrs[i], &b.ext[i]
}

// WRSetSGE makes one buffer the data of the last request built
// (ibv_wr_set_sge). A zero length gives the request no data at all, as
// rxe's and mlx5's setters do: it is then what PostSend makes of a
// request with an empty SGList, not one with a zero-length element.
func (q *QP) WRSetSGE(lkey uint32, addr uint64, length uint32) {
	if q == nil {
		return
	}
	q.enter()
	defer q.leave()
	if length == 0 {
		q.setSGEsLocked(nil)
		return
	}
	one := [1]verbs.SGE{{Addr: addr, Length: length, LKey: lkey}}
	q.setSGEsLocked(one[:])
}

// WRSetSGEList makes the buffers of list, logically concatenated, the data
// of the last request built (ibv_wr_set_sge_list). The list is copied;
// more elements than max_send_sge fail the batch at WRComplete (QP-32).
func (q *QP) WRSetSGEList(list []verbs.SGE) {
	if q == nil {
		return
	}
	q.enter()
	defer q.leave()
	q.setSGEsLocked(list)
}

// setSGEsLocked makes a copy of list the scatter/gather list of the last
// request built, in place of any data it had.
func (q *QP) setSGEsLocked(list []verbs.SGE) {
	w, x := q.current()
	if w == nil {
		return
	}
	b := &q.bld
	// One element over the limit is enough to fail as PostSend would.
	n := min(len(list), int(q.cap.MaxSendSGE)+1)
	x.sgeLo = len(b.sge)
	b.sge = append(b.sge, list[:n]...)
	x.sgeHi = len(b.sge)
	w.Flags, x.hasInline = x.base, false
}

// WRSetInlineData makes a copy of data the inline payload of the last
// request built (ibv_wr_set_inline_data): the request is sent as with
// IBV_SEND_INLINE, and data may be reused at once. Only SEND and RDMA
// WRITE opcodes take inline data (QP-34); more than max_inline_data bytes
// fail the batch (QP-35).
func (q *QP) WRSetInlineData(data []byte) {
	if q == nil {
		return
	}
	q.enter()
	defer q.leave()
	q.setInlineLocked(data, nil)
}

// WRSetInlineDataList is WRSetInlineData for a list of buffers, logically
// concatenated (ibv_wr_set_inline_data_list).
func (q *QP) WRSetInlineDataList(bufs [][]byte) {
	if q == nil {
		return
	}
	q.enter()
	defer q.leave()
	q.setInlineLocked(nil, bufs)
}

func (q *QP) setInlineLocked(one []byte, list [][]byte) {
	w, x := q.current()
	if w == nil {
		return
	}
	b := &q.bld
	// One byte over the limit is enough to fail as PostSend would.
	room := int(q.cap.MaxInlineData) + 1
	x.inlLo = len(b.inl)
	add := func(p []byte) {
		k := min(len(p), room)
		b.inl = append(b.inl, p[:k]...)
		room -= k
	}
	add(one)
	for _, p := range list {
		add(p)
	}
	x.inlHi = len(b.inl)
	x.sgeLo, x.sgeHi = 0, 0
	w.Flags, x.hasInline = x.base|verbs.SendInline, true
}

// WRSetUDAddr gives the last request built its UD destination
// (ibv_wr_set_ud_addr): the address handle (a *sim.AH), the remote QP
// number and Q_Key. A UD request without one fails the batch.
func (q *QP) WRSetUDAddr(ah verbs.AH, remoteQPN, remoteQKey uint32) {
	if q == nil {
		return
	}
	q.enter()
	defer q.leave()
	w, _ := q.current()
	if w == nil {
		return
	}
	w.AH, w.RemoteQPN, w.RemoteQKey = ah, remoteQPN, remoteQKey
}

// WRSetXRCSRQN gives the last request built the number of the XRC SRQ it is
// for (ibv_wr_set_xrc_srqn), on an XRC_SEND QP (XRC-09).
func (q *QP) WRSetXRCSRQN(remoteSRQN uint32) {
	if q == nil {
		return
	}
	q.enter()
	defer q.leave()
	w, _ := q.current()
	if w == nil {
		return
	}
	w.RemoteSRQN = remoteSRQN
}

// WRComplete posts the open batch and closes it (ibv_wr_complete). The
// batch is posted whole or not at all: the first deferred error of a
// builder call, or the first request that PostSend would refuse, fails it
// with nothing posted, and WRComplete returns that error with PostSend's
// errno (QPX-03, QPX-04): EINVAL for the state, opcode, flags, SGE count
// and inline size, ENOMEM when the queue has no room for the whole batch,
// EFAULT for inline SGEs outside registered memory. Under the rxe reading
// (Policy.SendOpsRXE) a full queue, too many SGEs and too much inline data
// are ENOSPC. EOPNOTSUPP for an operation the QP's send_ops_flags leave
// out, or a QP created without them, whatever the batch holds (QPX-02);
// EINVAL without an open batch or after a misuse (QPX-05). An empty batch
// of a QP with the builder succeeds. WRComplete allocates nothing.
func (q *QP) WRComplete() (err error) {
	if q == nil {
		return verr.New(verbWR, syscall.EINVAL, "nil QP")
	}
	q.enter()
	defer q.leave()
	b := &q.bld
	if !b.open {
		return errWRNotOpen
	}
	defer b.reset()
	if b.err != nil {
		return b.err
	}
	switch {
	case q.life != live:
		return errSendGone
	case !q.init.Ex:
		return errWRNotEx // even an empty batch: the QP has no builder
	}
	for i := range b.wrs {
		w, x := &b.wrs[i], &b.ext[i]
		w.SGList = b.sge[x.sgeLo:x.sgeHi:x.sgeHi]
	}
	if q.tracing() {
		defer func() {
			n := 0
			if err == nil {
				n = len(b.wrs)
			}
			q.tracePostLocked("wr_complete", len(b.wrs), n, err)
		}()
	}
	return q.postBatchLocked(b)
}

// postBatchLocked posts the requests of b whole or not at all: it runs
// PostSend's checks on every request, in PostSend's order, before
// enqueueing any.
func (q *QP) postBatchLocked(b *wrBatch) error {
	wrs := b.wrs
	if q.life != live {
		return errSendGone
	}
	switch q.state {
	case verbs.QPStateRTS, verbs.QPStateSQD, verbs.QPStateSQE, verbs.QPStateErr:
	default:
		return errSendState
	}
	free := q.sq.depth - q.sq.occupied()
	for i := range wrs {
		w := &wrs[i]
		in := b.inlineOf(i)
		if q.cfg.Policy.SendOpsRXE && q.tooBigLocked(w, in) {
			return errWRSpace
		}
		if err := q.checkSendLocked(w, in); err != nil {
			return err
		}
		if i >= free {
			if q.cfg.Policy.SendOpsRXE {
				return errWRSpace
			}
			if q.sq.freeOnRetire {
				return errSendBusy
			}
			return errSendFull
		}
		if w.Flags&verbs.SendInline != 0 && !in.set {
			for _, s := range w.SGList {
				if s.Length == 0 {
					continue
				}
				ok := false
				if q.cfg.Memory != nil {
					_, ok = q.cfg.Memory.ReadLocked(s.Addr, s.Length)
				}
				if !ok {
					return verr.Errorf(verbWR, syscall.EFAULT, "inline data at 0x%x+%d is not in registered memory", s.Addr, s.Length)
				}
			}
		}
	}
	if len(wrs) == 0 {
		return nil
	}
	if q.state == verbs.QPStateErr || q.state == verbs.QPStateSQE {
		defer q.flushSendLocked()
	}
	for i := range wrs {
		if err := q.enqueueSendLocked(&wrs[i], b.inlineOf(i)); err != nil {
			return err // not reached: the checks above cover every failure
		}
	}
	if len(wrs) == 1 && q.direct != nil && q.directLocked() {
		return nil // carried out in the verb (direct.go)
	}
	q.scheduleLocked()
	return nil
}

// tooBigLocked reports whether w has more SGEs than max_send_sge or an
// inline payload above max_inline_data: what rxe's setters record as
// ENOSPC before wr_complete runs.
func (q *QP) tooBigLocked(w *verbs.SendWR, in builtInline) bool {
	if len(w.SGList) > int(q.cap.MaxSendSGE) {
		return true
	}
	if w.Flags&verbs.SendInline == 0 {
		return false
	}
	n := verbs.SGEListLength(w.SGList)
	if in.set {
		n = uint64(len(in.data))
	}
	return n > uint64(q.cap.MaxInlineData)
}
