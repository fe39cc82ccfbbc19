package conformance

import (
	"context"

	"github.com/verbsim/verbsim/verbs"
)

// Device is the verbs surface of one adapter that the suite drives. Run
// calls the factory once per case, so each case starts on a fresh device.
type Device interface {
	// Open opens a device context (ibv_open_device).
	Open() (Context, error)
	// Profile states which reading of each implementation-defined rule the
	// device follows, as rdma-unit-test reads per-NIC introspection flags.
	Profile() Profile
}

// Context is an open device context (struct ibv_context).
type Context interface {
	// Limits returns the device limits the CQ rules refer to.
	Limits() Limits
	// CreateCompChannel is ibv_create_comp_channel.
	CreateCompChannel() (CompChannel, error)
	// CreateCQ is ibv_create_cq. ch may be nil.
	CreateCQ(cqe int, cqContext any, ch CompChannel, compVector int) (CQ, error)
	// GetAsyncEvent is ibv_get_async_event on a blocking async_fd, bounded
	// by ctx.
	GetAsyncEvent(ctx context.Context) (AsyncEvent, error)
	// TryGetAsyncEvent is ibv_get_async_event on a non-blocking async_fd:
	// EAGAIN when nothing is queued.
	TryGetAsyncEvent() (AsyncEvent, error)
	// Close is ibv_close_device.
	Close() error
	// AllocPD is ibv_alloc_pd.
	AllocPD() (PD, error)
}

// Limits are the device attributes the suite needs.
type Limits struct {
	MaxCQ          int // ibv_device_attr.max_cq
	MaxCQE         int // ibv_device_attr.max_cqe
	NumCompVectors int // ibv_context.num_comp_vectors
	MaxPD          int // ibv_device_attr.max_pd

	MaxQPWR         int // ibv_device_attr.max_qp_wr: work requests per queue
	MaxSGE          int // ibv_device_attr.max_sge: SGEs per work request
	MaxInline       int // the largest max_inline_data a QP may ask for
	MaxQPRDAtom     int // ibv_device_attr.max_qp_rd_atom: bound of max_dest_rd_atomic
	MaxQPInitRDAtom int // ibv_device_attr.max_qp_init_rd_atom: bound of max_rd_atomic
	MaxSRQWR        int // ibv_device_attr.max_srq_wr
	MaxSRQSGE       int // ibv_device_attr.max_srq_sge
	NumPorts        int // ibv_device_attr.phys_port_cnt
	// SRQResize says device_cap_flags has IBV_DEVICE_SRQ_RESIZE: ibv_modify_srq
	// may change max_wr (SRQ-07). LimitedDevice.WithLimits leaves it as it is.
	SRQResize bool
	// Port describes port 1, which the suite's QPs use. WithLimits changes
	// only Port.MaxMTU (when non-zero).
	Port PortLimits
}

// PortLimits are the attributes of a port (struct ibv_port_attr) that the
// values of a QP's attributes are checked against (QP-22).
type PortLimits struct {
	MaxMTU       verbs.MTU // max_mtu: the largest path_mtu
	PKeyTableLen int       // pkey_tbl_len: pkey_index must be below it
	GIDTableLen  int       // gid_tbl_len: grh.sgid_index must be below it
	// Ethernet says link_layer is IBV_LINK_LAYER_ETHERNET (RoCE): address
	// vectors must be global, and there are no alternate paths.
	Ethernet bool
}

// PD is a protection domain.
type PD interface {
	// RegMR is ibv_reg_mr over buf, which the MR aliases (the memory is not
	// copied). access is an ibv_access_flags value.
	RegMR(buf []byte, access uint32) (MR, error)
	// CreateAH is ibv_create_ah.
	CreateAH(attr AHAttr) (AH, error)
	// Dealloc is ibv_dealloc_pd.
	Dealloc() error
	// CreateQP is ibv_create_qp. The capacities the QP really has are in
	// the Cap of its Query.
	CreateQP(attr QPInitAttr) (QP, error)
	// CreateSRQ is ibv_create_srq.
	CreateSRQ(attr SRQInitAttr) (SRQ, error)
}

// QPInitAttr holds the fields of struct ibv_qp_init_attr the suite sets.
type QPInitAttr struct {
	Context  any          // qp_context
	SendCQ   CQ           // send_cq; may be nil to check that it is required
	RecvCQ   CQ           // recv_cq; may be the same CQ as SendCQ
	SRQ      SRQ          // srq; nil for none
	Cap      verbs.QPCap  // cap: the requested capacities
	Type     verbs.QPType // qp_type
	SQSigAll bool         // sq_sig_all
}

// SRQInitAttr holds the fields of struct ibv_srq_init_attr.
type SRQInitAttr struct {
	Context any           // srq_context
	Attr    verbs.SRQAttr // attr: max_wr, max_sge, srq_limit
}

// QP is a queue pair. Work requests use the vocabulary of package qp; the AH
// of a UD send request is an AH returned by PD.CreateAH.
type QP interface {
	// Num is ibv_qp.qp_num.
	Num() uint32
	// Modify is ibv_modify_qp.
	Modify(attr *verbs.QPAttr, mask verbs.QPAttrMask) error
	// Query is ibv_query_qp with every attribute: the current state in
	// QPState and the real capacities in Cap.
	Query() (verbs.QPAttr, error)
	// PostSend is ibv_post_send. It returns how many requests were posted,
	// so that wrs[n] is *bad_wr when the error is not nil.
	PostSend(wrs []verbs.SendWR) (int, error)
	// PostRecv is ibv_post_recv, counting as PostSend does.
	PostRecv(wrs []verbs.RecvWR) (int, error)
	// DestroyContext is ibv_destroy_qp, with any wait bounded by ctx.
	DestroyContext(ctx context.Context) error
}

// SRQ is a shared receive queue. Implementations may also offer Depth: the
// number of receive requests waiting in it.
type SRQ interface {
	// PostRecv is ibv_post_srq_recv, counting as QP.PostSend does.
	PostRecv(wrs []verbs.RecvWR) (int, error)
	// Modify is ibv_modify_srq.
	Modify(attr *verbs.SRQAttr, mask verbs.SRQAttrMask) error
	// Query is ibv_query_srq.
	Query() (verbs.SRQAttr, error)
	// DestroyContext is ibv_destroy_srq, with any wait bounded by ctx.
	DestroyContext(ctx context.Context) error
}

// MR is a registered memory region: verbs.MR (the fields of struct ibv_mr
// and ibv_dereg_mr). Implementations may also offer Referencer, holding the
// MR the way a bound memory window does (MR-06).
type MR = verbs.MR

// MRRereg is an optional capability of an MR: ibv_rereg_mr (MR-12 to
// MR-17). The cases of those rules log and end without it.
type MRRereg interface {
	// Rereg is ibv_rereg_mr. flags is an ibv_rereg_mr_flags value; pd is
	// the new PD (CHANGE_PD; nil stands for a NULL pointer), buf the new
	// buffer (CHANGE_TRANSLATION; nil or empty for NULL or length 0) and
	// access the new ibv_access_flags (CHANGE_ACCESS). It returns what
	// ibv_rereg_mr returns, 0 or an enum ibv_rereg_mr_err_code value (-1
	// IBV_REREG_MR_ERR_INPUT ... -5), and, with a non-zero code, an error
	// carrying errno. Afterwards LKey, RKey, Addr and Length report the
	// MR's new fields.
	Rereg(flags uint32, pd PD, buf []byte, access uint32) (code int, err error)
}

// AH is an address handle: verbs.AH.
type AH = verbs.AH

// AHAttr holds the fields of struct ibv_ah_attr the suite sets.
type AHAttr struct {
	PortNum   uint8    // port_num
	DLID      uint16   // dlid
	SL        uint8    // sl
	IsGlobal  bool     // is_global
	DGID      [16]byte // grh.dgid
	SGIDIndex uint8    // grh.sgid_index
	HopLimit  uint8    // grh.hop_limit
}

// CQ is a completion queue: verbs.CQ.
type CQ = verbs.CQ

// CompChannel is a completion channel: verbs.CompChannel.
type CompChannel = verbs.CompChannel

// AsyncEvent is an event from GetAsyncEvent.
type AsyncEvent interface {
	// EventType is event_type.
	EventType() verbs.EventType
	// Object is the CQ (as returned by CreateCQ), QP, SRQ or WQ the event
	// names, or nil for port events.
	Object() any
	// Port is element.port_num, for port events.
	Port() uint8
	// Ack is ibv_ack_async_event.
	Ack() error
}

// Injector is an optional capability of a CQ: adding a completion directly,
// as the adapter would when a work request finishes. With it the suite checks
// every CQ and notification rule without traffic. solicited says the
// message of a successful receive completion carried the solicited-event bit.
type Injector interface {
	Push(w verbs.WC, solicited bool) (overrun bool, err error)
}

// Referencer is an optional capability of a CQ: holding it the way a QP does,
// so CQ-11 can be checked before QPs exist; and of an MR: holding it the way
// a bound memory window does, so MR-06 can be checked before memory windows
// exist.
type Referencer interface {
	Ref() error
	Unref()
}

// LimitedDevice is an optional capability of a Device: a fresh device of the
// same implementation and profile whose limits are l, sharing nothing with the
// receiver. Fields of l left zero keep the receiver's values. Rules about
// exhausting a limit (CQ-06) use it to run against small limits; without it
// they need a device whose own limits are small.
type LimitedDevice interface {
	WithLimits(l Limits) (Device, error)
}

// Consumer is an optional capability of an SRQ: taking its oldest receive
// request the way a QP receiving a message does, which is when the limit
// event fires (SRQ-04). With it the suite checks the SRQ rules about
// consumption before there is traffic. ok is false when the SRQ is empty.
type Consumer interface {
	Take() (wrID uint64, sges []verbs.SGE, ok bool)
}

// Depth is an optional capability of a completion channel: the number of
// queued, unread events, which is when its descriptor polls readable
// (CHAN-05); and of an SRQ: the number of receive requests waiting in it
// (FLUSH-07).
type Depth interface {
	Len() int
}

// Profile states which reading of each implementation-defined rule a device
// follows: verbs.Readings, the one declaration of the readings that the
// simulator's profiles, this suite and its model (conformance/model) share.
// The zero value is the man-page reading (verbsim's default profile). It is
// an alias, so that the cases read e.Profile.OverrunDrops as before.
type Profile = verbs.Readings

// CQExAttr is struct ibv_cq_init_attr_ex without parent_domain.
type CQExAttr struct {
	CQE        int
	Context    any
	Channel    CompChannel // may be nil
	CompVector int
	WCFlags    verbs.WCExFlags      // wc_flags (CQX-02, CQX-03)
	CompMask   verbs.CQInitAttrMask // comp_mask (CQX-01)
	Flags      verbs.CQCreateFlags  // flags, read with verbs.CQInitAttrMaskFlags (CQX-01)
}

// ExCQCreator is an optional capability of a Context: ibv_create_cq_ex.
// The CQ it returns implements ExCQ. The CQX cases need it.
type ExCQCreator interface {
	CreateCQEx(attr CQExAttr) (CQ, error)
}

// ExCQ is the poll iterator of an extended CQ (struct ibv_cq_ex). A CQ that
// implements it may be polled with either API (CQX-10); an implementation
// whose ibv_create_cq CQs implement it lets the state machine mix them.
type ExCQ interface {
	CQ
	// StartPoll is ibv_start_poll: ENOENT on an empty CQ (CQX-04).
	StartPoll() error
	// NextPoll is ibv_next_poll: ENOENT past the last completion (CQX-05).
	NextPoll() error
	// EndPoll is ibv_end_poll; an error reports misuse (CQX-06).
	EndPoll() error
	// Current returns the wr_id and status fields of struct ibv_cq_ex for
	// the current completion; an error when there is none (CQX-07).
	Current() (wrID uint64, status verbs.WCStatus, err error)
	// The ibv_wc_read_* accessors; an error for a field not requested in
	// wc_flags (CQX-03) or when there is no current completion (CQX-07).
	ReadOpcode() (verbs.WCOpcode, error)
	ReadVendorErr() (uint32, error)
	ReadWCFlags() (verbs.WCFlags, error)
	ReadByteLen() (uint32, error)
	ReadImmData() (uint32, error)
	ReadQPNum() (uint32, error)
	ReadSrcQP() (uint32, error)
	ReadSLID() (uint32, error)
	ReadSL() (uint8, error)
	ReadDLIDPathBits() (uint8, error)
	ReadCompletionTS() (uint64, error)
	ReadCompletionWallclockNS() (uint64, error)
}

// Outstander is an optional capability of a QP: how many send and receive
// work requests are posted and not yet completed (or flushed). With it the
// state machine compares a QP's queues with the model's, not only what the
// posts and polls show.
type Outstander interface {
	Outstanding() (send, recv int)
}
