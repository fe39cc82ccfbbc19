// Package testprofiles chooses the profiles the long test suites run
// under: the conformance suite in process (conformance/sim_test.go and its
// two-device, wrapper and state-machine runs) and through C (cverbs'
// TestConformanceThroughC).
//
// Without the race detector they run under every built-in profile. Under
// it a run of the suite takes about three times as long, and five
// profiles would make `go test -race ./...` (CI's test step) more than
// twice as slow as with the two profiles the suites ran under before the
// provider profiles; so there they run under default and rxe and one
// provider profile (mlx5, siw, irdma) in turn, by the day of the year, so
// that CI meets each every three days, and .ci/run runs the in-process
// suite under every profile without the race detector. The environment
// variable VERBSIM_TEST_PROFILES overrides the choice: "all", or profile
// names separated by commas.
package testprofiles

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/verbsim/verbsim/sim"
)

// Env is the variable that overrides the choice.
const Env = "VERBSIM_TEST_PROFILES"

// Profiles returns the profiles a long suite runs under (see the package
// comment), and logs the choice on tb when it is not every profile. An
// unknown name in VERBSIM_TEST_PROFILES fails tb.
func Profiles(tb testing.TB) []sim.Profile {
	tb.Helper()
	ps, err := choose(os.Getenv(Env), race, time.Now().YearDay())
	if err != nil {
		tb.Fatalf("%s: %v", Env, err)
	}
	if len(ps) < len(sim.Profiles()) {
		var names []string
		for _, p := range ps {
			names = append(names, p.Name)
		}
		tb.Logf("under profiles %s of %s (internal/testprofiles; %s=all for every one)",
			strings.Join(names, ", "), strings.Join(sim.ProfileNames(), ", "), Env)
	}
	return ps
}

// choose returns the profiles for the value of VERBSIM_TEST_PROFILES, the
// race detector's state and the day of the year.
func choose(env string, race bool, day int) ([]sim.Profile, error) {
	switch {
	case env == "all" || env == "" && !race:
		return sim.Profiles(), nil
	case env == "":
		providers := sim.Profiles()[2:] // mlx5, siw, irdma
		return []sim.Profile{sim.DefaultProfile(), sim.RXEProfile(), providers[day%len(providers)]}, nil
	}
	var ps []sim.Profile
	for _, name := range strings.Split(env, ",") {
		p, err := sim.ProfileByName(strings.TrimSpace(name))
		if err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	return ps, nil
}
