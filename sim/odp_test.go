package sim

import (
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/verbs"
)

// odpPD returns a PD on a fresh device of a fabric under p.
func odpPD(t *testing.T, p Profile) *PD {
	t.Helper()
	f, err := NewFabric(Config{Profile: p})
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

// TestODPCaps_ODP01: the default profile reports ODP for every operation
// of each transport and no implicit ODP; NoODP reports zeros, and a
// profile without XRC reports no XRC caps.
func TestODPCaps_ODP01(t *testing.T) {
	noXRC := DefaultProfile()
	noXRC.NoXRC = true
	for _, c := range []struct {
		p   Profile
		odp verbs.ODPCaps
		xrc uint32
	}{
		{DefaultProfile(), verbs.ODPCaps{GeneralCaps: verbs.ODPSupport, RCODPCaps: 0x3f, UCODPCaps: 0x7, UDODPCaps: 0x23}, 0x3d},
		{noXRC, verbs.ODPCaps{GeneralCaps: verbs.ODPSupport, RCODPCaps: 0x3f, UCODPCaps: 0x7, UDODPCaps: 0x23}, 0},
		{RXEProfile(), verbs.ODPCaps{}, 0},
	} {
		a, err := odpPD(t, c.p).ctx.QueryDeviceEx(0)
		if err != nil {
			t.Fatal(err)
		}
		if a.ODPCaps != c.odp || a.XRCODPCaps != c.xrc {
			t.Errorf("%s: odp_caps %+v xrc_odp_caps %#x, want %+v %#x", c.p.Name, a.ODPCaps, a.XRCODPCaps, c.odp, c.xrc)
		}
	}
}

// TestODPRegister_ODP02: ON_DEMAND registers where the profile has ODP and
// is EOPNOTSUPP where it has not, for ibv_reg_mr, ibv_reg_mr_iova and
// ibv_rereg_mr with CHANGE_ACCESS; the access check of MR-01 comes first.
func TestODPRegister_ODP02(t *testing.T) {
	for _, p := range Profiles() {
		t.Run(p.Name, func(t *testing.T) {
			pd := odpPD(t, p)
			want := syscall.Errno(0)
			if p.NoODP {
				want = syscall.EOPNOTSUPP
			}
			buf := make([]byte, 256)
			mr, err := pd.RegMR(buf, verbs.AccessLocalWrite|verbs.AccessOnDemand)
			if !errnoIs(err, want) {
				t.Fatalf("RegMR ON_DEMAND: %v, want %v", err, want)
			}
			if err == nil {
				if mr.Access()&verbs.AccessOnDemand == 0 {
					t.Errorf("access %v lost ON_DEMAND", mr.Access())
				}
				if err := mr.Dereg(); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := pd.RegMRIOVA(buf, 0x7000, verbs.AccessOnDemand); !errnoIs(err, want) {
				t.Errorf("RegMRIOVA ON_DEMAND: %v, want %v", err, want)
			}
			if _, err := pd.RegMR(buf, verbs.AccessRemoteWrite|verbs.AccessOnDemand); !errnoIs(err, syscall.EINVAL) {
				t.Errorf("REMOTE_WRITE|ON_DEMAND without LOCAL_WRITE: %v, want EINVAL (MR-01 first)", err)
			}
			plain, err := pd.RegMR(buf, verbs.AccessLocalWrite)
			if err != nil {
				t.Fatal(err)
			}
			if p.NoRereg {
				return // no ibv_rereg_mr at all (MR-18)
			}
			err = plain.Rereg(verbs.ReregChangeAccess, nil, nil, verbs.AccessLocalWrite|verbs.AccessOnDemand)
			if !errnoIs(err, want) {
				t.Errorf("Rereg to ON_DEMAND: %v, want %v", err, want)
			}
			if want != 0 && ReregFailureOf(err) != verbs.ReregErrCmd {
				t.Errorf("Rereg to ON_DEMAND: failure %v, want IBV_REREG_MR_ERR_CMD", ReregFailureOf(err))
			}
		})
	}
}

// TestAdviseMR_ODP04: the argument checks of ibv_advise_mr and their order.
func TestAdviseMR_ODP04(t *testing.T) {
	pd := odpPD(t, DefaultProfile())
	mr, err := pd.RegMR(make([]byte, 100), verbs.AccessLocalWrite|verbs.AccessOnDemand)
	if err != nil {
		t.Fatal(err)
	}
	ok := []verbs.SGE{{Addr: mr.IOVA(), Length: 100, LKey: mr.LKey()}}
	bad := []verbs.SGE{{LKey: 0xffffff01}}
	for _, c := range []struct {
		name   string
		advice verbs.AdviseMRAdvice
		flags  verbs.AdviseMRFlags
		sgl    []verbs.SGE
		want   syscall.Errno
	}{
		{"prefetch", verbs.AdvisePrefetch, 0, ok, 0},
		{"prefetch write flush", verbs.AdvisePrefetchWrite, verbs.AdviseMRFlagFlush, ok, 0},
		{"no fault", verbs.AdvisePrefetchNoFault, verbs.AdviseMRFlagFlush, ok, 0},
		{"empty list before the flags", verbs.AdvisePrefetch, 2, nil, syscall.EINVAL},
		{"flags before the advice", 7, 2, ok, syscall.EINVAL},
		{"advice before the keys", 7, 0, bad, syscall.EOPNOTSUPP},
		{"first bad SGE wins", verbs.AdvisePrefetch, 0, append(append([]verbs.SGE{}, ok...), bad...), syscall.ENOENT},
	} {
		if err := pd.AdviseMR(c.advice, c.flags, c.sgl); !errnoIs(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	rxe := odpPD(t, RXEProfile())
	if err := rxe.AdviseMR(verbs.AdvisePrefetch, 0, nil); !errnoIs(err, syscall.EOPNOTSUPP) {
		t.Errorf("rxe: %v, want EOPNOTSUPP before any other check", err)
	}
}

// TestAdviseMRRange_ODP06: with FLUSH the range must lie within the pages
// of the MR, counted from its IOVA (ZERO_BASED and hca_va included);
// without it the ranges are not checked.
func TestAdviseMRRange_ODP06(t *testing.T) {
	pd := odpPD(t, DefaultProfile())
	buf := make([]byte, 100)
	for _, c := range []struct {
		name   string
		reg    func() (*MR, error)
		offset uint64 // of the range from the IOVA
		length uint32
		want   syscall.Errno
	}{
		{"whole MR", func() (*MR, error) { return pd.RegMR(buf, verbs.AccessOnDemand) }, 0, 100, 0},
		{"rest of the last page", func() (*MR, error) { return pd.RegMR(buf, verbs.AccessOnDemand) }, 100, 3996, 0},
		{"past the last page", func() (*MR, error) { return pd.RegMR(buf, verbs.AccessOnDemand) }, 100, 3997, syscall.EFAULT},
		{"starts at the page end", func() (*MR, error) { return pd.RegMR(buf, verbs.AccessOnDemand) }, 4096, 0, syscall.EFAULT},
		{"zero based", func() (*MR, error) { return pd.RegMR(buf, verbs.AccessOnDemand|verbs.AccessZeroBased) }, 50, 50, 0},
		{"hca_va", func() (*MR, error) { return pd.RegMRIOVA(make([]byte, 100), 0x5ff0, verbs.AccessOnDemand) }, 0, 16, 0},
		{"hca_va: two pages", func() (*MR, error) { return pd.RegMRIOVA(make([]byte, 100), 0x5ff0, verbs.AccessOnDemand) }, 0, 2*4096 - 0xff0, 0},
		{"hca_va past two pages", func() (*MR, error) { return pd.RegMRIOVA(make([]byte, 100), 0x5ff0, verbs.AccessOnDemand) }, 0, 2*4096 - 0xff0 + 1, syscall.EFAULT},
	} {
		mr, err := c.reg()
		if err != nil {
			t.Fatal(err)
		}
		sgl := []verbs.SGE{{Addr: mr.IOVA() + c.offset, Length: c.length, LKey: mr.LKey()}}
		if err := pd.AdviseMR(verbs.AdvisePrefetch, verbs.AdviseMRFlagFlush, sgl); !errnoIs(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
		if err := pd.AdviseMR(verbs.AdvisePrefetch, 0, sgl); err != nil {
			t.Errorf("%s without FLUSH: %v, want success (the kernel checks no range then)", c.name, err)
		}
		below := []verbs.SGE{{Addr: mr.IOVA() - 1, Length: 1, LKey: mr.LKey()}}
		if mr.IOVA() > 0 {
			if err := pd.AdviseMR(verbs.AdvisePrefetch, verbs.AdviseMRFlagFlush, below); !errnoIs(err, syscall.EFAULT) {
				t.Errorf("%s, below the IOVA: %v, want EFAULT", c.name, err)
			}
		}
		if err := mr.Dereg(); err != nil {
			t.Fatal(err)
		}
	}
}
