package conformance

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/verbsim/verbsim/verbs"
)

// Cases of ibv_rereg_mr (MR-12 to MR-17), through the optional verbs.MRReregisterer
// capability of an MR; without it they log and end.

// The values of enum ibv_rereg_mr_flags and enum ibv_rereg_mr_err_code
// (verbs.h), spelled out because MR-12 and MR-14 are about these numbers.
const (
	reregTranslation uint32 = 1
	reregPD          uint32 = 2
	reregAccess      uint32 = 4

	reregErrInput = -1
	reregErrCmd   = -4
)

// reregOf returns mr's ibv_rereg_mr, or nil after a log line when the MR
// does not offer it.
func (e *env) reregOf(mr verbs.MR) verbs.MRReregisterer {
	e.T.Helper()
	if r, ok := mr.(verbs.MRReregisterer); ok {
		return r
	}
	e.T.Logf("the MR offers no ibv_rereg_mr (verbs.MRReregisterer); nothing to check")
	return nil
}

// rereg calls ibv_rereg_mr and checks the return value and errno: want is
// 0 or an ibv_rereg_mr_err_code, errno the errno of a failure. It reports
// false when the MR turned out not to support the verb after all.
func (e *env) rereg(what string, r verbs.MRReregisterer, flags uint32, pd verbs.PD, buf []byte, access uint32, want int, errno syscall.Errno) bool {
	e.T.Helper()
	err := r.Rereg(verbs.ReregFlags(flags), pd, buf, verbs.AccessFlags(access))
	code := int(verbs.ReregFailureOf(err))
	// errors.ErrUnsupported itself, not EOPNOTSUPP, which errors.Is also
	// matches to it.
	if err == errors.ErrUnsupported {
		e.T.Logf("%s: ibv_rereg_mr is not supported: %v", what, err)
		return false
	}
	call := fmt.Sprintf("%s: ibv_rereg_mr(flags=%#x, access=%#x)", what, flags, access)
	switch {
	case code != want:
		e.T.Errorf("%s returned %d (error %v), want %d", call, code, err, want)
	case want == 0 && err != nil:
		e.T.Errorf("%s returned 0 with error %v", call, err)
	case want != 0:
		e.WantErrno(call, err, errno)
	}
	return true
}

// reregMR registers a fresh 64-byte buffer in pd with access and returns
// the MR and its ibv_rereg_mr, or nil without the capability.
func (e *env) reregMR(pd verbs.PD, access uint32) (verbs.MR, verbs.MRReregisterer) {
	e.T.Helper()
	mr := e.mrReg(pd, make([]byte, 64), access)
	return mr, e.reregOf(mr)
}

// mrReregCases are the cases of the MR family in mr_rereg.go.
var mrReregCases = []Case{
	{"MR-12", "ibv_rereg_mr: bad flags and arguments are EINVAL, ERR_INPUT (MR valid) or, for flags 0, ERR_CMD", reregBadArgs},
	{"MR-13", "ibv_rereg_mr: CHANGE_PD moves the MR between PDs, CHANGE_TRANSLATION gives it the new buffer, CHANGE_ACCESS is checked as at registration", reregChanges},
	{"MR-14", "[IMPL] after ERR_CMD the MR is unusable (default) or as it was (rxe); ibv_dereg_mr works either way", reregAfterErrCmd},
	{"MR-15", "[IMPL] keys after ibv_rereg_mr: new (default) or kept (rxe); the new rkey works", reregKeys},
	{"MR-16", "[IMPL] CHANGE_TRANSLATION: WRITEs land in the new buffer (default); EOPNOTSUPP, MR as it was (rxe)", reregChangeTranslation},
	{"MR-17", "after ibv_rereg_mr, requests are checked against the new access and PD, posted before it or not", reregChecksNewAccess},
}

func reregBadArgs(t *tester, e *env) {
	pd, pd2 := e.pdAlloc(), e.pdAlloc()
	inputs := []struct {
		name   string
		flags  uint32
		pd     verbs.PD
		buf    []byte
		access uint32
	}{
		{"an unknown flag bit", 1<<3 | reregAccess, nil, nil, accessLocalWrite},
		{"every bit", ^uint32(0), pd2, make([]byte, 8), accessLocalWrite},
		{"CHANGE_TRANSLATION with a NULL buffer", reregTranslation, nil, nil, 0},
		{"CHANGE_TRANSLATION with length 0", reregTranslation, nil, []byte{}, 0},
		{"access without CHANGE_ACCESS", reregPD, pd2, nil, accessLocalWrite},
		{"access without any flag", 0, nil, nil, accessLocalWrite},
	}
	for _, in := range inputs {
		mr, r := e.reregMR(pd, accessLocalWrite|accessRemoteWrite)
		if r == nil {
			return
		}
		l, rk, addr, n := mr.LKey(), mr.RKey(), mr.Addr(), mr.Length()
		if !e.rereg(in.name, r, in.flags, in.pd, in.buf, in.access, reregErrInput, syscall.EINVAL) {
			return
		}
		if mr.LKey() != l || mr.RKey() != rk || mr.Addr() != addr || mr.Length() != n {
			t.Errorf("%s: ERR_INPUT changed the MR's fields", in.name)
		}
		// The old MR is valid: it can be re-registered.
		e.rereg(in.name+", then a good call", r, reregAccess, nil, nil, accessLocalWrite, 0, 0)
	}
	mr, r := e.reregMR(pd, accessLocalWrite)
	if r == nil {
		return
	}
	e.rereg("flags 0", r, 0, nil, nil, 0, reregErrCmd, syscall.EINVAL)
	e.WantOK("ibv_dereg_mr after a command error", mr.Dereg())
}

func reregChanges(t *tester, e *env) {
	old, nu := e.pdAlloc(), e.pdAlloc()
	mr, r := e.reregMR(old, accessLocalWrite)
	if r == nil {
		return
	}
	e.WantErrno("ibv_dealloc_pd of the MR's PD", old.Dealloc(), syscall.EBUSY)
	if !e.rereg("CHANGE_PD", r, reregPD, nu, nil, 0, 0, 0) {
		return
	}
	e.WantErrno("ibv_dealloc_pd of the MR's new PD", nu.Dealloc(), syscall.EBUSY)
	e.WantOK("ibv_dealloc_pd of the PD the MR left", old.Dealloc())
	// Flags together: a new PD and new access in one call.
	back := e.pdAlloc()
	e.rereg("CHANGE_PD|CHANGE_ACCESS", r, reregPD|reregAccess, back, nil, accessLocalWrite|accessRemoteRead, 0, 0)
	e.WantOK("ibv_dealloc_pd of the PD the MR left again", nu.Dealloc())
	e.WantOK("ibv_dereg_mr", mr.Dereg())
	e.WantOK("ibv_dealloc_pd once the MR is gone", back.Dealloc())

	// CHANGE_TRANSLATION (MR-16 B refuses it).
	pd := e.pdAlloc()
	mr, r = e.reregMR(pd, accessLocalWrite)
	buf := make([]byte, 5000)
	if e.Profile.ReregNoTranslation {
		e.rereg("CHANGE_TRANSLATION (MR-16 B)", r, reregTranslation, nil, buf, 0, reregErrCmd, syscall.EOPNOTSUPP)
	} else {
		e.rereg("CHANGE_TRANSLATION", r, reregTranslation, nil, buf, 0, 0, 0)
		if mr.Length() != uint64(len(buf)) || mr.Addr() == 0 {
			t.Errorf("after CHANGE_TRANSLATION to %d bytes: length %d addr %#x", len(buf), mr.Length(), mr.Addr())
		}
	}

	// What the kernel refuses: ERR_CMD, EINVAL. Each on a fresh MR, since
	// the MR may be unusable afterwards (MR-14).
	ctx2, err := e.Dev.Open()
	if err != nil {
		t.Fatalf("opening a second context: %v", err)
	}
	t.Cleanup(func() { _ = ctx2.Close() })
	other, err := ctx2.AllocPD()
	if err != nil {
		t.Fatalf("ibv_alloc_pd on the second context: %v", err)
	}
	t.Cleanup(func() { _ = other.Dealloc() })
	dead := e.pdAlloc()
	e.WantOK("ibv_dealloc_pd", dead.Dealloc())
	cmds := []struct {
		name   string
		flags  uint32
		pd     verbs.PD
		access uint32
	}{
		{"REMOTE_WRITE without LOCAL_WRITE (MR-01)", reregAccess, nil, accessRemoteWrite},
		{"REMOTE_ATOMIC without LOCAL_WRITE, with CHANGE_PD (MR-01)", reregAccess | reregPD, e.pdAlloc(), accessRemoteAtomic},
		{"an unknown access bit (MR-09)", reregAccess, nil, 1 << 12},
		{"a deallocated PD", reregPD, dead, 0},
		{"a PD of another context", reregPD, other, 0},
	}
	for _, c := range cmds {
		mr, r := e.reregMR(pd, accessLocalWrite)
		e.rereg(c.name, r, c.flags, c.pd, nil, c.access, reregErrCmd, syscall.EINVAL)
		e.WantOK("ibv_dereg_mr after "+c.name, mr.Dereg())
	}
}

func reregAfterErrCmd(t *tester, e *env) {
	w := newWire(t, e)
	target := w.e.mrReg(w.b.pd, make([]byte, 64), accessAll)
	r := e.reregOf(target)
	if r == nil {
		return
	}
	if !e.rereg("REMOTE_WRITE without LOCAL_WRITE", r, reregAccess, nil, nil, accessRemoteWrite, reregErrCmd, syscall.EINVAL) {
		return
	}
	keeps := e.Profile.ReregFailKeepsMR
	a, _ := w.connect(verbs.QPTypeRC, w.opts())
	a.post("a WRITE after the command error", a.remoteReq(1, verbs.WRRDMAWrite, target.Addr(), target.RKey()))
	want := verbs.WCRemAccessErr
	if keeps {
		want = verbs.WCSuccess
	}
	a.want(fmt.Sprintf("a WRITE to an MR after ERR_CMD (FailKeepsMR=%v)", keeps), w.await(a.scq, 1, "write")[0], 1, want)
	if keeps {
		e.rereg("a good call after ERR_CMD (B)", r, reregAccess, nil, nil, accessAll, 0, 0)
	} else {
		e.rereg("any call after ERR_CMD (A)", r, reregAccess, nil, nil, accessAll, reregErrInput, syscall.EINVAL)
	}
	e.WantOK("ibv_dereg_mr after ERR_CMD", target.Dereg())
}

func reregKeys(t *tester, e *env) {
	w := newWire(t, e)
	target := w.e.mrReg(w.b.pd, make([]byte, 64), accessAll)
	r := e.reregOf(target)
	if r == nil {
		return
	}
	l, rk := target.LKey(), target.RKey()
	if !e.rereg("CHANGE_ACCESS to the same flags", r, reregAccess, nil, nil, accessAll, 0, 0) {
		return
	}
	kept := target.LKey() == l && target.RKey() == rk
	if kept != e.Profile.ReregKeepsKeys {
		t.Errorf("keys kept: %v (lkey %#x→%#x, rkey %#x→%#x), want %v", kept, l, target.LKey(), rk, target.RKey(), e.Profile.ReregKeepsKeys)
	}
	if !kept && (target.LKey() == l || target.RKey() == rk) {
		t.Errorf("only one key changed: lkey %#x→%#x, rkey %#x→%#x", l, target.LKey(), rk, target.RKey())
	}
	a, _ := w.connect(verbs.QPTypeRC, w.opts())
	a.post("a WRITE with the new rkey", a.remoteReq(1, verbs.WRRDMAWrite, target.Addr(), target.RKey()))
	a.want("a WRITE with the rkey after the rereg", w.await(a.scq, 1, "new rkey")[0], 1, verbs.WCSuccess)
	want := verbs.WCRemAccessErr
	if kept {
		want = verbs.WCSuccess
	}
	a.post("a WRITE with the rkey from before", a.remoteReq(2, verbs.WRRDMAWrite, target.Addr(), rk))
	a.want(fmt.Sprintf("a WRITE with the rkey from before the rereg (KeepsKeys=%v)", kept), w.await(a.scq, 1, "old rkey")[0], 2, want)
}

func reregChangeTranslation(t *tester, e *env) {
	w := newWire(t, e)
	oldBuf, newBuf := make([]byte, 64), make([]byte, 128)
	target := w.e.mrReg(w.b.pd, oldBuf, accessAll)
	r := e.reregOf(target)
	if r == nil {
		return
	}
	fill(w.a.buf[:8], 0x40)
	if e.Profile.ReregNoTranslation {
		if !e.rereg("CHANGE_TRANSLATION (B)", r, reregTranslation, nil, newBuf, 0, reregErrCmd, syscall.EOPNOTSUPP) {
			return
		}
		if target.Length() != 64 {
			t.Errorf("a refused CHANGE_TRANSLATION changed the length to %d", target.Length())
		}
		if e.Profile.ReregFailKeepsMR {
			a, _ := w.connect(verbs.QPTypeRC, w.opts())
			a.post("a WRITE after the refused translation", a.remoteReq(1, verbs.WRRDMAWrite, target.Addr(), target.RKey()))
			a.want("a WRITE after the refused translation", w.await(a.scq, 1, "write")[0], 1, verbs.WCSuccess)
			if oldBuf[0] != 0x40 {
				t.Errorf("the WRITE did not land in the MR's buffer")
			}
		}
		return
	}
	if !e.rereg("CHANGE_TRANSLATION", r, reregTranslation, nil, newBuf, 0, 0, 0) {
		return
	}
	if target.Length() != 128 {
		t.Errorf("length after CHANGE_TRANSLATION: %d, want 128", target.Length())
	}
	a, _ := w.connect(verbs.QPTypeRC, w.opts())
	a.post("a WRITE to the last 8 bytes", a.remoteReq(1, verbs.WRRDMAWrite, target.Addr()+120, target.RKey()))
	a.want("a WRITE into the new translation", w.await(a.scq, 1, "write")[0], 1, verbs.WCSuccess)
	if newBuf[120] != 0x40 || oldBuf[0] != 0 {
		t.Errorf("the WRITE landed in the old buffer or nowhere: new[120]=%#x old[0]=%#x", newBuf[120], oldBuf[0])
	}
	a.post("a WRITE past the new end", a.remoteReq(2, verbs.WRRDMAWrite, target.Addr()+121, target.RKey()))
	a.want("a WRITE one byte past the new translation", w.await(a.scq, 1, "past")[0], 2, verbs.WCRemAccessErr)
}

func reregChecksNewAccess(t *tester, e *env) {
	w := newWire(t, e)
	// The PDs the MRs move to outlive them (cleanups run last first).
	pdA2, pdB2 := w.pdOn(w.a.ctx), w.pdOn(w.b.ctx)
	target := w.e.mrReg(w.b.pd, make([]byte, 64), accessAll)
	r := e.reregOf(target)
	if r == nil {
		return
	}
	a, _ := w.connect(verbs.QPTypeRC, w.opts())
	a.post("a WRITE before", a.remoteReq(1, verbs.WRRDMAWrite, target.Addr(), target.RKey()))
	a.want("a WRITE before the rereg", w.await(a.scq, 1, "before")[0], 1, verbs.WCSuccess)
	if !e.rereg("CHANGE_ACCESS without REMOTE_WRITE", r, reregAccess, nil, nil, accessLocalWrite|accessRemoteRead, 0, 0) {
		return
	}
	a.post("a WRITE after REMOTE_WRITE was dropped", a.remoteReq(2, verbs.WRRDMAWrite, target.Addr(), target.RKey()))
	a.want("a WRITE after CHANGE_ACCESS dropped REMOTE_WRITE", w.await(a.scq, 1, "write")[0], 2, verbs.WCRemAccessErr)
	a, _ = w.connect(verbs.QPTypeRC, w.opts())
	a.post("a READ, still granted", a.remoteReq(3, verbs.WRRDMARead, target.Addr(), target.RKey()))
	a.want("a READ after CHANGE_ACCESS kept REMOTE_READ", w.await(a.scq, 1, "read")[0], 3, verbs.WCSuccess)

	// CHANGE_PD away from the responder QP's PD: the rkey fails.
	if !e.rereg("CHANGE_PD to another PD", r, reregPD, pdB2, nil, 0, 0, 0) {
		return
	}
	a.post("a READ after CHANGE_PD", a.remoteReq(4, verbs.WRRDMARead, target.Addr(), target.RKey()))
	a.want("a READ through an MR moved to another PD", w.await(a.scq, 1, "pd")[0], 4, verbs.WCRemAccessErr)

	// A request posted before the rereg that runs after it (it waits in
	// SQD): its local MR moved to another PD, so LOC_PROT_ERR, whatever
	// the keys did.
	a, b := w.connect(verbs.QPTypeRC, w.opts())
	src := w.e.mrReg(w.a.pd, make([]byte, 64), accessAll)
	sr := e.reregOf(src)
	a.toState(verbs.QPStateSQD)
	a.post("a WRITE waiting in SQD", rdmaWR(5, verbs.WRRDMAWrite, b.s, 0, verbs.SGE{Addr: src.Addr(), Length: 8, LKey: src.LKey()}))
	e.rereg("CHANGE_PD of the waiting WRITE's source", sr, reregPD, pdA2, nil, 0, 0, 0)
	a.toState(verbs.QPStateRTS)
	a.want("a WRITE whose source MR moved to another PD before it ran", w.await(a.scq, 1, "local")[0], 5, verbs.WCLocProtErr)
}
