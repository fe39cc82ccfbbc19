package verbs

import "context"

// The interfaces below are the verbs an application programs against. Every
// implementation offers them: verbsim's simulator ((*sim.Device).Verbs), and
// a binding to a real libibverbs. They hold nothing simulator-specific, so a
// program written against them runs unchanged on either.
//
// Conventions, the same for every implementation:
//   - Errors carry the errno the C verb would set: errors.Is(err,
//     syscall.EINVAL). A failed verb changes nothing.
//   - A method whose C verb may block (ibv_get_cq_event, ibv_get_async_event,
//     a destroy that waits for events to be acknowledged) takes a
//     context.Context, which bounds the wait. The destroys of CQs, QPs and
//     SRQs come in both forms, as in package sim: Destroy waits as the C
//     verb does, DestroyContext at most until its context ends.
//   - An object of one implementation passed to another (a foreign CQ in
//     QPInitAttr, a foreign AH in a SendWR) is refused with EINVAL.
//   - Objects compare equal with ==: the CQ GetEvent returns is the CQ
//     CreateCQ returned, and so on for every accessor.
//   - Optional features are separate small interfaces (ExCQCreator,
//     MRReregisterer, XRCOpener, QPExCreator, ExQuerier, DMAllocator,
//     DMMRRegisterer) found by type
//     assertion; a device without the feature may also implement them and
//     fail with EOPNOTSUPP, as libibverbs does.

// Device is an RDMA device as ibv_get_device_list returns it (struct
// ibv_device).
type Device interface {
	// Name is ibv_get_device_name.
	Name() string
	// GUID is ibv_get_device_guid: the node GUID.
	GUID() uint64
	// Open is ibv_open_device.
	Open() (Context, error)
}

// Context is an open device (struct ibv_context).
type Context interface {
	// Device is ibv_context.device.
	Device() Device
	// NumCompVectors is ibv_context.num_comp_vectors: the completion
	// vectors a CQ may name (0 to NumCompVectors-1).
	NumCompVectors() int
	// Close is ibv_close_device.
	Close() error

	// QueryDevice is ibv_query_device.
	QueryDevice() (DeviceAttr, error)
	// QueryPort is ibv_query_port; ports are numbered from 1.
	QueryPort(port uint8) (PortAttr, error)
	// QueryGID is ibv_query_gid.
	QueryGID(port uint8, index int) (GID, error)
	// QueryPKey is ibv_query_pkey.
	QueryPKey(port uint8, index int) (uint16, error)

	// AllocPD is ibv_alloc_pd.
	AllocPD() (PD, error)
	// CreateCompChannel is ibv_create_comp_channel.
	CreateCompChannel() (CompChannel, error)
	// CreateCQ is ibv_create_cq: a CQ of at least cqe entries whose
	// cq_context is cqContext, whose events go to ch (nil: none), on
	// completion vector compVector.
	CreateCQ(cqe int, cqContext any, ch CompChannel, compVector int) (CQ, error)

	// GetAsyncEvent is ibv_get_async_event on a blocking async_fd: it waits
	// for the next asynchronous event, or until ctx ends (ctx.Err()).
	GetAsyncEvent(ctx context.Context) (AsyncEvent, error)
	// TryGetAsyncEvent is ibv_get_async_event on a non-blocking async_fd:
	// EAGAIN when no event is queued.
	TryGetAsyncEvent() (AsyncEvent, error)
}

// PD is a protection domain (struct ibv_pd).
type PD interface {
	// Context is ibv_pd.context.
	Context() Context
	// Handle is ibv_pd.handle.
	Handle() uint32
	// Dealloc is ibv_dealloc_pd: EBUSY while objects of the PD exist.
	Dealloc() error

	// RegMR is ibv_reg_mr over buf. The MR aliases buf: the adapter reads
	// and writes that memory, which must stay valid until Dereg.
	RegMR(buf []byte, access AccessFlags) (MR, error)
	// AllocMW is ibv_alloc_mw (EOPNOTSUPP on a device without memory
	// windows).
	AllocMW(typ MWType) (MW, error)
	// CreateAH is ibv_create_ah.
	CreateAH(attr AHAttr) (AH, error)
	// CreateQP is ibv_create_qp. The capacities the QP really has are in
	// the QPInitAttr of its Query.
	CreateQP(attr QPInitAttr) (QP, error)
	// CreateSRQ is ibv_create_srq.
	CreateSRQ(attr SRQInitAttr) (SRQ, error)
}

// MR is a registered memory region (struct ibv_mr). It is what
// MWBindInfo.MR names.
type MR interface {
	// LKey is ibv_mr.lkey.
	LKey() uint32
	// RKey is ibv_mr.rkey.
	RKey() uint32
	// Addr is ibv_mr.addr: the address of the first byte.
	Addr() uint64
	// Length is ibv_mr.length.
	Length() uint64
	// Dereg is ibv_dereg_mr.
	Dereg() error
}

// MRReregisterer is an optional capability of an MR: ibv_rereg_mr (MR-12 to
// MR-17).
type MRReregisterer interface {
	// Rereg is ibv_rereg_mr. flags says which of pd (IBV_REREG_MR_CHANGE_PD;
	// nil stands for NULL), buf (CHANGE_TRANSLATION) and access
	// (CHANGE_ACCESS) apply. On failure the error is a *ReregError, whose
	// Failure is what ibv_rereg_mr returns (ReregFailureOf). Afterwards
	// LKey, RKey, Addr and Length report the MR's new fields.
	Rereg(flags ReregFlags, pd PD, buf []byte, access AccessFlags) error
}

// MW is a memory window (struct ibv_mw). It is what SendWR.MW of a BIND_MW
// request names.
type MW interface {
	// RKey is ibv_mw.rkey.
	RKey() uint32
	// Type is ibv_mw.type.
	Type() MWType
	// Dealloc is ibv_dealloc_mw.
	Dealloc() error
}

// AH is an address handle (struct ibv_ah): the destination of a UD send
// (SendWR.AH).
type AH interface {
	// Destroy is ibv_destroy_ah.
	Destroy() error
}

// CQ is a completion queue (struct ibv_cq).
type CQ interface {
	// Context is ibv_cq.context: the device context that created it, not
	// the cq_context given to CreateCQ, which is CQContext.
	Context() Context
	// CQContext is ibv_cq.cq_context: the value given to CreateCQ.
	CQContext() any
	// Channel is ibv_cq.channel, or nil.
	Channel() CompChannel
	// CQE is ibv_cq.cqe: the capacity, at least what was asked for.
	CQE() int
	// Poll is ibv_poll_cq with num_entries = len(wcs): it fills wcs with
	// up to len(wcs) completions, oldest first, and never blocks.
	Poll(wcs []WC) (int, error)
	// ReqNotify is ibv_req_notify_cq: arm the CQ for one event on its
	// channel at the next completion (solicitedOnly: the next solicited
	// or unsuccessful one).
	ReqNotify(solicitedOnly bool) error
	// AckEvents is ibv_ack_cq_events.
	AckEvents(n int) error
	// Resize is ibv_resize_cq.
	Resize(cqe int) error
	// Destroy is ibv_destroy_cq: DestroyContext with a context that never
	// ends, so that, like the C verb, it waits as long as events read and
	// not acknowledged hold it up (CQ-13).
	Destroy() error
	// DestroyContext is ibv_destroy_cq; an implementation whose destroy
	// waits for unacknowledged events waits at most until ctx ends.
	DestroyContext(ctx context.Context) error
}

// CompChannel is a completion event channel (struct ibv_comp_channel).
type CompChannel interface {
	// Context is ibv_comp_channel.context.
	Context() Context
	// GetEvent is ibv_get_cq_event on a blocking channel: it waits for the
	// next CQ event, or until ctx ends, and returns the CQ with its
	// cq_context. Every event must be acknowledged (CQ.AckEvents).
	GetEvent(ctx context.Context) (cq CQ, cqContext any, err error)
	// TryGetEvent is ibv_get_cq_event on a non-blocking channel: EAGAIN
	// when no event is queued.
	TryGetEvent() (cq CQ, cqContext any, err error)
	// Destroy is ibv_destroy_comp_channel: EBUSY while CQs use it.
	Destroy() error
}

// QP is a queue pair (struct ibv_qp). PD.CreateQP makes one in RESET;
// Modify moves it through INIT, RTR and RTS (QPAttr with the QPAttrMask
// bits the transition needs) before PostSend may send; receives may be
// posted from INIT on. Completions go to SendCQ and RecvCQ as WC values.
// A QP that PD's optional QPExCreator made with QPInitAttrSendOpsFlags
// also implements WRBuilder (ibv_qp_to_qp_ex): find it by type assertion.
// The simulator's *sim.QP behind a QP is sim.QPOf(q), for tests that aim
// faults at it.
type QP interface {
	// Num is ibv_qp.qp_num.
	Num() uint32
	// Type is ibv_qp.qp_type.
	Type() QPType
	// State is ibv_qp.state as the last Modify or Query left it; Query
	// reads the current one.
	State() QPState
	// Context is ibv_qp.context, the device context; the qp_context is
	// QPContext.
	Context() Context
	// QPContext is ibv_qp.qp_context: the value of QPInitAttr.Context.
	QPContext() any
	// PD is ibv_qp.pd.
	PD() PD
	// SendCQ is ibv_qp.send_cq.
	SendCQ() CQ
	// RecvCQ is ibv_qp.recv_cq.
	RecvCQ() CQ
	// SRQ is ibv_qp.srq, or nil.
	SRQ() SRQ

	// Modify is ibv_modify_qp.
	Modify(attr *QPAttr, mask QPAttrMask) error
	// Query is ibv_query_qp: the attributes mask asks for (an
	// implementation may fill more), and the init attributes with the
	// QP's real capacities.
	Query(mask QPAttrMask) (QPAttr, QPInitAttr, error)
	// PostSend is ibv_post_send. It returns how many requests were
	// posted, so that wrs[n] is *bad_wr when the error is not nil.
	PostSend(wrs []SendWR) (int, error)
	// PostRecv is ibv_post_recv, counting as PostSend does.
	PostRecv(wrs []RecvWR) (int, error)
	// BindMW is ibv_bind_mw: bind a type 1 window by posting a BIND_MW
	// request with wr_id wrID and send flags flags.
	BindMW(mw MW, wrID uint64, flags SendFlags, info MWBindInfo) error
	// Destroy is ibv_destroy_qp: DestroyContext with a context that never
	// ends (see CQ.Destroy).
	Destroy() error
	// DestroyContext is ibv_destroy_qp; an implementation whose destroy
	// waits for unacknowledged events waits at most until ctx ends.
	DestroyContext(ctx context.Context) error
}

// SRQ is a shared receive queue (struct ibv_srq).
type SRQ interface {
	// Context is ibv_srq.context, the device context; the srq_context is
	// SRQContext.
	Context() Context
	// SRQContext is ibv_srq.srq_context.
	SRQContext() any
	// PostRecv is ibv_post_srq_recv, counting as QP.PostSend does.
	PostRecv(wrs []RecvWR) (int, error)
	// Modify is ibv_modify_srq.
	Modify(attr *SRQAttr, mask SRQAttrMask) error
	// Query is ibv_query_srq.
	Query() (SRQAttr, error)
	// Destroy is ibv_destroy_srq: DestroyContext with a context that never
	// ends (see CQ.Destroy).
	Destroy() error
	// DestroyContext is ibv_destroy_srq; an implementation whose destroy
	// waits for unacknowledged events waits at most until ctx ends.
	DestroyContext(ctx context.Context) error
}

// AsyncEvent is an asynchronous event (struct ibv_async_event) from
// Context.GetAsyncEvent. Exactly one of CQ, QP, SRQ and Port is meaningful,
// as EventType().Element() says (ASYNC-03). Every event must be
// acknowledged with Ack.
type AsyncEvent interface {
	// EventType is event_type.
	EventType() EventType
	// CQ is element.cq, for CQ events; nil otherwise.
	CQ() CQ
	// QP is element.qp, for QP events; nil otherwise.
	QP() QP
	// SRQ is element.srq, for SRQ events; nil otherwise.
	SRQ() SRQ
	// Port is element.port_num, for port events and DEVICE_FATAL.
	Port() uint8
	// Ack is ibv_ack_async_event.
	Ack() error
}

// QPInitAttr holds the arguments of ibv_create_qp (struct
// ibv_qp_init_attr).
type QPInitAttr struct {
	Context  any    // qp_context
	SendCQ   CQ     // send_cq (required, QP-03)
	RecvCQ   CQ     // recv_cq (required; may be SendCQ)
	SRQ      SRQ    // srq; nil for none (RC and UD only, QP-04)
	Cap      QPCap  // cap: the requested capacities; Query reports the real ones
	Type     QPType // qp_type
	SQSigAll bool   // sq_sig_all: every send request is signaled
}

// SRQInitAttr holds the arguments of ibv_create_srq (struct
// ibv_srq_init_attr).
type SRQInitAttr struct {
	Context any     // srq_context
	Attr    SRQAttr // attr: max_wr, max_sge, srq_limit (SRQ-01)
}

// ExQuerier is an optional capability of a Context: the extended queries
// ibv_query_device_ex, ibv_query_gid_ex and ibv_query_gid_table.
type ExQuerier interface {
	// QueryDeviceEx is ibv_query_device_ex with an input whose comp_mask
	// is compMask (0 for a NULL input).
	QueryDeviceEx(compMask uint32) (DeviceAttrEx, error)
	// QueryGIDEx is ibv_query_gid_ex.
	QueryGIDEx(port, index, flags uint32) (GIDEntry, error)
	// QueryGIDTable is ibv_query_gid_table with room for maxEntries.
	QueryGIDTable(maxEntries int, flags uint32) ([]GIDEntry, error)
}

// CQInitAttrEx holds the arguments of ibv_create_cq_ex (struct
// ibv_cq_init_attr_ex without parent_domain).
type CQInitAttrEx struct {
	CQE        int            // cqe
	Context    any            // cq_context
	Channel    CompChannel    // channel; nil for none
	CompVector int            // comp_vector
	WCFlags    WCExFlags      // wc_flags: the fields the poll iterator reads (CQX-02)
	CompMask   CQInitAttrMask // comp_mask (CQX-01)
	Flags      CQCreateFlags  // flags, read with CQInitAttrMaskFlags
}

// ExCQCreator is an optional capability of a Context: ibv_create_cq_ex.
type ExCQCreator interface {
	CreateCQEx(attr CQInitAttrEx) (ExCQ, error)
}

// ExCQ is an extended CQ (struct ibv_cq_ex): a CQ with the poll iterator
// ibv_start_poll, ibv_next_poll, ibv_end_poll and the ibv_wc_read_*
// accessors. It may be polled with either API (CQX-10).
type ExCQ interface {
	CQ
	PollIterator
}

// PollIterator is the poll iterator of an extended CQ: ibv_start_poll,
// ibv_next_poll, ibv_end_poll, and the ibv_wc_read_* accessors of the
// completion it points at (ReadWC reads them all).
type PollIterator interface {
	// StartPoll is ibv_start_poll: ENOENT on an empty CQ (CQX-04).
	StartPoll() error
	// NextPoll is ibv_next_poll: ENOENT past the last completion (CQX-05).
	NextPoll() error
	// EndPoll is ibv_end_poll.
	EndPoll() error
	// Current returns the wr_id and status fields of struct ibv_cq_ex.
	Current() (wrID uint64, status WCStatus, err error)
	// The ibv_wc_read_* accessors; an error for a field not asked for in
	// wc_flags (CQX-03) or when there is no current completion (CQX-07).
	ReadOpcode() (WCOpcode, error)
	ReadVendorErr() (uint32, error)
	ReadWCFlags() (WCFlags, error)
	ReadByteLen() (uint32, error)
	ReadImmData() (uint32, error)
	ReadInvalidatedRkey() (uint32, error)
	ReadQPNum() (uint32, error)
	ReadSrcQP() (uint32, error)
	ReadSLID() (uint32, error)
	ReadSL() (uint8, error)
	ReadDLIDPathBits() (uint8, error)
	ReadCompletionTS() (uint64, error)
	ReadCompletionWallclockNS() (uint64, error)
}

// QPInitAttrEx holds the arguments of ibv_create_qp_ex (struct
// ibv_qp_init_attr_ex) that go beyond ibv_create_qp's; the PD is the one
// CreateQPEx is called on, the XRC domain the one XRCD.CreateQP is called
// on.
type QPInitAttrEx struct {
	QPInitAttr
	CompMask     QPInitAttrMask // comp_mask; QPInitAttrPD is implied
	SendOpsFlags QPSendOps      // send_ops_flags, read with QPInitAttrSendOpsFlags
}

// QPInitAttrMask is comp_mask of struct ibv_qp_init_attr_ex (enum
// ibv_qp_init_attr_mask).
type QPInitAttrMask uint32

// The comp_mask bits of ibv_create_qp_ex that verbsim knows, with verbs.h
// values.
const (
	QPInitAttrPD           QPInitAttrMask = 1 << 0 // IBV_QP_INIT_ATTR_PD
	QPInitAttrXRCD         QPInitAttrMask = 1 << 1 // IBV_QP_INIT_ATTR_XRCD
	QPInitAttrSendOpsFlags QPInitAttrMask = 1 << 6 // IBV_QP_INIT_ATTR_SEND_OPS_FLAGS
)

// QPExCreator is an optional capability of a PD: ibv_create_qp_ex. A QP
// created with QPInitAttrSendOpsFlags implements WRBuilder.
type QPExCreator interface {
	CreateQPEx(attr QPInitAttrEx) (QP, error)
}

// WRBuilder is the work request builder of an extended QP (struct
// ibv_qp_ex, from ibv_qp_to_qp_ex): SetWRID and SetWRFlags set wr_id and
// wr_flags; the other methods are the ibv_wr_* functions of the same name.
// Errors of a batch are reported by WRComplete.
type WRBuilder interface {
	SetWRID(id uint64)
	SetWRFlags(f SendFlags)
	WRStart()
	WRComplete() error
	WRAbort()
	WRSend()
	WRSendImm(imm uint32)
	WRSendInv(rkey uint32)
	WRRDMAWrite(rkey uint32, addr uint64)
	WRRDMAWriteImm(rkey uint32, addr uint64, imm uint32)
	WRRDMARead(rkey uint32, addr uint64)
	WRAtomicCmpSwp(rkey uint32, addr, compare, swap uint64)
	WRAtomicFetchAdd(rkey uint32, addr, add uint64)
	// WRAtomicWrite is ibv_wr_atomic_write: value, the 8 bytes its
	// atomic_wr points to, is copied into the request (XFER-33).
	WRAtomicWrite(rkey uint32, addr uint64, value [8]byte)
	WRLocalInv(rkey uint32)
	WRBindMW(mw MW, rkey uint32, info MWBindInfo)
	WRSetUDAddr(ah AH, remoteQPN, remoteQKey uint32)
	WRSetSGE(lkey uint32, addr uint64, length uint32)
	WRSetSGEList(list []SGE)
	WRSetInlineData(data []byte)
	WRSetInlineDataList(bufs [][]byte)
	// WRSetXRCSRQN is ibv_wr_set_xrc_srqn: on an XRC_SEND QP, the number of
	// the remote XRC SRQ the request just built is for (XRC-09).
	WRSetXRCSRQN(remoteSRQN uint32)
}

// XRCD is an XRC domain (struct ibv_xrcd).
type XRCD interface {
	// Close is ibv_close_xrcd: EBUSY while an XRC SRQ or an XRC target QP
	// of the domain exists.
	Close() error
	// CreateQP is ibv_create_qp_ex on the domain's device context with
	// IBV_QP_INIT_ATTR_XRCD in comp_mask and xrcd set to this domain: it
	// makes an XRC target QP (QPTypeXRCRecv), which has no PD, no CQ and
	// no queue of its own and delivers into the domain's XRC SRQs
	// (XRC-06). attr.CompMask must hold QPInitAttrXRCD; the CQs, SRQ and
	// capacities are not read. The QP holds the domain until destroyed.
	CreateQP(attr QPInitAttrEx) (QP, error)
}

// SRQInitAttrEx holds the arguments of ibv_create_srq_ex (struct
// ibv_srq_init_attr_ex without tm_cap).
type SRQInitAttrEx struct {
	Context  any         // srq_context
	Attr     SRQAttr     // attr: max_wr, max_sge, srq_limit
	CompMask SRQInitMask // which of the fields below are valid
	Type     SRQType     // srq_type, read with SRQInitType
	PD       PD          // pd, read with SRQInitPD (required)
	XRCD     XRCD        // xrcd, read with SRQInitXRCD
	CQ       CQ          // cq, read with SRQInitCQ
}

// XRCOpener is an optional capability of a Context: ibv_open_xrcd and
// ibv_create_srq_ex. An SRQ it creates implements SRQNumGetter. The XRC
// initiator QP (QPTypeXRCSend) is made by PD.CreateQP, the target by
// XRCD.CreateQP.
type XRCOpener interface {
	OpenXRCD(attr XRCDInitAttr) (XRCD, error)
	CreateSRQEx(attr SRQInitAttrEx) (SRQ, error)
}

// SRQNumGetter is an optional capability of an SRQ: ibv_get_srq_num.
type SRQNumGetter interface {
	GetSRQNum() (uint32, error)
}
