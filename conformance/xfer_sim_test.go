package conformance_test

import (
	"testing"

	"github.com/verbsim/verbsim/conformance"
	"github.com/verbsim/verbsim/conformance/simdev"
	"github.com/verbsim/verbsim/internal/testprofiles"
	"github.com/verbsim/verbsim/sim"
)

// TestSimTwoDevices runs the suite on a fabric of two adapters, so that the
// transport cases (which use a conformance.PeerDevice when there is one)
// send from one device to the other instead of looping back on one.
func TestSimTwoDevices(t *testing.T) {
	for _, p := range testprofiles.Profiles(t) {
		t.Run(p.Name, func(t *testing.T) {
			conformance.Run(t, func() (conformance.Device, error) {
				return simdev.New(sim.Config{Profile: p, Devices: []sim.DeviceConfig{{Name: "vsim0"}, {Name: "vsim1"}}})
			})
		})
	}
}
