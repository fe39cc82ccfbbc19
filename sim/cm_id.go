package sim

import (
	"context"
	"fmt"
	"net/netip"
	"syscall"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/rdmacm"
	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// cmState is the state of an ID (the kernel's enum rdma_cm_state).
type cmState uint8

const (
	cmIdle cmState = iota
	cmAddrQuery
	cmAddrResolved
	cmRouteResolved
	cmConnect
	cmDisconnect
	cmAddrBound
	cmListen
	cmDeviceRemoval
	cmDestroying
)

var cmStateNames = [...]string{"IDLE", "ADDR_QUERY", "ADDR_RESOLVED", "ROUTE_RESOLVED", "CONNECT",
	"DISCONNECT", "ADDR_BOUND", "LISTEN", "DEVICE_REMOVAL", "DESTROYING"}

func (s cmState) String() string {
	if int(s) < len(cmStateNames) {
		return cmStateNames[s]
	}
	return fmt.Sprintf("cmState(%d)", uint8(s))
}

// CMID is a connection manager identifier (struct rdma_cm_id), the CM's
// socket. It implements rdmacm.ID. Its methods are safe for concurrent use.
// On a nil *CMID every method returns EINVAL or zero values; on a destroyed
// one every call fails with ENOENT, what the kernel answers for a handle it
// cannot find (CM-01).
type CMID struct {
	a      *cmAgent
	name   string
	ctx    any
	ps     rdmacm.PortSpace
	qpType verbs.QPType

	ch    *CMChannel // nil only while being destroyed
	sync  bool       // created without a channel (CM-04)
	event *CMEvent   // a synchronous ID's last event

	state  cmState
	dev    *Device
	port   *port
	vctx   *Context // the CM's context of dev
	src    netip.AddrPort
	dst    netip.AddrPort
	bound  bool // holds its port in the port space (CM-06)
	reuse  bool
	afonly bool
	afSet  bool
	tos    uint8
	ackTO  uint8 // RDMA_OPTION_ID_ACK_TIMEOUT; 0: the path's
	route  rdmacm.Route
	// peer is where the peer's connection manager and QP are: its LID and
	// GID and whether packets carry a GRH.
	peerLID    uint16
	peerGID    verbs.GID
	peerGlobal bool
	peerMTU    verbs.MTU

	backlog int   // a listener's room for unread CONNECT_REQUESTs (CM-08)
	listen  *CMID // a new connection ID's listener
	reqRead bool  // its CONNECT_REQUEST has been read
	owned   bool  // accepted: its events are reported (K:ucma.c)

	qp                 *QP
	pd                 *PD
	srq                *SRQ
	sendCQ, recvCQ     *CQ
	sendChan, recvChan *CompChannel
	epQPInit           *verbs.QPInitAttr // rdma_create_ep's saved attributes (passive)
	conn               *cmConn
	initDepth, respRes uint8 // id_priv's initiator_depth, responder_resources
	connectError       bool
	reported, acked    int // events read and acknowledged (CM-03)
	mcs                []*cmMcast
	timer              cmTimer // address resolution
	freed              bool    // Destroy has returned
	qkey               uint32
}

var _ rdmacm.ID = (*CMID)(nil)

// TraceName implements domain.Object.
func (id *CMID) TraceName() string {
	if id == nil {
		return ""
	}
	return id.name
}

// setChannelLocked moves the ID to channel c; nil gives it a private
// channel of its own (a synchronous ID).
func (id *CMID) setChannelLocked(c *CMChannel) {
	if id.ch != nil {
		id.ch.ids--
		if id.sync {
			id.ch.dead = true
			id.ch.q.CloseLocked()
		}
	}
	id.sync = c == nil
	if c == nil {
		c = id.a.newChannelLocked(true)
	}
	id.ch = c
	c.ids++
}

// checkLocked returns the error of verb on a destroyed ID.
func (id *CMID) checkLocked(verb string) error {
	switch id.state {
	case cmDestroying:
		return verr.New(verb, syscall.ENOENT, "the rdma_cm_id has been destroyed (CM-01)")
	case cmDeviceRemoval:
		return verr.New(verb, syscall.EIO, "the rdma_cm_id's device has been removed: destroy the ID (CM-24)")
	}
	return nil
}

// call enters the domain for verb on id, checking it; done leaves. On
// error the domain has been left already.
func (id *CMID) call(verb string) (done func(error) error, err error) {
	return id.callIn(verb, false)
}

// callIn is call; afterRemoval lets the verb run on an ID whose device has
// been removed (the destroys the application must still make, CM-24).
func (id *CMID) callIn(verb string, afterRemoval bool) (done func(error) error, err error) {
	if id == nil || id.a == nil {
		return nil, errNilID(verb)
	}
	op := id.a.enter(verb[len("rdma_"):], id)
	if afterRemoval && id.state == cmDeviceRemoval {
		return func(err error) error {
			id.a.f.d.Leave(op, err)
			return err
		}, nil
	}
	if err := id.checkLocked(verb); err != nil {
		id.a.f.d.Leave(op, err)
		return nil, err
	}
	return func(err error) error {
		id.a.f.d.Leave(op, err)
		return err
	}, nil
}

// view runs f under the lock, for an accessor.
func (id *CMID) view(f func()) {
	if id == nil || id.a == nil {
		return
	}
	d := id.a.f.d
	d.Enter(domain.Op{})
	defer d.Leave(domain.Op{}, nil)
	f()
}

// Context implements rdmacm.ID: the context given to CreateID.
func (id *CMID) Context() any {
	if id == nil {
		return nil
	}
	return id.ctx
}

// Channel implements rdmacm.ID: nil for a synchronous ID.
func (id *CMID) Channel() rdmacm.EventChannel {
	var ch rdmacm.EventChannel
	id.view(func() {
		if !id.sync && id.ch != nil {
			ch = id.ch
		}
	})
	return ch
}

// PortSpace implements rdmacm.ID.
func (id *CMID) PortSpace() rdmacm.PortSpace {
	if id == nil {
		return 0
	}
	return id.ps
}

// QPType implements rdmacm.ID.
func (id *CMID) QPType() verbs.QPType {
	if id == nil {
		return 0
	}
	return id.qpType
}

// Verbs implements rdmacm.ID: the CM's context of the ID's device, nil
// while the ID is bound to no device.
func (id *CMID) Verbs() verbs.Context {
	var c verbs.Context
	id.view(func() {
		if id.vctx != nil {
			c = id.vctx.Verbs()
		}
	})
	return c
}

// PortNum implements rdmacm.ID.
func (id *CMID) PortNum() uint8 {
	var n uint8
	id.view(func() {
		if id.port != nil {
			n = id.port.num
		}
	})
	return n
}

// PD implements rdmacm.ID.
func (id *CMID) PD() verbs.PD {
	var pd verbs.PD
	id.view(func() {
		if id.pd != nil {
			pd = VerbsPD(id.pd)
		}
	})
	return pd
}

// QP implements rdmacm.ID: the QP CreateQP made, or nil.
func (id *CMID) QP() verbs.QP {
	var q verbs.QP
	id.view(func() {
		if id.qp != nil {
			q = VerbsQP(id.qp)
		}
	})
	return q
}

// SRQ implements rdmacm.ID.
func (id *CMID) SRQ() verbs.SRQ {
	var s verbs.SRQ
	id.view(func() {
		if id.srq != nil {
			s = VerbsSRQ(id.srq)
		}
	})
	return s
}

// SendCQ implements rdmacm.ID.
func (id *CMID) SendCQ() verbs.CQ { return id.cqView(func() *CQ { return id.sendCQ }) }

// RecvCQ implements rdmacm.ID.
func (id *CMID) RecvCQ() verbs.CQ { return id.cqView(func() *CQ { return id.recvCQ }) }

func (id *CMID) cqView(get func() *CQ) verbs.CQ {
	var q verbs.CQ
	id.view(func() {
		if c := get(); c != nil {
			q = VerbsCQ(c)
		}
	})
	return q
}

// SendCQChannel implements rdmacm.ID.
func (id *CMID) SendCQChannel() verbs.CompChannel {
	return id.chView(func() *CompChannel { return id.sendChan })
}

// RecvCQChannel implements rdmacm.ID.
func (id *CMID) RecvCQChannel() verbs.CompChannel {
	return id.chView(func() *CompChannel { return id.recvChan })
}

func (id *CMID) chView(get func() *CompChannel) verbs.CompChannel {
	var ch verbs.CompChannel
	id.view(func() {
		if c := get(); c != nil {
			ch = VerbsChannel(c)
		}
	})
	return ch
}

// LocalAddr implements rdmacm.ID: rdma_get_local_addr and
// rdma_get_src_port.
func (id *CMID) LocalAddr() netip.AddrPort {
	var a netip.AddrPort
	id.view(func() { a = id.src })
	return a
}

// PeerAddr implements rdmacm.ID: rdma_get_peer_addr and
// rdma_get_dst_port.
func (id *CMID) PeerAddr() netip.AddrPort {
	var a netip.AddrPort
	id.view(func() { a = id.dst })
	return a
}

// Route implements rdmacm.ID.
func (id *CMID) Route() rdmacm.Route {
	var r rdmacm.Route
	id.view(func() { r = id.route })
	return r
}

// Event returns the last event of a synchronous ID (rdma_cm_id.event):
// for an ID from GetRequest, its CONNECT_REQUEST. nil otherwise.
func (id *CMID) Event() rdmacm.Event {
	var ev rdmacm.Event
	id.view(func() {
		if id.event != nil {
			ev = id.event
		}
	})
	return ev
}

// State returns the ID's state as the kernel names it ("CONNECT"): a
// simulator view for tests and the trace.
func (id *CMID) State() string {
	var s string
	id.view(func() { s = id.state.String() })
	return s
}

// EventCounts returns how many of the ID's events have been read and how
// many of those acknowledged (CM-03): a simulator view for timelines.
func (id *CMID) EventCounts() (read, acked int) {
	id.view(func() { read, acked = id.reported, id.acked })
	return read, acked
}

// Destroyed reports whether rdma_destroy_id has finished on the ID. A
// destroy still waiting for acknowledgements leaves it false and the
// state DESTROYING. A simulator view.
func (id *CMID) Destroyed() bool {
	var gone bool
	id.view(func() { gone = id.freed })
	return gone
}

// Destroy implements rdmacm.ID: rdma_destroy_id (CM-03, CM-22). It cleans
// the connection up as the kernel does, discards the ID's unread events,
// and waits, at most until ctx ends, until every event of the ID that was
// read has been acknowledged; a wait that gives up leaves the ID
// destroyed but waiting, and a second Destroy waits again. An ID that
// still has a QP or SRQ created on it is refused with EBUSY.
func (id *CMID) Destroy(ctx context.Context) (err error) {
	const verb = "rdma_destroy_id"
	if id == nil || id.a == nil {
		return errNilID(verb)
	}
	if ctx == nil {
		return verr.New(verb, syscall.EINVAL, "nil context.Context")
	}
	a := id.a
	op := a.enter("destroy_id", id)
	defer func() { a.f.d.Leave(op, err) }()
	if id.freed {
		return verr.New(verb, syscall.ENOENT, "the rdma_cm_id has been destroyed (CM-01)")
	}
	if id.state != cmDestroying {
		if id.qp != nil || id.srq != nil {
			return verr.New(verb, syscall.EBUSY, "a QP or SRQ created with rdma_create_qp or rdma_create_srq still exists: destroy it first (CM-22)")
		}
		a.destroyIDLocked(id, false)
	}
	if id.event != nil {
		_ = a.ackLocked(id.event)
		id.event = nil
	}
	if err := a.waitAcksLocked(verb, id, ctx); err != nil {
		return err
	}
	if id.ch != nil {
		id.ch.ids--
		if id.sync {
			id.ch.dead = true
			id.ch.q.CloseLocked()
		}
		id.ch = nil
	}
	id.freed = true
	for i, o := range a.ids {
		if o == id {
			a.ids = append(a.ids[:i], a.ids[i+1:]...)
			break
		}
	}
	return nil
}

// destroyIDLocked is the kernel's part of destroying an ID (K:cma.c
// rdma_destroy_id, K:ucma.c ucma_free_ctx): the connection is cleaned up,
// multicast groups left, the port released, unread events discarded and
// new connection IDs still waiting to be read destroyed. internal marks a
// destroy the CM does itself (an unread request's ID).
func (a *cmAgent) destroyIDLocked(id *CMID, internal bool) {
	a.stopLocked(&id.timer)
	if c := id.conn; c != nil {
		a.connDestroyLocked(c)
	}
	for _, mc := range id.mcs {
		a.leaveLocked(id, mc)
	}
	id.mcs = nil
	a.unbindLocked(id)
	id.state = cmDestroying
	if ch := id.ch; ch != nil {
		var orphans []*CMID
		ch.q.RemoveIfLocked(func(ev *CMEvent) bool {
			if ev.counted != id {
				return false
			}
			if ev.typ == rdmacm.EventConnectRequest {
				id.backlog++
				orphans = append(orphans, ev.id)
			}
			return true
		})
		for _, o := range orphans {
			a.destroyIDLocked(o, true)
			o.ch.ids--
			o.ch = nil
		}
	}
	if internal {
		return
	}
}

// waitAcksLocked waits, through the domain, until every event of id that
// was read has been acknowledged (CM-03): the wait of rdma_destroy_id and
// rdma_migrate_id. Only the application can end it, so virtual time does
// not pass for it.
func (a *cmAgent) waitAcksLocked(verb string, id *CMID, ctx context.Context) error {
	w := &domain.Waiter{Verb: verb, Obj: id, For: "the acknowledgement of the events read", Timeless: true}
	if err := a.f.d.Wait(ctx, w, func() bool { return id.acked >= id.reported }); err != nil {
		return verr.Wrap(verb, syscall.EINTR, fmt.Sprintf("%d event(s) read and not acknowledged (CM-03)", id.reported-id.acked), err)
	}
	return nil
}
