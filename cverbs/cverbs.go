//go:build cgo && linux

package cverbs

/*
#cgo LDFLAGS: -libverbs
#include <unistd.h>
#include <sys/eventfd.h>
#include "cverbs.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/verbsim/verbsim/verbs"
)

// errOf turns the errno of a failed C verb into an error naming the verb.
// A verb that failed without setting errno reports EIO.
func errOf(verb string, e error) error {
	var n syscall.Errno
	if !errors.As(e, &n) || n == 0 {
		n = syscall.EIO
	}
	return &Error{Verb: verb, Errno: n}
}

// rcErr turns a C verb's returned errno (0: success) into an error.
func rcErr(verb string, rc C.int) error {
	if rc == 0 {
		return nil
	}
	if rc < 0 {
		rc = -rc
	}
	return &Error{Verb: verb, Errno: syscall.Errno(rc)}
}

// Error is a failed verb: the C function and the errno it gave.
type Error struct {
	Verb  string
	Errno syscall.Errno
}

// Error returns e.g. "ibv_create_cq: invalid argument".
func (e *Error) Error() string { return e.Verb + ": " + e.Errno.Error() }

// Unwrap returns the errno, so that errors.Is(err, syscall.EINVAL) works.
func (e *Error) Unwrap() error { return e.Errno }

func einval(verb string) error { return &Error{Verb: verb, Errno: syscall.EINVAL} }

// interrupted is the error of a wait whose context ended: it matches both
// syscall.EINTR and ctx.Err(), as the simulator's.
func interrupted(verb string, ctx context.Context) error {
	return fmt.Errorf("%s: %w (%w)", verb, syscall.EINTR, ctx.Err())
}

// The device list is read once and kept: struct ibv_device stays valid
// while the list is held.
var devs struct {
	once sync.Once
	list []*device
	err  error
}

func loadDevices() {
	var n C.int
	l, err := C.ibv_get_device_list(&n)
	if l == nil {
		devs.err = errOf("ibv_get_device_list", err)
		return
	}
	for i := 0; i < int(n); i++ {
		d := C.cv_device(l, C.int(i))
		devs.list = append(devs.list, &device{
			d:    d,
			name: C.GoString(C.ibv_get_device_name(d)),
			guid: beToHost64(uint64(C.ibv_get_device_guid(d))),
		})
	}
}

// Devices returns the adapters of the libibverbs the process loaded, as
// ibv_get_device_list lists them.
func Devices() ([]verbs.Device, error) {
	devs.once.Do(loadDevices)
	if devs.err != nil {
		return nil, devs.err
	}
	out := make([]verbs.Device, len(devs.list))
	for i, d := range devs.list {
		out[i] = d
	}
	return out, nil
}

// Open returns the adapter called name ("" for the first one), or ENODEV.
func Open(name string) (verbs.Device, error) {
	all, err := Devices()
	if err != nil {
		return nil, err
	}
	for _, d := range all {
		if name == "" || d.Name() == name {
			return d, nil
		}
	}
	return nil, &Error{Verb: "ibv_get_device_list (device " + name + ")", Errno: syscall.ENODEV}
}

func beToHost64(v uint64) uint64 {
	var b [8]byte
	*(*uint64)(unsafe.Pointer(&b)) = v
	var r uint64
	for _, x := range b {
		r = r<<8 | uint64(x)
	}
	return r
}

func beToHost16(v uint16) uint16 {
	b := (*[2]byte)(unsafe.Pointer(&v))
	return uint16(b[0])<<8 | uint16(b[1])
}

// device is a struct ibv_device.
type device struct {
	d    *C.struct_ibv_device
	name string
	guid uint64

	inlineOnce sync.Once
	maxInline  int
}

func (d *device) Name() string { return d.name }
func (d *device) GUID() uint64 { return d.guid }

// Open is ibv_open_device. The context's async_fd is made non-blocking;
// GetAsyncEvent waits in poll(2).
func (d *device) Open() (verbs.Context, error) {
	c, err := C.ibv_open_device(d.d)
	if c == nil {
		return nil, errOf("ibv_open_device", err)
	}
	if rc := C.cv_set_nonblock_fd(c.async_fd); rc != 0 {
		C.ibv_close_device(c)
		return nil, rcErr("fcntl(async_fd, O_NONBLOCK)", rc)
	}
	return &devContext{c: c, dev: d}, nil
}

// registry maps the address of every live C object the binding made to its
// Go object, so that events and accessors return the very object the
// program holds.
var registry sync.Map // unsafe.Pointer -> object

// devContext is a struct ibv_context.
type devContext struct {
	c   *C.struct_ibv_context
	dev *device

	mu     sync.Mutex
	closed atomic.Bool
}

func (c *devContext) Device() verbs.Device { return c.dev }
func (c *devContext) NumCompVectors() int  { return int(c.c.num_comp_vectors) }

func (c *devContext) live(verb string) error {
	if c.closed.Load() {
		return einval(verb)
	}
	return nil
}

// Close is ibv_close_device; a second Close is EINVAL.
func (c *devContext) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed.Load() {
		return einval("ibv_close_device")
	}
	if cmOwns(unsafe.Pointer(c.c)) {
		return ebusyCM("ibv_close_device")
	}
	if rc, e := C.ibv_close_device(c.c); rc != 0 {
		return rcErrno("ibv_close_device", rc, e)
	}
	c.closed.Store(true)
	c.closeObjects()
	return nil
}

// QueryDevice is ibv_query_device.
func (c *devContext) QueryDevice() (verbs.DeviceAttr, error) {
	if err := c.live("ibv_query_device"); err != nil {
		return verbs.DeviceAttr{}, err
	}
	var a C.struct_ibv_device_attr
	if rc, e := C.ibv_query_device(c.c, &a); rc != 0 {
		return verbs.DeviceAttr{}, rcErrno("ibv_query_device", rc, e)
	}
	attr := deviceAttr(&a, int(c.c.num_comp_vectors))
	c.dev.inlineOnce.Do(func() { c.dev.maxInline = c.probeInline() })
	attr.MaxInline = c.dev.maxInline
	return attr, nil
}

// probeInline finds the largest max_inline_data an RC QP may ask for,
// which struct ibv_device_attr does not report: a binary search creating
// throwaway QPs (adapters refuse a larger request with EINVAL; one that
// clamps instead is read back from the capacities the QP got). It returns
// 0 when no QP can be made.
func (c *devContext) probeInline() int {
	p := C.ibv_alloc_pd(c.c)
	if p == nil {
		return 0
	}
	defer C.ibv_dealloc_pd(p)
	q := C.ibv_create_cq(c.c, 1, nil, nil, 0)
	if q == nil {
		return 0
	}
	defer C.ibv_destroy_cq(q)
	try := func(n int) (int, bool) {
		ia := C.struct_ibv_qp_init_attr{send_cq: q, recv_cq: q, qp_type: C.IBV_QPT_RC}
		ia.cap = C.struct_ibv_qp_cap{max_send_wr: 1, max_recv_wr: 1, max_send_sge: 1, max_recv_sge: 1, max_inline_data: C.uint32_t(n)}
		x := C.ibv_create_qp(p, &ia)
		if x == nil {
			return 0, false
		}
		C.ibv_destroy_qp(x)
		return int(ia.cap.max_inline_data), true
	}
	if _, ok := try(0); !ok {
		return 0
	}
	lo, hi := 0, 1<<20 // lo works; hi is assumed to fail
	if got, ok := try(hi); ok {
		return got
	}
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if _, ok := try(mid); ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

func deviceAttr(a *C.struct_ibv_device_attr, vectors int) verbs.DeviceAttr {
	return verbs.DeviceAttr{
		FWVer:           C.GoString(&a.fw_ver[0]),
		NodeGUID:        beToHost64(uint64(a.node_guid)),
		SysImageGUID:    beToHost64(uint64(a.sys_image_guid)),
		MaxMRSize:       uint64(a.max_mr_size),
		VendorID:        uint32(a.vendor_id),
		VendorPartID:    uint32(a.vendor_part_id),
		MaxQP:           int(a.max_qp),
		MaxQPWR:         int(a.max_qp_wr),
		DeviceCapFlags:  verbs.DeviceCapFlags(a.device_cap_flags),
		MaxSGE:          int(a.max_sge),
		MaxSGERD:        int(a.max_sge_rd),
		MaxCQ:           int(a.max_cq),
		MaxCQE:          int(a.max_cqe),
		MaxMR:           int(a.max_mr),
		MaxMW:           int(a.max_mw),
		MaxPD:           int(a.max_pd),
		MaxQPRDAtom:     int(a.max_qp_rd_atom),
		MaxQPInitRDAtom: int(a.max_qp_init_rd_atom),
		AtomicCap:       verbs.AtomicCap(a.atomic_cap),
		MaxAH:           int(a.max_ah),
		MaxSRQ:          int(a.max_srq),
		MaxSRQWR:        int(a.max_srq_wr),
		MaxSRQSGE:       int(a.max_srq_sge),
		PhysPortCnt:     uint8(a.phys_port_cnt),
		NumCompVectors:  vectors,
	}
}

// QueryPort is ibv_query_port.
func (c *devContext) QueryPort(port uint8) (verbs.PortAttr, error) {
	if err := c.live("ibv_query_port"); err != nil {
		return verbs.PortAttr{}, err
	}
	var a C.struct_ibv_port_attr
	if rc, e := C.cv_query_port(c.c, C.uint8_t(port), &a); rc != 0 {
		return verbs.PortAttr{}, rcErrno("ibv_query_port", rc, e)
	}
	return verbs.PortAttr{
		State:         verbs.PortState(a.state),
		MaxMTU:        verbs.MTU(a.max_mtu),
		ActiveMTU:     verbs.MTU(a.active_mtu),
		GIDTblLen:     int(a.gid_tbl_len),
		PortCapFlags:  uint32(a.port_cap_flags),
		MaxMsgSz:      uint32(a.max_msg_sz),
		PKeyTblLen:    uint16(a.pkey_tbl_len),
		LID:           uint16(a.lid),
		SMLID:         uint16(a.sm_lid),
		LMC:           uint8(a.lmc),
		ActiveWidth:   uint8(a.active_width),
		ActiveSpeed:   uint8(a.active_speed),
		LinkLayer:     verbs.LinkLayer(a.link_layer),
		BadPKeyCntr:   uint32(a.bad_pkey_cntr),
		QKeyViolCntr:  uint32(a.qkey_viol_cntr),
		MaxVLNum:      uint8(a.max_vl_num),
		SMSL:          uint8(a.sm_sl),
		SubnetTimeout: uint8(a.subnet_timeout),
		InitTypeReply: uint8(a.init_type_reply),
		PhysState:     uint8(a.phys_state),
		Flags:         uint8(a.flags),
		PortCapFlags2: uint16(a.port_cap_flags2),
	}, nil
}

// QueryGID is ibv_query_gid.
func (c *devContext) QueryGID(port uint8, index int) (verbs.GID, error) {
	if err := c.live("ibv_query_gid"); err != nil {
		return verbs.GID{}, err
	}
	var g C.union_ibv_gid
	if rc, e := C.ibv_query_gid(c.c, C.uint8_t(port), C.int(index), &g); rc != 0 {
		return verbs.GID{}, rcErrno("ibv_query_gid", rc, e)
	}
	var out verbs.GID
	C.cv_gid_raw(&g, (*C.uint8_t)(unsafe.Pointer(&out[0])))
	return out, nil
}

// QueryPKey is ibv_query_pkey, in host byte order.
func (c *devContext) QueryPKey(port uint8, index int) (uint16, error) {
	if err := c.live("ibv_query_pkey"); err != nil {
		return 0, err
	}
	var k C.__be16
	if rc, e := C.ibv_query_pkey(c.c, C.uint8_t(port), C.int(index), &k); rc != 0 {
		return 0, rcErrno("ibv_query_pkey", rc, e)
	}
	return beToHost16(uint16(k)), nil
}

// waitReadable waits until fd polls readable or ctx ends (then it returns
// ctx's error wrapped with EINTR).
func waitReadable(verb string, ctx context.Context, fd C.int) error {
	if ctx.Done() == nil {
		if r := C.cv_wait(fd, -1); r < 0 {
			return rcErr("poll", r)
		}
		return nil
	}
	if ctx.Err() != nil {
		return interrupted(verb, ctx)
	}
	wake, err := C.eventfd(0, C.EFD_CLOEXEC)
	if wake < 0 {
		return errOf("eventfd", err)
	}
	defer C.close(wake)
	stop := context.AfterFunc(ctx, func() { C.cv_wake(wake) })
	defer stop()
	r := C.cv_wait(fd, wake)
	switch {
	case r < 0:
		return rcErr("poll", r)
	case r == 1:
		return interrupted(verb, ctx)
	}
	return nil
}

// rcErrno turns what a C verb returned into an error: 0 is success, a
// positive value the errno (rdma-core's convention for most int verbs), -1
// a failure whose errno is in errno (the convention of ibv_query_gid and
// of some providers), another negative value a negated errno.
func rcErrno(verb string, rc C.int, errno error) error {
	if rc == -1 {
		return errOf(verb, errno)
	}
	return rcErr(verb, rc)
}
