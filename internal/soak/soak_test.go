package soak

import (
	"flag"
	"testing"
	"time"

	"github.com/verbsim/verbsim/internal/leakcheck"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// TestMain fails the package's tests if they leave goroutines behind.
func TestMain(m *testing.M) { leakcheck.Main(m) }

var (
	seedFlag     = flag.Uint64("soak.seed", 0, "seed of the soak (0: a new one, printed)")
	roundsFlag   = flag.Int("soak.rounds", 0, "rounds per profile (0: the short run's)")
	wrsFlag      = flag.Int("soak.wrs", 0, "send WRs each QP posts per round (0: the short run's)")
	durationFlag = flag.Duration("soak.duration", 0, "run rounds until this much wall time has passed, per profile (on demand only)")
	watchdogFlag = flag.Duration("soak.watchdog", 0, "wall-time bound of one round's waits before the soak fails with every goroutine's stack (0: DefaultWatchdog)")
	profileFlag  = flag.String("soak.profile", "", "run only this profile (default or rxe; empty: both)")
)

// The short run, the default and the one CI runs: per profile eight rounds
// of 12 QPs posting up to 400 send WRs each, some 32,000 send WRs and
// 14,000 receives. One to two seconds per profile under -race on an idle
// two-core machine; it is bounded by these counts, never by time.
const (
	shortRounds = 8
	shortWRs    = 400
)

// TestSoak runs the soak under the default and the rxe profile. It is
// bounded by counts, never by time; the flags make it longer.
func TestSoak(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	rounds, wrs := shortRounds, shortWRs
	if *roundsFlag > 0 {
		rounds = *roundsFlag
	}
	if *wrsFlag > 0 {
		wrs = *wrsFlag
	}
	// The soak runs RC, UC and UD with atomics and immediate data: the
	// profiles whose devices offer them all.
	for _, p := range sim.ProfilesWithout(verbs.ReadingNoUD, verbs.ReadingNoUC, verbs.ReadingNoAtomics, verbs.ReadingNoImmData) {
		if *profileFlag != "" && *profileFlag != p.Name {
			continue
		}
		t.Run(p.Name, func(t *testing.T) {
			// The seed replays the plan and the faults; the interleaving of
			// the goroutines is the scheduler's.
			t.Logf("replay with: go test ./internal/soak -run 'TestSoak/%s$' -soak.seed=%d -soak.rounds=%d -soak.wrs=%d (a duration run: the rounds it reports)", p.Name, seed, rounds, wrs)
			cfg := Config{Seed: seed, Profile: p, Rounds: rounds, WRs: wrs, Duration: *durationFlag, Watchdog: *watchdogFlag}
			if *durationFlag > 0 {
				cfg.Logf = t.Logf
			}
			rep, err := Run(cfg)
			t.Log(rep)
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			if rep.Completions == 0 || rep.Messages == 0 {
				t.Fatalf("seed %d: the soak did nothing", seed)
			}
		})
	}
}
