package conformance

import (
	"fmt"
	"syscall"

	"github.com/verbsim/verbsim/verbs"
)

// Cases of the MR family: memory registration. Only what registration itself
// shows is checked here. The rest needs traffic and waits for the transport:
// the SEND half of MR-02, MR-03, the range and key checks of MR-04 at use,
// MR-07 and MR-08.

// The values of enum ibv_access_flags (verbs.h). They are spelled out here,
// not imported, because MR-05 is about these numbers.
const (
	accessLocalWrite      uint32 = 1
	accessRemoteWrite     uint32 = 1 << 1
	accessRemoteRead      uint32 = 1 << 2
	accessRemoteAtomic    uint32 = 1 << 3
	accessMWBind          uint32 = 1 << 4
	accessZeroBased       uint32 = 1 << 5
	accessRelaxedOrdering uint32 = 1 << 20 // IBV_ACCESS_OPTIONAL_FIRST
)

// mrTry registers a fresh buffer with access and says whether that worked;
// a refusal must come with EINVAL and no MR.
func (e *env) mrTry(pd verbs.PD, access uint32) bool {
	e.T.Helper()
	mr, err := pd.RegMR(make([]byte, 64), verbs.AccessFlags(access))
	if err != nil {
		if mr != nil {
			_ = mr.Dereg()
			e.T.Errorf("ibv_reg_mr(access=%#x) returned an MR along with error %v", access, err)
		}
		e.WantErrno(fmt.Sprintf("ibv_reg_mr(access=%#x)", access), err, syscall.EINVAL)
		return false
	}
	if mr == nil {
		e.T.Fatalf("ibv_reg_mr(access=%#x) returned neither an MR nor an error", access)
	}
	e.WantOK(fmt.Sprintf("ibv_dereg_mr(access=%#x)", access), mr.Dereg())
	return true
}

// mrCases are the cases of the MR family in mr.go.
var mrCases = []Case{
	{"MR-01", "remote write or atomic without local write is EINVAL", remoteAccessNeedsLocalWrite},
	{"MR-02", "access 0 registers (local read needs no flag)", accessZeroRegisters},
	{"MR-04", "keys identify MRs; addr and length describe the buffer", keysIdentifyMRs},
	{"MR-05", "access flag values as in verbs.h", accessFlagValues},
	{"MR-06", "dereg fails while the MR is held as by a bound window", deregWhileHeld},
	{"MR-09", "unknown access bits are EINVAL; optional ones are accepted", unknownAccessBits},
}

func remoteAccessNeedsLocalWrite(t *tester, e *env) {
	pd := e.pdAlloc()
	for access := range uint32(16) {
		needsLocal := access&(accessRemoteWrite|accessRemoteAtomic) != 0
		want := !needsLocal || access&accessLocalWrite != 0
		if got := e.mrTry(pd, access); got != want {
			t.Errorf("ibv_reg_mr(access=%#x) registered: %v, want %v", access, got, want)
		}
	}
}

func accessZeroRegisters(t *tester, e *env) {
	// The other half of the rule, a SEND from such an MR, needs traffic.
	pd := e.pdAlloc()
	buf := []byte("read-only source")
	mr := e.mrReg(pd, buf, 0)
	if mr.Length() != uint64(len(buf)) {
		t.Errorf("an access-0 MR reports length %d, want %d", mr.Length(), len(buf))
	}
	e.WantOK("ibv_dereg_mr", mr.Dereg())
}

func keysIdentifyMRs(t *tester, e *env) {
	a, b := e.pdAlloc(), e.pdAlloc()
	bufs := [][]byte{make([]byte, 1), make([]byte, 4096), make([]byte, 10000), make([]byte, 333)}
	var mrs []verbs.MR
	for i, buf := range bufs {
		pd := a
		if i%2 == 1 {
			pd = b
		}
		mrs = append(mrs, e.mrReg(pd, buf, accessLocalWrite|accessRemoteRead))
	}
	// The same buffer again, in the other PD: the same address.
	again := e.mrReg(b, bufs[0], accessLocalWrite)
	if again.Addr() != mrs[0].Addr() || again.Length() != mrs[0].Length() {
		t.Errorf("one buffer registered twice reports addr/length %#x/%d and %#x/%d; both describe the same memory",
			mrs[0].Addr(), mrs[0].Length(), again.Addr(), again.Length())
	}
	mrs = append(mrs, again)
	lkeys, rkeys := map[uint32]int{}, map[uint32]int{}
	for i, mr := range mrs {
		if j, dup := lkeys[mr.LKey()]; dup {
			t.Errorf("MRs %d and %d share lkey %#x", j, i, mr.LKey())
		}
		if j, dup := rkeys[mr.RKey()]; dup {
			t.Errorf("MRs %d and %d share rkey %#x", j, i, mr.RKey())
		}
		lkeys[mr.LKey()], rkeys[mr.RKey()] = i, i
	}
	for i, buf := range bufs {
		mr := mrs[i]
		if mr.Length() != uint64(len(buf)) {
			t.Errorf("MR %d reports length %d for a %d-byte buffer", i, mr.Length(), len(buf))
		}
		if mr.Addr() == 0 {
			t.Errorf("MR %d reports address 0", i)
		}
		for j := range i {
			o := mrs[j]
			if mr.Addr() < o.Addr()+o.Length() && o.Addr() < mr.Addr()+mr.Length() {
				t.Errorf("MRs %d [%#x+%d) and %d [%#x+%d) overlap, but their buffers are distinct",
					j, o.Addr(), o.Length(), i, mr.Addr(), mr.Length())
			}
		}
	}
	// Keys stay the MR's until it is deregistered.
	l, r := mrs[1].LKey(), mrs[1].RKey()
	e.WantOK("ibv_dereg_mr", mrs[2].Dereg())
	if mrs[1].LKey() != l || mrs[1].RKey() != r {
		t.Errorf("deregistering one MR changed another's keys")
	}
}

func accessFlagValues(t *tester, e *env) {
	pd := e.pdAlloc()
	// Every flag every device accepts registers with LOCAL_WRITE beside
	// it (ON_DEMAND and HUGETLB need device support, so they are left out).
	for _, f := range []uint32{accessLocalWrite, accessRemoteWrite, accessRemoteRead, accessRemoteAtomic,
		accessMWBind, accessZeroBased, accessRelaxedOrdering} {
		if !e.mrTry(pd, accessLocalWrite|f) {
			t.Errorf("ibv_reg_mr(LOCAL_WRITE|%#x) was refused; %#x is an ibv_access_flags value", f, f)
		}
	}
	// The values carry their meaning: 2 and 8 are the flags that need
	// LOCAL_WRITE (MR-01), 1 is LOCAL_WRITE, and 4, 16, 32 and 1<<20 do not.
	for _, c := range []struct {
		access uint32
		want   bool
	}{
		{accessRemoteWrite, false}, {accessRemoteAtomic, false},
		{accessRemoteWrite | accessRemoteAtomic | accessLocalWrite, true},
		{accessRemoteRead, true}, {accessMWBind, true}, {accessZeroBased, true}, {accessRelaxedOrdering, true},
	} {
		if got := e.mrTry(pd, c.access); got != c.want {
			t.Errorf("ibv_reg_mr(access=%#x) registered: %v, want %v", c.access, got, c.want)
		}
	}
}

func deregWhileHeld(t *tester, e *env) {
	pd := e.pdAlloc()
	mr := e.mrReg(pd, make([]byte, 128), accessLocalWrite|accessMWBind)
	r, ok := mr.(Referencer)
	if !ok {
		t.Fatalf("the MR cannot be held the way a bound memory window holds it (conformance.Referencer); this case needs it")
	}
	if err := r.Ref(); err != nil {
		t.Fatalf("holding the MR: %v", err)
	}
	lkey := mr.LKey()
	// [IMPL] EBUSY is the default reading, EINVAL rxe's; either way the
	// MR stays registered.
	err := mr.Dereg()
	if err == nil {
		t.Fatalf("ibv_dereg_mr of an MR with a bound window succeeded")
	}
	if errnoOf(err) != "EBUSY" && errnoOf(err) != "EINVAL" {
		t.Errorf("ibv_dereg_mr of an MR with a bound window: %v, want EBUSY (or rxe's EINVAL)", err)
	}
	if mr.LKey() != lkey {
		t.Errorf("a refused ibv_dereg_mr changed the lkey")
	}
	e.WantErrno("ibv_dealloc_pd while the refused MR remains", pd.Dealloc(), syscall.EBUSY)
	r.Unref()
	e.WantOK("ibv_dereg_mr once the window is gone", mr.Dereg())
}

func unknownAccessBits(t *tester, e *env) {
	pd := e.pdAlloc()
	for _, bit := range []uint32{1 << 12, 1 << 15, 1 << 19, 1 << 30, 1 << 31} {
		for _, base := range []uint32{0, accessLocalWrite | accessRemoteRead} {
			if e.mrTry(pd, base|bit) {
				t.Errorf("ibv_reg_mr(access=%#x) with the unknown bit %#x registered, want EINVAL", base|bit, bit)
			}
		}
	}
	// Bits 20..29 are IBV_ACCESS_OPTIONAL_RANGE: a device that does not
	// know one ignores it.
	for _, bit := range []uint32{1 << 21, 1 << 29} {
		if !e.mrTry(pd, accessLocalWrite|bit) {
			t.Errorf("ibv_reg_mr(access=LOCAL_WRITE|%#x) was refused; optional-range flags may be ignored but not refused", bit)
		}
	}
}
