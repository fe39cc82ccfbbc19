package conformance_test

import (
	"errors"
	"syscall"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// dmHooks break device memory (verbs.DMAllocator, verbs.DMMRRegisterer);
// each gets the inner context, DM or PD.
type dmHooks struct {
	alloc      func(c verbs.DMAllocator, attr verbs.AllocDMAttr) (verbs.DM, error)
	free       func(dm verbs.DM) error
	memcpyTo   func(dm verbs.DM, off uint64, src []byte) error
	memcpyFrom func(dm verbs.DM, dst []byte, off uint64) error
	reg        func(pd verbs.DMMRRegisterer, dm verbs.DM, off, n uint64, access verbs.AccessFlags) (verbs.MR, error)
}

// mDM wraps device memory so that its verbs can be hooked.
type mDM struct {
	inner verbs.DM
	h     *hooks
}

func (d *mDM) MemcpyTo(off uint64, src []byte) error {
	if d.h.dm != nil && d.h.dm.memcpyTo != nil {
		return d.h.dm.memcpyTo(d.inner, off, src)
	}
	return d.inner.MemcpyTo(off, src)
}

func (d *mDM) MemcpyFrom(dst []byte, off uint64) error {
	if d.h.dm != nil && d.h.dm.memcpyFrom != nil {
		return d.h.dm.memcpyFrom(d.inner, dst, off)
	}
	return d.inner.MemcpyFrom(dst, off)
}

func (d *mDM) Free() error {
	if d.h.dm != nil && d.h.dm.free != nil {
		return d.h.dm.free(d.inner)
	}
	return d.inner.Free()
}

// AllocDM implements verbs.DMAllocator.
func (c *mContext) AllocDM(attr verbs.AllocDMAttr) (verbs.DM, error) {
	inner, ok := c.inner.(verbs.DMAllocator)
	if !ok {
		return nil, errors.ErrUnsupported
	}
	var dm verbs.DM
	var err error
	if c.h.dm != nil && c.h.dm.alloc != nil {
		dm, err = c.h.dm.alloc(inner, attr)
	} else {
		dm, err = inner.AllocDM(attr)
	}
	if dm == nil {
		return nil, err
	}
	return &mDM{inner: dm, h: c.h}, err
}

// RegDMMR implements verbs.DMMRRegisterer: the DM is unwrapped, the MR
// wrapped.
func (p *mPD) RegDMMR(dm verbs.DM, off, n uint64, access verbs.AccessFlags) (verbs.MR, error) {
	inner, ok := p.inner.(verbs.DMMRRegisterer)
	if !ok {
		return nil, errors.ErrUnsupported
	}
	if w, ok := dm.(*mDM); ok {
		dm = w.inner
	}
	var mr verbs.MR
	var err error
	if p.h.dm != nil && p.h.dm.reg != nil {
		mr, err = p.h.dm.reg(inner, dm, off, n, access)
	} else {
		mr, err = inner.RegDMMR(dm, off, n, access)
	}
	if mr == nil {
		return nil, err
	}
	return &mMR{MR: mr, h: p.h}, err
}

// dmMutants returns the mutants of the DM family.
func dmMutants() []mutant {
	return []mutant{
		{
			name: "ibv_alloc_dm ignores comp_mask", rules: []string{"DM-01"},
			h: hooks{dm: &dmHooks{alloc: func(c verbs.DMAllocator, a verbs.AllocDMAttr) (verbs.DM, error) {
				a.CompMask = 0
				return c.AllocDM(a)
			}}},
		},
		{
			name: "ibv_alloc_dm clamps a length above max_dm_size", rules: []string{"DM-01"},
			h: hooks{dm: &dmHooks{alloc: func(c verbs.DMAllocator, a verbs.AllocDMAttr) (verbs.DM, error) {
				a.Length = min(a.Length, 128<<10)
				return c.AllocDM(a)
			}}},
		},
		{
			name: "a device that states NoDM still reports and allocates device memory", rules: []string{"DM-02"}, base: sim.DefaultProfile(),
			h: hooks{profile: func(p verbs.Readings) verbs.Readings { p.NoDM = true; return p }},
		},
		{
			name: "ibv_alloc_dm out of pages says EINVAL", rules: []string{"DM-03"},
			h: hooks{dm: &dmHooks{alloc: func(c verbs.DMAllocator, a verbs.AllocDMAttr) (verbs.DM, error) {
				dm, err := c.AllocDM(a)
				if errors.Is(err, syscall.ENOMEM) {
					err = syscall.EINVAL
				}
				return dm, err
			}}},
		},
		{
			name: "ibv_memcpy_to_dm rounds an unaligned offset and length down", rules: []string{"DM-04"},
			h: hooks{dm: &dmHooks{memcpyTo: func(dm verbs.DM, off uint64, src []byte) error {
				return dm.MemcpyTo(off&^3, src[:len(src)&^3])
			}}},
		},
		{
			name: "ibv_memcpy_from_dm says EINVAL for any bad range", rules: []string{"DM-04"},
			h: hooks{dm: &dmHooks{memcpyFrom: func(dm verbs.DM, dst []byte, off uint64) error {
				err := dm.MemcpyFrom(dst, off)
				if errors.Is(err, syscall.EFAULT) {
					err = syscall.EINVAL
				}
				return err
			}}},
		},
		{
			name: "ibv_free_dm of memory with an MR reports success", rules: []string{"DM-05"},
			h: hooks{dm: &dmHooks{free: func(dm verbs.DM) error {
				if err := dm.Free(); !errors.Is(err, syscall.EBUSY) {
					return err
				}
				return nil
			}}},
		},
		{
			name: "ibv_reg_dm_mr adds ZERO_BASED when it is missing", rules: []string{"DM-06"},
			h: hooks{dm: &dmHooks{reg: func(pd verbs.DMMRRegisterer, dm verbs.DM, off, n uint64, access verbs.AccessFlags) (verbs.MR, error) {
				return pd.RegDMMR(dm, off, n, access|verbs.AccessZeroBased)
			}}},
		},
		{
			name: "ibv_reg_dm_mr registers from the start of the DM whatever the offset", rules: []string{"DM-07"},
			h: hooks{dm: &dmHooks{reg: func(pd verbs.DMMRRegisterer, dm verbs.DM, off, n uint64, access verbs.AccessFlags) (verbs.MR, error) {
				return pd.RegDMMR(dm, 0, n, access)
			}}},
		},
	}
}
