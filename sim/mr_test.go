package sim

import (
	"errors"
	"fmt"
	"math"
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/internal/abigolden"
	"github.com/verbsim/verbsim/verbs"
)

// testPD returns a PD on a fresh default device, or one with attr.
func testPD(t testing.TB, attr ...verbs.DeviceAttr) *PD {
	t.Helper()
	cfg := Config{}
	if len(attr) > 0 {
		cfg.Devices = []DeviceConfig{{Name: "t", Attr: attr[0]}}
	}
	f, err := NewFabric(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, err := f.Devices()[0].Open()
	if err != nil {
		t.Fatal(err)
	}
	pd, err := ctx.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	return pd
}

func errnoIs(err error, want syscall.Errno) bool {
	if want == 0 {
		return err == nil
	}
	return errors.Is(err, want)
}

// TestAccessGolden_MR05: the Access constants are enum ibv_access_flags of
// rdma-core 44, bit for bit.
func TestAccessGolden_MR05(t *testing.T) {
	rows, err := abigolden.Load("../verbs/testdata/verbs44.golden")
	if err != nil {
		t.Fatal(err)
	}
	golden := abigolden.Lookup(rows, abigolden.KindAccessFlags)
	ours := map[string]verbs.AccessFlags{
		"IBV_ACCESS_LOCAL_WRITE": verbs.AccessLocalWrite, "IBV_ACCESS_REMOTE_WRITE": verbs.AccessRemoteWrite,
		"IBV_ACCESS_REMOTE_READ": verbs.AccessRemoteRead, "IBV_ACCESS_REMOTE_ATOMIC": verbs.AccessRemoteAtomic,
		"IBV_ACCESS_MW_BIND": verbs.AccessMWBind, "IBV_ACCESS_ZERO_BASED": verbs.AccessZeroBased,
		"IBV_ACCESS_ON_DEMAND": verbs.AccessOnDemand, "IBV_ACCESS_HUGETLB": verbs.AccessHugeTLB,
		"IBV_ACCESS_RELAXED_ORDERING": verbs.AccessRelaxedOrdering,
	}
	if len(golden) != len(ours) {
		t.Errorf("verbs.h has %d access flags, sim %d", len(golden), len(ours))
	}
	for v, r := range golden {
		if a, ok := ours[r.Name]; !ok || uint64(a) != uint64(v) {
			t.Errorf("%s = %d in verbs.h, sim has %d (declared: %v)", r.Name, v, a, ok)
		}
	}
}

// TestRegMRAccess: the registration-time access rules. MR-01: REMOTE_WRITE
// or REMOTE_ATOMIC needs LOCAL_WRITE; MR-02: access 0 registers; MR-09:
// unknown bits are EINVAL, unknown optional-range bits are dropped.
func TestRegMRAccess(t *testing.T) {
	pd := testPD(t)
	for _, c := range []struct {
		rule   string
		access verbs.AccessFlags
		errno  syscall.Errno
		kept   verbs.AccessFlags
	}{
		{"MR-02", 0, 0, 0},
		{"MR-01", verbs.AccessRemoteRead, 0, verbs.AccessRemoteRead},
		{"MR-01", verbs.AccessRemoteWrite, syscall.EINVAL, 0},
		{"MR-01", verbs.AccessRemoteAtomic, syscall.EINVAL, 0},
		{"MR-01", verbs.AccessRemoteWrite | verbs.AccessRemoteRead | verbs.AccessMWBind, syscall.EINVAL, 0},
		{"MR-01", verbs.AccessLocalWrite | verbs.AccessRemoteWrite | verbs.AccessRemoteAtomic, 0, verbs.AccessLocalWrite | verbs.AccessRemoteWrite | verbs.AccessRemoteAtomic},
		{"MR-05", verbs.AccessMWBind | verbs.AccessZeroBased | verbs.AccessOnDemand | verbs.AccessHugeTLB | verbs.AccessRelaxedOrdering, 0,
			verbs.AccessMWBind | verbs.AccessZeroBased | verbs.AccessOnDemand | verbs.AccessHugeTLB | verbs.AccessRelaxedOrdering},
		{"MR-09", 1 << 8, syscall.EINVAL, 0},
		{"MR-09", verbs.AccessLocalWrite | 1<<12, syscall.EINVAL, 0},
		{"MR-09", 1 << 19, syscall.EINVAL, 0},
		{"MR-09", 1 << 30, syscall.EINVAL, 0},
		{"MR-09", 1 << 31, syscall.EINVAL, 0},
		{"MR-09", verbs.AccessLocalWrite | 1<<21 | 1<<29, 0, verbs.AccessLocalWrite},
	} {
		mr, err := pd.RegMR(make([]byte, 16), c.access)
		if !errnoIs(err, c.errno) {
			t.Errorf("%s: RegMR(access=%v): %v, want errno %d", c.rule, c.access, err, c.errno)
			continue
		}
		if err != nil {
			if mr != nil {
				t.Errorf("%s: a failed RegMR returned an MR", c.rule)
			}
			continue
		}
		if mr.Access() != c.kept {
			t.Errorf("%s: RegMR(access=%v) keeps %v, want %v", c.rule, c.access, mr.Access(), c.kept)
		}
		if err := mr.Dereg(); err != nil {
			t.Fatal(err)
		}
	}
	if n := pd.childrenLocked(childMR); n != 0 {
		t.Errorf("%d MRs left in the PD after failed and deregistered registrations", n)
	}
}

// TestRegMRLimits: empty buffers, max_mr_size, max_mr, nil and dead PDs.
// The kernel pins no pages for length 0 at a page-aligned address
// (ib_umem_get: EINVAL), and verbsim addresses are page-aligned.
func TestRegMRLimits(t *testing.T) {
	attr := DefaultDeviceAttr()
	attr.MaxMR = 2
	attr.MaxMRSize = 100
	pd := testPD(t, attr)
	steps := []struct {
		name  string
		buf   []byte
		errno syscall.Errno
	}{
		{"nil buffer", nil, syscall.EINVAL},
		{"empty buffer", []byte{}, syscall.EINVAL},
		{"above max_mr_size", make([]byte, 101), syscall.EINVAL},
		{"exactly max_mr_size", make([]byte, 100), 0},
		{"one byte", make([]byte, 1), 0},
		{"over max_mr", make([]byte, 1), syscall.ENOMEM},
		{"bad length on a full device", nil, syscall.EINVAL},
	}
	var mrs []*MR
	for _, s := range steps {
		mr, err := pd.RegMR(s.buf, 0)
		if !errnoIs(err, s.errno) {
			t.Errorf("%s: %v, want errno %d", s.name, err, s.errno)
		}
		if err == nil {
			mrs = append(mrs, mr)
		}
	}
	if err := mrs[0].Dereg(); err != nil {
		t.Fatal(err)
	}
	if _, err := pd.RegMR(make([]byte, 1), 0); err != nil {
		t.Errorf("RegMR after a Dereg freed a slot: %v", err)
	}
	var nilPD *PD
	if _, err := nilPD.RegMR(make([]byte, 1), 0); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("RegMR on nil: %v", err)
	}
	if _, err := nilPD.RegMRIOVA(make([]byte, 1), 0, 0); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("RegMRIOVA on nil: %v", err)
	}
}

// TestKeys_MR04: keys are non-zero, unique per device, lkey never equals an
// rkey, deterministic from one fabric to the next, and stale after Dereg.
func TestKeys_MR04(t *testing.T) {
	run := func() []uint32 {
		pd := testPD(t)
		var keys []uint32
		seen := map[uint32]bool{}
		var live []*MR
		for i := range 300 {
			mr, err := pd.RegMR(make([]byte, 1+i%7), verbs.AccessLocalWrite)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range []uint32{mr.LKey(), mr.RKey()} {
				if k == 0 || seen[k] {
					t.Fatalf("registration %d: key %#x is zero or was seen among live MRs", i, k)
				}
				seen[k] = true
			}
			keys = append(keys, mr.LKey(), mr.RKey())
			live = append(live, mr)
			if i%3 == 2 { // free one, so indexes get reused
				old := live[0]
				live = live[1:]
				if err := old.Dereg(); err != nil {
					t.Fatal(err)
				}
				delete(seen, old.LKey())
				delete(seen, old.RKey())
				d := pd.ctx.dev
				if _, f := d.lookupLKeyLocked(pd, old.LKey(), old.IOVA(), 1, 0); f != faultKey {
					t.Fatalf("the lkey of a deregistered MR resolves: %v (MR-07)", f)
				}
			}
		}
		return keys
	}
	a, b := run(), run()
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Error("two identical fabrics hand out different keys")
	}
}

// TestAddresses_MR04: simulated addresses are page-aligned, deterministic,
// disjoint for distinct buffers, shared by two live registrations of the
// same buffer, and IOVA follows RegMR, RegMRIOVA and ZERO_BASED.
func TestAddresses_MR04(t *testing.T) {
	pd := testPD(t)
	a, b := make([]byte, 5000), make([]byte, 10)
	ma, _ := pd.RegMR(a, 0)
	mb, _ := pd.RegMR(b, 0)
	if ma.Addr() != firstVA || mb.Addr() != firstVA+2*pageSize || ma.IOVA() != ma.Addr() || ma.Length() != 5000 {
		t.Errorf("addresses %#x %#x, iova %#x", ma.Addr(), mb.Addr(), ma.IOVA())
	}
	again, _ := pd.RegMR(a, verbs.AccessLocalWrite)
	if again.Addr() != ma.Addr() || again.LKey() == ma.LKey() {
		t.Errorf("the same buffer again: addr %#x (first %#x), lkey %#x (first %#x)", again.Addr(), ma.Addr(), again.LKey(), ma.LKey())
	}
	zb, _ := pd.RegMR(b, verbs.AccessZeroBased)
	if zb.IOVA() != 0 || zb.Addr() != mb.Addr() {
		t.Errorf("ZERO_BASED: iova %#x addr %#x", zb.IOVA(), zb.Addr())
	}
	c := make([]byte, 64)
	mc, err := pd.RegMRIOVA(c, 0x7000_0123, 0)
	if err != nil || mc.IOVA() != 0x7000_0123 || mc.Addr()%pageSize != 0x123 {
		t.Fatalf("RegMRIOVA: %v, iova %#x addr %#x", err, mc.IOVA(), mc.Addr())
	}
	// The kernel requires hca_va and the address to share their page offset.
	_, err = pd.RegMRIOVA(c, 0x5000, 0)
	if !errors.Is(err, syscall.EINVAL) {
		t.Errorf("RegMRIOVA with another page offset than the placed buffer: %v", err)
	}
	if m, err := pd.RegMRIOVA(c, 0x9123, 0); err != nil || m.Addr() != mc.Addr() {
		t.Errorf("RegMRIOVA with the same page offset: %v", err)
	}
	if m, err := pd.RegMRIOVA(make([]byte, 8), 0, verbs.AccessZeroBased); err != nil || m.IOVA() != 0 {
		t.Errorf("RegMRIOVA(0, ZERO_BASED): %v", err)
	}
	for name, c := range map[string]struct {
		iova   uint64
		access verbs.AccessFlags
	}{
		"ZERO_BASED with hca_va": {0x1000, verbs.AccessZeroBased},
		"wrapping hca_va":        {math.MaxUint64 - 6, 0},
	} {
		if _, err := pd.RegMRIOVA(make([]byte, 8), c.iova, c.access); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("%s: %v, want EINVAL", name, err)
		}
	}
	if m, err := pd.RegMRIOVA(make([]byte, 8), math.MaxUint64-7, 0); err != nil || m.IOVA() != math.MaxUint64-7 {
		t.Errorf("hca_va ending at the top of the space: %v", err)
	}
	// Deregistering every MR of a buffer forgets its address.
	for _, m := range []*MR{ma, again} {
		if err := m.Dereg(); err != nil {
			t.Fatal(err)
		}
	}
	if m, _ := pd.RegMR(a, 0); m.Addr() == firstVA {
		t.Errorf("a buffer whose MRs are all gone kept its address")
	}
}

// TestDereg_MR06: Dereg is EBUSY while windows are bound, EINVAL twice or
// on nil, and releases the PD.
func TestDereg_MR06(t *testing.T) {
	pd := testPD(t)
	mr, _ := pd.RegMR(make([]byte, 32), verbs.AccessLocalWrite|verbs.AccessMWBind)
	if err := mr.Ref(); err != nil {
		t.Fatal(err)
	}
	if err := mr.Ref(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := mr.Dereg(); !errors.Is(err, syscall.EBUSY) {
			t.Fatalf("Dereg with bound windows: %v, want EBUSY", err)
		}
		mr.Unref()
	}
	if err := pd.Dealloc(); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("Dealloc while the refused MR remains: %v", err)
	}
	if err := mr.Dereg(); err != nil {
		t.Fatalf("Dereg once unbound: %v", err)
	}
	mr.Unref() // no hold: nothing happens
	if err := mr.Dereg(); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Dereg twice: %v", err)
	}
	if err := mr.Ref(); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Ref of a deregistered MR: %v", err)
	}
	if err := pd.Dealloc(); err != nil {
		t.Errorf("Dealloc after the Dereg: %v", err)
	}
	var nilMR *MR
	if err := nilMR.Dereg(); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Dereg(nil): %v", err)
	}
	if err := nilMR.Ref(); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Ref(nil): %v", err)
	}
	nilMR.Unref()
	if nilMR.PD() != nil || nilMR.Addr() != 0 || nilMR.IOVA() != 0 || nilMR.Length() != 0 ||
		nilMR.LKey() != 0 || nilMR.RKey() != 0 || nilMR.Access() != 0 {
		t.Error("a nil MR reports fields")
	}
}

// TestChildKinds_PD02: every kind of child, including the QP, SRQ and MW
// kinds later layers record, keeps the PD from being deallocated.
func TestChildKinds_PD02(t *testing.T) {
	pd := testPD(t)
	mu := pd.ctx.dev.fabric.d
	for k := range numChildKinds {
		mu.Lock()
		err := pd.holdLocked("test", k)
		mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		if err := pd.Dealloc(); !errors.Is(err, syscall.EBUSY) {
			t.Errorf("Dealloc with a live %v: %v, want EBUSY", k, err)
		}
		mu.Lock()
		pd.releaseLocked(k)
		pd.releaseLocked(k) // a second release does nothing
		mu.Unlock()
	}
	if childKind(9).String() != "childKind(9)" {
		t.Error(childKind(9).String())
	}
	if err := pd.Dealloc(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if err := pd.holdLocked("test", childQP); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("holdLocked on a deallocated PD: %v", err)
	}
	var nilPD *PD
	if err := nilPD.holdLocked("test", childQP); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("holdLocked on nil: %v", err)
	}
	nilPD.releaseLocked(childQP)
}

// TestLookup: the engine's key resolution, fault by fault.
func TestLookup(t *testing.T) {
	pd := testPD(t)
	d := pd.ctx.dev
	other, _ := pd.ctx.AllocPD()
	buf := make([]byte, 100)
	mr, _ := pd.RegMR(buf, verbs.AccessLocalWrite|verbs.AccessRemoteRead)
	ro, _ := pd.RegMR(make([]byte, 10), 0)
	zb, _ := pd.RegMRIOVA(make([]byte, 10), 0, verbs.AccessRemoteWrite|verbs.AccessLocalWrite)
	base := mr.IOVA()
	for _, c := range []struct {
		rule         string
		pd           *PD
		key          uint32
		remote       bool
		addr, length uint64
		need         verbs.AccessFlags
		want         protFault
	}{
		{"MR-04", pd, mr.LKey(), false, base, 100, 0, faultNone},
		{"MR-04", pd, mr.LKey(), false, base + 99, 1, verbs.AccessLocalWrite, faultNone},
		{"MR-04", pd, mr.LKey(), false, base - 1, 1, 0, faultRange},
		{"MR-04", pd, mr.LKey(), false, base, 101, 0, faultRange},
		{"MR-04", pd, mr.LKey(), false, base + 100, 1, 0, faultRange},
		{"MR-04", pd, mr.LKey(), false, base + 50, math.MaxUint64, 0, faultRange},
		{"MR-04", pd, mr.RKey(), false, base, 1, 0, faultKey},
		{"MR-04", pd, mr.LKey(), true, base, 1, verbs.AccessRemoteRead, faultKey},
		{"MR-04", pd, mr.LKey() ^ 0x100, false, base, 1, 0, faultKey},
		{"MR-04", pd, 0, false, base, 1, 0, faultKey},
		{"MR-04", pd, zb.LKey(), false, 0, 10, 0, faultNone},
		{"MR-04", pd, zb.LKey(), false, zb.Addr(), 1, 0, faultRange},
		{"MR-04", pd, zb.RKey(), true, 9, 1, verbs.AccessRemoteWrite, faultNone},
		{"MR-08", other, mr.LKey(), false, base, 1, 0, faultPD},
		{"MR-08", other, mr.RKey(), true, base, 1, verbs.AccessRemoteRead, faultPD},
		{"MR-02", pd, ro.LKey(), false, ro.IOVA(), 10, 0, faultNone},
		{"MR-03", pd, ro.LKey(), false, ro.IOVA(), 10, verbs.AccessLocalWrite, faultAccess},
		{"MR-01", pd, mr.RKey(), true, base, 8, verbs.AccessRemoteRead, faultNone},
		{"MR-01", pd, mr.RKey(), true, base, 8, verbs.AccessRemoteWrite, faultAccess},
		{"MR-01", pd, mr.RKey(), true, base, 8, verbs.AccessRemoteAtomic, faultAccess},
		{"zero length", pd, 0, true, 0, 0, verbs.AccessRemoteWrite, faultNone},
		{"zero length", other, 0xdead, false, 1 << 63, 0, verbs.AccessLocalWrite, faultNone},
	} {
		var got []byte
		var f protFault
		if c.remote {
			got, f = d.lookupRKeyLocked(c.pd, c.key, c.addr, c.length, c.need)
		} else {
			got, f = d.lookupLKeyLocked(c.pd, c.key, c.addr, c.length, c.need)
		}
		if f != c.want {
			t.Errorf("%s: lookup(key=%#x remote=%v addr=%#x len=%d need=%v) = %v, want %v",
				c.rule, c.key, c.remote, c.addr, c.length, c.need, f, c.want)
			continue
		}
		if f == faultNone && uint64(len(got)) != c.length {
			t.Errorf("%s: lookup returned %d bytes for length %d", c.rule, len(got), c.length)
		}
	}
	// The slice is the caller's memory, read and written in place: what the
	// transport relies on to read buffers when a WR executes.
	s, _ := d.lookupLKeyLocked(pd, mr.LKey(), base+10, 5, verbs.AccessLocalWrite)
	copy(s, "hello")
	buf[10] = 'j'
	if string(buf[10:15]) != "jello" || string(s) != "jello" || cap(s) != 5 {
		t.Errorf("the looked-up range does not alias the buffer: %q %q cap %d", buf[10:15], s, cap(s))
	}
	// MR-07: after Dereg the keys stop resolving.
	if err := mr.Dereg(); err != nil {
		t.Fatal(err)
	}
	if _, f := d.lookupRKeyLocked(pd, mr.RKey(), base, 1, verbs.AccessRemoteRead); f != faultKey {
		t.Errorf("MR-07: a deregistered rkey resolves: %v", f)
	}
	for f, want := range map[protFault]string{faultNone: "none", faultKey: "invalid key", faultPD: "MR of another PD",
		faultAccess: "missing access right", faultRange: "out of the MR's range", 9: "protFault(9)"} {
		if f.String() != want {
			t.Errorf("%d.String() = %q", f, f.String())
		}
	}
}

// BenchmarkLKeyLookup is the engine's per-SGE cost: one lkey resolution and
// range check. It must not allocate.
func BenchmarkLKeyLookup(b *testing.B) {
	pd := testPD(b)
	d := pd.ctx.dev
	var mrs []*MR
	for range 1000 {
		mr, err := pd.RegMR(make([]byte, 4096), verbs.AccessLocalWrite)
		if err != nil {
			b.Fatal(err)
		}
		mrs = append(mrs, mr)
	}
	mr := mrs[500]
	b.ReportAllocs()
	for b.Loop() {
		if _, f := d.lookupLKeyLocked(pd, mr.LKey(), mr.IOVA()+64, 1024, verbs.AccessLocalWrite); f != faultNone {
			b.Fatal(f)
		}
	}
}

// TestLookupAllocs pins BenchmarkLKeyLookup's promise in a test.
func TestLookupAllocs(t *testing.T) {
	pd := testPD(t)
	mr, _ := pd.RegMR(make([]byte, 64), verbs.AccessLocalWrite)
	d := pd.ctx.dev
	if n := testing.AllocsPerRun(100, func() {
		d.lookupLKeyLocked(pd, mr.LKey(), mr.IOVA(), 64, verbs.AccessLocalWrite)
		d.lookupRKeyLocked(pd, mr.RKey(), mr.IOVA(), 64, 0)
	}); n != 0 {
		t.Errorf("a lookup allocates %v times", n)
	}
}
