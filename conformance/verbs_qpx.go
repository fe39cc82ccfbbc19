package conformance

import "github.com/verbsim/verbsim/verbs"

// The extended post API (QPX-01..QPX-05) is optional: a device that has it
// implements QPExCreator on its PDs and WRBuilder on its QPs. Without them
// the QPX cases log that they checked nothing.

// The comp_mask bits of struct ibv_qp_init_attr_ex the suite uses.
const (
	QPInitAttrPD           = 1 << 0 // IBV_QP_INIT_ATTR_PD
	QPInitAttrXRCD         = 1 << 1 // IBV_QP_INIT_ATTR_XRCD
	QPInitAttrSendOpsFlags = 1 << 6 // IBV_QP_INIT_ATTR_SEND_OPS_FLAGS
)

// QPExCreator is an optional capability of a PD: ibv_create_qp_ex with
// comp_mask and send_ops_flags (the PD bit is implied). A QP it creates
// with QPInitAttrSendOpsFlags implements WRBuilder.
type QPExCreator interface {
	CreateQPEx(attr QPInitAttr, compMask uint32, sendOps verbs.QPSendOps) (QP, error)
}

// WRBuilder is an optional capability of a QP: the ibv_wr_* work request
// builder of struct ibv_qp_ex. SetWRID and SetWRFlags set qpx->wr_id and
// qpx->wr_flags; the other methods are the ibv_wr_* functions of the same
// name.
type WRBuilder interface {
	SetWRID(id uint64)
	SetWRFlags(f verbs.SendFlags)
	WRStart()
	WRComplete() error
	WRAbort()
	WRSend()
	WRSendImm(imm uint32)
	WRRDMAWrite(rkey uint32, addr uint64)
	WRRDMARead(rkey uint32, addr uint64)
	WRSetSGE(lkey uint32, addr uint64, length uint32)
	WRSetSGEList(list []verbs.SGE)
	WRSetInlineData(data []byte)
}
