package sim_test

import (
	"context"
	"math"
	"syscall"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/verbs"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/internal/notify"
)

// Reasons shared by methods that take no bad input beyond the sweeps.
const (
	getter   = "pure getter without arguments: the nil sweep checks its zero value, the zero sweep has nothing to pass"
	noArgs   = "takes no arguments: the nil sweep checks the nil receiver; the state it may be called in is any"
	engine   = "engine-facing ...Locked hook without arguments or whose callers validate them; the nil sweep checks the nil receiver and the zero sweep the zero arguments"
	anyValue = "every value of its argument is legal; the nil and zero sweeps cover it"
	wrVoid   = "work request builder without a result (ibv_wr_*): outside a batch it does nothing, inside one its errors are deferred to WRComplete, whose cases pass it bad input; the nil sweep checks the nil receiver"
)

const (
	einval     = syscall.EINVAL
	ebusy      = syscall.EBUSY
	eopnotsupp = syscall.EOPNOTSUPP
)

// rcCaps are small capacities within the device's limits.
var rcCaps = verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 2, MaxRecvSGE: 2}

// createQP returns a case that creates a QP in w.pd from attr(w).
func createQP(in string, want syscall.Errno, attr func(w *badWorld) sim.QPInitAttr) badCase {
	return badCase{in: in, want: want, call: func(w *badWorld) error {
		q, err := w.pd.CreateQP(attr(w))
		if q != nil {
			w.failf("CreateQP returned a QP with its error")
		}
		return err
	}}
}

// createXRCQP is a case of XRCD.CreateQP: mod adjusts good XRC_RECV
// arguments and returns the domain to call it on.
func createXRCQP(in string, want syscall.Errno, mod func(w *badWorld, a *sim.QPInitAttr) *sim.XRCD) badCase {
	return badCase{in: in, want: want, call: func(w *badWorld) error {
		a := sim.QPInitAttr{Type: verbs.QPTypeXRCRecv, CompMask: sim.QPInitXRCD}
		q, err := mod(w, &a).CreateQP(a)
		if q != nil {
			w.failf("XRCD.CreateQP returned a QP with its error")
		}
		return err
	}}
}

// rcOn is an RC QP's creation attributes with both CQs c.
func rcOn(c *sim.CQ) sim.QPInitAttr {
	return sim.QPInitAttr{SendCQ: c, RecvCQ: c, Type: verbs.QPTypeRC, Cap: rcCaps}
}

// withSRQ is an RC QP on w.cq receiving through s.
func withSRQ(w *badWorld, s *sim.SRQ) sim.QPInitAttr {
	a := rcOn(w.cq)
	a.SRQ = s
	return a
}

// createCQEx returns a case that creates a CQ through w.ctx from attr.
func createCQEx(in string, want syscall.Errno, attr sim.CQInitAttr) badCase {
	return badCase{in: in, want: want, call: func(w *badWorld) error {
		c, err := w.ctx.CreateCQEx(attr)
		if c != nil {
			w.failf("CreateCQEx returned a CQ with its error")
		}
		return err
	}}
}

// readEx returns the cases of an ibv_wc_read_* accessor: with no batch open
// (on a CQ holding a completion) and on a destroyed CQ there is no current
// completion, which is EINVAL (CQX-07). A field left out of wc_flags needs
// an open batch: sim/internal/cq's TestExReadNotRequested.
func readEx(read func(c *sim.CQ) error) badEntry {
	return badEntry{cases: []badCase{
		{in: "no batch open", want: einval, call: func(w *badWorld) error { return read(w.free) }},
		{in: "destroyed CQ", want: einval, call: func(w *badWorld) error { return read(w.deadCQ) }},
	}}
}

// createCQ returns a case that creates a CQ through w.ctx.
func createCQ(in string, cqe int, ch func(w *badWorld) *sim.CompChannel, vec int) badCase {
	return badCase{in: in, want: einval, call: func(w *badWorld) error {
		c, err := w.ctx.CreateCQ(cqe, nil, ch(w), vec)
		if c != nil {
			w.failf("CreateCQ returned a CQ with its error")
		}
		return err
	}}
}

func noCh(*badWorld) *sim.CompChannel { return nil }

// createAH returns a case that creates an AH in w.pd from attr.
func createAH(in string, attr func(w *badWorld) verbs.AHAttr) badCase {
	return badCase{in: in, want: einval, call: func(w *badWorld) error {
		_, err := w.pd.CreateAH(attr(w))
		return err
	}}
}

// localAH is an address on port 1 of w's device, to be spoiled by a case.
func localAH(w *badWorld) verbs.AHAttr {
	p, _ := w.ctx.QueryPort(1)
	return verbs.AHAttr{DLID: p.LID, PortNum: 1}
}

// postSend returns a case that posts wr(w) on w.qp (or on the QP q picks).
func postSend(in string, want syscall.Errno, q func(w *badWorld) *sim.QP, wr func(w *badWorld) verbs.SendWR) badCase {
	return badCase{in: in, want: want, call: func(w *badWorld) error {
		n, err := q(w).PostSend([]verbs.SendWR{wr(w)})
		if n != 0 {
			w.failf("PostSend reported %d posted", n)
		}
		return err
	}}
}

func rcQP(w *badWorld) *sim.QP { return w.qp }

func sendWR(w *badWorld) verbs.SendWR {
	return verbs.SendWR{WRID: 1, Opcode: verbs.WRSend, SGList: []verbs.SGE{w.sge()}, Flags: verbs.SendSignaled}
}

func sges(w *badWorld, n int) []verbs.SGE {
	s := make([]verbs.SGE, n)
	for i := range s {
		s[i] = w.sge()
	}
	return s
}

// badTable is the coverage table: every exported method of badTypes, by
// "Type.Method", and the package's functions, by "func.Name".
var badTable = map[string]badEntry{
	// Fabric.
	"Fabric.AdvanceToNext": {reason: noArgs},
	"Fabric.Close":         {reason: noArgs + " (closing twice is documented to do nothing)"},
	"Fabric.Devices":       {reason: getter},
	"Fabric.Mode":          {reason: getter},
	"Fabric.Now":           {reason: getter},
	"Fabric.Pending":       {reason: getter},
	"Fabric.Future":        {reason: getter},
	"Fabric.Ready":         {reason: getter},
	"Fabric.Profile":       {reason: getter},
	"Fabric.Stats":         {reason: getter},
	"Fabric.Stabilize":     {reason: noArgs},
	"Fabric.Step":          {reason: noArgs},
	"Fabric.TraceRecords":  {reason: getter},
	"Fabric.Device": {cases: []badCase{
		{in: "empty name", want: syscall.ENODEV, call: func(w *badWorld) error { _, err := w.f.Device(""); return err }},
		{in: "unknown name", want: syscall.ENODEV, call: func(w *badWorld) error { _, err := w.f.Device("nope"); return err }},
		{in: "device of another fabric", want: syscall.ENODEV, call: func(w *badWorld) error { _, err := w.f.Device("other0"); return err }},
	}},
	"Fabric.ForceStatus": {cases: []badCase{
		{in: "nil QP", want: einval, call: func(w *badWorld) error { return w.f.ForceStatus(nil, 1, false, verbs.WCLocLenErr) }},
		{in: "success status", want: einval, call: func(w *badWorld) error { return w.f.ForceStatus(w.qp, 1, false, verbs.WCSuccess) }},
		{in: "status 999", want: einval, call: func(w *badWorld) error { return w.f.ForceStatus(w.qp, 1, false, 999) }},
		{in: "QP of another fabric", want: einval, call: func(w *badWorld) error { return w.f.ForceStatus(w.oqp, 1, false, verbs.WCLocLenErr) }},
		{in: "destroyed QP", want: einval,
			call: func(w *badWorld) error { return w.f.ForceStatus(w.deadQP, 1, false, verbs.WCLocLenErr) }},
	}},
	"Fabric.InjectFatal": {cases: []badCase{
		{in: "nil QP", want: einval, call: func(w *badWorld) error { return w.f.InjectFatal(nil) }},
		{in: "QP of another fabric", want: einval, call: func(w *badWorld) error { return w.f.InjectFatal(w.oqp) }},
		{in: "destroyed QP", want: einval,
			call: func(w *badWorld) error { return w.f.InjectFatal(w.deadQP) }},
	}},
	"Fabric.InjectPacketFault": {cases: []badCase{
		{in: "no action", want: einval, call: func(w *badWorld) error {
			_, err := w.f.InjectPacketFault(sim.PacketFault{})
			return err
		}},
		{in: "action 99", want: einval, call: func(w *badWorld) error {
			_, err := w.f.InjectPacketFault(sim.PacketFault{Action: 99})
			return err
		}},
		{in: "delay of 0 ticks", want: einval, call: func(w *badWorld) error {
			_, err := w.f.InjectPacketFault(sim.PacketFault{Action: sim.FaultDelay})
			return err
		}},
		{in: "negative skip", want: einval, call: func(w *badWorld) error {
			_, err := w.f.InjectPacketFault(sim.PacketFault{Action: sim.FaultDrop, Skip: -1})
			return err
		}},
		{in: "negative count", want: einval, call: func(w *badWorld) error {
			_, err := w.f.InjectPacketFault(sim.PacketFault{Action: sim.FaultDrop, Count: math.MinInt})
			return err
		}},
	}},
	"Fault.Hits":   {reason: getter},
	"Fault.Spent":  {reason: getter},
	"Fault.Remove": {reason: "takes no arguments; removing a removed fault (the dead sweep) or a nil one (the nil sweep) does nothing"},
	"Fabric.InjectSRQError": {cases: []badCase{
		{in: "nil SRQ", want: einval, call: func(w *badWorld) error { return w.f.InjectSRQError(nil) }},
		{in: "SRQ of another fabric", want: einval, call: func(w *badWorld) error { return w.f.InjectSRQError(w.osrq) }},
		{in: "destroyed SRQ", want: einval, call: func(w *badWorld) error { return w.f.InjectSRQError(w.deadSRQ) }},
	}},
	"Fabric.Receive": {cases: []badCase{
		{in: "nil frame", want: einval, call: func(w *badWorld) error { return w.f.Receive(nil) }},
		{in: "frame without magic", want: einval, call: func(w *badWorld) error { return w.f.Receive(make([]byte, 200)) }},
	}},
	"Fabric.RunUntilIdle": {cases: []badCase{
		{in: "limit MaxUint64 after the clock moved, retry timer armed", moves: true, call: func(w *badWorld) error {
			// Every packet lost: the send's retry timer stays armed until
			// retry_cnt is spent, which a limit of MaxUint64 ticks lets
			// happen.
			badNoErr(w.f.SetFaults(sim.Faults{Drop: 1}))
			w.f.Tick(10)
			if _, err := w.qp.PostSend([]verbs.SendWR{sendWR(w)}); err != nil {
				w.failf("PostSend: %v", err)
			}
			before := w.f.Now()
			if !w.f.RunUntilIdle(math.MaxUint64) {
				w.failf("RunUntilIdle(MaxUint64) stopped before the engine was idle, at tick %d", w.f.Now())
			}
			if now := w.f.Now(); now <= before {
				w.failf("the clock did not move from %d (the limit wrapped?)", before)
			}
			return nil
		}},
	}},
	"Fabric.SetFaults": {cases: []badCase{
		{in: "negative drop", want: einval,
			call: func(w *badWorld) error { return w.f.SetFaults(sim.Faults{Drop: -1}) }},
		{in: "duplicate above 1", want: einval,
			call: func(w *badWorld) error { return w.f.SetFaults(sim.Faults{Duplicate: 2}) }},
		{in: "NaN delay", want: einval,
			call: func(w *badWorld) error { return w.f.SetFaults(sim.Faults{Delay: math.NaN()}) }},
	}},
	"Fabric.Tick": {cases: []badCase{
		{in: "MaxUint64 after the clock moved", moves: true,
			call: func(w *badWorld) error {
				w.f.Tick(10)
				w.f.Tick(math.MaxUint64)
				if now := w.f.Now(); now != sim.MaxTick {
					w.failf("the clock is at %d, want it saturated at MaxTick (it wrapped)", now)
				}
				return nil
			}},
	}},
	"Fabric.WriteTrace": {cases: []badCase{
		{in: "nil writer", want: einval, call: func(w *badWorld) error { return w.f.WriteTrace(nil) }},
	}},

	// Device.
	"Device.Attr":        {reason: getter},
	"Device.Fabric":      {reason: getter},
	"Device.GUID":        {reason: getter},
	"Device.Name":        {reason: getter},
	"Device.Open":        {reason: noArgs},
	"Device.PortConfigs": {reason: noArgs},
	"Device.Verbs":       {reason: getter},
	"Device.SetPortState": {cases: []badCase{
		{in: "port 0", want: einval, call: func(w *badWorld) error { return w.dev.SetPortState(0, false) }},
		{in: "port 2 of a one-port device", want: einval, call: func(w *badWorld) error { return w.dev.SetPortState(2, false) }},
		{in: "port 255", want: einval, call: func(w *badWorld) error { return w.dev.SetPortState(255, true) }},
	}},

	// Context.
	"Context.AsyncEventCounts":  {reason: getter},
	"Context.AsyncEventsRaised": {reason: anyValue + " (an unknown type was raised 0 times)"},
	"Context.Device":            {reason: getter},
	"Context.NumCompVectors":    {reason: getter},
	"Context.String":            {reason: getter},
	"Context.Verbs":             {reason: getter},
	"Context.AllocPD": {cases: []badCase{
		{in: "closed context", want: einval, call: func(w *badWorld) error { _, err := w.deadCtx.AllocPD(); return err }},
	}},
	"XRCD.Context": {reason: getter},
	"XRCD.CreateQP": {cases: []badCase{
		createXRCQP("closed XRCD", einval, func(w *badWorld, a *sim.QPInitAttr) *sim.XRCD { return w.deadXRCD }),
		createXRCQP("comp_mask without XRCD", einval, func(w *badWorld, a *sim.QPInitAttr) *sim.XRCD { a.CompMask = sim.QPInitPD; return w.xrcd }),
		createXRCQP("comp_mask bit 31", eopnotsupp, func(w *badWorld, a *sim.QPInitAttr) *sim.XRCD { a.CompMask |= 1 << 31; return w.xrcd }),
		createXRCQP("type RC", einval, func(w *badWorld, a *sim.QPInitAttr) *sim.XRCD { a.Type = verbs.QPTypeRC; return w.xrcd }),
		createXRCQP("type XRC_SEND", einval, func(w *badWorld, a *sim.QPInitAttr) *sim.XRCD { a.Type = verbs.QPTypeXRCSend; return w.xrcd }),
		createXRCQP("send_ops_flags", eopnotsupp, func(w *badWorld, a *sim.QPInitAttr) *sim.XRCD {
			a.CompMask, a.SendOpsFlags = a.CompMask|sim.QPInitSendOpsFlags, verbs.QPExWithSend
			return w.xrcd
		}),
	}},
	"XRCD.Closed": {reason: getter},
	"XRCD.Close": {cases: []badCase{
		{in: "closed XRCD", want: einval, call: func(w *badWorld) error { return w.deadXRCD.Close() }},
		{in: "XRCD with an XRC SRQ", want: ebusy, call: func(w *badWorld) error { return w.xrcd.Close() }},
	}},
	"Context.Close": {cases: []badCase{
		{in: "closed context", want: einval, call: func(w *badWorld) error { return w.deadCtx.Close() }},
		{in: "context with CQs and PDs", want: ebusy, call: func(w *badWorld) error { return w.ctx.Close() }},
	}},
	"Context.OpenXRCD": {cases: []badCase{
		openXRCD("closed context", einval, func(w *badWorld) (*sim.Context, verbs.XRCDInitAttr) { return w.deadCtx, badXRCDAttr }),
		openXRCD("comp_mask 0", einval, func(w *badWorld) (*sim.Context, verbs.XRCDInitAttr) { return w.ctx, verbs.XRCDInitAttr{FD: -1} }),
		openXRCD("comp_mask FD only", einval, func(w *badWorld) (*sim.Context, verbs.XRCDInitAttr) {
			return w.ctx, verbs.XRCDInitAttr{CompMask: verbs.XRCDInitFD, FD: -1}
		}),
		openXRCD("comp_mask reserved bit", eopnotsupp, func(w *badWorld) (*sim.Context, verbs.XRCDInitAttr) {
			a := badXRCDAttr
			a.CompMask |= 1 << 2
			return w.ctx, a
		}),
		openXRCD("comp_mask bit 31", eopnotsupp, func(w *badWorld) (*sim.Context, verbs.XRCDInitAttr) {
			return w.ctx, verbs.XRCDInitAttr{CompMask: 1 << 31, FD: -1}
		}),
		openXRCD("fd 0 with O_CREAT", syscall.EBADF, func(w *badWorld) (*sim.Context, verbs.XRCDInitAttr) {
			a := badXRCDAttr
			a.FD, a.OFlags = 0, syscall.O_CREAT
			return w.ctx, a
		}),
		openXRCD("fd MinInt", syscall.EBADF, func(w *badWorld) (*sim.Context, verbs.XRCDInitAttr) {
			a := badXRCDAttr
			a.FD = math.MinInt
			return w.ctx, a
		}),
	}},
	"Context.CreateSRQEx": {cases: []badCase{
		createSRQEx("closed context", einval, func(w *badWorld, a *sim.SRQInitAttrEx) *sim.Context { return w.deadCtx }),
		createSRQEx("comp_mask reserved bit", eopnotsupp, func(w *badWorld, a *sim.SRQInitAttrEx) *sim.Context { a.CompMask |= 1 << 5; return w.ctx }),
		createSRQEx("comp_mask TM", eopnotsupp, func(w *badWorld, a *sim.SRQInitAttrEx) *sim.Context { a.CompMask |= verbs.SRQInitTM; return w.ctx }),
		createSRQEx("srq_type TM", eopnotsupp, func(w *badWorld, a *sim.SRQInitAttrEx) *sim.Context { a.Type = verbs.SRQTTM; return w.ctx }),
		createSRQEx("srq_type huge", einval, func(w *badWorld, a *sim.SRQInitAttrEx) *sim.Context { a.Type = math.MaxUint32; return w.ctx }),
		createSRQEx("no PD bit", einval, func(w *badWorld, a *sim.SRQInitAttrEx) *sim.Context { a.CompMask &^= verbs.SRQInitPD; return w.ctx }),
		createSRQEx("no XRCD bit", einval, func(w *badWorld, a *sim.SRQInitAttrEx) *sim.Context { a.CompMask &^= verbs.SRQInitXRCD; return w.ctx }),
		createSRQEx("no CQ bit", einval, func(w *badWorld, a *sim.SRQInitAttrEx) *sim.Context { a.CompMask &^= verbs.SRQInitCQ; return w.ctx }),
		createSRQEx("nil PD", einval, func(w *badWorld, a *sim.SRQInitAttrEx) *sim.Context { a.PD = nil; return w.ctx }),
		createSRQEx("deallocated PD", einval, func(w *badWorld, a *sim.SRQInitAttrEx) *sim.Context { a.PD = w.deadPD; return w.ctx }),
		createSRQEx("PD of another context", einval, func(w *badWorld, a *sim.SRQInitAttrEx) *sim.Context { a.PD = w.pd2; return w.ctx }),
		createSRQEx("PD of another fabric", einval, func(w *badWorld, a *sim.SRQInitAttrEx) *sim.Context { a.PD = w.opd; return w.ctx }),
		createSRQEx("basic, PD of another context", einval, func(w *badWorld, a *sim.SRQInitAttrEx) *sim.Context {
			a.CompMask, a.PD = verbs.SRQInitPD, w.pd2
			return w.ctx
		}),
		createSRQEx("nil XRCD", einval, func(w *badWorld, a *sim.SRQInitAttrEx) *sim.Context { a.XRCD = nil; return w.ctx }),
		createSRQEx("closed XRCD", einval, func(w *badWorld, a *sim.SRQInitAttrEx) *sim.Context { a.XRCD = w.deadXRCD; return w.ctx }),
		createSRQEx("XRCD of another context", einval, func(w *badWorld, a *sim.SRQInitAttrEx) *sim.Context { a.XRCD = w.xrcd2; return w.ctx }),
		createSRQEx("XRCD of another fabric", einval, func(w *badWorld, a *sim.SRQInitAttrEx) *sim.Context { a.XRCD = w.oxrcd; return w.ctx }),
		createSRQEx("nil CQ", einval, func(w *badWorld, a *sim.SRQInitAttrEx) *sim.Context { a.CQ = nil; return w.ctx }),
		createSRQEx("destroyed CQ", einval, func(w *badWorld, a *sim.SRQInitAttrEx) *sim.Context { a.CQ = w.deadCQ; return w.ctx }),
		createSRQEx("CQ of another context", einval, func(w *badWorld, a *sim.SRQInitAttrEx) *sim.Context { a.CQ = w.cq2; return w.ctx }),
		createSRQEx("CQ of another fabric", einval, func(w *badWorld, a *sim.SRQInitAttrEx) *sim.Context { a.CQ = w.ocq; return w.ctx }),
		createSRQEx("max_wr 0", einval, func(w *badWorld, a *sim.SRQInitAttrEx) *sim.Context { a.Attr.MaxWR = 0; return w.ctx }),
		createSRQEx("max_wr huge", einval, func(w *badWorld, a *sim.SRQInitAttrEx) *sim.Context { a.Attr.MaxWR = math.MaxUint32; return w.ctx }),
	}},
	"Context.CreateCompChannel": {cases: []badCase{
		{in: "closed context", want: einval, call: func(w *badWorld) error { _, err := w.deadCtx.CreateCompChannel(); return err }},
	}},
	"Context.CreateCQ": {cases: []badCase{
		createCQ("cqe 0", 0, noCh, 0),
		createCQ("cqe -1", -1, noCh, 0),
		createCQ("cqe MinInt", math.MinInt, noCh, 0),
		createCQ("cqe MaxInt", math.MaxInt, noCh, 0),
		createCQ("comp_vector -1", 4, noCh, -1),
		createCQ("comp_vector num_comp_vectors", 4, noCh, 4),
		createCQ("comp_vector MaxInt", 4, noCh, math.MaxInt),
		createCQ("destroyed channel", 4, func(w *badWorld) *sim.CompChannel { return w.deadCh }, 0),
		createCQ("channel of another fabric", 4, func(w *badWorld) *sim.CompChannel { return w.och }, 0),
		createCQ("channel of another context", 4,
			func(w *badWorld) *sim.CompChannel { return w.ch2 }, 0),
		{in: "closed context", want: einval, call: func(w *badWorld) error { _, err := w.deadCtx.CreateCQ(4, nil, nil, 0); return err }},
	}},
	"Context.CreateCQEx": {cases: []badCase{
		{in: "cqe 0", want: einval, call: func(w *badWorld) error { _, err := w.ctx.CreateCQEx(sim.CQInitAttr{}); return err }},
		{in: "comp_vector -1", want: einval, call: func(w *badWorld) error {
			_, err := w.ctx.CreateCQEx(sim.CQInitAttr{CQE: 4, CompVector: -1})
			return err
		}},
		{in: "channel of another fabric", want: einval, call: func(w *badWorld) error {
			_, err := w.ctx.CreateCQEx(sim.CQInitAttr{CQE: 4, Channel: w.och})
			return err
		}},
		{in: "closed context", want: einval, call: func(w *badWorld) error { _, err := w.deadCtx.CreateCQEx(sim.CQInitAttr{CQE: 4}); return err }},
		createCQEx("wc_flags CVLAN", eopnotsupp, sim.CQInitAttr{CQE: 4, WCFlags: verbs.WCExCVLAN}),
		createCQEx("wc_flags FLOW_TAG", eopnotsupp, sim.CQInitAttr{CQE: 4, WCFlags: verbs.WCExFlowTag}),
		createCQEx("wc_flags TM_INFO", eopnotsupp, sim.CQInitAttr{CQE: 4, WCFlags: verbs.WCExTMInfo}),
		createCQEx("wc_flags bit 63", eopnotsupp, sim.CQInitAttr{CQE: 4, WCFlags: 1 << 63}),
		createCQEx("wc_flags all", eopnotsupp, sim.CQInitAttr{CQE: 4, WCFlags: ^verbs.WCExFlags(0)}),
		createCQEx("comp_mask PD", eopnotsupp, sim.CQInitAttr{CQE: 4, CompMask: verbs.CQInitAttrMaskPD}),
		createCQEx("comp_mask bit 31", eopnotsupp, sim.CQInitAttr{CQE: 4, CompMask: 1 << 31}),
		createCQEx("flags bit 2", eopnotsupp, sim.CQInitAttr{CQE: 4, CompMask: verbs.CQInitAttrMaskFlags, Flags: 1 << 2}),
		createCQEx("flags all", eopnotsupp, sim.CQInitAttr{CQE: 4, CompMask: verbs.CQInitAttrMaskFlags, Flags: ^verbs.CQCreateFlags(0)}),
		createCQEx("unsupported wc_flags before cqe 0", eopnotsupp, sim.CQInitAttr{WCFlags: verbs.WCExCVLAN}),
		createCQEx("good wc_flags, cqe 0", einval, sim.CQInitAttr{WCFlags: verbs.WCStandardFlags | verbs.WCExCompletionTimestamp}),
	}},
	"Context.GetAsyncEvent": {cases: []badCase{
		{in: "nil context.Context", want: einval, call: func(w *badWorld) error {
			//lint:ignore SA1012 a nil context is the bad input under test
			_, err := w.ctx.GetAsyncEvent(nil)
			return err
		}},
		{in: "nil context.Context, nothing queued", want: einval, call: func(w *badWorld) error {
			//lint:ignore SA1012 a nil context is the bad input under test
			_, err := w.ctx2.GetAsyncEvent(nil)
			return err
		}},
		{in: "closed context", want: syscall.EBADF, call: func(w *badWorld) error {
			_, err := w.deadCtx.GetAsyncEvent(cancelled())
			return err
		}},
	}},
	"Context.TryGetAsyncEvent": {cases: []badCase{
		{in: "closed context", want: syscall.EBADF, call: func(w *badWorld) error { _, err := w.deadCtx.TryGetAsyncEvent(); return err }},
	}},
	"Context.QueryDevice": {cases: []badCase{
		{in: "closed context", want: einval, call: func(w *badWorld) error { _, err := w.deadCtx.QueryDevice(); return err }},
	}},
	"Context.QueryPort": {cases: []badCase{
		{in: "port 0", want: einval, call: func(w *badWorld) error { _, err := w.ctx.QueryPort(0); return err }},
		{in: "port 2", want: einval, call: func(w *badWorld) error { _, err := w.ctx.QueryPort(2); return err }},
		{in: "port 255", want: einval, call: func(w *badWorld) error { _, err := w.ctx.QueryPort(255); return err }},
		{in: "closed context", want: einval, call: func(w *badWorld) error { _, err := w.deadCtx.QueryPort(1); return err }},
	}},
	"Context.QueryGID": {cases: []badCase{
		{in: "port 0", want: einval, call: func(w *badWorld) error { _, err := w.ctx.QueryGID(0, 0); return err }},
		{in: "port 255", want: einval, call: func(w *badWorld) error { _, err := w.ctx.QueryGID(255, 0); return err }},
		{in: "index -1", want: einval, call: func(w *badWorld) error { _, err := w.ctx.QueryGID(1, -1); return err }},
		{in: "index MaxInt", want: einval, call: func(w *badWorld) error { _, err := w.ctx.QueryGID(1, math.MaxInt); return err }},
		{in: "closed context", want: einval, call: func(w *badWorld) error { _, err := w.deadCtx.QueryGID(1, 0); return err }},
	}},
	"Context.QueryGIDEx": {cases: []badCase{
		{in: "port 0", want: einval, call: func(w *badWorld) error { _, err := w.ctx.QueryGIDEx(0, 0, 0); return err }},
		{in: "port MaxUint32", want: einval, call: func(w *badWorld) error { _, err := w.ctx.QueryGIDEx(math.MaxUint32, 0, 0); return err }},
		{in: "index gid_tbl_len", want: einval, call: func(w *badWorld) error { _, err := w.ctx.QueryGIDEx(1, 128, 0); return err }},
		{in: "index MaxUint32", want: einval, call: func(w *badWorld) error { _, err := w.ctx.QueryGIDEx(1, math.MaxUint32, 0); return err }},
		{in: "empty entry", want: syscall.ENODATA, call: func(w *badWorld) error { _, err := w.ctx.QueryGIDEx(1, 1, 0); return err }},
		{in: "flags 1", want: einval, call: func(w *badWorld) error { _, err := w.ctx.QueryGIDEx(1, 0, 1); return err }},
		{in: "closed context", want: einval, call: func(w *badWorld) error { _, err := w.deadCtx.QueryGIDEx(1, 0, 0); return err }},
	}},
	"Context.QueryGIDTable": {cases: []badCase{
		{in: "max_entries 0", want: einval, call: func(w *badWorld) error { _, err := w.ctx.QueryGIDTable(0, 0); return err }},
		{in: "max_entries -1", want: einval, call: func(w *badWorld) error { _, err := w.ctx.QueryGIDTable(-1, 0); return err }},
		{in: "max_entries MinInt", want: einval, call: func(w *badWorld) error { _, err := w.ctx.QueryGIDTable(math.MinInt, 0); return err }},
		{in: "flags MaxUint32", want: einval, call: func(w *badWorld) error { _, err := w.ctx.QueryGIDTable(8, math.MaxUint32); return err }},
		{in: "closed context", want: einval, call: func(w *badWorld) error { _, err := w.deadCtx.QueryGIDTable(8, 0); return err }},
	}},
	"Context.QueryDeviceEx": {cases: []badCase{
		{in: "comp_mask 1", want: einval, call: func(w *badWorld) error { _, err := w.ctx.QueryDeviceEx(1); return err }},
		{in: "comp_mask MaxUint32", want: einval, call: func(w *badWorld) error { _, err := w.ctx.QueryDeviceEx(math.MaxUint32); return err }},
		{in: "closed context", want: einval, call: func(w *badWorld) error { _, err := w.deadCtx.QueryDeviceEx(0); return err }},
	}},
	"Context.QueryPKey": {cases: []badCase{
		{in: "port 0", want: einval, call: func(w *badWorld) error { _, err := w.ctx.QueryPKey(0, 0); return err }},
		{in: "index -1", want: einval, call: func(w *badWorld) error { _, err := w.ctx.QueryPKey(1, -1); return err }},
		{in: "index MinInt", want: einval, call: func(w *badWorld) error { _, err := w.ctx.QueryPKey(1, math.MinInt); return err }},
		{in: "index MaxInt", want: einval, call: func(w *badWorld) error { _, err := w.ctx.QueryPKey(1, math.MaxInt); return err }},
		{in: "closed context", want: einval, call: func(w *badWorld) error { _, err := w.deadCtx.QueryPKey(1, 0); return err }},
	}},

	// PD.
	"PD.Context": {reason: getter},
	"PD.Handle":  {reason: getter},
	"PD.CreateAH": {cases: []badCase{
		createAH("port 0", func(w *badWorld) verbs.AHAttr { a := localAH(w); a.PortNum = 0; return a }),
		createAH("port 9", func(w *badWorld) verbs.AHAttr { a := localAH(w); a.PortNum = 9; return a }),
		createAH("sgid_index 255", func(w *badWorld) verbs.AHAttr {
			a := localAH(w)
			a.IsGlobal, a.GRH.SGIDIndex = true, 255
			return a
		}),
		createAH("SL 200", func(w *badWorld) verbs.AHAttr { a := localAH(w); a.SL = 200; return a }),
		createAH("static rate 200", func(w *badWorld) verbs.AHAttr { a := localAH(w); a.StaticRate = 200; return a }),
		createAH("DLID 0", func(w *badWorld) verbs.AHAttr { a := localAH(w); a.DLID = 0; return a }),
		{in: "deallocated PD", want: einval, call: func(w *badWorld) error { _, err := w.deadPD.CreateAH(localAH(w)); return err }},
	}},
	"PD.CreateQP": {cases: []badCase{
		createQP("XRC SRQ as srq", einval, func(w *badWorld) sim.QPInitAttr { a := rcOn(w.cq); a.SRQ = w.xsrq; return a }),
		createQP("comp_mask XRCD (an XRC_RECV QP is made by XRCD.CreateQP)", syscall.EOPNOTSUPP, func(w *badWorld) sim.QPInitAttr { a := rcOn(w.cq); a.CompMask = 1 << 1; return a }),
		createQP("type XRC_RECV", einval, func(w *badWorld) sim.QPInitAttr { a := rcOn(w.cq); a.Type = verbs.QPTypeXRCRecv; return a }),
		createQP("XRC_SEND without a send CQ", einval, func(w *badWorld) sim.QPInitAttr {
			a := rcOn(w.cq)
			a.Type, a.SendCQ = verbs.QPTypeXRCSend, nil
			return a
		}),
		createQP("comp_mask bit 31", syscall.EOPNOTSUPP, func(w *badWorld) sim.QPInitAttr { a := rcOn(w.cq); a.CompMask = 1 << 31; return a }),
		createQP("send_ops_flags TSO", syscall.EOPNOTSUPP, func(w *badWorld) sim.QPInitAttr {
			a := rcOn(w.cq)
			a.CompMask, a.SendOpsFlags = sim.QPInitSendOpsFlags, verbs.QPExWithSend|verbs.QPExWithTSO
			return a
		}),
		createQP("send_ops_flags unknown bit", syscall.EOPNOTSUPP, func(w *badWorld) sim.QPInitAttr {
			a := rcOn(w.cq)
			a.CompMask, a.SendOpsFlags = sim.QPInitSendOpsFlags, 1<<40
			return a
		}),
		createQP("UD with RDMA_WRITE", syscall.EOPNOTSUPP, func(w *badWorld) sim.QPInitAttr {
			a := rcOn(w.cq)
			a.Type, a.CompMask, a.SendOpsFlags = verbs.QPTypeUD, sim.QPInitSendOpsFlags, verbs.QPExWithRDMAWrite
			return a
		}),
		createQP("no CQs", einval, func(w *badWorld) sim.QPInitAttr { return rcOn(nil) }),
		createQP("no recv CQ", einval, func(w *badWorld) sim.QPInitAttr { a := rcOn(w.cq); a.RecvCQ = nil; return a }),
		createQP("destroyed CQ", einval, func(w *badWorld) sim.QPInitAttr { return rcOn(w.deadCQ) }),
		createQP("CQ of another fabric", einval,
			func(w *badWorld) sim.QPInitAttr { return rcOn(w.ocq) }),
		createQP("CQ of another context", einval,
			func(w *badWorld) sim.QPInitAttr { return rcOn(w.cq2) }),
		createQP("destroyed SRQ", einval, func(w *badWorld) sim.QPInitAttr { return withSRQ(w, w.deadSRQ) }),
		// Not bad input: real verbs accept an SRQ of another PD of the
		// context, and so does verbsim (docs/srq.md, TestSRQOfAnotherPD).
		{in: "SRQ of another PD (accepted, as the kernel does)", moves: true, call: func(w *badWorld) error {
			q, err := w.pd.CreateQP(withSRQ(w, w.srqB))
			if err != nil || q == nil {
				w.failf("CreateQP with an SRQ of another PD: %v", err)
			}
			return nil
		}},
		createQP("SRQ of another context", einval,
			func(w *badWorld) sim.QPInitAttr { return withSRQ(w, w.srq2) }),
		createQP("SRQ of another fabric", einval,
			func(w *badWorld) sim.QPInitAttr { return withSRQ(w, w.osrq) }),
		createQP("UC with an SRQ", einval, func(w *badWorld) sim.QPInitAttr { a := withSRQ(w, w.srq); a.Type = verbs.QPTypeUC; return a }),
		createQP("type 0", einval, func(w *badWorld) sim.QPInitAttr { a := rcOn(w.cq); a.Type = 0; return a }),
		createQP("type 255", einval, func(w *badWorld) sim.QPInitAttr { a := rcOn(w.cq); a.Type = 255; return a }),
		createQP("max_send_wr MaxUint32", einval, func(w *badWorld) sim.QPInitAttr { a := rcOn(w.cq); a.Cap.MaxSendWR = math.MaxUint32; return a }),
		createQP("max_recv_sge MaxUint32", einval, func(w *badWorld) sim.QPInitAttr { a := rcOn(w.cq); a.Cap.MaxRecvSGE = math.MaxUint32; return a }),
		createQP("max_inline_data MaxUint32", einval, func(w *badWorld) sim.QPInitAttr { a := rcOn(w.cq); a.Cap.MaxInlineData = math.MaxUint32; return a }),
		{in: "deallocated PD", want: einval, call: func(w *badWorld) error { _, err := w.deadPD.CreateQP(rcOn(w.cq)); return err }},
	}},
	"PD.CreateSRQ": {cases: []badCase{
		{in: "max_wr 0", want: einval, call: func(w *badWorld) error {
			_, err := w.pd.CreateSRQ(sim.SRQInitAttr{Attr: verbs.SRQAttr{MaxWR: 0, MaxSGE: 1}})
			return err
		}},
		{in: "max_wr MaxUint32", want: einval, call: func(w *badWorld) error {
			_, err := w.pd.CreateSRQ(sim.SRQInitAttr{Attr: verbs.SRQAttr{MaxWR: math.MaxUint32, MaxSGE: 1}})
			return err
		}},
		// Not bad input: max_sge 0 becomes 1, as rxe does (docs/srq.md,
		// TestSRQMaxSGEZero).
		{in: "max_sge 0 (raised to 1, as rxe does)", moves: true, call: func(w *badWorld) error {
			s, err := w.pd.CreateSRQ(sim.SRQInitAttr{Attr: verbs.SRQAttr{MaxWR: 4, MaxSGE: 0}})
			if a, qerr := s.Query(); err != nil || qerr != nil || a.MaxSGE != 1 {
				w.failf("CreateSRQ with max_sge 0: %v, %v, max_sge %d; want it raised to 1", err, qerr, a.MaxSGE)
			}
			return nil
		}},
		{in: "max_sge MaxUint32", want: einval, call: func(w *badWorld) error {
			_, err := w.pd.CreateSRQ(sim.SRQInitAttr{Attr: verbs.SRQAttr{MaxWR: 4, MaxSGE: math.MaxUint32}})
			return err
		}},
		{in: "deallocated PD", want: einval, call: func(w *badWorld) error {
			_, err := w.deadPD.CreateSRQ(sim.SRQInitAttr{Attr: verbs.SRQAttr{MaxWR: 4, MaxSGE: 1}})
			return err
		}},
	}},
	"PD.Dealloc": {cases: []badCase{
		{in: "deallocated PD", want: einval, call: func(w *badWorld) error { return w.deadPD.Dealloc() }},
		{in: "PD with children", want: ebusy, call: func(w *badWorld) error { return w.pd.Dealloc() }},
	}},
	"Context.AllocDM": {cases: []badCase{
		allocDM("closed context", einval, func(w *badWorld) (*sim.Context, verbs.AllocDMAttr) { return w.deadCtx, verbs.AllocDMAttr{Length: 64} }),
		allocDM("length 0", einval, func(w *badWorld) (*sim.Context, verbs.AllocDMAttr) { return w.ctx, verbs.AllocDMAttr{} }),
		allocDM("length above max_dm_size", einval, func(w *badWorld) (*sim.Context, verbs.AllocDMAttr) {
			return w.ctx, verbs.AllocDMAttr{Length: w.dev.Attr().MaxDMSize + 1}
		}),
		allocDM("length MaxUint64", einval, func(w *badWorld) (*sim.Context, verbs.AllocDMAttr) {
			return w.ctx, verbs.AllocDMAttr{Length: math.MaxUint64}
		}),
		allocDM("comp_mask 1", einval, func(w *badWorld) (*sim.Context, verbs.AllocDMAttr) {
			return w.ctx, verbs.AllocDMAttr{Length: 64, CompMask: 1}
		}),
		allocDM("log_align_req 13", einval, func(w *badWorld) (*sim.Context, verbs.AllocDMAttr) {
			return w.ctx, verbs.AllocDMAttr{Length: 64, LogAlignReq: 13}
		}),
		allocDM("log_align_req MaxUint32", einval, func(w *badWorld) (*sim.Context, verbs.AllocDMAttr) {
			return w.ctx, verbs.AllocDMAttr{Length: 64, LogAlignReq: math.MaxUint32}
		}),
		allocDM("the whole budget while some is taken", syscall.ENOMEM, func(w *badWorld) (*sim.Context, verbs.AllocDMAttr) {
			return w.ctx, verbs.AllocDMAttr{Length: w.dev.Attr().MaxDMSize}
		}),
	}},
	"DM.Context": {reason: getter},
	"DM.Length":  {reason: getter},
	"DM.Free": {cases: []badCase{
		{in: "freed DM", want: einval, call: func(w *badWorld) error { return w.deadDM.Free() }},
		{in: "DM with an MR", want: ebusy, call: func(w *badWorld) error { return w.dm.Free() }},
	}},
	"DM.MemcpyTo": {cases: []badCase{
		{in: "freed DM", want: einval, call: func(w *badWorld) error { return w.deadDM.MemcpyTo(0, make([]byte, 4)) }},
		{in: "offset 1", want: einval, call: func(w *badWorld) error { return w.dm.MemcpyTo(1, make([]byte, 4)) }},
		{in: "length 3", want: einval, call: func(w *badWorld) error { return w.dm.MemcpyTo(0, make([]byte, 3)) }},
		{in: "past the end", want: syscall.EFAULT, call: func(w *badWorld) error { return w.dm.MemcpyTo(252, make([]byte, 8)) }},
		{in: "offset past the end", want: syscall.EFAULT, call: func(w *badWorld) error { return w.dm.MemcpyTo(260, make([]byte, 4)) }},
		{in: "offset MaxUint64", want: syscall.EFAULT, call: func(w *badWorld) error { return w.dm.MemcpyTo(math.MaxUint64, make([]byte, 4)) }},
	}},
	"DM.MemcpyFrom": {cases: []badCase{
		{in: "freed DM", want: einval, call: func(w *badWorld) error { return w.deadDM.MemcpyFrom(make([]byte, 4), 0) }},
		{in: "offset 2", want: einval, call: func(w *badWorld) error { return w.dm.MemcpyFrom(make([]byte, 4), 2) }},
		{in: "length 5", want: einval, call: func(w *badWorld) error { return w.dm.MemcpyFrom(make([]byte, 5), 0) }},
		{in: "length past the end", want: syscall.EFAULT, call: func(w *badWorld) error { return w.dm.MemcpyFrom(make([]byte, 260), 0) }},
		{in: "offset MaxUint64-3", want: syscall.EFAULT, call: func(w *badWorld) error { return w.dm.MemcpyFrom(make([]byte, 8), math.MaxUint64-3) }},
	}},
	"MR.DM": {reason: getter},
	"PD.RegDMMR": {cases: []badCase{
		regDMMR("deallocated PD", einval, func(w *badWorld) (*sim.PD, *sim.DM, uint64, uint64, verbs.AccessFlags) {
			return w.deadPD, w.dm, 0, 64, verbs.AccessZeroBased
		}),
		regDMMR("nil DM", einval, func(w *badWorld) (*sim.PD, *sim.DM, uint64, uint64, verbs.AccessFlags) {
			return w.pd, nil, 0, 64, verbs.AccessZeroBased
		}),
		regDMMR("freed DM", einval, func(w *badWorld) (*sim.PD, *sim.DM, uint64, uint64, verbs.AccessFlags) {
			return w.pd, w.deadDM, 0, 64, verbs.AccessZeroBased
		}),
		regDMMR("DM of another context", einval, func(w *badWorld) (*sim.PD, *sim.DM, uint64, uint64, verbs.AccessFlags) {
			return w.pd, w.dm2, 0, 64, verbs.AccessZeroBased
		}),
		regDMMR("without ZERO_BASED", einval, func(w *badWorld) (*sim.PD, *sim.DM, uint64, uint64, verbs.AccessFlags) {
			return w.pd, w.dm, 0, 64, verbs.AccessLocalWrite
		}),
		regDMMR("MW_BIND", einval, func(w *badWorld) (*sim.PD, *sim.DM, uint64, uint64, verbs.AccessFlags) {
			return w.pd, w.dm, 0, 64, verbs.AccessZeroBased | verbs.AccessLocalWrite | verbs.AccessMWBind
		}),
		regDMMR("ON_DEMAND", einval, func(w *badWorld) (*sim.PD, *sim.DM, uint64, uint64, verbs.AccessFlags) {
			return w.pd, w.dm, 0, 64, verbs.AccessZeroBased | verbs.AccessOnDemand
		}),
		regDMMR("REMOTE_WRITE without LOCAL_WRITE", einval, func(w *badWorld) (*sim.PD, *sim.DM, uint64, uint64, verbs.AccessFlags) {
			return w.pd, w.dm, 0, 64, verbs.AccessZeroBased | verbs.AccessRemoteWrite
		}),
		regDMMR("length past the end", einval, func(w *badWorld) (*sim.PD, *sim.DM, uint64, uint64, verbs.AccessFlags) {
			return w.pd, w.dm, 0, 260, verbs.AccessZeroBased
		}),
		regDMMR("offset past the end", einval, func(w *badWorld) (*sim.PD, *sim.DM, uint64, uint64, verbs.AccessFlags) {
			return w.pd, w.dm, 257, 0, verbs.AccessZeroBased
		}),
		regDMMR("offset+length wraps", einval, func(w *badWorld) (*sim.PD, *sim.DM, uint64, uint64, verbs.AccessFlags) {
			return w.pd, w.dm, 8, math.MaxUint64 - 4, verbs.AccessZeroBased
		}),
	}},
	"PD.RegMR": {cases: []badCase{
		{in: "nil buffer", want: einval, call: func(w *badWorld) error { _, err := w.pd.RegMR(nil, verbs.AccessLocalWrite); return err }},
		{in: "empty buffer", want: einval, call: func(w *badWorld) error { _, err := w.pd.RegMR([]byte{}, verbs.AccessLocalWrite); return err }},
		{in: "REMOTE_WRITE without LOCAL_WRITE", want: einval, call: func(w *badWorld) error {
			_, err := w.pd.RegMR(make([]byte, 8), verbs.AccessRemoteWrite)
			return err
		}},
		{in: "unknown access bit", want: einval, call: func(w *badWorld) error {
			_, err := w.pd.RegMR(make([]byte, 8), verbs.AccessLocalWrite|1<<30)
			return err
		}},
		{in: "deallocated PD", want: einval, call: func(w *badWorld) error { _, err := w.deadPD.RegMR(make([]byte, 8), 0); return err }},
	}},
	"PD.RegMRIOVA": {cases: []badCase{
		{in: "nil buffer", want: einval, call: func(w *badWorld) error { _, err := w.pd.RegMRIOVA(nil, 0x1000, verbs.AccessLocalWrite); return err }},
		{in: "hca_va MaxUint64 wraps", want: einval, call: func(w *badWorld) error {
			_, err := w.pd.RegMRIOVA(make([]byte, 8), math.MaxUint64, verbs.AccessLocalWrite)
			return err
		}},
		{in: "ZERO_BASED with a non-zero hca_va", want: einval, call: func(w *badWorld) error {
			_, err := w.pd.RegMRIOVA(make([]byte, 8), 0x1000, verbs.AccessLocalWrite|verbs.AccessZeroBased)
			return err
		}},
		{in: "deallocated PD", want: einval, call: func(w *badWorld) error { _, err := w.deadPD.RegMRIOVA(make([]byte, 8), 0, 0); return err }},
	}},

	// ibv_advise_mr (ODP-04 to ODP-06). An on-demand MR is registered by the
	// cases that need one, so they move the world.
	"PD.AdviseMR": {cases: []badCase{
		{in: "empty sg_list", want: einval, call: func(w *badWorld) error { return w.pd.AdviseMR(verbs.AdvisePrefetch, 0, nil) }},
		{in: "unknown flag bit", want: einval, call: func(w *badWorld) error {
			return w.pd.AdviseMR(verbs.AdvisePrefetch, 1<<1, []verbs.SGE{{Addr: w.mr.IOVA(), Length: 1, LKey: w.mr.LKey()}})
		}},
		{in: "unknown advice", want: eopnotsupp, call: func(w *badWorld) error {
			return w.pd.AdviseMR(3, verbs.AdviseMRFlagFlush, []verbs.SGE{{Addr: w.mr.IOVA(), Length: 1, LKey: w.mr.LKey()}})
		}},
		{in: "lkey of no MR", want: syscall.ENOENT, call: func(w *badWorld) error {
			return w.pd.AdviseMR(verbs.AdvisePrefetch, verbs.AdviseMRFlagFlush, []verbs.SGE{{Length: 1, LKey: 0xfffff01}})
		}},
		{in: "lkey of an MR without ON_DEMAND", want: syscall.ENOENT, call: func(w *badWorld) error {
			return w.pd.AdviseMR(verbs.AdvisePrefetch, verbs.AdviseMRFlagFlush, []verbs.SGE{{Addr: w.mr.IOVA(), Length: 1, LKey: w.mr.LKey()}})
		}},
		{in: "lkey of a deregistered MR", want: syscall.ENOENT, call: func(w *badWorld) error {
			return w.pd.AdviseMR(verbs.AdvisePrefetch, 0, []verbs.SGE{{Addr: w.deadMR.IOVA(), Length: 1, LKey: w.deadMR.LKey()}})
		}},
		{in: "rkey of a memory window", want: einval, call: func(w *badWorld) error {
			return w.pd.AdviseMR(verbs.AdvisePrefetch, 0, []verbs.SGE{{Length: 1, LKey: w.mw.RKey()}})
		}},
		{in: "deallocated PD", want: einval, call: func(w *badWorld) error {
			return w.deadPD.AdviseMR(verbs.AdvisePrefetch, 0, []verbs.SGE{{Addr: w.mr.IOVA(), Length: 1, LKey: w.mr.LKey()}})
		}},
		{in: "on-demand MR of another PD", want: syscall.EPERM, moves: true, call: func(w *badWorld) error {
			mr, err := w.pdB.RegMR(make([]byte, 64), verbs.AccessLocalWrite|verbs.AccessOnDemand)
			if err != nil {
				return err
			}
			return w.pd.AdviseMR(verbs.AdvisePrefetch, 0, []verbs.SGE{{Addr: mr.IOVA(), Length: 1, LKey: mr.LKey()}})
		}},
		{in: "PREFETCH_WRITE on a read-only on-demand MR", want: syscall.EPERM, moves: true, call: func(w *badWorld) error {
			mr, err := w.pd.RegMR(make([]byte, 64), verbs.AccessRemoteRead|verbs.AccessOnDemand)
			if err != nil {
				return err
			}
			return w.pd.AdviseMR(verbs.AdvisePrefetchWrite, 0, []verbs.SGE{{Addr: mr.IOVA(), Length: 1, LKey: mr.LKey()}})
		}},
		{in: "FLUSH with a range past the MR's last page", want: syscall.EFAULT, moves: true, call: func(w *badWorld) error {
			mr, err := w.pd.RegMR(make([]byte, 64), verbs.AccessLocalWrite|verbs.AccessOnDemand)
			if err != nil {
				return err
			}
			return w.pd.AdviseMR(verbs.AdvisePrefetch, verbs.AdviseMRFlagFlush, []verbs.SGE{{Addr: mr.IOVA() + 4000, Length: 200, LKey: mr.LKey()}})
		}},
		{in: "FLUSH with a range below the MR", want: syscall.EFAULT, moves: true, call: func(w *badWorld) error {
			mr, err := w.pd.RegMR(make([]byte, 64), verbs.AccessLocalWrite|verbs.AccessOnDemand)
			if err != nil {
				return err
			}
			return w.pd.AdviseMR(verbs.AdvisePrefetch, verbs.AdviseMRFlagFlush, []verbs.SGE{{Addr: mr.IOVA() - 1, Length: 2, LKey: mr.LKey()}})
		}},
	}},

	// MR.
	"MR.Access": {reason: getter},
	"MR.Addr":   {reason: getter},
	"MR.IOVA":   {reason: getter},
	"MR.LKey":   {reason: getter},
	"MR.Length": {reason: getter},
	"MR.PD":     {reason: getter},
	"MR.RKey":   {reason: getter},
	"MR.Dereg": {cases: []badCase{
		{in: "deregistered MR", want: einval, call: func(w *badWorld) error { return w.deadMR.Dereg() }},
	}},
	// A command error (IBV_REREG_MR_ERR_CMD) leaves the MR unusable under
	// the default profile (MR-14): those cases move the world.
	"MR.Rereg": {cases: []badCase{
		{in: "unknown flag bit", want: einval, call: func(w *badWorld) error {
			return w.mr.Rereg(1<<3|verbs.ReregChangeAccess, nil, nil, verbs.AccessLocalWrite)
		}},
		{in: "CHANGE_TRANSLATION with a nil buffer", want: einval, call: func(w *badWorld) error { return w.mr.Rereg(verbs.ReregChangeTranslation, nil, nil, 0) }},
		{in: "access without CHANGE_ACCESS", want: einval, call: func(w *badWorld) error { return w.mr.Rereg(verbs.ReregChangePD, w.pdB, nil, verbs.AccessLocalWrite) }},
		{in: "CHANGE_PD with a nil PD", want: einval, call: func(w *badWorld) error { return w.mr.Rereg(verbs.ReregChangePD, nil, nil, 0) }},
		{in: "deregistered MR", want: einval, call: func(w *badWorld) error { return w.deadMR.Rereg(verbs.ReregChangeAccess, nil, nil, 0) }},
		{in: "flags 0", want: einval, moves: true, call: func(w *badWorld) error { return w.mr.Rereg(0, nil, nil, 0) }},
		{in: "remote write without local write", want: einval, moves: true, call: func(w *badWorld) error {
			return w.mr.Rereg(verbs.ReregChangeAccess, nil, nil, verbs.AccessRemoteWrite)
		}},
		{in: "unknown access bit", want: einval, moves: true, call: func(w *badWorld) error { return w.mr.Rereg(verbs.ReregChangeAccess, nil, nil, 1<<12) }},
		{in: "deallocated PD", want: einval, moves: true, call: func(w *badWorld) error { return w.mr.Rereg(verbs.ReregChangePD, w.deadPD, nil, 0) }},
		{in: "PD of another context", want: einval, moves: true, call: func(w *badWorld) error { return w.mr.Rereg(verbs.ReregChangePD, w.pd2, nil, 0) }},
		{in: "PD of another fabric", want: einval, moves: true, call: func(w *badWorld) error { return w.mr.Rereg(verbs.ReregChangePD, w.opd, nil, 0) }},
		{in: "an MR left unusable by a command error", want: einval, moves: true, call: func(w *badWorld) error {
			_ = w.mr.Rereg(0, nil, nil, 0)
			return w.mr.Rereg(verbs.ReregChangeAccess, nil, nil, verbs.AccessLocalWrite)
		}},
	}},
	// ReregIOVA shares Rereg's checks; its own: a wrapping hca_va.
	"MR.ReregIOVA": {cases: []badCase{
		{in: "unknown flag bit", want: einval, call: func(w *badWorld) error {
			return w.mr.ReregIOVA(1<<3|verbs.ReregChangeAccess, nil, nil, 0, verbs.AccessLocalWrite)
		}},
		{in: "CHANGE_TRANSLATION with a nil buffer", want: einval, call: func(w *badWorld) error {
			return w.mr.ReregIOVA(verbs.ReregChangeTranslation, nil, nil, 0x1000, 0)
		}},
		{in: "deregistered MR", want: einval, call: func(w *badWorld) error { return w.deadMR.ReregIOVA(verbs.ReregChangeAccess, nil, nil, 0, 0) }},
		{in: "hca_va + length wraps", want: einval, moves: true, call: func(w *badWorld) error {
			return w.mr.ReregIOVA(verbs.ReregChangeTranslation, nil, make([]byte, 64), ^uint64(0)-8, 0)
		}},
		{in: "flags 0", want: einval, moves: true, call: func(w *badWorld) error { return w.mr.ReregIOVA(0, nil, nil, 0, 0) }},
	}},
	"ReregError.Error":  {reason: getter},
	"ReregError.Unwrap": {reason: getter},
	"MR.Ref": {cases: []badCase{
		{in: "deregistered MR", want: einval, call: func(w *badWorld) error { return w.deadMR.Ref() }},
	}},
	"MR.Unref": {cases: []badCase{
		{in: "MR without references", call: func(w *badWorld) error { w.mr.Unref(); return nil }},
		{in: "deregistered MR", call: func(w *badWorld) error { w.deadMR.Unref(); return nil }},
	}},

	// MW.
	"MW.PD":    {reason: getter},
	"MW.Type":  {reason: getter},
	"MW.RKey":  {reason: getter},
	"MW.Bound": {reason: getter},
	"MW.Dealloc": {cases: []badCase{
		{in: "deallocated MW", want: einval, call: func(w *badWorld) error { return w.deadMW.Dealloc() }},
	}},
	"PD.AllocMW": {cases: []badCase{
		{in: "type 0", want: einval, call: func(w *badWorld) error { _, err := w.pd.AllocMW(0); return err }},
		{in: "type 3", want: einval, call: func(w *badWorld) error { _, err := w.pd.AllocMW(3); return err }},
		{in: "huge type", want: einval, call: func(w *badWorld) error { _, err := w.pd.AllocMW(math.MaxUint32); return err }},
		{in: "deallocated PD", want: einval, call: func(w *badWorld) error { _, err := w.deadPD.AllocMW(verbs.MWType1); return err }},
	}},
	"QP.BindMW": {cases: []badCase{
		bindMW("nil MW", func(w *badWorld) (*sim.QP, *sim.MW) { return w.qp, nil }),
		bindMW("typed nil MW", func(w *badWorld) (*sim.QP, *sim.MW) { return w.qp, (*sim.MW)(nil) }),
		bindMW("type 2 MW", func(w *badWorld) (*sim.QP, *sim.MW) { return w.qp, w.mw2 }),
		bindMW("deallocated MW", func(w *badWorld) (*sim.QP, *sim.MW) { return w.qp, w.deadMW }),
		bindMW("MW of another fabric", func(w *badWorld) (*sim.QP, *sim.MW) { return w.qp, w.omw }),
		bindMW("UD QP", func(w *badWorld) (*sim.QP, *sim.MW) { return w.ud, w.mw }),
		bindMW("QP in RESET", func(w *badWorld) (*sim.QP, *sim.MW) { return w.qp2, w.mw }),
		bindMW("destroyed QP", func(w *badWorld) (*sim.QP, *sim.MW) { return w.deadQP, w.mw }),
		{in: "unknown send flag", want: einval, call: func(w *badWorld) error {
			return w.qp.BindMW(w.mw, 1, 1<<20, verbs.MWBindInfo{MR: w.mwr, Addr: w.mwr.Addr(), Length: 8})
		}},
	}},

	// AH.
	"AH.Attr": {reason: getter},
	"AH.PD":   {reason: getter},
	"AH.Destroy": {cases: []badCase{
		{in: "destroyed AH", want: einval, call: func(w *badWorld) error { return w.deadAH.Destroy() }},
	}},

	// CQ.
	"CQ.Armed":      {reason: getter},
	"CQ.CQE":        {reason: getter},
	"CQ.Channel":    {reason: getter},
	"CQ.CompVector": {reason: getter},
	"CQ.Context":    {reason: getter},
	"CQ.CQContext":  {reason: getter},
	"CQ.WRID":       {reason: getter},
	"CQ.Status":     {reason: getter},
	"CQ.Destroyed":  {reason: getter},
	"CQ.Len":        {reason: getter},
	"CQ.Overrun":    {reason: getter},
	"CQ.Snapshot":   {reason: getter},
	"CQ.AckEvents": {cases: []badCase{
		{in: "n -1", want: einval, call: func(w *badWorld) error { return w.free.AckEvents(-1) }},
		{in: "n MinInt", want: einval, call: func(w *badWorld) error { return w.free.AckEvents(math.MinInt) }},
		{in: "more than read", want: einval, call: func(w *badWorld) error { return w.free.AckEvents(2) }},
		{in: "n MaxInt", want: einval, call: func(w *badWorld) error { return w.free.AckEvents(math.MaxInt) }},
		{in: "destroyed CQ", want: einval, call: func(w *badWorld) error { return w.deadCQ.AckEvents(1) }},
	}},
	"CQ.Destroy": {cases: []badCase{
		{in: "destroyed CQ", want: einval, call: func(w *badWorld) error { return w.deadCQ.Destroy() }},
		{in: "CQ used by QPs", want: ebusy, call: func(w *badWorld) error { return w.cq.Destroy() }},
	}},
	"CQ.DestroyContext": {cases: []badCase{
		{in: "nil context.Context", want: einval, call: func(w *badWorld) error {
			//lint:ignore SA1012 a nil context is the bad input under test
			return w.free.DestroyContext(nil)
		}},
		{in: "destroyed CQ", want: einval, call: func(w *badWorld) error { return w.deadCQ.DestroyContext(context.Background()) }},
	}},
	"CQ.StartPoll": {cases: []badCase{
		{in: "destroyed CQ", want: einval, call: func(w *badWorld) error { return w.deadCQ.StartPoll() }},
		{in: "empty CQ", want: syscall.ENOENT, call: func(w *badWorld) error { return w.cq.StartPoll() }},
	}, reason: "a second StartPoll needs an open batch, which changes the CQ: sim/internal/cq's TestExMisuse and conformance CQX-06"},
	"CQ.NextPoll": {cases: []badCase{
		{in: "no batch open", want: einval, call: func(w *badWorld) error { return w.free.NextPoll() }},
		{in: "destroyed CQ", want: einval, call: func(w *badWorld) error { return w.deadCQ.NextPoll() }},
	}},
	"CQ.EndPoll": {cases: []badCase{
		{in: "no batch open", want: einval, call: func(w *badWorld) error { return w.free.EndPoll() }},
		{in: "after a failed StartPoll", want: einval, call: func(w *badWorld) error {
			if err := w.cq.StartPoll(); err == nil {
				w.failf("StartPoll on an empty CQ succeeded")
			}
			return w.cq.EndPoll()
		}},
		{in: "destroyed CQ", want: einval, call: func(w *badWorld) error { return w.deadCQ.EndPoll() }},
	}},
	"CQ.ReadOpcode":                readEx(func(c *sim.CQ) error { _, err := c.ReadOpcode(); return err }),
	"CQ.ReadVendorErr":             readEx(func(c *sim.CQ) error { _, err := c.ReadVendorErr(); return err }),
	"CQ.ReadWCFlags":               readEx(func(c *sim.CQ) error { _, err := c.ReadWCFlags(); return err }),
	"CQ.ReadByteLen":               readEx(func(c *sim.CQ) error { _, err := c.ReadByteLen(); return err }),
	"CQ.ReadImmData":               readEx(func(c *sim.CQ) error { _, err := c.ReadImmData(); return err }),
	"CQ.ReadInvalidatedRkey":       readEx(func(c *sim.CQ) error { _, err := c.ReadInvalidatedRkey(); return err }),
	"CQ.ReadQPNum":                 readEx(func(c *sim.CQ) error { _, err := c.ReadQPNum(); return err }),
	"CQ.ReadSrcQP":                 readEx(func(c *sim.CQ) error { _, err := c.ReadSrcQP(); return err }),
	"CQ.ReadSLID":                  readEx(func(c *sim.CQ) error { _, err := c.ReadSLID(); return err }),
	"CQ.ReadSL":                    readEx(func(c *sim.CQ) error { _, err := c.ReadSL(); return err }),
	"CQ.ReadDLIDPathBits":          readEx(func(c *sim.CQ) error { _, err := c.ReadDLIDPathBits(); return err }),
	"CQ.ReadCompletionTS":          readEx(func(c *sim.CQ) error { _, err := c.ReadCompletionTS(); return err }),
	"CQ.ReadCompletionWallclockNS": readEx(func(c *sim.CQ) error { _, err := c.ReadCompletionWallclockNS(); return err }),
	"CQ.WCFlags":                   {reason: getter},
	"CQ.Current":                   readEx(func(c *sim.CQ) error { _, _, err := c.Current(); return err }),
	"CQ.Poll": {cases: []badCase{
		{in: "destroyed CQ", want: einval, call: func(w *badWorld) error { _, err := w.deadCQ.Poll(make([]verbs.WC, 1)); return err }},
		{in: "nil slice", call: func(w *badWorld) error {
			if n, err := w.free.Poll(nil); n != 0 || err != nil {
				w.failf("Poll(nil) = %d, %v; want 0, nil (num_entries 0)", n, err)
			}
			return nil
		}},
	}},
	"CQ.Push": {cases: []badCase{
		{in: "destroyed CQ", want: einval, call: func(w *badWorld) error {
			_, err := w.deadCQ.Push(verbs.WC{Status: verbs.WCSuccess, Opcode: verbs.WCRecv}, false)
			return err
		}},
		{in: "status 999", want: einval, call: func(w *badWorld) error {
			_, err := w.free.Push(verbs.WC{Status: 999, Opcode: verbs.WCRecv}, false)
			return err
		}},
		{in: "opcode 999", want: einval, call: func(w *badWorld) error {
			_, err := w.free.Push(verbs.WC{Status: verbs.WCSuccess, Opcode: 999}, false)
			return err
		}},
	}},
	"func.engine CQ.PushLocked": {cases: []badCase{
		{in: "nil WC", want: einval, call: func(w *badWorld) error {
			mu := sim.EngineCQ(w.free).Domain()
			mu.Lock()
			defer mu.Unlock()
			_, err := sim.EngineCQ(w.free).PushLocked(nil, false)
			return err
		}},
		{in: "destroyed CQ", want: einval, call: func(w *badWorld) error {
			mu := sim.EngineCQ(w.deadCQ).Domain()
			mu.Lock()
			defer mu.Unlock()
			_, err := sim.EngineCQ(w.deadCQ).PushLocked(&verbs.WC{Opcode: verbs.WCRecv}, false)
			return err
		}},
	}},
	"func.engine CQ.PushWQELocked": {cases: []badCase{
		{in: "nil WC", want: einval, call: func(w *badWorld) error {
			mu := sim.EngineCQ(w.free).Domain()
			mu.Lock()
			defer mu.Unlock()
			_, err := sim.EngineCQ(w.free).PushWQELocked(nil, false, nil, 0)
			return err
		}},
	}},
	"CQ.Ref": {cases: []badCase{
		{in: "destroyed CQ", want: einval, call: func(w *badWorld) error { return w.deadCQ.Ref() }},
	}},
	"func.engine CQ.RefLocked": {cases: []badCase{
		{in: "destroyed CQ", want: einval, call: func(w *badWorld) error {
			mu := sim.EngineCQ(w.deadCQ).Domain()
			mu.Lock()
			defer mu.Unlock()
			return sim.EngineCQ(w.deadCQ).RefLocked()
		}},
	}},
	"CQ.ReqNotify": {cases: []badCase{
		{in: "destroyed CQ", want: einval, call: func(w *badWorld) error { return w.deadCQ.ReqNotify(true) }},
	}},
	"CQ.Resize": {cases: []badCase{
		{in: "cqe 0", want: einval, call: func(w *badWorld) error { return w.free.Resize(0) }},
		{in: "cqe -1", want: einval, call: func(w *badWorld) error { return w.free.Resize(-1) }},
		{in: "cqe MaxInt", want: einval, call: func(w *badWorld) error { return w.free.Resize(math.MaxInt) }},
		{in: "destroyed CQ", want: einval, call: func(w *badWorld) error { return w.deadCQ.Resize(8) }},
	}},
	"CQ.Unref": {cases: []badCase{
		{in: "CQ without references", call: func(w *badWorld) error { w.free.Unref(); return nil }},
		{in: "destroyed CQ", call: func(w *badWorld) error { w.deadCQ.Unref(); return nil }},
	}},
	"func.engine CQ.UnrefLocked": {cases: []badCase{
		{in: "CQ without references", call: func(w *badWorld) error {
			mu := sim.EngineCQ(w.free).Domain()
			mu.Lock()
			defer mu.Unlock()
			sim.EngineCQ(w.free).UnrefLocked()
			return nil
		}},
	}},

	// CompChannel.
	"CompChannel.Destroyed":      {reason: getter},
	"CompChannel.Len":            {reason: getter},
	"CompChannel.Pending":        {reason: getter},
	"Context.PendingAsyncEvents": {reason: getter},
	"CompChannel.Refs":           {reason: getter},
	"CompChannel.Context":        {reason: getter},
	"CompChannel.Destroy": {cases: []badCase{
		{in: "destroyed channel", want: einval, call: func(w *badWorld) error { return w.deadCh.Destroy() }},
		{in: "channel used by CQs", want: ebusy, call: func(w *badWorld) error { return w.ch.Destroy() }},
	}},
	"func.engine CompChannel.DiscardLocked": {cases: []badCase{
		{in: "CQ of another channel", call: func(w *badWorld) error {
			mu := sim.EngineChannel(w.ch).Domain()
			mu.Lock()
			defer mu.Unlock()
			if n := sim.EngineChannel(w.ch).DiscardLocked(sim.EngineCQ(w.deadCQ)); n != 0 {
				w.failf("discarded %d events of a CQ that has none", n)
			}
			return nil
		}},
	}},
	"CompChannel.GetEvent": {cases: []badCase{
		{in: "nil context.Context", want: einval, call: func(w *badWorld) error {
			//lint:ignore SA1012 a nil context is the bad input under test
			_, _, err := w.ch.GetEvent(nil)
			return err
		}},
		{in: "destroyed channel", want: syscall.EBADF, call: func(w *badWorld) error {
			_, _, err := w.deadCh.GetEvent(cancelled())
			return err
		}},
	}},
	"CompChannel.TryGetEvent": {cases: []badCase{
		{in: "destroyed channel", want: syscall.EBADF, call: func(w *badWorld) error { _, _, err := w.deadCh.TryGetEvent(); return err }},
	}},
	"func.engine CompChannel.PushLocked": {cases: []badCase{
		{in: "nil CQ", call: func(w *badWorld) error {
			mu := sim.EngineChannel(w.ch).Domain()
			mu.Lock()
			defer mu.Unlock()
			sim.EngineChannel(w.ch).PushLocked(nil, nil, nil)
			return nil
		}},
		{in: "destroyed channel", call: func(w *badWorld) error {
			mu := sim.EngineChannel(w.deadCh).Domain()
			mu.Lock()
			defer mu.Unlock()
			sim.EngineChannel(w.deadCh).PushLocked(sim.EngineCQ(w.free), nil, nil)
			return nil
		}},
	}},
	"func.engine CompChannel.RefLocked": {cases: []badCase{
		{in: "destroyed channel", want: einval, call: func(w *badWorld) error {
			mu := sim.EngineChannel(w.deadCh).Domain()
			mu.Lock()
			defer mu.Unlock()
			return sim.EngineChannel(w.deadCh).RefLocked()
		}},
	}},
	"func.engine CompChannel.UnrefLocked": {cases: []badCase{
		{in: "channel without references", call: func(w *badWorld) error {
			mu := sim.EngineChannel(w.deadCh).Domain()
			mu.Lock()
			defer mu.Unlock()
			sim.EngineChannel(w.deadCh).UnrefLocked()
			return nil
		}},
	}},

	// QP.
	"QP.Cap":                 {reason: getter},
	"QP.SendOpsFlags":        {reason: getter},
	"QP.SetWRID":             {reason: anyValue},
	"QP.SetWRFlags":          {reason: anyValue + " (unknown flags fail the batch at WRComplete, QP.WRComplete cases)"},
	"QP.WRSend":              {reason: wrVoid},
	"QP.WRSendImm":           {reason: wrVoid},
	"QP.WRSendInv":           {reason: wrVoid},
	"QP.WRRDMAWrite":         {reason: wrVoid},
	"QP.WRRDMAWriteImm":      {reason: wrVoid},
	"QP.WRRDMARead":          {reason: wrVoid},
	"QP.WRAtomicCmpSwp":      {reason: wrVoid},
	"QP.WRAtomicFetchAdd":    {reason: wrVoid},
	"QP.WRAtomicWrite":       {reason: wrVoid},
	"QP.WRBindMW":            {reason: wrVoid},
	"QP.WRLocalInv":          {reason: wrVoid},
	"QP.WRSetSGE":            {reason: wrVoid},
	"QP.WRSetSGEList":        {reason: wrVoid},
	"QP.WRSetInlineData":     {reason: wrVoid},
	"QP.WRSetInlineDataList": {reason: wrVoid},
	"QP.WRSetUDAddr":         {reason: wrVoid},
	"QP.WRSetXRCSRQN":        {reason: wrVoid},
	"QP.WRAbort":             {reason: noArgs + " (without an open batch it does nothing)"},
	"QP.WRStart": {cases: []badCase{
		{in: "twice", call: func(w *badWorld) error {
			w.qp.WRStart()
			w.qp.WRStart()
			if err := w.qp.WRComplete(); err == nil {
				w.failf("WRComplete after WRStart twice succeeded")
			}
			return nil
		}},
	}},
	"QP.WRComplete": {cases: []badCase{
		{in: "no WRStart", want: einval, call: func(w *badWorld) error { return w.qp.WRComplete() }},
		{in: "builders outside a batch", want: einval, call: func(w *badWorld) error {
			w.qp.WRSend()
			w.qp.WRSetSGEList([]verbs.SGE{{Addr: w.mr.Addr(), Length: 8, LKey: w.mr.LKey()}})
			w.qp.WRSetInlineDataList([][]byte{nil, make([]byte, 1<<20)})
			return w.qp.WRComplete()
		}},
		{in: "QP without send_ops_flags", want: syscall.EOPNOTSUPP, call: func(w *badWorld) error {
			w.qp.WRStart()
			w.qp.WRSend()
			w.qp.WRSetSGE(w.mr.LKey(), w.mr.Addr(), 8)
			return w.qp.WRComplete()
		}},
		{in: "setter before any builder, nil arguments", want: einval, call: func(w *badWorld) error {
			w.ud.WRStart()
			w.ud.WRSetUDAddr(nil, 0, 0)
			w.ud.WRSetSGEList(nil)
			w.ud.WRSetInlineData(nil)
			w.ud.WRBindMW(nil, 0, verbs.MWBindInfo{})
			return w.ud.WRComplete()
		}},
		{in: "destroyed QP", want: einval, call: func(w *badWorld) error {
			w.deadQP.WRStart()
			return w.deadQP.WRComplete()
		}},
	}},
	"QP.QPContext":   {reason: getter},
	"QP.SendCQ":      {reason: getter},
	"QP.RecvCQ":      {reason: getter},
	"QP.SRQ":         {reason: getter},
	"QP.XRCD":        {reason: getter},
	"QP.Context":     {reason: getter},
	"QP.Destroyed":   {reason: getter},
	"QP.Num":         {reason: getter},
	"QP.Outstanding": {reason: getter},
	"QP.PD":          {reason: getter},
	"QP.State":       {reason: getter},
	"QP.Stats":       {reason: getter},
	"QP.Type":        {reason: getter},
	"func.engine QP.ReceiveLocked": {cases: []badCase{
		{in: "nil packet", call: func(w *badWorld) error {
			mu := sim.EngineCQ(w.cq).Domain()
			mu.Lock()
			defer mu.Unlock()
			sim.EngineQP(w.qp).ReceiveLocked(nil)
			return nil
		}},
	}},
	"QP.Destroy": {cases: []badCase{
		{in: "destroyed QP", want: einval, call: func(w *badWorld) error { return w.deadQP.Destroy() }},
	}},
	"QP.DestroyContext": {cases: []badCase{
		{in: "nil context.Context", want: einval, call: func(w *badWorld) error {
			//lint:ignore SA1012 a nil context is the bad input under test
			return w.qp.DestroyContext(nil)
		}},
		{in: "destroyed QP", want: einval, call: func(w *badWorld) error { return w.deadQP.DestroyContext(context.Background()) }},
	}},
	"QP.Modify": {cases: []badCase{
		{in: "nil attr", want: einval, call: func(w *badWorld) error { return w.qp.Modify(nil, verbs.QPAttrState) }},
		{in: "state 99", want: einval, call: func(w *badWorld) error { return w.qp.Modify(&verbs.QPAttr{QPState: 99}, verbs.QPAttrState) }},
		{in: "unknown mask bit", want: einval, call: func(w *badWorld) error {
			return w.qp.Modify(&verbs.QPAttr{QPState: verbs.QPStateRTS}, verbs.QPAttrState|1<<30)
		}},
		{in: "RTS to RTR", want: einval, call: func(w *badWorld) error {
			return w.qp.Modify(&verbs.QPAttr{QPState: verbs.QPStateRTR}, verbs.QPAttrState)
		}},
		{in: "RESET to INIT on port 9", want: einval, call: func(w *badWorld) error {
			return w.qp2.Modify(&verbs.QPAttr{QPState: verbs.QPStateInit, PortNum: 9}, verbs.QPAttrState|verbs.QPAttrPKeyIndex|verbs.QPAttrPort|verbs.QPAttrAccessFlags)
		}},
		{in: "timeout 255", want: einval, call: func(w *badWorld) error { return w.qp.Modify(&verbs.QPAttr{Timeout: 255}, verbs.QPAttrTimeout) }},
		{in: "destroyed QP", want: einval, call: func(w *badWorld) error {
			return w.deadQP.Modify(&verbs.QPAttr{QPState: verbs.QPStateReset}, verbs.QPAttrState)
		}},
	}},
	"func.engine QP.ModifyLocked": {cases: []badCase{
		{in: "nil attr", want: einval, call: func(w *badWorld) error {
			mu := sim.EngineCQ(w.cq).Domain()
			mu.Lock()
			defer mu.Unlock()
			return sim.EngineQP(w.qp).ModifyLocked(nil, verbs.QPAttrState)
		}},
		{in: "destroyed QP", want: einval, call: func(w *badWorld) error {
			mu := sim.EngineCQ(w.cq).Domain()
			mu.Lock()
			defer mu.Unlock()
			return sim.EngineQP(w.deadQP).ModifyLocked(&verbs.QPAttr{QPState: verbs.QPStateReset}, verbs.QPAttrState)
		}},
	}},
	"QP.PostSend": {cases: []badCase{
		postSend("opcode 99", einval, rcQP, func(w *badWorld) verbs.SendWR { r := sendWR(w); r.Opcode = 99; return r }),
		postSend("num_sge above max_send_sge", einval, rcQP, func(w *badWorld) verbs.SendWR { r := sendWR(w); r.SGList = sges(w, 3); return r }),
		postSend("unknown flag", einval, rcQP, func(w *badWorld) verbs.SendWR { r := sendWR(w); r.Flags |= 1 << 20; return r }),
		postSend("inline above max_inline_data", einval, rcQP, func(w *badWorld) verbs.SendWR {
			r := sendWR(w)
			r.Flags |= verbs.SendInline
			r.SGList = []verbs.SGE{{Addr: w.mr.Addr(), Length: 64, LKey: w.mr.LKey()}}
			return r
		}),
		postSend("inline from unregistered memory", syscall.EFAULT, rcQP, func(w *badWorld) verbs.SendWR {
			r := sendWR(w)
			r.Flags |= verbs.SendInline
			r.SGList = []verbs.SGE{{Addr: 1, Length: 8}}
			return r
		}),
		postSend("UD send without an AH", einval, func(w *badWorld) *sim.QP { return w.ud }, sendWR),
		postSend("RDMA WRITE on UD", einval, func(w *badWorld) *sim.QP { return w.ud }, func(w *badWorld) verbs.SendWR {
			r := sendWR(w)
			r.Opcode, r.AH = verbs.WRRDMAWrite, w.ah
			return r
		}),
		postSend("QP in RESET", einval, func(w *badWorld) *sim.QP { return w.qp2 }, sendWR),
		postSend("destroyed QP", einval, func(w *badWorld) *sim.QP { return w.deadQP }, sendWR),
	}},
	"QP.PostRecv": {cases: []badCase{
		{in: "num_sge above max_recv_sge", want: einval, call: func(w *badWorld) error {
			_, err := w.qp.PostRecv([]verbs.RecvWR{{WRID: 1, SGList: sges(w, 3)}})
			return err
		}},
		{in: "QP with an SRQ", want: einval, call: func(w *badWorld) error {
			_, err := w.sq.PostRecv([]verbs.RecvWR{{WRID: 1, SGList: sges(w, 1)}})
			return err
		}},
		{in: "QP in RESET", want: einval, call: func(w *badWorld) error {
			_, err := w.qp2.PostRecv([]verbs.RecvWR{{WRID: 1}})
			return err
		}},
		{in: "destroyed QP", want: einval, call: func(w *badWorld) error {
			_, err := w.deadQP.PostRecv([]verbs.RecvWR{{WRID: 1}})
			return err
		}},
		{in: "more than max_recv_wr", want: syscall.ENOMEM, moves: true, call: func(w *badWorld) error {
			n, err := w.qp.PostRecv(make([]verbs.RecvWR, 5))
			if n != 4 {
				w.failf("posted %d of 5 on a queue of 4", n)
			}
			return err
		}},
	}},
	"QP.Query": {cases: []badCase{
		{in: "IBV_QP_RATE_LIMIT", want: syscall.EOPNOTSUPP, call: func(w *badWorld) error { _, _, err := w.qp.Query(verbs.QPAttrRateLimit); return err }},
		{in: "bit 31", want: syscall.EOPNOTSUPP, call: func(w *badWorld) error { _, _, err := w.qp.Query(1 << 31); return err }},
		{in: "every bit", want: syscall.EOPNOTSUPP, call: func(w *badWorld) error { _, _, err := w.qp.Query(^verbs.QPAttrMask(0)); return err }},
		{in: "destroyed QP", want: einval, call: func(w *badWorld) error { _, _, err := w.deadQP.Query(verbs.QPAttrState); return err }},
	}},

	// SRQ.
	"SRQ.SRQContext": {reason: getter},
	"SRQ.Context":    {reason: getter},
	"SRQ.Len":        {reason: getter},
	"SRQ.PD":         {reason: getter},
	"SRQ.Destroy": {cases: []badCase{
		{in: "destroyed SRQ", want: einval, call: func(w *badWorld) error { return w.deadSRQ.Destroy() }},
		{in: "SRQ used by a QP", want: ebusy, call: func(w *badWorld) error { return w.srq.Destroy() }},
	}},
	"SRQ.DestroyContext": {cases: []badCase{
		{in: "nil context.Context", want: einval, call: func(w *badWorld) error {
			//lint:ignore SA1012 a nil context is the bad input under test
			return w.srqB.DestroyContext(nil)
		}},
		{in: "destroyed SRQ", want: einval, call: func(w *badWorld) error { return w.deadSRQ.DestroyContext(context.Background()) }},
	}},
	"SRQ.InjectError": {cases: []badCase{
		{in: "destroyed SRQ", want: einval, call: func(w *badWorld) error { return w.deadSRQ.InjectError() }},
	}},
	"SRQ.Modify": {cases: []badCase{
		{in: "nil attr", want: einval, call: func(w *badWorld) error { return w.srq.Modify(nil, verbs.SRQLimit) }},
		{in: "unknown mask bit", want: einval, call: func(w *badWorld) error { return w.srq.Modify(&verbs.SRQAttr{SRQLimit: 1}, 1<<7) }},
		{in: "limit above max_wr", want: einval, call: func(w *badWorld) error { return w.srq.Modify(&verbs.SRQAttr{SRQLimit: 100}, verbs.SRQLimit) }},
		{in: "max_wr MaxUint32", want: einval, call: func(w *badWorld) error { return w.srq.Modify(&verbs.SRQAttr{MaxWR: math.MaxUint32}, verbs.SRQMaxWR) }},
		{in: "destroyed SRQ", want: einval, call: func(w *badWorld) error { return w.deadSRQ.Modify(&verbs.SRQAttr{SRQLimit: 1}, verbs.SRQLimit) }},
	}},
	"SRQ.PostRecv": {cases: []badCase{
		{in: "num_sge above max_sge", want: einval, call: func(w *badWorld) error {
			_, err := w.srq.PostRecv([]verbs.RecvWR{{WRID: 1, SGList: sges(w, 3)}})
			return err
		}},
		{in: "destroyed SRQ", want: einval, call: func(w *badWorld) error {
			_, err := w.deadSRQ.PostRecv([]verbs.RecvWR{{WRID: 1}})
			return err
		}},
	}},
	"SRQ.GetSRQNum": {cases: []badCase{
		{in: "basic (non-XRC) SRQ", want: syscall.EOPNOTSUPP, call: func(w *badWorld) error { _, err := w.srq.GetSRQNum(); return err }},
		{in: "destroyed SRQ", want: einval, call: func(w *badWorld) error { _, err := w.deadSRQ.GetSRQNum(); return err }},
	}},
	"SRQ.XRC": {reason: getter},
	"SRQ.Query": {cases: []badCase{
		{in: "destroyed SRQ", want: einval, call: func(w *badWorld) error { _, err := w.deadSRQ.Query(); return err }},
	}},
	"SRQ.Take": {cases: []badCase{
		{in: "destroyed SRQ", call: func(w *badWorld) error {
			if _, _, ok := w.deadSRQ.Take(); ok {
				w.failf("took a WR from a destroyed SRQ")
			}
			return nil
		}},
	}},
	"func.engine SRQ.TakeLocked": {cases: []badCase{
		{in: "destroyed SRQ", call: func(w *badWorld) error {
			mu := sim.EngineSRQ(w.deadSRQ).Domain()
			mu.Lock()
			defer mu.Unlock()
			if _, _, ok := sim.EngineSRQ(w.deadSRQ).TakeLocked(nil); ok {
				w.failf("took a WR from a destroyed SRQ")
			}
			return nil
		}},
	}},

	// AsyncQueue.
	"AsyncQueue.Counts":       {reason: getter},
	"AsyncQueue.Domain":       {reason: getter},
	"AsyncQueue.Len":          {reason: getter},
	"AsyncQueue.Pending":      {reason: getter},
	"AsyncQueue.Raised":       {reason: anyValue + " (an unknown type was raised 0 times)"},
	"AsyncQueue.SetTraceName": {reason: anyValue + " (the name is only shown in the trace)"},
	"AsyncQueue.TraceName":    {reason: getter},
	"AsyncQueue.Close": {cases: []badCase{
		{in: "closed queue", want: einval, call: func(w *badWorld) error { return sim.EngineAsyncQueue(w.deadCtx).Close() }},
	}},
	"AsyncQueue.CloseLocked": {cases: []badCase{
		{in: "closed queue", want: einval, call: func(w *badWorld) error {
			q := sim.EngineAsyncQueue(w.deadCtx)
			q.Domain().Lock()
			defer q.Domain().Unlock()
			return q.CloseLocked()
		}},
	}},
	"AsyncQueue.DiscardLocked": {cases: []badCase{
		{in: "nil object", call: func(w *badWorld) error {
			q := sim.EngineAsyncQueue(w.ctx)
			q.Domain().Lock()
			defer q.Domain().Unlock()
			if n := q.DiscardLocked(nil); n != 0 {
				w.failf("discarded %d events of no object", n)
			}
			return nil
		}},
	}},
	"AsyncQueue.GetAsyncEvent": {cases: []badCase{
		{in: "nil context.Context", want: einval, call: func(w *badWorld) error {
			//lint:ignore SA1012 a nil context is the bad input under test
			_, err := sim.EngineAsyncQueue(w.ctx2).GetAsyncEvent(nil)
			return err
		}},
	}},
	"AsyncQueue.TryGetAsyncEvent": {cases: []badCase{
		{in: "closed queue", want: syscall.EBADF, call: func(w *badWorld) error { _, err := sim.EngineAsyncQueue(w.deadCtx).TryGetAsyncEvent(); return err }},
	}},
	"AsyncQueue.RaiseLocked": {cases: []badCase{
		{in: "event type 99", want: einval, call: func(w *badWorld) error {
			q := sim.EngineAsyncQueue(w.ctx)
			q.Domain().Lock()
			defer q.Domain().Unlock()
			return q.RaiseLocked(99, w.free, nil, 0)
		}},
		{in: "CQ_ERR without a CQ", want: einval, call: func(w *badWorld) error {
			q := sim.EngineAsyncQueue(w.ctx)
			q.Domain().Lock()
			defer q.Domain().Unlock()
			return q.RaiseLocked(verbs.EventCQErr, nil, nil, 0)
		}},
		{in: "PORT_ERR on port 0", want: einval, call: func(w *badWorld) error {
			q := sim.EngineAsyncQueue(w.ctx)
			q.Domain().Lock()
			defer q.Domain().Unlock()
			return q.RaiseLocked(verbs.EventPortErr, nil, nil, 0)
		}},
		{in: "closed queue (documented: dropped)", call: func(w *badWorld) error {
			q := sim.EngineAsyncQueue(w.deadCtx)
			q.Domain().Lock()
			defer q.Domain().Unlock()
			return q.RaiseLocked(verbs.EventPortErr, nil, nil, 1)
		}},
	}},

	// Tally.
	"Tally.Counts":  {reason: getter},
	"Tally.Settled": {reason: getter},
	"Tally.Unacked": {reason: getter},
	"Tally.AckComp": {cases: []badCase{
		{in: "n -1", want: einval, call: func(w *badWorld) error { return tallyLocked(w, func(t *notify.Tally) error { return t.AckComp(-1) }) }},
		{in: "more than read", want: einval, call: func(w *badWorld) error { return tallyLocked(w, func(t *notify.Tally) error { return t.AckComp(1) }) }},
		{in: "n MaxInt", want: einval, call: func(w *badWorld) error {
			return tallyLocked(w, func(t *notify.Tally) error { return t.AckComp(math.MaxInt) })
		}},
	}},
	"Tally.WaitSettled": {cases: []badCase{
		{in: "nil context.Context", want: einval, call: func(w *badWorld) error {
			return tallyLocked(w, func(t *notify.Tally) error {
				//lint:ignore SA1012 a nil context is the bad input under test
				return t.WaitSettled(nil, sim.EngineCQ(w.cq).Domain(), &domain.Waiter{})
			})
		}},
		{in: "nil domain", want: einval, call: func(w *badWorld) error {
			return sim.EngineQP(w.qp).Tally().WaitSettled(context.Background(), nil, &domain.Waiter{})
		}},
		{in: "nil waiter", want: einval, call: func(w *badWorld) error {
			return tallyLocked(w, func(t *notify.Tally) error {
				return t.WaitSettled(context.Background(), sim.EngineCQ(w.cq).Domain(), nil)
			})
		}},
	}},

	// AsyncEvent.
	"AsyncEvent.Type":    {reason: getter},
	"AsyncEvent.Element": {reason: getter},
	"AsyncEvent.CQ":      {reason: getter},
	"AsyncEvent.QP":      {reason: getter},
	"AsyncEvent.SRQ":     {reason: getter},
	"AsyncEvent.Port":    {reason: getter},
	"AsyncEvent.String":  {reason: anyValue + " (a value method; the zero event prints)"},
	"AsyncEvent.Ack": {cases: []badCase{
		{in: "event acked twice", want: einval, moves: true, call: func(w *badWorld) error {
			if err := w.ev.Ack(); err != nil {
				w.failf("first ack: %v", err)
			}
			return w.ev.Ack()
		}},
	}},

	// The other exported pointer types.
	"QPAttr.Apply": {cases: []badCase{
		{in: "nil source", call: func(w *badWorld) error {
			a := verbs.QPAttr{Timeout: 3}
			a.Apply(nil, verbs.QPAttrTimeout)
			if a.Timeout != 3 {
				w.failf("Apply(nil) changed the attributes: timeout %d", a.Timeout)
			}
			return nil
		}},
	}},
	"WC.InvalidatedRkey": {reason: getter},
	"WC.String":          {reason: getter + " (a nil *WC prints \"<nil>\")"},
	"Log.Add":            {reason: anyValue + " (a record is data)"},
	"Log.Len":            {reason: getter},
	"Log.Records":        {reason: getter},
	"Log.Reset":          {reason: noArgs},
	"Log.WriteJSON": {cases: []badCase{
		{in: "nil writer", want: einval, call: func(w *badWorld) error { return w.log.WriteJSON(nil) }},
	}},
	"Log.WriteText": {cases: []badCase{
		{in: "nil writer", want: einval, call: func(w *badWorld) error { return w.log.WriteText(nil) }},
	}},
	"Error.Error":  {reason: getter + " (a nil *Error prints \"<nil>\")"},
	"Error.Unwrap": {reason: getter},

	// Functions of package sim.
	"func.NewFabric": {cases: []badCase{
		{in: "negative TickDuration", want: einval, call: func(*badWorld) error {
			f, err := sim.NewFabric(sim.Config{Mode: sim.Background, TickDuration: -1})
			if f != nil {
				f.Close()
			}
			return err
		}},
		{in: "unknown mode", want: einval, call: func(*badWorld) error {
			_, err := sim.NewFabric(sim.Config{Mode: 99})
			return err
		}},
		{in: "duplicate device names", want: einval, call: func(*badWorld) error {
			_, err := sim.NewFabric(sim.Config{Devices: []sim.DeviceConfig{{Name: "a"}, {Name: "a"}}})
			return err
		}},
		{in: "fault probability 2", want: einval, call: func(*badWorld) error {
			_, err := sim.NewFabric(sim.Config{Faults: sim.Faults{Drop: 2}})
			return err
		}},
	}},
	"func.Connect": {cases: []badCase{
		{in: "nil QPs", want: einval, call: func(*badWorld) error { return sim.Connect(nil, nil, sim.ConnectOptions{}) }},
		{in: "a QP with itself", want: einval, call: func(w *badWorld) error { return sim.Connect(w.qp2, w.qp2, sim.ConnectOptions{}) }},
		{in: "UD QPs", want: einval, call: func(w *badWorld) error { return sim.Connect(w.ud, w.ud, sim.ConnectOptions{}) }},
		{in: "port 9", want: einval, call: func(w *badWorld) error { return sim.Connect(w.qp2, w.sq, sim.ConnectOptions{Port: 9}) }},
		{in: "destroyed QP", want: einval, call: func(w *badWorld) error { return sim.Connect(w.qp2, w.deadQP, sim.ConnectOptions{}) }},
		{in: "QPs of two fabrics", want: einval,
			call: func(w *badWorld) error { return sim.Connect(w.qp2, w.oqp, sim.ConnectOptions{}) }},
	}},
	"func.ReadyUD": {cases: []badCase{
		{in: "nil QP", want: einval, call: func(*badWorld) error { return sim.ReadyUD(nil, 1) }},
		{in: "RC QP", want: einval, call: func(w *badWorld) error { return sim.ReadyUD(w.qp2, 1) }},
	}},
}

// tallyLocked runs fn on w.qp's tally under the domain lock, as the tally
// expects.
func tallyLocked(w *badWorld, fn func(t *notify.Tally) error) error {
	mu := sim.EngineCQ(w.cq).Domain()
	mu.Lock()
	defer mu.Unlock()
	return fn(sim.EngineQP(w.qp).Tally())
}

// bindMW is a QP.BindMW case that must fail with EINVAL, nothing posted and
// the window's rkey unchanged (the snapshot covers it).
func bindMW(in string, pick func(w *badWorld) (*sim.QP, *sim.MW)) badCase {
	return badCase{in: in, want: einval, call: func(w *badWorld) error {
		q, mw := pick(w)
		return q.BindMW(mw, 1, verbs.SendSignaled, verbs.MWBindInfo{MR: w.mwr, Addr: w.mwr.Addr(), Length: 8, Access: verbs.AccessRemoteRead})
	}}
}

// allocDM is a case of Context.AllocDM: the context and the attributes.
func allocDM(in string, want syscall.Errno, args func(*badWorld) (*sim.Context, verbs.AllocDMAttr)) badCase {
	return badCase{in: in, want: want, call: func(w *badWorld) error {
		c, a := args(w)
		dm, err := c.AllocDM(a)
		if err == nil || dm != nil {
			w.failf("AllocDM returned %v with %v", dm, err)
		}
		return err
	}}
}

// regDMMR is a case of PD.RegDMMR: the PD and the arguments.
func regDMMR(in string, want syscall.Errno, args func(*badWorld) (*sim.PD, *sim.DM, uint64, uint64, verbs.AccessFlags)) badCase {
	return badCase{in: in, want: want, call: func(w *badWorld) error {
		pd, dm, off, n, acc := args(w)
		mr, err := pd.RegDMMR(dm, off, n, acc)
		if err == nil || mr != nil {
			w.failf("RegDMMR returned %v with %v", mr, err)
		}
		return err
	}}
}

// openXRCD is a case of Context.OpenXRCD: the context and the arguments.
func openXRCD(in string, want syscall.Errno, args func(*badWorld) (*sim.Context, verbs.XRCDInitAttr)) badCase {
	return badCase{in: in, want: want, call: func(w *badWorld) error {
		c, a := args(w)
		x, err := c.OpenXRCD(a)
		if x != nil {
			w.failf("OpenXRCD returned a domain with %v", err)
		}
		return err
	}}
}

// createSRQEx is a case of Context.CreateSRQEx: edit spoils the good XRC
// SRQ arguments of w.xrcAttr and names the context to call it on.
func createSRQEx(in string, want syscall.Errno, edit func(*badWorld, *sim.SRQInitAttrEx) *sim.Context) badCase {
	return badCase{in: in, want: want, call: func(w *badWorld) error {
		a := w.xrcAttr()
		c := edit(w, &a)
		s, err := c.CreateSRQEx(a)
		if s != nil {
			w.failf("CreateSRQEx returned an SRQ with %v", err)
		}
		return err
	}}
}
