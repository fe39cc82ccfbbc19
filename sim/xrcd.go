package sim

import (
	"syscall"

	"github.com/verbsim/verbsim/internal/domain"

	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// xrcdInitReserved is IBV_XRCD_INIT_ATTR_RESERVED: it and every bit above
// it are EOPNOTSUPP.
const xrcdInitReserved verbs.XRCDInitMask = 1 << 2

// XRCD is an XRC domain (struct ibv_xrcd): the scope in which XRC SRQs, and
// the XRC QPs that deliver into them, find each other. It is opened through
// a device context and holds no PD. On a nil *XRCD every method returns
// EINVAL or zero values; see the package doc.
type XRCD struct {
	tname string // the trace name, given at creation
	ctx   *Context
	dead  bool
	srqs  int // live XRC SRQs in the domain (XRC-02)
	qps   int // live XRC_RECV QPs in the domain (XRC-06)
}

const (
	verbOpenXRCD  = "ibv_open_xrcd"
	verbCloseXRCD = "ibv_close_xrcd"
)

// OpenXRCD opens an XRC domain (ibv_open_xrcd). EINVAL on a nil or closed
// context and when comp_mask lacks XRCDInitFD or XRCDInitOFlags;
// EOPNOTSUPP for comp_mask bits from IBV_XRCD_INIT_ATTR_RESERVED up (checked
// first, as libibverbs does) and on a profile without XRC (XRC-03); EBADF for
// an fd other than -1 (see XRCDInitAttr). The context cannot be closed while
// the domain is open (XRC-02).
func (c *Context) OpenXRCD(attr verbs.XRCDInitAttr) (_ *XRCD, err error) {
	if c == nil {
		return nil, verr.New(verbOpenXRCD, syscall.EINVAL, "nil device context")
	}
	f := c.dev.fabric
	f.d.Enter(domain.Op{})
	defer f.d.Leave(domain.Op{}, nil)
	if e := f.eng; e.tracing() {
		defer func() {
			if err != nil {
				e.callLocked(e.nameOf(c), "open_xrcd", "", "", err)
			}
		}()
	}
	if err := c.checkLocked(verbOpenXRCD); err != nil {
		return nil, err
	}
	switch m := attr.CompMask; {
	case f.profile.NoXRC:
		return nil, verr.New(verbOpenXRCD, syscall.EOPNOTSUPP, "the device has no XRC verbs (XRC-03)")
	case m >= xrcdInitReserved:
		return nil, verr.Errorf(verbOpenXRCD, syscall.EOPNOTSUPP, "comp_mask %#x has bits from IBV_XRCD_INIT_ATTR_RESERVED up (XRC-01)", uint32(m))
	case m&verbs.XRCDInitFD == 0 || m&verbs.XRCDInitOFlags == 0:
		return nil, verr.Errorf(verbOpenXRCD, syscall.EINVAL, "comp_mask %#x lacks IBV_XRCD_INIT_ATTR_FD or IBV_XRCD_INIT_ATTR_OFLAGS (XRC-01)", uint32(m))
	case attr.FD != -1:
		return nil, verr.Errorf(verbOpenXRCD, syscall.EBADF, "fd %d: verbsim has no files; only fd -1 is accepted (XRC-01)", attr.FD)
	}
	x := &XRCD{ctx: c}
	c.xrcds++
	return x, nil
}

// Context returns the device context the domain was opened through
// (ibv_xrcd.context).
func (x *XRCD) Context() *Context {
	if x == nil {
		return nil
	}
	return x.ctx
}

// Closed reports whether Close has succeeded.
func (x *XRCD) Closed() bool {
	if x == nil {
		return false
	}
	f := x.ctx.dev.fabric
	f.d.Enter(domain.Op{})
	defer f.d.Leave(domain.Op{}, nil)
	return x.dead
}

// Close closes the XRC domain (ibv_close_xrcd). It fails with EBUSY,
// changing nothing, while an XRC SRQ (XRC-02) or an XRC_RECV QP (XRC-06)
// still belongs to the domain;
// closing a nil or closed domain is EINVAL.
func (x *XRCD) Close() error {
	if x == nil {
		return verr.New(verbCloseXRCD, syscall.EINVAL, "nil XRCD")
	}
	f := x.ctx.dev.fabric
	f.d.Enter(domain.Op{})
	defer f.d.Leave(domain.Op{}, nil)
	if err := x.checkLocked(verbCloseXRCD); err != nil {
		return err
	}
	if x.srqs > 0 {
		return verr.Errorf(verbCloseXRCD, syscall.EBUSY, "%d XRC SRQ(s) still belong to the domain (XRC-02)", x.srqs)
	}
	if x.qps > 0 {
		return verr.Errorf(verbCloseXRCD, syscall.EBUSY, "%d XRC_RECV QP(s) still belong to the domain (XRC-06)", x.qps)
	}
	x.dead = true
	x.ctx.xrcds--
	return nil
}

const verbCreateQPEx = "ibv_create_qp_ex"

// CreateQP creates an XRC target QP in the domain: ibv_create_qp_ex with
// qp_type IBV_QPT_XRC_RECV, IBV_QP_INIT_ATTR_XRCD in comp_mask and xrcd
// set to x (XRC-06). The QP has no PD, no CQ and no queue of its own:
// SendCQ, RecvCQ, SRQ and Cap are ignored, as the kernel ignores them, and
// it reports zero capacities. It takes the messages of the XRC_SEND QP it
// is connected to and delivers each into the XRC SRQ of this domain the
// message names, completing on that SRQ's CQ (XRC-10).
//
// Errors, with nothing created: EINVAL on a nil or closed domain or
// context, a comp_mask without QPInitXRCD, or a qp_type other than
// XRCRecv; EOPNOTSUPP for other comp_mask bits than PD, XRCD and
// SEND_OPS_FLAGS (QPX-01) and for send_ops_flags (the target sends
// nothing); ENOMEM beyond max_qp. The QP holds the domain (Close is EBUSY)
// until destroyed.
func (x *XRCD) CreateQP(attr QPInitAttr) (_ *QP, err error) {
	if x == nil {
		return nil, verr.New(verbCreateQPEx, syscall.EINVAL, "nil XRCD")
	}
	c := x.ctx
	d := c.dev
	f := d.fabric
	f.d.Enter(domain.Op{})
	defer f.d.Leave(domain.Op{}, nil)
	if e := f.eng; e.tracing() {
		defer func() {
			if err != nil {
				e.callLocked(e.nameOf(c), "create_qp_ex", "", "", err)
			}
		}()
	}
	if err := c.checkLocked(verbCreateQPEx); err != nil {
		return nil, err
	}
	if err := x.checkLocked(verbCreateQPEx); err != nil {
		return nil, err
	}
	if err := checkXRCType(f, attr); err != nil {
		return nil, err
	}
	switch m := attr.CompMask; {
	case m&^(QPInitPD|QPInitXRCD|QPInitSendOpsFlags) != 0:
		return nil, verr.Errorf(verbCreateQPEx, syscall.EOPNOTSUPP, "comp_mask bits %#x are not supported (QPX-01)", uint32(m&^(QPInitPD|QPInitXRCD|QPInitSendOpsFlags)))
	case m&QPInitXRCD == 0:
		return nil, verr.New(verbCreateQPEx, syscall.EINVAL, "comp_mask lacks IBV_QP_INIT_ATTR_XRCD (XRC-06)")
	case attr.Type != verbs.QPTypeXRCRecv:
		return nil, verr.Errorf(verbCreateQPEx, syscall.EINVAL, "qp_type %v in an XRC domain: only XRC_RECV QPs are created there (XRC-06)", attr.Type)
	}
	attr.SendCQ, attr.RecvCQ, attr.SRQ = nil, nil, nil
	return d.createQPLocked(verbCreateQPEx, c, attr, nil, x)
}

// checkLocked returns EINVAL for verb if the domain is closed.
//
// Precondition: the domain lock is held.
func (x *XRCD) checkLocked(verb string) error {
	if x.dead {
		return verr.New(verb, syscall.EINVAL, "the XRCD has been closed")
	}
	return nil
}

// srqInitReserved is IBV_SRQ_INIT_ATTR_RESERVED: it and every bit above it
// are EOPNOTSUPP.
const srqInitReserved verbs.SRQInitMask = 1 << 5

// SRQInitAttrEx holds the arguments of ibv_create_srq_ex (struct
// ibv_srq_init_attr_ex); tm_cap is left out, verbsim has no tag matching.
type SRQInitAttrEx struct {
	Context  any               // srq_context
	Attr     verbs.SRQAttr     // max_wr, max_sge, srq_limit (SRQ-01)
	CompMask verbs.SRQInitMask // which of the fields below are valid
	Type     verbs.SRQType     // srq_type, read with SRQInitType
	PD       *PD               // pd, read with SRQInitPD (required)
	XRCD     *XRCD             // xrcd, read with SRQInitXRCD (an XRC SRQ's domain)
	CQ       *CQ               // cq, read with SRQInitCQ (an XRC SRQ's completions)
}

const verbCreateSRQEx = "ibv_create_srq_ex"

// CreateSRQEx creates an SRQ from extended attributes (ibv_create_srq_ex),
// through the context c (XRC-04):
//   - comp_mask bits from IBV_SRQ_INIT_ATTR_RESERVED up, the TM bit and
//     srq_type TM: EOPNOTSUPP; a profile without XRC refuses every request
//     ibv_create_srq cannot serve so (XRC-03);
//   - pd is required, and every object named must be live and of this
//     context: EINVAL otherwise, as is an srq_type verbs.h does not define;
//   - a BASIC SRQ (srq_type BASIC or no TYPE bit) is what PD.CreateSRQ
//     makes; xrcd and cq are not read for it;
//   - an XRC SRQ needs the XRCD and CQ bits and objects (EINVAL). It has a
//     number, which GetSRQNum returns (XRC-05), and holds its PD, its XRCD
//     (XRC-02) and its CQ (CQ-11) until destroyed.
//
// The SRQ's capacities follow SRQ-01 whatever its type.
func (c *Context) CreateSRQEx(attr SRQInitAttrEx) (_ *SRQ, err error) {
	if c == nil {
		return nil, verr.New(verbCreateSRQEx, syscall.EINVAL, "nil device context")
	}
	m := attr.CompMask
	typ := verbs.SRQTBasic
	if m&verbs.SRQInitType != 0 {
		typ = attr.Type
	}
	if m&^(verbs.SRQInitPD|verbs.SRQInitType) == 0 && m&verbs.SRQInitPD != 0 && typ == verbs.SRQTBasic {
		// libibverbs hands this request to ibv_create_srq itself.
		if err := checkOwner(verbCreateSRQEx, "pd", c, attr.PD, sameContext); err != nil {
			return nil, err
		}
		return attr.PD.CreateSRQ(SRQInitAttr{Context: attr.Context, Attr: attr.Attr})
	}
	f := c.dev.fabric
	f.d.Enter(domain.Op{})
	defer f.d.Leave(domain.Op{}, nil)
	if err := c.checkLocked(verbCreateSRQEx); err != nil {
		return nil, err
	}
	switch {
	case f.profile.NoXRC:
		return nil, verr.New(verbCreateSRQEx, syscall.EOPNOTSUPP, "the device has no ibv_create_srq_ex beyond ibv_create_srq (XRC-03)")
	case m >= srqInitReserved:
		return nil, verr.Errorf(verbCreateSRQEx, syscall.EOPNOTSUPP, "comp_mask %#x has bits from IBV_SRQ_INIT_ATTR_RESERVED up (XRC-04)", uint32(m))
	case m&verbs.SRQInitTM != 0 || typ == verbs.SRQTTM:
		return nil, verr.New(verbCreateSRQEx, syscall.EOPNOTSUPP, "the device has no tag matching (XRC-04)")
	case m&verbs.SRQInitPD == 0:
		return nil, verr.New(verbCreateSRQEx, syscall.EINVAL, "comp_mask lacks IBV_SRQ_INIT_ATTR_PD (XRC-04)")
	case typ != verbs.SRQTBasic && typ != verbs.SRQTXRC:
		return nil, verr.Errorf(verbCreateSRQEx, syscall.EINVAL, "srq_type %d is not defined (XRC-04)", uint32(typ))
	}
	if err := checkOwner(verbCreateSRQEx, "pd", c, attr.PD, sameContext); err != nil {
		return nil, err
	}
	if err := attr.PD.checkLocked(verbCreateSRQEx); err != nil {
		return nil, err
	}
	var x *xrcSRQ
	if typ == verbs.SRQTXRC {
		if m&verbs.SRQInitXRCD == 0 || m&verbs.SRQInitCQ == 0 {
			return nil, verr.Errorf(verbCreateSRQEx, syscall.EINVAL, "an XRC SRQ needs IBV_SRQ_INIT_ATTR_XRCD and IBV_SRQ_INIT_ATTR_CQ in comp_mask %#x (XRC-04)", uint32(m))
		}
		if err := checkOwner(verbCreateSRQEx, "xrcd", c, attr.XRCD, sameContext); err != nil {
			return nil, err
		}
		if err := attr.XRCD.checkLocked(verbCreateSRQEx); err != nil {
			return nil, err
		}
		if err := checkOwner(verbCreateSRQEx, "cq", c, attr.CQ, sameContext); err != nil {
			return nil, err
		}
		// The reference is taken first, which also checks that the CQ
		// lives, and given back if the create fails.
		if err := attr.CQ.c.RefLocked(); err != nil {
			return nil, verr.Wrap(verbCreateSRQEx, syscall.EINVAL, "cq", err)
		}
		x = &xrcSRQ{xrcd: attr.XRCD, cq: attr.CQ}
	}
	s, err := attr.PD.createSRQLocked(verbCreateSRQEx, SRQInitAttr{Context: attr.Context, Attr: attr.Attr}, x)
	if err != nil && x != nil {
		x.cq.c.UnrefLocked()
	}
	return s, err
}

// xrcSRQ is what an XRC SRQ has besides a basic one: its domain and CQ.
type xrcSRQ struct {
	xrcd *XRCD
	cq   *CQ
}
