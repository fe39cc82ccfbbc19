package simtest

import (
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// Code written against package verbs (the interfaces a program shares
// between verbsim and hardware) takes verbs objects, not sim's handles. The
// rig gives both: Fabric.Device hands the code a verbs.Device to open and
// build on as it would in production, and End.Verbs shows a rig pair's
// objects through the interfaces. sim.QPOf and its siblings lead back from
// a verbs object to the handle the fabric's controls take, such as
// sim.FromQP for a targeted packet fault.

// Device returns the fabric's i-th device (0 is "a", 1 is "b") as a
// verbs.Device; it fails the test when there is no such device.
func (f *Fabric) Device(i int) verbs.Device {
	f.t.Helper()
	all := f.Devices()
	if i < 0 || i >= len(all) {
		f.t.Fatalf("simtest: no device %d (the fabric has %d)", i, len(all))
		return nil
	}
	return all[i].Verbs()
}

// Verbs holds an end's objects as the verbs interfaces see them.
type Verbs struct {
	Ctx            verbs.Context
	PD             verbs.PD
	SendCQ, RecvCQ verbs.CQ
	Chan           verbs.CompChannel // nil without PairOptions.Channel
	MR             verbs.MR
	QP             verbs.QP
	AH             verbs.AH // a UD end's address handle to its peer
}

// Verbs returns the end's objects through the verbs interfaces, for code
// written against package verbs. They are views of the same handles:
// posting on Verbs().QP posts on e.QP.
func (e *End) Verbs() Verbs {
	v := Verbs{
		Ctx: e.Ctx.Verbs(), PD: sim.VerbsPD(e.PD),
		SendCQ: sim.VerbsCQ(e.SendCQ), RecvCQ: sim.VerbsCQ(e.RecvCQ),
		MR: sim.VerbsMR(e.MR), QP: sim.VerbsQP(e.QP),
	}
	if e.Chan != nil {
		v.Chan = sim.VerbsChannel(e.Chan)
	}
	if e.AH != nil {
		v.AH = e.AH
	}
	return v
}
