package sim

import (
	"fmt"
	"syscall"

	"github.com/verbsim/verbsim/internal/domain"

	"github.com/verbsim/verbsim/sim/internal/qp"
	"github.com/verbsim/verbsim/sim/trace"
	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// MW is a memory window (struct ibv_mw): a key that grants remote access to
// a part of an MR, with rights of its own, that the owner can bind, move
// and revoke without registering memory. A window is allocated unbound
// (PD.AllocMW); binding attaches it to a range of an MR that has
// AccessMWBind (QP.BindMW for type 1, a BIND_MW work request for type 2);
// peers then use RKey in RDMA and atomic requests, which the responder
// checks against the window's range and rights (MW-06).
// On a nil *MW every method returns EINVAL or zero values; see the
// package doc.
type MW struct {
	tname string // the trace name, given at creation
	pd    *PD
	typ   verbs.MWType
	idx   uint32 // the key index, fixed for the window's life
	rkey  uint32 // ibv_mw.rkey as the program reads it
	key   uint32 // the rkey the adapter accepts while bound
	dead  bool

	bound  bool
	mr     *MR // while bound with a non-zero length
	addr   uint64
	length uint64
	access verbs.AccessFlags
	qp     *qp.QP // type 2: the QP that bound it
}

// AllocMW allocates a memory window of the given type in pd (ibv_alloc_mw).
// The window starts unbound, so its rkey grants nothing yet (MW-01).
//
// Errors, with nothing changed: EINVAL for a nil or deallocated PD and a
// type other than MWType1 and MWType2; EOPNOTSUPP when the device's
// capability flags lack DeviceMemWindow (or, for type 2, both
// DeviceMemWindow2A and DeviceMemWindow2B); ENOMEM when the device already
// has max_mw windows. The window holds its PD (PD-02) until Dealloc.
func (pd *PD) AllocMW(typ verbs.MWType) (_ *MW, err error) {
	const verb = "ibv_alloc_mw"
	if pd == nil {
		return nil, verr.New(verb, syscall.EINVAL, "nil PD")
	}
	d := pd.ctx.dev
	d.fabric.d.Enter(domain.Op{})
	defer d.fabric.d.Leave(domain.Op{}, nil)
	e := d.fabric.eng
	if e.tracing() {
		defer func() {
			if err != nil {
				e.callLocked(e.nameOf(pd), "alloc_mw", "", typ.String(), err)
			}
		}()
	}
	if err := pd.checkLocked(verb); err != nil {
		return nil, err
	}
	caps := d.attr.DeviceCapFlags
	d.fabric.consult(verbs.ReadingNoMW)
	switch {
	case typ != verbs.MWType1 && typ != verbs.MWType2:
		return nil, verr.Errorf(verb, syscall.EINVAL, "%v is not an ibv_mw_type (MW-01)", typ)
	case caps&verbs.DeviceMemWindow == 0:
		return nil, verr.New(verb, syscall.EOPNOTSUPP, "the device does not report IBV_DEVICE_MEM_WINDOW (MW-01)")
	case typ == verbs.MWType2 && caps&(verbs.DeviceMemWindow2A|verbs.DeviceMemWindow2B) == 0:
		return nil, verr.New(verb, syscall.EOPNOTSUPP, "the device reports no type 2 memory windows (MW-01)")
	case d.mrs.mwLive >= d.attr.MaxMW:
		return nil, verr.Errorf(verb, syscall.ENOMEM, "the device already has max_mw=%d memory windows (MW-01)", d.attr.MaxMW)
	}
	mw := &MW{pd: pd, typ: typ}
	if err := d.mrs.insertMW(verb, mw); err != nil {
		return nil, err
	}
	pd.children[childMW]++
	if e.tracing() {
		e.callLocked(e.nameLocked(d, "mw", mw), "alloc_mw", e.nameOf(pd), fmt.Sprintf("%v rkey %#x", typ, mw.rkey), nil)
	} else if d.fabric.d.Checking() {
		e.nameLocked(d, "mw", mw) // the sanitizer names it (Config.Check)
	}
	return mw, nil
}

// Dealloc deallocates the window (ibv_dealloc_mw). A bound window is
// unbound first, so its rkey stops working at once and its MR may then be
// deregistered (MW-03). EINVAL for a nil or deallocated window.
func (mw *MW) Dealloc() (err error) {
	const verb = "ibv_dealloc_mw"
	if mw == nil {
		return verr.New(verb, syscall.EINVAL, "nil MW")
	}
	d := mw.pd.ctx.dev
	d.fabric.d.Enter(domain.Op{})
	defer d.fabric.d.Leave(domain.Op{}, nil)
	if e := d.fabric.eng; e.tracing() {
		defer func() { e.callLocked(e.nameOf(mw), "dealloc_mw", "", "", err) }()
	}
	if mw.dead {
		return verr.New(verb, syscall.EINVAL, "the MW has been deallocated")
	}
	if f := d.fabric; f.d.Checking() {
		f.d.Note(&domain.Note{Kind: domain.NoteDeregistering, Obj: mw, RKey: mw.key})
		defer f.noteGoneLocked(mw)
	}
	mw.unbindLocked()
	if d.mrs.mws[mw.idx] == mw {
		delete(d.mrs.mws, mw.idx)
		d.mrs.mwLive--
	}
	mw.pd.releaseLocked(childMW)
	mw.dead = true
	return nil
}

// PD returns the protection domain of the window (ibv_mw.pd).
func (mw *MW) PD() *PD {
	if mw == nil {
		return nil
	}
	return mw.pd
}

// Type returns the window's type (ibv_mw.type).
func (mw *MW) Type() verbs.MWType {
	if mw == nil {
		return 0
	}
	return mw.typ
}

// RKey returns ibv_mw.rkey, the key peers put in RDMA and atomic requests.
// Its top 24 bits name the window and never change; the low byte changes
// with binds. QP.BindMW sets it as the verb returns, to the key of the
// pending bind (MW-04); a BIND_MW work request of a type 2 window sets it
// when the bind executes, to the window's index with the low byte of the
// key the request names: the rest of that key is ignored (MW-05).
func (mw *MW) RKey() uint32 {
	if mw == nil {
		return 0
	}
	mw.pd.ctx.dev.fabric.d.Enter(domain.Op{})
	defer mw.pd.ctx.dev.fabric.d.Leave(domain.Op{}, nil)
	return mw.rkey
}

// Bound reports whether the window currently grants access to an MR.
func (mw *MW) Bound() bool {
	if mw == nil {
		return false
	}
	mw.pd.ctx.dev.fabric.d.Enter(domain.Op{})
	defer mw.pd.ctx.dev.fabric.d.Leave(domain.Op{}, nil)
	return mw.bound && mw.mr != nil
}

// insertMW gives mw an index unused by MRs and windows, and its key.
func (t *mrTable) insertMW(verb string, mw *MW) error {
	for range maxMRIndex + 1 {
		idx := t.next
		t.next = (t.next + 1) & maxMRIndex
		if t.byIndex[idx] != nil || t.mws[idx] != nil || idx == 0 {
			continue
		}
		t.serial++
		mw.idx = idx
		mw.rkey = idx<<8 | t.serial&0xff
		mw.key = mw.rkey
		t.mws[idx] = mw
		t.mwLive++
		return nil
	}
	return verr.New(verb, syscall.ENOMEM, "no key index is free")
}

// unbindLocked detaches the window from its MR, if any (MW-03, MW-07).
//
// Precondition: the domain lock is held.
func (mw *MW) unbindLocked() {
	if mw.mr != nil {
		mw.mr.unbindLocked()
	}
	mw.bound, mw.mr, mw.qp = false, nil, nil
	mw.addr, mw.length, mw.access = 0, 0, 0
}

// incRKey is ibv_inc_rkey: the same index with the next tag.
func incRKey(k uint32) uint32 { return k&^0xff | (k+1)&0xff }

// mwAccessAllowed are the flags a window may be bound with (MW-05).
// LOCAL_WRITE is accepted and grants nothing (a window is reached only
// through its rkey), as rxe (RXE_ACCESS_SUPPORTED_MW) and mlx5 accept it;
// rdma-core's own tests bind windows with LOCAL_WRITE|REMOTE_WRITE.
const mwAccessAllowed = verbs.AccessLocalWrite | verbs.AccessRemoteRead | verbs.AccessRemoteWrite | verbs.AccessRemoteAtomic | verbs.AccessZeroBased

// BindKeyLocked implements qp.Host for QP.BindMW.
func (h host) BindKeyLocked(w any) (uint32, error) {
	const verb = "ibv_bind_mw"
	mw, ok := w.(*MW)
	switch {
	case !ok || mw == nil:
		return 0, verr.New(verb, syscall.EINVAL, "no memory window given")
	case mw.pd.ctx.dev != h.d:
		return 0, verr.New(verb, syscall.EINVAL, "the memory window belongs to another device")
	case mw.dead:
		return 0, verr.New(verb, syscall.EINVAL, "the MW has been deallocated")
	case mw.typ != verbs.MWType1:
		return 0, verr.Errorf(verb, syscall.EINVAL, "ibv_bind_mw binds type 1 windows; a %v window is bound with a BIND_MW work request (MW-04)", mw.typ)
	}
	mw.rkey = incRKey(mw.rkey)
	return mw.rkey, nil
}

// BindLocked implements qp.Host: it runs the checks of a bind as it
// executes and binds, or returns MWBindErr with nothing changed (MW-04,
// MW-05).
func (h host) BindLocked(q *qp.QP, wr *verbs.SendWR) verbs.WCStatus {
	mw, ok := wr.MW.(*MW)
	if !ok || mw == nil || mw.pd.ctx.dev != h.d || mw.dead {
		return verbs.WCMWBindErr
	}
	if why := h.bindFaultLocked(q, mw, wr); why != "" {
		if h.eng().tracing() {
			h.eng().f.d.Emit(q, trace.Record{Kind: trace.KindCompletion, Name: "bind_mw refused", Why: why})
		}
		return verbs.WCMWBindErr
	}
	b := wr.Bind
	mw.unbindLocked()
	// Only the low byte of the new rkey is the key; the upper 24 bits stay
	// the window's index, whatever the request says (MW-05).
	mw.key = mw.idx<<8 | wr.RKey&0xff
	mw.bound = b.Length > 0
	if mw.typ == verbs.MWType2 {
		mw.rkey = mw.key
		mw.qp = q
	}
	if b.Length > 0 {
		mr := mrOf(b.MR)
		mr.binds++
		mw.mr, mw.addr, mw.length, mw.access = mr, b.Addr, b.Length, b.Access
	}
	return verbs.WCSuccess
}

// bindFaultLocked says why wr may not bind mw on q, or returns "".
func (h host) bindFaultLocked(q *qp.QP, mw *MW, wr *verbs.SendWR) string {
	b := wr.Bind
	switch {
	case mw.pd != q.PD():
		return "the window belongs to another PD than the QP (MW-05)"
	case b.Access&^mwAccessAllowed != 0:
		return fmt.Sprintf("access %v holds rights a window cannot grant (MW-05)", b.Access)
	case b.Length == 0 && mw.typ == verbs.MWType2:
		return "a type 2 window cannot be bound with length 0 (MW-05)"
	case b.Length == 0:
		return "" // a type 1 unbind
	case mw.typ == verbs.MWType1 && b.Access&verbs.AccessZeroBased != 0 && h.d.fabric.consultOn(verbs.ReadingMWType1NoZeroBased):
		return "a type 1 window cannot be ZERO_BASED under this profile (MW-05, IBTA o10-36.2.2)"
	case mw.typ == verbs.MWType2 && mw.bound:
		return "the type 2 window is already bound; invalidate it first (MW-05)"
	}
	mr := mrOf(b.MR)
	ok := mr != nil
	switch {
	case !ok || mr == nil || mr.pd.ctx.dev != h.d || mr.dead || mr.invalid:
		return "no valid MR given (MW-05)"
	case mr.pd != q.PD():
		return "the MR belongs to another PD than the QP (MW-05)"
	case mr.access&verbs.AccessMWBind == 0:
		return "the MR was not registered with IBV_ACCESS_MW_BIND (MW-05)"
	case b.Access&(verbs.AccessRemoteWrite|verbs.AccessRemoteAtomic) != 0 && mr.access&verbs.AccessLocalWrite == 0:
		return "remote write or atomic rights need an MR with LOCAL_WRITE (MW-05)"
	case b.Addr < mr.iova || b.Addr-mr.iova > mr.length || b.Length > mr.length-(b.Addr-mr.iova):
		return "the window leaves the MR (MW-05)"
	}
	return ""
}

// lookupMW resolves rkey as a window's key for responder q in pd (MW-06):
// the window must be bound with the key, be of pd, for type 2 have been
// bound by q, grant need and cover [addr, addr+length), counted from the
// window's address or, with ZERO_BASED, from 0.
func (t *mrTable) lookupMW(q *qp.QP, pd *PD, rkey uint32, addr, length uint64, need verbs.AccessFlags) ([]byte, protFault) {
	m, f := t.lookupMWMem(q, pd, rkey, addr, length, need)
	return m.B, f
}

// lookupMWMem is lookupMW for a window over any MR's memory (lookupMem).
func (t *mrTable) lookupMWMem(q *qp.QP, pd *PD, rkey uint32, addr, length uint64, need verbs.AccessFlags) (qp.Mem, protFault) {
	mw := t.mws[rkey>>8]
	switch {
	case mw == nil || !mw.bound || mw.mr == nil || mw.key != rkey || mw.mr.invalid:
		return qp.Mem{}, faultKey
	case mw.pd != pd || (mw.typ == verbs.MWType2 && mw.qp != q):
		return qp.Mem{}, faultPD
	case mw.access&need != need:
		return qp.Mem{}, faultAccess
	}
	off := addr
	if mw.access&verbs.AccessZeroBased == 0 {
		if addr < mw.addr {
			return qp.Mem{}, faultRange
		}
		off = addr - mw.addr
	}
	if off >= mw.length || length > mw.length-off {
		return qp.Mem{}, faultRange
	}
	return mw.mr.mem(mw.addr-mw.mr.iova+off, length), faultNone
}

// invalidateMW unbinds the type 2 window whose key is rkey in pd
// (LOCAL_INV, SEND_WITH_INV: MW-07), reporting whether there was one.
func (t *mrTable) invalidateMW(pd *PD, rkey uint32) bool {
	mw := t.mws[rkey>>8]
	if mw == nil || mw.typ != verbs.MWType2 || !mw.bound || mw.key != rkey || mw.pd != pd {
		return false
	}
	mw.unbindLocked()
	return true
}
