package simdev

import (
	"syscall"

	"github.com/verbsim/verbsim/conformance"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/qp"
	"github.com/verbsim/verbsim/sim/verr"
)

// OpenXRCD implements conformance.XRCOpener. The domain is the *sim.XRCD
// itself.
func (c contextAdapter) OpenXRCD(compMask uint32, fd, oflags int) (conformance.XRCD, error) {
	x, err := c.c.OpenXRCD(sim.XRCDInitAttr{CompMask: sim.XRCDInitMask(compMask), FD: fd, OFlags: oflags})
	if err != nil {
		return nil, err
	}
	return x, nil
}

// CreateSRQEx implements conformance.XRCOpener. The PD, XRCD and CQ must be
// this implementation's (EINVAL otherwise); nil stays nil.
func (c contextAdapter) CreateSRQEx(a conformance.SRQInitAttrEx) (conformance.SRQ, error) {
	const verb = "ibv_create_srq_ex"
	attr := sim.SRQInitAttrEx{Attr: qp.SRQAttr{MaxWR: a.MaxWR, MaxSGE: a.MaxSGE},
		CompMask: sim.SRQInitMask(a.CompMask), Type: sim.SRQType(a.Type)}
	if a.PD != nil {
		p, ok := a.PD.(pdAdapter)
		if !ok {
			return nil, verr.New(verb, syscall.EINVAL, "the PD does not belong to this implementation")
		}
		attr.PD = p.pd
	}
	if a.XRCD != nil {
		x, ok := a.XRCD.(*sim.XRCD)
		if !ok {
			return nil, verr.New(verb, syscall.EINVAL, "the XRCD does not belong to this implementation")
		}
		attr.XRCD = x
	}
	var err error
	if attr.CQ, err = simCQ(verb, a.CQ); err != nil {
		return nil, err
	}
	s, err := c.c.CreateSRQEx(attr)
	if err != nil {
		return nil, err
	}
	return s, nil
}
