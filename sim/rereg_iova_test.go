package sim

import (
	"errors"
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/verbs"
)

// TestReregIOVA_MR13_MR16: ReregIOVA, the re-registration a C program's
// ibv_rereg_mr makes: with CHANGE_TRANSLATION work requests address the new
// buffer from the hca_va given (its address in C), not from a simulated
// address; ZERO_BASED counts from 0 and dropping it returns to hca_va; the
// old range resolves no more; the rxe profile refuses the translation
// (MR-16) and leaves the MR as it was.
func TestReregIOVA_MR13_MR16(t *testing.T) {
	for _, p := range Profiles() {
		t.Run(p.Name, func(t *testing.T) {
			w := newReregWorld(t, p)
			const va0, va1 = 0x7f00_0000_1000, 0x7f00_0004_2010
			buf := make([]byte, 512)
			mr, err := w.pd.RegMRIOVA(buf, va0, verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
			if err != nil {
				t.Fatal(err)
			}
			nbuf := make([]byte, 1000)
			err = mr.ReregIOVA(verbs.ReregChangeTranslation, nil, nbuf, va1, 0)
			if p.ReregNoTranslation {
				if !errors.Is(err, syscall.EOPNOTSUPP) || ReregFailureOf(err) != verbs.ReregErrCmd {
					t.Fatalf("translation under %s: %v, want EOPNOTSUPP, ERR_CMD", p.Name, err)
				}
				if mr.IOVA() != va0 || mr.Length() != 512 {
					t.Errorf("a refused translation changed the MR: iova %#x length %d", mr.IOVA(), mr.Length())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if mr.IOVA() != va1 || mr.Length() != 1000 || mr.Addr()%pageSize != va1%pageSize {
				t.Errorf("after the translation: iova %#x length %d addr %#x", mr.IOVA(), mr.Length(), mr.Addr())
			}
			d := w.ctx.dev
			look := func(key uint32, remote bool, addr uint64) ([]byte, protFault) {
				d.fabric.d.Lock()
				defer d.fabric.d.Unlock()
				return d.mrs.lookup(w.pd, key, remote, addr, 1, verbs.AccessRemoteWrite)
			}
			if b, f := look(mr.RKey(), true, va1+999); f != faultNone || &b[0] != &nbuf[999] {
				t.Errorf("the new buffer's last byte through the rkey at hca_va: %v", f)
			}
			if _, f := look(mr.LKey(), false, va0); f != faultRange {
				t.Errorf("the old hca_va: %v, want a range fault", f)
			}
			if _, f := look(mr.LKey(), false, va1+1000); f != faultRange {
				t.Errorf("one past the new buffer: %v", f)
			}
			// ZERO_BASED counts from 0; dropping it returns to hca_va, not
			// to the simulated address.
			if err := mr.ReregIOVA(verbs.ReregChangeAccess, nil, nil, 0x1234, verbs.AccessLocalWrite|verbs.AccessZeroBased); err != nil || mr.IOVA() != 0 {
				t.Errorf("ZERO_BASED: %v, iova %#x", err, mr.IOVA())
			}
			if err := mr.ReregIOVA(verbs.ReregChangeAccess, nil, nil, 0, verbs.AccessLocalWrite); err != nil || mr.IOVA() != va1 {
				t.Errorf("dropping ZERO_BASED: %v, iova %#x, want %#x", err, mr.IOVA(), uint64(va1))
			}
			// A translation with ZERO_BASED ignores hca_va.
			if err := mr.ReregIOVA(verbs.ReregChangeTranslation|verbs.ReregChangeAccess, nil, buf, va0, verbs.AccessLocalWrite|verbs.AccessZeroBased); err != nil ||
				mr.IOVA() != 0 || mr.Length() != 512 {
				t.Errorf("translation with ZERO_BASED: %v, iova %#x", err, mr.IOVA())
			}
			// Rereg of an MR registered by address keeps its own reading.
			if err := w.mr.Rereg(verbs.ReregChangeTranslation, nil, make([]byte, 64), 0); err != nil || w.mr.IOVA() != w.mr.Addr() {
				t.Errorf("Rereg: %v, iova %#x addr %#x", err, w.mr.IOVA(), w.mr.Addr())
			}
			// A wrapping hca_va is a command error.
			if err := mr.ReregIOVA(verbs.ReregChangeTranslation, nil, nbuf, ^uint64(0)-10, 0); !errors.Is(err, syscall.EINVAL) || ReregFailureOf(err) != verbs.ReregErrCmd {
				t.Errorf("wrapping hca_va: %v", err)
			}
			if err := mr.Dereg(); err != nil {
				t.Error(err)
			}
		})
	}
}
