package conformance_test

import (
	"errors"
	"sync/atomic"
	"syscall"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// xrcHooks break the XRC verbs (verbs.XRCOpener); each gets the inner
// context, domain or arguments.
type xrcHooks struct {
	open      func(c verbs.XRCOpener, attr verbs.XRCDInitAttr) (verbs.XRCD, error)
	close     func(x verbs.XRCD) error
	createSRQ func(c verbs.XRCOpener, a verbs.SRQInitAttrEx) (verbs.SRQ, error)
	// createQP replaces XRCD.CreateQP; it gets attr with the inner CQs and
	// SRQ.
	createQP func(x verbs.XRCD, attr verbs.QPInitAttrEx) (verbs.QP, error)
	// setSRQN replaces ibv_wr_set_xrc_srqn on the builder.
	setSRQN func(b verbs.WRBuilder, remoteSRQN uint32)
}

// mXRCD wraps a domain so that its Close and CreateQP can be hooked.
type mXRCD struct {
	inner verbs.XRCD
	h     *hooks
	c     *mContext
}

// CreateQP forwards verbs.XRCD.CreateQP: the CQs and SRQ are unwrapped,
// the QP wrapped.
func (x *mXRCD) CreateQP(attr verbs.QPInitAttrEx) (verbs.QP, error) {
	attr.QPInitAttr = innerQPAttr(attr.QPInitAttr)
	var q verbs.QP
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
func (c *mContext) OpenXRCD(attr verbs.XRCDInitAttr) (verbs.XRCD, error) {
	inner, ok := c.inner.(verbs.XRCOpener)
	if !ok {
		return nil, errors.ErrUnsupported
	}
	var x verbs.XRCD
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
func (c *mContext) CreateSRQEx(a verbs.SRQInitAttrEx) (verbs.SRQ, error) {
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
	var s verbs.SRQ
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

// xrcMutants returns the mutants of the XRC family.
func xrcMutants() []mutant {
	return []mutant{
		{
			name: "ibv_open_xrcd ignores the fd", rules: []string{"XRC-01"},
			h: hooks{xrc: &xrcHooks{open: func(c verbs.XRCOpener, attr verbs.XRCDInitAttr) (verbs.XRCD, error) {
				attr.FD = -1
				return c.OpenXRCD(attr)
			}}},
		},
		{
			name: "ibv_close_xrcd succeeds with SRQs in the domain, closing nothing", rules: []string{"XRC-02"},
			h: hooks{xrc: &xrcHooks{close: func(verbs.XRCD) error { return nil }}},
		},
		{
			name: "a device without XRC serves every basic ibv_create_srq_ex", rules: []string{"XRC-03"},
			base: sim.RXEProfile(),
			h: hooks{xrc: &xrcHooks{createSRQ: func(c verbs.XRCOpener, a verbs.SRQInitAttrEx) (verbs.SRQ, error) {
				if a.CompMask&verbs.SRQInitType == 0 || a.Type == verbs.SRQTBasic {
					a.CompMask &= verbs.SRQInitType | verbs.SRQInitPD
				}
				return c.CreateSRQEx(a)
			}}},
		},
		{
			name: "ibv_create_srq_ex takes an XRC SRQ's XRCD and CQ without their comp_mask bits", rules: []string{"XRC-04"},
			h: hooks{xrc: &xrcHooks{createSRQ: func(c verbs.XRCOpener, a verbs.SRQInitAttrEx) (verbs.SRQ, error) {
				if a.Type == verbs.SRQTXRC {
					a.CompMask |= verbs.SRQInitXRCD | verbs.SRQInitCQ
				}
				return c.CreateSRQEx(a)
			}}},
		},
		{
			name: "ibv_get_srq_num gives every XRC SRQ number 1", rules: []string{"XRC-05"},
			h: hooks{getSRQNum: func(s verbs.SRQ) (uint32, error) {
				n, err := s.(verbs.SRQNumGetter).GetSRQNum()
				if err == nil {
					n = 1
				}
				return n, err
			}},
		},
		{
			name: "ibv_create_qp takes an XRC_SEND QP's receive CQ as its send CQ", rules: []string{"XRC-06"},
			h: hooks{createQP: func(pd verbs.PD, attr verbs.QPInitAttr) (verbs.QP, error) {
				if attr.Type == verbs.QPTypeXRCSend && attr.SendCQ == nil {
					attr.SendCQ = attr.RecvCQ
				}
				return pd.CreateQP(attr)
			}},
		},
		{
			name: "an XRC domain makes a target QP without IBV_QP_INIT_ATTR_XRCD", rules: []string{"XRC-06"},
			h: hooks{xrc: &xrcHooks{createQP: func(x verbs.XRCD, attr verbs.QPInitAttrEx) (verbs.QP, error) {
				attr.CompMask |= verbs.QPInitAttrXRCD
				return x.CreateQP(attr)
			}}},
		},
		{
			name: "receives posted to an XRC QP are accepted and dropped", rules: []string{"XRC-07"},
			h: hooks{postRecv: func(q verbs.QP, wrs []verbs.RecvWR) (int, error) {
				if t := q.Type(); t == verbs.QPTypeXRCSend || t == verbs.QPTypeXRCRecv {
					return len(wrs), nil
				}
				return q.PostRecv(wrs)
			}},
		},
		{
			name: "the XRC initiator accepts the responder's attributes and ignores them", rules: []string{"XRC-08"},
			h: hooks{modifyQP: func(q verbs.QP, attr *verbs.QPAttr, mask verbs.QPAttrMask) error {
				if q.Type() == verbs.QPTypeXRCSend {
					mask &^= verbs.QPAttrMinRNRTimer | verbs.QPAttrMaxDestRDAtomic
				}
				return q.Modify(attr, mask)
			}},
		},
		{
			name: "the XRC target's RTR→RTS demands RC's requester attributes", rules: []string{"XRC-08"},
			h: hooks{modifyQP: func(q verbs.QP, attr *verbs.QPAttr, mask verbs.QPAttrMask) error {
				const requester = verbs.QPAttrRetryCnt | verbs.QPAttrRNRRetry | verbs.QPAttrMaxQPRDAtomic
				if q.Type() == verbs.QPTypeXRCRecv && attr.QPState == verbs.QPStateRTS && mask&verbs.QPAttrState != 0 && mask&requester != requester {
					return syscall.EINVAL
				}
				return q.Modify(attr, mask&^requester)
			}},
		},
		{
			name: "ibv_post_send on an XRC_SEND QP drops remote_srqn", rules: []string{"XRC-09"},
			h: hooks{postSend: func(q verbs.QP, wrs []verbs.SendWR) (int, error) {
				if q.Type() == verbs.QPTypeXRCSend {
					wrs = append([]verbs.SendWR(nil), wrs...)
					for i := range wrs {
						wrs[i].RemoteSRQN = 0
					}
				}
				return q.PostSend(wrs)
			}},
		},
		{
			name: "ibv_wr_set_xrc_srqn does nothing", rules: []string{"XRC-09"},
			h: hooks{xrc: &xrcHooks{setSRQN: func(verbs.WRBuilder, uint32) {}}},
		},
		{
			name: "an XRC SRQ's completion names the initiator as qp_num", rules: []string{"XRC-10"},
			h: hooks{poll: func(q verbs.CQ, wcs []verbs.WC) (int, error) {
				n, err := q.Poll(wcs)
				for i := range wcs[:n] {
					if c := &wcs[i]; c.Status == verbs.WCSuccess && c.Opcode.IsRecv() && c.SrcQP != 0 {
						c.QPNum, c.SrcQP = c.SrcQP, c.QPNum
					}
				}
				return n, err
			}},
		},
		xrcRedirectMutant(),
	}
}

// xrcRedirectMutant sends a request whose XRC SRQ number is out of the
// range the device hands out to the SRQ last numbered, instead of failing
// it.
func xrcRedirectMutant() mutant {
	var lastSRQN atomic.Uint32
	return mutant{
		name: "a message to a bad XRC SRQ number goes to the SRQ last numbered", rules: []string{"XRC-10"},
		h: hooks{getSRQNum: func(s verbs.SRQ) (uint32, error) {
			n, err := s.(verbs.SRQNumGetter).GetSRQNum()
			lastSRQN.Store(n)
			return n, err
		}, postSend: func(q verbs.QP, wrs []verbs.SendWR) (int, error) {
			if q.Type() == verbs.QPTypeXRCSend {
				wrs = append([]verbs.SendWR(nil), wrs...)
				for i := range wrs {
					if wrs[i].RemoteSRQN >= 0xf00000 {
						wrs[i].RemoteSRQN = lastSRQN.Load()
					}
				}
			}
			return q.PostSend(wrs)
		}},
	}
}
