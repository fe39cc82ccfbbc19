package sim

import (
	"errors"
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/verbs"
)

// reregWorld is a context with two PDs, a PD of another context and an MR
// in the first PD, under profile p.
type reregWorld struct {
	ctx        *Context
	pd, pd2    *PD
	other      *PD // of another context of the same device
	mr         *MR
	buf        []byte
	lkey, rkey uint32
}

func newReregWorld(t *testing.T, p Profile) *reregWorld {
	t.Helper()
	f, err := NewFabric(Config{Profile: p})
	if err != nil {
		t.Fatal(err)
	}
	w := &reregWorld{}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	w.ctx, err = f.Devices()[0].Open()
	must(err)
	ctx2, err := f.Devices()[0].Open()
	must(err)
	w.pd, err = w.ctx.AllocPD()
	must(err)
	w.pd2, err = w.ctx.AllocPD()
	must(err)
	w.other, err = ctx2.AllocPD()
	must(err)
	w.buf = make([]byte, 256)
	w.mr, err = w.pd.RegMR(w.buf, verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
	must(err)
	w.lkey, w.rkey = w.mr.LKey(), w.mr.RKey()
	return w
}

// resolves reports whether the MR's current lkey and rkey resolve for pd
// with need.
func (w *reregWorld) resolves(pd *PD, need verbs.AccessFlags) (local, remote protFault) {
	d := w.ctx.dev
	d.fabric.d.Lock()
	defer d.fabric.d.Unlock()
	_, local = d.lookupLKeyLocked(pd, w.mr.LKey(), w.mr.IOVA(), 1, 0)
	_, remote = d.lookupRKeyLocked(pd, w.mr.RKey(), w.mr.IOVA(), 1, need)
	return local, remote
}

// TestReregErrors_MR12_MR14: each refused re-registration gives EINVAL (or
// EOPNOTSUPP) with the failure class of the man page; an input error leaves
// the MR working, a command error leaves it unusable under the default
// profile and as it was under rxe.
func TestReregErrors_MR12_MR14(t *testing.T) {
	cases := []struct {
		name  string
		call  func(w *reregWorld) error
		errno syscall.Errno
		class verbs.ReregFailure
	}{
		{"unknown flag bit", func(w *reregWorld) error {
			return w.mr.Rereg(1<<3|verbs.ReregChangeAccess, nil, nil, verbs.AccessLocalWrite)
		}, syscall.EINVAL, verbs.ReregErrInput},
		{"translation without a buffer", func(w *reregWorld) error { return w.mr.Rereg(verbs.ReregChangeTranslation, nil, nil, 0) }, syscall.EINVAL, verbs.ReregErrInput},
		{"access without CHANGE_ACCESS", func(w *reregWorld) error { return w.mr.Rereg(verbs.ReregChangePD, w.pd2, nil, verbs.AccessLocalWrite) }, syscall.EINVAL, verbs.ReregErrInput},
		{"CHANGE_PD with nil PD", func(w *reregWorld) error { return w.mr.Rereg(verbs.ReregChangePD, nil, nil, 0) }, syscall.EINVAL, verbs.ReregErrInput},
		{"flags 0", func(w *reregWorld) error { return w.mr.Rereg(0, nil, nil, 0) }, syscall.EINVAL, verbs.ReregErrCmd},
		{"remote write without local write", func(w *reregWorld) error {
			return w.mr.Rereg(verbs.ReregChangeAccess, nil, nil, verbs.AccessRemoteWrite)
		}, syscall.EINVAL, verbs.ReregErrCmd},
		{"remote atomic without local write, with a PD change", func(w *reregWorld) error {
			return w.mr.Rereg(verbs.ReregChangeAccess|verbs.ReregChangePD, w.pd2, nil, verbs.AccessRemoteAtomic)
		}, syscall.EINVAL, verbs.ReregErrCmd},
		{"unknown access bit", func(w *reregWorld) error { return w.mr.Rereg(verbs.ReregChangeAccess, nil, nil, 1<<12) }, syscall.EINVAL, verbs.ReregErrCmd},
		{"PD of another context", func(w *reregWorld) error { return w.mr.Rereg(verbs.ReregChangePD, w.other, nil, 0) }, syscall.EINVAL, verbs.ReregErrCmd},
		{"deallocated PD", func(w *reregWorld) error {
			if err := w.pd2.Dealloc(); err != nil {
				return err
			}
			return w.mr.Rereg(verbs.ReregChangePD, w.pd2, nil, 0)
		}, syscall.EINVAL, verbs.ReregErrCmd},
	}
	for _, p := range Profiles() {
		for _, c := range cases {
			t.Run(p.Name+"/"+c.name, func(t *testing.T) {
				w := newReregWorld(t, p)
				err := c.call(w)
				if !errors.Is(err, c.errno) || ReregFailureOf(err) != c.class {
					t.Fatalf("error %v (class %v), want %v and %v", err, ReregFailureOf(err), c.errno, c.class)
				}
				if w.mr.LKey() != w.lkey || w.mr.RKey() != w.rkey || w.mr.PD() != w.pd || w.mr.Length() != 256 ||
					w.mr.Access() != verbs.AccessLocalWrite|verbs.AccessRemoteWrite {
					t.Errorf("the MR's fields changed: lkey %#x rkey %#x length %d access %v", w.mr.LKey(), w.mr.RKey(), w.mr.Length(), w.mr.Access())
				}
				if n := PDChildren(w.pd, childMR); n != 1 {
					t.Errorf("the MR's PD counts %d MRs, want 1", n)
				}
				usable := c.class.MRUsable() || p.ReregFailKeepsMR
				l, r := w.resolves(w.pd, verbs.AccessRemoteWrite)
				if got := l == faultNone && r == faultNone; got != usable {
					t.Errorf("after the failure the keys resolve: %v (%v, %v), want %v", got, l, r, usable)
				}
				again := w.mr.Rereg(verbs.ReregChangeAccess, nil, nil, verbs.AccessLocalWrite)
				if (again == nil) != usable {
					t.Errorf("a good re-registration afterwards: %v, want success %v", again, usable)
				}
				if !usable && ReregFailureOf(again) != verbs.ReregErrInput {
					t.Errorf("re-registering an unusable MR: class %v, want %v", ReregFailureOf(again), verbs.ReregErrInput)
				}
				if err := w.mr.Dereg(); err != nil {
					t.Errorf("ibv_dereg_mr after the failure: %v", err)
				}
				if n := PDChildren(w.pd, childMR); n != 0 {
					t.Errorf("after dereg the PD counts %d MRs", n)
				}
			})
		}
	}
}

// TestReregNilAndDead: nil and deregistered MRs are input errors.
func TestReregNilAndDead(t *testing.T) {
	var nilMR *MR
	if err := nilMR.Rereg(verbs.ReregChangeAccess, nil, nil, 0); !errors.Is(err, syscall.EINVAL) || ReregFailureOf(err) != verbs.ReregErrInput {
		t.Errorf("nil MR: %v", err)
	}
	w := newReregWorld(t, DefaultProfile())
	if err := w.mr.Dereg(); err != nil {
		t.Fatal(err)
	}
	if err := w.mr.Rereg(verbs.ReregChangeAccess, nil, nil, 0); !errors.Is(err, syscall.EINVAL) || ReregFailureOf(err) != verbs.ReregErrInput {
		t.Errorf("deregistered MR: %v", err)
	}
	if ReregFailureOf(errors.New("x")) != 0 || ReregFailureOf(nil) != 0 {
		t.Error("ReregFailureOf of a foreign error is not 0")
	}
	var re *verbs.ReregError
	if re.Error() != "<nil>" || re.Unwrap() != nil {
		t.Error("nil *ReregError")
	}
	for f := verbs.ReregFailure(0); f >= -6; f-- {
		if f.String() == "" {
			t.Errorf("%d has no name", int(f))
		}
	}
}

// TestReregSuccess_MR13_MR15_MR16: what each flag changes, per profile.
func TestReregSuccess_MR13_MR15_MR16(t *testing.T) {
	for _, p := range Profiles() {
		t.Run(p.Name, func(t *testing.T) {
			// CHANGE_ACCESS.
			w := newReregWorld(t, p)
			if err := w.mr.Rereg(verbs.ReregChangeAccess, nil, nil, verbs.AccessLocalWrite|verbs.AccessRemoteRead); err != nil {
				t.Fatal(err)
			}
			keysKept := w.mr.LKey() == w.lkey && w.mr.RKey() == w.rkey
			if keysKept != p.ReregKeepsKeys {
				t.Errorf("CHANGE_ACCESS kept the keys: %v, want %v", keysKept, p.ReregKeepsKeys)
			}
			if w.mr.LKey()>>8 != w.lkey>>8 || w.mr.LKey() == w.mr.RKey() {
				t.Errorf("new keys %#x/%#x: the index changed or lkey equals rkey", w.mr.LKey(), w.mr.RKey())
			}
			if _, r := w.resolves(w.pd, verbs.AccessRemoteWrite); r != faultAccess {
				t.Errorf("REMOTE_WRITE after it was dropped: %v, want %v", r, faultAccess)
			}
			if _, r := w.resolves(w.pd, verbs.AccessRemoteRead); r != faultNone {
				t.Errorf("REMOTE_READ after it was granted: %v", r)
			}
			if !keysKept {
				d := w.ctx.dev
				d.fabric.d.Lock()
				_, f := d.lookupRKeyLocked(w.pd, w.rkey, w.mr.IOVA(), 1, 0)
				d.fabric.d.Unlock()
				if f != faultKey {
					t.Errorf("the old rkey after new keys: %v, want %v", f, faultKey)
				}
			}
			// CHANGE_PD moves the MR between the PDs' counts (PD-02).
			if err := w.mr.Rereg(verbs.ReregChangePD, w.pd2, nil, 0); err != nil {
				t.Fatal(err)
			}
			if w.mr.PD() != w.pd2 || PDChildren(w.pd, childMR) != 0 || PDChildren(w.pd2, childMR) != 1 {
				t.Errorf("after CHANGE_PD: PD %v, counts %d/%d", w.mr.PD() == w.pd2, PDChildren(w.pd, childMR), PDChildren(w.pd2, childMR))
			}
			if l, _ := w.resolves(w.pd, 0); l != faultPD {
				t.Errorf("the lkey for the old PD: %v, want %v", l, faultPD)
			}
			if err := w.pd.Dealloc(); err != nil {
				t.Errorf("the old PD, now without MRs: %v", err)
			}
			if err := w.pd2.Dealloc(); !errors.Is(err, syscall.EBUSY) {
				t.Errorf("the new PD with the MR: %v, want EBUSY", err)
			}
			// The same PD again is no change of counts.
			if err := w.mr.Rereg(verbs.ReregChangePD, w.pd2, nil, 0); err != nil || PDChildren(w.pd2, childMR) != 1 {
				t.Errorf("CHANGE_PD to its own PD: %v, count %d", err, PDChildren(w.pd2, childMR))
			}
			// CHANGE_TRANSLATION.
			nbuf := make([]byte, 1000)
			err := w.mr.Rereg(verbs.ReregChangeTranslation|verbs.ReregChangeAccess, nil, nbuf, verbs.AccessLocalWrite|verbs.AccessZeroBased)
			if p.ReregNoTranslation {
				if !errors.Is(err, syscall.EOPNOTSUPP) || ReregFailureOf(err) != verbs.ReregErrCmd {
					t.Errorf("CHANGE_TRANSLATION under rxe: %v, want EOPNOTSUPP", err)
				}
				if w.mr.Length() != 256 || w.mr.Access() != verbs.AccessLocalWrite|verbs.AccessRemoteRead {
					t.Errorf("a refused translation changed the MR")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if w.mr.Length() != 1000 || w.mr.IOVA() != 0 || w.mr.Addr() == 0 {
				t.Errorf("after CHANGE_TRANSLATION with ZERO_BASED: length %d iova %#x addr %#x", w.mr.Length(), w.mr.IOVA(), w.mr.Addr())
			}
			d := w.ctx.dev
			d.fabric.d.Lock()
			b, f := d.lookupLKeyLocked(w.pd2, w.mr.LKey(), 999, 1, verbs.AccessLocalWrite)
			_, f2 := d.lookupLKeyLocked(w.pd2, w.mr.LKey(), 1000, 1, 0)
			d.fabric.d.Unlock()
			if f != faultNone || &b[0] != &nbuf[999] || f2 != faultRange {
				t.Errorf("the new translation: last byte %v, one past %v", f, f2)
			}
			if err := w.mr.Rereg(verbs.ReregChangeAccess, nil, nil, verbs.AccessLocalWrite); err != nil || w.mr.IOVA() != w.mr.Addr() {
				t.Errorf("dropping ZERO_BASED: %v, iova %#x addr %#x", err, w.mr.IOVA(), w.mr.Addr())
			}
		})
	}
}

// TestReregMaxMRSize: a new buffer above max_mr_size is a command error.
func TestReregMaxMRSize(t *testing.T) {
	attr := DefaultDeviceAttr()
	attr.MaxMRSize = 64
	pd := testPD(t, attr)
	mr, err := pd.RegMR(make([]byte, 64), 0)
	if err != nil {
		t.Fatal(err)
	}
	err = mr.Rereg(verbs.ReregChangeTranslation, nil, make([]byte, 65), 0)
	if !errors.Is(err, syscall.EINVAL) || ReregFailureOf(err) != verbs.ReregErrCmd {
		t.Errorf("65 bytes above max_mr_size=64: %v", err)
	}
	if mr.Length() != 64 {
		t.Errorf("the refused translation changed the length to %d", mr.Length())
	}
}
