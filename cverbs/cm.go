//go:build cgo && linux

package cverbs

/*
#cgo LDFLAGS: -lrdmacm
#include <stdlib.h>
#include "cverbs.h"
#include "cm.h"
*/
import "C"

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"syscall"
	"unsafe"

	"github.com/verbsim/verbsim/rdmacm"
	"github.com/verbsim/verbsim/verbs"
)

// The binding to librdmacm: RDMACM returns the connection manager of the
// librdmacm the process loads, as package rdmacm's interfaces, so that a Go
// program written against them (examples/cmecho) runs on an adapter's CM
// as it runs on the simulator's. The translations of the verbs hold: errno
// errors naming the call, event channels made non-blocking and waited on
// in poll(2) with a context.Context, and the checks librdmacm leaves to
// the caller made in Go (a destroyed ID, a second acknowledgement, an
// object of another implementation: EINVAL or ENOENT).
//
// The verbs objects librdmacm makes (the device contexts of
// rdma_get_devices, the default PD, the CQs and channels rdma_create_qp
// makes for a QP given none) are the binding's ordinary objects, but
// librdmacm owns them: closing or destroying them yourself is EBUSY; they
// go with rdma_destroy_qp and rdma_destroy_id.

// cmOwned holds the C addresses of the verbs objects librdmacm made.
var cmOwned sync.Map // unsafe.Pointer -> struct{}

// cmOwns reports whether librdmacm owns the object at p.
func cmOwns(p unsafe.Pointer) bool { _, ok := cmOwned.Load(p); return ok }

// ebusyCM is the error of a close or destroy of an object librdmacm owns.
func ebusyCM(verb string) error {
	return &Error{Verb: verb + " (librdmacm owns the object)", Errno: syscall.EBUSY}
}

// cmIDs maps the C address of every live rdma_cm_id the binding knows to
// its Go object; cmContexts the device contexts librdmacm opened.
var (
	cmIDs      sync.Map // *C.struct_rdma_cm_id -> *cmID
	cmContexts sync.Map // *C.struct_ibv_context -> *devContext
)

// mcHandles hold the contexts of multicast joins: C carries the handle.
var mcHandles struct {
	mu   sync.Mutex
	next uintptr
	m    map[uintptr]any
}

func mcHandle(v any) uintptr {
	mcHandles.mu.Lock()
	defer mcHandles.mu.Unlock()
	if mcHandles.m == nil {
		mcHandles.m = map[uintptr]any{}
	}
	mcHandles.next++
	mcHandles.m[mcHandles.next] = v
	return mcHandles.next
}

func mcValue(h uintptr) any {
	mcHandles.mu.Lock()
	defer mcHandles.mu.Unlock()
	return mcHandles.m[h]
}

func mcFree(h uintptr) {
	mcHandles.mu.Lock()
	defer mcHandles.mu.Unlock()
	delete(mcHandles.m, h)
}

// RDMACM returns the connection manager of the librdmacm the process
// loaded. Without an RDMA CM device (no /dev/infiniband/rdma_cm) its calls
// fail with librdmacm's errno, ENODEV.
func RDMACM() rdmacm.CM { return cmLib{} }

type cmLib struct{}

var _ rdmacm.CM = cmLib{}

// CreateEventChannel is rdma_create_event_channel; the channel's fd is
// made non-blocking (GetEvent waits in poll(2)).
func (cmLib) CreateEventChannel() (rdmacm.EventChannel, error) {
	ch, err := C.rdma_create_event_channel()
	if ch == nil {
		return nil, errOf("rdma_create_event_channel", err)
	}
	if rc := C.cv_set_nonblock_fd(ch.fd); rc != 0 {
		C.rdma_destroy_event_channel(ch)
		return nil, rcErr("fcntl(O_NONBLOCK)", rc)
	}
	return &cmChannel{ch: ch, fd: ch.fd}, nil
}

// CreateID is rdma_create_id; a nil ch makes a synchronous ID.
func (cmLib) CreateID(ch rdmacm.EventChannel, context any, ps rdmacm.PortSpace) (rdmacm.ID, error) {
	const verb = "rdma_create_id"
	var c *cmChannel
	var cch *C.struct_rdma_event_channel
	if ch != nil {
		var ok bool
		if c, ok = ch.(*cmChannel); !ok || c == nil {
			return nil, einval(verb + " (a channel of another implementation)")
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.dead {
			return nil, einval(verb + " (a destroyed channel)")
		}
		cch = c.ch
	}
	var id *C.struct_rdma_cm_id
	if rc, err := C.rdma_create_id(cch, &id, nil, C.enum_rdma_port_space(ps)); rc != 0 {
		return nil, rcErrno(verb, rc, err)
	}
	x := newCMID(id, c, context, ps)
	if c != nil {
		c.ids++
	}
	return x, nil
}

// CreateEP is rdma_create_ep: a synchronous ID from res, with a QP when
// attr is not nil.
func (l cmLib) CreateEP(res *rdmacm.AddrInfo, pd verbs.PD, attr *verbs.QPInitAttr) (rdmacm.ID, error) {
	const verb = "rdma_create_ep"
	if res == nil {
		return nil, einval(verb + " (res NULL)")
	}
	cpd, ok := cmPD(pd)
	if !ok {
		return nil, einval(verb + " (a PD of another implementation, or destroyed)")
	}
	src, dst := cmIPOf(res.Src), cmIPOf(res.Dst)
	ai := C.cm_make_addrinfo(C.int(res.Flags), C.int(res.Family), C.int(res.QPType), C.int(res.PortSpace), &src, &dst)
	if ai == nil {
		return nil, &Error{Verb: verb, Errno: syscall.ENOMEM}
	}
	defer C.cm_free_addrinfo(ai)
	var ia C.struct_ibv_qp_init_attr
	var iap *C.struct_ibv_qp_init_attr
	q := &qp{qpContext: nil}
	if attr != nil {
		q.qpContext = attr.Context
		if err := q.initAttr(&ia, attr); err != nil {
			return nil, err
		}
		iap = &ia
	}
	var id *C.struct_rdma_cm_id
	if rc, err := C.rdma_create_ep(&id, ai, cpd, iap); rc != 0 {
		return nil, rcErrno(verb, rc, err)
	}
	x := newCMID(id, nil, nil, res.PortSpace)
	if id.qp != nil {
		x.adoptQP(q)
		attr.Cap, attr.Type = fromCap(&ia.cap), verbs.QPType(ia.qp_type)
		attr.SendCQ, attr.RecvCQ = q.sendCQ, q.recvCQ
	}
	return x, nil
}

// GetAddrInfo is rdma_getaddrinfo; node and service may be empty.
func (cmLib) GetAddrInfo(node, service string, hints *rdmacm.AddrInfo) ([]rdmacm.AddrInfo, error) {
	const verb = "rdma_getaddrinfo"
	var cnode, cservice *C.char
	if node != "" {
		cnode = C.CString(node)
		defer C.free(unsafe.Pointer(cnode))
	}
	if service != "" {
		cservice = C.CString(service)
		defer C.free(unsafe.Pointer(cservice))
	}
	var h *C.struct_rdma_addrinfo
	if hints != nil {
		src, dst := cmIPOf(hints.Src), cmIPOf(hints.Dst)
		h = C.cm_make_addrinfo(C.int(hints.Flags), C.int(hints.Family), C.int(hints.QPType), C.int(hints.PortSpace), &src, &dst)
		if h == nil {
			return nil, &Error{Verb: verb, Errno: syscall.ENOMEM}
		}
		defer C.cm_free_addrinfo(h)
	}
	var res *C.struct_rdma_addrinfo
	rc, err := C.rdma_getaddrinfo(cnode, cservice, h, &res)
	if rc != 0 {
		// librdmacm returns -1 with errno set, or getaddrinfo's EAI_
		// code (EAI_BADFLAGS is -1 too, but leaves errno alone).
		if rc == -1 && err != nil {
			return nil, errOf(verb, err)
		}
		return nil, &rdmacm.AddrInfoError{Code: int(rc), Node: node, Service: service}
	}
	defer C.rdma_freeaddrinfo(res)
	var out []rdmacm.AddrInfo
	for ai := res; ai != nil; ai = ai.ai_next {
		a := rdmacm.AddrInfo{Flags: rdmacm.AIFlags(ai.ai_flags), Family: int(ai.ai_family), QPType: verbs.QPType(ai.ai_qp_type),
			PortSpace: rdmacm.PortSpace(ai.ai_port_space)}
		var ip C.cm_ip
		C.cm_from_sockaddr(ai.ai_src_addr, &ip)
		a.Src = goAddrPort(&ip)
		C.cm_from_sockaddr(ai.ai_dst_addr, &ip)
		a.Dst = goAddrPort(&ip)
		if ai.ai_src_canonname != nil {
			a.SrcCanonName = C.GoString(ai.ai_src_canonname)
		}
		if ai.ai_dst_canonname != nil {
			a.DstCanonName = C.GoString(ai.ai_dst_canonname)
		}
		out = append(out, a)
	}
	return out, nil
}

// Devices is rdma_get_devices: the device contexts librdmacm opened.
func (cmLib) Devices() ([]verbs.Context, error) {
	var n C.int
	l, err := C.rdma_get_devices(&n)
	if l == nil {
		return nil, errOf("rdma_get_devices", err)
	}
	defer C.rdma_free_devices(l)
	ctxs := unsafe.Slice(l, int(n))
	out := make([]verbs.Context, 0, len(ctxs))
	for _, c := range ctxs {
		out = append(out, cmContext(c))
	}
	return out, nil
}

// cmChannel is a struct rdma_event_channel.
type cmChannel struct {
	mu   sync.Mutex
	ch   *C.struct_rdma_event_channel
	fd   C.int
	dead bool
	ids  int // IDs reporting on the channel
}

var _ rdmacm.EventChannel = (*cmChannel)(nil)

// GetEvent is rdma_get_cm_event, waiting in poll(2) until an event comes
// or ctx ends.
func (ch *cmChannel) GetEvent(ctx context.Context) (rdmacm.Event, error) {
	if ctx == nil {
		return nil, einval("rdma_get_cm_event (nil context.Context)")
	}
	for {
		ev, err := ch.TryGetEvent()
		if !errors.Is(err, syscall.EAGAIN) {
			return ev, err
		}
		if err := waitReadable("rdma_get_cm_event", ctx, ch.fd); err != nil {
			return nil, err
		}
	}
}

// TryGetEvent is rdma_get_cm_event on the non-blocking descriptor: EAGAIN
// when no event is queued.
func (ch *cmChannel) TryGetEvent() (rdmacm.Event, error) {
	if ch == nil {
		return nil, einval("rdma_get_cm_event (nil channel)")
	}
	ch.mu.Lock()
	if ch.dead {
		ch.mu.Unlock()
		return nil, einval("rdma_get_cm_event (a destroyed channel)")
	}
	var ev *C.struct_rdma_cm_event
	rc, err := C.rdma_get_cm_event(ch.ch, &ev)
	ch.mu.Unlock()
	if rc != 0 {
		return nil, rcErrno("rdma_get_cm_event", rc, err)
	}
	return ch.event(ev), nil
}

// Destroy is rdma_destroy_event_channel. A channel an ID still reports on
// is EBUSY (librdmacm would free it under the ID); a second destroy is
// EINVAL.
func (ch *cmChannel) Destroy() error {
	const verb = "rdma_destroy_event_channel"
	if ch == nil {
		return einval(verb + " (nil channel)")
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	switch {
	case ch.dead:
		return einval(verb + " (destroyed already)")
	case ch.ids > 0:
		return &Error{Verb: verb + " (IDs still report on it)", Errno: syscall.EBUSY}
	}
	C.rdma_destroy_event_channel(ch.ch)
	ch.dead = true
	return nil
}

// event turns an event librdmacm returned into its Go form, making the
// new ID of a connection request.
func (ch *cmChannel) event(ev *C.struct_rdma_cm_event) *cmEvent {
	e := &cmEvent{ev: ev, typ: rdmacm.EventType(ev.event), status: int(ev.status)}
	e.listen = lookupCMID(ev.listen_id)
	if e.typ == rdmacm.EventConnectRequest && e.listen != nil {
		e.id = newCMID(ev.id, e.listen.ch, e.listen.goCtx, e.listen.ps)
		if e.listen.ch != nil {
			e.listen.ch.mu.Lock()
			e.listen.ch.ids++
			e.listen.ch.mu.Unlock()
		}
		e.counted = e.listen // librdmacm counts the request on the listener
	} else {
		e.id = lookupCMID(ev.id)
		e.counted = e.id
	}
	if e.counted != nil {
		e.counted.evs.got()
	}
	e.fill(ev)
	return e
}

// cmEvent is a struct rdma_cm_event.
type cmEvent struct {
	ev          *C.struct_rdma_cm_event
	typ         rdmacm.EventType
	id, listen  *cmID
	counted     *cmID
	status      int
	conn        rdmacm.ConnParam
	ud          rdmacm.UDParam
	mcCtx       any
	ownedByLib  bool // a synchronous ID's event, which librdmacm acknowledges
	mu          sync.Mutex
	acked       bool
	privateData []byte
}

var _ rdmacm.Event = (*cmEvent)(nil)

// fill copies the event's parameters: param.ud for a UD ID, param.conn
// otherwise; a multicast event's private data is the join's context.
func (e *cmEvent) fill(ev *C.struct_rdma_cm_event) {
	ud := ev.id != nil && ev.id.qp_type == C.IBV_QPT_UD
	if !ud {
		p := C.cm_event_conn(ev)
		e.conn = rdmacm.ConnParam{PrivateData: C.GoBytes(p.private_data, C.int(p.private_data_len)),
			ResponderResources: uint8(p.responder_resources), InitiatorDepth: uint8(p.initiator_depth),
			FlowControl: uint8(p.flow_control), RetryCount: uint8(p.retry_count), RNRRetryCount: uint8(p.rnr_retry_count),
			SRQ: uint8(p.srq), QPNum: uint32(p.qp_num)}
		return
	}
	p := C.cm_event_ud(ev)
	e.ud = rdmacm.UDParam{AHAttr: fromAHAttr(&p.ah_attr), QPNum: uint32(p.qp_num), QKey: uint32(p.qkey)}
	switch e.typ {
	case rdmacm.EventMulticastJoin, rdmacm.EventMulticastError:
		e.mcCtx = mcValue(uintptr(p.private_data))
	default:
		e.ud.PrivateData = C.GoBytes(p.private_data, C.int(p.private_data_len))
	}
}

func (e *cmEvent) Type() rdmacm.EventType { return e.typ }
func (e *cmEvent) Status() int            { return e.status }
func (e *cmEvent) MulticastContext() any  { return e.mcCtx }

// ID is event->id.
func (e *cmEvent) ID() rdmacm.ID {
	if e.id == nil {
		return nil
	}
	return e.id
}

// ListenID is event->listen_id.
func (e *cmEvent) ListenID() rdmacm.ID {
	if e.listen == nil {
		return nil
	}
	return e.listen
}

// Conn is event->param.conn, its private data copied.
func (e *cmEvent) Conn() rdmacm.ConnParam {
	c := e.conn
	c.PrivateData = append([]byte(nil), c.PrivateData...)
	return c
}

// UD is event->param.ud, its private data copied.
func (e *cmEvent) UD() rdmacm.UDParam {
	u := e.ud
	u.PrivateData = append([]byte(nil), u.PrivateData...)
	return u
}

// Ack is rdma_ack_cm_event; a second Ack is EINVAL, and so is the Ack of a
// synchronous ID's event, which librdmacm acknowledges itself.
func (e *cmEvent) Ack() error {
	const verb = "rdma_ack_cm_event"
	if e == nil {
		return einval(verb + " (nil event)")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.acked:
		return einval(verb + " (acknowledged already)")
	case e.ownedByLib:
		return einval(verb + " (a synchronous ID's event: librdmacm acknowledges it)")
	}
	if rc, err := C.rdma_ack_cm_event(e.ev); rc != 0 {
		return rcErrno(verb, rc, err)
	}
	e.acked = true
	if e.counted != nil {
		e.counted.evs.ack(1)
	}
	return nil
}

// cmContext returns the device context of c, which librdmacm opened, as
// the binding's object (made once).
func cmContext(c *C.struct_ibv_context) *devContext {
	if c == nil {
		return nil
	}
	if v, ok := cmContexts.Load(c); ok {
		return v.(*devContext)
	}
	devs.once.Do(loadDevices)
	var dev *device
	for _, d := range devs.list {
		if d.d == c.device {
			dev = d
		}
	}
	if dev == nil {
		dev = &device{d: c.device, name: C.GoString(C.ibv_get_device_name(c.device)), guid: beToHost64(uint64(C.ibv_get_device_guid(c.device)))}
	}
	_ = C.cv_set_nonblock_fd(c.async_fd)
	x := &devContext{c: c, dev: dev}
	v, loaded := cmContexts.LoadOrStore(c, x)
	if !loaded {
		cmOwned.Store(unsafe.Pointer(c), struct{}{})
	}
	return v.(*devContext)
}

// cmPD returns the C PD of pd (nil for nil), false for a PD of another
// implementation or a destroyed one.
func cmPD(x verbs.PD) (*C.struct_ibv_pd, bool) {
	if x == nil {
		return nil, true
	}
	p, ok := x.(*pd)
	if !ok || p == nil {
		return nil, false
	}
	if p.lock("rdma_cm (pd)") != nil {
		return nil, false
	}
	defer p.mu.Unlock()
	return p.p, true
}

// cmIPOf is a's C form (family 0 for the zero AddrPort).
func cmIPOf(a netip.AddrPort) C.cm_ip {
	var out C.cm_ip
	ip := a.Addr()
	switch {
	case !ip.IsValid():
		return out
	case ip.Is4():
		out.family = 4
		b := ip.As4()
		for i := range b {
			out.ip[i] = C.uint8_t(b[i])
		}
	default:
		out.family = 6
		b := ip.As16()
		for i := range b {
			out.ip[i] = C.uint8_t(b[i])
		}
	}
	out.port = C.uint16_t(a.Port())
	return out
}

// goAddrPort is the Go form of a C address (the zero AddrPort for none).
func goAddrPort(a *C.cm_ip) netip.AddrPort {
	var ip netip.Addr
	switch a.family {
	case 4:
		ip = netip.AddrFrom4([4]byte{byte(a.ip[0]), byte(a.ip[1]), byte(a.ip[2]), byte(a.ip[3])})
	case 6:
		var b [16]byte
		for i := range b {
			b[i] = byte(a.ip[i])
		}
		ip = netip.AddrFrom16(b)
	default:
		return netip.AddrPort{}
	}
	return netip.AddrPortFrom(ip, uint16(a.port))
}
