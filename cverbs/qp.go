//go:build cgo && linux

package cverbs

/*
#include "cverbs.h"
*/
import "C"

import (
	"context"
	"unsafe"

	"github.com/verbsim/verbsim/verbs"
)

// CreateQP is ibv_create_qp.
func (p *pd) CreateQP(attr verbs.QPInitAttr) (verbs.QP, error) {
	var ia C.struct_ibv_qp_init_attr
	q := &qp{life: life{ctx: p.ctx}, pd: p, qpContext: attr.Context}
	if err := q.initAttr(&ia, &attr); err != nil {
		return nil, err
	}
	if err := p.lock("ibv_create_qp"); err != nil {
		return nil, err
	}
	defer p.mu.Unlock()
	c, err := C.ibv_create_qp(p.p, &ia)
	if c == nil {
		return nil, errOf("ibv_create_qp", err)
	}
	q.created(c)
	return q.hooked(), nil
}

// initAttr fills ia from a, and q's CQs and SRQ; objects of another
// implementation, or destroyed ones, are EINVAL.
func (q *qp) initAttr(ia *C.struct_ibv_qp_init_attr, a *verbs.QPInitAttr) error {
	var ok bool
	if ia.send_cq, ok = cCQ(a.SendCQ); !ok {
		return einval("ibv_create_qp (send_cq)")
	}
	if ia.recv_cq, ok = cCQ(a.RecvCQ); !ok {
		return einval("ibv_create_qp (recv_cq)")
	}
	if a.SRQ != nil {
		s, isOurs := srqOf(a.SRQ)
		if !isOurs {
			return einval("ibv_create_qp (srq)")
		}
		if err := s.lock("ibv_create_qp (srq)"); err != nil {
			return err
		}
		ia.srq = s.s
		s.mu.Unlock()
		q.srq = s
	}
	q.sendCQ, q.recvCQ = a.SendCQ, a.RecvCQ
	ia.cap = toCap(a.Cap)
	ia.qp_type = C.enum_ibv_qp_type(a.Type)
	if a.SQSigAll {
		ia.sq_sig_all = 1
	}
	return nil
}

func toCap(c verbs.QPCap) C.struct_ibv_qp_cap {
	return C.struct_ibv_qp_cap{
		max_send_wr:     C.uint32_t(c.MaxSendWR),
		max_recv_wr:     C.uint32_t(c.MaxRecvWR),
		max_send_sge:    C.uint32_t(c.MaxSendSGE),
		max_recv_sge:    C.uint32_t(c.MaxRecvSGE),
		max_inline_data: C.uint32_t(c.MaxInlineData),
	}
}

func fromCap(c *C.struct_ibv_qp_cap) verbs.QPCap {
	return verbs.QPCap{
		MaxSendWR:     uint32(c.max_send_wr),
		MaxRecvWR:     uint32(c.max_recv_wr),
		MaxSendSGE:    uint32(c.max_send_sge),
		MaxRecvSGE:    uint32(c.max_recv_sge),
		MaxInlineData: uint32(c.max_inline_data),
	}
}

func (q *qp) created(c *C.struct_ibv_qp) {
	q.c = c
	q.num = uint32(c.qp_num)
	q.typ = verbs.QPType(c.qp_type)
	q.state = verbs.QPState(c.state)
	track(unsafe.Pointer(c), q)
}

// qp is a struct ibv_qp, with C memory for the work requests it posts.
type qp struct {
	life
	c         *C.struct_ibv_qp
	pd        *pd
	qpContext any
	sendCQ    verbs.CQ
	recvCQ    verbs.CQ
	srq       *srq
	num       uint32
	typ       verbs.QPType
	state     verbs.QPState

	send  sendScratch
	recv  recvScratch
	async events

	// self is the object the program holds: q, or the qpEx around it.
	self verbs.QP
}

func (q *qp) Num() uint32            { return q.num }
func (q *qp) Type() verbs.QPType     { return q.typ }
func (q *qp) Context() verbs.Context { return q.ctx }
func (q *qp) QPContext() any         { return q.qpContext }

// State is ibv_qp.state.
func (q *qp) State() verbs.QPState {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.state
}

// PD is ibv_qp.pd (nil for an XRC target QP).
func (q *qp) PD() verbs.PD {
	if q.pd == nil {
		return nil
	}
	return q.pd
}

// SendCQ is ibv_qp.send_cq.
func (q *qp) SendCQ() verbs.CQ { return q.sendCQ }

// RecvCQ is ibv_qp.recv_cq.
func (q *qp) RecvCQ() verbs.CQ { return q.recvCQ }

// SRQ is ibv_qp.srq.
func (q *qp) SRQ() verbs.SRQ {
	if q.srq == nil {
		return nil
	}
	return q.srq.self
}

// Modify is ibv_modify_qp.
func (q *qp) Modify(attr *verbs.QPAttr, mask verbs.QPAttrMask) error {
	if attr == nil {
		return einval("ibv_modify_qp (attr NULL)")
	}
	if err := q.lock("ibv_modify_qp"); err != nil {
		return err
	}
	defer q.mu.Unlock()
	var a C.struct_ibv_qp_attr
	toQPAttr(&a, attr)
	if rc, e := C.ibv_modify_qp(q.c, &a, C.int(mask)); rc != 0 {
		return rcErrno("ibv_modify_qp", rc, e)
	}
	q.state = verbs.QPState(q.c.state)
	return nil
}

func toQPAttr(a *C.struct_ibv_qp_attr, s *verbs.QPAttr) {
	a.qp_state = C.enum_ibv_qp_state(s.QPState)
	a.cur_qp_state = C.enum_ibv_qp_state(s.CurQPState)
	a.path_mtu = C.enum_ibv_mtu(s.PathMTU)
	a.path_mig_state = C.enum_ibv_mig_state(s.PathMigState)
	a.qkey = C.uint32_t(s.QKey)
	a.rq_psn = C.uint32_t(s.RQPSN)
	a.sq_psn = C.uint32_t(s.SQPSN)
	a.dest_qp_num = C.uint32_t(s.DestQPNum)
	a.qp_access_flags = C.uint(s.QPAccessFlags)
	a.cap = toCap(s.Cap)
	toAHAttr(&a.ah_attr, &s.AHAttr)
	toAHAttr(&a.alt_ah_attr, &s.AltAHAttr)
	a.pkey_index = C.uint16_t(s.PKeyIndex)
	a.alt_pkey_index = C.uint16_t(s.AltPKeyIndex)
	a.en_sqd_async_notify = boolByte(s.EnSQDAsyncNotify)
	a.sq_draining = boolByte(s.SQDraining)
	a.max_rd_atomic = C.uint8_t(s.MaxRDAtomic)
	a.max_dest_rd_atomic = C.uint8_t(s.MaxDestRDAtomic)
	a.min_rnr_timer = C.uint8_t(s.MinRNRTimer)
	a.port_num = C.uint8_t(s.PortNum)
	a.timeout = C.uint8_t(s.Timeout)
	a.retry_cnt = C.uint8_t(s.RetryCnt)
	a.rnr_retry = C.uint8_t(s.RNRRetry)
	a.alt_port_num = C.uint8_t(s.AltPortNum)
	a.alt_timeout = C.uint8_t(s.AltTimeout)
	a.rate_limit = C.uint32_t(s.RateLimit)
}

func boolByte(b bool) C.uint8_t {
	if b {
		return 1
	}
	return 0
}

func fromQPAttr(a *C.struct_ibv_qp_attr) verbs.QPAttr {
	return verbs.QPAttr{
		QPState:          verbs.QPState(a.qp_state),
		CurQPState:       verbs.QPState(a.cur_qp_state),
		PathMTU:          verbs.MTU(a.path_mtu),
		PathMigState:     verbs.MigState(a.path_mig_state),
		QKey:             uint32(a.qkey),
		RQPSN:            uint32(a.rq_psn),
		SQPSN:            uint32(a.sq_psn),
		DestQPNum:        uint32(a.dest_qp_num),
		QPAccessFlags:    verbs.AccessFlags(a.qp_access_flags),
		Cap:              fromCap(&a.cap),
		AHAttr:           fromAHAttr(&a.ah_attr),
		AltAHAttr:        fromAHAttr(&a.alt_ah_attr),
		PKeyIndex:        uint16(a.pkey_index),
		AltPKeyIndex:     uint16(a.alt_pkey_index),
		EnSQDAsyncNotify: a.en_sqd_async_notify != 0,
		SQDraining:       a.sq_draining != 0,
		MaxRDAtomic:      uint8(a.max_rd_atomic),
		MaxDestRDAtomic:  uint8(a.max_dest_rd_atomic),
		MinRNRTimer:      uint8(a.min_rnr_timer),
		PortNum:          uint8(a.port_num),
		Timeout:          uint8(a.timeout),
		RetryCnt:         uint8(a.retry_cnt),
		RNRRetry:         uint8(a.rnr_retry),
		AltPortNum:       uint8(a.alt_port_num),
		AltTimeout:       uint8(a.alt_timeout),
		RateLimit:        uint32(a.rate_limit),
	}
}

// Query is ibv_query_qp.
func (q *qp) Query(mask verbs.QPAttrMask) (verbs.QPAttr, verbs.QPInitAttr, error) {
	if err := q.lock("ibv_query_qp"); err != nil {
		return verbs.QPAttr{}, verbs.QPInitAttr{}, err
	}
	defer q.mu.Unlock()
	var a C.struct_ibv_qp_attr
	var ia C.struct_ibv_qp_init_attr
	if rc, e := C.ibv_query_qp(q.c, &a, C.int(mask), &ia); rc != 0 {
		return verbs.QPAttr{}, verbs.QPInitAttr{}, rcErrno("ibv_query_qp", rc, e)
	}
	q.state = verbs.QPState(q.c.state)
	init := verbs.QPInitAttr{
		Context:  q.qpContext,
		SendCQ:   q.SendCQ(),
		RecvCQ:   q.RecvCQ(),
		SRQ:      q.SRQ(),
		Cap:      fromCap(&ia.cap),
		Type:     verbs.QPType(ia.qp_type),
		SQSigAll: ia.sq_sig_all != 0,
	}
	return fromQPAttr(&a), init, nil
}

// scratch is the C memory a post builds its requests in: the flat
// requests F the C helper reads, the work requests W it fills, and the
// scatter/gather entries; it grows and is kept for the next post.
type scratch[F, W any] struct {
	f    *F
	wrs  *W
	nwr  int
	sges *C.struct_ibv_sge
	nsge int
}

// sendScratch is the C memory PostSend builds its requests in.
type sendScratch = scratch[C.cv_send, C.struct_ibv_send_wr]

// recvScratch is the C memory PostRecv and PostSRQRecv build theirs in.
type recvScratch = scratch[C.cv_recv, C.struct_ibv_recv_wr]

func grow[T any](p **T, have *int, need int) {
	if need <= *have {
		return
	}
	n := max(need, 2**have, 4)
	var z T
	*p = (*T)(C.realloc(unsafe.Pointer(*p), C.size_t(uintptr(n)*unsafe.Sizeof(z))))
	if *p == nil {
		panic("cverbs: out of C memory")
	}
	*have = n
}

func (s *scratch[F, W]) reserve(nwr, nsge int) {
	have := s.nwr
	grow(&s.f, &have, nwr)
	have = s.nwr
	grow(&s.wrs, &have, nwr)
	s.nwr = have
	grow(&s.sges, &s.nsge, nsge)
}

func (s *scratch[F, W]) free() {
	C.free(unsafe.Pointer(s.f))
	C.free(unsafe.Pointer(s.wrs))
	C.free(unsafe.Pointer(s.sges))
	*s = scratch[F, W]{}
}

func fillSGEs(dst []C.struct_ibv_sge, src []verbs.SGE) {
	for i, g := range src {
		dst[i] = C.struct_ibv_sge{addr: C.uint64_t(g.Addr), length: C.uint32_t(g.Length), lkey: C.uint32_t(g.LKey)}
	}
}

// PostSend is ibv_post_send. A request naming an AH, MW or MR of another
// implementation, or a destroyed one, is EINVAL at that request; the ones
// before it are posted.
func (q *qp) PostSend(wrs []verbs.SendWR) (int, error) {
	if err := q.lock("ibv_post_send"); err != nil {
		return 0, err
	}
	defer q.mu.Unlock()
	nsge := 0
	for i := range wrs {
		nsge += len(wrs[i].SGList)
	}
	s := &q.send
	s.reserve(len(wrs), nsge)
	f := unsafe.Slice(s.f, s.nwr)
	sges := unsafe.Slice(s.sges, s.nsge)
	off := 0
	n := len(wrs)
	var bad error
	for i := range wrs {
		w := &wrs[i]
		c := &f[i]
		*c = C.cv_send{
			wr_id:       C.uint64_t(w.WRID),
			opcode:      C.uint32_t(w.Opcode),
			flags:       C.uint32_t(w.Flags),
			imm:         C.uint32_t(w.Imm),
			num_sge:     C.int(len(w.SGList)),
			sge_off:     C.int(off),
			remote_addr: C.uint64_t(w.RemoteAddr),
			rkey:        C.uint32_t(w.RKey),
			compare_add: C.uint64_t(w.CompareAdd),
			swap:        C.uint64_t(w.Swap),
			remote_qpn:  C.uint32_t(w.RemoteQPN),
			remote_qkey: C.uint32_t(w.RemoteQKey),
			bind_addr:   C.uint64_t(w.Bind.Addr),
			bind_length: C.uint64_t(w.Bind.Length),
			bind_access: C.uint32_t(w.Bind.Access),
			remote_srqn: C.uint32_t(w.RemoteSRQN),
		}
		var ok1, ok2, ok3 bool
		c.ah, ok1 = cAH(w.AH)
		c.mw, ok2 = cMW(w.MW)
		c.bind_mr, ok3 = cMR(w.Bind.MR)
		if !ok1 || !ok2 || !ok3 {
			n, bad = i, einval("ibv_post_send (an AH, MW or MR of another implementation, or destroyed)")
			break
		}
		fillSGEs(sges[off:off+len(w.SGList)], w.SGList)
		off += len(w.SGList)
	}
	if n == 0 && bad != nil {
		return 0, bad
	}
	var posted C.int
	rc, e := C.cv_post_send(q.c, s.f, C.int(n), s.sges, s.wrs, &posted)
	done := n
	if rc != 0 {
		done = int(posted)
	}
	for i := range wrs[:done] {
		if wrs[i].Opcode == verbs.WRBindMW {
			boundTo(wrs[i].MW, wrs[i].RKey)
		}
	}
	if rc != 0 {
		return done, rcErrno("ibv_post_send", rc, e)
	}
	return n, bad
}

// PostRecv is ibv_post_recv.
func (q *qp) PostRecv(wrs []verbs.RecvWR) (int, error) {
	if err := q.lock("ibv_post_recv"); err != nil {
		return 0, err
	}
	defer q.mu.Unlock()
	f, wr, sg := buildRecv(&q.recv, wrs)
	var posted C.int
	if rc, e := C.cv_post_recv(q.c, f, C.int(len(wrs)), sg, wr, &posted); rc != 0 {
		return int(posted), rcErrno("ibv_post_recv", rc, e)
	}
	return len(wrs), nil
}

// buildRecv fills s with wrs for the C helper.
func buildRecv(s *recvScratch, wrs []verbs.RecvWR) (*C.cv_recv, *C.struct_ibv_recv_wr, *C.struct_ibv_sge) {
	nsge := 0
	for i := range wrs {
		nsge += len(wrs[i].SGList)
	}
	s.reserve(len(wrs), nsge)
	f := unsafe.Slice(s.f, s.nwr)
	sges := unsafe.Slice(s.sges, s.nsge)
	off := 0
	for i := range wrs {
		w := &wrs[i]
		f[i] = C.cv_recv{wr_id: C.uint64_t(w.WRID), num_sge: C.int(len(w.SGList)), sge_off: C.int(off)}
		fillSGEs(sges[off:off+len(w.SGList)], w.SGList)
		off += len(w.SGList)
	}
	return s.f, s.wrs, s.sges
}

// BindMW is ibv_bind_mw.
func (q *qp) BindMW(x verbs.MW, wrID uint64, flags verbs.SendFlags, info verbs.MWBindInfo) error {
	w, ok := cMW(x)
	if !ok || w == nil {
		return einval("ibv_bind_mw (mw)")
	}
	m, ok := cMR(info.MR)
	if !ok {
		return einval("ibv_bind_mw (mr)")
	}
	if err := q.lock("ibv_bind_mw"); err != nil {
		return err
	}
	defer q.mu.Unlock()
	return rcErr("ibv_bind_mw", C.cv_bind_mw(q.c, w, C.uint64_t(wrID), C.uint32_t(flags), m,
		C.uint64_t(info.Addr), C.uint64_t(info.Length), C.uint32_t(info.Access)))
}

// Destroy is ibv_destroy_qp once every async event read for the QP is
// acknowledged, waiting for that as long as it takes.
func (q *qp) Destroy() error { return q.DestroyContext(context.Background()) }

// DestroyContext is ibv_destroy_qp once every async event read for the QP
// is acknowledged, waiting for that until ctx ends.
func (q *qp) DestroyContext(ctx context.Context) error {
	return q.destroyAcked(ctx, "ibv_destroy_qp", &q.async, unsafe.Pointer(q.c), func() (C.int, error) {
		rc, e := C.ibv_destroy_qp(q.c)
		return rc, e
	}, func() {
		q.send.free()
		q.recv.free()
	})
}

// destroyAcked is the destroy of an object with async events (a QP, an
// SRQ): it waits until every event read for it is acknowledged (until ctx
// ends), then, with the object's lock held, calls destroy and, when that
// succeeds, marks the object dead, forgets c and calls release.
func (l *life) destroyAcked(ctx context.Context, verb string, ev *events, c unsafe.Pointer, destroy func() (C.int, error), release func()) error {
	if err := l.lock(verb); err != nil {
		return err
	}
	l.mu.Unlock()
	if err := ev.settled(ctx); err != nil {
		return interrupted(verb, ctx)
	}
	if err := l.lock(verb); err != nil {
		return err
	}
	defer l.mu.Unlock()
	if rc, e := destroy(); rc != 0 {
		return rcErrno(verb, rc, e)
	}
	l.dead = true
	forget(c)
	release()
	return nil
}

// CreateSRQ is ibv_create_srq.
func (p *pd) CreateSRQ(attr verbs.SRQInitAttr) (verbs.SRQ, error) {
	if err := p.lock("ibv_create_srq"); err != nil {
		return nil, err
	}
	defer p.mu.Unlock()
	var ia C.struct_ibv_srq_init_attr
	ia.attr = toSRQAttr(attr.Attr)
	c, err := C.ibv_create_srq(p.p, &ia)
	if c == nil {
		return nil, errOf("ibv_create_srq", err)
	}
	s := &srq{life: life{ctx: p.ctx}, s: c, srqContext: attr.Context}
	track(unsafe.Pointer(c), s)
	return s.hooked(), nil
}

func toSRQAttr(a verbs.SRQAttr) C.struct_ibv_srq_attr {
	return C.struct_ibv_srq_attr{max_wr: C.uint32_t(a.MaxWR), max_sge: C.uint32_t(a.MaxSGE), srq_limit: C.uint32_t(a.SRQLimit)}
}

// srq is a struct ibv_srq.
type srq struct {
	life
	s          *C.struct_ibv_srq
	srqContext any
	recv       recvScratch
	async      events
	// self is the object the program holds: s, or the hookSRQ around it.
	self verbs.SRQ
}

func (s *srq) Context() verbs.Context { return s.ctx }
func (s *srq) SRQContext() any        { return s.srqContext }

// PostRecv is ibv_post_srq_recv.
func (s *srq) PostRecv(wrs []verbs.RecvWR) (int, error) {
	if err := s.lock("ibv_post_srq_recv"); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	f, wr, sg := buildRecv(&s.recv, wrs)
	var posted C.int
	if rc, e := C.cv_post_srq_recv(s.s, f, C.int(len(wrs)), sg, wr, &posted); rc != 0 {
		return int(posted), rcErrno("ibv_post_srq_recv", rc, e)
	}
	return len(wrs), nil
}

// Modify is ibv_modify_srq.
func (s *srq) Modify(attr *verbs.SRQAttr, mask verbs.SRQAttrMask) error {
	if attr == nil {
		return einval("ibv_modify_srq (attr NULL)")
	}
	if err := s.lock("ibv_modify_srq"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	a := toSRQAttr(*attr)
	rc, e := C.ibv_modify_srq(s.s, &a, C.int(mask))
	return rcErrno("ibv_modify_srq", rc, e)
}

// Query is ibv_query_srq.
func (s *srq) Query() (verbs.SRQAttr, error) {
	if err := s.lock("ibv_query_srq"); err != nil {
		return verbs.SRQAttr{}, err
	}
	defer s.mu.Unlock()
	var a C.struct_ibv_srq_attr
	if rc, e := C.ibv_query_srq(s.s, &a); rc != 0 {
		return verbs.SRQAttr{}, rcErrno("ibv_query_srq", rc, e)
	}
	return verbs.SRQAttr{MaxWR: uint32(a.max_wr), MaxSGE: uint32(a.max_sge), SRQLimit: uint32(a.srq_limit)}, nil
}

// Destroy is ibv_destroy_srq once every async event read for the SRQ is
// acknowledged, waiting for that as long as it takes.
func (s *srq) Destroy() error { return s.DestroyContext(context.Background()) }

// DestroyContext is ibv_destroy_srq once every async event read for the
// SRQ is acknowledged, waiting for that until ctx ends.
func (s *srq) DestroyContext(ctx context.Context) error {
	return s.destroyAcked(ctx, "ibv_destroy_srq", &s.async, unsafe.Pointer(s.s), func() (C.int, error) {
		rc, e := C.ibv_destroy_srq(s.s)
		return rc, e
	}, s.recv.free)
}
