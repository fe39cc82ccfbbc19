//go:build linux

package nicd

import (
	"context"
	"sync"
	"syscall"

	"github.com/verbsim/verbsim/internal/cabi"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// Shared receive queues and XRC domains.

func init() {
	handlers[opCreateSRQ] = hCreateSRQ
	handlers[opModifySRQ] = hModifySRQ
	handlers[opQuerySRQ] = hQuerySRQ
	handlers[opDestroySRQ] = hDestroySRQ
	handlers[opOpenXRCD] = hOpenXRCD
	handlers[opCloseXRCD] = hCloseXRCD
	handlers[opCreateSRQEx] = hCreateSRQEx
	handlers[opGetSRQNum] = hGetSRQNum
}

type srqObj struct {
	s    *sim.SRQ
	ctx  *ctxObj
	cptr uint64
	mu   sync.Mutex
	rwrs []verbs.RecvWR
	sges []verbs.SGE
}

// addSRQ records a new SRQ and replies with its handle and attributes.
func (se *session) addSRQ(o *srqObj, c *conn) reply {
	se.setCptr(o.s, o.cptr)
	var h uint64
	h = se.add(o.ctx, rankSRQ, o, func(cc context.Context) error { return se.destroySRQ(h, o, cc, true) })
	var a cabi.SRQAttr
	if got, err := o.s.Query(); err == nil {
		a = cabi.SRQAttrOf(got)
	}
	out := c.outBody(cabi.Size[cabi.SRQAttr]())
	copy(out, cabi.Bytes(&a))
	return reply{v: h, body: out}
}

func hCreateSRQ(c *conn, r *req, body []byte, fds []int) (reply, error) {
	p := get[pdObj](c.s, r.Obj)
	a, ok := cabi.Read[srqReq](body)
	if p == nil || !ok || a.CPtr == 0 {
		return reply{}, einval("ibv_create_srq")
	}
	s, err := p.pd.CreateSRQ(sim.SRQInitAttr{Attr: a.Attr.Verbs()})
	if err != nil {
		return reply{}, err
	}
	return c.s.addSRQ(&srqObj{s: s, ctx: p.ctx, cptr: a.CPtr}, c), nil
}

func (se *session) destroySRQ(h uint64, o *srqObj, cc context.Context, gone bool) error {
	undo := o.ctx.forget(o.s, gone)
	err := o.s.DestroyContext(cc)
	undo()
	if err != nil {
		return err
	}
	se.setCptr(o.s, 0)
	se.drop(h)
	return nil
}

func hDestroySRQ(c *conn, r *req, body []byte, fds []int) (reply, error) {
	o := get[srqObj](c.s, r.Obj)
	if o == nil {
		return reply{}, einval("ibv_destroy_srq")
	}
	return reply{}, c.s.destroySRQ(r.Obj, o, c.ctx, false)
}

func hModifySRQ(c *conn, r *req, body []byte, fds []int) (reply, error) {
	o := get[srqObj](c.s, r.Obj)
	a, ok := cabi.Read[cabi.SRQAttr](body)
	if o == nil || !ok {
		return reply{}, einval("ibv_modify_srq")
	}
	v := a.Verbs()
	return reply{}, o.s.Modify(&v, verbs.SRQAttrMask(r.A))
}

func hQuerySRQ(c *conn, r *req, body []byte, fds []int) (reply, error) {
	o := get[srqObj](c.s, r.Obj)
	if o == nil {
		return reply{}, einval("ibv_query_srq")
	}
	got, err := o.s.Query()
	if err != nil {
		return reply{}, err
	}
	a := cabi.SRQAttrOf(got)
	out := c.outBody(cabi.Size[cabi.SRQAttr]())
	copy(out, cabi.Bytes(&a))
	return reply{body: out}, nil
}

// xrcdObj is one open of an XRC domain. Opens that name the same file
// (by inode) through one context share the domain (share), as the kernel
// shares it; the engine's domains belong to a context, so opens through
// different contexts (or processes) get domains of their own
// (docs/daemon.md).
type xrcdObj struct {
	x     *sim.XRCD
	ctx   *ctxObj
	share *xrcdShare
}

type xrcdKey struct {
	ctx      *ctxObj
	dev, ino uint64
}

type xrcdShare struct {
	key  xrcdKey
	x    *sim.XRCD
	refs int
}

// The comp_mask bits of struct ibv_xrcd_init_attr.
const (
	xrcdFD       = 1 << 0
	xrcdOFlags   = 1 << 1
	xrcdReserved = 1 << 2
)

// hOpenXRCD is ibv_open_xrcd. by_file says the program gave a descriptor
// other than -1, whose inode is (dev, ino): the domain is then found
// among those opened by file, as the kernel finds it among the device's
// (EAGAIN without O_CREAT when there is none, EINVAL with O_EXCL when
// there is one). The engine itself has no files and is always asked for
// a domain of its own (fd -1).
func hOpenXRCD(c *conn, r *req, body []byte, fds []int) (reply, error) {
	o := get[ctxObj](c.s, r.Obj)
	a, ok := cabi.Read[xrcdReq](body)
	if o == nil || !ok {
		return reply{}, einval("ibv_open_xrcd")
	}
	switch m := a.CompMask; {
	case m >= xrcdReserved:
		return reply{}, syscall.EOPNOTSUPP
	case m&xrcdFD == 0 || m&xrcdOFlags == 0:
		return reply{}, syscall.EINVAL
	}
	attr := verbs.XRCDInitAttr{CompMask: verbs.XRCDInitFD | verbs.XRCDInitOFlags, FD: -1, OFlags: int(a.OFlags)}
	srv := c.s.srv
	add := func(x *xrcdObj) reply {
		var h uint64
		h = c.s.add(o, rankXRCD, x, func(context.Context) error { return c.s.closeXRCD(h, x) })
		return reply{v: h}
	}
	if a.ByFile == 0 {
		x, err := o.c.OpenXRCD(attr)
		if err != nil {
			return reply{}, err
		}
		return add(&xrcdObj{x: x, ctx: o}), nil
	}
	key := xrcdKey{o, a.Dev, a.Ino}
	srv.xrcdMu.Lock()
	defer srv.xrcdMu.Unlock()
	if s := srv.xrcds[key]; s != nil {
		if a.OFlags&syscall.O_EXCL != 0 {
			return reply{}, syscall.EINVAL
		}
		s.refs++
		return add(&xrcdObj{x: s.x, ctx: o, share: s}), nil
	}
	x, err := o.c.OpenXRCD(attr) // the profile's answer (XRC-03) comes first
	if err != nil {
		return reply{}, err
	}
	if a.OFlags&syscall.O_CREAT == 0 {
		_ = x.Close()
		return reply{}, syscall.EAGAIN
	}
	s := &xrcdShare{key: key, x: x, refs: 1}
	if srv.xrcds == nil {
		srv.xrcds = map[xrcdKey]*xrcdShare{}
	}
	srv.xrcds[key] = s
	return add(&xrcdObj{x: x, ctx: o, share: s}), nil
}

// closeXRCD is ibv_close_xrcd: EBUSY while an XRC SRQ or XRC_RECV QP is
// in the domain (XRC-02), unless another open of the same file still
// holds it, which keeps the domain and its objects.
func (se *session) closeXRCD(h uint64, x *xrcdObj) error {
	srv := se.srv
	if s := x.share; s != nil {
		srv.xrcdMu.Lock()
		defer srv.xrcdMu.Unlock()
		if s.refs > 1 {
			s.refs--
			se.drop(h)
			return nil
		}
	}
	if err := x.x.Close(); err != nil {
		return err
	}
	if s := x.share; s != nil {
		delete(srv.xrcds, s.key)
	}
	se.drop(h)
	return nil
}

func hCloseXRCD(c *conn, r *req, body []byte, fds []int) (reply, error) {
	x := get[xrcdObj](c.s, r.Obj)
	if x == nil {
		return reply{}, einval("ibv_close_xrcd")
	}
	return reply{}, c.s.closeXRCD(r.Obj, x)
}

// hCreateSRQEx is ibv_create_srq_ex (XRC-04): a handle that names nothing
// of the process is a missing object, which the engine refuses.
func hCreateSRQEx(c *conn, r *req, body []byte, fds []int) (reply, error) {
	o := get[ctxObj](c.s, r.Obj)
	a, ok := cabi.Read[srqReq](body)
	if o == nil || !ok || a.CPtr == 0 {
		return reply{}, einval("ibv_create_srq_ex")
	}
	attr := sim.SRQInitAttrEx{Attr: a.Attr.Verbs(), CompMask: verbs.SRQInitMask(a.CompMask), Type: verbs.SRQType(a.Type)}
	if p := get[pdObj](c.s, a.PD); p != nil {
		attr.PD = p.pd
	}
	if x := get[xrcdObj](c.s, a.XRCD); x != nil {
		attr.XRCD = x.x
	}
	if q := get[cqObj](c.s, a.CQ); q != nil {
		attr.CQ = q.cq
	}
	s, err := o.c.CreateSRQEx(attr)
	if err != nil {
		return reply{}, err
	}
	return c.s.addSRQ(&srqObj{s: s, ctx: o, cptr: a.CPtr}, c), nil
}

// hGetSRQNum is ibv_get_srq_num (XRC-05; EOPNOTSUPP on a basic SRQ).
func hGetSRQNum(c *conn, r *req, body []byte, fds []int) (reply, error) {
	o := get[srqObj](c.s, r.Obj)
	if o == nil {
		return reply{}, einval("ibv_get_srq_num")
	}
	n, err := o.s.GetSRQNum()
	if err != nil {
		return reply{}, err
	}
	return reply{v: uint64(n)}, nil
}
