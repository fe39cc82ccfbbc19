package conformance_test

import (
	"testing"

	"github.com/verbsim/verbsim/conformance"
	"github.com/verbsim/verbsim/conformance/simdev"
	"github.com/verbsim/verbsim/internal/testprofiles"
)

// TestSim runs the whole suite against verbsim under every built-in profile
// (under the race detector, some of them: internal/testprofiles).
func TestSim(t *testing.T) {
	for _, p := range testprofiles.Profiles(t) {
		t.Run(p.Name, func(t *testing.T) {
			conformance.Run(t, simdev.Factory(p))
		})
	}
}
