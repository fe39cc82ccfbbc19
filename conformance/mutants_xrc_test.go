package conformance_test

import (
	"errors"

	"github.com/verbsim/verbsim/conformance"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// xrcHooks break the XRC verbs (verbs.XRCOpener); each gets the inner
// context, domain or arguments.
type xrcHooks struct {
	open      func(c verbs.XRCOpener, attr verbs.XRCDInitAttr) (conformance.XRCD, error)
	close     func(x conformance.XRCD) error
	createSRQ func(c verbs.XRCOpener, a verbs.SRQInitAttrEx) (conformance.SRQ, error)
	// createQP replaces XRCD.CreateQP; it gets attr with the inner CQs and
	// SRQ.
	createQP func(x conformance.XRCD, attr verbs.QPInitAttrEx) (conformance.QP, error)
	// setSRQN replaces ibv_wr_set_xrc_srqn on the builder.
	setSRQN func(b verbs.WRBuilder, remoteSRQN uint32)
}

// mXRCD wraps a domain so that its Close and CreateQP can be hooked.
type mXRCD struct {
	inner conformance.XRCD
	h     *hooks
	c     *mContext
}

// CreateQP forwards verbs.XRCD.CreateQP: the CQs and SRQ are unwrapped,
// the QP wrapped.
func (x *mXRCD) CreateQP(attr verbs.QPInitAttrEx) (conformance.QP, error) {
	attr.QPInitAttr = innerQPAttr(attr.QPInitAttr)
	var q conformance.QP
	var err error
	if x.h.xrc != nil && x.h.xrc.createQP != nil {
		q, err = x.h.xrc.createQP(x.inner, attr)
	} else {
		q, err = x.inner.CreateQP(attr)
	}
	if q == nil {
		return nil, err
	}
	return x.c.outerQP(q), err
}

func (x *mXRCD) Close() error {
	if x.h.xrc != nil && x.h.xrc.close != nil {
		return x.h.xrc.close(x.inner)
	}
	return x.inner.Close()
}

// OpenXRCD implements verbs.XRCOpener.
func (c *mContext) OpenXRCD(attr verbs.XRCDInitAttr) (conformance.XRCD, error) {
	inner, ok := c.inner.(verbs.XRCOpener)
	if !ok {
		return nil, errors.ErrUnsupported
	}
	var x conformance.XRCD
	var err error
	if c.h.xrc != nil && c.h.xrc.open != nil {
		x, err = c.h.xrc.open(inner, attr)
	} else {
		x, err = inner.OpenXRCD(attr)
	}
	if x == nil {
		return nil, err
	}
	return &mXRCD{inner: x, h: c.h, c: c}, err
}

// CreateSRQEx implements verbs.XRCOpener: the PD, domain and CQ are
// unwrapped, the SRQ wrapped.
func (c *mContext) CreateSRQEx(a verbs.SRQInitAttrEx) (conformance.SRQ, error) {
	inner, ok := c.inner.(verbs.XRCOpener)
	if !ok {
		return nil, errors.ErrUnsupported
	}
	if p, ok := a.PD.(*mPD); ok {
		a.PD = p.inner
	}
	if x, ok := a.XRCD.(*mXRCD); ok {
		a.XRCD = x.inner
	}
	if q, ok := a.CQ.(*mCQ); ok {
		a.CQ = q.inner
	}
	var s conformance.SRQ
	var err error
	if c.h.xrc != nil && c.h.xrc.createSRQ != nil {
		s, err = c.h.xrc.createSRQ(inner, a)
	} else {
		s, err = inner.CreateSRQEx(a)
	}
	if s == nil {
		return nil, err
	}
	return c.outerSRQ(s), err
}

// Mutants of the XRC family.
func init() {
	mutants = append(mutants,
		mutant{
			name: "ibv_open_xrcd ignores the fd", rules: []string{"XRC-01"},
			h: hooks{xrc: &xrcHooks{open: func(c verbs.XRCOpener, attr verbs.XRCDInitAttr) (conformance.XRCD, error) {
				attr.FD = -1
				return c.OpenXRCD(attr)
			}}},
		},
		mutant{
			name: "ibv_close_xrcd succeeds with SRQs in the domain, closing nothing", rules: []string{"XRC-02"},
			h: hooks{xrc: &xrcHooks{close: func(conformance.XRCD) error { return nil }}},
		},
		mutant{
			name: "a device without XRC serves every basic ibv_create_srq_ex", rules: []string{"XRC-03"},
			base: sim.RXEProfile(),
			h: hooks{xrc: &xrcHooks{createSRQ: func(c verbs.XRCOpener, a verbs.SRQInitAttrEx) (conformance.SRQ, error) {
				if a.CompMask&verbs.SRQInitType == 0 || a.Type == verbs.SRQTBasic {
					a.CompMask &= verbs.SRQInitType | verbs.SRQInitPD
				}
				return c.CreateSRQEx(a)
			}}},
		},
		mutant{
			name: "ibv_create_srq_ex takes an XRC SRQ's XRCD and CQ without their comp_mask bits", rules: []string{"XRC-04"},
			h: hooks{xrc: &xrcHooks{createSRQ: func(c verbs.XRCOpener, a verbs.SRQInitAttrEx) (conformance.SRQ, error) {
				if a.Type == verbs.SRQTXRC {
					a.CompMask |= verbs.SRQInitXRCD | verbs.SRQInitCQ
				}
				return c.CreateSRQEx(a)
			}}},
		},
		mutant{
			name: "ibv_get_srq_num gives every XRC SRQ number 1", rules: []string{"XRC-05"},
			h: hooks{getSRQNum: func(s conformance.SRQ) (uint32, error) {
				n, err := s.(verbs.SRQNumGetter).GetSRQNum()
				if err == nil {
					n = 1
				}
				return n, err
			}},
		},
	)
}
