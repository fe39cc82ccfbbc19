package scenario

// engine_fault.go holds the commands that inject faults and errors: faults,
// fault, force_status, fatal, srq_error and link.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/trace"
)

// doFaults runs faults: fabric-wide random packet faults.
func (in *interp) doFaults(_ *Step, a *args) error {
	x := sim.Faults{Drop: a.prob("drop"), Duplicate: a.prob("duplicate"), Delay: a.prob("delay"), MaxDelay: a.num("max_delay_ns", 0)}
	in.verbResult("set fabric-wide faults", in.f.SetFaults(x))
	return nil
}

func (a *args) prob(k string) float64 {
	p, _ := strconv.ParseFloat(a.str(k, "0"), 64)
	return p
}

func (in *interp) doFault(st *Step, a *args) error {
	pf := sim.PacketFault{Skip: int(a.num("skip", 0)), Count: int(a.num("count", 0)), Delay: a.num("delay_ns", 0)}
	switch a.str("action", "") {
	case "drop":
		pf.Action = sim.FaultDrop
	case "delay":
		pf.Action = sim.FaultDelay
	case "duplicate":
		pf.Action = sim.FaultDuplicate
	}
	var match []func(sim.Packet) bool
	var what []string
	if n := a.ref("from", "qp"); n != "" {
		match = append(match, sim.FromQP(in.obj.qp[n].q))
		what = append(what, "from qp "+n)
	}
	if n := a.ref("to", "qp"); n != "" {
		match = append(match, sim.ToQP(in.obj.qp[n].q))
		what = append(what, "to qp "+n)
	}
	if a.err != nil {
		return a.err
	}
	if ks := a.list("kind"); len(ks) > 0 {
		var kinds []trace.PacketKind
		for _, k := range ks {
			kinds = append(kinds, trace.PacketKind(slices.Index(pktKinds, k)))
		}
		match = append(match, sim.OfKind(kinds...))
		what = append(what, "of kind "+strings.Join(ks, "/"))
	}
	if len(match) > 0 {
		pf.Match = sim.All(match...)
	}
	count := "every packet"
	if pf.Count > 0 {
		count = fmt.Sprintf("%d packet(s)", pf.Count)
	}
	if len(what) == 0 {
		what = []string{"on the whole fabric"}
	}
	_, err := in.f.InjectPacketFault(pf)
	in.verbResult(fmt.Sprintf("fault: %s %s %s, after skipping %d", a.str("action", ""), count, strings.Join(what, " "), pf.Skip), err)
	return nil
}

// doForceStatus runs force_status: the next completion of a WR carries an error.
func (in *interp) doForceStatus(_ *Step, a *args) error {
	q := a.ref("qp", "qp")
	if a.err != nil {
		return a.err
	}
	in.verbResult(fmt.Sprintf("force status %s on wr_id %d", a.str("status", ""), a.num("wr_id", 0)),
		in.f.ForceStatus(in.obj.qp[q].q, a.num("wr_id", 0), a.has("recv"), statusOf(a.str("status", ""))))
	return nil
}

// doFatal runs fatal: a catastrophic QP error (ASYNC-08).
func (in *interp) doFatal(_ *Step, a *args) error {
	q := a.ref("qp", "qp")
	if a.err != nil {
		return a.err
	}
	in.verbResult("inject a fatal error into qp "+q, in.f.InjectFatal(in.obj.qp[q].q))
	in.note("ASYNC-08")
	return nil
}

// doSRQError runs srq_error: a catastrophic SRQ error.
func (in *interp) doSRQError(_ *Step, a *args) error {
	s := a.ref("srq", "srq")
	if a.err != nil {
		return a.err
	}
	in.verbResult("inject an error into srq "+s, in.f.InjectSRQError(in.obj.srq[s]))
	return nil
}

// doLink runs link: a port goes down or up.
func (in *interp) doLink(_ *Step, a *args) error {
	d, derr := in.f.Device(a.str("dev", ""))
	if derr != nil {
		in.verbResult("link", derr)
		return nil
	}
	in.verbResult(fmt.Sprintf("port %d of %s goes %s", a.num("port", 1), a.str("dev", ""), map[bool]string{true: "up", false: "down"}[a.has("up")]),
		d.SetPortState(uint8(a.num("port", 1)), a.has("up")))
	return nil
}
