package sim

import (
	"context"
	"syscall"

	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// This file and verbs_queues.go implement the interfaces of package verbs
// on top of sim's handles. Each verbs object is a small value holding one
// pointer to the sim handle, so converting it to an interface allocates
// nothing and two views of one handle compare equal; a verb costs one call
// more than the direct one. AH and MW are sim's own *AH and *MW, which
// already have the methods verbs asks for. The way back from a verbs
// object to the handle, for the fabric's controls (faults, Connect), is
// QPOf, CQOf and their siblings.

// Verbs returns the device as a verbs.Device, the interface applications
// program against (nil for a nil *Device).
func (d *Device) Verbs() verbs.Device {
	if d == nil {
		return nil
	}
	return vDevice{d}
}

// Verbs returns the context as a verbs.Context (nil for a nil *Context).
func (c *Context) Verbs() verbs.Context { return wrapContext(c) }

// DeviceOf returns the *Device behind a verbs.Device of this package.
func DeviceOf(d verbs.Device) (*Device, bool) {
	v, ok := d.(vDevice)
	return v.d, ok && v.d != nil
}

// ContextOf returns the *Context behind a verbs.Context of this package.
func ContextOf(c verbs.Context) (*Context, bool) {
	v, ok := c.(vContext)
	return v.c, ok && v.c != nil
}

// PDOf returns the *PD behind a verbs.PD of this package.
func PDOf(pd verbs.PD) (*PD, bool) {
	v, ok := pd.(vPD)
	return v.pd, ok && v.pd != nil
}

// MROf returns the *MR behind a verbs.MR of this package (a *MR itself is
// accepted too).
func MROf(mr verbs.MR) (*MR, bool) {
	m := mrOf(mr)
	return m, m != nil
}

// mrOf resolves an MR a work request names: a *MR or its verbs view; nil
// for anything else. It allocates nothing.
func mrOf(mr verbs.MR) *MR {
	switch m := mr.(type) {
	case *MR:
		return m
	case vMR:
		return m.MR
	}
	return nil
}

func wrapContext(c *Context) verbs.Context {
	if c == nil {
		return nil
	}
	return vContext{c}
}

func wrapPD(pd *PD) verbs.PD {
	if pd == nil {
		return nil
	}
	return vPD{pd}
}

// foreign is the error for an object of another implementation of verbs.
func foreign(verb, what string) error {
	return verr.Errorf(verb, syscall.EINVAL, "the %s was not created through sim's verbs", what)
}

type vDevice struct{ d *Device }

func (v vDevice) Name() string { return v.d.Name() }
func (v vDevice) GUID() uint64 { return v.d.GUID() }
func (v vDevice) Open() (verbs.Context, error) {
	c, err := v.d.Open()
	if err != nil {
		return nil, err
	}
	return vContext{c}, nil
}

type vContext struct{ c *Context }

func (v vContext) Device() verbs.Device { return v.c.Device().Verbs() }
func (v vContext) String() string       { return v.c.String() }
func (v vContext) NumCompVectors() int  { return v.c.NumCompVectors() }
func (v vContext) Close() error         { return v.c.Close() }

func (v vContext) QueryDevice() (verbs.DeviceAttr, error)        { return v.c.QueryDevice() }
func (v vContext) QueryPort(port uint8) (verbs.PortAttr, error)  { return v.c.QueryPort(port) }
func (v vContext) QueryGID(port uint8, i int) (verbs.GID, error) { return v.c.QueryGID(port, i) }
func (v vContext) QueryPKey(port uint8, i int) (uint16, error)   { return v.c.QueryPKey(port, i) }

// ExQuerier.
func (v vContext) QueryDeviceEx(compMask uint32) (verbs.DeviceAttrEx, error) {
	return v.c.QueryDeviceEx(compMask)
}
func (v vContext) QueryGIDEx(port, index, flags uint32) (verbs.GIDEntry, error) {
	return v.c.QueryGIDEx(port, index, flags)
}
func (v vContext) QueryGIDTable(maxEntries int, flags uint32) ([]verbs.GIDEntry, error) {
	return v.c.QueryGIDTable(maxEntries, flags)
}

func (v vContext) AllocPD() (verbs.PD, error) {
	pd, err := v.c.AllocPD()
	if err != nil {
		return nil, err
	}
	return vPD{pd}, nil
}

func (v vContext) CreateCompChannel() (verbs.CompChannel, error) {
	ch, err := v.c.CreateCompChannel()
	if err != nil {
		return nil, err
	}
	return vChannel{ch}, nil
}

func (v vContext) CreateCQ(cqe int, cqContext any, ch verbs.CompChannel, compVector int) (verbs.CQ, error) {
	q, err := v.CreateCQEx(verbs.CQInitAttrEx{CQE: cqe, Context: cqContext, Channel: ch,
		CompVector: compVector, WCFlags: verbs.WCStandardFlags})
	if err != nil {
		return nil, err
	}
	return q, nil
}

// CreateCQEx implements verbs.ExCQCreator.
func (v vContext) CreateCQEx(attr verbs.CQInitAttrEx) (verbs.ExCQ, error) {
	var ch *CompChannel
	if attr.Channel != nil {
		c, ok := ChannelOf(attr.Channel)
		if !ok {
			return nil, foreign("ibv_create_cq", "channel")
		}
		ch = c
	}
	q, err := v.c.CreateCQEx(CQInitAttr{CQE: attr.CQE, Context: attr.Context, Channel: ch,
		CompVector: attr.CompVector, WCFlags: attr.WCFlags, CompMask: attr.CompMask, Flags: attr.Flags})
	if err != nil {
		return nil, err
	}
	return vCQ{q}, nil
}

func (v vContext) GetAsyncEvent(ctx context.Context) (verbs.AsyncEvent, error) {
	ev, err := v.c.GetAsyncEvent(ctx)
	if err != nil {
		return nil, err
	}
	return vAsyncEvent{ev}, nil
}

func (v vContext) TryGetAsyncEvent() (verbs.AsyncEvent, error) {
	ev, err := v.c.TryGetAsyncEvent()
	if err != nil {
		return nil, err
	}
	return vAsyncEvent{ev}, nil
}

// OpenXRCD implements verbs.XRCOpener.
func (v vContext) OpenXRCD(attr verbs.XRCDInitAttr) (verbs.XRCD, error) {
	x, err := v.c.OpenXRCD(attr)
	if err != nil {
		return nil, err
	}
	return vXRCD{x}, nil
}

// CreateSRQEx implements verbs.XRCOpener.
func (v vContext) CreateSRQEx(attr verbs.SRQInitAttrEx) (verbs.SRQ, error) {
	const verb = "ibv_create_srq_ex"
	a := SRQInitAttrEx{Context: attr.Context, Attr: attr.Attr, CompMask: attr.CompMask, Type: attr.Type}
	var ok bool
	if attr.PD != nil {
		if a.PD, ok = PDOf(attr.PD); !ok {
			return nil, foreign(verb, "PD")
		}
	}
	if attr.XRCD != nil {
		if a.XRCD, ok = XRCDOf(attr.XRCD); !ok {
			return nil, foreign(verb, "XRCD")
		}
	}
	if attr.CQ != nil {
		if a.CQ, ok = CQOf(attr.CQ); !ok {
			return nil, foreign(verb, "CQ")
		}
	}
	s, err := v.c.CreateSRQEx(a)
	if err != nil {
		return nil, err
	}
	return vSRQ{s}, nil
}

type vPD struct{ pd *PD }

func (v vPD) Context() verbs.Context { return wrapContext(v.pd.Context()) }
func (v vPD) Handle() uint32         { return v.pd.Handle() }
func (v vPD) Dealloc() error         { return v.pd.Dealloc() }

// AdviseMR implements verbs.MRAdviser.
func (v vPD) AdviseMR(advice verbs.AdviseMRAdvice, flags verbs.AdviseMRFlags, sgl []verbs.SGE) error {
	return v.pd.AdviseMR(advice, flags, sgl)
}

func (v vPD) RegMR(buf []byte, access verbs.AccessFlags) (verbs.MR, error) {
	mr, err := v.pd.RegMR(buf, access)
	if err != nil {
		return nil, err
	}
	return vMR{mr}, nil
}

func (v vPD) AllocMW(typ verbs.MWType) (verbs.MW, error) {
	mw, err := v.pd.AllocMW(typ)
	if err != nil {
		return nil, err
	}
	return mw, nil
}

func (v vPD) CreateAH(attr verbs.AHAttr) (verbs.AH, error) {
	ah, err := v.pd.CreateAH(attr)
	if err != nil {
		return nil, err
	}
	return ah, nil
}

func (v vPD) CreateQP(attr verbs.QPInitAttr) (verbs.QP, error) {
	return v.CreateQPEx(verbs.QPInitAttrEx{QPInitAttr: attr})
}

// CreateQPEx implements verbs.QPExCreator.
func (v vPD) CreateQPEx(attr verbs.QPInitAttrEx) (verbs.QP, error) {
	verb := "ibv_create_qp"
	if attr.CompMask != 0 {
		verb = "ibv_create_qp_ex"
	}
	a, err := qpInitAttrOf(verb, attr)
	if err != nil {
		return nil, err
	}
	q, err := v.pd.CreateQP(a)
	if err != nil {
		return nil, err
	}
	return vQP{q}, nil
}

// qpInitAttrOf returns attr in sim's terms; a CQ or SRQ of another
// implementation is EINVAL for verb.
func qpInitAttrOf(verb string, attr verbs.QPInitAttrEx) (QPInitAttr, error) {
	a := QPInitAttr{Context: attr.Context, Cap: attr.Cap, Type: attr.Type, SQSigAll: attr.SQSigAll,
		CompMask: QPInitMask(attr.CompMask), SendOpsFlags: attr.SendOpsFlags}
	var ok bool
	if attr.SendCQ != nil {
		if a.SendCQ, ok = CQOf(attr.SendCQ); !ok {
			return QPInitAttr{}, foreign(verb, "send CQ")
		}
	}
	if attr.RecvCQ != nil {
		if a.RecvCQ, ok = CQOf(attr.RecvCQ); !ok {
			return QPInitAttr{}, foreign(verb, "receive CQ")
		}
	}
	if attr.SRQ != nil {
		if a.SRQ, ok = SRQOf(attr.SRQ); !ok {
			return QPInitAttr{}, foreign(verb, "SRQ")
		}
	}
	return a, nil
}

func (v vPD) CreateSRQ(attr verbs.SRQInitAttr) (verbs.SRQ, error) {
	s, err := v.pd.CreateSRQ(SRQInitAttr{Context: attr.Context, Attr: attr.Attr})
	if err != nil {
		return nil, err
	}
	return vSRQ{s}, nil
}

// vXRCD is an XRC domain as a verbs.XRCD: sim's XRCD with CreateQP in
// verbs' terms.
type vXRCD struct{ x *XRCD }

func (v vXRCD) Close() error { return v.x.Close() }

// CreateQP implements verbs.XRCD: XRCD.CreateQP. A CQ or SRQ of another
// implementation is EINVAL, though the target QP would not read it.
func (v vXRCD) CreateQP(attr verbs.QPInitAttrEx) (verbs.QP, error) {
	a, err := qpInitAttrOf(verbCreateQPEx, attr)
	if err != nil {
		return nil, err
	}
	q, err := v.x.CreateQP(a)
	if err != nil {
		return nil, err
	}
	return vQP{q}, nil
}

// XRCDOf returns the simulator's XRC domain behind x, if x is one.
func XRCDOf(x verbs.XRCD) (*XRCD, bool) {
	v, ok := x.(vXRCD)
	return v.x, ok && v.x != nil
}

// VerbsXRCD returns x as a verbs.XRCD (nil for nil).
func VerbsXRCD(x *XRCD) verbs.XRCD {
	if x == nil {
		return nil
	}
	return vXRCD{x}
}

// vMR is an MR as a verbs.MR: sim's MR with Rereg in verbs' terms. The
// engine accepts it wherever a work request names an MR (MWBindInfo.MR).
type vMR struct{ *MR }

// Rereg implements verbs.MRReregisterer.
func (v vMR) Rereg(flags verbs.ReregFlags, pd verbs.PD, buf []byte, access verbs.AccessFlags) error {
	var p *PD
	if pd != nil {
		var ok bool
		if p, ok = PDOf(pd); !ok {
			return &verbs.ReregError{Failure: verbs.ReregErrInput, Err: foreign("ibv_rereg_mr", "PD")}
		}
	}
	return v.MR.Rereg(flags, p, buf, access)
}

var (
	_ verbs.Device         = vDevice{}
	_ verbs.Context        = vContext{}
	_ verbs.ExQuerier      = vContext{}
	_ verbs.ExCQCreator    = vContext{}
	_ verbs.XRCOpener      = vContext{}
	_ verbs.PD             = vPD{}
	_ verbs.QPExCreator    = vPD{}
	_ verbs.MRAdviser      = vPD{}
	_ verbs.MR             = vMR{}
	_ verbs.MRReregisterer = vMR{}
	_ verbs.MR             = (*MR)(nil)
	_ verbs.MW             = (*MW)(nil)
	_ verbs.AH             = (*AH)(nil)
	_ verbs.XRCD           = vXRCD{}
)

// VerbsPD returns pd as a verbs.PD (nil for nil).
func VerbsPD(pd *PD) verbs.PD { return wrapPD(pd) }

// VerbsMR returns mr as a verbs.MR with ibv_rereg_mr in verbs' terms
// (verbs.MRReregisterer); nil for nil.
func VerbsMR(mr *MR) verbs.MR {
	if mr == nil {
		return nil
	}
	return vMR{mr}
}
