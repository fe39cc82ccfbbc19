//go:build cgo && linux

package cverbs

/*
#include "cverbs.h"
*/
import "C"

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"syscall"
	"unsafe"

	"github.com/verbsim/verbsim/verbs"
)

// life is what every object has: its context, and whether it was destroyed.
// An object of a closed context, or a destroyed one, never reaches C again.
type life struct {
	mu   sync.Mutex
	ctx  *devContext
	dead bool
}

// lock takes the object's lock if it is alive; otherwise it returns EINVAL
// naming verb, unlocked.
func (l *life) lock(verb string) error {
	l.mu.Lock()
	if l.dead || l.ctx.closed.Load() {
		l.mu.Unlock()
		return einval(verb)
	}
	return nil
}

func (l *life) owner() *devContext { return l.ctx }

// kill marks the object destroyed, as closing its context does.
func (l *life) kill() {
	l.mu.Lock()
	l.dead = true
	l.mu.Unlock()
}

// owned is what the registry holds.
type owned interface {
	owner() *devContext
	kill()
}

// track records a new object in the registry under its C address.
func track(p unsafe.Pointer, o owned) { registry.Store(p, o) }

// forget removes a destroyed object from the registry.
func forget(p unsafe.Pointer) { registry.Delete(p) }

// closed marks every object of c destroyed once c is closed: the device's
// close destroyed them (the drop-in library does; the kernel does when the
// device file closes), and pinned MR buffers are released.
func (c *devContext) closeObjects() {
	registry.Range(func(k, v any) bool {
		if o := v.(owned); o.owner() == c {
			o.kill()
			registry.Delete(k)
		}
		return true
	})
}

// events counts the events read for an object and those acknowledged, so
// that a destroy can wait for the acknowledgements with a bound (libibverbs'
// destroys wait without one) and an acknowledgement of more than was read
// is refused.
type events struct {
	mu          sync.Mutex
	read, acked int
	changed     chan struct{}
}

func (e *events) got() {
	e.mu.Lock()
	e.read++
	e.mu.Unlock()
}

func (e *events) ack(n int) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if n < 0 || e.acked+n > e.read {
		return false
	}
	e.acked += n
	if e.changed != nil {
		close(e.changed)
		e.changed = nil
	}
	return true
}

// settled waits until every event read is acknowledged, or ctx ends.
func (e *events) settled(ctx context.Context) error {
	for {
		e.mu.Lock()
		if e.acked == e.read {
			e.mu.Unlock()
			return nil
		}
		if e.changed == nil {
			e.changed = make(chan struct{})
		}
		ch := e.changed
		e.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// AllocPD is ibv_alloc_pd.
func (c *devContext) AllocPD() (verbs.PD, error) {
	if err := c.live("ibv_alloc_pd"); err != nil {
		return nil, err
	}
	p, err := C.ibv_alloc_pd(c.c)
	if p == nil {
		return nil, errOf("ibv_alloc_pd", err)
	}
	x := &pd{life: life{ctx: c}, p: p, handle: uint32(p.handle)}
	track(unsafe.Pointer(p), x)
	return x, nil
}

// pd is a struct ibv_pd.
type pd struct {
	life
	p      *C.struct_ibv_pd
	handle uint32
}

func (p *pd) Context() verbs.Context { return p.ctx }
func (p *pd) Handle() uint32         { return p.handle }

// Dealloc is ibv_dealloc_pd.
func (p *pd) Dealloc() error {
	if err := p.lock("ibv_dealloc_pd"); err != nil {
		return err
	}
	defer p.mu.Unlock()
	if rc, e := C.ibv_dealloc_pd(p.p); rc != 0 {
		return rcErrno("ibv_dealloc_pd", rc, e)
	}
	p.dead = true
	forget(unsafe.Pointer(p.p))
	return nil
}

// RegMR is ibv_reg_mr over buf itself, pinned until Dereg.
func (p *pd) RegMR(buf []byte, access verbs.AccessFlags) (verbs.MR, error) {
	if err := p.lock("ibv_reg_mr"); err != nil {
		return nil, err
	}
	defer p.mu.Unlock()
	m := &mr{life: life{ctx: p.ctx}, pd: p}
	addr, pin := pinned(buf)
	r, err := C.cv_reg_mr(p.p, addr, C.size_t(len(buf)), C.int(access))
	if r == nil {
		pin.Unpin()
		return nil, errOf("ibv_reg_mr", err)
	}
	m.pin = pin
	m.m = r
	m.buf = buf
	m.fields()
	track(unsafe.Pointer(r), m)
	if SimHooks() {
		return &hookMR{m}, nil
	}
	return m, nil
}

// AdviseMR is ibv_advise_mr (verbs.MRAdviser). The SGEs are copied to C
// memory's layout, struct ibv_sge.
func (p *pd) AdviseMR(advice verbs.AdviseMRAdvice, flags verbs.AdviseMRFlags, sgl []verbs.SGE) error {
	if err := p.lock("ibv_advise_mr"); err != nil {
		return err
	}
	defer p.mu.Unlock()
	var first *C.struct_ibv_sge
	if len(sgl) > 0 {
		cs := make([]C.struct_ibv_sge, len(sgl))
		for i, s := range sgl {
			cs[i] = C.struct_ibv_sge{addr: C.uint64_t(s.Addr), length: C.uint32_t(s.Length), lkey: C.uint32_t(s.LKey)}
		}
		first = &cs[0]
	}
	if rc := C.cv_advise_mr(p.p, C.uint32_t(advice), C.uint32_t(flags), first, C.uint32_t(len(sgl))); rc != 0 {
		return rcErr("ibv_advise_mr", rc)
	}
	return nil
}

var _ verbs.MRAdviser = (*pd)(nil)

// mr is a struct ibv_mr; buf is the pinned Go memory it covers.
type mr struct {
	life
	m   *C.struct_ibv_mr
	pd  *pd
	buf []byte
	pin *runtime.Pinner

	lkey, rkey   uint32
	addr, length uint64
}

func (m *mr) fields() {
	if m.m == nil {
		return
	}
	m.lkey, m.rkey = uint32(m.m.lkey), uint32(m.m.rkey)
	m.addr, m.length = uint64(uintptr(m.m.addr)), uint64(m.m.length)
}

func (m *mr) LKey() uint32   { m.mu.Lock(); defer m.mu.Unlock(); return m.lkey }
func (m *mr) RKey() uint32   { m.mu.Lock(); defer m.mu.Unlock(); return m.rkey }
func (m *mr) Addr() uint64   { m.mu.Lock(); defer m.mu.Unlock(); return m.addr }
func (m *mr) Length() uint64 { m.mu.Lock(); defer m.mu.Unlock(); return m.length }

// pinned returns the address of buf's first byte (nil for an empty buf),
// pinned so that C may keep it.
func pinned(buf []byte) (unsafe.Pointer, *runtime.Pinner) {
	pin := new(runtime.Pinner)
	if len(buf) == 0 {
		return nil, pin
	}
	addr := unsafe.Pointer(&buf[0])
	pin.Pin(addr)
	return addr, pin
}

// Rereg is ibv_rereg_mr (verbs.MRReregisterer). With
// IBV_REREG_MR_CHANGE_TRANSLATION the new buffer is pinned, and the old one
// released once the MR no longer covers it.
func (m *mr) Rereg(flags verbs.ReregFlags, newPD verbs.PD, buf []byte, access verbs.AccessFlags) error {
	var cpd *C.struct_ibv_pd
	if newPD != nil {
		p, ok := newPD.(*pd)
		if !ok {
			return &verbs.ReregError{Failure: verbs.ReregErrInput, Err: einval("ibv_rereg_mr (a PD of another implementation)")}
		}
		if err := p.lock("ibv_rereg_mr (a deallocated PD)"); err != nil {
			// C cannot be handed a freed PD; the kernel would fail the
			// command on its stale handle.
			return &verbs.ReregError{Failure: verbs.ReregErrCmd, Err: err}
		}
		cpd = p.p
		p.mu.Unlock()
	}
	if err := m.lock("ibv_rereg_mr"); err != nil {
		return &verbs.ReregError{Failure: verbs.ReregErrInput, Err: err}
	}
	defer m.mu.Unlock()
	var addr unsafe.Pointer
	pin := new(runtime.Pinner)
	if flags&verbs.ReregChangeTranslation != 0 {
		addr, pin = pinned(buf)
	}
	rc, err := C.ibv_rereg_mr(m.m, C.int(flags), cpd, addr, C.size_t(len(buf)), C.int(access))
	m.fields()
	if rc != 0 {
		pin.Unpin()
		return &verbs.ReregError{Failure: verbs.ReregFailure(rc), Err: errOf("ibv_rereg_mr", err)}
	}
	if flags&verbs.ReregChangeTranslation != 0 {
		m.pin.Unpin()
		m.pin, m.buf = pin, buf
	}
	return nil
}

// Dereg is ibv_dereg_mr; the buffer is unpinned once it succeeds.
func (m *mr) Dereg() error {
	if err := m.lock("ibv_dereg_mr"); err != nil {
		return err
	}
	defer m.mu.Unlock()
	if rc, e := C.ibv_dereg_mr(m.m); rc != 0 {
		return rcErrno("ibv_dereg_mr", rc, e)
	}
	m.dead = true
	m.pin.Unpin()
	m.buf = nil
	forget(unsafe.Pointer(m.m))
	return nil
}

// kill marks the MR deregistered and unpins its buffer.
func (m *mr) kill() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.dead {
		m.dead = true
		m.pin.Unpin()
		m.buf = nil
	}
}

// cMR returns the C MR behind a verbs.MR of this binding; nil for nil;
// ok is false for a foreign or deregistered MR.
func cMR(x verbs.MR) (*C.struct_ibv_mr, bool) {
	if x == nil {
		return nil, true
	}
	var m *mr
	switch o := x.(type) {
	case *mr:
		m = o
	case *hookMR:
		m = o.mr
	default:
		return nil, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.dead {
		return nil, false
	}
	return m.m, true
}

// AllocMW is ibv_alloc_mw.
func (p *pd) AllocMW(typ verbs.MWType) (verbs.MW, error) {
	if err := p.lock("ibv_alloc_mw"); err != nil {
		return nil, err
	}
	defer p.mu.Unlock()
	w, err := C.cv_alloc_mw(p.p, C.int(typ))
	if w == nil {
		return nil, errOf("ibv_alloc_mw", err)
	}
	x := &mw{life: life{ctx: p.ctx}, w: w, typ: typ, rkey: uint32(w.rkey)}
	track(unsafe.Pointer(w), x)
	return x, nil
}

// mw is a struct ibv_mw.
type mw struct {
	life
	w    *C.struct_ibv_mw
	typ  verbs.MWType
	rkey uint32
	// posted is set once a BIND_MW request for this type 2 window was
	// posted through this binding, whose key rkey then holds.
	posted bool
}

// RKey is ibv_mw.rkey, which ibv_bind_mw changes. For a type 2 window it
// is the key of the last BIND_MW request posted for it through this
// binding: the window's index with the low byte of the rkey the request
// named, which is all of it a bind takes (MW-05). C providers leave
// ibv_mw.rkey at the allocation's key when a BIND_MW request
// (ibv_post_send, ibv_wr_bind_mw) binds a type 2 window, and a C program
// keeps the key it chose itself; the verbs interface reports the window's
// key, as the simulator's handle does.
func (w *mw) RKey() uint32 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.dead && !w.ctx.closed.Load() && !w.posted {
		w.rkey = uint32(w.w.rkey)
	}
	return w.rkey
}

// boundTo records that a BIND_MW request with rkey was posted for x, if x
// is a type 2 window of this binding.
func boundTo(x verbs.MW, rkey uint32) {
	w, ok := x.(*mw)
	if !ok || w.typ != verbs.MWType2 {
		return
	}
	w.mu.Lock()
	w.rkey, w.posted = uint32(w.w.rkey)&^0xff|rkey&0xff, true
	w.mu.Unlock()
}

func (w *mw) Type() verbs.MWType { return w.typ }

// Dealloc is ibv_dealloc_mw.
func (w *mw) Dealloc() error {
	if err := w.lock("ibv_dealloc_mw"); err != nil {
		return err
	}
	defer w.mu.Unlock()
	w.rkey = uint32(w.w.rkey)
	if rc, e := C.cv_dealloc_mw(w.w); rc != 0 {
		return rcErrno("ibv_dealloc_mw", rc, e)
	}
	w.dead = true
	forget(unsafe.Pointer(w.w))
	return nil
}

func cMW(x verbs.MW) (*C.struct_ibv_mw, bool) {
	if x == nil {
		return nil, true
	}
	w, ok := x.(*mw)
	if !ok {
		return nil, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dead {
		return nil, false
	}
	return w.w, true
}

// CreateAH is ibv_create_ah.
func (p *pd) CreateAH(attr verbs.AHAttr) (verbs.AH, error) {
	if err := p.lock("ibv_create_ah"); err != nil {
		return nil, err
	}
	defer p.mu.Unlock()
	var a C.struct_ibv_ah_attr
	toAHAttr(&a, &attr)
	h, err := C.ibv_create_ah(p.p, &a)
	if h == nil {
		return nil, errOf("ibv_create_ah", err)
	}
	x := &ah{life: life{ctx: p.ctx}, h: h}
	track(unsafe.Pointer(h), x)
	return x, nil
}

func toAHAttr(a *C.struct_ibv_ah_attr, s *verbs.AHAttr) {
	a.dlid = C.uint16_t(s.DLID)
	a.sl = C.uint8_t(s.SL)
	a.src_path_bits = C.uint8_t(s.SrcPathBits)
	a.static_rate = C.uint8_t(s.StaticRate)
	if s.IsGlobal {
		a.is_global = 1
	}
	a.port_num = C.uint8_t(s.PortNum)
	C.cv_set_ah_gid(a, (*C.uint8_t)(unsafe.Pointer(&s.GRH.DGID[0])))
	a.grh.flow_label = C.uint32_t(s.GRH.FlowLabel)
	a.grh.sgid_index = C.uint8_t(s.GRH.SGIDIndex)
	a.grh.hop_limit = C.uint8_t(s.GRH.HopLimit)
	a.grh.traffic_class = C.uint8_t(s.GRH.TrafficClass)
}

func fromAHAttr(a *C.struct_ibv_ah_attr) verbs.AHAttr {
	var s verbs.AHAttr
	s.DLID = uint16(a.dlid)
	s.SL = uint8(a.sl)
	s.SrcPathBits = uint8(a.src_path_bits)
	s.StaticRate = uint8(a.static_rate)
	s.IsGlobal = a.is_global != 0
	s.PortNum = uint8(a.port_num)
	C.cv_get_ah_gid(a, (*C.uint8_t)(unsafe.Pointer(&s.GRH.DGID[0])))
	s.GRH.FlowLabel = uint32(a.grh.flow_label)
	s.GRH.SGIDIndex = uint8(a.grh.sgid_index)
	s.GRH.HopLimit = uint8(a.grh.hop_limit)
	s.GRH.TrafficClass = uint8(a.grh.traffic_class)
	return s
}

// ah is a struct ibv_ah.
type ah struct {
	life
	h *C.struct_ibv_ah
}

// Destroy is ibv_destroy_ah.
func (h *ah) Destroy() error {
	if err := h.lock("ibv_destroy_ah"); err != nil {
		return err
	}
	defer h.mu.Unlock()
	if rc, e := C.ibv_destroy_ah(h.h); rc != 0 {
		return rcErrno("ibv_destroy_ah", rc, e)
	}
	h.dead = true
	forget(unsafe.Pointer(h.h))
	return nil
}

func cAH(x verbs.AH) (*C.struct_ibv_ah, bool) {
	if x == nil {
		return nil, true
	}
	h, ok := x.(*ah)
	if !ok {
		return nil, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.dead {
		return nil, false
	}
	return h.h, true
}

// CreateCompChannel is ibv_create_comp_channel; its fd is made
// non-blocking (GetEvent waits in poll(2)).
func (c *devContext) CreateCompChannel() (verbs.CompChannel, error) {
	if err := c.live("ibv_create_comp_channel"); err != nil {
		return nil, err
	}
	ch, err := C.ibv_create_comp_channel(c.c)
	if ch == nil {
		return nil, errOf("ibv_create_comp_channel", err)
	}
	if rc := C.cv_set_nonblock_fd(ch.fd); rc != 0 {
		C.ibv_destroy_comp_channel(ch)
		return nil, rcErr("fcntl(O_NONBLOCK)", rc)
	}
	x := &channel{life: life{ctx: c}, ch: ch, fd: ch.fd}
	track(unsafe.Pointer(ch), x)
	return x.hooked(), nil
}

// channel is a struct ibv_comp_channel.
type channel struct {
	life
	ch *C.struct_ibv_comp_channel
	fd C.int
	// self is the object the program holds: ch, or the hookChannel
	// around it.
	self verbs.CompChannel
}

func (ch *channel) Context() verbs.Context { return ch.ctx }

// GetEvent is ibv_get_cq_event, waiting in poll(2) until an event comes or
// ctx ends.
func (ch *channel) GetEvent(ctx context.Context) (verbs.CQ, any, error) {
	for {
		q, c, err := ch.TryGetEvent()
		if !errors.Is(err, syscall.EAGAIN) {
			return q, c, err
		}
		if err := waitReadable("ibv_get_cq_event", ctx, ch.fd); err != nil {
			return nil, nil, err
		}
	}
}

// TryGetEvent is ibv_get_cq_event on the non-blocking descriptor.
func (ch *channel) TryGetEvent() (verbs.CQ, any, error) {
	if err := ch.lock("ibv_get_cq_event"); err != nil {
		return nil, nil, err
	}
	var p *C.struct_ibv_cq
	var cctx unsafe.Pointer
	rc, err := C.ibv_get_cq_event(ch.ch, &p, &cctx)
	ch.mu.Unlock()
	if rc != 0 {
		return nil, nil, errOf("ibv_get_cq_event", err)
	}
	v, ok := registry.Load(unsafe.Pointer(p))
	if !ok {
		return nil, nil, &Error{Verb: "ibv_get_cq_event (an unknown CQ)", Errno: syscall.EIO}
	}
	q := v.(*cq)
	q.comp.got()
	return q.self, q.cqContext, nil
}

// Destroy is ibv_destroy_comp_channel.
func (ch *channel) Destroy() error {
	if err := ch.lock("ibv_destroy_comp_channel"); err != nil {
		return err
	}
	defer ch.mu.Unlock()
	if rc, e := C.ibv_destroy_comp_channel(ch.ch); rc != 0 {
		return rcErrno("ibv_destroy_comp_channel", rc, e)
	}
	ch.dead = true
	forget(unsafe.Pointer(ch.ch))
	return nil
}

// CreateCQ is ibv_create_cq.
func (c *devContext) CreateCQ(cqe int, cqContext any, ch verbs.CompChannel, compVector int) (verbs.CQ, error) {
	if err := c.live("ibv_create_cq"); err != nil {
		return nil, err
	}
	var cch *C.struct_ibv_comp_channel
	var gch *channel
	if ch != nil {
		var ok bool
		if gch, ok = channelOf(ch); !ok {
			return nil, einval("ibv_create_cq (a channel of another implementation)")
		}
		if err := gch.lock("ibv_create_cq (a destroyed channel)"); err != nil {
			return nil, err
		}
		cch = gch.ch
		gch.mu.Unlock()
	}
	if cqe < 0 || compVector < 0 || cqe > 1<<31-1 || compVector > 1<<31-1 {
		return nil, einval("ibv_create_cq")
	}
	p, err := C.ibv_create_cq(c.c, C.int(cqe), nil, cch, C.int(compVector))
	if p == nil {
		return nil, errOf("ibv_create_cq", err)
	}
	q := &cq{life: life{ctx: c}, c: p, cqContext: cqContext, cqe: int(p.cqe)}
	q.self = q
	if SimHooks() {
		q.self = q.hooked()
	}
	if gch != nil {
		q.ch = gch
	}
	track(unsafe.Pointer(p), q)
	return q.self, nil
}

// cq is a struct ibv_cq. wc is C memory for ibv_poll_cq.
type cq struct {
	life
	c         *C.struct_ibv_cq
	cqContext any
	ch        *channel
	cqe       int

	wc *C.struct_ibv_wc

	// self is the object the program holds: q, or the exCQ around it.
	self verbs.CQ
	// ex is the struct ibv_cq_ex of a CQ made by ibv_create_cq_ex, with
	// the wc_flags it was asked for and the state of its poll iterator.
	ex         *C.struct_ibv_cq_ex
	wcFlags    verbs.WCExFlags
	inBatch    bool
	hasCurrent bool

	comp  events // completion events (ibv_get_cq_event, ibv_ack_cq_events)
	async events // CQ_ERR events (ibv_get_async_event, ibv_ack_async_event)
}

// pollBatch is how many completions one ibv_poll_cq call takes at most.
const pollBatch = 32

func (q *cq) Context() verbs.Context { return q.ctx }
func (q *cq) CQContext() any         { return q.cqContext }

// Channel is ibv_cq.channel.
func (q *cq) Channel() verbs.CompChannel {
	if q.ch == nil {
		return nil
	}
	return q.ch.self
}

// CQE is ibv_cq.cqe.
func (q *cq) CQE() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.cqe
}

// Poll is ibv_poll_cq, pollBatch completions per C call. A call that
// returns fewer completions than asked for, but some, is followed by one
// more for the rest of wcs: C cannot return completions and an error from
// one call, so a CQ in its error state after an overrun (CQ-23, the man
// page's reading) hands out its stored completions first and fails the
// next call with EIO; the second call gives the error with the
// completions, as the verbs interface's Poll does. It returns 0 (nothing
// more) on a CQ that is not in error.
func (q *cq) Poll(wcs []verbs.WC) (int, error) {
	if err := q.lock("ibv_poll_cq"); err != nil {
		return 0, err
	}
	defer q.mu.Unlock()
	if q.inBatch {
		return 0, &Error{Verb: "ibv_poll_cq (inside an ibv_start_poll batch)", Errno: syscall.EBUSY}
	}
	if q.wc == nil {
		q.wc = (*C.struct_ibv_wc)(C.calloc(pollBatch, C.size_t(unsafe.Sizeof(C.struct_ibv_wc{}))))
	}
	cw := unsafe.Slice(q.wc, pollBatch)
	n := 0
	for n < len(wcs) {
		want := min(len(wcs)-n, pollBatch)
		got, err := C.cv_poll_cq(q.c, C.int(want), q.wc)
		if got < 0 {
			if got < -1 {
				return n, rcErr("ibv_poll_cq", got)
			}
			return n, errOf("ibv_poll_cq", err)
		}
		for i := range int(got) {
			fromWC(&wcs[n+i], &cw[i])
		}
		n += int(got)
		if got == 0 {
			break
		}
	}
	return n, nil
}

func fromWC(w *verbs.WC, c *C.struct_ibv_wc) {
	*w = verbs.WC{
		WRID:         uint64(c.wr_id),
		Status:       verbs.WCStatus(c.status),
		Opcode:       verbs.WCOpcode(c.opcode),
		VendorErr:    uint32(c.vendor_err),
		ByteLen:      uint32(c.byte_len),
		ImmData:      *(*uint32)(unsafe.Pointer(&c.anon0)),
		QPNum:        uint32(c.qp_num),
		SrcQP:        uint32(c.src_qp),
		WCFlags:      verbs.WCFlags(c.wc_flags),
		PKeyIndex:    uint16(c.pkey_index),
		SLID:         uint16(c.slid),
		SL:           uint8(c.sl),
		DLIDPathBits: uint8(c.dlid_path_bits),
	}
}

// ReqNotify is ibv_req_notify_cq.
func (q *cq) ReqNotify(solicitedOnly bool) error {
	if err := q.lock("ibv_req_notify_cq"); err != nil {
		return err
	}
	defer q.mu.Unlock()
	s := C.int(0)
	if solicitedOnly {
		s = 1
	}
	rc, e := C.cv_req_notify_cq(q.c, s)
	return rcErrno("ibv_req_notify_cq", rc, e)
}

// AckEvents is ibv_ack_cq_events; acknowledging a negative number, or more
// events than were read and not yet acknowledged, is EINVAL.
func (q *cq) AckEvents(n int) error {
	if err := q.lock("ibv_ack_cq_events"); err != nil {
		return err
	}
	defer q.mu.Unlock()
	if n > 1<<31-1 || !q.comp.ack(n) {
		return einval("ibv_ack_cq_events")
	}
	if n > 0 {
		C.ibv_ack_cq_events(q.c, C.uint(n))
	}
	return nil
}

// Resize is ibv_resize_cq.
func (q *cq) Resize(cqe int) error {
	if err := q.lock("ibv_resize_cq"); err != nil {
		return err
	}
	defer q.mu.Unlock()
	if cqe < 0 || cqe > 1<<31-1 {
		return einval("ibv_resize_cq")
	}
	if q.inBatch {
		return &Error{Verb: "ibv_resize_cq (inside an ibv_start_poll batch)", Errno: syscall.EBUSY}
	}
	if rc, e := C.ibv_resize_cq(q.c, C.int(cqe)); rc != 0 {
		return rcErrno("ibv_resize_cq", rc, e)
	}
	q.cqe = int(q.c.cqe)
	return nil
}

// Destroy is ibv_destroy_cq once every event read for the CQ is
// acknowledged, waiting for that as long as it takes.
func (q *cq) Destroy() error { return q.DestroyContext(context.Background()) }

// DestroyContext is ibv_destroy_cq once every event read for the CQ is
// acknowledged, waiting for that until ctx ends.
func (q *cq) DestroyContext(ctx context.Context) error {
	if err := q.lock("ibv_destroy_cq"); err != nil {
		return err
	}
	q.mu.Unlock()
	for _, e := range []*events{&q.comp, &q.async} {
		if err := e.settled(ctx); err != nil {
			return interrupted("ibv_destroy_cq", ctx)
		}
	}
	if err := q.lock("ibv_destroy_cq"); err != nil {
		return err
	}
	defer q.mu.Unlock()
	if q.inBatch {
		C.cv_end_poll(q.ex)
		q.inBatch, q.hasCurrent = false, false
	}
	if rc, e := C.ibv_destroy_cq(q.c); rc != 0 {
		return rcErrno("ibv_destroy_cq", rc, e)
	}
	q.dead = true
	forget(unsafe.Pointer(q.c))
	if q.wc != nil {
		C.free(unsafe.Pointer(q.wc))
		q.wc = nil
	}
	return nil
}

func cCQ(x verbs.CQ) (*C.struct_ibv_cq, bool) {
	if x == nil {
		return nil, true
	}
	var q *cq
	switch o := x.(type) {
	case *cq:
		q = o
	case *exCQ:
		q = o.cq
	case *hookCQ:
		q = o.cq
	case *hookExCQ:
		q = o.cq
	default:
		return nil, false
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.dead {
		return nil, false
	}
	return q.c, true
}

// GetAsyncEvent is ibv_get_async_event, waiting in poll(2) until an event
// comes or ctx ends.
func (c *devContext) GetAsyncEvent(ctx context.Context) (verbs.AsyncEvent, error) {
	for {
		ev, err := c.TryGetAsyncEvent()
		if !errors.Is(err, syscall.EAGAIN) {
			return ev, err
		}
		if err := waitReadable("ibv_get_async_event", ctx, c.c.async_fd); err != nil {
			return nil, err
		}
	}
}

// TryGetAsyncEvent is ibv_get_async_event on the non-blocking async_fd.
func (c *devContext) TryGetAsyncEvent() (verbs.AsyncEvent, error) {
	if err := c.live("ibv_get_async_event"); err != nil {
		return nil, err
	}
	ev := &asyncEvent{ctx: c}
	rc, err := C.ibv_get_async_event(c.c, &ev.ev)
	if rc != 0 {
		return nil, errOf("ibv_get_async_event", err)
	}
	ev.typ = verbs.EventType(ev.ev.event_type)
	var port C.int
	p := C.cv_event_element(&ev.ev, &port)
	ev.port = uint8(port)
	if p != nil {
		v, _ := registry.Load(p)
		switch o := v.(type) {
		case *cq:
			ev.cq, ev.counter = o.self, &o.async
		case *qp:
			ev.qp, ev.counter = o.self, &o.async
		case *srq:
			ev.srq, ev.counter = o, &o.async
		}
		if ev.counter != nil {
			ev.counter.got()
		}
	}
	return ev, nil
}

// asyncEvent is a struct ibv_async_event.
type asyncEvent struct {
	ctx     *devContext
	ev      C.struct_ibv_async_event
	typ     verbs.EventType
	port    uint8
	cq      verbs.CQ
	qp      verbs.QP
	srq     *srq
	counter *events

	mu    sync.Mutex
	acked bool
}

func (e *asyncEvent) EventType() verbs.EventType { return e.typ }
func (e *asyncEvent) Port() uint8                { return e.port }

// CQ is element.cq, or nil.
func (e *asyncEvent) CQ() verbs.CQ { return e.cq }

// QP is element.qp, or nil.
func (e *asyncEvent) QP() verbs.QP { return e.qp }

// SRQ is element.srq, or nil.
func (e *asyncEvent) SRQ() verbs.SRQ {
	if e.srq == nil {
		return nil
	}
	return e.srq.self
}

// Ack is ibv_ack_async_event; a second Ack is EINVAL.
func (e *asyncEvent) Ack() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.acked || e.ctx.closed.Load() {
		return einval("ibv_ack_async_event")
	}
	C.ibv_ack_async_event(&e.ev)
	e.acked = true
	if e.counter != nil {
		e.counter.ack(1)
	}
	return nil
}
