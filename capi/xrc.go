package main

// xrc.go is the Go side of xrc.c: XRC domains, XRC SRQs and XRC_RECV QPs
// (docs/xrc.md). Like engine.go it takes plain C values and handles and
// returns an errno.

/*
#include <stdint.h>
#include <fcntl.h>
#include "capi.h"
*/
import "C"

import (
	"sync"
	"syscall"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// xrcdRec is one open of an XRC domain. Opens that name the same file
// through the same context share the domain (share is then set).
type xrcdRec struct {
	x     *sim.XRCD
	ctx   *ctxRec
	share *xrcdShare
}

// xrcdKey names a domain opened by file: the context and the file's inode.
type xrcdKey struct {
	ctx      *ctxRec
	dev, ino uint64
}

type xrcdShare struct {
	key  xrcdKey
	x    *sim.XRCD
	refs int
}

var (
	xrcdMu     sync.Mutex
	xrcdShares = map[xrcdKey]*xrcdShare{}
)

// The comp_mask bits of struct ibv_xrcd_init_attr.
const (
	xrcdFD       = C.IBV_XRCD_INIT_ATTR_FD
	xrcdOFlags   = C.IBV_XRCD_INIT_ATTR_OFLAGS
	xrcdReserved = C.IBV_XRCD_INIT_ATTR_RESERVED
)

// vs_open_xrcd is ibv_open_xrcd. byFile says the program gave a file
// descriptor other than -1, whose inode is (dev, ino): the domain is then
// found by the inode among the domains this context opened by file, as
// the kernel finds it among the device's (EAGAIN without O_CREAT when there
// is none, EINVAL with O_EXCL when there is one). The simulator itself has
// no files and is always asked for a domain of its own (fd -1).
//
//export vs_open_xrcd
func vs_open_xrcd(h C.uintptr_t, compMask C.uint32_t, byFile C.int, dev, ino C.uint64_t, oflags C.int,
	out *C.uintptr_t) C.int {
	r := rec[ctxRec](h)
	if r == nil || out == nil {
		return C.int(syscall.EINVAL)
	}
	// libibverbs checks comp_mask before the kernel sees the descriptor.
	m := uint32(compMask)
	switch {
	case m >= xrcdReserved:
		return C.int(syscall.EOPNOTSUPP)
	case m&xrcdFD == 0 || m&xrcdOFlags == 0:
		return C.int(syscall.EINVAL)
	}
	attr := verbs.XRCDInitAttr{CompMask: verbs.XRCDInitFD | verbs.XRCDInitOFlags, FD: -1, OFlags: int(oflags)}
	if byFile == 0 {
		x, err := r.c.OpenXRCD(attr)
		if err != nil {
			return errno(err)
		}
		*out = newHandle(&xrcdRec{x: x, ctx: r})
		adopt(r, *out, rankXRCD, vs_close_xrcd)
		return 0
	}
	key := xrcdKey{ctx: r, dev: uint64(dev), ino: uint64(ino)}
	xrcdMu.Lock()
	defer xrcdMu.Unlock()
	if s := xrcdShares[key]; s != nil {
		if oflags&C.O_EXCL != 0 {
			return C.int(syscall.EINVAL)
		}
		s.refs++
		*out = newHandle(&xrcdRec{x: s.x, ctx: r, share: s})
		adopt(r, *out, rankXRCD, vs_close_xrcd)
		return 0
	}
	x, err := r.c.OpenXRCD(attr) // the profile's answer (XRC-03) comes first
	if err != nil {
		return errno(err)
	}
	if oflags&C.O_CREAT == 0 {
		_ = x.Close()
		return C.int(syscall.EAGAIN)
	}
	s := &xrcdShare{key: key, x: x, refs: 1}
	xrcdShares[key] = s
	*out = newHandle(&xrcdRec{x: x, ctx: r, share: s})
	adopt(r, *out, rankXRCD, vs_close_xrcd)
	return 0
}

// vs_close_xrcd is ibv_close_xrcd: EBUSY while an XRC SRQ or XRC_RECV QP
// is in the domain (XRC-02), unless another open of the same file still
// holds it, which keeps the domain and its objects.
//
//export vs_close_xrcd
func vs_close_xrcd(h C.uintptr_t) C.int {
	r := rec[xrcdRec](h)
	if r == nil {
		return C.int(syscall.EINVAL)
	}
	if s := r.share; s != nil {
		xrcdMu.Lock()
		defer xrcdMu.Unlock()
		if s.refs > 1 {
			s.refs--
			freeHandle(h)
			return 0
		}
	}
	if err := r.x.Close(); err != nil {
		return errno(err)
	}
	if s := r.share; s != nil {
		delete(xrcdShares, s.key)
	}
	freeHandle(h)
	return 0
}

// vs_create_srq_ex is ibv_create_srq_ex (XRC-04); glue's pointers become
// handles, 0 for a missing, foreign or unnamed object.
//
//export vs_create_srq_ex
func vs_create_srq_ex(h C.uintptr_t, a *C.struct_ibv_srq_attr, compMask, srqType C.uint32_t,
	pdh, xrcdh, cqh, cptr C.uintptr_t, out *C.uintptr_t) C.int {
	r := rec[ctxRec](h)
	if r == nil || a == nil || out == nil || cptr == 0 {
		return C.int(syscall.EINVAL)
	}
	attr := sim.SRQInitAttrEx{
		Attr:     verbs.SRQAttr{MaxWR: uint32(a.max_wr), MaxSGE: uint32(a.max_sge), SRQLimit: uint32(a.srq_limit)},
		CompMask: verbs.SRQInitMask(compMask),
		Type:     verbs.SRQType(srqType),
	}
	if p := rec[pdRec](pdh); p != nil {
		attr.PD = p.pd
	}
	if x := rec[xrcdRec](xrcdh); x != nil {
		attr.XRCD = x.x
	}
	if c := rec[cqRec](cqh); c != nil {
		attr.CQ = c.cq
	}
	s, err := r.c.CreateSRQEx(attr)
	if err != nil {
		return errno(err)
	}
	if got, err := s.Query(); err == nil {
		a.max_wr, a.max_sge = C.uint32_t(got.MaxWR), C.uint32_t(got.MaxSGE)
	}
	setCptr(s, uintptr(cptr))
	*out = newHandle(&srqRec{s: s, ctx: r, cptr: uintptr(cptr)})
	adopt(r, *out, rankSRQ, vs_destroy_srq)
	return 0
}

// vs_get_srq_num is ibv_get_srq_num (XRC-05; EOPNOTSUPP on a basic SRQ).
//
//export vs_get_srq_num
func vs_get_srq_num(h C.uintptr_t, num *C.uint32_t) C.int {
	r := rec[srqRec](h)
	if r == nil || num == nil {
		return C.int(syscall.EINVAL)
	}
	n, err := r.s.GetSRQNum()
	if err != nil {
		return errno(err)
	}
	*num = C.uint32_t(n)
	return 0
}

// vs_create_xrc_recv_qp is ibv_create_qp_ex of an XRC_RECV QP in the
// domain xrcdh (XRC-06): no PD, no CQ, no capacities.
//
//export vs_create_xrc_recv_qp
func vs_create_xrc_recv_qp(xrcdh C.uintptr_t, in *C.struct_capi_qp_init, cptr C.uintptr_t, out *C.uintptr_t,
	qpn *C.uint32_t) C.int {
	x := rec[xrcdRec](xrcdh)
	if x == nil || in == nil || out == nil || qpn == nil || cptr == 0 {
		return C.int(syscall.EINVAL)
	}
	q, err := x.x.CreateQP(sim.QPInitAttr{
		Type:         verbs.QPType(in.qp_type),
		CompMask:     sim.QPInitMask(in.comp_mask),
		SendOpsFlags: verbs.QPSendOps(in.send_ops_flags),
	})
	if err != nil {
		return errno(err)
	}
	qr := &qpRec{q: q, ctx: x.ctx, cptr: uintptr(cptr)}
	setCptr(q, uintptr(cptr))
	*qpn = C.uint32_t(q.Num())
	*out = newHandle(qr)
	adopt(qr.ctx, *out, rankQP, vs_destroy_qp)
	return 0
}
