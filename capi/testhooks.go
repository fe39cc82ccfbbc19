//go:build verbsim_testhooks

package main

// testhooks.go is the Go side of the test hooks (verbsim_test.h,
// testhooks.c), built only into the test-mode library: build.sh
// --test-hooks sets the build tag verbsim_testhooks, which also defines
// VERBSIM_TEST_HOOKS for the C files, and adds the version nodes
// VERBSIM_TEST_1, VERBSIM_TEST_2 and VERBSIM_TEST_3 (testhooks.map). Each hook calls the very method of
// package sim that the in-process conformance device (conformance/simdev)
// uses for the same capability.

/*
#cgo CFLAGS: -DVERBSIM_TEST_HOOKS
#include <stdint.h>
#include "capi.h"
#include "verbsim_test.h"
*/
import "C"

import (
	"sync"
	"syscall"
	"unsafe"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// testDevs are the devices verbsim_test_device made, each on a fabric of
// its own; the k-th has the device index len(fab.Devices())+k.
var (
	testMu   sync.Mutex
	testDevs []*sim.Device
)

func init() {
	extraDevice = func(k int) *sim.Device {
		testMu.Lock()
		defer testMu.Unlock()
		if k < 0 || k >= len(testDevs) {
			return nil
		}
		return testDevs[k]
	}
}

//export vs_test_cq_push
func vs_test_cq_push(h C.uintptr_t, w *C.struct_capi_wc, solicited C.int, overrun *C.int) C.int {
	r := rec[cqRec](h)
	if r == nil || w == nil || overrun == nil {
		return C.int(syscall.EINVAL)
	}
	over, err := r.cq.Push(verbs.WC{
		WRID:         uint64(w.wr_id),
		Status:       verbs.WCStatus(w.status),
		Opcode:       verbs.WCOpcode(w.opcode),
		VendorErr:    uint32(w.vendor_err),
		ByteLen:      uint32(w.byte_len),
		ImmData:      uint32(w.imm_data),
		QPNum:        uint32(w.qp_num),
		SrcQP:        uint32(w.src_qp),
		WCFlags:      verbs.WCFlags(w.wc_flags),
		PKeyIndex:    uint16(w.pkey_index),
		SLID:         uint16(w.slid),
		SL:           uint8(w.sl),
		DLIDPathBits: uint8(w.dlid_path_bits),
	}, solicited != 0)
	if err != nil {
		return errno(err)
	}
	if over {
		*overrun = 1
	} else {
		*overrun = 0
	}
	return 0
}

//export vs_test_cq_ref
func vs_test_cq_ref(h C.uintptr_t, take C.int) C.int {
	r := rec[cqRec](h)
	if r == nil {
		return C.int(syscall.EINVAL)
	}
	if take == 0 {
		r.cq.Unref()
		return 0
	}
	return errno(r.cq.Ref())
}

//export vs_test_mr_ref
func vs_test_mr_ref(h C.uintptr_t, take C.int) C.int {
	r := rec[mrRec](h)
	if r == nil {
		return C.int(syscall.EINVAL)
	}
	if take == 0 {
		r.mr.Unref()
		return 0
	}
	return errno(r.mr.Ref())
}

//export vs_test_device
func vs_test_device(name *C.char, l *C.struct_verbsim_test_limits, index *C.int, guid *C.uint64_t, outName *C.char) C.int {
	if fab == nil || name == nil || l == nil || index == nil || guid == nil || outName == nil {
		return C.int(syscall.EINVAL)
	}
	var like *sim.Device
	for _, d := range fab.Devices() {
		if d.Name() == C.GoString(name) {
			like = d
		}
	}
	if like == nil {
		return C.int(syscall.ENODEV)
	}
	d, err := withLimits(like, l)
	if err != nil {
		return errno(err)
	}
	testMu.Lock()
	testDevs = append(testDevs, d)
	*index = C.int(len(fab.Devices()) + len(testDevs) - 1)
	testMu.Unlock()
	*guid = C.uint64_t(d.GUID())
	n := d.Name()
	if len(n) > 63 {
		n = n[:63]
	}
	dst := unsafe.Slice((*byte)(unsafe.Pointer(outName)), 64)
	copy(dst, n)
	dst[len(n)] = 0
	return 0
}

// withLimits makes a device like d on a new fabric of the same
// configuration (profile, mode, faults, seed; no wire, no trace), whose
// attributes are d's but for the non-zero limits of l, as
// conformance/simdev's WithLimits does in process.
func withLimits(d *sim.Device, l *C.struct_verbsim_test_limits) (*sim.Device, error) {
	a := d.Attr()
	for _, f := range []struct {
		dst *int
		v   C.int
	}{
		{&a.MaxCQ, l.max_cq}, {&a.MaxCQE, l.max_cqe}, {&a.NumCompVectors, l.num_comp_vectors}, {&a.MaxPD, l.max_pd},
		{&a.MaxQPWR, l.max_qp_wr}, {&a.MaxSGE, l.max_sge}, {&a.MaxInline, l.max_inline},
		{&a.MaxQPRDAtom, l.max_qp_rd_atom}, {&a.MaxQPInitRDAtom, l.max_qp_init_rd_atom},
		{&a.MaxSRQWR, l.max_srq_wr}, {&a.MaxSRQSGE, l.max_srq_sge},
	} {
		if f.v < 0 {
			return nil, syscall.EINVAL
		}
		if f.v != 0 {
			*f.dst = int(f.v)
		}
	}
	// The ports as ibv_query_port shows them (link layer, MTUs, state);
	// the GID and P_Key tables get default contents and the new fabric
	// assigns the LIDs.
	ports, err := d.PortConfigs()
	if err != nil {
		return nil, err
	}
	if l.port_max_mtu != 0 && len(ports) > 0 {
		m := verbs.MTU(l.port_max_mtu)
		ports[0].Attr.MaxMTU = m
		ports[0].Attr.ActiveMTU = min(ports[0].Attr.ActiveMTU, m)
	}
	a.PhysPortCnt = 0
	cfg := sim.Config{Profile: fabCfg.Profile, Mode: fabCfg.Mode, Faults: fabCfg.Faults, Seed: fabCfg.Seed, TickDuration: fabCfg.Tick,
		Devices: []sim.DeviceConfig{{Name: d.Name(), Attr: a, Ports: ports}}}
	f, err := sim.NewFabric(cfg)
	if err != nil {
		return nil, err
	}
	return f.Devices()[0], nil
}

// The hooks of VERBSIM_TEST_2.

//export vs_test_qp_fatal
func vs_test_qp_fatal(h C.uintptr_t) C.int {
	r := rec[qpRec](h)
	if r == nil {
		return C.int(syscall.EINVAL)
	}
	f := r.q.Context().Device().Fabric()
	return errno(f.InjectFatal(r.q))
}

//export vs_test_qp_force_status
func vs_test_qp_force_status(h C.uintptr_t, wrID C.uint64_t, recv C.int, status C.int) C.int {
	r := rec[qpRec](h)
	if r == nil || status < 0 {
		return C.int(syscall.EINVAL)
	}
	f := r.q.Context().Device().Fabric()
	return errno(f.ForceStatus(r.q, uint64(wrID), recv != 0, verbs.WCStatus(status)))
}

//export vs_test_qp_outstanding
func vs_test_qp_outstanding(h C.uintptr_t, send, recv *C.int) C.int {
	r := rec[qpRec](h)
	if r == nil || send == nil || recv == nil {
		return C.int(syscall.EINVAL)
	}
	s, rv := r.q.Outstanding()
	*send, *recv = C.int(s), C.int(rv)
	return 0
}

//export vs_test_srq_take
func vs_test_srq_take(h C.uintptr_t, wrID *C.uint64_t, sgl *C.struct_ibv_sge, max C.int, num *C.int) C.int {
	r := rec[srqRec](h)
	if r == nil || wrID == nil || num == nil || max < 0 || (max > 0 && sgl == nil) {
		return C.int(syscall.EINVAL)
	}
	id, sges, ok := r.s.Take()
	if !ok {
		return C.int(syscall.ENOENT)
	}
	*wrID = C.uint64_t(id)
	*num = C.int(len(sges))
	if max > 0 {
		dst := unsafe.Slice(sgl, int(max))
		for i := range min(len(sges), int(max)) {
			dst[i] = C.struct_ibv_sge{addr: C.uint64_t(sges[i].Addr), length: C.uint32_t(sges[i].Length), lkey: C.uint32_t(sges[i].LKey)}
		}
	}
	return 0
}

//export vs_test_srq_len
func vs_test_srq_len(h C.uintptr_t, n *C.int) C.int {
	r := rec[srqRec](h)
	if r == nil || n == nil {
		return C.int(syscall.EINVAL)
	}
	*n = C.int(r.s.Len())
	return 0
}

//export vs_test_srq_error
func vs_test_srq_error(h C.uintptr_t) C.int {
	r := rec[srqRec](h)
	if r == nil {
		return C.int(syscall.EINVAL)
	}
	return errno(r.s.InjectError())
}

// vs_test_channel_len counts the channel's unread events: those queued
// behind its descriptor and those the engine still holds (Len, what the
// in-process channel reports). The engine's are moved behind the
// descriptor first, as a non-blocking read does (evfeed.Feed.SyncLocked), so
// that an event the pump holds between the two queues is counted once.
//
//export vs_test_channel_len
func vs_test_channel_len(h C.uintptr_t, n *C.int) C.int {
	r := rec[chRec](h)
	if r == nil || n == nil {
		return C.int(syscall.EINVAL)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.feed.SyncLocked()
	*n = C.int(len(r.queue) + r.ch.Len())
	return 0
}

//export vs_test_port_state
func vs_test_port_state(index C.int, port C.uint8_t, up C.int) C.int {
	d := deviceAt(int(index))
	if fab == nil || d == nil {
		return C.int(syscall.EINVAL)
	}
	return errno(d.SetPortState(uint8(port), up != 0))
}

//export vs_test_receive
func vs_test_receive(index C.int, frame unsafe.Pointer, n C.size_t) C.int {
	d := deviceAt(int(index))
	if fab == nil || d == nil || n > sim.MaxFrame+1 {
		return C.int(syscall.EINVAL)
	}
	return errno(d.Fabric().Receive(C.GoBytes(frame, C.int(n))))
}

//export vs_test_faults
func vs_test_faults(index C.int, drop, duplicate, delay C.double) C.int {
	d := deviceAt(int(index))
	if fab == nil || d == nil {
		return C.int(syscall.EINVAL)
	}
	return errno(d.Fabric().SetFaults(sim.Faults{Drop: float64(drop), Duplicate: float64(duplicate), Delay: float64(delay)}))
}
