//go:build linux

package nicd

import "github.com/verbsim/verbsim/internal/cabi"

// The protocol of capi/nicd/nicd.h, whose comments say what each request
// carries; TestProtoOps and TestProtoLayouts hold this file to it.

// version is NICD_VERSION.
const version = 1

// maxMsg is NICD_MAX_MSG.
const maxMsg = 256 << 10

// op is enum nicd_op.
type op uint32

// The requests.
const (
	opHello op = iota + 1
	opJoin
	opDevices
	opOpen
	opClose
	opQueryDevice
	opQueryDeviceEx
	opQueryPort
	opQueryGID
	opQueryPKey
	opGetAsync
	opAckAsync
	opAckPortEvent
	opAllocPD
	opDeallocPD
	opRegMR
	opAdviseMR
	opDeregMR
	opReregMR
	opAllocMW
	opDeallocMW
	opBindMW
	opCreateAH
	opDestroyAH
	opCreateChannel
	opDestroyChannel
	opChanGet
	opCreateCQ
	opDestroyCQ
	opPollCQ
	opReqNotify
	opAckCQ
	opResizeCQ
	opCQPollEx
	opCreateQP
	opDestroyQP
	opModifyQP
	opQueryQP
	opPostSend
	opPostRecv
	opWRBatch
	opCreateSRQ
	opModifySRQ
	opQuerySRQ
	opDestroySRQ
	opPostSRQRecv
	opOpenXRCD
	opCloseXRCD
	opCreateSRQEx
	opGetSRQNum
	opCreateXRCRecvQP
	opAllocDM
	opFreeDM
	opMemcpyDM
	opRegDMMR
	opDieAfter
	opCQRing
	opMcast
	opCount // one past the last
)

// opNames are the C names of the requests, for TestProtoOps and messages.
var opNames = [...]string{
	opHello: "NICD_HELLO", opJoin: "NICD_JOIN", opDevices: "NICD_DEVICES", opOpen: "NICD_OPEN",
	opClose: "NICD_CLOSE", opQueryDevice: "NICD_QUERY_DEVICE", opQueryDeviceEx: "NICD_QUERY_DEVICE_EX",
	opQueryPort: "NICD_QUERY_PORT", opQueryGID: "NICD_QUERY_GID", opQueryPKey: "NICD_QUERY_PKEY",
	opGetAsync: "NICD_GET_ASYNC", opAckAsync: "NICD_ACK_ASYNC", opAckPortEvent: "NICD_ACK_PORT_EVENT",
	opAllocPD: "NICD_ALLOC_PD", opDeallocPD: "NICD_DEALLOC_PD", opRegMR: "NICD_REG_MR",
	opAdviseMR: "NICD_ADVISE_MR", opDeregMR: "NICD_DEREG_MR", opReregMR: "NICD_REREG_MR",
	opAllocMW: "NICD_ALLOC_MW", opDeallocMW: "NICD_DEALLOC_MW", opBindMW: "NICD_BIND_MW",
	opCreateAH: "NICD_CREATE_AH", opDestroyAH: "NICD_DESTROY_AH", opCreateChannel: "NICD_CREATE_CHANNEL",
	opDestroyChannel: "NICD_DESTROY_CHANNEL", opChanGet: "NICD_CHAN_GET", opCreateCQ: "NICD_CREATE_CQ",
	opDestroyCQ: "NICD_DESTROY_CQ", opPollCQ: "NICD_POLL_CQ", opReqNotify: "NICD_REQ_NOTIFY",
	opAckCQ: "NICD_ACK_CQ", opResizeCQ: "NICD_RESIZE_CQ", opCQPollEx: "NICD_CQ_POLL_EX",
	opCreateQP: "NICD_CREATE_QP", opDestroyQP: "NICD_DESTROY_QP", opModifyQP: "NICD_MODIFY_QP",
	opQueryQP: "NICD_QUERY_QP", opPostSend: "NICD_POST_SEND", opPostRecv: "NICD_POST_RECV",
	opWRBatch: "NICD_WR_BATCH", opCreateSRQ: "NICD_CREATE_SRQ", opModifySRQ: "NICD_MODIFY_SRQ",
	opQuerySRQ: "NICD_QUERY_SRQ", opDestroySRQ: "NICD_DESTROY_SRQ", opPostSRQRecv: "NICD_POST_SRQ_RECV",
	opOpenXRCD: "NICD_OPEN_XRCD", opCloseXRCD: "NICD_CLOSE_XRCD", opCreateSRQEx: "NICD_CREATE_SRQ_EX",
	opGetSRQNum: "NICD_GET_SRQ_NUM", opCreateXRCRecvQP: "NICD_CREATE_XRC_RECV_QP",
	opAllocDM: "NICD_ALLOC_DM", opFreeDM: "NICD_FREE_DM", opMemcpyDM: "NICD_MEMCPY_DM",
	opRegDMMR: "NICD_REG_DM_MR", opDieAfter: "NICD_DIE_AFTER",
	opCQRing: "NICD_CQ_RING", opMcast: "NICD_MCAST",
}

// String is the request's C name.
func (o op) String() string {
	if o > 0 && int(o) < len(opNames) {
		return opNames[o]
	}
	return "NICD_?"
}

// req is struct nicd_req.
type req struct {
	Op  uint32 `c:"op"`
	Len uint32 `c:"len"`
	Obj uint64 `c:"obj"`
	A   uint64 `c:"a"`
	B   uint64 `c:"b"`
}

// rep is struct nicd_rep.
type rep struct {
	Err int32  `c:"err"`
	Len uint32 `c:"len"`
	V   uint64 `c:"v"`
	W   uint64 `c:"w"`
}

// hello is struct nicd_hello.
type hello struct {
	Version uint32   `c:"version"`
	PID     uint32   `c:"pid"`
	Probe   uint64   `c:"probe"`
	Magic   [16]byte `c:"magic"`
	Fabric  [72]byte `c:"fabric"`
}

// status is struct nicd_status.
type status struct {
	Busy   uint32 `c:"busy"`
	_      uint32
	Served uint64 `c:"served"`
}

// devInfo is struct nicd_devinfo.
type devInfo struct {
	Name [64]byte `c:"name"`
	GUID uint64   `c:"guid"`
}

// mrReq is struct nicd_mr.
type mrReq struct {
	Addr   uint64 `c:"addr"`
	Length uint64 `c:"length"`
	IOVA   uint64 `c:"iova"`
	Access uint32 `c:"access"`
	_      uint32
}

// reregReq is struct nicd_rereg.
type reregReq struct {
	PD     uint64 `c:"pd"`
	Addr   uint64 `c:"addr"`
	Length uint64 `c:"length"`
	Flags  int32  `c:"flags"`
	Access int32  `c:"access"`
}

// bindReq is struct nicd_bind.
type bindReq struct {
	QP     uint64 `c:"qp"`
	MW     uint64 `c:"mw"`
	WRID   uint64 `c:"wr_id"`
	MR     uint64 `c:"mr"`
	Addr   uint64 `c:"addr"`
	Length uint64 `c:"length"`
	Flags  uint32 `c:"flags"`
	Access uint32 `c:"access"`
}

// cqReq is struct nicd_cq.
type cqReq struct {
	CQE      int32  `c:"cqe"`
	Vector   int32  `c:"vector"`
	Channel  uint64 `c:"channel"`
	WCFlags  uint64 `c:"wc_flags"`
	CompMask uint32 `c:"comp_mask"`
	Flags    uint32 `c:"flags"`
	CPtr     uint64 `c:"cptr"`
	Ex       uint32 `c:"ex"`
	_        uint32
}

// wcx is struct nicd_wcx.
type wcx struct {
	WC        cabi.WC `c:"wc"`
	TS        uint64  `c:"ts"`
	Wallclock uint64  `c:"wallclock"`
}

// qpInit is struct nicd_qp_init.
type qpInit struct {
	SendCQ       uint64     `c:"send_cq"`
	RecvCQ       uint64     `c:"recv_cq"`
	SRQ          uint64     `c:"srq"`
	Cap          cabi.QPCap `c:"cap"`
	QPType       uint32     `c:"qp_type"`
	SQSigAll     int32      `c:"sq_sig_all"`
	CompMask     uint32     `c:"comp_mask"`
	SendOpsFlags uint64     `c:"send_ops_flags"`
	CPtr         uint64     `c:"cptr"`
}

// qpQuery is struct nicd_qp_query.
type qpQuery struct {
	Attr     cabi.QPAttr `c:"attr"`
	Cap      cabi.QPCap  `c:"cap"`
	QPType   uint32      `c:"qp_type"`
	SQSigAll int32       `c:"sq_sig_all"`
}

// swr is struct nicd_swr.
type swr struct {
	WRID       uint64 `c:"wr_id"`
	NumSGE     uint32 `c:"num_sge"`
	Opcode     uint32 `c:"opcode"`
	Flags      uint32 `c:"flags"`
	Imm        uint32 `c:"imm"`
	RemoteAddr uint64 `c:"remote_addr"`
	RKey       uint32 `c:"rkey"`
	RemoteQPN  uint32 `c:"remote_qpn"`
	RemoteQKey uint32 `c:"remote_qkey"`
	XRCSRQN    uint32 `c:"xrc_srqn"`
	CompareAdd uint64 `c:"compare_add"`
	Swap       uint64 `c:"swap"`
	AH         uint64 `c:"ah"`
	MW         uint64 `c:"mw"`
	MR         uint64 `c:"mr"`
	MWAccess   uint32 `c:"mw_access"`
	InlineLen  uint32 `c:"inline_len"`
}

// rwr is struct nicd_rwr.
type rwr struct {
	WRID   uint64 `c:"wr_id"`
	NumSGE uint32 `c:"num_sge"`
	_      uint32
}

// wrOp is struct nicd_wr_op.
type wrOp struct {
	Op    int32  `c:"op"`
	Flags uint32 `c:"flags"`
	WRID  uint64 `c:"wr_id"`
	A32   uint32 `c:"a32"`
	B32   uint32 `c:"b32"`
	A64   uint64 `c:"a64"`
	B64   uint64 `c:"b64"`
	C64   uint64 `c:"c64"`
	Obj   uint64 `c:"obj"`
	Num   uint32 `c:"num"`
	Len   uint32 `c:"len"`
}

// srqReq is struct nicd_srq.
type srqReq struct {
	Attr     cabi.SRQAttr `c:"attr"`
	CompMask uint32       `c:"comp_mask"`
	Type     uint32       `c:"type"`
	PD       uint64       `c:"pd"`
	XRCD     uint64       `c:"xrcd"`
	CQ       uint64       `c:"cq"`
	CPtr     uint64       `c:"cptr"`
}

// xrcdReq is struct nicd_xrcd.
type xrcdReq struct {
	CompMask uint32 `c:"comp_mask"`
	ByFile   int32  `c:"by_file"`
	Dev      uint64 `c:"dev"`
	Ino      uint64 `c:"ino"`
	OFlags   int32  `c:"oflags"`
	_        uint32
}

// dmMRReq is struct nicd_dm_mr.
type dmMRReq struct {
	DM     uint64 `c:"dm"`
	Offset uint64 `c:"offset"`
	Length uint64 `c:"length"`
	Access uint32 `c:"access"`
	_      uint32
}

// cqe is struct nicd_cqe.
type cqe struct {
	WC        cabi.WC `c:"wc"`
	TS        uint64  `c:"ts"`
	Wallclock uint64  `c:"wallclock"`
	Dead      uint32  `c:"dead"`
	_         uint32
}

// cqRingHeader is struct nicd_cq_ring without its entries.
type cqRingHeader struct {
	Head    uint64 `c:"head"`
	Size    uint32 `c:"size"`
	Error   uint32 `c:"error"`
	WSeq    uint32 `c:"wseq"`
	_       [44]byte
	Tail    uint64 `c:"tail"`
	Seen    uint64 `c:"seen"`
	Batch   uint32 `c:"batch"`
	Waiters uint32 `c:"waiters"`
	_       [40]byte
}

// protoMirrors are nicd.h's records, for TestProtoLayouts.
var protoMirrors = []cabi.Mirror{
	{CType: "struct nicd_req", Go: req{}},
	{CType: "struct nicd_rep", Go: rep{}},
	{CType: "struct nicd_hello", Go: hello{}},
	{CType: "struct nicd_devinfo", Go: devInfo{}},
	{CType: "struct nicd_status", Go: status{}},
	{CType: "struct nicd_mr", Go: mrReq{}},
	{CType: "struct nicd_rereg", Go: reregReq{}},
	{CType: "struct nicd_bind", Go: bindReq{}},
	{CType: "struct nicd_cq", Go: cqReq{}},
	{CType: "struct nicd_wcx", Go: wcx{}},
	{CType: "struct nicd_qp_init", Go: qpInit{}},
	{CType: "struct nicd_qp_query", Go: qpQuery{}},
	{CType: "struct nicd_swr", Go: swr{}},
	{CType: "struct nicd_rwr", Go: rwr{}},
	{CType: "struct nicd_wr_op", Go: wrOp{}},
	{CType: "struct nicd_srq", Go: srqReq{}},
	{CType: "struct nicd_xrcd", Go: xrcdReq{}},
	{CType: "struct nicd_dm_mr", Go: dmMRReq{}},
	{CType: "struct nicd_cqe", Go: cqe{}},
	{CType: "struct nicd_cq_ring", Go: cqRingHeader{}},
}
