package conformance_test

import (
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// The extended post API through the mutant wrapper, and the mutants of
// QPX-01..QPX-05.

// CreateQPEx forwards verbs.QPExCreator.
func (p *mPD) CreateQPEx(attr verbs.QPInitAttrEx) (verbs.QP, error) {
	attr.QPInitAttr = innerQPAttr(attr.QPInitAttr)
	var q verbs.QP
	var err error
	if p.h.createQPEx != nil {
		q, err = p.h.createQPEx(p.inner, attr)
	} else {
		q, err = p.inner.(verbs.QPExCreator).CreateQPEx(attr)
	}
	if q == nil {
		return nil, err
	}
	return p.c.outerQP(q), err
}

func (q *mQP) wb() verbs.WRBuilder { return q.inner.(verbs.WRBuilder) }

// The builder methods forward verbs.WRBuilder.
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
func (q *mQP) WRSendInv(rkey uint32)                            { q.wb().WRSendInv(rkey) }
func (q *mQP) WRRDMAWriteImm(rkey uint32, addr uint64, imm uint32) {
	q.wb().WRRDMAWriteImm(rkey, addr, imm)
}
func (q *mQP) WRAtomicCmpSwp(rkey uint32, addr, compare, swap uint64) {
	q.wb().WRAtomicCmpSwp(rkey, addr, compare, swap)
}
func (q *mQP) WRAtomicFetchAdd(rkey uint32, addr, add uint64) {
	q.wb().WRAtomicFetchAdd(rkey, addr, add)
}
func (q *mQP) WRAtomicWrite(rkey uint32, addr uint64, value [8]byte) {
	q.wb().WRAtomicWrite(rkey, addr, value)
}
func (q *mQP) WRLocalInv(rkey uint32)            { q.wb().WRLocalInv(rkey) }
func (q *mQP) WRSetInlineDataList(bufs [][]byte) { q.wb().WRSetInlineDataList(bufs) }
func (q *mQP) WRSetXRCSRQN(remoteSRQN uint32) {
	if q.h.xrc != nil && q.h.xrc.setSRQN != nil {
		q.h.xrc.setSRQN(q.wb(), remoteSRQN)
		return
	}
	q.wb().WRSetXRCSRQN(remoteSRQN)
}

// WRBindMW forwards with the inner MR.
func (q *mQP) WRBindMW(mw verbs.MW, rkey uint32, info verbs.MWBindInfo) {
	if mr, ok := info.MR.(*mMR); ok {
		info.MR = mr.MR
	}
	q.wb().WRBindMW(mw, rkey, info)
}

// WRSetUDAddr forwards with the inner AH.
func (q *mQP) WRSetUDAddr(ah verbs.AH, remoteQPN, remoteQKey uint32) {
	if a, ok := ah.(*mAH); ok {
		ah = a.inner
	}
	q.wb().WRSetUDAddr(ah, remoteQPN, remoteQKey)
}

var (
	_ verbs.QPExCreator = (*mPD)(nil)
	_ verbs.WRBuilder   = (*mQP)(nil)
)

func qpxMutants() []mutant {
	return []mutant{
		{name: "ibv_create_qp_ex drops the send_ops_flags it does not support", rules: []string{"QPX-01"}, h: hooks{
			createQPEx: func(pd verbs.PD, attr verbs.QPInitAttrEx) (verbs.QP, error) {
				attr.CompMask &^= verbs.QPInitAttrXRCD
				attr.SendOpsFlags &= verbs.SupportedSendOps(attr.Type, sim.RXEProfile().Readings)
				return pd.(verbs.QPExCreator).CreateQPEx(attr)
			}}},
		{name: "ibv_create_qp_ex gives the builder every operation of the type", rules: []string{"QPX-02"}, h: hooks{
			createQPEx: func(pd verbs.PD, attr verbs.QPInitAttrEx) (verbs.QP, error) {
				if attr.SendOpsFlags != 0 {
					attr.SendOpsFlags = verbs.SupportedSendOps(attr.Type, sim.RXEProfile().Readings)
				}
				return pd.(verbs.QPExCreator).CreateQPEx(attr)
			}}},
		{name: "qpx->wr_id is ignored", rules: []string{"QPX-03"}, h: hooks{
			setWRID: func(b verbs.WRBuilder, id uint64) {}}},
		{name: "ibv_wr_complete hides the failure of a batch", rules: []string{"QPX-04", "QPX-02"}, h: hooks{
			wrComplete: func(b verbs.WRBuilder) error { _ = b.WRComplete(); return nil }}},
		{name: "ibv_wr_abort posts the batch", rules: []string{"QPX-04"}, h: hooks{
			wrAbort: func(b verbs.WRBuilder) { _ = b.WRComplete() }}},
		{name: "the device states the other send_ops reading", rules: []string{"QPX-01", "QPX-04"}, h: hooks{
			profile: func(p verbs.Readings) verbs.Readings {
				p.SendOpsRXE = !p.SendOpsRXE
				return p
			}}},
		{name: "ibv_wr_start inside a batch starts it afresh", rules: []string{"QPX-05"}, h: hooks{
			wrStart: func(b verbs.WRBuilder) { b.WRAbort(); b.WRStart() }}},
	}
}
