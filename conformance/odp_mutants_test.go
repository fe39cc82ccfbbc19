package conformance_test

import (
	"errors"
	"syscall"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// AdviseMR implements verbs.MRAdviser: ibv_advise_mr of the wrapped PD, or
// the mutant's.
func (p *mPD) AdviseMR(advice verbs.AdviseMRAdvice, flags verbs.AdviseMRFlags, sgl []verbs.SGE) error {
	if p.h.adviseMR != nil {
		return p.h.adviseMR(p.inner, advice, flags, sgl)
	}
	return p.inner.(verbs.MRAdviser).AdviseMR(advice, flags, sgl)
}

// adviseFwd forwards ibv_advise_mr after edit rewrites the call.
func adviseFwd(edit func(a *verbs.AdviseMRAdvice, f *verbs.AdviseMRFlags, sgl *[]verbs.SGE)) func(verbs.PD, verbs.AdviseMRAdvice, verbs.AdviseMRFlags, []verbs.SGE) error {
	return func(pd verbs.PD, a verbs.AdviseMRAdvice, f verbs.AdviseMRFlags, sgl []verbs.SGE) error {
		edit(&a, &f, &sgl)
		return pd.(verbs.MRAdviser).AdviseMR(a, f, sgl)
	}
}

// adviseErrno forwards ibv_advise_mr and turns errno from into to (0: success).
func adviseErrno(from, to syscall.Errno) func(verbs.PD, verbs.AdviseMRAdvice, verbs.AdviseMRFlags, []verbs.SGE) error {
	return func(pd verbs.PD, a verbs.AdviseMRAdvice, f verbs.AdviseMRFlags, sgl []verbs.SGE) error {
		err := pd.(verbs.MRAdviser).AdviseMR(a, f, sgl)
		if errors.Is(err, from) {
			if to == 0 {
				return nil
			}
			return to
		}
		return err
	}
}

// odpCaps rewrites what ibv_query_device_ex reports of ODP.
func odpCaps(c verbs.ODPCaps, xrc uint32) func(verbs.Context, uint32) (verbs.DeviceAttrEx, error) {
	return func(ctx verbs.Context, m uint32) (verbs.DeviceAttrEx, error) {
		a, err := ctx.(verbs.ExQuerier).QueryDeviceEx(m)
		a.ODPCaps, a.XRCODPCaps = c, xrc
		return a, err
	}
}

// odpMutants returns the mutants of on-demand paging (ODP-01 to ODP-06).
func odpMutants() []mutant {
	const onDemand = verbs.AccessOnDemand
	return []mutant{
		{
			name: "a device without ODP reports IBV_ODP_SUPPORT", rules: []string{"ODP-01"}, base: sim.RXEProfile(),
			h: hooks{queryDevEx: odpCaps(verbs.ODPCaps{GeneralCaps: 1, RCODPCaps: 3}, 0)},
		},
		{
			name: "a device with ODP reports no odp_caps", rules: []string{"ODP-01"},
			h: hooks{queryDevEx: odpCaps(verbs.ODPCaps{}, 0)},
		},
		{
			name: "a device with ODP claims SRQ receives for UC", rules: []string{"ODP-01"},
			h: hooks{queryDevEx: odpCaps(verbs.ODPCaps{GeneralCaps: 1, RCODPCaps: 0x3f, UCODPCaps: 0x27, UDODPCaps: 0x23}, 0x3d)},
		},
		{
			name: "ON_DEMAND without ODP is EINVAL, not EOPNOTSUPP", rules: []string{"ODP-02"}, base: sim.RXEProfile(),
			h: hooks{regMR: func(pd verbs.PD, buf []byte, a verbs.AccessFlags) (verbs.MR, error) {
				if a&onDemand != 0 {
					return nil, syscall.EINVAL
				}
				return pd.RegMR(buf, a)
			}},
		},
		{
			name: "ON_DEMAND without ODP is dropped and the MR registers", rules: []string{"ODP-02"}, base: sim.RXEProfile(),
			h: hooks{regMR: func(pd verbs.PD, buf []byte, a verbs.AccessFlags) (verbs.MR, error) {
				return pd.RegMR(buf, a&^onDemand)
			}},
		},
		{
			name: "ON_DEMAND is checked before LOCAL_WRITE", rules: []string{"ODP-02"}, base: sim.RXEProfile(),
			h: hooks{regMR: func(pd verbs.PD, buf []byte, a verbs.AccessFlags) (verbs.MR, error) {
				if a&onDemand != 0 {
					return nil, syscall.EOPNOTSUPP
				}
				return pd.RegMR(buf, a)
			}},
		},
		{
			name: "an on-demand MR pages in a copy of the buffer", rules: []string{"ODP-03"},
			h: hooks{regMR: func(pd verbs.PD, buf []byte, a verbs.AccessFlags) (verbs.MR, error) {
				if a&onDemand != 0 {
					buf = append([]byte(nil), buf...)
				}
				return pd.RegMR(buf, a)
			}},
		},
		{
			name: "ibv_advise_mr accepts an empty list", rules: []string{"ODP-04"},
			h: hooks{adviseMR: func(pd verbs.PD, a verbs.AdviseMRAdvice, f verbs.AdviseMRFlags, sgl []verbs.SGE) error {
				if len(sgl) == 0 && f <= 1 && a <= 2 {
					return nil
				}
				return pd.(verbs.MRAdviser).AdviseMR(a, f, sgl)
			}},
		},
		{
			name: "ibv_advise_mr ignores unknown flags", rules: []string{"ODP-04"},
			h: hooks{adviseMR: adviseFwd(func(_ *verbs.AdviseMRAdvice, f *verbs.AdviseMRFlags, _ *[]verbs.SGE) { *f &= 1 })},
		},
		{
			name: "ibv_advise_mr refuses an unknown advice with EINVAL", rules: []string{"ODP-04"},
			h: hooks{adviseMR: adviseErrno(syscall.EOPNOTSUPP, syscall.EINVAL)},
		},
		{
			name: "ibv_advise_mr accepts keys of no on-demand MR", rules: []string{"ODP-05"},
			h: hooks{adviseMR: adviseErrno(syscall.ENOENT, 0)},
		},
		{
			name: "ibv_advise_mr says ENOENT where the kernel says EPERM", rules: []string{"ODP-05"},
			h: hooks{adviseMR: adviseErrno(syscall.EPERM, syscall.ENOENT)},
		},
		{
			name: "ibv_advise_mr treats PREFETCH_WRITE as PREFETCH", rules: []string{"ODP-05"},
			h: hooks{adviseMR: adviseFwd(func(a *verbs.AdviseMRAdvice, _ *verbs.AdviseMRFlags, _ *[]verbs.SGE) {
				if *a == 1 {
					*a = 0
				}
			})},
		},
		{
			name: "ibv_advise_mr checks no range even with FLUSH", rules: []string{"ODP-06"},
			h: hooks{adviseMR: adviseFwd(func(_ *verbs.AdviseMRAdvice, f *verbs.AdviseMRFlags, _ *[]verbs.SGE) { *f &^= 1 })},
		},
		{
			name: "ibv_advise_mr checks the ranges without FLUSH too", rules: []string{"ODP-06"},
			h: hooks{adviseMR: adviseFwd(func(_ *verbs.AdviseMRAdvice, f *verbs.AdviseMRFlags, _ *[]verbs.SGE) { *f |= 1 })},
		},
	}
}
