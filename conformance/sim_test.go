package conformance_test

import (
	"testing"

	"github.com/verbsim/verbsim/conformance"
	"github.com/verbsim/verbsim/conformance/simdev"
	"github.com/verbsim/verbsim/sim"
)

// TestSim runs the whole suite against verbsim under every built-in profile.
func TestSim(t *testing.T) {
	for _, p := range sim.Profiles() {
		t.Run(p.Name, func(t *testing.T) {
			conformance.Run(t, simdev.Factory(p))
		})
	}
}
