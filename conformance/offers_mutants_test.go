package conformance_test

import (
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// Mutants of what a device offers (conformance/offers.go): devices whose
// profile states one reading while they follow the other, for each reading
// of the provider profiles.
func offersMutants() []mutant {
	says := func(edit func(*verbs.Readings)) hooks {
		return hooks{profile: func(p verbs.Readings) verbs.Readings { edit(&p); return p }}
	}
	return []mutant{
		{name: "the profile says PostAnyState, the device refuses posts before RTS", rules: []string{"QP-25", "QP-26"},
			base: sim.DefaultProfile(), h: says(func(p *verbs.Readings) { p.PostAnyState = true })},
		{name: "the profile refuses posts before RTS, the device accepts them (irdma)", rules: []string{"QP-25", "QP-26"},
			base: sim.IRDMAProfile(), h: says(func(p *verbs.Readings) { p.PostAnyState = false })},
		{name: "the profile says PostENOTCONN, the device refuses posts before RTS with EINVAL", rules: []string{"QP-26"},
			base: sim.DefaultProfile(), h: says(func(p *verbs.Readings) { p.PostENOTCONN = true })},
		{name: "the profile says PostENOMEM, the device refuses posts before RTS with EINVAL", rules: []string{"QP-26"},
			base: sim.DefaultProfile(), h: says(func(p *verbs.Readings) { p.PostENOMEM = true })},
		{name: "the profile says EINVAL before RTS, the device says ENOMEM (mlx5)", rules: []string{"QP-26"},
			base: sim.MLX5Profile(), h: says(func(p *verbs.Readings) { p.PostENOMEM = false })},
		{name: "the profile says ENOMEM for too many SGEs or inline bytes (PostENOMEM), the device says EINVAL", rules: []string{"QP-28"},
			base: sim.DefaultProfile(), h: says(func(p *verbs.Readings) { p.PostENOMEM = true })},
		{name: "the profile says EINVAL for too many SGEs or inline bytes, the device says ENOMEM (mlx5)", rules: []string{"QP-28"},
			base: sim.MLX5Profile(), h: says(func(p *verbs.Readings) { p.PostENOMEM = false })},
		{name: "the profile says NoUD, the device creates UD QPs and AHs", rules: []string{"QP-41"},
			base: sim.DefaultProfile(), h: says(func(p *verbs.Readings) { p.NoUD = true })},
		{name: "the profile offers UD, the device refuses it (siw)", rules: []string{"QP-41"},
			base: sim.SIWProfile(), h: says(func(p *verbs.Readings) { p.NoUD = false })},
		{name: "the profile says NoUC, the device creates UC QPs", rules: []string{"QP-41"},
			base: sim.DefaultProfile(), h: says(func(p *verbs.Readings) { p.NoUC = true })},
		{name: "the profile says NoAtomics, the device runs atomics", rules: []string{"QP-42"},
			base: sim.DefaultProfile(), h: says(func(p *verbs.Readings) { p.NoAtomics = true })},
		{name: "the profile offers atomics, the device refuses them (irdma)", rules: []string{"QP-42"},
			base: sim.IRDMAProfile(), h: says(func(p *verbs.Readings) { p.NoAtomics = false })},
		{name: "the profile says NoImmData, the device sends immediate data", rules: []string{"QP-43"},
			base: sim.DefaultProfile(), h: says(func(p *verbs.Readings) { p.NoImmData = true })},
		{name: "the profile says NoMW, the device allocates windows", rules: []string{"MW-08"},
			base: sim.DefaultProfile(), h: says(func(p *verbs.Readings) { p.NoMW = true })},
		{name: "the profile says NoSRQ, the device creates SRQs", rules: []string{"SRQ-13"},
			base: sim.DefaultProfile(), h: says(func(p *verbs.Readings) { p.NoSRQ = true })},
		{name: "the profile says NoCQEx, the device creates extended CQs", rules: []string{"CQX-11"},
			base: sim.DefaultProfile(), h: says(func(p *verbs.Readings) { p.NoCQEx = true })},
		{name: "the profile says NoQPEx, the device creates QPs with send_ops_flags", rules: []string{"QPX-06"},
			base: sim.DefaultProfile(), h: says(func(p *verbs.Readings) { p.NoQPEx = true })},
		{name: "the profile says NoRereg, the device re-registers", rules: []string{"MR-18"},
			base: sim.DefaultProfile(), h: says(func(p *verbs.Readings) { p.NoRereg = true })},
		{name: "the profile offers ibv_rereg_mr, the device has none (irdma)", rules: []string{"MR-18"},
			base: sim.IRDMAProfile(), h: says(func(p *verbs.Readings) { p.NoRereg = false })},
	}
}
