// Package simdev adapts verbsim's simulated HCA (package sim) to the
// conformance suite's interfaces.
package simdev

import (
	"context"
	"syscall"

	"github.com/verbsim/verbsim/conformance"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/cq"
	"github.com/verbsim/verbsim/sim/notify"
	"github.com/verbsim/verbsim/sim/verr"
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

// Wrap adapts d.
func Wrap(d *sim.Device) conformance.Device { return device{d} }

// Profile translates a sim.Profile into the suite's terms.
func Profile(p sim.Profile) conformance.Profile {
	return conformance.Profile{
		OverrunDrops:         p.CQOverrun == cq.OverrunDrop,
		DestroyBusyOnUnacked: p.CQDestroy == cq.DestroyBusy,
		SolicitedBitOnly:     p.Solicited == notify.SolicitedBitOnly,
		ExactCQE:             p.CQRounding == cq.RoundExact,
	}
}

type device struct{ d *sim.Device }

func (d device) Open() (conformance.Context, error) {
	c, err := d.d.Open()
	if err != nil {
		return nil, err
	}
	return contextAdapter{c}, nil
}

func (d device) Profile() conformance.Profile { return Profile(d.d.Fabric().Profile()) }

// WithLimits implements conformance.LimitedDevice: a device on a new fabric
// with the same profile and name, whose attributes are l (zero fields keep
// this device's values).
func (d device) WithLimits(l conformance.Limits) (conformance.Device, error) {
	a := d.d.Attr()
	if l.MaxCQ != 0 {
		a.MaxCQ = l.MaxCQ
	}
	if l.MaxCQE != 0 {
		a.MaxCQE = l.MaxCQE
	}
	if l.NumCompVectors != 0 {
		a.NumCompVectors = l.NumCompVectors
	}
	if l.MaxPD != 0 {
		a.MaxPD = l.MaxPD
	}
	return New(sim.Config{
		Profile: d.d.Fabric().Profile(),
		Devices: []sim.DeviceConfig{{Name: d.d.Name(), Attr: a}},
	})
}

type contextAdapter struct{ c *sim.Context }

func (c contextAdapter) Limits() conformance.Limits {
	a := c.c.Device().Attr()
	return conformance.Limits{MaxCQ: a.MaxCQ, MaxCQE: a.MaxCQE, NumCompVectors: a.NumCompVectors, MaxPD: a.MaxPD}
}

func (c contextAdapter) CreateCompChannel() (conformance.CompChannel, error) {
	ch, err := c.c.CreateCompChannel()
	if err != nil {
		return nil, err
	}
	return channel{ch}, nil
}

func (c contextAdapter) CreateCQ(cqe int, cqContext any, ch conformance.CompChannel, compVector int) (conformance.CQ, error) {
	var sch *sim.CompChannel
	if ch != nil {
		a, ok := ch.(channel)
		if !ok {
			return nil, verr.New("ibv_create_cq", syscall.EINVAL, "the channel does not belong to this implementation")
		}
		sch = a.ch
	}
	q, err := c.c.CreateCQ(cqe, cqContext, sch, compVector)
	if err != nil {
		return nil, err
	}
	return q, nil
}

func (c contextAdapter) GetAsyncEvent(ctx context.Context) (conformance.AsyncEvent, error) {
	ev, err := c.c.GetAsyncEvent(ctx)
	if err != nil {
		return nil, err
	}
	return asyncEvent{ev}, nil
}

func (c contextAdapter) TryGetAsyncEvent() (conformance.AsyncEvent, error) {
	ev, err := c.c.TryGetAsyncEvent()
	if err != nil {
		return nil, err
	}
	return asyncEvent{ev}, nil
}

func (c contextAdapter) Close() error { return c.c.Close() }

func (c contextAdapter) AllocPD() (conformance.PD, error) {
	pd, err := c.c.AllocPD()
	if err != nil {
		return nil, err
	}
	return pdAdapter{pd}, nil
}

type pdAdapter struct{ pd *sim.PD }

func (p pdAdapter) RegMR(buf []byte, access uint32) (conformance.MR, error) {
	mr, err := p.pd.RegMR(buf, sim.Access(access))
	if err != nil {
		return nil, err
	}
	return mr, nil
}

func (p pdAdapter) CreateAH(a conformance.AHAttr) (conformance.AH, error) {
	ah, err := p.pd.CreateAH(sim.AHAttr{
		PortNum:  a.PortNum,
		DLID:     a.DLID,
		SL:       a.SL,
		IsGlobal: a.IsGlobal,
		GRH:      sim.GlobalRoute{DGID: a.DGID, SGIDIndex: a.SGIDIndex, HopLimit: a.HopLimit},
	})
	if err != nil {
		return nil, err
	}
	return ah, nil
}

func (p pdAdapter) Dealloc() error { return p.pd.Dealloc() }

type channel struct{ ch *sim.CompChannel }

func (c channel) GetEvent(ctx context.Context) (conformance.CQ, any, error) {
	return cqOrNil(c.ch.GetEvent(ctx))
}

func (c channel) TryGetEvent() (conformance.CQ, any, error) { return cqOrNil(c.ch.TryGetEvent()) }

func (c channel) Destroy() error { return c.ch.Destroy() }

func (c channel) Len() int { return c.ch.Len() }

func cqOrNil(q *sim.CQ, cqContext any, err error) (conformance.CQ, any, error) {
	if q == nil {
		return nil, cqContext, err
	}
	return q, cqContext, err
}

type asyncEvent struct{ ev sim.AsyncEvent }

func (e asyncEvent) EventType() notify.EventType { return e.ev.Type }
func (e asyncEvent) Object() any                 { return e.ev.Object }
func (e asyncEvent) Port() uint8                 { return e.ev.Port }
func (e asyncEvent) Ack() error                  { return e.ev.Ack() }

var (
	_ conformance.CQ            = (*sim.CQ)(nil)
	_ conformance.Injector      = (*sim.CQ)(nil)
	_ conformance.Referencer    = (*sim.CQ)(nil)
	_ conformance.Depth         = channel{}
	_ conformance.LimitedDevice = device{}
	_ conformance.MR            = (*sim.MR)(nil)
	_ conformance.Referencer    = (*sim.MR)(nil)
	_ conformance.AH            = (*sim.AH)(nil)
)
