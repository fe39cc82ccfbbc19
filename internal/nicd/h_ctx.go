//go:build linux

package nicd

import (
	"context"
	"errors"
	"sync"
	"syscall"

	"github.com/verbsim/verbsim/internal/cabi"
	"github.com/verbsim/verbsim/internal/evfeed"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// Devices, contexts, queries, async events, PDs, AHs and completion
// channels.

func init() {
	handlers[opDevices] = hDevices
	handlers[opOpen] = hOpen
	handlers[opClose] = hClose
	handlers[opQueryDevice] = hQueryDevice
	handlers[opQueryDeviceEx] = hQueryDeviceEx
	handlers[opQueryPort] = hQueryPort
	handlers[opQueryGID] = hQueryGID
	handlers[opQueryPKey] = hQueryPKey
	handlers[opGetAsync] = hGetAsync
	handlers[opAckAsync] = hAckAsync
	handlers[opAckPortEvent] = hAckPortEvent
	handlers[opAllocPD] = hAllocPD
	handlers[opDeallocPD] = hDeallocPD
	handlers[opCreateAH] = hCreateAH
	handlers[opDestroyAH] = hDestroyAH
	handlers[opCreateChannel] = hCreateChannel
	handlers[opDestroyChannel] = hDestroyChannel
	handlers[opChanGet] = hChanGet
}

// device returns the device of index i, or nil.
func (s *Server) device(i uint64) *sim.Device {
	devs := s.fab.Devices()
	if i >= uint64(len(devs)) {
		return nil
	}
	return devs[i]
}

func hDevices(c *conn, r *req, body []byte, fds []int) (reply, error) {
	devs := c.s.srv.fab.Devices()
	out := c.outBody(len(devs) * cabi.Size[devInfo]())
	for i, d := range devs {
		var di devInfo
		copy(di.Name[:len(di.Name)-1], d.Name())
		di.GUID = d.GUID()
		copy(out[i*cabi.Size[devInfo]():], cabi.Bytes(&di))
	}
	return reply{v: uint64(len(devs)), body: out}, nil
}

func hOpen(c *conn, r *req, body []byte, fds []int) (reply, error) {
	d := c.s.srv.device(r.A)
	if d == nil {
		return reply{}, syscall.ENODEV
	}
	sig, err := newSignal(fds)
	if err != nil {
		return reply{}, err
	}
	ctx, err := d.Open()
	if err != nil {
		sig.close()
		return reply{}, err
	}
	o := &ctxObj{c: ctx, se: c.s, sig: sig}
	o.start()
	var h uint64
	h = c.s.add(o, rankContext, o, func(cc context.Context) error { return c.s.closeCtx(h, o, cc) })
	return reply{v: h, w: uint64(ctx.NumCompVectors())}, nil
}

// closeCtx closes a context, destroying what it left first.
func (se *session) closeCtx(h uint64, o *ctxObj, cc context.Context) error {
	if err := o.c.Close(); err != nil {
		if !errors.Is(err, syscall.EBUSY) {
			return err
		}
		se.orphans(o, cc)
		if err := o.c.Close(); err != nil {
			return err
		}
	}
	o.stop()
	se.drop(h)
	return nil
}

func hClose(c *conn, r *req, body []byte, fds []int) (reply, error) {
	o := get[ctxObj](c.s, r.Obj)
	if o == nil {
		return reply{}, einval("ibv_close_device")
	}
	return reply{}, c.s.closeCtx(r.Obj, o, c.ctx)
}

func hQueryDevice(c *conn, r *req, body []byte, fds []int) (reply, error) {
	o := get[ctxObj](c.s, r.Obj)
	if o == nil {
		return reply{}, einval("ibv_query_device")
	}
	a, err := o.c.QueryDevice()
	if err != nil {
		return reply{}, err
	}
	var ca cabi.DeviceAttr
	ca.Set(&a)
	out := c.outBody(cabi.Size[cabi.DeviceAttr]())
	copy(out, cabi.Bytes(&ca))
	return reply{body: out}, nil
}

func hQueryDeviceEx(c *conn, r *req, body []byte, fds []int) (reply, error) {
	o := get[ctxObj](c.s, r.Obj)
	if o == nil {
		return reply{}, einval("ibv_query_device_ex")
	}
	a, err := o.c.QueryDeviceEx(0)
	if err != nil {
		return reply{}, err
	}
	var ca cabi.DeviceAttrEx
	ca.Set(&a)
	out := c.outBody(cabi.Size[cabi.DeviceAttrEx]())
	copy(out, cabi.Bytes(&ca))
	return reply{body: out}, nil
}

func hQueryPort(c *conn, r *req, body []byte, fds []int) (reply, error) {
	o := get[ctxObj](c.s, r.Obj)
	if o == nil {
		return reply{}, einval("ibv_query_port")
	}
	a, err := o.c.QueryPort(uint8(r.A))
	if err != nil {
		return reply{}, err
	}
	var ca cabi.PortAttr
	ca.Set(&a)
	out := c.outBody(cabi.Size[cabi.PortAttr]())
	copy(out, cabi.Bytes(&ca))
	return reply{body: out}, nil
}

// hQueryGID is ibv_query_gid (a the port) or, with bit 32 of a set,
// ibv_query_gid_ex (v the GID's type), which fails for an empty entry.
func hQueryGID(c *conn, r *req, body []byte, fds []int) (reply, error) {
	o := get[ctxObj](c.s, r.Obj)
	if o == nil {
		return reply{}, einval("ibv_query_gid")
	}
	out := c.outBody(16)
	if r.A>>32 == 0 {
		g, err := o.c.QueryGID(uint8(r.A), int(int32(r.B)))
		if err != nil {
			return reply{}, err
		}
		copy(out, g[:])
		return reply{body: out}, nil
	}
	e, err := o.c.QueryGIDEx(uint32(r.A), uint32(r.B), 0)
	if err != nil {
		return reply{}, err
	}
	copy(out, e.GID[:])
	return reply{v: uint64(e.GIDType), body: out}, nil
}

func hQueryPKey(c *conn, r *req, body []byte, fds []int) (reply, error) {
	o := get[ctxObj](c.s, r.Obj)
	if o == nil {
		return reply{}, einval("ibv_query_pkey")
	}
	k, err := o.c.QueryPKey(uint8(r.A), int(r.B))
	if err != nil {
		return reply{}, err
	}
	return reply{v: uint64(k)}, nil
}

// hGetAsync takes the oldest async event for ibv_get_async_event, or
// returns EAGAIN. With a set (a non-blocking descriptor about to say
// EAGAIN) it first moves the events the engine has raised and the pump
// not yet moved (evfeed).
func hGetAsync(c *conn, r *req, body []byte, fds []int) (reply, error) {
	o := get[ctxObj](c.s, r.Obj)
	if o == nil {
		return reply{}, einval("ibv_get_async_event")
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.queue) == 0 && r.A != 0 {
		o.feed.SyncLocked()
	}
	if len(o.queue) == 0 {
		return reply{}, syscall.EAGAIN
	}
	ev := o.queue[0]
	o.queue = o.queue[1:]
	if len(o.queue) == 0 {
		o.sig.clear()
	}
	o.out = append(o.out, ev)
	var cptr uint64
	if obj := evfeed.Object(ev); obj != nil {
		cptr = c.s.cptrOf(obj)
	}
	return reply{v: uint64(ev.Type()) | uint64(ev.Port())<<32, w: cptr}, nil
}

func hAckAsync(c *conn, r *req, body []byte, fds []int) (reply, error) {
	o := get[ctxObj](c.s, r.Obj)
	if o == nil {
		return reply{}, einval("ibv_ack_async_event")
	}
	typ, port, cptr := verbs.EventType(uint32(r.A)), uint8(r.A>>32), r.B
	o.mu.Lock()
	defer o.mu.Unlock()
	for i, ev := range o.out {
		if ev.Type() != typ {
			continue
		}
		if obj := evfeed.Object(ev); obj != nil && c.s.cptrOf(obj) != cptr {
			continue
		} else if obj == nil && ev.Port() != port {
			continue
		}
		o.out = append(o.out[:i], o.out[i+1:]...)
		return reply{}, ev.Ack()
	}
	return reply{}, syscall.EINVAL
}

// hAckPortEvent acknowledges a port event, which names no object and so
// no context: the first open context of the process with one of that
// type and port outstanding takes the ack.
func hAckPortEvent(c *conn, r *req, body []byte, fds []int) (reply, error) {
	typ, port := verbs.EventType(uint32(r.A)), uint8(r.B)
	c.s.mu.Lock()
	var ctxs []*ctxObj
	for _, e := range c.s.objs {
		if o, ok := e.v.(*ctxObj); ok {
			ctxs = append(ctxs, o)
		}
	}
	c.s.mu.Unlock()
	for _, o := range ctxs {
		o.mu.Lock()
		for i, ev := range o.out {
			if evfeed.Object(ev) == nil && ev.Type() == typ && ev.Port() == port {
				o.out = append(o.out[:i], o.out[i+1:]...)
				o.mu.Unlock()
				return reply{}, ev.Ack()
			}
		}
		o.mu.Unlock()
	}
	return reply{}, nil
}

// pdObj is a protection domain; bounce is the MR in the daemon's memory
// that inline payloads are copied to (post.go).
type pdObj struct {
	pd     *sim.PD
	ctx    *ctxObj
	mu     sync.Mutex // the bounce buffer
	bounce *sim.MR
	bbuf   []byte
}

func hAllocPD(c *conn, r *req, body []byte, fds []int) (reply, error) {
	o := get[ctxObj](c.s, r.Obj)
	if o == nil {
		return reply{}, einval("ibv_alloc_pd")
	}
	pd, err := o.c.AllocPD()
	if err != nil {
		return reply{}, err
	}
	p := &pdObj{pd: pd, ctx: o}
	var h uint64
	h = c.s.add(o, rankPD, p, func(context.Context) error { return c.s.deallocPD(h, p) })
	return reply{v: h, w: uint64(pd.Handle())}, nil
}

func (se *session) deallocPD(h uint64, p *pdObj) error {
	if p.bounce != nil {
		if err := p.bounce.Dereg(); err != nil {
			return err
		}
	}
	if err := p.pd.Dealloc(); err != nil {
		if p.bounce != nil { // put the bounce MR back, so the PD is as it was
			p.bounce, _ = p.pd.RegMR(p.bbuf, 0)
		}
		return err
	}
	se.drop(h)
	return nil
}

func hDeallocPD(c *conn, r *req, body []byte, fds []int) (reply, error) {
	p := get[pdObj](c.s, r.Obj)
	if p == nil {
		return reply{}, einval("ibv_dealloc_pd")
	}
	return reply{}, c.s.deallocPD(r.Obj, p)
}

type ahObj struct{ ah *sim.AH }

func hCreateAH(c *conn, r *req, body []byte, fds []int) (reply, error) {
	p := get[pdObj](c.s, r.Obj)
	a, ok := cabi.Read[cabi.AHAttr](body)
	if p == nil || !ok {
		return reply{}, einval("ibv_create_ah")
	}
	ah, err := p.pd.CreateAH(a.Verbs())
	if err != nil {
		return reply{}, err
	}
	o := &ahObj{ah: ah}
	var h uint64
	h = c.s.add(p.ctx, rankMR, o, func(context.Context) error { return c.s.destroyAH(h, o) })
	return reply{v: h}, nil
}

func (se *session) destroyAH(h uint64, o *ahObj) error {
	if err := o.ah.Destroy(); err != nil {
		return err
	}
	se.drop(h)
	return nil
}

func hDestroyAH(c *conn, r *req, body []byte, fds []int) (reply, error) {
	o := get[ahObj](c.s, r.Obj)
	if o == nil {
		return reply{}, einval("ibv_destroy_ah")
	}
	return reply{}, c.s.destroyAH(r.Obj, o)
}

func hCreateChannel(c *conn, r *req, body []byte, fds []int) (reply, error) {
	o := get[ctxObj](c.s, r.Obj)
	if o == nil {
		return reply{}, einval("ibv_create_comp_channel")
	}
	sig, err := newSignal(fds)
	if err != nil {
		return reply{}, err
	}
	ch, err := o.c.CreateCompChannel()
	if err != nil {
		sig.close()
		return reply{}, err
	}
	co := &chObj{ch: ch, sig: sig}
	co.start()
	var h uint64
	h = c.s.add(o, rankChannel, co, func(context.Context) error { return c.s.destroyChannel(h, co) })
	return reply{v: h}, nil
}

func (se *session) destroyChannel(h uint64, co *chObj) error {
	if err := co.ch.Destroy(); err != nil {
		return err
	}
	co.stop()
	se.drop(h)
	return nil
}

func hDestroyChannel(c *conn, r *req, body []byte, fds []int) (reply, error) {
	co := get[chObj](c.s, r.Obj)
	if co == nil {
		return reply{}, einval("ibv_destroy_comp_channel")
	}
	return reply{}, c.s.destroyChannel(r.Obj, co)
}

// hChanGet takes the oldest completion event for ibv_get_cq_event, or
// returns EAGAIN; a as for NICD_GET_ASYNC.
func hChanGet(c *conn, r *req, body []byte, fds []int) (reply, error) {
	co := get[chObj](c.s, r.Obj)
	if co == nil {
		return reply{}, einval("ibv_get_cq_event")
	}
	co.mu.Lock()
	defer co.mu.Unlock()
	if len(co.queue) == 0 && r.A != 0 {
		co.feed.SyncLocked()
	}
	if len(co.queue) == 0 {
		if co.ch.Destroyed() {
			return reply{}, syscall.EBADF
		}
		return reply{}, syscall.EAGAIN
	}
	q := co.queue[0]
	co.queue = co.queue[1:]
	if len(co.queue) == 0 {
		co.sig.clear()
	}
	q.mu.Lock()
	q.read++
	q.mu.Unlock()
	return reply{v: q.cptr}, nil
}
