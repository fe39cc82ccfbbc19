//go:build cgo && linux

package cverbs

/*
#include "cverbs.h"
#include "cm.h"
*/
import "C"

import (
	"context"
	"syscall"
	"unsafe"

	"github.com/verbsim/verbsim/verbs"
)

// The QPs, SRQs and destroys of librdmacm's IDs.

// CreateQP is rdma_create_qp: pd nil takes librdmacm's default PD of the
// device, and a nil CQ of attr is made by librdmacm, with a channel of its
// own. On return attr holds the QP's capacities and its CQs.
func (id *cmID) CreateQP(pd verbs.PD, attr *verbs.QPInitAttr) error {
	const verb = "rdma_create_qp"
	if attr == nil {
		return einval(verb + " (qp_init_attr NULL)")
	}
	cpd, ok := cmPD(pd)
	if !ok {
		return einval(verb + " (a PD of another implementation, or destroyed)")
	}
	var ia C.struct_ibv_qp_init_attr
	q := &qp{qpContext: attr.Context}
	if err := q.initAttr(&ia, attr); err != nil {
		return err
	}
	if attr.Type == 0 {
		ia.qp_type = C.enum_ibv_qp_type(id.QPType())
	}
	if err := id.enter(verb); err != nil {
		return err
	}
	defer id.done()
	if rc, err := C.rdma_create_qp(id.c, cpd, &ia); rc != 0 {
		return rcErrno(verb, rc, err)
	}
	id.adoptQP(q)
	attr.Cap, attr.Type = fromCap(&ia.cap), verbs.QPType(ia.qp_type)
	attr.SendCQ, attr.RecvCQ = q.sendCQ, q.recvCQ
	return nil
}

// adoptQP makes q the binding's object of the QP librdmacm made for the
// ID, with the objects librdmacm made for it. The caller holds id.use.
func (id *cmID) adoptQP(q *qp) {
	c := id.c
	ctx := cmContext(c.verbs)
	q.ctx = ctx
	q.pd = cmPDObject(c.pd, ctx)
	if q.sendCQ == nil && c.send_cq != nil {
		q.sendCQ = id.cmCQ(c.send_cq, c.send_cq_channel, ctx)
	}
	if q.recvCQ == nil && c.recv_cq != nil {
		q.recvCQ = id.cmCQ(c.recv_cq, c.recv_cq_channel, ctx)
	}
	if q.srq == nil && c.srq != nil {
		if v, ok := registry.Load(unsafe.Pointer(c.srq)); ok {
			q.srq = v.(*srq)
		}
	}
	q.byCM = true
	q.created(c.qp)
	q.hooked()
	id.mu.Lock()
	id.qp = q
	id.mu.Unlock()
}

// cmCQ returns the binding's object of a CQ librdmacm made, and of its
// channel.
func (id *cmID) cmCQ(c *C.struct_ibv_cq, ch *C.struct_ibv_comp_channel, ctx *devContext) verbs.CQ {
	if v, ok := registry.Load(unsafe.Pointer(c)); ok {
		return v.(*cq).self
	}
	q := &cq{life: life{ctx: ctx}, c: c, cqe: int(c.cqe)}
	q.self = q
	if SimHooks() {
		q.self = q.hooked()
	}
	if ch != nil {
		if v, ok := registry.Load(unsafe.Pointer(ch)); ok {
			q.ch = v.(*channel)
		} else {
			_ = C.cv_set_nonblock_fd(ch.fd)
			w := &channel{life: life{ctx: ctx}, ch: ch, fd: ch.fd}
			track(unsafe.Pointer(ch), w)
			cmOwned.Store(unsafe.Pointer(ch), struct{}{})
			w.hooked()
			q.ch = w
		}
	}
	track(unsafe.Pointer(c), q)
	cmOwned.Store(unsafe.Pointer(c), struct{}{})
	id.mu.Lock()
	id.cqs = append(id.cqs, q)
	id.mu.Unlock()
	return q.self
}

// cmPDObject returns the binding's object of PD p, made once for a PD
// librdmacm allocated.
func cmPDObject(p *C.struct_ibv_pd, ctx *devContext) *pd {
	if v, ok := registry.Load(unsafe.Pointer(p)); ok {
		return v.(*pd)
	}
	x := &pd{life: life{ctx: ctx}, p: p, handle: uint32(p.handle)}
	track(unsafe.Pointer(p), x)
	cmOwned.Store(unsafe.Pointer(p), struct{}{})
	return x
}

// DestroyQP is rdma_destroy_qp: the QP, then the CQs and channels
// librdmacm made for it. It waits for the acknowledgement of the events
// read for them, as libibverbs' destroys do.
func (id *cmID) DestroyQP() error {
	const verb = "rdma_destroy_qp"
	if err := id.enter(verb); err != nil {
		return err
	}
	defer id.done()
	id.mu.Lock()
	q, cqs := id.qp, id.cqs
	id.mu.Unlock()
	if q == nil {
		return einval(verb + " (the ID has no QP)")
	}
	_ = q.async.settled(context.Background())
	for _, c := range cqs {
		_ = c.comp.settled(context.Background())
		_ = c.async.settled(context.Background())
	}
	q.mu.Lock()
	C.rdma_destroy_qp(id.c)
	q.dead = true
	forget(unsafe.Pointer(q.c))
	q.send.free()
	q.recv.free()
	q.mu.Unlock()
	for _, c := range cqs {
		c.mu.Lock()
		c.dead = true
		forget(unsafe.Pointer(c.c))
		cmOwned.Delete(unsafe.Pointer(c.c))
		if c.wc != nil {
			C.free(unsafe.Pointer(c.wc))
			c.wc = nil
		}
		c.mu.Unlock()
		if w := c.ch; w != nil && cmOwns(unsafe.Pointer(w.ch)) {
			w.kill()
			forget(unsafe.Pointer(w.ch))
			cmOwned.Delete(unsafe.Pointer(w.ch))
		}
	}
	id.mu.Lock()
	id.qp, id.cqs = nil, nil
	id.mu.Unlock()
	return nil
}

// CreateSRQ is rdma_create_srq; pd may be nil.
func (id *cmID) CreateSRQ(pd verbs.PD, attr *verbs.SRQInitAttr) error {
	const verb = "rdma_create_srq"
	if attr == nil {
		return einval(verb + " (srq_init_attr NULL)")
	}
	cpd, ok := cmPD(pd)
	if !ok {
		return einval(verb + " (a PD of another implementation, or destroyed)")
	}
	if err := id.enter(verb); err != nil {
		return err
	}
	defer id.done()
	var ia C.struct_ibv_srq_init_attr
	ia.attr = toSRQAttr(attr.Attr)
	if rc, err := C.rdma_create_srq(id.c, cpd, &ia); rc != 0 {
		return rcErrno(verb, rc, err)
	}
	s := &srq{life: life{ctx: cmContext(id.c.verbs)}, s: id.c.srq, srqContext: attr.Context}
	track(unsafe.Pointer(s.s), s)
	cmOwned.Store(unsafe.Pointer(s.s), struct{}{})
	s.hooked()
	attr.Attr.MaxWR, attr.Attr.MaxSGE = uint32(ia.attr.max_wr), uint32(ia.attr.max_sge)
	return nil
}

// DestroySRQ is rdma_destroy_srq.
func (id *cmID) DestroySRQ() error {
	const verb = "rdma_destroy_srq"
	if err := id.enter(verb); err != nil {
		return err
	}
	defer id.done()
	v, ok := registry.Load(unsafe.Pointer(id.c.srq))
	if id.c.srq == nil || !ok {
		return einval(verb + " (the ID has no SRQ)")
	}
	s := v.(*srq)
	_ = s.async.settled(context.Background())
	s.mu.Lock()
	C.rdma_destroy_srq(id.c)
	s.dead = true
	forget(unsafe.Pointer(s.s))
	cmOwned.Delete(unsafe.Pointer(s.s))
	s.recv.free()
	s.mu.Unlock()
	return nil
}

// Destroy is rdma_destroy_id: it waits, until ctx ends, for the events of
// the ID read through the binding to be acknowledged (librdmacm would wait
// without a bound). An ID whose QP or SRQ still exists is EBUSY (librdmacm
// would leak them); a destroyed one is ENOENT.
func (id *cmID) Destroy(ctx context.Context) error {
	return id.destroy(ctx, "rdma_destroy_id", false)
}

// DestroyEP is rdma_destroy_ep: the ID's QP, its SRQ, then the ID.
func (id *cmID) DestroyEP(ctx context.Context) error {
	return id.destroy(ctx, "rdma_destroy_ep", true)
}

func (id *cmID) destroy(ctx context.Context, verb string, ep bool) error {
	if ctx == nil {
		return einval(verb + " (nil context.Context)")
	}
	if err := id.enter(verb); err != nil {
		return err
	}
	busy := id.c.qp != nil || id.c.srq != nil
	id.done()
	if busy && !ep {
		return &Error{Verb: verb + " (destroy the ID's QP and SRQ first)", Errno: syscall.EBUSY}
	}
	if err := id.evs.settled(ctx); err != nil {
		return interrupted(verb, ctx)
	}
	if ep {
		if id.QP() != nil {
			if err := id.DestroyQP(); err != nil {
				return err
			}
		}
		if id.SRQ() != nil {
			if err := id.DestroySRQ(); err != nil {
				return err
			}
		}
	}
	id.use.Lock()
	defer id.use.Unlock()
	id.mu.Lock()
	dead := id.dead
	id.mu.Unlock()
	if dead {
		return &Error{Verb: verb + " (a destroyed rdma_cm_id)", Errno: syscall.ENOENT}
	}
	if ep {
		C.rdma_destroy_ep(id.c)
	} else if rc, err := C.rdma_destroy_id(id.c); rc != 0 {
		return rcErrno(verb, rc, err)
	}
	cmIDs.Delete(id.c)
	id.mu.Lock()
	id.dead = true
	ch := id.ch
	id.ch = nil
	for a, h := range id.joins {
		mcFree(h)
		delete(id.joins, a)
	}
	id.mu.Unlock()
	moveID(ch, nil)
	return nil
}
