package conformance

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/verbsim/verbsim/verbs"
)

// Cases of the memory-window rules (MW-01..MW-07). They run on a connected
// RC pair of the transport cases (newWire): side B allocates the windows,
// binds them over an MR of its own registered with LOCAL_WRITE|MW_BIND
// only (so every remote right a check sees comes from the window), and
// side A accesses them through their rkeys. A device without memory
// windows (ibv_alloc_mw fails with EOPNOTSUPP) is not checked.

// mwLen is the size of B's MR that windows are bound to; mwOff and mwWin
// place the windows the cases bind inside it.
const (
	mwLen = 4096
	mwOff = 256
	mwWin = 512
)

// mwWorld is a connected RC pair with B's bindable MR.
type mwWorld struct {
	w    *wire
	a, b *end
	mr   verbs.MR
	buf  []byte
}

// mwSetup returns the world, or nil after logging that the device has no
// memory windows.
func mwSetup(t *tester, e *env) *mwWorld {
	t.Helper()
	w := newWire(t, e)
	if !hasMW(w.b.pd) {
		t.Logf("not checked: the device has no memory windows (ibv_alloc_mw: EOPNOTSUPP)")
		return nil
	}
	m := &mwWorld{w: w, buf: make([]byte, mwLen)}
	m.a, m.b = w.connect(verbs.QPTypeRC, w.opts())
	m.mr = e.mrReg(w.b.pd, m.buf, accessLocalWrite|accessMWBind)
	return m
}

// hasMW reports whether pd's device has memory windows: ibv_alloc_mw of a
// type 1 window does not fail with EOPNOTSUPP. The window it made is
// deallocated.
func hasMW(pd verbs.PD) bool {
	mw, err := pd.AllocMW(verbs.MWType1)
	if errors.Is(err, syscall.EOPNOTSUPP) {
		return false
	}
	if err == nil && mw != nil {
		_ = mw.Dealloc()
	}
	return true
}

// alloc allocates a window of type typ on B's PD.
func (m *mwWorld) alloc(typ uint32) verbs.MW {
	m.w.t.Helper()
	mw, err := m.w.b.pd.AllocMW(verbs.MWType(typ))
	if err != nil || mw == nil {
		m.w.t.Fatalf("ibv_alloc_mw(type %d): %v, %v", typ, mw, err)
	}
	return mw
}

// info is a bind of [mwOff, mwOff+mwWin) of B's MR with access acc.
func (m *mwWorld) info(acc verbs.AccessFlags) verbs.MWBindInfo {
	return verbs.MWBindInfo{MR: m.mr, Addr: m.mr.Addr() + mwOff, Length: mwWin, Access: acc}
}

// bind1 binds a type 1 window with ibv_bind_mw on x and returns its
// completion.
func (m *mwWorld) bind1(x *end, mw verbs.MW, id uint64, info verbs.MWBindInfo) verbs.WC {
	m.w.t.Helper()
	if err := x.q.BindMW(mw, id, verbs.SendSignaled, info); err != nil {
		m.w.t.Fatalf("ibv_bind_mw: %v", err)
	}
	return m.w.await(x.scq, 1, "the bind")[0]
}

// bind2 binds a type 2 window with a BIND_MW work request on x naming the
// key rkey, and returns its completion.
func (m *mwWorld) bind2(x *end, mw verbs.MW, id uint64, rkey uint32, info verbs.MWBindInfo) verbs.WC {
	m.w.t.Helper()
	x.post("BIND_MW", verbs.SendWR{WRID: id, Opcode: verbs.WRBindMW, Flags: verbs.SendSignaled, MW: mw, RKey: rkey, Bind: info})
	return m.w.await(x.scq, 1, "the BIND_MW")[0]
}

// wantBound checks that c is the successful completion of bind id.
func (m *mwWorld) wantBound(what string, x *end, c verbs.WC, id uint64) bool {
	m.w.t.Helper()
	if !x.want(what, c, id, verbs.WCSuccess) {
		return false
	}
	if c.Opcode != verbs.WCBindMW {
		m.w.t.Errorf("%s: opcode %v, want IBV_WC_BIND_MW (WC-04)", what, c.Opcode)
	}
	return true
}

// access makes A run op (8 bytes) at addr with rkey and returns the status.
func (m *mwWorld) access(id uint64, op verbs.WROpcode, addr uint64, rkey uint32) verbs.WCStatus {
	m.w.t.Helper()
	r := m.a.remoteReq(id, op, addr, rkey)
	if op == verbs.WRAtomicFetchAndAdd {
		r.CompareAdd = 1
	}
	m.a.post(fmt.Sprintf("%v through a window", op), r)
	c := m.w.await(m.a.scq, 1, fmt.Sprintf("%v through a window", op))[0]
	if c.WRID != id {
		m.w.t.Errorf("%v through a window: wr_id %d, want %d", op, c.WRID, id)
	}
	return c.Status
}

// incRKey is ibv_inc_rkey: the same index with the next tag.
func incRKey(k uint32) uint32 { return k&^0xff | (k+1)&0xff }

// mwCases are the cases of the MW family in mw.go.
var mwCases = []Case{
	{"MW-01", "ibv_alloc_mw takes types 1 and 2 and gives each window its own rkey; other types are EINVAL", allocMWTypes},
	{"MW-02", "a PD with memory windows cannot be deallocated (PD-02)", pdWithMWNotDeallocated},
	{"MW-03", "a bound window holds its MR (MR-06) until it is deallocated, which unbinds it", boundWindowHoldsMR},
	{"MW-04", "type 1 binds with ibv_bind_mw, type 2 with a BIND_MW request; both complete as IBV_WC_BIND_MW", bindTypes},
	{"MW-05", "a bind that fails its checks completes with MW_BIND_ERR and leaves the window unbound", bindFailure},
	{"MW-06", "remote access through a window's rkey is checked against the window's range, rights, PD and (type 2) QP", windowRemoteAccess},
	{"MW-07", "LOCAL_INV and SEND_WITH_INV unbind a type 2 window; a type 1 window cannot be invalidated", invalidateWindow},
}

func allocMWTypes(t *tester, e *env) {
	m := mwSetup(t, e)
	if m == nil {
		return
	}
	for _, typ := range []verbs.MWType{0, 3, 0x100} {
		mw, err := m.w.b.pd.AllocMW(typ)
		e.WantErrno(fmt.Sprintf("ibv_alloc_mw(type %d)", typ), err, syscall.EINVAL)
		if mw != nil {
			t.Errorf("ibv_alloc_mw(type %d) returned a window with its error", typ)
		}
	}
	m1, m2 := m.alloc(1), m.alloc(2)
	if m1.RKey() == m2.RKey() || m1.RKey() == m.mr.RKey() || m2.RKey() == m.mr.RKey() {
		t.Errorf("rkeys: type 1 %#x, type 2 %#x, MR %#x: each window needs its own", m1.RKey(), m2.RKey(), m.mr.RKey())
	}
	// An unbound window grants nothing.
	if st := m.access(1, verbs.WRRDMAWrite, m.mr.Addr()+mwOff, m1.RKey()); st != verbs.WCRemAccessErr {
		t.Errorf("WRITE through an unbound type 1 window: %v, want REM_ACCESS_ERR", st)
	}
	e.WantOK("ibv_dealloc_mw(type 1)", m1.Dealloc())
	e.WantOK("ibv_dealloc_mw(type 2)", m2.Dealloc())
	e.WantErrno("ibv_dealloc_mw twice", m1.Dealloc(), syscall.EINVAL)
}

func pdWithMWNotDeallocated(t *tester, e *env) {
	pd := e.pdAlloc()
	if !hasMW(pd) {
		t.Logf("not checked: the device has no memory windows (ibv_alloc_mw: EOPNOTSUPP)")
		return
	}
	for _, typ := range []verbs.MWType{1, 2} {
		mw, err := pd.AllocMW(typ)
		if err != nil {
			t.Fatalf("ibv_alloc_mw(type %d): %v", typ, err)
		}
		e.WantErrno(fmt.Sprintf("ibv_dealloc_pd with a type %d window", typ), pd.Dealloc(), syscall.EBUSY)
		e.WantOK("ibv_dealloc_mw", mw.Dealloc())
	}
	e.WantOK("ibv_dealloc_pd once the windows are gone", pd.Dealloc())
}

func boundWindowHoldsMR(t *tester, e *env) {
	m := mwSetup(t, e)
	if m == nil {
		return
	}
	mw := m.alloc(1)
	m.wantBound("type 1 bind", m.b, m.bind1(m.b, mw, 1, m.info(verbs.AccessRemoteWrite)), 1)
	want := syscall.EBUSY
	if e.Profile.DeregBoundEINVAL {
		want = syscall.EINVAL
	}
	e.WantErrno("ibv_dereg_mr with a bound window (MR-06)", m.mr.Dereg(), want)
	rkey := mw.RKey()
	e.WantOK("ibv_dealloc_mw of a bound window", mw.Dealloc())
	if st := m.access(2, verbs.WRRDMAWrite, m.mr.Addr()+mwOff, rkey); st != verbs.WCRemAccessErr {
		t.Errorf("WRITE through a deallocated window: %v, want REM_ACCESS_ERR", st)
	}
	e.WantOK("ibv_dereg_mr once the window is deallocated", m.mr.Dereg())
}

func bindTypes(t *tester, e *env) {
	m := mwSetup(t, e)
	if m == nil {
		return
	}
	m1, m2 := m.alloc(1), m.alloc(2)
	b := m.b.q
	e.WantErrno("ibv_bind_mw of a type 2 window", b.BindMW(m2, 9, verbs.SendSignaled, m.info(verbs.AccessRemoteRead)), syscall.EINVAL)
	old := m1.RKey()
	// LOCAL_WRITE among the rights is accepted and grants nothing
	// (MW-05), as rdma-core's tests bind.
	if err := b.BindMW(m1, 1, verbs.SendSignaled, m.info(verbs.AccessLocalWrite|verbs.AccessRemoteWrite)); err != nil {
		t.Fatalf("ibv_bind_mw: %v", err)
	}
	if m1.RKey() == old || m1.RKey()>>8 != old>>8 {
		t.Errorf("rkey after ibv_bind_mw %#x, was %#x: want the same index with a new tag", m1.RKey(), old)
	}
	m.wantBound("type 1 bind", m.b, m.w.await(m.b.scq, 1, "the bind")[0], 1)
	key := incRKey(m2.RKey())
	m.wantBound("type 2 BIND_MW", m.b, m.bind2(m.b, m2, 2, key, m.info(verbs.AccessRemoteRead)), 2)
	if m2.RKey() != key {
		t.Errorf("type 2 rkey %#x after the bind, want the key the request named, %#x", m2.RKey(), key)
	}
	copy(m.buf[mwOff:], "through!")
	if st := m.access(3, verbs.WRRDMAWrite, m.mr.Addr()+mwOff+8, m1.RKey()); st != verbs.WCSuccess {
		t.Errorf("WRITE through the type 1 window: %v", st)
	}
	if st := m.access(4, verbs.WRRDMARead, m.mr.Addr()+mwOff, key); st != verbs.WCSuccess {
		t.Errorf("READ through the type 2 window: %v", st)
	} else if string(m.w.a.buf[:8]) != "through!" {
		t.Errorf("READ through the type 2 window brought %q", m.w.a.buf[:8])
	}
	// A type 1 bind of length 0 unbinds.
	m.wantBound("type 1 unbind", m.b, m.bind1(m.b, m1, 5, verbs.MWBindInfo{}), 5)
	if st := m.access(6, verbs.WRRDMAWrite, m.mr.Addr()+mwOff, m1.RKey()); st != verbs.WCRemAccessErr {
		t.Errorf("WRITE through an unbound window: %v, want REM_ACCESS_ERR", st)
	}
}

func bindFailure(t *tester, e *env) {
	bad := []struct {
		name string
		typ  uint32
		mk   func(m *mwWorld, mw verbs.MW) (uint32, verbs.MWBindInfo)
	}{
		{"an MR without MW_BIND", 2, func(m *mwWorld, mw verbs.MW) (uint32, verbs.MWBindInfo) {
			return incRKey(mw.RKey()), verbs.MWBindInfo{MR: m.w.b.mr, Addr: m.w.b.addr(0), Length: 64, Access: verbs.AccessRemoteRead}
		}},
		{"a range past the MR", 2, func(m *mwWorld, mw verbs.MW) (uint32, verbs.MWBindInfo) {
			i := m.info(verbs.AccessRemoteRead)
			i.Addr = m.mr.Addr() + mwLen - 8
			return incRKey(mw.RKey()), i
		}},
		{"a range before the MR", 1, func(m *mwWorld, mw verbs.MW) (uint32, verbs.MWBindInfo) {
			i := m.info(verbs.AccessRemoteRead)
			i.Addr = m.mr.Addr() - 1
			return 0, i
		}},
		{"MW_BIND among the window's rights", 2, func(m *mwWorld, mw verbs.MW) (uint32, verbs.MWBindInfo) {
			return incRKey(mw.RKey()), m.info(verbs.AccessMWBind)
		}},
		{"a type 2 bind of length 0", 2, func(m *mwWorld, mw verbs.MW) (uint32, verbs.MWBindInfo) {
			return incRKey(mw.RKey()), verbs.MWBindInfo{MR: m.mr, Addr: m.mr.Addr(), Access: verbs.AccessRemoteRead}
		}},
		{"a window of another PD", 2, nil},
	}
	for _, c := range bad {
		m := mwSetup(t, e)
		if m == nil {
			return
		}
		var mw verbs.MW
		var key uint32
		var info verbs.MWBindInfo
		if c.mk == nil {
			// The window is of a second PD of B's context.
			pd, err := m.w.b.ctx.AllocPD()
			if err != nil {
				t.Fatalf("a second PD on side B: %v", err)
			}
			w, err := pd.AllocMW(verbs.MWType(c.typ))
			if err != nil {
				t.Fatalf("ibv_alloc_mw on a second PD: %v", err)
			}
			mw, key, info = w, incRKey(w.RKey()), m.info(verbs.AccessRemoteRead)
		} else {
			mw = m.alloc(c.typ)
			key, info = c.mk(m, mw)
		}
		what := fmt.Sprintf("bind of a type %d window with %s", c.typ, c.name)
		var got verbs.WC
		if c.typ == 1 {
			got = m.bind1(m.b, mw, 7, info)
		} else {
			got = m.bind2(m.b, mw, 7, key, info)
		}
		m.b.want(what, got, 7, verbs.WCMWBindErr)
		m.b.wantState(what, verbs.QPStateErr)
		m.a, m.b = m.w.connect(verbs.QPTypeRC, m.w.opts()) // the failed bind ended the pair
		if st := m.access(8, verbs.WRRDMARead, info.Addr, mw.RKey()); st != verbs.WCRemAccessErr {
			t.Errorf("%s: READ through the window: %v, want REM_ACCESS_ERR", what, st)
		}
	}
	// ZERO_BASED on a type 1 window: [IMPL].
	m := mwSetup(t, e)
	if m == nil {
		return
	}
	mw := m.alloc(1)
	got := m.bind1(m.b, mw, 1, m.info(verbs.AccessRemoteRead|verbs.AccessZeroBased))
	if e.Profile.MWType1NoZeroBased {
		m.b.want("a ZERO_BASED type 1 bind (refused under this reading)", got, 1, verbs.WCMWBindErr)
		return
	}
	m.wantBound("a ZERO_BASED type 1 bind", m.b, got, 1)
	copy(m.buf[mwOff+16:], "zerobase")
	if st := m.access(2, verbs.WRRDMARead, 16, mw.RKey()); st != verbs.WCSuccess || string(m.w.a.buf[:8]) != "zerobase" {
		t.Errorf("READ at offset 16 of a ZERO_BASED window: %v, %q", st, m.w.a.buf[:8])
	}
}

func windowRemoteAccess(t *tester, e *env) {
	for _, typ := range []uint32{1, 2} {
		m := mwSetup(t, e)
		if m == nil {
			return
		}
		mw := m.alloc(typ)
		info := m.info(verbs.AccessRemoteWrite | verbs.AccessRemoteAtomic)
		if typ == 1 {
			m.wantBound("type 1 bind", m.b, m.bind1(m.b, mw, 1, info), 1)
		} else {
			m.wantBound("type 2 bind", m.b, m.bind2(m.b, mw, 1, incRKey(mw.RKey()), info), 1)
		}
		base, k := m.mr.Addr()+mwOff, mw.RKey()
		if st := m.access(2, verbs.WRRDMAWrite, base+mwWin-8, k); st != verbs.WCSuccess {
			t.Errorf("type %d: WRITE of the window's last 8 bytes: %v", typ, st)
		}
		if st := m.access(3, verbs.WRAtomicFetchAndAdd, base+8, k); st != verbs.WCSuccess {
			t.Errorf("type %d: FETCH_ADD inside the window: %v", typ, st)
		}
		if typ == 2 {
			// Type 2 windows answer only on the QP that bound them.
			a2, _ := m.w.connect(verbs.QPTypeRC, m.w.opts())
			a2.post("WRITE on another QP", a2.remoteReq(4, verbs.WRRDMAWrite, base, k))
			a2.want(fmt.Sprintf("type %d: WRITE through another QP of the PD", typ), m.w.await(a2.scq, 1, "other QP")[0], 4, verbs.WCRemAccessErr)
		}
		// Errors end the connection: one per pair.
		for i, bad := range []struct {
			name string
			op   verbs.WROpcode
			addr uint64
		}{
			{"WRITE one byte past the window", verbs.WRRDMAWrite, base + mwWin - 7},
			{"WRITE just before the window", verbs.WRRDMAWrite, base - 8},
			{"READ without REMOTE_READ", verbs.WRRDMARead, base},
		} {
			if i > 0 {
				m.a, m.b = m.w.connect(verbs.QPTypeRC, m.w.opts())
				// The window stays bound (type 1: any QP of the PD).
				if typ == 2 {
					break
				}
			}
			if st := m.access(uint64(10+i), bad.op, bad.addr, k); st != verbs.WCRemAccessErr {
				t.Errorf("type %d: %s: %v, want REM_ACCESS_ERR", typ, bad.name, st)
			}
		}
		_ = mw.Dealloc()
	}
}

func invalidateWindow(t *tester, e *env) {
	for _, how := range []verbs.WROpcode{verbs.WRLocalInv, verbs.WRSendWithInv} {
		m := mwSetup(t, e)
		if m == nil {
			return
		}
		mw := m.alloc(2)
		m.wantBound("type 2 bind", m.b, m.bind2(m.b, mw, 1, incRKey(mw.RKey()), m.info(verbs.AccessRemoteWrite)), 1)
		k := mw.RKey()
		if how == verbs.WRLocalInv {
			m.b.post("LOCAL_INV", verbs.SendWR{WRID: 2, Opcode: verbs.WRLocalInv, Flags: verbs.SendSignaled, Imm: k})
			c := m.w.await(m.b.scq, 1, "LOCAL_INV")[0]
			if m.b.want("LOCAL_INV of the window", c, 2, verbs.WCSuccess) && c.Opcode != verbs.WCLocalInv {
				t.Errorf("LOCAL_INV completed as %v, want IBV_WC_LOCAL_INV (WC-04)", c.Opcode)
			}
		} else {
			m.b.recvAt("a receive", 3, 0, 64)
			r := sendWR(2, verbs.WRSendWithInv, m.a.s.sge(0, 8))
			r.Imm = k
			m.a.post("SEND_WITH_INV", r)
			m.a.want("SEND_WITH_INV of the window", m.w.await(m.a.scq, 1, "SEND_WITH_INV")[0], 2, verbs.WCSuccess)
			c := m.w.await(m.b.rcq, 1, "SEND_WITH_INV: responder")[0]
			if m.b.want("SEND_WITH_INV: responder", c, 3, verbs.WCSuccess) && (c.WCFlags&verbs.WCWithInv == 0 || c.InvalidatedRkey() != k) {
				t.Errorf("SEND_WITH_INV: flags %v invalidated_rkey %#x, want WITH_INV and %#x", c.WCFlags, c.InvalidatedRkey(), k)
			}
		}
		if st := m.access(4, verbs.WRRDMAWrite, m.mr.Addr()+mwOff, k); st != verbs.WCRemAccessErr {
			t.Errorf("WRITE after %v of the window: %v, want REM_ACCESS_ERR", how, st)
		}
		e.WantOK(fmt.Sprintf("ibv_dereg_mr after %v unbound the window", how), m.mr.Dereg())
	}
	m := mwSetup(t, e)
	if m == nil {
		return
	}
	mw := m.alloc(1)
	m.wantBound("type 1 bind", m.b, m.bind1(m.b, mw, 1, m.info(verbs.AccessRemoteWrite)), 1)
	m.b.post("LOCAL_INV of a type 1 window", verbs.SendWR{WRID: 2, Opcode: verbs.WRLocalInv, Flags: verbs.SendSignaled, Imm: mw.RKey()})
	m.b.want("LOCAL_INV of a type 1 window", m.w.await(m.b.scq, 1, "LOCAL_INV")[0], 2, verbs.WCLocQPOpErr)

	// A peer's SEND_WITH_INV of a type 1 window's key, or of a type 2
	// window's key once invalidated, fails as XFER-29 says for a key
	// that cannot be invalidated, by the profile's reading.
	for _, stale := range []bool{false, true} {
		m := mwSetup(t, e)
		if m == nil {
			return
		}
		var k uint32
		what := "SEND_WITH_INV of a type 1 window"
		if stale {
			what = "SEND_WITH_INV of an invalidated type 2 window"
			mw := m.alloc(2)
			m.wantBound("type 2 bind", m.b, m.bind2(m.b, mw, 1, incRKey(mw.RKey()), m.info(verbs.AccessRemoteWrite)), 1)
			k = mw.RKey()
			m.b.post("LOCAL_INV", verbs.SendWR{WRID: 2, Opcode: verbs.WRLocalInv, Flags: verbs.SendSignaled, Imm: k})
			m.b.want("LOCAL_INV of the window", m.w.await(m.b.scq, 1, "LOCAL_INV")[0], 2, verbs.WCSuccess)
		} else {
			mw := m.alloc(1)
			m.wantBound("type 1 bind", m.b, m.bind1(m.b, mw, 1, m.info(verbs.AccessRemoteWrite)), 1)
			k = mw.RKey()
		}
		m.b.recvAt("a receive", 3, 0, 64)
		r := sendWR(4, verbs.WRSendWithInv, m.a.s.sge(0, 8))
		r.Imm = k
		m.a.post(what, r)
		sendInvFails(m.w, m.a, m.b, 4, 3, what)
	}
}
