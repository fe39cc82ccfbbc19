// Package simdev gives the conformance suite verbsim's simulated HCA.
//
// The objects are sim's own implementation of package verbs
// ((*sim.Device).Verbs): the suite drives them directly, and they already
// offer the suite's optional capabilities of CQs, channels, MRs, QPs and
// SRQs (Injector, Referencer, Depth, Consumer, Outstander, FatalInjector,
// StatusForcer, SRQErrorInjector). What this package adds is the
// Device-level part only a simulator has: the profile in the suite's terms,
// a fresh device with other limits, a peer on the same fabric, the virtual
// clock, packet faults, link control and forged packets. It stays outside
// package sim so that the engine does not depend on its test suite.
package simdev

import (
	"errors"

	"github.com/verbsim/verbsim/conformance"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// New returns a conformance.Device backed by the first device of a new
// fabric configured with cfg.
func New(cfg sim.Config) (conformance.Device, error) {
	f, err := sim.NewFabric(cfg)
	if err != nil {
		return nil, err
	}
	return Wrap(f.Devices()[0]), nil
}

// Factory returns a function that makes a fresh device with profile p, for
// conformance.Run.
func Factory(p sim.Profile) func() (conformance.Device, error) {
	return func() (conformance.Device, error) { return New(sim.Config{Profile: p}) }
}

// Wrap returns d's verbs device with the suite's Device capabilities.
func Wrap(d *sim.Device) conformance.Device { return device{d.Verbs(), d} }

// device is sim's verbs device (Name, GUID, Open) with the Device-level
// capabilities of the suite, which act on the fabric of d.
type device struct {
	verbs.Device
	d *sim.Device
}

func (d device) Profile() verbs.Readings { return d.d.Fabric().Profile().Readings }

// WithLimits implements conformance.LimitedDevice: a device on a new fabric
// with the same profile and name, whose attributes are l (zero fields keep
// this device's values).
func (d device) WithLimits(l conformance.Limits) (conformance.Device, error) {
	a := d.d.Attr()
	for _, f := range []struct {
		dst *int
		v   int
	}{
		{&a.MaxCQ, l.MaxCQ}, {&a.MaxCQE, l.MaxCQE}, {&a.NumCompVectors, l.NumCompVectors}, {&a.MaxPD, l.MaxPD},
		{&a.MaxQPWR, l.MaxQPWR}, {&a.MaxSGE, l.MaxSGE}, {&a.MaxInline, l.MaxInline},
		{&a.MaxQPRDAtom, l.MaxQPRDAtom}, {&a.MaxQPInitRDAtom, l.MaxQPInitRDAtom},
		{&a.MaxSRQWR, l.MaxSRQWR}, {&a.MaxSRQSGE, l.MaxSRQSGE},
	} {
		if f.v != 0 {
			*f.dst = f.v
		}
	}
	cfg := sim.DeviceConfig{Name: d.d.Name(), Attr: a}
	if l.Port.MaxMTU != 0 {
		ports, err := d.d.PortConfigs()
		if err != nil {
			return nil, err
		}
		ports[0].Attr.MaxMTU = l.Port.MaxMTU
		ports[0].Attr.ActiveMTU = min(ports[0].Attr.ActiveMTU, ports[0].Attr.MaxMTU)
		cfg.Ports = ports
	}
	return New(sim.Config{Profile: d.d.Fabric().Profile(), Devices: []sim.DeviceConfig{cfg}})
}

// Peer implements conformance.PeerDevice: the next device of the fabric
// after this one (wrapping around), or ErrUnsupported when the fabric has
// only this one, and the suite falls back to loopback.
func (d device) Peer() (conformance.Device, error) {
	all := d.d.Fabric().Devices()
	for i, o := range all {
		if o == d.d && len(all) > 1 {
			return Wrap(all[(i+1)%len(all)]), nil
		}
	}
	return nil, errors.ErrUnsupported
}

// Tick implements conformance.Clock.
func (d device) Tick(n uint64) { d.d.Fabric().Tick(n) }

// RunUntilIdle implements conformance.Clock.
func (d device) RunUntilIdle(limit uint64) bool { return d.d.Fabric().RunUntilIdle(limit) }

// SetFaults implements conformance.Faults. Delayed packets arrive up to
// the fabric's default maximum delay late.
func (d device) SetFaults(drop, duplicate, delay float64) error {
	return d.d.Fabric().SetFaults(sim.Faults{Drop: drop, Duplicate: duplicate, Delay: delay})
}

// SetPortState implements conformance.LinkControl.
func (d device) SetPortState(port uint8, up bool) error { return d.d.SetPortState(port, up) }

var (
	_ conformance.LimitedDevice = device{}
	_ conformance.PeerDevice    = device{}
	_ conformance.Clock         = device{}
	_ conformance.Faults        = device{}
	_ conformance.LinkControl   = device{}
)
