package conformance_test

import (
	"testing"

	"github.com/verbsim/verbsim/conformance"
	"github.com/verbsim/verbsim/conformance/simdev"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// TestSimTwoDevices runs the suite on a fabric of two adapters, so that the
// transport cases (which use a conformance.PeerDevice when there is one)
// send from one device to the other instead of looping back on one.
func TestSimTwoDevices(t *testing.T) {
	for _, p := range sim.Profiles() {
		t.Run(p.Name, func(t *testing.T) {
			conformance.Run(t, func() (conformance.Device, error) {
				return simdev.New(sim.Config{Profile: p, Devices: []sim.DeviceConfig{{Name: "vsim0"}, {Name: "vsim1"}}})
			})
		})
	}
}

// roceDevices are two devices whose port 1 is RoCE (Ethernet): with the
// link-local GIDs the fabric derives, or, with v4, with IPv4-mapped GIDs
// (::ffff:10.0.0.1 and ::ffff:10.0.0.2), so that UD receives see the RoCE
// v2 IPv4 form of the GRH (AV-05).
func roceDevices(v4 bool) []sim.DeviceConfig {
	ds := []sim.DeviceConfig{{Name: "roce0"}, {Name: "roce1"}}
	for i := range ds {
		pc := sim.PortConfig{Attr: verbs.PortAttr{LinkLayer: verbs.LinkLayerEthernet}}
		if v4 {
			pc.GIDs = []verbs.GID{{10: 0xff, 11: 0xff, 12: 10, 15: byte(i + 1)}}
		}
		ds[i].Ports = []sim.PortConfig{pc}
	}
	return ds
}

// TestSimRoCE runs the whole suite between two RoCE devices with
// IPv4-mapped GIDs under every built-in profile, and the rules that read a
// UD receive's GRH between RoCE devices with IPv6 GIDs.
func TestSimRoCE(t *testing.T) {
	for _, p := range sim.Profiles() {
		t.Run(p.Name+"/ipv4", func(t *testing.T) {
			conformance.Run(t, func() (conformance.Device, error) {
				return simdev.New(sim.Config{Profile: p, Devices: roceDevices(true)})
			})
		})
		t.Run(p.Name+"/ipv6", func(t *testing.T) {
			err := conformance.CheckRules(func() (conformance.Device, error) {
				return simdev.New(sim.Config{Profile: p, Devices: roceDevices(false)})
			}, "AV-05", "XFER-21", "WC-12")
			if err != nil {
				t.Error(err)
			}
		})
	}
}
