package fuzz

import (
	"math/rand/v2"
	"testing"

	"github.com/verbsim/verbsim/conformance/ops"
	"github.com/verbsim/verbsim/conformance/simdev"
	"github.com/verbsim/verbsim/sim"
	"pgregory.net/rapid"
)

// FuzzTrafficStateMachine runs the traffic state machine of package
// conformance (ops.TrafficStateMachine) against verbsim with the
// input as rapid's source of choices: the profile, whether the fabric
// drops, duplicates and delays packets, and every step. Fuzz it with
//
//	go test -run='^$' -fuzz=FuzzTrafficStateMachine -fuzztime=60s -fuzzminimizetime=5s ./fuzz/
func FuzzTrafficStateMachine(f *testing.F) {
	// As for FuzzStateMachine: long pseudo-random streams, so that the
	// corpus runs whole state machines.
	for seed := range uint64(4) {
		r := rand.New(rand.NewPCG(seed, 0x7af1c))
		data := make([]byte, 16<<10)
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		f.Add(data)
	}
	ps := sim.Profiles()
	f.Fuzz(rapid.MakeFuzz(func(t *rapid.T) {
		p := ps[rapid.IntRange(0, len(ps)-1).Draw(t, "profile")]
		ops.TrafficStateMachine(t, simdev.TrafficFabric(p), rapid.Bool().Draw(t, "faults"))
	}))
}
