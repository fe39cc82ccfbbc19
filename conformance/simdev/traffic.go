package simdev

import (
	"github.com/verbsim/verbsim/conformance"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// TrafficMTU is the active MTU of the ports of a TrafficFabric: small, so
// that the traffic state machine's messages span packets and its UD
// datagrams can exceed it.
const TrafficMTU = verbs.MTU256

// TrafficFaults are the packet faults of a TrafficFabric made with faults.
// They are rare enough that an RC requester with retry_cnt 6 does not run
// out of retries on lost packets (about 0.06^7 per request).
var TrafficFaults = sim.Faults{Drop: 0.03, Duplicate: 0.03, Delay: 0.05, MaxDelay: 2000}

// TrafficFabric returns a conformance.NewTrafficFabric for verbsim: a
// fabric in Auto mode with profile p and two devices, "a" and "b", whose
// ports have an active MTU of 256 bytes. The ports are InfiniBand, or
// Ethernet (RoCE, where every path carries a GRH) when the seed is odd.
// With faults the fabric drops, duplicates and delays packets
// (TrafficFaults) and picks among ready events at random.
func TrafficFabric(p sim.Profile) conformance.NewTrafficFabric {
	return func(seed uint64, faults bool) (conformance.TrafficFabric, error) {
		link := verbs.LinkLayerInfiniBand
		if seed&1 == 1 {
			link = verbs.LinkLayerEthernet
		}
		port := []sim.PortConfig{{Attr: verbs.PortAttr{ActiveMTU: TrafficMTU, LinkLayer: link}}}
		cfg := sim.Config{Profile: p, Seed: seed,
			Devices: []sim.DeviceConfig{{Name: "a", Ports: port}, {Name: "b", Ports: port}}}
		if faults {
			cfg.Faults, cfg.Schedule = TrafficFaults, sim.Random
		}
		f, err := sim.NewFabric(cfg)
		if err != nil {
			return nil, err
		}
		tf := &trafficFabric{f: f, faults: cfg.Faults, random: cfg.Schedule == sim.Random}
		for _, d := range f.Devices() {
			c, err := d.Open()
			if err != nil {
				return nil, err
			}
			pa, err := c.QueryPort(1)
			if err != nil {
				return nil, err
			}
			av := verbs.AHAttr{PortNum: 1, DLID: pa.LID}
			if pa.LinkLayer == verbs.LinkLayerEthernet {
				gid, err := c.QueryGID(1, 0)
				if err != nil {
					return nil, err
				}
				av = verbs.AHAttr{PortNum: 1, IsGlobal: true, GRH: verbs.GlobalRoute{DGID: gid, HopLimit: 64}}
			}
			if err := c.Close(); err != nil {
				return nil, err
			}
			tf.devs = append(tf.devs, Wrap(d))
			tf.avs = append(tf.avs, av)
		}
		return tf, nil
	}
}

type trafficFabric struct {
	f      *sim.Fabric
	faults sim.Faults
	random bool
	devs   []conformance.Device
	avs    []verbs.AHAttr
}

func (t *trafficFabric) Devices() []conformance.Device { return t.devs }

func (t *trafficFabric) Address(dev int) verbs.AHAttr { return t.avs[dev] }

func (t *trafficFabric) Tick(n uint64)                  { t.f.Tick(n) }
func (t *trafficFabric) RunUntilIdle(limit uint64) bool { return t.f.RunUntilIdle(limit) }
func (t *trafficFabric) Close() error                   { return t.f.Close() }

func (t *trafficFabric) TrafficProfile() conformance.TrafficProfile {
	return conformance.TrafficProfile{
		// The profile's readings. Under FreeSlotOnRetire (QP-29 B) the
		// engine frees a slot in the verb call that retires its request
		// (Auto mode); otherwise at the poll that covers it.
		Readings:  t.f.Profile().Readings,
		Settles:   true, // Auto mode (docs/time.md)
		SyncFlush: true, // docs/design.md, "Flush"
		// UD receivers check no PSNs (docs/transport.md): a datagram the
		// Duplicate fault copied arrives twice, one receive completion
		// each, and a delayed datagram may be overtaken by a later one of
		// the same sender. That is UD's contract; UC, which checks PSNs,
		// drops both.
		UDReorder:   true,
		UDDuplicate: true,
		MTU:         TrafficMTU.Bytes(),
		Faults: conformance.PacketFaults{Drop: t.faults.Drop, Duplicate: t.faults.Duplicate, Delay: t.faults.Delay,
			MaxDelay: t.faults.MaxDelay, RandomOrder: t.random},
	}
}

var _ conformance.TrafficFabric = (*trafficFabric)(nil)
