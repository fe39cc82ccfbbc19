package simdev

import (
	"errors"

	"github.com/verbsim/verbsim/conformance"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/wc"
)

// The transport capabilities of the adapter (conformance/verbs_xfer.go): a
// peer device, the fabric's virtual clock, its faults and link control, the
// and port queries.

// Peer implements conformance.PeerDevice: the next device of the fabric
// after this one (wrapping around), or ErrUnsupported when the fabric has
// only this one, and the suite falls back to loopback.
func (d device) Peer() (conformance.Device, error) {
	all := d.d.Fabric().Devices()
	for i, o := range all {
		if o == d.d && len(all) > 1 {
			return device{all[(i+1)%len(all)]}, nil
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

// QueryPort implements conformance.PortQuerier.
func (c contextAdapter) QueryPort(port uint8) (conformance.PortInfo, error) {
	pa, err := c.c.QueryPort(port)
	if err != nil {
		return conformance.PortInfo{}, err
	}
	gid, err := c.c.QueryGID(port, 0)
	if err != nil {
		return conformance.PortInfo{}, err
	}
	return conformance.PortInfo{
		Active:    pa.State == sim.PortActive,
		LID:       pa.LID,
		GID:       gid,
		ActiveMTU: pa.ActiveMTU,
		MaxMsgSz:  pa.MaxMsgSz,
		Ethernet:  pa.LinkLayer == sim.LinkLayerEthernet,
	}, nil
}

var (
	_ conformance.PeerDevice  = device{}
	_ conformance.Clock       = device{}
	_ conformance.Faults      = device{}
	_ conformance.LinkControl = device{}
	_ conformance.PortQuerier = contextAdapter{}
)

// InjectFatal implements conformance.FatalInjector.
func (a qpAdapter) InjectFatal() error {
	pd := a.q.PD()
	if pd == nil {
		return errors.ErrUnsupported
	}
	return pd.Context().Device().Fabric().InjectFatal(a.q)
}

// ForceStatus implements conformance.StatusForcer through the fabric's
// forced-status fault.
func (a qpAdapter) ForceStatus(wrID uint64, recv bool, st wc.Status) error {
	pd := a.q.PD()
	if pd == nil {
		return errors.ErrUnsupported
	}
	return pd.Context().Device().Fabric().ForceStatus(a.q, wrID, recv, st)
}

var (
	_ conformance.FatalInjector = qpAdapter{}
	_ conformance.StatusForcer  = qpAdapter{}
)
