package conformance_test

import (
	"errors"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// reregFwd forwards ibv_rereg_mr to the real MR after edit rewrites the
// call; edit may answer itself by returning done.
func reregFwd(edit func(flags, access *uint32, pd *verbs.PD) (code int, err error, done bool)) func(verbs.MR, verbs.ReregFlags, verbs.PD, []byte, verbs.AccessFlags) error {
	return func(mr verbs.MR, f verbs.ReregFlags, pd verbs.PD, buf []byte, a verbs.AccessFlags) error {
		flags, access := uint32(f), uint32(a)
		if code, err, done := edit(&flags, &access, &pd); done {
			if code == 0 {
				return err
			}
			return &verbs.ReregError{Failure: verbs.ReregFailure(code), Err: err}
		}
		return mr.(verbs.MRReregisterer).Rereg(verbs.ReregFlags(flags), pd, buf, verbs.AccessFlags(access))
	}
}

// reregCode forwards ibv_rereg_mr and rewrites its return value.
func reregCode(from, to verbs.ReregFailure) func(verbs.MR, verbs.ReregFlags, verbs.PD, []byte, verbs.AccessFlags) error {
	return func(mr verbs.MR, flags verbs.ReregFlags, pd verbs.PD, buf []byte, access verbs.AccessFlags) error {
		err := mr.(verbs.MRReregisterer).Rereg(flags, pd, buf, access)
		var re *verbs.ReregError
		if errors.As(err, &re) && re.Failure == from {
			return &verbs.ReregError{Failure: to, Err: re.Err}
		}
		return err
	}
}

// reregReading is a device that states a reading of ibv_rereg_mr it does
// not follow.
func reregReading(name string, base sim.Profile, edit func(p *verbs.Readings), rules ...string) mutant {
	return mutant{name: "the device states " + name + " but does not follow it", rules: rules, base: base,
		h: hooks{profile: func(p verbs.Readings) verbs.Readings { edit(&p); return p }}}
}

// reregMutants returns the mutants of ibv_rereg_mr (MR-12 to MR-17).
func reregMutants() []mutant {
	return []mutant{
		{
			name:  "rereg ignores CHANGE_ACCESS",
			rules: []string{"MR-13", "MR-17"},
			h: hooks{rereg: reregFwd(func(flags, access *uint32, _ *verbs.PD) (int, error, bool) {
				*flags &^= 4
				*access = 0
				return 0, nil, *flags == 0
			})},
		},
		{
			name:  "rereg ignores CHANGE_PD",
			rules: []string{"MR-13", "MR-17"},
			h: hooks{rereg: reregFwd(func(flags, _ *uint32, pd *verbs.PD) (int, error, bool) {
				*flags &^= 2
				*pd = nil
				return 0, nil, *flags == 0
			})},
		},
		{
			name:  "rereg ignores CHANGE_TRANSLATION",
			rules: []string{"MR-13", "MR-16"},
			h: hooks{rereg: reregFwd(func(flags, _ *uint32, _ *verbs.PD) (int, error, bool) {
				*flags &^= 1
				return 0, nil, *flags == 0
			})},
		},
		{
			name:  "rereg accepts flags 0",
			rules: []string{"MR-12"},
			h: hooks{rereg: reregFwd(func(flags, _ *uint32, _ *verbs.PD) (int, error, bool) {
				return 0, nil, *flags == 0
			})},
		},
		{
			name:  "rereg drops unknown flag bits",
			rules: []string{"MR-12"},
			h: hooks{rereg: reregFwd(func(flags, _ *uint32, _ *verbs.PD) (int, error, bool) {
				*flags &= 7
				return 0, nil, false
			})},
		},
		{
			name:  "rereg reports command errors as input errors",
			rules: []string{"MR-12", "MR-13"},
			h:     hooks{rereg: reregCode(-4, -1)},
		},
		{
			name:  "rereg reports input errors as command errors",
			rules: []string{"MR-12"},
			h:     hooks{rereg: reregCode(-1, -4)},
		},
		reregReading("MR-14 B (the MR survives a command error)", sim.DefaultProfile(), func(p *verbs.Readings) { p.ReregFailKeepsMR = true }, "MR-14"),
		reregReading("MR-14 A (a command error leaves the MR unusable)", sim.RXEProfile(), func(p *verbs.Readings) { p.ReregFailKeepsMR = false }, "MR-14"),
		reregReading("MR-15 B (keys kept)", sim.DefaultProfile(), func(p *verbs.Readings) { p.ReregKeepsKeys = true }, "MR-15"),
		reregReading("MR-15 A (new keys)", sim.RXEProfile(), func(p *verbs.Readings) { p.ReregKeepsKeys = false }, "MR-15"),
		reregReading("MR-16 B (no CHANGE_TRANSLATION)", sim.DefaultProfile(), func(p *verbs.Readings) { p.ReregNoTranslation = true }, "MR-16", "MR-13"),
		reregReading("MR-16 A (CHANGE_TRANSLATION supported)", sim.RXEProfile(), func(p *verbs.Readings) { p.ReregNoTranslation = false }, "MR-16", "MR-13"),
	}
}
