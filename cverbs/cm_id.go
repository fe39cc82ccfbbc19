//go:build cgo && linux

package cverbs

/*
#include <stdlib.h>
#include "cverbs.h"
#include "cm.h"
*/
import "C"

import (
	"context"
	"net/netip"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/verbsim/verbsim/rdmacm"
	"github.com/verbsim/verbsim/verbs"
)

// cmID is a struct rdma_cm_id. use is held for reading across every C
// call on the ID and for writing by its destroy, so that no call runs on
// a freed ID.
type cmID struct {
	use   sync.RWMutex
	mu    sync.Mutex // guards the fields below
	c     *C.struct_rdma_cm_id
	ch    *cmChannel // nil for a synchronous ID
	goCtx any
	ps    rdmacm.PortSpace
	dead  bool
	evs   events // the events read through the binding, and their acks
	joins map[netip.Addr]uintptr
	qp    *qp
	cqs   []*cq // the CQs rdma_create_qp made
}

var _ rdmacm.ID = (*cmID)(nil)

func newCMID(c *C.struct_rdma_cm_id, ch *cmChannel, goCtx any, ps rdmacm.PortSpace) *cmID {
	x := &cmID{c: c, ch: ch, goCtx: goCtx, ps: ps, joins: map[netip.Addr]uintptr{}}
	cmIDs.Store(c, x)
	return x
}

func lookupCMID(c *C.struct_rdma_cm_id) *cmID {
	if c == nil {
		return nil
	}
	if v, ok := cmIDs.Load(c); ok {
		return v.(*cmID)
	}
	return nil
}

// enter begins a call: the ID's use lock for reading, or ENOENT for a
// destroyed ID (the kernel's answer for a handle it no longer knows) and
// EINVAL for nil. done ends it.
func (id *cmID) enter(verb string) error {
	if id == nil {
		return einval(verb + " (nil rdma_cm_id)")
	}
	id.use.RLock()
	id.mu.Lock()
	dead := id.dead
	id.mu.Unlock()
	if dead {
		id.use.RUnlock()
		return &Error{Verb: verb + " (a destroyed rdma_cm_id)", Errno: syscall.ENOENT}
	}
	return nil
}

func (id *cmID) done() { id.use.RUnlock() }

// call runs a C call returning librdmacm's int (0, or -1 with errno).
func (id *cmID) call(verb string, f func() (C.int, error)) error {
	if err := id.enter(verb); err != nil {
		return err
	}
	defer id.done()
	rc, err := f()
	return rcErrno(verb, rc, err)
}

// view reads the C ID under its use lock; false for a destroyed ID.
func (id *cmID) view(f func(c *C.struct_rdma_cm_id)) bool {
	if id.enter("") != nil {
		return false
	}
	defer id.done()
	f(id.c)
	return true
}

func (id *cmID) Context() any                { return id.goCtx }
func (id *cmID) PortSpace() rdmacm.PortSpace { return id.ps }

// Channel is channel: nil for a synchronous ID.
func (id *cmID) Channel() rdmacm.EventChannel {
	id.mu.Lock()
	defer id.mu.Unlock()
	if id.ch == nil {
		return nil
	}
	return id.ch
}

// QPType is qp_type.
func (id *cmID) QPType() verbs.QPType {
	var t verbs.QPType
	id.view(func(c *C.struct_rdma_cm_id) { t = verbs.QPType(c.qp_type) })
	return t
}

// Verbs is verbs: the device context librdmacm opened, nil until bound.
func (id *cmID) Verbs() verbs.Context {
	var x *devContext
	id.view(func(c *C.struct_rdma_cm_id) { x = cmContext(c.verbs) })
	if x == nil {
		return nil
	}
	return x
}

// PortNum is port_num.
func (id *cmID) PortNum() uint8 {
	var n uint8
	id.view(func(c *C.struct_rdma_cm_id) { n = uint8(c.port_num) })
	return n
}

// PD is pd: the PD the ID's QP was made in.
func (id *cmID) PD() verbs.PD {
	var out verbs.PD
	id.view(func(c *C.struct_rdma_cm_id) {
		if c.pd != nil {
			out = cmPDObject(c.pd, cmContext(c.verbs))
		}
	})
	return out
}

// QP is qp.
func (id *cmID) QP() verbs.QP {
	id.mu.Lock()
	defer id.mu.Unlock()
	if id.qp == nil {
		return nil
	}
	return id.qp.self
}

// SRQ is srq.
func (id *cmID) SRQ() verbs.SRQ {
	var out verbs.SRQ
	id.view(func(c *C.struct_rdma_cm_id) {
		if v, ok := registry.Load(unsafe.Pointer(c.srq)); ok && c.srq != nil {
			out = v.(*srq).self
		}
	})
	return out
}

// SendCQ, RecvCQ, SendCQChannel and RecvCQChannel are the ID's QP's CQs
// and the channels of the CQs librdmacm made.
func (id *cmID) SendCQ() verbs.CQ {
	if q := id.QP(); q != nil {
		return q.SendCQ()
	}
	return nil
}

func (id *cmID) RecvCQ() verbs.CQ {
	if q := id.QP(); q != nil {
		return q.RecvCQ()
	}
	return nil
}

func (id *cmID) SendCQChannel() verbs.CompChannel { return cqChannel(id.SendCQ()) }
func (id *cmID) RecvCQChannel() verbs.CompChannel { return cqChannel(id.RecvCQ()) }

func cqChannel(q verbs.CQ) verbs.CompChannel {
	if q == nil {
		return nil
	}
	return q.Channel()
}

// LocalAddr is rdma_get_local_addr with rdma_get_src_port.
func (id *cmID) LocalAddr() netip.AddrPort {
	var a C.cm_ip
	id.view(func(c *C.struct_rdma_cm_id) { C.cm_local(c, &a) })
	return goAddrPort(&a)
}

// PeerAddr is rdma_get_peer_addr with rdma_get_dst_port.
func (id *cmID) PeerAddr() netip.AddrPort {
	var a C.cm_ip
	id.view(func(c *C.struct_rdma_cm_id) { C.cm_peer(c, &a) })
	return goAddrPort(&a)
}

// Route is route, from its first path record.
func (id *cmID) Route() rdmacm.Route {
	var r C.cm_route
	id.view(func(c *C.struct_rdma_cm_id) { C.cm_get_route(c, &r) })
	out := rdmacm.Route{SLID: uint16(r.slid), DLID: uint16(r.dlid), PKey: uint16(r.pkey), SL: uint8(r.sl),
		TrafficClass: uint8(r.tclass), HopLimit: uint8(r.hop_limit), MTU: verbs.MTU(r.mtu), PacketLifeTime: uint8(r.plt),
		NumPaths: int(r.num_paths)}
	for i := range out.SGID {
		out.SGID[i], out.DGID[i] = byte(r.sgid[i]), byte(r.dgid[i])
	}
	return out
}

// Event is event: a synchronous ID's last event, which librdmacm
// acknowledges itself.
func (id *cmID) Event() rdmacm.Event {
	var out rdmacm.Event
	id.view(func(c *C.struct_rdma_cm_id) {
		if c.event == nil {
			return
		}
		e := &cmEvent{ev: c.event, typ: rdmacm.EventType(c.event.event), status: int(c.event.status), ownedByLib: true,
			id: lookupCMID(c.event.id), listen: lookupCMID(c.event.listen_id)}
		e.fill(c.event)
		out = e
	})
	return out
}

// BindAddr is rdma_bind_addr.
func (id *cmID) BindAddr(addr netip.AddrPort) error {
	a := cmIPOf(addr)
	return id.call("rdma_bind_addr", func() (C.int, error) { rc, err := C.cm_bind(id.c, &a); return rc, err })
}

// ResolveAddr is rdma_resolve_addr.
func (id *cmID) ResolveAddr(src, dst netip.AddrPort, timeout time.Duration) error {
	s, d := cmIPOf(src), cmIPOf(dst)
	ms := C.int(min(timeout.Milliseconds(), 1<<31-1))
	return id.call("rdma_resolve_addr", func() (C.int, error) {
		rc, err := C.cm_resolve_addr(id.c, &s, &d, ms)
		return rc, err
	})
}

// ResolveRoute is rdma_resolve_route.
func (id *cmID) ResolveRoute(timeout time.Duration) error {
	ms := C.int(min(timeout.Milliseconds(), 1<<31-1))
	return id.call("rdma_resolve_route", func() (C.int, error) { rc, err := C.rdma_resolve_route(id.c, ms); return rc, err })
}

// Listen is rdma_listen.
func (id *cmID) Listen(backlog int) error {
	if backlog < -1<<31 || backlog > 1<<31-1 {
		return einval("rdma_listen (backlog)")
	}
	return id.call("rdma_listen", func() (C.int, error) { rc, err := C.rdma_listen(id.c, C.int(backlog)); return rc, err })
}

// GetRequest is rdma_get_request on a synchronous listener. librdmacm
// waits inside C: ctx is checked before the call only.
func (id *cmID) GetRequest(ctx context.Context) (rdmacm.ID, error) {
	const verb = "rdma_get_request"
	if ctx == nil {
		return nil, einval(verb + " (nil context.Context)")
	}
	if ctx.Err() != nil {
		return nil, interrupted(verb, ctx)
	}
	if err := id.enter(verb); err != nil {
		return nil, err
	}
	defer id.done()
	var n *C.struct_rdma_cm_id
	if rc, err := C.rdma_get_request(id.c, &n); rc != 0 {
		return nil, rcErrno(verb, rc, err)
	}
	return newCMID(n, nil, id.goCtx, id.ps), nil
}

// connParam is p's C form; free releases its private data. A nil p is a
// NULL conn_param.
func connParam(verb string, p *rdmacm.ConnParam) (*C.struct_rdma_conn_param, func(), error) {
	if p == nil {
		return nil, func() {}, nil
	}
	if len(p.PrivateData) > 255 {
		return nil, nil, einval(verb + " (private data longer than 255 bytes)")
	}
	c := (*C.struct_rdma_conn_param)(C.calloc(1, C.size_t(unsafe.Sizeof(C.struct_rdma_conn_param{}))))
	if c == nil {
		return nil, nil, &Error{Verb: verb, Errno: syscall.ENOMEM}
	}
	if len(p.PrivateData) > 0 {
		c.private_data = C.CBytes(p.PrivateData)
		c.private_data_len = C.uint8_t(len(p.PrivateData))
	}
	c.responder_resources = C.uint8_t(p.ResponderResources)
	c.initiator_depth = C.uint8_t(p.InitiatorDepth)
	c.flow_control = C.uint8_t(p.FlowControl)
	c.retry_count = C.uint8_t(p.RetryCount)
	c.rnr_retry_count = C.uint8_t(p.RNRRetryCount)
	c.srq = C.uint8_t(p.SRQ)
	c.qp_num = C.uint32_t(p.QPNum)
	return c, func() {
		C.free(unsafe.Pointer(c.private_data))
		C.free(unsafe.Pointer(c))
	}, nil
}

// Connect is rdma_connect.
func (id *cmID) Connect(p *rdmacm.ConnParam) error { return id.connAccept("rdma_connect", p) }

// Accept is rdma_accept.
func (id *cmID) Accept(p *rdmacm.ConnParam) error { return id.connAccept("rdma_accept", p) }

func (id *cmID) connAccept(verb string, p *rdmacm.ConnParam) error {
	c, free, err := connParam(verb, p)
	if err != nil {
		return err
	}
	defer free()
	return id.call(verb, func() (C.int, error) {
		if verb == "rdma_connect" {
			rc, err := C.rdma_connect(id.c, c)
			return rc, err
		}
		rc, err := C.rdma_accept(id.c, c)
		return rc, err
	})
}

// Reject is rdma_reject.
func (id *cmID) Reject(privateData []byte) error {
	const verb = "rdma_reject"
	if len(privateData) > 255 {
		return einval(verb + " (private data longer than 255 bytes)")
	}
	var p unsafe.Pointer
	if len(privateData) > 0 {
		p = C.CBytes(privateData)
		defer C.free(p)
	}
	return id.call(verb, func() (C.int, error) {
		rc, err := C.rdma_reject(id.c, p, C.uint8_t(len(privateData)))
		return rc, err
	})
}

// Establish is rdma_establish.
func (id *cmID) Establish() error {
	return id.call("rdma_establish", func() (C.int, error) { rc, err := C.rdma_establish(id.c); return rc, err })
}

// Disconnect is rdma_disconnect.
func (id *cmID) Disconnect() error {
	return id.call("rdma_disconnect", func() (C.int, error) { rc, err := C.rdma_disconnect(id.c); return rc, err })
}

// Notify is rdma_notify.
func (id *cmID) Notify(ev verbs.EventType) error {
	return id.call("rdma_notify", func() (C.int, error) {
		rc, err := C.rdma_notify(id.c, C.enum_ibv_event_type(ev))
		return rc, err
	})
}

// Migrate is rdma_migrate_id; a nil ch makes the ID synchronous.
func (id *cmID) Migrate(ch rdmacm.EventChannel) error {
	const verb = "rdma_migrate_id"
	var to *cmChannel
	var cch *C.struct_rdma_event_channel
	if ch != nil {
		var ok bool
		if to, ok = ch.(*cmChannel); !ok || to == nil {
			return einval(verb + " (a channel of another implementation)")
		}
		to.mu.Lock()
		dead := to.dead
		cch = to.ch
		to.mu.Unlock()
		if dead {
			return einval(verb + " (a destroyed channel)")
		}
	}
	if err := id.call(verb, func() (C.int, error) { rc, err := C.rdma_migrate_id(id.c, cch); return rc, err }); err != nil {
		return err
	}
	id.mu.Lock()
	from := id.ch
	id.ch = to
	id.mu.Unlock()
	moveID(from, to)
	return nil
}

// moveID moves one ID's count from channel from to channel to.
func moveID(from, to *cmChannel) {
	if from != nil {
		from.mu.Lock()
		from.ids--
		from.mu.Unlock()
	}
	if to != nil {
		to.mu.Lock()
		to.ids++
		to.mu.Unlock()
	}
}

// SetOption is rdma_set_option.
func (id *cmID) SetOption(level rdmacm.OptionLevel, name rdmacm.OptionName, value []byte) error {
	var p unsafe.Pointer
	if len(value) > 0 {
		p = C.CBytes(value)
		defer C.free(p)
	}
	return id.call("rdma_set_option", func() (C.int, error) {
		rc, err := C.rdma_set_option(id.c, C.int(level), C.int(name), p, C.size_t(len(value)))
		return rc, err
	})
}

// InitQPAttr is rdma_init_qp_attr.
func (id *cmID) InitQPAttr(state verbs.QPState) (verbs.QPAttr, verbs.QPAttrMask, error) {
	var a C.struct_ibv_qp_attr
	var mask C.int
	a.qp_state = C.enum_ibv_qp_state(state)
	err := id.call("rdma_init_qp_attr", func() (C.int, error) { rc, err := C.rdma_init_qp_attr(id.c, &a, &mask); return rc, err })
	if err != nil {
		return verbs.QPAttr{}, 0, err
	}
	return fromQPAttr(&a), verbs.QPAttrMask(mask), nil
}

// JoinMulticast is rdma_join_multicast.
func (id *cmID) JoinMulticast(addr netip.Addr, context any) error {
	return id.join("rdma_join_multicast", addr, 0, false, context)
}

// JoinMulticastEx is rdma_join_multicast_ex with the address and the join
// flag set.
func (id *cmID) JoinMulticastEx(addr netip.Addr, flags rdmacm.JoinFlags, context any) error {
	return id.join("rdma_join_multicast_ex", addr, flags, true, context)
}

func (id *cmID) join(verb string, addr netip.Addr, flags rdmacm.JoinFlags, ex bool, context any) error {
	a := cmIPOf(netip.AddrPortFrom(addr, 0))
	h := mcHandle(context)
	e := C.int(0)
	if ex {
		e = 1
	}
	err := id.call(verb, func() (C.int, error) {
		rc, err := C.cm_join(id.c, &a, C.uint32_t(flags), e, C.uintptr_t(h))
		return rc, err
	})
	if err != nil {
		mcFree(h)
		return err
	}
	id.mu.Lock()
	if old, ok := id.joins[addr]; ok {
		mcFree(old)
	}
	id.joins[addr] = h
	id.mu.Unlock()
	return nil
}

// LeaveMulticast is rdma_leave_multicast.
func (id *cmID) LeaveMulticast(addr netip.Addr) error {
	a := cmIPOf(netip.AddrPortFrom(addr, 0))
	if err := id.call("rdma_leave_multicast", func() (C.int, error) { rc, err := C.cm_leave(id.c, &a); return rc, err }); err != nil {
		return err
	}
	id.mu.Lock()
	if h, ok := id.joins[addr]; ok {
		mcFree(h)
		delete(id.joins, addr)
	}
	id.mu.Unlock()
	return nil
}
