package conformance_test

import (
	"errors"
	"sync"
	"syscall"

	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// pdTracker counts the live MRs and AHs of each (inner) PD, for mutants
// whose dealloc or dereg decisions depend on them.
type pdTracker struct {
	mu   sync.Mutex
	mrs  map[verbs.PD]int
	ahs  map[verbs.PD]int
	mrPD map[verbs.MR]verbs.PD
	ahPD map[verbs.AH]verbs.PD
}

func newPDTracker() *pdTracker {
	return &pdTracker{
		mrs: map[verbs.PD]int{}, ahs: map[verbs.PD]int{},
		mrPD: map[verbs.MR]verbs.PD{}, ahPD: map[verbs.AH]verbs.PD{},
	}
}

// hooks returns hooks that keep the counts, with dealloc and dereg decided
// by the given functions (nil: forward).
func (tr *pdTracker) hooks(dealloc func(pd verbs.PD, mrs, ahs, all int) error, dereg func(m verbs.MR, siblings int) error) hooks {
	return hooks{
		regMR: func(pd verbs.PD, buf []byte, access verbs.AccessFlags) (verbs.MR, error) {
			mr, err := pd.RegMR(buf, access)
			if err == nil {
				tr.mu.Lock()
				tr.mrs[pd]++
				tr.mrPD[mr] = pd
				tr.mu.Unlock()
			}
			return mr, err
		},
		deregMR: func(m verbs.MR) error {
			tr.mu.Lock()
			pd := tr.mrPD[m]
			siblings := tr.mrs[pd] - 1
			tr.mu.Unlock()
			var err error
			if dereg != nil {
				err = dereg(m, siblings)
			} else {
				err = m.Dereg()
			}
			if err == nil {
				tr.mu.Lock()
				if _, ok := tr.mrPD[m]; ok {
					delete(tr.mrPD, m)
					tr.mrs[pd]--
				}
				tr.mu.Unlock()
			}
			return err
		},
		createAH: func(pd verbs.PD, attr verbs.AHAttr) (verbs.AH, error) {
			ah, err := pd.CreateAH(attr)
			if err == nil {
				tr.mu.Lock()
				tr.ahs[pd]++
				tr.ahPD[ah] = pd
				tr.mu.Unlock()
			}
			return ah, err
		},
		destroyAH: func(ah verbs.AH) error {
			err := ah.Destroy()
			if err == nil {
				tr.mu.Lock()
				if pd, ok := tr.ahPD[ah]; ok {
					delete(tr.ahPD, ah)
					tr.ahs[pd]--
				}
				tr.mu.Unlock()
			}
			return err
		},
		deallocPD: func(pd verbs.PD) error {
			if dealloc == nil {
				return pd.Dealloc()
			}
			tr.mu.Lock()
			all := len(tr.mrPD) + len(tr.ahPD)
			mrs, ahs := tr.mrs[pd], tr.ahs[pd]
			tr.mu.Unlock()
			return dealloc(pd, mrs, ahs, all)
		},
	}
}

// ghostPD is what a broken alloc returns along with its error.
type ghostPD struct{}

func (ghostPD) RegMR([]byte, verbs.AccessFlags) (verbs.MR, error) {
	return nil, verr.New("ibv_reg_mr", syscall.EINVAL, "ghost PD")
}
func (ghostPD) CreateAH(verbs.AHAttr) (verbs.AH, error) {
	return nil, verr.New("ibv_create_ah", syscall.EINVAL, "ghost PD")
}
func (ghostPD) AllocMW(verbs.MWType) (verbs.MW, error) {
	return nil, verr.New("ibv_alloc_mw", syscall.EINVAL, "ghost PD")
}
func (ghostPD) Context() verbs.Context { return nil }
func (ghostPD) Handle() uint32         { return 0 }
func (ghostPD) Dealloc() error         { return nil }

func busy(verb string) error { return verr.New(verb, syscall.EBUSY, "mutant: busy") }

// pdMutants returns the mutants of the PD family.
func pdMutants() []mutant {
	return []mutant{
		// PD-01: the result of ibv_alloc_pd.
		{
			name:  "alloc_pd returns a PD along with its error",
			rules: []string{"PD-01"},
			h: hooks{allocPD: func(c verbs.Context) (verbs.PD, error) {
				pd, err := c.AllocPD()
				if err != nil {
					return ghostPD{}, err
				}
				return pd, nil
			}},
		},
		{
			name:  "dealloc_pd twice succeeds",
			rules: []string{"PD-01"},
			h: hooks{deallocPD: func(pd verbs.PD) error {
				if err := pd.Dealloc(); !errors.Is(err, syscall.EINVAL) {
					return err
				}
				return nil
			}},
		},
		{
			name:  "max_pd counted per context",
			rules: []string{"PD-01"},
			h: func() hooks {
				var mu sync.Mutex
				extra := map[verbs.Context]bool{}
				return hooks{allocPD: func(c verbs.Context) (verbs.PD, error) {
					pd, err := c.AllocPD()
					if errors.Is(err, syscall.ENOMEM) {
						// Pretend this context still had room: hand out
						// a PD of the context's own, as if the limit did
						// not apply across contexts.
						mu.Lock()
						defer mu.Unlock()
						if !extra[c] {
							extra[c] = true
							return ghostPD{}, nil
						}
					}
					return pd, err
				}}
			}(),
		},

		// PD-02, PD-03, PD-05: what keeps a PD alive.
		{
			name:  "dealloc_pd succeeds while objects belong to the PD",
			rules: []string{"PD-02", "PD-03", "PD-05", "MR-06"},
			h: hooks{deallocPD: func(pd verbs.PD) error {
				if err := pd.Dealloc(); !errors.Is(err, syscall.EBUSY) {
					return err
				}
				return nil
			}},
		},
		{
			name:  "AHs do not keep their PD",
			rules: []string{"PD-02", "PD-03", "PD-05"},
			h: newPDTracker().hooks(func(pd verbs.PD, mrs, ahs, all int) error {
				err := pd.Dealloc()
				if errors.Is(err, syscall.EBUSY) && mrs == 0 {
					return nil
				}
				return err
			}, nil),
		},
		{
			name:  "MRs do not keep their PD",
			rules: []string{"PD-02", "PD-03", "PD-05", "MR-06"},
			h: newPDTracker().hooks(func(pd verbs.PD, mrs, ahs, all int) error {
				err := pd.Dealloc()
				if errors.Is(err, syscall.EBUSY) && ahs == 0 {
					return nil
				}
				return err
			}, nil),
		},
		{
			name:  "objects keep every PD of the context",
			rules: []string{"PD-03", "PD-05"},
			h: newPDTracker().hooks(func(pd verbs.PD, mrs, ahs, all int) error {
				if all > 0 {
					return busy("ibv_dealloc_pd")
				}
				return pd.Dealloc()
			}, nil),
		},
		{
			name:  "dereg_mr refused while the PD has other MRs",
			rules: []string{"PD-05", "PD-02"},
			h: newPDTracker().hooks(nil, func(m verbs.MR, siblings int) error {
				if siblings > 0 {
					return busy("ibv_dereg_mr")
				}
				return m.Dereg()
			}),
		},
		{
			name:  "dereg_mr twice succeeds",
			rules: []string{"PD-02"},
			h: hooks{deregMR: func(m verbs.MR) error {
				if err := m.Dereg(); !errors.Is(err, syscall.EINVAL) {
					return err
				}
				return nil
			}},
		},
		{
			name:  "destroy_ah twice succeeds",
			rules: []string{"PD-02"},
			h: hooks{destroyAH: func(ah verbs.AH) error {
				if err := ah.Destroy(); !errors.Is(err, syscall.EINVAL) {
					return err
				}
				return nil
			}},
		},
	}
}
