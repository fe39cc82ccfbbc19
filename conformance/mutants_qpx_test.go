package conformance_test

import (
	"github.com/verbsim/verbsim/conformance"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/qp"
	"github.com/verbsim/verbsim/verbs"
)

// The extended post API through the mutant wrapper, and the mutants of
// QPX-01..QPX-05.

func init() { mutants = append(mutants, qpxMutants()...) }

// CreateQPEx forwards conformance.QPExCreator.
func (p *mPD) CreateQPEx(attr conformance.QPInitAttr, mask uint32, ops verbs.QPSendOps) (conformance.QP, error) {
	if attr.SendCQ != nil {
		attr.SendCQ = attr.SendCQ.(*mCQ).inner
	}
	if attr.RecvCQ != nil {
		attr.RecvCQ = attr.RecvCQ.(*mCQ).inner
	}
	if attr.SRQ != nil {
		attr.SRQ = attr.SRQ.(*mSRQ).inner
	}
	var q conformance.QP
	var err error
	if p.h.createQPEx != nil {
		q, err = p.h.createQPEx(p.inner, attr, mask, ops)
	} else {
		q, err = p.inner.(conformance.QPExCreator).CreateQPEx(attr, mask, ops)
	}
	if q == nil {
		return nil, err
	}
	return p.c.outerQP(q), err
}

func (q *mQP) wb() conformance.WRBuilder { return q.inner.(conformance.WRBuilder) }

// The builder methods forward conformance.WRBuilder.
func (q *mQP) SetWRID(id uint64) {
	if q.h.setWRID != nil {
		q.h.setWRID(q.wb(), id)
		return
	}
	q.wb().SetWRID(id)
}
func (q *mQP) SetWRFlags(f verbs.SendFlags) { q.wb().SetWRFlags(f) }
func (q *mQP) WRStart() {
	if q.h.wrStart != nil {
		q.h.wrStart(q.wb())
		return
	}
	q.wb().WRStart()
}
func (q *mQP) WRComplete() error {
	if q.h.wrComplete != nil {
		return q.h.wrComplete(q.wb())
	}
	return q.wb().WRComplete()
}
func (q *mQP) WRAbort() {
	if q.h.wrAbort != nil {
		q.h.wrAbort(q.wb())
		return
	}
	q.wb().WRAbort()
}
func (q *mQP) WRSend()                                          { q.wb().WRSend() }
func (q *mQP) WRSendImm(imm uint32)                             { q.wb().WRSendImm(imm) }
func (q *mQP) WRRDMAWrite(rkey uint32, addr uint64)             { q.wb().WRRDMAWrite(rkey, addr) }
func (q *mQP) WRRDMARead(rkey uint32, addr uint64)              { q.wb().WRRDMARead(rkey, addr) }
func (q *mQP) WRSetSGE(lkey uint32, addr uint64, length uint32) { q.wb().WRSetSGE(lkey, addr, length) }
func (q *mQP) WRSetSGEList(list []verbs.SGE)                    { q.wb().WRSetSGEList(list) }
func (q *mQP) WRSetInlineData(data []byte)                      { q.wb().WRSetInlineData(data) }

var (
	_ conformance.QPExCreator = (*mPD)(nil)
	_ conformance.WRBuilder   = (*mQP)(nil)
)

func qpxMutants() []mutant {
	return []mutant{
		{name: "ibv_create_qp_ex drops the send_ops_flags it does not support", rules: []string{"QPX-01"}, h: hooks{
			createQPEx: func(pd conformance.PD, attr conformance.QPInitAttr, mask uint32, ops verbs.QPSendOps) (conformance.QP, error) {
				return pd.(conformance.QPExCreator).CreateQPEx(attr, mask&^conformance.QPInitAttrXRCD, ops&qp.SupportedSendOps(attr.Type, sim.RXEProfile().Readings))
			}}},
		{name: "ibv_create_qp_ex gives the builder every operation of the type", rules: []string{"QPX-02"}, h: hooks{
			createQPEx: func(pd conformance.PD, attr conformance.QPInitAttr, mask uint32, ops verbs.QPSendOps) (conformance.QP, error) {
				if ops != 0 {
					ops = qp.SupportedSendOps(attr.Type, sim.RXEProfile().Readings)
				}
				return pd.(conformance.QPExCreator).CreateQPEx(attr, mask, ops)
			}}},
		{name: "qpx->wr_id is ignored", rules: []string{"QPX-03"}, h: hooks{
			setWRID: func(b conformance.WRBuilder, id uint64) {}}},
		{name: "ibv_wr_complete hides the failure of a batch", rules: []string{"QPX-04", "QPX-02"}, h: hooks{
			wrComplete: func(b conformance.WRBuilder) error { _ = b.WRComplete(); return nil }}},
		{name: "ibv_wr_abort posts the batch", rules: []string{"QPX-04"}, h: hooks{
			wrAbort: func(b conformance.WRBuilder) { _ = b.WRComplete() }}},
		{name: "the device states the other send_ops reading", rules: []string{"QPX-01", "QPX-04"}, h: hooks{
			profile: func(p conformance.Profile) conformance.Profile {
				p.SendOpsRXE = !p.SendOpsRXE
				return p
			}}},
		{name: "ibv_wr_start inside a batch starts it afresh", rules: []string{"QPX-05"}, h: hooks{
			wrStart: func(b conformance.WRBuilder) { b.WRAbort(); b.WRStart() }}},
	}
}
