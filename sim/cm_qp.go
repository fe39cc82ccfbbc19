package sim

import (
	"context"
	"syscall"

	"github.com/verbsim/verbsim/rdmacm"
	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// The QPs of IDs: rdma_create_qp and rdma_create_srq, rdma_init_qp_attr,
// and the moves librdmacm makes (CM-12, CM-29, CM-30, CM-34). Creating and
// destroying verbs objects are verbs of their own, called without the
// domain lock, as librdmacm calls libibverbs.

// CreateQP implements rdmacm.ID: rdma_create_qp (CM-12). pd nil takes the
// device's default PD; a nil CQ of attr is made, with a completion channel
// of its own, and is destroyed with the QP. On return attr holds the QP's
// real capacities and its CQs.
func (id *CMID) CreateQP(pd verbs.PD, attr *verbs.QPInitAttr) (err error) {
	const verb = "rdma_create_qp"
	if attr == nil {
		return verr.New(verb, syscall.EINVAL, "nil qp_init_attr")
	}
	done, err := id.call(verb)
	if err != nil {
		return err
	}
	a := id.a
	in := QPInitAttr{Context: attr.Context, Cap: attr.Cap, Type: attr.Type, SQSigAll: attr.SQSigAll}
	if in.Type == 0 {
		in.Type = id.qpType
	}
	spd, err := a.qpArgsLocked(verb, id, pd, attr, &in)
	if err != nil {
		return done(err)
	}
	ctx := id.vctx
	done(nil)

	made := &cmCQs{}
	if in.SendCQ == nil && attr.Cap.MaxSendWR > 0 {
		if in.SendCQ, err = made.make(ctx, id, int(attr.Cap.MaxSendWR), true); err != nil {
			made.destroy()
			return err
		}
	}
	if in.RecvCQ == nil && attr.Cap.MaxRecvWR > 0 {
		if in.RecvCQ, err = made.make(ctx, id, int(attr.Cap.MaxRecvWR), false); err != nil {
			made.destroy()
			return err
		}
	}
	q, err := spd.CreateQP(in)
	if err != nil {
		made.destroy()
		return err
	}
	done, err = id.call(verb)
	if err == nil {
		if id.qp != nil {
			err = verr.New(verb, syscall.EINVAL, "the rdma_cm_id has a QP already (CM-12)")
		} else {
			err = id.initQPLocked(verb, q)
		}
		if err == nil {
			id.qp, id.pd = q, spd
			made.keep(id)
		}
		done(err)
	}
	if err != nil {
		_ = q.DestroyContext(context.Background())
		made.destroy()
		return err
	}
	attr.Cap, attr.Type = q.Cap(), in.Type
	attr.SendCQ, attr.RecvCQ = VerbsCQ(in.SendCQ), VerbsCQ(in.RecvCQ)
	if in.SRQ != nil {
		attr.SRQ = VerbsSRQ(in.SRQ)
	}
	return nil
}

// qpArgsLocked checks rdma_create_qp's arguments and fills in's PD, CQs
// and SRQ (cma:cma.c rdma_create_qp_ex).
func (a *cmAgent) qpArgsLocked(verb string, id *CMID, pd verbs.PD, attr *verbs.QPInitAttr, in *QPInitAttr) (*PD, error) {
	switch {
	case id.qp != nil:
		return nil, verr.New(verb, syscall.EINVAL, "the rdma_cm_id has a QP already (CM-12)")
	case id.vctx == nil:
		return nil, verr.New(verb, syscall.EINVAL, "the rdma_cm_id is bound to no device (CM-12)")
	case id.dev.removed:
		return nil, verr.New(verb, syscall.ENODEV, "the device has been removed (CM-24)")
	}
	var spd *PD
	switch {
	case pd != nil:
		p, ok := PDOf(pd)
		if !ok {
			return nil, foreign(verb, "PD")
		}
		if p.ctx != id.vctx {
			return nil, verr.New(verb, syscall.EINVAL, "the PD was not allocated on the rdma_cm_id's verbs context (CM-12)")
		}
		spd = p
	case id.pd != nil:
		spd = id.pd
	default:
		p, err := a.pdLocked(id.dev)
		if err != nil {
			return nil, err
		}
		spd = p
	}
	var ok bool
	if attr.SendCQ != nil {
		if in.SendCQ, ok = CQOf(attr.SendCQ); !ok {
			return nil, foreign(verb, "send CQ")
		}
	}
	if attr.RecvCQ != nil {
		if in.RecvCQ, ok = CQOf(attr.RecvCQ); !ok {
			return nil, foreign(verb, "receive CQ")
		}
	}
	if (id.recvCQ != nil && in.RecvCQ != nil && in.RecvCQ != id.recvCQ) || (id.sendCQ != nil && in.SendCQ != nil && in.SendCQ != id.sendCQ) {
		return nil, verr.New(verb, syscall.EINVAL, "the rdma_cm_id has CQs of its own already")
	}
	if in.SendCQ == nil {
		in.SendCQ = id.sendCQ
	}
	if in.RecvCQ == nil {
		in.RecvCQ = id.recvCQ
	}
	if attr.SRQ != nil {
		if in.SRQ, ok = SRQOf(attr.SRQ); !ok {
			return nil, foreign(verb, "SRQ")
		}
	} else {
		in.SRQ = id.srq
	}
	return spd, nil
}

// cmCQs are the CQs and channels the CM made for an ID (ucma_create_cqs).
type cmCQs struct {
	sendCQ, recvCQ     *CQ
	sendChan, recvChan *CompChannel
}

func (m *cmCQs) make(ctx *Context, id *CMID, n int, send bool) (*CQ, error) {
	ch, err := ctx.CreateCompChannel()
	if err != nil {
		return nil, err
	}
	q, err := ctx.CreateCQ(n, id, ch, 0)
	if err != nil {
		_ = ch.Destroy()
		return nil, err
	}
	if send {
		m.sendCQ, m.sendChan = q, ch
	} else {
		m.recvCQ, m.recvChan = q, ch
	}
	return q, nil
}

// keep hands the CQs to the ID, which destroys them with its QP or SRQ.
func (m *cmCQs) keep(id *CMID) {
	if m.sendCQ != nil {
		id.sendCQ, id.sendChan = m.sendCQ, m.sendChan
	}
	if m.recvCQ != nil {
		id.recvCQ, id.recvChan = m.recvCQ, m.recvChan
	}
}

// destroy destroys the CQs and channels (ucma_destroy_cqs).
func (m *cmCQs) destroy() {
	for _, q := range []*CQ{m.recvCQ, m.sendCQ} {
		if q != nil {
			_ = q.DestroyContext(context.Background())
		}
	}
	for _, ch := range []*CompChannel{m.recvChan, m.sendChan} {
		if ch != nil {
			_ = ch.Destroy()
		}
	}
	*m = cmCQs{}
}

// takeCQsLocked takes the CM-made CQs away from the ID, for destroying.
func (id *CMID) takeCQsLocked() cmCQs {
	m := cmCQs{sendCQ: id.sendCQ, recvCQ: id.recvCQ, sendChan: id.sendChan, recvChan: id.recvChan}
	id.sendCQ, id.recvCQ, id.sendChan, id.recvChan = nil, nil, nil, nil
	return m
}

// initQPLocked moves a new QP as librdmacm does (CM-12): RC and UC to INIT,
// UD to RTS.
func (id *CMID) initQPLocked(verb string, q *QP) error {
	attr, mask, err := id.a.initQPAttrLocked(verb, id, verbs.QPStateInit, q.Type() == verbs.QPTypeUD)
	if err != nil {
		return err
	}
	if err := q.q.ModifyLocked(&attr, mask); err != nil {
		return err
	}
	if q.Type() != verbs.QPTypeUD {
		return nil
	}
	attr = verbs.QPAttr{QPState: verbs.QPStateRTR}
	if err := q.q.ModifyLocked(&attr, verbs.QPAttrState); err != nil {
		return err
	}
	attr = verbs.QPAttr{QPState: verbs.QPStateRTS}
	return q.q.ModifyLocked(&attr, verbs.QPAttrState|verbs.QPAttrSQPSN)
}

// DestroyQP implements rdmacm.ID: rdma_destroy_qp: the QP, then the CQs
// the CM made for it.
func (id *CMID) DestroyQP() error {
	const verb = "rdma_destroy_qp"
	done, err := id.callIn(verb, true)
	if err != nil {
		return err
	}
	q := id.qp
	if q == nil {
		return done(verr.New(verb, syscall.EINVAL, "the rdma_cm_id has no QP"))
	}
	id.qp = nil
	var cqs cmCQs
	if id.srq == nil {
		cqs = id.takeCQsLocked()
	}
	done(nil)
	err = q.DestroyContext(context.Background())
	cqs.destroy()
	return err
}

// CreateSRQ implements rdmacm.ID: rdma_create_srq (CM-30).
func (id *CMID) CreateSRQ(pd verbs.PD, attr *verbs.SRQInitAttr) error {
	const verb = "rdma_create_srq"
	if attr == nil {
		return verr.New(verb, syscall.EINVAL, "nil srq_init_attr")
	}
	done, err := id.call(verb)
	if err != nil {
		return err
	}
	if id.srq != nil {
		return done(verr.New(verb, syscall.EINVAL, "the rdma_cm_id has an SRQ already (CM-30)"))
	}
	spd, err := id.a.qpArgsLocked(verb, id, pd, &verbs.QPInitAttr{}, &QPInitAttr{})
	if err != nil {
		return done(err)
	}
	done(nil)
	s, err := spd.CreateSRQ(SRQInitAttr{Context: attr.Context, Attr: attr.Attr})
	if err != nil {
		return err
	}
	done, err = id.call(verb)
	if err == nil && id.srq != nil {
		err = verr.New(verb, syscall.EINVAL, "the rdma_cm_id has an SRQ already (CM-30)")
	}
	if err == nil {
		id.srq = s
		if id.pd == nil {
			id.pd = spd
		}
	}
	if done != nil {
		done(err)
	}
	if err != nil {
		_ = s.DestroyContext(context.Background())
		return err
	}
	a, qerr := s.Query()
	if qerr == nil {
		attr.Attr = a
	}
	return nil
}

// DestroySRQ implements rdmacm.ID: rdma_destroy_srq.
func (id *CMID) DestroySRQ() error {
	const verb = "rdma_destroy_srq"
	done, err := id.callIn(verb, true)
	if err != nil {
		return err
	}
	s := id.srq
	if s == nil {
		return done(verr.New(verb, syscall.EINVAL, "the rdma_cm_id has no SRQ"))
	}
	id.srq = nil
	var cqs cmCQs
	if id.qp == nil {
		cqs = id.takeCQsLocked()
	}
	done(nil)
	err = s.DestroyContext(context.Background())
	cqs.destroy()
	return err
}

// InitQPAttr implements rdmacm.ID: rdma_init_qp_attr (CM-29).
func (id *CMID) InitQPAttr(state verbs.QPState) (verbs.QPAttr, verbs.QPAttrMask, error) {
	const verb = "rdma_init_qp_attr"
	done, err := id.call(verb)
	if err != nil {
		return verbs.QPAttr{}, 0, err
	}
	attr, mask, err := id.a.initQPAttrLocked(verb, id, state, id.qpType == verbs.QPTypeUD)
	return attr, mask, done(err)
}

// initQPAttrLocked is rdma_init_qp_attr (K:cma.c rdma_init_qp_attr,
// cma_ib_init_qp_attr; K:cm.c cm_init_qp_*_attr): without a connection,
// or for UD, the attributes of INIT whatever the state asked; with one,
// those of the state.
func (a *cmAgent) initQPAttrLocked(verb string, id *CMID, state verbs.QPState, ud bool) (verbs.QPAttr, verbs.QPAttrMask, error) {
	if id.port == nil {
		return verbs.QPAttr{}, 0, verr.New(verb, syscall.EINVAL, "the rdma_cm_id is bound to no device (CM-29)")
	}
	attr := verbs.QPAttr{QPState: state, PortNum: id.port.num}
	mask := verbs.QPAttrState | verbs.QPAttrPKeyIndex | verbs.QPAttrPort
	c := id.conn
	if ud || c == nil || c.sidr {
		if ud {
			attr.QKey = rdmacm.UDPQKey
			if id.qkey != 0 {
				attr.QKey = id.qkey
			}
			return attr, mask | verbs.QPAttrQKey, nil
		}
		return attr, mask | verbs.QPAttrAccessFlags, nil
	}
	known := c.state == ibReqRcvd || c.state == ibRepRcvd || c.state == ibRepSent || c.state == ibEstablished
	rc := id.qpType != verbs.QPTypeUC
	switch state {
	case verbs.QPStateInit:
		attr.QPAccessFlags = verbs.AccessRemoteWrite
		if id.respRes > 0 {
			attr.QPAccessFlags |= verbs.AccessRemoteRead | verbs.AccessRemoteAtomic
		}
		return attr, mask | verbs.QPAttrAccessFlags, nil
	case verbs.QPStateRTR:
		if !known {
			break
		}
		attr = verbs.QPAttr{QPState: state, AHAttr: id.avLocked(), PathMTU: c.mtu, DestQPNum: c.remoteQPN, RQPSN: c.psn}
		mask = verbs.QPAttrState | verbs.QPAttrAV | verbs.QPAttrPathMTU | verbs.QPAttrDestQPN | verbs.QPAttrRQPSN
		if rc {
			attr.MaxDestRDAtomic, attr.MinRNRTimer = id.respRes, 0
			mask |= verbs.QPAttrMaxDestRDAtomic | verbs.QPAttrMinRNRTimer
		}
		return attr, mask, nil
	case verbs.QPStateRTS:
		if !known {
			break
		}
		attr = verbs.QPAttr{QPState: state, SQPSN: c.psn}
		mask = verbs.QPAttrState | verbs.QPAttrSQPSN
		if rc {
			attr.Timeout, attr.RetryCnt, attr.RNRRetry, attr.MaxRDAtomic = id.ackTimeout(), c.retry, c.peerRNR, id.initDepth
			mask |= verbs.QPAttrTimeout | verbs.QPAttrRetryCnt | verbs.QPAttrRNRRetry | verbs.QPAttrMaxQPRDAtomic
		}
		return attr, mask, nil
	}
	return verbs.QPAttr{}, 0, verr.Errorf(verb, syscall.EINVAL, "the connection is %v: no attributes for %v yet (CM-29)", c.state, state)
}

// avLocked is the address vector of the ID's peer (ib_init_ah_attr_from_path).
func (id *CMID) avLocked() verbs.AHAttr {
	av := verbs.AHAttr{DLID: id.peerLID, PortNum: id.port.num}
	if id.peerGlobal {
		av.IsGlobal = true
		av.GRH = verbs.GlobalRoute{DGID: id.peerGID, SGIDIndex: id.localGIDIndex(), HopLimit: 64, TrafficClass: id.tos}
	}
	return av
}

// qpToRTSLocked moves the ID's QP to INIT (again, with the connection's
// access flags), RTR and RTS, as librdmacm does before a REP or an RTU
// (cma:cma.c ucma_modify_qp_rtr, ucma_modify_qp_rts).
func (a *cmAgent) qpToRTSLocked(verb string, id *CMID) error {
	q := id.qp.q
	for _, st := range []verbs.QPState{verbs.QPStateInit, verbs.QPStateRTR, verbs.QPStateRTS} {
		attr, mask, err := a.initQPAttrLocked(verb, id, st, false)
		if err != nil {
			return err
		}
		if err := q.ModifyLocked(&attr, mask); err != nil {
			return err
		}
	}
	return nil
}

// qpToErrLocked moves the ID's QP, if it has one, to ERR (librdmacm's
// ucma_modify_qp_err).
func (id *CMID) qpToErrLocked() error {
	if id.qp == nil || id.qp.q.DestroyedLocked() {
		return nil
	}
	attr := verbs.QPAttr{QPState: verbs.QPStateErr}
	return id.qp.q.ModifyLocked(&attr, verbs.QPAttrState)
}
