//go:build cgo && linux

package cverbs

/*
#include "cverbs.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
	"unsafe"

	"github.com/verbsim/verbsim/verbs"
)

// The test hooks of verbsim's test-mode drop-in library (capi/build.sh
// --test-hooks; capi/verbsim_test.h), looked up once with dlvsym at their
// version node VERBSIM_TEST_1.
var simHooks struct {
	once sync.Once
	ok   bool
}

// SimHooks reports whether the libibverbs the process loaded is verbsim's
// test-mode library, whose test hooks back the simulator capabilities the
// conformance suite uses: then the CQs this binding makes also offer Push
// (completions added without traffic) and Ref/Unref (held as a QP holds
// them), its MRs offer Ref/Unref (held as a bound window holds them), and
// WithLimits makes devices with small limits. With any other libibverbs
// (rdma-core's, on a real adapter or soft-RoCE, or verbsim's production
// build) it is false and the objects have none of these methods.
func SimHooks() bool {
	simHooks.once.Do(func() { simHooks.ok = C.cv_sim_hooks() != 0 })
	return simHooks.ok
}

// hookCQ is a CQ made by ibv_create_cq when SimHooks is true.
type hookCQ struct{ *cq }

// hookExCQ is a CQ made by ibv_create_cq_ex when SimHooks is true.
type hookExCQ struct{ *exCQ }

// Push adds w to the CQ through the engine, as the adapter adds a
// completion (verbsim_test_cq_push): overrun, notification and events as
// for a completion of traffic.
func (h *hookCQ) Push(w verbs.WC, solicited bool) (bool, error) { return h.cq.push(w, solicited) }

// Ref holds the CQ as a QP using it does (verbsim_test_cq_ref).
func (h *hookCQ) Ref() error { return h.cq.ref(true) }

// Unref drops a hold taken by Ref (verbsim_test_cq_unref).
func (h *hookCQ) Unref() { _ = h.cq.ref(false) }

// hooked returns what the program holds for a CQ of ibv_create_cq on
// verbsim's test-mode library: a hookCQ, or a hookExCQ when the library
// built the CQ as an extended CQ with IBV_WC_STANDARD_FLAGS (its poll
// iterator set, as verbsim's drop-in does, like mlx5: CQX-03), so that the
// conformance suite reads a classic CQ with the iterator and mixes both
// APIs on it (CQX-10). Another libibverbs need not give a CQ of
// ibv_create_cq an iterator (rxe does not), so the binding offers it on
// verbsim's library only.
func (q *cq) hooked() verbs.CQ {
	x := (*C.struct_ibv_cq_ex)(unsafe.Pointer(q.c))
	if x.start_poll == nil || x.next_poll == nil || x.end_poll == nil {
		return &hookCQ{q}
	}
	q.ex, q.wcFlags = x, verbs.WCStandardFlags
	return &hookExCQ{&exCQ{q}}
}

// Push is hookCQ.Push.
func (h *hookExCQ) Push(w verbs.WC, solicited bool) (bool, error) { return h.cq.push(w, solicited) }

// Ref is hookCQ.Ref.
func (h *hookExCQ) Ref() error { return h.cq.ref(true) }

// Unref is hookCQ.Unref.
func (h *hookExCQ) Unref() { _ = h.cq.ref(false) }

func (q *cq) push(w verbs.WC, solicited bool) (bool, error) {
	if err := q.lock("verbsim_test_cq_push"); err != nil {
		return false, err
	}
	defer q.mu.Unlock()
	var c C.struct_ibv_wc
	c.wr_id = C.uint64_t(w.WRID)
	c.status = uint32(w.Status)
	c.opcode = uint32(w.Opcode)
	c.vendor_err = C.uint32_t(w.VendorErr)
	c.byte_len = C.uint32_t(w.ByteLen)
	*(*uint32)(unsafe.Pointer(&c.anon0)) = w.ImmData
	c.qp_num = C.uint32_t(w.QPNum)
	c.src_qp = C.uint32_t(w.SrcQP)
	c.wc_flags = C.uint(w.WCFlags)
	c.pkey_index = C.uint16_t(w.PKeyIndex)
	c.slid = C.uint16_t(w.SLID)
	c.sl = C.uint8_t(w.SL)
	c.dlid_path_bits = C.uint8_t(w.DLIDPathBits)
	s, over := C.int(0), C.int(0)
	if solicited {
		s = 1
	}
	if rc := C.cv_sim_cq_push(q.c, &c, s, &over); rc != 0 {
		return false, rcErr("verbsim_test_cq_push", rc)
	}
	return over != 0, nil
}

func (q *cq) ref(take bool) error {
	verb, t := "verbsim_test_cq_unref", C.int(0)
	if take {
		verb, t = "verbsim_test_cq_ref", 1
	}
	if err := q.lock(verb); err != nil {
		if take {
			return err
		}
		return nil // Unref of a destroyed CQ does nothing
	}
	defer q.mu.Unlock()
	return rcErr(verb, C.cv_sim_cq_ref(q.c, t))
}

// hookMR is an MR registered when SimHooks is true.
type hookMR struct{ *mr }

// Ref holds the MR as a memory window bound to it does
// (verbsim_test_mr_ref): ibv_dereg_mr is EBUSY until Unref.
func (h *hookMR) Ref() error { return h.mr.ref(true) }

// Unref drops a hold taken by Ref (verbsim_test_mr_unref).
func (h *hookMR) Unref() { _ = h.mr.ref(false) }

func (m *mr) ref(take bool) error {
	verb, t := "verbsim_test_mr_unref", C.int(0)
	if take {
		verb, t = "verbsim_test_mr_ref", 1
	}
	if err := m.lock(verb); err != nil {
		if take {
			return err
		}
		return nil
	}
	defer m.mu.Unlock()
	return rcErr(verb, C.cv_sim_mr_ref(m.m, t))
}

// Limits are the limits of a device made by WithLimits (struct
// ibv_device_attr and port 1's max_mtu); a zero field keeps the value of
// the device it is made like.
type Limits struct {
	MaxCQ, MaxCQE, NumCompVectors, MaxPD int
	MaxQPWR, MaxSGE, MaxInline           int
	MaxQPRDAtom, MaxQPInitRDAtom         int
	MaxSRQWR, MaxSRQSGE                  int
	PortMaxMTU                           verbs.MTU
}

// WithLimits returns a fresh device like d, a device of this binding: the
// same profile, name and ports, on a fabric of its own sharing nothing
// with d, whose limits are l (verbsim_test_device). It needs verbsim's
// test-mode library (SimHooks); otherwise it returns an error matching
// errors.ErrUnsupported. The device is not among Devices and lives as long
// as the process.
func WithLimits(d verbs.Device, l Limits) (verbs.Device, error) {
	like, ok := d.(*device)
	if !ok {
		return nil, einval("verbsim_test_device (a device of another implementation)")
	}
	if !SimHooks() {
		return nil, errUnsupported("verbsim_test_device")
	}
	cl := C.cv_sim_limits{
		max_cq: C.int(l.MaxCQ), max_cqe: C.int(l.MaxCQE), num_comp_vectors: C.int(l.NumCompVectors), max_pd: C.int(l.MaxPD),
		max_qp_wr: C.int(l.MaxQPWR), max_sge: C.int(l.MaxSGE), max_inline: C.int(l.MaxInline),
		max_qp_rd_atom: C.int(l.MaxQPRDAtom), max_qp_init_rd_atom: C.int(l.MaxQPInitRDAtom),
		max_srq_wr: C.int(l.MaxSRQWR), max_srq_sge: C.int(l.MaxSRQSGE), port_max_mtu: C.int(l.PortMaxMTU),
	}
	var out *C.struct_ibv_device
	if rc := C.cv_sim_device(like.d, &cl, &out); rc != 0 {
		return nil, rcErr("verbsim_test_device", rc)
	}
	return &device{
		d:    out,
		name: C.GoString(C.ibv_get_device_name(out)),
		guid: beToHost64(uint64(C.ibv_get_device_guid(out))),
	}, nil
}

// errUnsupported is the error of a hook the library lacks: it matches
// both syscall.EOPNOTSUPP and errors.ErrUnsupported.
func errUnsupported(verb string) error {
	return fmt.Errorf("%w (%w: not verbsim's test-mode library)", &Error{Verb: verb, Errno: syscall.EOPNOTSUPP}, errors.ErrUnsupported)
}

// The hooks of version node VERBSIM_TEST_2 (QP and SRQ faults, SRQ
// consumption, queue depths, link control, packet faults), looked up
// once. A test-mode library built before them has VERBSIM_TEST_1 only:
// the binding then offers none of the capabilities below.
var simHooks2 struct {
	once sync.Once
	ok   bool
}

// hooks2 reports whether SimHooks is true and the library also has the
// hooks of VERBSIM_TEST_2.
func hooks2() bool {
	simHooks2.once.Do(func() { simHooks2.ok = SimHooks() && C.cv_sim_hooks2() != 0 })
	return simHooks2.ok
}

// hooked returns the object the program holds for a QP of ibv_create_qp
// (or ibv_create_qp_ex without the builder): the QP itself, or with the
// test hooks a hookQP around it, and records it as the QP's self.
func (q *qp) hooked() verbs.QP {
	q.self = q
	if hooks2() {
		q.self = &hookQP{q}
	}
	return q.self
}

// hooked is qp.hooked for a QP with the work request builder.
func (e *qpEx) hooked() verbs.QP {
	e.qp.self = e
	if hooks2() {
		e.qp.self = &hookQPEx{e}
	}
	return e.qp.self
}

// hookQP is a QP made when the test hooks of VERBSIM_TEST_2 are there:
// it can be made to fail (conformance.FatalInjector and StatusForcer)
// and counts its outstanding requests (conformance.Outstander).
type hookQP struct{ *qp }

// hookQPEx is a QP with the work request builder, made when the test
// hooks of VERBSIM_TEST_2 are there; it has hookQP's methods.
type hookQPEx struct{ *qpEx }

// InjectFatal makes the QP hit a catastrophic error
// (verbsim_test_qp_fatal): ERR, its queues flushed, IBV_EVENT_QP_FATAL.
func (h *hookQP) InjectFatal() error { return h.qp.injectFatal() }

// ForceStatus makes the next completion of the QP's request wrID (a
// receive with recv) fail with st (verbsim_test_qp_force_status).
func (h *hookQP) ForceStatus(wrID uint64, recv bool, st verbs.WCStatus) error {
	return h.qp.forceStatus(wrID, recv, st)
}

// Outstanding returns the numbers of send and receive requests posted and
// not yet completed or flushed (verbsim_test_qp_outstanding); 0, 0 for a
// destroyed QP.
func (h *hookQP) Outstanding() (send, recv int) { return h.qp.outstanding() }

// InjectFatal is hookQP.InjectFatal.
func (h *hookQPEx) InjectFatal() error { return h.qp.injectFatal() }

// ForceStatus is hookQP.ForceStatus.
func (h *hookQPEx) ForceStatus(wrID uint64, recv bool, st verbs.WCStatus) error {
	return h.qp.forceStatus(wrID, recv, st)
}

// Outstanding is hookQP.Outstanding.
func (h *hookQPEx) Outstanding() (send, recv int) { return h.qp.outstanding() }

func (q *qp) injectFatal() error {
	if err := q.lock("verbsim_test_qp_fatal"); err != nil {
		return err
	}
	defer q.mu.Unlock()
	return rcErr("verbsim_test_qp_fatal", C.cv_sim_qp_fatal(q.c))
}

func (q *qp) forceStatus(wrID uint64, recv bool, st verbs.WCStatus) error {
	if err := q.lock("verbsim_test_qp_force_status"); err != nil {
		return err
	}
	defer q.mu.Unlock()
	r := C.int(0)
	if recv {
		r = 1
	}
	return rcErr("verbsim_test_qp_force_status", C.cv_sim_qp_force_status(q.c, C.uint64_t(wrID), r, C.int(st)))
}

func (q *qp) outstanding() (send, recv int) {
	if q.lock("verbsim_test_qp_outstanding") != nil {
		return 0, 0
	}
	defer q.mu.Unlock()
	var s, r C.int
	if C.cv_sim_qp_outstanding(q.c, &s, &r) != 0 {
		return 0, 0
	}
	return int(s), int(r)
}

// hooked returns the object the program holds for the SRQ: itself, or
// with the test hooks a hookSRQ around it, and records it as its self.
func (s *srq) hooked() verbs.SRQ {
	s.self = s
	if hooks2() {
		s.self = &hookSRQ{s}
	}
	return s.self
}

// srqOf returns the SRQ of this binding behind x.
func srqOf(x verbs.SRQ) (*srq, bool) {
	switch o := x.(type) {
	case *srq:
		return o, true
	case *hookSRQ:
		return o.srq, true
	}
	return nil, false
}

// hookSRQ is an SRQ made when the test hooks of VERBSIM_TEST_2 are there:
// it can be consumed without traffic (conformance.Consumer), reports its
// depth (conformance.Depth) and can be made to fail
// (conformance.SRQErrorInjector).
type hookSRQ struct{ *srq }

// Take consumes the oldest receive request as a QP receiving through the
// SRQ would (verbsim_test_srq_take); ok is false when the SRQ is empty or
// destroyed.
func (h *hookSRQ) Take() (wrID uint64, sges []verbs.SGE, ok bool) {
	s := h.srq
	if s.lock("verbsim_test_srq_take") != nil {
		return 0, nil, false
	}
	defer s.mu.Unlock()
	// Room for every SGE the SRQ can hold: its max_sge.
	var a C.struct_ibv_srq_attr
	if C.ibv_query_srq(s.s, &a) != 0 {
		return 0, nil, false
	}
	max := max(int(a.max_sge), 1)
	buf := (*C.struct_ibv_sge)(C.calloc(C.size_t(max), C.size_t(unsafe.Sizeof(C.struct_ibv_sge{}))))
	if buf == nil {
		return 0, nil, false
	}
	defer C.free(unsafe.Pointer(buf))
	var id C.uint64_t
	var n C.int
	if C.cv_sim_srq_take(s.s, &id, buf, C.int(max), &n) != 0 {
		return 0, nil, false
	}
	for _, g := range unsafe.Slice(buf, max)[:min(int(n), max)] {
		sges = append(sges, verbs.SGE{Addr: uint64(g.addr), Length: uint32(g.length), LKey: uint32(g.lkey)})
	}
	return uint64(id), sges, true
}

// Len returns the number of receive requests waiting in the SRQ
// (verbsim_test_srq_len); 0 for a destroyed SRQ.
func (h *hookSRQ) Len() int {
	s := h.srq
	if s.lock("verbsim_test_srq_len") != nil {
		return 0
	}
	defer s.mu.Unlock()
	var n C.int
	if C.cv_sim_srq_len(s.s, &n) != 0 {
		return 0
	}
	return int(n)
}

// InjectError makes the SRQ hit a catastrophic error
// (verbsim_test_srq_error): IBV_EVENT_SRQ_ERR names it and each QP
// receiving through it goes to ERR.
func (h *hookSRQ) InjectError() error {
	s := h.srq
	if err := s.lock("verbsim_test_srq_error"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	return rcErr("verbsim_test_srq_error", C.cv_sim_srq_error(s.s))
}

// hooked returns the object the program holds for the channel: itself,
// or with the test hooks a hookChannel around it, and records it as its
// self.
func (ch *channel) hooked() verbs.CompChannel {
	ch.self = ch
	if hooks2() {
		ch.self = &hookChannel{ch}
	}
	return ch.self
}

// channelOf returns the channel of this binding behind x.
func channelOf(x verbs.CompChannel) (*channel, bool) {
	switch o := x.(type) {
	case *channel:
		return o, true
	case *hookChannel:
		return o.channel, true
	}
	return nil, false
}

// hookChannel is a completion channel made when the test hooks of
// VERBSIM_TEST_2 are there: it reports its depth (conformance.Depth).
type hookChannel struct{ *channel }

// Len returns the number of completion events queued and not yet read
// (verbsim_test_channel_len): the channel's descriptor polls readable
// exactly while it is not 0. 0 for a destroyed channel.
func (h *hookChannel) Len() int {
	ch := h.channel
	if ch.lock("verbsim_test_channel_len") != nil {
		return 0
	}
	defer ch.mu.Unlock()
	var n C.int
	if C.cv_sim_channel_len(ch.ch, &n) != 0 {
		return 0
	}
	return int(n)
}

// SetPortState takes port (1-based) of d, a device of this binding, down
// or up as a cable pull would (verbsim_test_port_state): every open
// context of the device gets IBV_EVENT_PORT_ERR or IBV_EVENT_PORT_ACTIVE.
// It needs verbsim's test-mode library with the hooks of VERBSIM_TEST_2;
// otherwise it returns an error matching errors.ErrUnsupported.
func SetPortState(d verbs.Device, port uint8, up bool) error {
	dev, ok := d.(*device)
	if !ok {
		return einval("verbsim_test_port_state (a device of another implementation)")
	}
	if !hooks2() {
		return errUnsupported("verbsim_test_port_state")
	}
	u := C.int(0)
	if up {
		u = 1
	}
	return rcErr("verbsim_test_port_state", C.cv_sim_port_state(dev.d, C.uint8_t(port), u))
}

// SetFaults sets the packet faults of the fabric d is on, d being a device
// of this binding (verbsim_test_faults): the probabilities, in [0, 1],
// that a packet is dropped, duplicated or delayed; zeros switch them off.
// It needs what SetPortState needs.
func SetFaults(d verbs.Device, drop, duplicate, delay float64) error {
	dev, ok := d.(*device)
	if !ok {
		return einval("verbsim_test_faults (a device of another implementation)")
	}
	if !hooks2() {
		return errUnsupported("verbsim_test_faults")
	}
	return rcErr("verbsim_test_faults", C.cv_sim_faults(dev.d, C.double(drop), C.double(duplicate), C.double(delay)))
}

// The hook of version node VERBSIM_TEST_3 (a packet from another adapter),
// looked up once.
var simHooks3 struct {
	once sync.Once
	ok   bool
}

// hooks3 reports whether SimHooks is true and the library also has the hook
// of VERBSIM_TEST_3.
func hooks3() bool {
	simHooks3.once.Do(func() { simHooks3.ok = SimHooks() && C.cv_sim_hooks3() != 0 })
	return simHooks3.ok
}

// InjectFrame delivers frame, one packet in the wire format of verbsim's
// cross-process fabric (sim.AppendFrame), to the port of the fabric of d, a
// device of this binding, that has its destination address, as a packet
// from another adapter (verbsim_test_receive): how the conformance suite
// plays a hostile peer through C (conformance.Forger). It needs verbsim's
// test-mode library with the hook of VERBSIM_TEST_3; otherwise it fails
// with an error matching errors.ErrUnsupported.
func InjectFrame(d verbs.Device, frame []byte) error {
	dev, ok := d.(*device)
	if !ok {
		return einval("verbsim_test_receive (a device of another implementation)")
	}
	if !hooks3() {
		return errUnsupported("verbsim_test_receive")
	}
	if len(frame) == 0 {
		return einval("verbsim_test_receive (an empty frame)")
	}
	p := C.CBytes(frame)
	defer C.free(p)
	return rcErr("verbsim_test_receive", C.cv_sim_receive(dev.d, p, C.size_t(len(frame))))
}

// SimControls reports whether the library has the test hooks behind
// SetPortState and SetFaults and the QP, SRQ and channel capabilities
// (InjectFatal, ForceStatus, Outstanding; Take, Len, InjectError; Len):
// verbsim's test-mode library of VERBSIM_TEST_2 or later.
func SimControls() bool { return hooks2() }
