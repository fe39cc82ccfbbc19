package conformance_test

import (
	"sync/atomic"
	"syscall"

	"github.com/verbsim/verbsim/conformance"
	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// lyingMR reports other fields than the MR it wraps; nil funcs forward.
type lyingMR struct {
	verbs.MR
	lkey, rkey func() uint32
	addr, size func() uint64
}

func (m lyingMR) LKey() uint32 {
	if m.lkey != nil {
		return m.lkey()
	}
	return m.MR.LKey()
}

func (m lyingMR) RKey() uint32 {
	if m.rkey != nil {
		return m.rkey()
	}
	return m.MR.RKey()
}

func (m lyingMR) Addr() uint64 {
	if m.addr != nil {
		return m.addr()
	}
	return m.MR.Addr()
}

func (m lyingMR) Length() uint64 {
	if m.size != nil {
		return m.size()
	}
	return m.MR.Length()
}

// regLying returns a regMR hook that wraps every MR with lie.
func regLying(lie func(verbs.MR) verbs.MR) func(verbs.PD, []byte, verbs.AccessFlags) (verbs.MR, error) {
	return func(pd verbs.PD, buf []byte, access verbs.AccessFlags) (verbs.MR, error) {
		mr, err := pd.RegMR(buf, access)
		if err != nil {
			return nil, err
		}
		return lie(mr), nil
	}
}

// regAccess returns a regMR hook that refuses the access values refuse
// selects (with EINVAL) and registers the others as fix rewrites them.
func regAccess(refuse func(uint32) bool, fix func(uint32) uint32) func(verbs.PD, []byte, verbs.AccessFlags) (verbs.MR, error) {
	return func(pd verbs.PD, buf []byte, access verbs.AccessFlags) (verbs.MR, error) {
		if refuse != nil && refuse(uint32(access)) {
			return nil, verr.New("ibv_reg_mr", syscall.EINVAL, "mutant: refused")
		}
		if fix != nil {
			access = verbs.AccessFlags(fix(uint32(access)))
		}
		return pd.RegMR(buf, access)
	}
}

// mrMutants returns the mutants of the MR family, through the hooks on
// ibv_reg_mr and ibv_dereg_mr and MRs that misreport their fields.
func mrMutants() []mutant {
	var serial atomic.Uint64
	return []mutant{
		// MR-01, MR-05: which access combinations register.
		{
			name:  "remote write registers without local write",
			rules: []string{"MR-01", "MR-05"},
			h: hooks{regMR: regAccess(nil, func(a uint32) uint32 {
				if a&2 != 0 {
					a |= 1
				}
				return a
			})},
		},
		{
			name:  "remote atomic registers without local write",
			rules: []string{"MR-01", "MR-05"},
			h: hooks{regMR: regAccess(nil, func(a uint32) uint32 {
				if a&8 != 0 {
					a |= 1
				}
				return a
			})},
		},
		{
			name:  "remote read requires local write",
			rules: []string{"MR-01", "MR-05"},
			h:     hooks{regMR: regAccess(func(a uint32) bool { return a&4 != 0 && a&1 == 0 }, nil)},
		},
		{
			name:  "REMOTE_WRITE and REMOTE_READ values swapped",
			rules: []string{"MR-01", "MR-05"},
			h: hooks{regMR: regAccess(nil, func(a uint32) uint32 {
				return a&^6 | (a&2)<<1 | (a&4)>>1
			})},
		},
		{
			name:  "ZERO_BASED refused",
			rules: []string{"MR-05"},
			h:     hooks{regMR: regAccess(func(a uint32) bool { return a&32 != 0 }, nil)},
		},

		// MR-02: access 0.
		{
			name:  "access 0 refused",
			rules: []string{"MR-02", "MR-01"},
			h:     hooks{regMR: regAccess(func(a uint32) bool { return a == 0 }, nil)},
		},

		// MR-04: keys, address and length.
		{
			name:  "every MR has the same lkey",
			rules: []string{"MR-04"},
			h: hooks{regMR: regLying(func(m verbs.MR) verbs.MR {
				return lyingMR{MR: m, lkey: func() uint32 { return 0x1234 }}
			})},
		},
		{
			name:  "every MR has the same rkey",
			rules: []string{"MR-04"},
			h: hooks{regMR: regLying(func(m verbs.MR) verbs.MR {
				return lyingMR{MR: m, rkey: func() uint32 { return 0x5678 }}
			})},
		},
		{
			name:  "length reported one short",
			rules: []string{"MR-04", "MR-02"},
			h: hooks{regMR: regLying(func(m verbs.MR) verbs.MR {
				return lyingMR{MR: m, size: func() uint64 { return m.Length() - 1 }}
			})},
		},
		{
			name:  "every MR starts at the same address",
			rules: []string{"MR-04"},
			h: hooks{regMR: regLying(func(m verbs.MR) verbs.MR {
				return lyingMR{MR: m, addr: func() uint64 { return 0x10000 }}
			})},
		},
		{
			name:  "a buffer registered twice gets two addresses",
			rules: []string{"MR-04"},
			h: hooks{regMR: regLying(func(m verbs.MR) verbs.MR {
				shift := serial.Add(1) << 40
				return lyingMR{MR: m, addr: func() uint64 { return m.Addr() + shift }}
			})},
		},
		{
			name:  "a dereg renumbers the other MRs",
			rules: []string{"MR-04"},
			h: func() hooks {
				var gen atomic.Uint32
				return hooks{
					regMR: regLying(func(m verbs.MR) verbs.MR {
						return lyingMR{MR: m, lkey: func() uint32 { return m.LKey() + gen.Load() }}
					}),
					deregMR: func(m verbs.MR) error {
						gen.Add(1)
						return m.Dereg()
					},
				}
			}(),
		},

		// MR-06: bound windows.
		{
			name:  "dereg ignores bound windows",
			rules: []string{"MR-06"},
			h: hooks{deregMR: func(m verbs.MR) error {
				if r, ok := m.(conformance.Referencer); ok {
					r.Unref()
				}
				return m.Dereg()
			}},
		},
		{
			name:  "a refused dereg still frees the MR",
			rules: []string{"MR-06"},
			h: hooks{deregMR: func(m verbs.MR) error {
				err := m.Dereg()
				if err != nil {
					if r, ok := m.(conformance.Referencer); ok {
						r.Unref()
						_ = m.Dereg()
					}
				}
				return err
			}},
		},

		// MR-09: unknown and optional bits.
		{
			name:  "unknown access bits ignored",
			rules: []string{"MR-09"},
			h:     hooks{regMR: regAccess(nil, func(a uint32) uint32 { return a & 0x3ff000ff })},
		},
		{
			name:  "optional-range bits beyond RELAXED_ORDERING refused",
			rules: []string{"MR-09"},
			h:     hooks{regMR: regAccess(func(a uint32) bool { return a&0x3fe00000 != 0 }, nil)},
		},
	}
}
