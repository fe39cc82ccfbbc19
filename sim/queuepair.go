package sim

import (
	"fmt"
	"syscall"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/verbs"

	"github.com/verbsim/verbsim/sim/internal/qp"
	"github.com/verbsim/verbsim/sim/verr"
)

// QPInitAttr holds the arguments of ibv_create_qp (struct ibv_qp_init_attr).
type QPInitAttr struct {
	Context  any          // qp_context
	SendCQ   *CQ          // required (QP-03); XRC_RECV: ignored (XRC-06)
	RecvCQ   *CQ          // required (QP-03); may equal SendCQ; XRC: ignored (XRC-06)
	SRQ      *SRQ         // optional; RC and UD only (QP-04); of this context, any PD
	Cap      verbs.QPCap  // requested capacities (QP-02)
	Type     verbs.QPType // QPTypeRC, QPTypeUC, QPTypeUD or QPTypeXRCSend (QPTypeXRCRecv: XRCD.CreateQP)
	SQSigAll bool         // every send WR is signaled (CQ-19)

	// CompMask is comp_mask of struct ibv_qp_init_attr_ex: which of the
	// extended fields below are valid. Zero makes CreateQP ibv_create_qp;
	// QPInitSendOpsFlags makes it ibv_create_qp_ex with send_ops_flags,
	// giving the QP the work request builder (QP.WRStart, QPX-01).
	CompMask QPInitMask
	// SendOpsFlags is send_ops_flags: the operations the builder may start
	// (verbs.QPExWithSend, ...). Read only with QPInitSendOpsFlags in CompMask.
	SendOpsFlags verbs.QPSendOps
}

// QPInitMask is comp_mask of struct ibv_qp_init_attr_ex (enum
// ibv_qp_init_attr_mask).
type QPInitMask uint32

// The comp_mask bits verbsim accepts, with verbs.h values. The others
// (CREATE_FLAGS, MAX_TSO_HEADER, IND_TABLE, RX_HASH and any bit verbs.h
// does not define) are refused with EOPNOTSUPP (QPX-01). XRCD is taken by
// XRCD.CreateQP only; PD.CreateQP refuses it with EOPNOTSUPP, as the others
// (QPX-01, XRC-06).
const (
	// QPInitPD (IBV_QP_INIT_ATTR_PD) says pd is set; it always is here,
	// the receiver of CreateQP.
	QPInitPD QPInitMask = 1 << 0
	// QPInitXRCD (IBV_QP_INIT_ATTR_XRCD) says xrcd is set: the XRC domain
	// of an XRC_RECV QP, the receiver of XRCD.CreateQP (XRC-06).
	QPInitXRCD QPInitMask = 1 << 1
	// QPInitSendOpsFlags (IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) says
	// SendOpsFlags is valid.
	QPInitSendOpsFlags QPInitMask = 1 << 6
)

// firstQPN is the first QP number a device gives out: 0 and 1 are the
// special QPs (SMI, GSI) of InfiniBand.
const firstQPN = 0x11

// CreateQP creates a queue pair in pd (ibv_create_qp). It starts in RESET
// with a qp_num unique on the device (QP-01). EINVAL for capacities above
// the device's (QP-02), a missing CQ (QP-03), a UC QP with an SRQ (QP-04), or
// a CQ or SRQ made through another device context (of this device, another
// device or another fabric), as the kernel, which looks them up among the
// caller's handles, would say; ENOMEM beyond max_qp. A failed create changes
// nothing, except that a QP number may have been used up. The QP holds its PD
// (PD-02), CQs (CQ-11) and SRQ (SRQ-10) until destroyed.
//
// The SRQ may belong to another PD of the same context: neither the kernel
// nor rxe or mlx5 compare the two PDs at creation, so real verbs accept it
// (docs/srq.md). Receives taken from it are checked against the PD the
// transport's receive rules name.
func (pd *PD) CreateQP(attr QPInitAttr) (_ *QP, err error) {
	const verb = "ibv_create_qp"
	d, unlock, err := pd.lockLive(verb)
	if err != nil {
		return nil, err
	}
	defer unlock()
	c, f := pd.ctx, d.fabric
	defer pd.traceCreateFailedLocked(verb, &err)
	if err := pd.checkQPArgs(verb, attr); err != nil {
		return nil, err
	}
	if bad := attr.CompMask &^ (QPInitPD | QPInitSendOpsFlags); bad != 0 {
		return nil, verr.Errorf("ibv_create_qp_ex", syscall.EOPNOTSUPP, "comp_mask bits %#x are not supported here (QPX-01; an XRC_RECV QP is made by XRCD.CreateQP)", uint32(bad))
	}
	if err := checkXRCType(f, attr); err != nil {
		return nil, err
	}
	if attr.Type == verbs.QPTypeXRCRecv {
		return nil, verr.New("ibv_create_qp_ex", syscall.EINVAL, "an XRC_RECV QP is created in its XRC domain, with no PD: XRCD.CreateQP (XRC-06)")
	}
	return d.createQPLocked(verb, c, attr, pd, nil)
}

// checkXRCType refuses the XRC QP types on a profile without XRC (XRC-03).
func checkXRCType(f *Fabric, attr QPInitAttr) error {
	if f.profile.NoXRC && (attr.Type == verbs.QPTypeXRCSend || attr.Type == verbs.QPTypeXRCRecv) {
		return verr.Errorf("ibv_create_qp_ex", syscall.EOPNOTSUPP, "the device has no XRC: qp_type %v (XRC-03)", attr.Type)
	}
	return nil
}

// createQPLocked creates a QP on d through context c: in pd, or for an
// XRC_RECV QP in the XRC domain x (pd nil). The caller has checked its
// arguments' owners.
//
// Precondition: the domain lock is held; c, pd and x are live.
func (d *Device) createQPLocked(verb string, c *Context, attr QPInitAttr, pd *PD, x *XRCD) (*QP, error) {
	f := d.fabric
	if d.qps >= d.attr.MaxQP {
		return nil, verr.Errorf(verb, syscall.ENOMEM, "the device already has max_qp=%d QPs", d.attr.MaxQP)
	}
	// The number is taken only if the QP is made: a refused create leaves
	// the sequence as it was.
	next := d.qpn + 1
	if next < firstQPN {
		next = firstQPN
	}
	num := next & 0xffffff
	q, err := qp.NewLocked(qp.Config{
		Init: qp.InitAttr{
			Context: attr.Context, SendCQ: attr.SendCQ.engQP(), RecvCQ: attr.RecvCQ.engQP(), SRQ: attr.SRQ.eng(),
			Cap: attr.Cap, Type: attr.Type, SQSigAll: attr.SQSigAll,
			Ex: attr.CompMask&QPInitSendOpsFlags != 0, SendOps: attr.SendOpsFlags,
		},
		QPNum:     num,
		Device:    qp.DeviceLimits{MaxQPWR: uint32(d.attr.MaxQPWR), MaxSGE: uint32(d.attr.MaxSGE), MaxInline: uint32(d.attr.MaxInline)},
		Modify:    d.modifyLimitsLocked(),
		Policy:    f.pol.QP,
		Domain:    f.d,
		Name:      qpName(d, num),
		Memory:    deviceMemory{d},
		Host:      host{d},
		Transport: f.pol.Transport,
		Async:     c.async,
		PD:        qpPDValue(pd),
		XRCD:      xrcdValue(x),
		OnDestroy: func() {
			d.qps--
			d.qpByNum.del(num)
			f.topo++
			if x != nil {
				x.qps--
			} else {
				pd.releaseLocked(childQP)
			}
		},
	})
	if err != nil {
		return nil, err
	}
	if x != nil {
		x.qps++
	} else {
		pd.holdLocked(verb, childQP)
	}
	d.qpn = next
	d.qps++
	d.qpByNum.set(num, q)
	f.topo++
	if f.eng.tracing() {
		f.eng.callLocked(q.TraceName(), "create_qp", "", fmt.Sprintf("%v (send %d, recv %d)", attr.Type, q.Cap().MaxSendWR, q.Cap().MaxRecvWR), nil)
	}
	h := newQP(q)
	f.d.Created(h) // a schedule explorer lists the QPs of its world
	return h, nil
}

// qpPDValue is the PD a QP reports: pd, or an untyped nil for none, so
// that QP.PD's type assertion sees no typed nil.
func qpPDValue(pd *PD) any {
	if pd == nil {
		return nil
	}
	return pd
}

// xrcdValue is the XRC domain a QP's engine compares with its XRC SRQs':
// x, or an untyped nil for a QP that is not an XRC target.
func xrcdValue(x *XRCD) any {
	if x == nil {
		return nil
	}
	return x
}

// checkQPArgs checks that the CQs and the SRQ given to CreateQP, when set,
// were made through the PD's context (see checkOwner), and that the SRQ is
// not an XRC SRQ. A missing CQ is left
// to qp.NewLocked, which reports QP-03.
func (pd *PD) checkQPArgs(verb string, attr QPInitAttr) error {
	if attr.SendCQ != nil {
		if err := checkOwner(verb, "send_cq", pd, attr.SendCQ, sameContext); err != nil {
			return err
		}
	}
	if attr.RecvCQ != nil {
		if err := checkOwner(verb, "recv_cq", pd, attr.RecvCQ, sameContext); err != nil {
			return err
		}
	}
	if attr.SRQ != nil {
		if err := checkOwner(verb, "srq", pd, attr.SRQ, sameContext); err != nil {
			return err
		}
		if attr.SRQ.XRC() {
			// The kernel's create_qp takes only a basic SRQ here; an XRC
			// SRQ is reached through an XRC target QP (XRC-05).
			return verr.New(verb, syscall.EINVAL, "the SRQ is an XRC SRQ (XRC-05)")
		}
	}
	return nil
}

// modifyLimitsLocked describes the device's ports and depths for
// ibv_modify_qp's value checks (QP-22).
func (d *Device) modifyLimitsLocked() qp.Limits {
	l := qp.Limits{MaxQPRDAtom: d.attr.MaxQPRDAtom, MaxQPInitRDAtom: d.attr.MaxQPInitRDAtom}
	for _, p := range d.ports {
		eth := p.attr.LinkLayer == verbs.LinkLayerEthernet
		l.Ports = append(l.Ports, qp.PortLimits{
			MaxMTU:       verbs.MTU(p.attr.MaxMTU),
			PKeyTableLen: len(p.pkeys),
			GIDTableLen:  len(p.gids),
			GRHRequired:  eth,
			Ethernet:     eth,
			UnusedGID:    p.unusedGID,
		})
	}
	return l
}

// deviceMemory lets a QP read registered memory by address, for inline
// payloads, whose keys are not checked (QP-35).
type deviceMemory struct{ d *Device }

// ReadLocked implements qp.Memory: a binary search of the device's
// placements, not a scan of its MRs (issue #14).
func (m deviceMemory) ReadLocked(addr uint64, n uint32) ([]byte, bool) {
	return m.d.mrs.readAddr(addr, n)
}

// SRQInitAttr holds the arguments of ibv_create_srq.
type SRQInitAttr struct {
	Context any           // srq_context
	Attr    verbs.SRQAttr // max_wr, max_sge, srq_limit (SRQ-01)
}

// CreateSRQ creates a shared receive queue in pd (ibv_create_srq): EINVAL
// above max_srq_wr or max_srq_sge (SRQ-01), ENOMEM beyond max_srq. The SRQ
// holds its PD until destroyed (PD-02).
func (pd *PD) CreateSRQ(attr SRQInitAttr) (_ *SRQ, err error) {
	const verb = "ibv_create_srq"
	_, unlock, err := pd.lockLive(verb)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return pd.createSRQLocked(verb, attr, nil)
}

// createSRQLocked creates an SRQ in pd, a basic one or, when x is set, an
// XRC SRQ with its domain and CQ, which the caller has checked and whose CQ
// reference it has taken (the SRQ gives it back when destroyed).
//
// Precondition: the domain lock is held; pd and its context are live.
func (pd *PD) createSRQLocked(verb string, attr SRQInitAttr, x *xrcSRQ) (_ *SRQ, err error) {
	c, d := pd.ctx, pd.ctx.dev
	f := d.fabric
	defer pd.traceCreateFailedLocked(verb, &err)
	if d.srqs >= d.attr.MaxSRQ {
		return nil, verr.Errorf(verb, syscall.ENOMEM, "the device already has max_srq=%d SRQs", d.attr.MaxSRQ)
	}
	num := uint32(0)
	if x != nil {
		num = (d.srqn + 1) & 0xffffff
		if num == 0 {
			num = 1
		}
	}
	s, err := qp.NewSRQLocked(qp.SRQConfig{
		Attr:    attr.Attr,
		Context: attr.Context,
		Device: qp.SRQLimits{
			MaxSRQWR: uint32(d.attr.MaxSRQWR), MaxSRQSGE: uint32(d.attr.MaxSRQSGE),
			Resize: d.attr.DeviceCapFlags&verbs.DeviceSRQResize != 0,
		},
		HonourLimitAtCreate: f.profile.SRQLimitAtCreate,
		Domain:              f.d,
		Name:                f.eng.peekName(d, "srq"),
		Async:               c.async,
		PD:                  pd,
		XRC:                 x != nil,
		Num:                 num,
		XRCD:                xrcSRQDomain(x),
		CQ:                  xrcSRQCQ(x),
		OnDestroy: func() {
			d.srqs--
			pd.releaseLocked(childSRQ)
			if x != nil {
				x.xrcd.srqs--
				x.cq.c.UnrefLocked()
				delete(d.srqByNum, num)
			}
		},
	})
	if err != nil {
		return nil, err
	}
	if x != nil {
		x.xrcd.srqs++
		d.srqn = num
		if d.srqByNum == nil {
			d.srqByNum = map[uint32]*qp.SRQ{}
		}
		d.srqByNum[num] = s
	}
	pd.holdLocked(verb, childSRQ)
	d.srqs++
	name := f.eng.nameLocked(d, "srq", s)
	if e := f.eng; e.tracing() {
		a := attr.Attr
		verb, detail := "create_srq", fmt.Sprintf("max_wr %d max_sge %d srq_limit %d", a.MaxWR, a.MaxSGE, a.SRQLimit)
		if x != nil {
			verb, detail = "create_srq_ex", fmt.Sprintf("xrc srqn %#x ", num)+detail
		}
		e.callLocked(name, verb, e.nameOf(pd), detail, nil)
	}
	return newSRQ(s), nil
}

// traceCreateFailedLocked records the failure of a create verb in pd, if
// *err is set.
func (pd *PD) traceCreateFailedLocked(verb string, err *error) {
	if e := pd.ctx.dev.fabric.eng; *err != nil && e.tracing() {
		e.callLocked(e.nameOf(pd), verb[len("ibv_"):], "", "", *err)
	}
}

// lockLive takes the domain lock for a verb that creates an object in pd,
// after checking that pd and its context are alive; unlock releases it. On
// error the lock is not held.
func (pd *PD) lockLive(verb string) (d *Device, unlock func(), err error) {
	if pd == nil {
		return nil, nil, verr.New(verb, syscall.EINVAL, "nil PD")
	}
	d = pd.ctx.dev
	mu := d.fabric.d
	mu.Enter(domain.Op{})
	err = pd.ctx.checkLocked(verb)
	if err == nil {
		err = pd.checkLocked(verb)
	}
	if err != nil {
		pd.traceCreateFailedLocked(verb, &err)
		mu.Leave(domain.Op{}, nil)
		return nil, nil, err
	}
	return d, func() { mu.Leave(domain.Op{}, nil) }, nil
}

// xrcSRQDomain is the domain an XRC SRQ's engine compares with an XRC
// target's (XRC-10); nil for a basic SRQ.
func xrcSRQDomain(x *xrcSRQ) any {
	if x == nil {
		return nil
	}
	return x.xrcd
}

// xrcSRQCQ is the CQ an XRC SRQ's completions go to (XRC-10); nil for a
// basic SRQ.
func xrcSRQCQ(x *xrcSRQ) qp.CQ {
	if x == nil {
		return nil
	}
	return x.cq.c
}
