//go:build cgo && linux

package cverbs

/*
#include "cverbs.h"
*/
import "C"

import (
	"encoding/binary"
	"unsafe"

	"github.com/verbsim/verbsim/verbs"
)

// CreateQPEx is ibv_create_qp_ex on the PD's context (verbs.QPExCreator).
// A QP asked for with QPInitAttrSendOpsFlags is a qpEx: it implements
// verbs.WRBuilder over ibv_qp_to_qp_ex.
func (p *pd) CreateQPEx(attr verbs.QPInitAttrEx) (verbs.QP, error) {
	var ia C.struct_ibv_qp_init_attr
	q := &qp{life: life{ctx: p.ctx}, pd: p, qpContext: attr.Context}
	if err := q.initAttr(&ia, &attr.QPInitAttr); err != nil {
		return nil, err
	}
	if err := p.lock("ibv_create_qp_ex"); err != nil {
		return nil, err
	}
	defer p.mu.Unlock()
	var got C.struct_ibv_qp_cap
	c, err := C.cv_create_qp_ex(p.ctx.c, &ia, C.uint32_t(attr.CompMask|verbs.QPInitAttrPD), p.p, nil, C.uint64_t(attr.SendOpsFlags), &got)
	if c == nil {
		return nil, errOf("ibv_create_qp_ex", err)
	}
	q.created(c)
	if attr.CompMask&verbs.QPInitAttrSendOpsFlags != 0 {
		if x := C.ibv_qp_to_qp_ex(c); x != nil {
			e := &qpEx{qp: q, x: x}
			return e.hooked(), nil
		}
	}
	return q.hooked(), nil
}

// qpEx is a QP with the work request builder (struct ibv_qp_ex). The
// binding keeps the state of the builder's critical region, so that a
// misuse C leaves undefined (ibv_wr_complete without ibv_wr_start, a
// second ibv_wr_start, a setter before any builder) never reaches the
// provider: it fails the batch with EINVAL at WRComplete, with nothing
// posted. Inline data and SGE lists are copied to C memory that lives until
// the batch ends.
type qpEx struct {
	*qp
	x *C.struct_ibv_qp_ex

	inBatch  bool
	builders int
	misuse   bool
	arena    []unsafe.Pointer
	binds    []pendingBind // the batch's BIND_MW requests, recorded at wr_complete
}

// pendingBind is an ibv_wr_bind_mw of the open batch.
type pendingBind struct {
	mw   verbs.MW
	rkey uint32
}

var _ verbs.WRBuilder = (*qpEx)(nil)
var _ verbs.QPExCreator = (*pd)(nil)

// alive reports whether the QP may reach C; the caller holds q.mu.
func (q *qpEx) alive() bool { return !q.dead && !q.ctx.closed.Load() }

func (q *qpEx) SetWRID(id uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.alive() {
		q.x.wr_id = C.uint64_t(id)
	}
}

func (q *qpEx) SetWRFlags(f verbs.SendFlags) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.alive() {
		q.x.wr_flags = C.uint(f)
	}
}

func (q *qpEx) WRStart() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.alive() {
		return
	}
	if q.inBatch {
		q.misuse = true
		return
	}
	C.cv_wr(q.x, C.CV_WR_START, 0, 0, 0, 0, nil, nil, 0)
	q.inBatch, q.builders, q.misuse = true, 0, false
}

func (q *qpEx) endBatch() {
	q.inBatch = false
	clear(q.binds)
	q.binds = q.binds[:0]
	for _, p := range q.arena {
		C.free(p)
	}
	q.arena = q.arena[:0]
}

func (q *qpEx) WRComplete() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.alive() {
		return einval("ibv_wr_complete")
	}
	if !q.inBatch {
		return einval("ibv_wr_complete (without ibv_wr_start)")
	}
	defer q.endBatch()
	if q.misuse {
		C.cv_wr(q.x, C.CV_WR_ABORT, 0, 0, 0, 0, nil, nil, 0)
		return einval("ibv_wr_complete (a misused batch: ibv_wr_start twice, or a setter before any builder)")
	}
	rc, e := C.cv_wr(q.x, C.CV_WR_COMPLETE, 0, 0, 0, 0, nil, nil, 0)
	if rc != 0 {
		return rcErrno("ibv_wr_complete", rc, e)
	}
	for _, b := range q.binds {
		boundTo(b.mw, b.rkey)
	}
	return nil
}

func (q *qpEx) WRAbort() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.alive() || !q.inBatch {
		return
	}
	C.cv_wr(q.x, C.CV_WR_ABORT, 0, 0, 0, 0, nil, nil, 0)
	q.endBatch()
}

// builder calls a builder (it starts a request) inside a batch.
func (q *qpEx) builder(op C.int, a32 uint32, a64, b64, c64 uint64, p, p2 unsafe.Pointer, b32 uint32) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.alive() || !q.inBatch || q.misuse {
		return
	}
	C.cv_wr(q.x, op, C.uint32_t(a32), C.uint64_t(a64), C.uint64_t(b64), C.uint64_t(c64), p, p2, C.uint32_t(b32))
	q.builders++
}

// setter calls a setter (it completes the request just built); before any
// builder it is a misuse.
func (q *qpEx) setter(op C.int, a32 uint32, a64 uint64, p unsafe.Pointer, b32 uint32) {
	if !q.alive() || !q.inBatch || q.misuse {
		return
	}
	if q.builders == 0 {
		q.misuse = true
		return
	}
	C.cv_wr(q.x, op, C.uint32_t(a32), C.uint64_t(a64), 0, 0, p, nil, C.uint32_t(b32))
}

func (q *qpEx) WRSend()                { q.builder(C.CV_WR_SEND, 0, 0, 0, 0, nil, nil, 0) }
func (q *qpEx) WRSendImm(imm uint32)   { q.builder(C.CV_WR_SEND_IMM, imm, 0, 0, 0, nil, nil, 0) }
func (q *qpEx) WRSendInv(rkey uint32)  { q.builder(C.CV_WR_SEND_INV, rkey, 0, 0, 0, nil, nil, 0) }
func (q *qpEx) WRLocalInv(rkey uint32) { q.builder(C.CV_WR_LOCAL_INV, rkey, 0, 0, 0, nil, nil, 0) }
func (q *qpEx) WRRDMARead(rkey uint32, addr uint64) {
	q.builder(C.CV_WR_READ, rkey, addr, 0, 0, nil, nil, 0)
}
func (q *qpEx) WRRDMAWrite(rkey uint32, addr uint64) {
	q.builder(C.CV_WR_WRITE, rkey, addr, 0, 0, nil, nil, 0)
}
func (q *qpEx) WRRDMAWriteImm(rkey uint32, addr uint64, imm uint32) {
	q.builder(C.CV_WR_WRITE_IMM, rkey, addr, 0, 0, nil, nil, imm)
}
func (q *qpEx) WRAtomicCmpSwp(rkey uint32, addr, compare, swap uint64) {
	q.builder(C.CV_WR_CMP_SWP, rkey, addr, compare, swap, nil, nil, 0)
}
func (q *qpEx) WRAtomicFetchAdd(rkey uint32, addr, add uint64) {
	q.builder(C.CV_WR_FETCH_ADD, rkey, addr, add, 0, nil, nil, 0)
}

// WRAtomicWrite is ibv_wr_atomic_write; the 8 bytes travel as one uint64
// in host byte order, so C sees them unchanged.
func (q *qpEx) WRAtomicWrite(rkey uint32, addr uint64, value [8]byte) {
	q.builder(C.CV_WR_ATOMIC_WRITE, rkey, addr, binary.NativeEndian.Uint64(value[:]), 0, nil, nil, 0)
}

// WRBindMW is ibv_wr_bind_mw; a window or MR of another implementation, or
// a destroyed one, is a misuse of the batch (EINVAL at WRComplete).
func (q *qpEx) WRBindMW(x verbs.MW, rkey uint32, info verbs.MWBindInfo) {
	w, ok1 := cMW(x)
	m, ok2 := cMR(info.MR)
	if !ok1 || !ok2 || w == nil {
		q.mu.Lock()
		if q.inBatch {
			q.misuse = true
		}
		q.mu.Unlock()
		return
	}
	q.builder(C.CV_WR_BIND_MW, rkey, info.Addr, info.Length, uint64(info.Access), unsafe.Pointer(w), unsafe.Pointer(m), 0)
	q.mu.Lock()
	if q.inBatch {
		q.binds = append(q.binds, pendingBind{x, rkey})
	}
	q.mu.Unlock()
}

func (q *qpEx) WRSetUDAddr(x verbs.AH, remoteQPN, remoteQKey uint32) {
	h, ok := cAH(x)
	q.mu.Lock()
	defer q.mu.Unlock()
	if !ok || h == nil {
		if q.inBatch {
			q.misuse = true
		}
		return
	}
	q.setter(C.CV_WR_UD_ADDR, remoteQPN, 0, unsafe.Pointer(h), remoteQKey)
}

func (q *qpEx) WRSetXRCSRQN(remoteSRQN uint32) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.setter(C.CV_WR_XRC_SRQN, remoteSRQN, 0, nil, 0)
}

func (q *qpEx) WRSetSGE(lkey uint32, addr uint64, length uint32) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.setter(C.CV_WR_SGE, lkey, addr, nil, length)
}

// alloc returns n bytes of C memory that live until the batch ends.
func (q *qpEx) alloc(n int) unsafe.Pointer {
	p := C.malloc(C.size_t(max(n, 1)))
	q.arena = append(q.arena, p)
	return p
}

func (q *qpEx) WRSetSGEList(list []verbs.SGE) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.alive() || !q.inBatch {
		return
	}
	var p unsafe.Pointer
	if len(list) > 0 {
		p = q.alloc(len(list) * int(unsafe.Sizeof(C.struct_ibv_sge{})))
		fillSGEs(unsafe.Slice((*C.struct_ibv_sge)(p), len(list)), list)
	}
	q.setter(C.CV_WR_SGE_LIST, 0, uint64(len(list)), p, 0)
}

func (q *qpEx) WRSetInlineData(data []byte) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.alive() || !q.inBatch {
		return
	}
	p := q.alloc(len(data))
	copy(unsafe.Slice((*byte)(p), len(data)), data)
	q.setter(C.CV_WR_INLINE, 0, uint64(len(data)), p, 0)
}

func (q *qpEx) WRSetInlineDataList(bufs [][]byte) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.alive() || !q.inBatch {
		return
	}
	var p unsafe.Pointer
	if len(bufs) > 0 {
		p = q.alloc(len(bufs) * int(unsafe.Sizeof(C.struct_ibv_data_buf{})))
		list := unsafe.Slice((*C.struct_ibv_data_buf)(p), len(bufs))
		for i, b := range bufs {
			d := q.alloc(len(b))
			copy(unsafe.Slice((*byte)(d), len(b)), b)
			list[i] = C.struct_ibv_data_buf{addr: d, length: C.size_t(len(b))}
		}
	}
	q.setter(C.CV_WR_INLINE_LIST, 0, uint64(len(bufs)), p, 0)
}
