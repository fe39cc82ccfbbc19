// Package simdev adapts verbsim's simulated HCA (package sim) to the
// conformance suite's interfaces.
package simdev

import (
	"context"
	"slices"
	"syscall"

	"github.com/verbsim/verbsim/conformance"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/notify"
	"github.com/verbsim/verbsim/sim/qp"
	"github.com/verbsim/verbsim/sim/verr"
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

// Wrap adapts d.
func Wrap(d *sim.Device) conformance.Device { return device{d} }

type device struct{ d *sim.Device }

func (d device) Open() (conformance.Context, error) {
	c, err := d.d.Open()
	if err != nil {
		return nil, err
	}
	return contextAdapter{c}, nil
}

// Profile returns the readings of the fabric's profile: sim.Profile holds a
// verbs.Readings, the type the suite reads.
func (d device) Profile() conformance.Profile { return d.d.Fabric().Profile().Readings }

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
	for _, f := range []struct {
		dst *int
		v   int
	}{
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
		ports, err := d.ports()
		if err != nil {
			return nil, err
		}
		ports[0].Attr.MaxMTU = sim.MTU(l.Port.MaxMTU)
		ports[0].Attr.ActiveMTU = min(ports[0].Attr.ActiveMTU, ports[0].Attr.MaxMTU)
		cfg.Ports = ports
	}
	return New(sim.Config{Profile: d.d.Fabric().Profile(), Devices: []sim.DeviceConfig{cfg}})
}

// ports returns the configuration of the device's ports as far as
// ibv_query_port shows it: their GID and P_Key tables get default contents,
// and the fabric assigns the LIDs anew.
func (d device) ports() ([]sim.PortConfig, error) {
	c, err := d.d.Open()
	if err != nil {
		return nil, err
	}
	defer c.Close()
	ports := make([]sim.PortConfig, d.d.Attr().PhysPortCnt)
	for i := range ports {
		pa, err := c.QueryPort(uint8(i + 1))
		if err != nil {
			return nil, err
		}
		pa.LID, pa.SMLID = 0, 0
		ports[i].Attr = pa
	}
	return ports, nil
}

type contextAdapter struct{ c *sim.Context }

func (c contextAdapter) Limits() conformance.Limits {
	a := c.c.Device().Attr()
	l := conformance.Limits{
		MaxCQ: a.MaxCQ, MaxCQE: a.MaxCQE, NumCompVectors: a.NumCompVectors, MaxPD: a.MaxPD,
		MaxQPWR: a.MaxQPWR, MaxSGE: a.MaxSGE, MaxInline: a.MaxInline,
		MaxQPRDAtom: a.MaxQPRDAtom, MaxQPInitRDAtom: a.MaxQPInitRDAtom,
		MaxSRQWR: a.MaxSRQWR, MaxSRQSGE: a.MaxSRQSGE, NumPorts: int(a.PhysPortCnt),
		SRQResize: a.DeviceCapFlags&sim.DeviceSRQResize != 0,
	}
	if p, err := c.c.QueryPort(1); err == nil {
		l.Port = conformance.PortLimits{
			MaxMTU:       qp.MTU(p.MaxMTU),
			PKeyTableLen: int(p.PKeyTblLen),
			GIDTableLen:  p.GIDTblLen,
			Ethernet:     p.LinkLayer == sim.LinkLayerEthernet,
		}
	}
	return l
}

func (c contextAdapter) CreateCompChannel() (conformance.CompChannel, error) {
	ch, err := c.c.CreateCompChannel()
	if err != nil {
		return nil, err
	}
	return sim.VerbsChannel(ch), nil
}

func (c contextAdapter) CreateCQ(cqe int, cqContext any, ch conformance.CompChannel, compVector int) (conformance.CQ, error) {
	var sch *sim.CompChannel
	if ch != nil {
		a, ok := sim.ChannelOf(ch)
		if !ok {
			return nil, verr.New("ibv_create_cq", syscall.EINVAL, "the channel does not belong to this implementation")
		}
		sch = a
	}
	q, err := c.c.CreateCQ(cqe, cqContext, sch, compVector)
	if err != nil {
		return nil, err
	}
	return sim.VerbsCQ(q), nil
}

// CreateCQEx implements conformance.ExCQCreator; the *sim.CQ it returns
// implements conformance.ExCQ.
func (c contextAdapter) CreateCQEx(attr conformance.CQExAttr) (conformance.CQ, error) {
	var sch *sim.CompChannel
	if attr.Channel != nil {
		a, ok := sim.ChannelOf(attr.Channel)
		if !ok {
			return nil, verr.New("ibv_create_cq_ex", syscall.EINVAL, "the channel does not belong to this implementation")
		}
		sch = a
	}
	q, err := c.c.CreateCQEx(sim.CQInitAttr{
		CQE: attr.CQE, Context: attr.Context, Channel: sch, CompVector: attr.CompVector,
		WCFlags: attr.WCFlags, CompMask: attr.CompMask, Flags: attr.Flags,
	})
	if err != nil {
		return nil, err
	}
	return sim.VerbsCQ(q), nil
}

var (
	_ conformance.ExCQCreator = contextAdapter{}
	_ conformance.ExCQ        = sim.VerbsCQ(nil)
)

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
	return mrAdapter{mr}, nil
}

// mrAdapter is a *sim.MR with Rereg in the suite's terms.
type mrAdapter struct{ *sim.MR }

// Rereg is conformance.MRRereg: sim's MR.Rereg, with the failure class as
// ibv_rereg_mr's return value.
func (m mrAdapter) Rereg(flags uint32, pd conformance.PD, buf []byte, access uint32) (int, error) {
	var spd *sim.PD
	switch p := pd.(type) {
	case nil:
	case pdAdapter:
		spd = p.pd
	default:
		return int(sim.ReregErrInput), verr.New("ibv_rereg_mr", syscall.EINVAL, "the PD does not belong to this implementation")
	}
	err := m.MR.Rereg(sim.ReregFlags(flags), spd, buf, sim.Access(access))
	if err == nil {
		return 0, nil
	}
	return int(sim.ReregFailureOf(err)), err
}

// AllocMW implements conformance.MWAllocator. The window is the *sim.MW
// itself, which BIND_MW work requests carry.
func (p pdAdapter) AllocMW(typ uint32) (conformance.MW, error) {
	mw, err := p.pd.AllocMW(sim.MWType(typ))
	if err != nil {
		return nil, err
	}
	return mw, nil
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

func (p pdAdapter) CreateQP(a conformance.QPInitAttr) (conformance.QP, error) {
	return p.CreateQPEx(a, 0, 0)
}

// CreateQPEx implements conformance.QPExCreator.
func (p pdAdapter) CreateQPEx(a conformance.QPInitAttr, compMask uint32, ops qp.SendOps) (conformance.QP, error) {
	const verb = "ibv_create_qp"
	attr := sim.QPInitAttr{Context: a.Context, Cap: a.Cap, Type: a.Type, SQSigAll: a.SQSigAll,
		CompMask: sim.QPInitMask(compMask), SendOpsFlags: ops}
	var err error
	if attr.SendCQ, err = simCQ(verb, a.SendCQ); err != nil {
		return nil, err
	}
	if attr.RecvCQ, err = simCQ(verb, a.RecvCQ); err != nil {
		return nil, err
	}
	if a.SRQ != nil {
		s, ok := a.SRQ.(*sim.SRQ)
		if !ok {
			return nil, verr.New(verb, syscall.EINVAL, "the SRQ does not belong to this implementation")
		}
		attr.SRQ = s
	}
	q, err := p.pd.CreateQP(attr)
	if err != nil {
		return nil, err
	}
	return qpAdapter{q}, nil
}

// simCQ unwraps a CQ of this implementation; nil stays nil.
func simCQ(verb string, q conformance.CQ) (*sim.CQ, error) {
	if q == nil {
		return nil, nil
	}
	c, ok := sim.CQOf(q)
	if !ok {
		return nil, verr.New(verb, syscall.EINVAL, "the CQ does not belong to this implementation")
	}
	return c, nil
}

func (p pdAdapter) CreateSRQ(a conformance.SRQInitAttr) (conformance.SRQ, error) {
	s, err := p.pd.CreateSRQ(sim.SRQInitAttr{Context: a.Context, Attr: a.Attr})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// qpAdapter is a sim QP as a conformance.QP. It is a value, so that the
// adapters of one QP compare equal (async events name the QP this way).
type qpAdapter struct{ q *sim.QP }

func (a qpAdapter) Num() uint32                                  { return a.q.Num() }
func (a qpAdapter) Modify(attr *qp.Attr, mask qp.AttrMask) error { return a.q.Modify(attr, mask) }
func (a qpAdapter) PostSend(wrs []qp.SendWR) (int, error)        { return a.q.PostSend(unwrapBinds(wrs)) }
func (a qpAdapter) PostRecv(wrs []qp.RecvWR) (int, error)        { return a.q.PostRecv(wrs) }
func (a qpAdapter) DestroyContext(ctx context.Context) error     { return a.q.DestroyContext(ctx) }

// BindMW implements conformance.MWBinder.
func (a qpAdapter) BindMW(mw conformance.MW, wrID uint64, flags qp.SendFlags, info qp.MWBindInfo) error {
	info.MR = unwrapMR(info.MR)
	m, _ := mw.(*sim.MW) // another implementation's window: sim refuses nil
	return a.q.BindMW(m, wrID, flags, info)
}

// unwrapMR turns the suite's view of an MR back into the *sim.MR that
// sim's bind requests name.
func unwrapMR(mr verbs.MR) verbs.MR {
	if m, ok := mr.(mrAdapter); ok {
		return m.MR
	}
	return mr
}

// unwrapBinds returns wrs with the MR of every type 2 bind request
// unwrapped, copying the list only when one needs it.
func unwrapBinds(wrs []qp.SendWR) []qp.SendWR {
	for i := range wrs {
		if _, ok := wrs[i].Bind.MR.(mrAdapter); ok {
			out := slices.Clone(wrs)
			for j := range out {
				out[j].Bind.MR = unwrapMR(out[j].Bind.MR)
			}
			return out
		}
	}
	return wrs
}

// The work request builder (conformance.WRBuilder).
func (a qpAdapter) SetWRID(id uint64)                    { a.q.SetWRID(id) }
func (a qpAdapter) SetWRFlags(f qp.SendFlags)            { a.q.SetWRFlags(f) }
func (a qpAdapter) WRStart()                             { a.q.WRStart() }
func (a qpAdapter) WRComplete() error                    { return a.q.WRComplete() }
func (a qpAdapter) WRAbort()                             { a.q.WRAbort() }
func (a qpAdapter) WRSend()                              { a.q.WRSend() }
func (a qpAdapter) WRSendImm(imm uint32)                 { a.q.WRSendImm(imm) }
func (a qpAdapter) WRRDMAWrite(rkey uint32, addr uint64) { a.q.WRRDMAWrite(rkey, addr) }
func (a qpAdapter) WRRDMARead(rkey uint32, addr uint64)  { a.q.WRRDMARead(rkey, addr) }
func (a qpAdapter) WRSetSGE(lkey uint32, addr uint64, length uint32) {
	a.q.WRSetSGE(lkey, addr, length)
}
func (a qpAdapter) WRSetSGEList(list []qp.SGE)  { a.q.WRSetSGEList(list) }
func (a qpAdapter) WRSetInlineData(data []byte) { a.q.WRSetInlineData(data) }

// Outstanding implements conformance.Outstander.
func (a qpAdapter) Outstanding() (send, recv int) { return a.q.Outstanding() }

func (a qpAdapter) Query() (qp.Attr, error) {
	attr, _, err := a.q.Query()
	return attr, err
}

type asyncEvent struct{ ev sim.AsyncEvent }

func (e asyncEvent) EventType() notify.EventType { return e.ev.Type() }
func (e asyncEvent) Port() uint8                 { return e.ev.Port() }
func (e asyncEvent) Ack() error                  { return e.ev.Ack() }

// Object returns the CQ or SRQ as the suite has it, and a QP as its adapter.
func (e asyncEvent) Object() any {
	if q := e.ev.QP(); q != nil {
		return qpAdapter{q}
	}
	if c := e.ev.CQ(); c != nil {
		return sim.VerbsCQ(c)
	}
	if s := e.ev.SRQ(); s != nil {
		return s
	}
	return nil
}

var (
	_ conformance.CQ            = sim.VerbsCQ(nil)
	_ conformance.LimitedDevice = device{}
	_ conformance.MR            = mrAdapter{}
	_ conformance.Referencer    = mrAdapter{}
	_ conformance.MRRereg       = mrAdapter{}
	_ conformance.AH            = (*sim.AH)(nil)
	_ conformance.QP            = qpAdapter{}
	_ conformance.Outstander    = qpAdapter{}
	_ conformance.WRBuilder     = qpAdapter{}
	_ conformance.QPExCreator   = pdAdapter{}
	_ conformance.SRQ           = (*sim.SRQ)(nil)
	_ conformance.Depth         = (*sim.SRQ)(nil)
	_ conformance.Consumer      = (*sim.SRQ)(nil)
)
