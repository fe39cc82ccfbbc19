//go:build linux

package nicd

import (
	"context"
	"errors"
	"math"
	"syscall"

	"github.com/verbsim/verbsim/internal/cabi"
	"github.com/verbsim/verbsim/internal/simhook"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// Memory regions, memory windows and device memory.

func init() {
	handlers[opRegMR] = hRegMR
	handlers[opAdviseMR] = hAdviseMR
	handlers[opDeregMR] = hDeregMR
	handlers[opReregMR] = hReregMR
	handlers[opAllocMW] = hAllocMW
	handlers[opDeallocMW] = hDeallocMW
	handlers[opBindMW] = hBindMW
	handlers[opAllocDM] = hAllocDM
	handlers[opFreeDM] = hFreeDM
	handlers[opMemcpyDM] = hMemcpyDM
	handlers[opRegDMMR] = hRegDMMR
}

type mrObj struct{ mr *sim.MR }

// writable is the access that makes the kernel pin an MR's pages for
// writing (ib_access_writable).
const writable = verbs.AccessLocalWrite | verbs.AccessRemoteWrite | verbs.AccessRemoteAtomic | verbs.AccessMWBind

// implicitODP is the errno of a registration at address NULL (ODP-02):
// with length SIZE_MAX and ON_DEMAND it asks for an implicit on-demand
// MR, which a device without ODP refuses as it refuses any ON_DEMAND
// registration (EOPNOTSUPP), and one with ODP but without
// IBV_ODP_SUPPORT_IMPLICIT with EINVAL, as mlx5 and rxe do. verbsim never
// offers implicit ODP (docs/c-programs.md). Anything else at NULL is
// EINVAL.
func implicitODP(p *pdObj, length uint64, access verbs.AccessFlags) error {
	if length != math.MaxUint64 || access&verbs.AccessOnDemand == 0 {
		return syscall.EINVAL
	}
	a, err := p.ctx.c.QueryDeviceEx(0)
	switch {
	case err != nil:
		return err
	case a.ODPCaps.GeneralCaps&verbs.ODPSupport == 0:
		return syscall.EOPNOTSUPP
	}
	return syscall.EINVAL
}

// hRegMR registers the program's buffer: the engine's checks first
// (EINVAL, EOPNOTSUPP, ENOMEM, as the kernel's core checks come first),
// then, unless the MR is on-demand, the pages: they must be mapped, and
// writable for an MR that may be written (EFAULT otherwise, as the
// kernel's pinning fails).
func hRegMR(c *conn, r *req, body []byte, fds []int) (reply, error) {
	p := get[pdObj](c.s, r.Obj)
	m, ok := cabi.Read[mrReq](body)
	if p == nil || !ok {
		return reply{}, einval("ibv_reg_mr")
	}
	access := verbs.AccessFlags(m.Access)
	if m.Addr == 0 && m.Length != 0 {
		return reply{}, implicitODP(p, m.Length, access)
	}
	x, err := simhook.RegExternalMR(p.pd, c.s.mem, m.Addr, m.Length, m.IOVA, access)
	if err != nil {
		return reply{}, err
	}
	mr := x.(*sim.MR)
	if access&verbs.AccessOnDemand == 0 {
		ok, err := mapped(c.s.pid, m.Addr, m.Length, mr.Access()&writable != 0)
		if err != nil || !ok {
			mr.Dereg()
			return reply{}, verr.Errorf("ibv_reg_mr", syscall.EFAULT, "[%#x, %#x) is not mapped %s in the program", m.Addr, m.Addr+m.Length, map[bool]string{false: "readable", true: "writable"}[mr.Access()&writable != 0])
		}
	}
	o := &mrObj{mr: mr}
	var h uint64
	h = c.s.add(p.ctx, rankMR, o, func(context.Context) error { return c.s.deregMR(h, o) })
	return reply{v: h, w: uint64(mr.LKey()) | uint64(mr.RKey())<<32}, nil
}

func (se *session) deregMR(h uint64, o *mrObj) error {
	if err := o.mr.Dereg(); err != nil {
		return err
	}
	se.drop(h)
	return nil
}

func hDeregMR(c *conn, r *req, body []byte, fds []int) (reply, error) {
	o := get[mrObj](c.s, r.Obj)
	if o == nil {
		return reply{}, einval("ibv_dereg_mr")
	}
	return reply{}, c.s.deregMR(r.Obj, o)
}

// hAdviseMR is ibv_advise_mr (PD.AdviseMR).
func hAdviseMR(c *conn, r *req, body []byte, fds []int) (reply, error) {
	p := get[pdObj](c.s, r.Obj)
	if p == nil {
		return reply{}, einval("ibv_advise_mr")
	}
	n := len(body) / cabi.Size[cabi.SGE]()
	list := make([]verbs.SGE, n)
	for i := range list {
		s, _ := cabi.Read[cabi.SGE](body[i*cabi.Size[cabi.SGE]():])
		list[i] = s.Verbs()
	}
	if n == 0 {
		list = nil
	}
	return reply{}, p.pd.AdviseMR(verbs.AdviseMRAdvice(r.A), verbs.AdviseMRFlags(r.B), list)
}

// hReregMR is ibv_rereg_mr past libibverbs' own checks (glue.c): a new
// translation must be mapped as for a registration (an ERR_CMD with
// EFAULT, the MR unchanged, when it is not).
func hReregMR(c *conn, r *req, body []byte, fds []int) (reply, error) {
	o := get[mrObj](c.s, r.Obj)
	q, ok := cabi.Read[reregReq](body)
	if o == nil || !ok {
		return reply{w: failure(verbs.ReregErrInput)}, einval("ibv_rereg_mr")
	}
	flags := verbs.ReregFlags(q.Flags)
	var pd any
	if q.PD != 0 {
		p := get[pdObj](c.s, q.PD)
		if p == nil {
			return reply{w: failure(verbs.ReregErrInput)}, einval("ibv_rereg_mr")
		}
		pd = p.pd
	}
	access := verbs.AccessFlags(q.Access)
	var mem simhook.Extern
	if flags&verbs.ReregChangeTranslation != 0 && q.Length != 0 {
		mem = c.s.mem
		after := o.mr.Access()
		if flags&verbs.ReregChangeAccess != 0 {
			after = access
		}
		if after&verbs.AccessOnDemand == 0 {
			if ok, err := mapped(c.s.pid, q.Addr, q.Length, after&writable != 0); err != nil || !ok {
				return reply{w: failure(verbs.ReregErrCmd)}, verr.Errorf("ibv_rereg_mr", syscall.EFAULT, "[%#x, %#x) is not mapped in the program", q.Addr, q.Addr+q.Length)
			}
		}
	}
	// libibverbs passes the new buffer's address as hca_va (MR-13).
	if err := simhook.ReregExternalMR(o.mr, flags, pd, mem, q.Addr, q.Length, q.Addr, access); err != nil {
		var re *verbs.ReregError
		if errors.As(err, &re) {
			return reply{w: failure(re.Failure)}, err
		}
		return reply{w: failure(verbs.ReregErrInput)}, err
	}
	return reply{v: uint64(o.mr.LKey()) | uint64(o.mr.RKey())<<32}, nil
}

// failure is an ibv_rereg_mr failure class as the reply's w carries it
// (the library reads it back as an int).
func failure(f verbs.ReregFailure) uint64 { return uint64(int64(f)) }

type mwObj struct{ mw *sim.MW }

func hAllocMW(c *conn, r *req, body []byte, fds []int) (reply, error) {
	p := get[pdObj](c.s, r.Obj)
	if p == nil {
		return reply{}, einval("ibv_alloc_mw")
	}
	mw, err := p.pd.AllocMW(verbs.MWType(r.A))
	if err != nil {
		return reply{}, err
	}
	o := &mwObj{mw: mw}
	var h uint64
	h = c.s.add(p.ctx, rankMR, o, func(context.Context) error { return c.s.deallocMW(h, o) })
	return reply{v: h, w: uint64(mw.RKey())}, nil
}

func (se *session) deallocMW(h uint64, o *mwObj) error {
	if err := o.mw.Dealloc(); err != nil {
		return err
	}
	se.drop(h)
	return nil
}

func hDeallocMW(c *conn, r *req, body []byte, fds []int) (reply, error) {
	o := get[mwObj](c.s, r.Obj)
	if o == nil {
		return reply{}, einval("ibv_dealloc_mw")
	}
	return reply{}, c.s.deallocMW(r.Obj, o)
}

// hBindMW is ibv_bind_mw, a type 1 window: no MR with length 0 unbinds.
func hBindMW(c *conn, r *req, body []byte, fds []int) (reply, error) {
	b, ok := cabi.Read[bindReq](body)
	if !ok {
		return reply{}, einval("ibv_bind_mw")
	}
	q, w := get[qpObj](c.s, b.QP), get[mwObj](c.s, b.MW)
	if q == nil || w == nil {
		return reply{}, einval("ibv_bind_mw")
	}
	info := verbs.MWBindInfo{Addr: b.Addr, Length: b.Length, Access: verbs.AccessFlags(b.Access)}
	if b.MR != 0 {
		m := get[mrObj](c.s, b.MR)
		if m == nil {
			return reply{}, einval("ibv_bind_mw")
		}
		info.MR = m.mr
	}
	if err := q.q.BindMW(w.mw, b.WRID, verbs.SendFlags(b.Flags), info); err != nil {
		return reply{}, err
	}
	return reply{v: uint64(w.mw.RKey())}, nil
}

// dmObj is a block of device memory.
type dmObj struct{ dm *sim.DM }

func hAllocDM(c *conn, r *req, body []byte, fds []int) (reply, error) {
	o := get[ctxObj](c.s, r.Obj)
	if o == nil {
		return reply{}, einval("ibv_alloc_dm")
	}
	dm, err := o.c.AllocDM(verbs.AllocDMAttr{Length: r.A, LogAlignReq: uint32(r.B), CompMask: uint32(r.B >> 32)})
	if err != nil {
		return reply{}, err
	}
	d := &dmObj{dm: dm}
	var h uint64
	h = c.s.add(o, rankDM, d, func(context.Context) error { return c.s.freeDM(h, d) })
	return reply{v: h}, nil
}

func (se *session) freeDM(h uint64, d *dmObj) error {
	if err := d.dm.Free(); err != nil {
		return err
	}
	se.drop(h)
	return nil
}

func hFreeDM(c *conn, r *req, body []byte, fds []int) (reply, error) {
	d := get[dmObj](c.s, r.Obj)
	if d == nil {
		return reply{}, einval("ibv_free_dm")
	}
	return reply{}, c.s.freeDM(r.Obj, d)
}

// hMemcpyDM copies between device memory and the bytes of the request
// (to the device) or the reply (from it): b is the length, with bit 63 set
// for a copy to the device.
func hMemcpyDM(c *conn, r *req, body []byte, fds []int) (reply, error) {
	d := get[dmObj](c.s, r.Obj)
	if d == nil {
		return reply{}, einval("ibv_memcpy_dm")
	}
	n := r.B &^ (1 << 63)
	if r.B>>63 != 0 {
		if uint64(len(body)) != n {
			return reply{}, syscall.EINVAL
		}
		return reply{}, d.dm.MemcpyTo(r.A, body)
	}
	if n > maxMsg/2 {
		return reply{}, syscall.EINVAL
	}
	out := c.outBody(int(n))
	if err := d.dm.MemcpyFrom(out, r.A); err != nil {
		return reply{}, err
	}
	return reply{body: out}, nil
}

func hRegDMMR(c *conn, r *req, body []byte, fds []int) (reply, error) {
	p := get[pdObj](c.s, r.Obj)
	m, ok := cabi.Read[dmMRReq](body)
	if p == nil || !ok {
		return reply{}, einval("ibv_reg_dm_mr")
	}
	d := get[dmObj](c.s, m.DM)
	if d == nil {
		return reply{}, einval("ibv_reg_dm_mr")
	}
	mr, err := p.pd.RegDMMR(d.dm, m.Offset, m.Length, verbs.AccessFlags(m.Access))
	if err != nil {
		return reply{}, err
	}
	o := &mrObj{mr: mr}
	var h uint64
	h = c.s.add(p.ctx, rankMR, o, func(context.Context) error { return c.s.deregMR(h, o) })
	return reply{v: h, w: uint64(mr.LKey()) | uint64(mr.RKey())<<32}, nil
}
