package sim

import "github.com/verbsim/verbsim/verbs"

// The verbs views of device memory: a *DM is a verbs.DM as it is.

// AllocDM implements verbs.DMAllocator.
func (v vContext) AllocDM(attr verbs.AllocDMAttr) (verbs.DM, error) {
	dm, err := v.c.AllocDM(attr)
	if err != nil {
		return nil, err
	}
	return dm, nil
}

// RegDMMR implements verbs.DMMRRegisterer. A DM not allocated through
// sim is EINVAL.
func (v vPD) RegDMMR(dm verbs.DM, offset, length uint64, access verbs.AccessFlags) (verbs.MR, error) {
	d, ok := DMOf(dm)
	if !ok {
		return nil, foreign(verbRegDMMR, "DM")
	}
	mr, err := v.pd.RegDMMR(d, offset, length, access)
	if err != nil {
		return nil, err
	}
	return vMR{mr}, nil
}

// DMOf returns the simulator's device memory behind dm, if dm is one.
func DMOf(dm verbs.DM) (*DM, bool) {
	d, ok := dm.(*DM)
	return d, ok && d != nil
}

var (
	_ verbs.DMAllocator    = vContext{}
	_ verbs.DMMRRegisterer = vPD{}
	_ verbs.DM             = (*DM)(nil)
)
