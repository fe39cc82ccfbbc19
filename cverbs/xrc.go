//go:build cgo && linux

package cverbs

/*
#include "cverbs.h"
*/
import "C"

import (
	"unsafe"

	"github.com/verbsim/verbsim/verbs"
)

// OpenXRCD is ibv_open_xrcd (verbs.XRCOpener).
func (c *devContext) OpenXRCD(attr verbs.XRCDInitAttr) (verbs.XRCD, error) {
	if err := c.live("ibv_open_xrcd"); err != nil {
		return nil, err
	}
	x, err := C.cv_open_xrcd(c.c, C.uint32_t(attr.CompMask), C.int(attr.FD), C.int(attr.OFlags))
	if x == nil {
		return nil, errOf("ibv_open_xrcd", err)
	}
	d := &xrcd{life: life{ctx: c}, x: x}
	track(unsafe.Pointer(x), d)
	return d, nil
}

// xrcd is a struct ibv_xrcd.
type xrcd struct {
	life
	x *C.struct_ibv_xrcd
}

// Close is ibv_close_xrcd.
func (d *xrcd) Close() error {
	if err := d.lock("ibv_close_xrcd"); err != nil {
		return err
	}
	defer d.mu.Unlock()
	if rc, e := C.cv_close_xrcd(d.x); rc != 0 {
		return rcErrno("ibv_close_xrcd", rc, e)
	}
	d.dead = true
	forget(unsafe.Pointer(d.x))
	return nil
}

// CreateQP is ibv_create_qp_ex with the domain: an XRC target QP, which has
// no PD, CQs or SRQ of its own.
func (d *xrcd) CreateQP(attr verbs.QPInitAttrEx) (verbs.QP, error) {
	if err := d.lock("ibv_create_qp_ex (xrcd)"); err != nil {
		return nil, err
	}
	defer d.mu.Unlock()
	ia := C.struct_ibv_qp_init_attr{qp_type: C.enum_ibv_qp_type(attr.Type)}
	var got C.struct_ibv_qp_cap
	c, err := C.cv_create_qp_ex(d.ctx.c, &ia, C.uint32_t(attr.CompMask), nil, d.x, C.uint64_t(attr.SendOpsFlags), &got)
	if c == nil {
		return nil, errOf("ibv_create_qp_ex", err)
	}
	q := &qp{life: life{ctx: d.ctx}, qpContext: attr.Context}
	q.created(c)
	return q.hooked(), nil
}

// CreateSRQEx is ibv_create_srq_ex (verbs.XRCOpener).
func (c *devContext) CreateSRQEx(attr verbs.SRQInitAttrEx) (verbs.SRQ, error) {
	if err := c.live("ibv_create_srq_ex"); err != nil {
		return nil, err
	}
	var cpd *C.struct_ibv_pd
	if attr.PD != nil {
		p, ok := attr.PD.(*pd)
		if !ok {
			return nil, einval("ibv_create_srq_ex (a PD of another implementation)")
		}
		if err := p.lock("ibv_create_srq_ex (pd)"); err != nil {
			return nil, err
		}
		cpd = p.p
		p.mu.Unlock()
	}
	var cx *C.struct_ibv_xrcd
	if attr.XRCD != nil {
		x, ok := attr.XRCD.(*xrcd)
		if !ok {
			return nil, einval("ibv_create_srq_ex (an XRCD of another implementation)")
		}
		if err := x.lock("ibv_create_srq_ex (xrcd)"); err != nil {
			return nil, err
		}
		cx = x.x
		x.mu.Unlock()
	}
	cq, ok := cCQ(attr.CQ)
	if !ok {
		return nil, einval("ibv_create_srq_ex (cq)")
	}
	a := toSRQAttr(attr.Attr)
	s, err := C.cv_create_srq_ex(c.c, &a, C.uint32_t(attr.CompMask), C.uint32_t(attr.Type), cpd, cx, cq)
	if s == nil {
		return nil, errOf("ibv_create_srq_ex", err)
	}
	x := &srq{life: life{ctx: c}, s: s, srqContext: attr.Context}
	track(unsafe.Pointer(s), x)
	return x.hooked(), nil
}

// GetSRQNum is ibv_get_srq_num (verbs.SRQNumGetter).
func (s *srq) GetSRQNum() (uint32, error) {
	if err := s.lock("ibv_get_srq_num"); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	var n C.uint32_t
	if rc, e := C.cv_get_srq_num(s.s, &n); rc != 0 {
		return 0, rcErrno("ibv_get_srq_num", rc, e)
	}
	return uint32(n), nil
}

var (
	_ verbs.XRCOpener    = (*devContext)(nil)
	_ verbs.SRQNumGetter = (*srq)(nil)
	_ verbs.XRCD         = (*xrcd)(nil)
)
