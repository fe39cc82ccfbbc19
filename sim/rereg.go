package sim

import (
	"fmt"
	"math"
	"syscall"

	"github.com/verbsim/verbsim/internal/domain"

	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// ReregFailureOf calls verbs.ReregFailureOf.
func ReregFailureOf(err error) verbs.ReregFailure { return verbs.ReregFailureOf(err) }

func reregErr(f verbs.ReregFailure, errno syscall.Errno, format string, args ...any) error {
	return &verbs.ReregError{Failure: f, Err: verr.Errorf("ibv_rereg_mr", errno, format, args...)}
}

// reregSupported is IBV_REREG_MR_FLAGS_SUPPORTED.
const reregSupported = verbs.ReregChangeTranslation | verbs.ReregChangePD | verbs.ReregChangeAccess

// Rereg re-registers the MR (ibv_rereg_mr): conceptually a deregistration
// followed by a registration, with the MR object kept. flags says what
// changes: with ReregChangeTranslation the MR covers buf instead (its Addr,
// Length and IOVA follow, IOVA being Addr, or 0 with AccessZeroBased, as
// libibverbs passes the new address as hca_va); with ReregChangePD it
// belongs to pd, which must be a live PD of the MR's device context, and
// moves between the two PDs' counts of MRs (PD-02); with ReregChangeAccess
// it gets access, checked as RegMR checks it (MR-01, MR-09). Arguments that
// a flag does not ask for are ignored, except that access must then be 0.
// The changes take effect together or not at all (MR-13).
//
// Under the default profile every success gives new keys, which the program
// must read again with LKey and RKey; the rxe profile keeps them (MR-15).
// Requests that execute after the call, including ones posted before it, are
// checked against the new buffer, access and PD (MR-17).
//
// A failure is a *ReregError whose Failure is the class the man page names
// and whose Err carries the errno (MR-14). ReregErrInput, with EINVAL and
// the MR unchanged: a nil or deregistered MR, one left unusable by an
// earlier failure, flags outside the three, access not 0 without
// ReregChangeAccess, an empty buf with ReregChangeTranslation, a nil pd with
// ReregChangePD. ReregErrCmd for what the kernel refuses: flags 0, access
// that RegMR would refuse, a deallocated pd or one of another context
// (EINVAL), a buf longer than max_mr_size (EINVAL), and under the rxe
// profile ReregChangeTranslation (EOPNOTSUPP, MR-16). After ReregErrCmd the
// default profile leaves the MR unusable: its keys stop resolving and only
// Dereg works; the rxe profile leaves it as it was. Either way the program
// must still Dereg it.
func (mr *MR) Rereg(flags verbs.ReregFlags, pd *PD, buf []byte, access verbs.AccessFlags) (err error) {
	if mr == nil {
		return reregErr(verbs.ReregErrInput, syscall.EINVAL, "nil MR")
	}
	d := mr.pd.ctx.dev
	d.fabric.d.Enter(domain.Op{})
	defer d.fabric.d.Leave(domain.Op{}, nil)
	if e := d.fabric.eng; e.tracing() {
		defer func() {
			if err != nil {
				e.callLocked(e.nameOf(mr), "rereg_mr", "", fmt.Sprintf("flags %#x access %#x", uint32(flags), uint32(access)), err)
			}
		}()
	}
	err = mr.reregLocked(flags, pd, extent{buf: buf}, 0, false, access)
	mr.afterReregLocked(err)
	return err
}

// ReregIOVA is Rereg as a C program's ibv_rereg_mr reaches the kernel:
// libibverbs passes the new buffer's address as hca_va, and with
// ReregChangeTranslation work requests address buf[0] as hcaVA (ibv_mr.addr
// in C), not as the simulated address Rereg gives it; from 0 when the MR is
// ZERO_BASED after the change. A registration with PD.RegMRIOVA and its
// re-registrations with ReregIOVA thus keep the program's addresses, and an
// MR that drops ZERO_BASED later counts from hcaVA again. Without
// ReregChangeTranslation hcaVA is ignored, as the kernel ignores hca_va.
//
// Errors are Rereg's, and ReregErrCmd with EINVAL when hcaVA + len(buf)
// wraps around, or when buf is already registered at an address whose
// offset in its 4 KiB page differs from hcaVA's (as for RegMRIOVA). The
// rxe profile refuses the translation (MR-16) as Rereg does.
func (mr *MR) ReregIOVA(flags verbs.ReregFlags, pd *PD, buf []byte, hcaVA uint64, access verbs.AccessFlags) (err error) {
	return mr.reregIOVA(flags, pd, extent{buf: buf}, hcaVA, access)
}

// reregIOVA is ReregIOVA of any extent (simhook.ReregExternalMR).
func (mr *MR) reregIOVA(flags verbs.ReregFlags, pd *PD, x extent, hcaVA uint64, access verbs.AccessFlags) (err error) {
	if mr == nil {
		return reregErr(verbs.ReregErrInput, syscall.EINVAL, "nil MR")
	}
	d := mr.pd.ctx.dev
	d.fabric.d.Enter(domain.Op{})
	defer d.fabric.d.Leave(domain.Op{}, nil)
	if e := d.fabric.eng; e.tracing() {
		defer func() {
			if err != nil {
				e.callLocked(e.nameOf(mr), "rereg_mr", "", fmt.Sprintf("flags %#x hca_va %#x access %#x", uint32(flags), hcaVA, uint32(access)), err)
			}
		}()
	}
	err = mr.reregLocked(flags, pd, x, hcaVA, true, access)
	mr.afterReregLocked(err)
	return err
}

// afterReregLocked leaves the MR as a failed re-registration does
// (MR-14): a command error makes it unusable unless the profile keeps it.
//
// Precondition: the domain lock is held.
func (mr *MR) afterReregLocked(err error) {
	if err == nil || ReregFailureOf(err) != verbs.ReregErrCmd {
		return
	}
	f := mr.pd.ctx.dev.fabric
	f.consult(verbs.ReadingReregFailKeepsMR)
	if !f.profile.ReregFailKeepsMR {
		mr.broken = true
	}
}

// reregLocked checks and applies a re-registration; withIOVA says hcaVA
// is the new buffer's address for work requests (ReregIOVA).
//
// Precondition: the domain lock is held.
func (mr *MR) reregLocked(flags verbs.ReregFlags, pd *PD, x extent, hcaVA uint64, withIOVA bool, access verbs.AccessFlags) error {
	d := mr.pd.ctx.dev
	f := d.fabric
	pol := f.profile.Readings
	// What libibverbs checks before the command: ERR_INPUT, MR unchanged.
	switch {
	case mr.dead:
		return reregErr(verbs.ReregErrInput, syscall.EINVAL, "the MR has been deregistered")
	case mr.broken:
		return reregErr(verbs.ReregErrInput, syscall.EINVAL, "an earlier ibv_rereg_mr failed with a command error; the MR can only be deregistered (MR-14)")
	case flags&^reregSupported != 0:
		return reregErr(verbs.ReregErrInput, syscall.EINVAL, "unknown flag bits %#x (MR-12)", uint32(flags&^reregSupported))
	case flags&verbs.ReregChangeTranslation != 0 && x.length() == 0:
		return reregErr(verbs.ReregErrInput, syscall.EINVAL, "CHANGE_TRANSLATION with an empty buffer (MR-12)")
	case access != 0 && flags&verbs.ReregChangeAccess == 0:
		return reregErr(verbs.ReregErrInput, syscall.EINVAL, "access %#x given without CHANGE_ACCESS (MR-12)", uint32(access))
	case flags&verbs.ReregChangePD != 0 && pd == nil:
		return reregErr(verbs.ReregErrInput, syscall.EINVAL, "CHANGE_PD with a nil PD")
	}
	// A provider without ibv_rereg_mr: libibverbs' stub after its own
	// checks, the MR unchanged.
	f.consult(verbs.ReadingNoRereg)
	if pol.NoRereg {
		return reregErr(verbs.ReregErrInput, syscall.EOPNOTSUPP, "the provider has no ibv_rereg_mr (MR-18)")
	}
	// What the kernel checks: ERR_CMD.
	if flags == 0 {
		return reregErr(verbs.ReregErrCmd, syscall.EINVAL, "flags 0 asks for no change (MR-12)")
	}
	if mr.dm != nil {
		return reregErr(verbs.ReregErrCmd, syscall.EINVAL, "the MR lies in device memory, which the kernel does not re-register (DM-06)")
	}
	newAccess := mr.access
	if flags&verbs.ReregChangeAccess != 0 {
		a, err := checkAccess("ibv_rereg_mr", access, d.fabric)
		if err != nil {
			return &verbs.ReregError{Failure: verbs.ReregErrCmd, Err: err}
		}
		newAccess = a
	}
	newPD := mr.pd
	if flags&verbs.ReregChangePD != 0 {
		if err := checkOwner("ibv_rereg_mr", "the new PD", mr.pd.ctx, pd, sameContext); err != nil {
			return &verbs.ReregError{Failure: verbs.ReregErrCmd, Err: err}
		}
		if pd.dead {
			return reregErr(verbs.ReregErrCmd, syscall.EINVAL, "the new PD has been deallocated")
		}
		newPD = pd
	}
	if flags&verbs.ReregChangeTranslation != 0 {
		f.consult(verbs.ReadingReregNoTranslation)
		if pol.ReregNoTranslation {
			return reregErr(verbs.ReregErrCmd, syscall.EOPNOTSUPP, "CHANGE_TRANSLATION is not supported; only CHANGE_PD and CHANGE_ACCESS are (MR-16)")
		}
		if n := x.length(); n > d.attr.MaxMRSize {
			return reregErr(verbs.ReregErrCmd, syscall.EINVAL, "length %d is above max_mr_size=%d", n, d.attr.MaxMRSize)
		}
		if n := x.length(); withIOVA && hcaVA > math.MaxUint64-(n-1) {
			return reregErr(verbs.ReregErrCmd, syscall.EINVAL, "hca_va %#x + length %d wraps around", hcaVA, n)
		}
	}
	// Apply. Nothing below fails but the placement of a new buffer, which
	// comes first.
	if flags&verbs.ReregChangeTranslation != 0 {
		addr, err := d.mrs.placeExtent("ibv_rereg_mr", x, hcaVA, withIOVA)
		if err != nil {
			return &verbs.ReregError{Failure: verbs.ReregErrCmd, Err: err}
		}
		if mr.placed() {
			d.mrs.detach(mr)
			d.mrs.unplace(mr.buf)
		}
		mr.buf, mr.ext, mr.extAt, mr.length, mr.addr, mr.va = x.buf, x.ext, x.at, x.length(), addr, addr
		if withIOVA {
			mr.va = hcaVA
		}
		if mr.placed() {
			d.mrs.attach(mr)
		}
	}
	zeroChanged := (newAccess^mr.access)&verbs.AccessZeroBased != 0
	mr.access = newAccess
	if flags&verbs.ReregChangeTranslation != 0 || zeroChanged {
		mr.iova = mr.va
		if mr.access&verbs.AccessZeroBased != 0 {
			mr.iova = 0
		}
	}
	if newPD != mr.pd {
		mr.pd.releaseLocked(childMR)
		newPD.children[childMR]++
		mr.pd = newPD
	}
	f.consult(verbs.ReadingReregKeepsKeys)
	oldL, oldR := mr.lkey, mr.rkey
	if !pol.ReregKeepsKeys {
		d.mrs.rekey(mr)
		mr.invalid = false
	}
	if f := d.fabric; f.d.Checking() {
		f.d.Note(&domain.Note{Kind: domain.NoteRereg, Obj: mr, LKey: oldL, RKey: oldR, NewLKey: mr.lkey, NewRKey: mr.rkey})
	}
	if e := d.fabric.eng; e.tracing() {
		e.callLocked(e.nameOf(mr), "rereg_mr", e.nameOf(mr.pd), fmt.Sprintf("flags %#x length %d access %#x lkey %#x rkey %#x",
			uint32(flags), mr.length, uint32(mr.access), mr.lkey, mr.rkey), nil)
	}
	return nil
}

// rekey gives mr new keys with the same index: a new tag, different from
// the old one, so the old keys resolve no more.
func (t *mrTable) rekey(mr *MR) {
	old := mr.lkey & 0x7f
	for {
		t.serial++
		if tag := 1 + t.serial%127; tag != old {
			idx := mr.lkey >> 8
			mr.lkey = idx<<8 | tag
			mr.rkey = idx<<8 | tag | 0x80
			return
		}
	}
}
