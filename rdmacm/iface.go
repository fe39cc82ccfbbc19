package rdmacm

import (
	"context"
	"net/netip"
	"time"

	"github.com/verbsim/verbsim/verbs"
)

// The interfaces below are what an application programs against. verbsim's
// simulator implements them ((*sim.Fabric).RDMACM), and so does the binding
// to the real librdmacm (package cverbs), so a program runs unchanged on
// either. The conventions of package verbs hold: errors carry librdmacm's
// errno; a call that may block takes a context.Context or is documented to
// wait; an object of another implementation is refused with EINVAL; objects
// compare equal with == (the ID of an event is the ID CreateID returned).

// CM is the connection manager of a host: the rdma_* calls that take no ID.
type CM interface {
	// CreateEventChannel is rdma_create_event_channel.
	CreateEventChannel() (EventChannel, error)
	// CreateID is rdma_create_id. A nil ch makes a synchronous ID: each
	// call that would report an event waits for it and returns its
	// outcome as an error (CM-04).
	CreateID(ch EventChannel, context any, ps PortSpace) (ID, error)
	// CreateEP is rdma_create_ep: a synchronous ID made from res, bound
	// (RAI_PASSIVE) or resolved to its destination, with a QP from pd and
	// attr when attr is not nil and the ID is active (CM-33).
	CreateEP(res *AddrInfo, pd verbs.PD, attr *verbs.QPInitAttr) (ID, error)
	// GetAddrInfo is rdma_getaddrinfo with numeric addresses (CM-11).
	GetAddrInfo(node, service string, hints *AddrInfo) ([]AddrInfo, error)
	// Devices is rdma_get_devices: the device contexts the connection
	// manager opened, one per device; an ID bound to a device reports one
	// of them as Verbs.
	Devices() ([]verbs.Context, error)
}

// EventChannel is struct rdma_event_channel.
type EventChannel interface {
	// GetEvent is rdma_get_cm_event on a blocking channel: it waits for
	// the next event, or until ctx ends.
	GetEvent(ctx context.Context) (Event, error)
	// TryGetEvent is rdma_get_cm_event on a non-blocking channel: EAGAIN
	// when no event is queued.
	TryGetEvent() (Event, error)
	// Destroy is rdma_destroy_event_channel.
	Destroy() error
}

// Event is struct rdma_cm_event. Every event must be acknowledged with Ack
// (rdma_ack_cm_event); destroying its ID waits for that (CM-03).
type Event interface {
	// Type is event.
	Type() EventType
	// ID is id: for EventConnectRequest a new ID for the connection.
	ID() ID
	// ListenID is listen_id: the listener, for EventConnectRequest.
	ListenID() ID
	// Status is status: 0, a negative errno, or a CM reason (RejectReason
	// for EventRejected, SIDRStatus for a UD EventUnreachable).
	Status() int
	// Conn is param.conn, for the events of connected IDs.
	Conn() ConnParam
	// UD is param.ud, for the events of UD IDs.
	UD() UDParam
	// MulticastContext is the context JoinMulticast was given, which C
	// returns in param.ud.private_data of a multicast event.
	MulticastContext() any
	// Ack is rdma_ack_cm_event.
	Ack() error
}

// ID is struct rdma_cm_id, the connection manager's socket.
type ID interface {
	// Context is context, the value given to CreateID.
	Context() any
	// Channel is channel: nil for a synchronous ID.
	Channel() EventChannel
	// PortSpace is ps.
	PortSpace() PortSpace
	// QPType is qp_type.
	QPType() verbs.QPType
	// Verbs is verbs: the device context of the device the ID is bound
	// to, nil until it is bound.
	Verbs() verbs.Context
	// PortNum is port_num.
	PortNum() uint8
	// PD, QP, SRQ, SendCQ, RecvCQ, SendCQChannel and RecvCQChannel are the
	// members of the same names; the CQs and channels are those the
	// connection manager made for a QP created without its own.
	PD() verbs.PD
	QP() verbs.QP
	SRQ() verbs.SRQ
	SendCQ() verbs.CQ
	RecvCQ() verbs.CQ
	SendCQChannel() verbs.CompChannel
	RecvCQChannel() verbs.CompChannel
	// LocalAddr is rdma_get_local_addr with rdma_get_src_port.
	LocalAddr() netip.AddrPort
	// PeerAddr is rdma_get_peer_addr with rdma_get_dst_port.
	PeerAddr() netip.AddrPort
	// Route is route.
	Route() Route
	// Event is event: the last event of a synchronous ID, which the ID
	// holds until its next call; for an ID from GetRequest, its
	// connection request. nil otherwise.
	Event() Event

	// BindAddr is rdma_bind_addr.
	BindAddr(addr netip.AddrPort) error
	// ResolveAddr is rdma_resolve_addr; src may be the zero AddrPort.
	ResolveAddr(src, dst netip.AddrPort, timeout time.Duration) error
	// ResolveRoute is rdma_resolve_route.
	ResolveRoute(timeout time.Duration) error
	// Listen is rdma_listen.
	Listen(backlog int) error
	// GetRequest is rdma_get_request on a synchronous listener: it waits
	// for the next connection request, or until ctx ends.
	GetRequest(ctx context.Context) (ID, error)
	// Connect is rdma_connect; param may be nil.
	Connect(param *ConnParam) error
	// Accept is rdma_accept; param may be nil.
	Accept(param *ConnParam) error
	// Reject is rdma_reject.
	Reject(privateData []byte) error
	// Establish is rdma_establish.
	Establish() error
	// Disconnect is rdma_disconnect.
	Disconnect() error
	// Notify is rdma_notify.
	Notify(event verbs.EventType) error
	// Migrate is rdma_migrate_id; a nil ch makes the ID synchronous.
	Migrate(ch EventChannel) error
	// SetOption is rdma_set_option: value holds the option's bytes as C
	// passes them (an int is 4 bytes, little-endian).
	SetOption(level OptionLevel, name OptionName, value []byte) error
	// InitQPAttr is rdma_init_qp_attr for the QP state state.
	InitQPAttr(state verbs.QPState) (verbs.QPAttr, verbs.QPAttrMask, error)
	// CreateQP is rdma_create_qp: pd may be nil (the device's default PD),
	// and attr's CQs too (the connection manager makes them). On return
	// attr holds the QP's real capacities.
	CreateQP(pd verbs.PD, attr *verbs.QPInitAttr) error
	// DestroyQP is rdma_destroy_qp.
	DestroyQP() error
	// CreateSRQ is rdma_create_srq; pd may be nil.
	CreateSRQ(pd verbs.PD, attr *verbs.SRQInitAttr) error
	// DestroySRQ is rdma_destroy_srq.
	DestroySRQ() error
	// JoinMulticast is rdma_join_multicast.
	JoinMulticast(addr netip.Addr, context any) error
	// JoinMulticastEx is rdma_join_multicast_ex with the address and the
	// join flag set.
	JoinMulticastEx(addr netip.Addr, flags JoinFlags, context any) error
	// LeaveMulticast is rdma_leave_multicast.
	LeaveMulticast(addr netip.Addr) error
	// Destroy is rdma_destroy_id: it waits, at most until ctx ends, for
	// the events of the ID already read to be acknowledged.
	Destroy(ctx context.Context) error
	// DestroyEP is rdma_destroy_ep: DestroyQP, DestroySRQ, then Destroy.
	DestroyEP(ctx context.Context) error
}
