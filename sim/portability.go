package sim

import (
	"fmt"
	"strings"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/verbs"
)

// The portability report: which of a run's outcomes would differ on
// another provider. The engine records a reading in the fabric's set when
// the reading decided something the run did: a post before RTS (QP-26), a
// CQ overrun (CQ-23), a type 1 window bound ZERO_BASED (MW-05), a UD QP
// created (QP-41)... A reading the run never came near is not recorded, so
// the report names only what the run depended on.

// consult records that reading r decided an outcome of a verb.
//
// Precondition: the domain lock is held.
func (f *Fabric) consult(r verbs.Reading) { f.consulted.Add(r) }

// consultOn records reading r and returns its value in the profile: for a
// reading consulted in the very condition it decides.
//
// Precondition: the domain lock is held.
func (f *Fabric) consultOn(r verbs.Reading) bool {
	f.consulted.Add(r)
	return f.profile.Get(r)
}

// ReadingsConsulted returns the readings that decided an outcome of the
// fabric's verbs and engine since it was made: each is a place where the
// run would have gone otherwise under a profile that reads the rule the
// other way. Portability turns them into a report.
func (f *Fabric) ReadingsConsulted() verbs.ReadingSet {
	if f == nil {
		return 0
	}
	f.d.Enter(domain.Op{})
	defer f.d.Leave(domain.Op{}, nil)
	return f.consulted
}

// Portability returns the portability report of the fabric's run so far:
// the readings it consulted on which the built-in profiles (and the
// fabric's own, when it is none of them) disagree, each with the profiles
// on either side.
func (f *Fabric) Portability() Portability {
	if f == nil {
		return Portability{}
	}
	return NewPortability(f.Profile(), f.ReadingsConsulted())
}

// Portability says where a run's outcomes depended on a provider's
// behaviour: for each reading it consulted on which the profiles disagree,
// what a program sees under each of them. String renders it for a person.
type Portability struct {
	// Profile is the name of the profile the run used.
	Profile string
	// Differences lists the readings the run consulted on which the
	// profiles disagree, in the order of verbs.AllReadings.
	Differences []Difference
}

// Difference is one reading a run consulted, with the profiles that read
// it each way.
type Difference struct {
	Reading verbs.Reading
	// On and Off name the profiles whose reading is true and false.
	On, Off []string
	// Used is the value the run's profile has.
	Used bool
}

// NewPortability returns the report of a run under profile p that
// consulted the readings in set: the readings of set on which the built-in
// profiles, and p itself, do not all agree.
func NewPortability(p Profile, set verbs.ReadingSet) Portability {
	name := p.Name
	if name == "" {
		name = "default"
	}
	ps := Profiles()
	known := false
	for _, q := range ps {
		if q.Name == name && q.Readings == p.Readings {
			known = true
		}
	}
	if !known {
		if name == "default" || builtInName(name) {
			name += "*" // a built-in profile with readings changed on top
		}
		ps = append(ps, Profile{Name: name, Readings: p.Readings})
	}
	out := Portability{Profile: name}
	for _, r := range set.List() {
		d := Difference{Reading: r, Used: p.Get(r)}
		for _, q := range ps {
			if q.Get(r) {
				d.On = append(d.On, q.Name)
			} else {
				d.Off = append(d.Off, q.Name)
			}
		}
		if len(d.On) > 0 && len(d.Off) > 0 {
			out.Differences = append(out.Differences, d)
		}
	}
	return out
}

func builtInName(name string) bool {
	for _, n := range ProfileNames() {
		if n == name {
			return true
		}
	}
	return false
}

// Portable reports whether the run depended on no behaviour on which the
// profiles disagree.
func (p Portability) Portable() bool { return len(p.Differences) == 0 }

// String renders the report, e.g.
//
//	portability: under profile default the run depended on 1 behaviour where providers differ:
//	  QP-25, QP-26 (PostAnyState)
//	    default, rxe, siw: a send posted before RTS, or a receive in RESET, fails with EINVAL   <- this run
//	    mlx5, irdma: a post before RTS (a receive in RESET) is accepted; ...
func (p Portability) String() string {
	var b strings.Builder
	if p.Portable() {
		fmt.Fprintf(&b, "portability: under profile %s the run depended on no behaviour where the profiles (%s) differ\n",
			p.Profile, strings.Join(ProfileNames(), ", "))
		return b.String()
	}
	n := len(p.Differences)
	fmt.Fprintf(&b, "portability: under profile %s the run depended on %d behaviour%s where providers differ:\n",
		p.Profile, n, map[bool]string{true: "", false: "s"}[n == 1])
	for _, d := range p.Differences {
		fmt.Fprintf(&b, "  %s (%s)\n", d.Reading.Rules(), d.Reading)
		sides := []struct {
			on    bool
			names []string
		}{{d.Used, nil}, {!d.Used, nil}}
		sides[0].names, sides[1].names = d.Off, d.On
		if d.Used {
			sides[0].names, sides[1].names = d.On, d.Off
		}
		for i, s := range sides {
			mark := ""
			if i == 0 {
				mark = "   <- this run"
			}
			fmt.Fprintf(&b, "    %s: %s%s\n", strings.Join(s.names, ", "), d.Reading.Behaviour(s.on), mark)
		}
	}
	return b.String()
}
