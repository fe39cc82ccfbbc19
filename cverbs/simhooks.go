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
