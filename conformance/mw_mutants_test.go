package conformance_test

import (
	"errors"
	"sync"
	"syscall"

	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// Mutants of the memory-window rules (MW-01..MW-07).

// widen makes a bind cover the whole MR: the window then ignores its range.
func widen(info *verbs.MWBindInfo) {
	if mr := info.MR; mr != nil && info.Length > 0 {
		info.Addr, info.Length = mr.Addr(), mr.Length()
	}
}

func mwMutants() []mutant {
	// pdsWithMW remembers the PDs that ever had a window, for the PD-02
	// mutant.
	var mu sync.Mutex
	pdsWithMW := map[verbs.PD]bool{}
	return []mutant{
		{name: "ibv_alloc_mw takes any type as type 1", rules: []string{"MW-01"}, h: hooks{
			allocMW: func(pd verbs.PD, typ verbs.MWType) (verbs.MW, error) {
				if typ != 2 {
					typ = 1
				}
				return pd.AllocMW(typ)
			}}},
		{name: "ibv_dealloc_pd with windows says EINVAL, not EBUSY", rules: []string{"MW-02"}, h: hooks{
			allocMW: func(pd verbs.PD, typ verbs.MWType) (verbs.MW, error) {
				mu.Lock()
				pdsWithMW[pd] = true
				mu.Unlock()
				return pd.AllocMW(typ)
			},
			deallocPD: func(pd verbs.PD) error {
				err := pd.Dealloc()
				mu.Lock()
				defer mu.Unlock()
				if errors.Is(err, syscall.EBUSY) && pdsWithMW[pd] {
					return verr.New("ibv_dealloc_pd", syscall.EINVAL, "mutant")
				}
				return err
			}}},
		{name: "ibv_dereg_mr of a held MR reports success and keeps it", rules: []string{"MR-06", "MW-03"}, h: hooks{
			deregMR: func(mr verbs.MR) error {
				_ = mr.Dereg() // a refusal is hidden
				return nil
			}}},
		eachWC("BIND_MW completes as SEND", []string{"MW-04"}, func(tr *wireTracker, q verbs.CQ, c *verbs.WC) {
			if c.Status == verbs.WCSuccess && c.Opcode == verbs.WCBindMW {
				c.Opcode = verbs.WCSend
			}
		}),
		statusMutant(verbs.WCMWBindErr, verbs.WCLocQPOpErr, "MW-05"),
		{name: "binds cover the whole MR", rules: []string{"MW-06"}, h: hooks{
			postSend: func(q verbs.QP, wrs []verbs.SendWR) (int, error) {
				wrs = append([]verbs.SendWR(nil), wrs...)
				for i := range wrs {
					if wrs[i].Opcode == verbs.WRBindMW {
						widen(&wrs[i].Bind)
					}
				}
				return q.PostSend(wrs)
			},
			bindMW: func(q verbs.QP, mw verbs.MW, wrID uint64, flags verbs.SendFlags, info verbs.MWBindInfo) error {
				widen(&info)
				return q.BindMW(mw, wrID, flags, info)
			}}},
		{name: "a type 2 bind whose new rkey has another index fails", rules: []string{"MW-05"}, h: hooks{
			// The check verbsim made before it followed the providers,
			// which take the key's low byte and keep the window's index.
			postSend: func(q verbs.QP, wrs []verbs.SendWR) (int, error) {
				wrs = append([]verbs.SendWR(nil), wrs...)
				for i := range wrs {
					if w := &wrs[i]; w.Opcode == verbs.WRBindMW && w.MW != nil && w.RKey>>8 != w.MW.RKey()>>8 {
						w.Bind.Length = 0 // a type 2 bind of length 0 fails (MW_BIND_ERR)
					}
				}
				return q.PostSend(wrs)
			}}},
		{name: "the device states the other ZERO_BASED type 1 reading", rules: []string{"MW-05"}, h: hooks{
			profile: func(p verbs.Readings) verbs.Readings {
				p.MWType1NoZeroBased = !p.MWType1NoZeroBased
				return p
			}}},
		{name: "the device states the other errno of a refused dereg", rules: []string{"MW-03"}, h: hooks{
			profile: func(p verbs.Readings) verbs.Readings { p.DeregBoundEINVAL = !p.DeregBoundEINVAL; return p }}},
		{name: "LOCAL_INV names the wrong key", rules: []string{"MW-07"}, h: hooks{
			postSend: func(q verbs.QP, wrs []verbs.SendWR) (int, error) {
				wrs = append([]verbs.SendWR(nil), wrs...)
				for i := range wrs {
					if wrs[i].Opcode == verbs.WRLocalInv {
						wrs[i].Imm ^= 0x100
					}
				}
				return q.PostSend(wrs)
			}}},
	}
}
