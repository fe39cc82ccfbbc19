package conformance

import "github.com/verbsim/verbsim/verbs"

// Memory windows (MW-01..MW-07) are optional: a device that has them
// implements MWAllocator on its PDs and MWBinder on its QPs. Without them
// the MW cases log that they checked nothing.

// MWAllocator is an optional capability of a PD: ibv_alloc_mw.
type MWAllocator interface {
	// AllocMW is ibv_alloc_mw with the enum ibv_mw_type value typ (1 or
	// 2; others must fail with EINVAL).
	AllocMW(typ uint32) (MW, error)
}

// MW is a memory window: verbs.MW, the value a BIND_MW work request
// carries in verbs.SendWR.MW.
type MW = verbs.MW

// MWBinder is an optional capability of a QP: ibv_bind_mw, which binds a
// type 1 window by posting a BIND_MW work request. info.MR is an MR of
// the device (as RegMR returned it).
type MWBinder interface {
	BindMW(mw MW, wrID uint64, flags verbs.SendFlags, info verbs.MWBindInfo) error
}
