package main

// engine.go is the one file of the drop-in library that calls package sim
// (and its vocabulary packages), with xrc.go for XRC and mw.go for type 2
// windows: every //export here takes plain C values
// and handles from glue.c and returns an errno (0 on success). Keeping the
// simulator's names in this file alone lets the rest of capi survive
// renames of sim's types.

/*
#include <stdint.h>
#include <string.h>
#include "capi.h"
*/
import "C"

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/cgo"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/verbsim/verbsim/internal/evfeed"
	"github.com/verbsim/verbsim/internal/hostenv"
	"github.com/verbsim/verbsim/internal/simhook"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/trace"
	"github.com/verbsim/verbsim/verbs"
)

// The process's one fabric, made from the environment on first use.
var (
	fabOnce  sync.Once
	fab      *sim.Fabric
	fabErr   error
	fabTrace *trace.Log
	fabCfg   hostenv.Config
	fabWire  *wire // the cross-process fabric (wire.go), nil with VERBSIM_FABRIC=none

	openMu   sync.Mutex
	openCtxs = map[*ctxRec]bool{}
)

// wireRemote is the engine's Remote: packets for ports of other processes
// leave through the wire.
type wireRemote struct{ w *wire }

func (r wireRemote) Send(p sim.RemotePacket) error {
	return r.w.send(p.Device, p.Port, p.DLID, p.DGID, p.Global, p.Frame)
}

func initFabric() {
	fabCfg, fabErr = hostenv.Read()
	if fabErr != nil {
		fmt.Fprintf(os.Stderr, "verbsim: %v\n", fabErr)
		return
	}
	if fabCfg.Devices == 0 {
		return
	}
	cfg := sim.Config{Profile: fabCfg.Profile, Mode: fabCfg.Mode, Faults: fabCfg.Faults, Seed: fabCfg.Seed, TickDuration: fabCfg.Tick}
	var names []string
	for i := 0; i < fabCfg.Devices; i++ {
		names = append(names, fmt.Sprintf("sim%d", i))
	}
	if fabCfg.Fabric != "" {
		if fabWire, fabErr = newWire(fabCfg.Fabric, names, fabCfg.Ports); fabErr != nil {
			fmt.Fprintf(os.Stderr, "verbsim: %v\n", fabErr)
			return
		}
		fabWire.dieAfter = fabCfg.DieAfter
		cfg.Remote = wireRemote{fabWire}
	}
	for _, name := range names {
		d := sim.DeviceConfig{Name: name}
		if fabWire != nil {
			// The station numbers give the addresses (wire.go): node GUID
			// from the first port's, port GUIDs (and so GIDs) and LIDs
			// from each port's.
			d.Attr = fabCfg.Profile.DeviceAttr()
			d.Attr.PhysPortCnt = 0
			d.Attr.NodeGUID = stationGUID | uint64(fabWire.lid(name, 1))
		}
		if fabCfg.DMKiB != 0 { // device memory of the size asked (DM-01)
			if d.Attr == (verbs.DeviceAttr{}) {
				d.Attr = fabCfg.Profile.DeviceAttr()
				d.Attr.PhysPortCnt = 0
			}
			d.Attr.MaxDMSize = uint64(fabCfg.DMKiB) << 10
		}
		for p := 1; p <= fabCfg.Ports; p++ {
			pa := verbs.PortAttr{LinkLayer: verbs.LinkLayerInfiniBand}
			if fabCfg.Ethernet {
				pa.LinkLayer = verbs.LinkLayerEthernet
			} else if fabWire != nil {
				pa.LID = fabWire.lid(name, p)
			}
			d.Ports = append(d.Ports, sim.PortConfig{Attr: pa})
		}
		cfg.Devices = append(cfg.Devices, d)
	}
	if fabCfg.Trace != "" {
		fabTrace = &trace.Log{}
		cfg.Trace = fabTrace
	}
	if cfg.Check, fabErr = checkFromEnv(); fabErr != nil {
		fmt.Fprintf(os.Stderr, "verbsim: %v\n", fabErr)
		return
	}
	fab, fabErr = sim.NewFabric(cfg)
	debugf("%s", describe())
	if fabErr != nil {
		fmt.Fprintf(os.Stderr, "verbsim: %v\n", fabErr)
		if fabWire != nil {
			fabWire.close()
			fabWire = nil
		}
		return
	}
	if fabWire != nil {
		f := fab
		fabWire.deliver = func(frame []byte) {
			if err := f.Receive(frame); err != nil {
				debugf("fabric %q: frame refused: %v", fabCfg.Fabric, err)
			}
		}
		fabWire.start()
	}
}

// writeTrace writes the trace to VERBSIM_TRACE, replacing the file.
func writeTrace() {
	if fab == nil || fabCfg.Trace == "" {
		return
	}
	f, err := os.Create(fabCfg.Trace)
	if err != nil {
		fmt.Fprintf(os.Stderr, "verbsim: trace: %v\n", err)
		return
	}
	if err := fab.WriteTrace(f); err != nil {
		fmt.Fprintf(os.Stderr, "verbsim: trace: %v\n", err)
	}
	f.Close()
}

// errno turns an error of sim into the errno libibverbs would set.
func errno(err error) C.int {
	if err == nil {
		return 0
	}
	var e syscall.Errno
	if errors.As(err, &e) && e != 0 {
		return C.int(e)
	}
	return C.int(syscall.EINVAL)
}

func debugf(format string, args ...any) {
	if os.Getenv("VERBSIM_DEBUG") != "" {
		fmt.Fprintf(os.Stderr, "verbsim: "+format+"\n", args...)
	}
}

// The Go records behind the C objects. Each is held by a cgo.Handle whose
// value C keeps; cptr is the address of the C object, for events.
type (
	ctxRec struct {
		c       *sim.Context
		asyncFD int
		cancel  context.CancelFunc
		done    chan struct{}
		mu      sync.Mutex
		queue   []sim.AsyncEvent // read from the engine, not yet by the program
		out     []sim.AsyncEvent // read by the program, not yet acked
		dying   map[any]bool     // objects being destroyed
		feed    *evfeed.Feed[sim.AsyncEvent]
	}
	pdRec struct {
		pd     *sim.PD
		ctx    *ctxRec
		bounce *sim.MR // inline payloads of C requests are copied here
		bbuf   []byte
	}
	mrRec struct{ mr *sim.MR }
	ahRec struct{ ah *sim.AH }
	chRec struct {
		ch     *sim.CompChannel
		fd     int
		mu     sync.Mutex
		queue  []*cqRec
		dying  map[*cqRec]bool
		done   chan struct{}
		cancel context.CancelFunc
		feed   *evfeed.Feed[any] // of the cq_context of each event
	}
	cqRec struct {
		cq   *sim.CQ
		ch   *chRec
		ctx  *ctxRec
		cptr uintptr
		mu   sync.Mutex
		wcs  []verbs.WC
	}
	qpRec struct {
		q    *sim.QP
		pd   *pdRec
		ctx  *ctxRec
		cptr uintptr
		mu   sync.Mutex
		swrs []verbs.SendWR
		rwrs []verbs.RecvWR
		sges []verbs.SGE
	}
	srqRec struct {
		s    *sim.SRQ
		ctx  *ctxRec
		cptr uintptr
		mu   sync.Mutex
		rwrs []verbs.RecvWR
		sges []verbs.SGE
	}
)

// cptrs maps the simulator's CQs, QPs and SRQs to their C objects, for
// async events.
var (
	cptrMu sync.Mutex
	cptrs  = map[any]uintptr{}
)

func setCptr(obj any, p uintptr) {
	cptrMu.Lock()
	if p == 0 {
		delete(cptrs, obj)
	} else {
		cptrs[obj] = p
	}
	cptrMu.Unlock()
}

func cptrOf(obj any) uintptr {
	cptrMu.Lock()
	defer cptrMu.Unlock()
	return cptrs[obj]
}

// rec returns the record handle h holds, or nil for 0 or a record of
// another type.
func rec[T any](h C.uintptr_t) *T {
	if h == 0 {
		return nil
	}
	v, _ := cgo.Handle(h).Value().(*T)
	return v
}

func newHandle(v any) C.uintptr_t { return C.uintptr_t(cgo.NewHandle(v)) }

func freeHandle(h C.uintptr_t) {
	kidsMu.Lock()
	delete(kids, h)
	kidsMu.Unlock()
	cgo.Handle(h).Delete()
}

// The objects created through each device context, so that closing a
// context with objects left tears them down as the kernel does when the
// program closes its device descriptor: libibverbs' ibv_close_device
// succeeds whatever is left (perftest's ib_send_bw client leaves its
// receive CQ). The engine itself refuses such a close with EBUSY.
type kid struct {
	ctx     *ctxRec
	rank    int // the order of teardown: QPs first, PDs last
	destroy func(C.uintptr_t) C.int
}

const (
	rankQP = iota
	rankSRQ
	rankMR // MRs, MWs and AHs
	rankDM // device memory, once its MRs are gone (DM-05)
	rankCQ
	rankPD
	rankXRCD
)

var (
	kidsMu sync.Mutex
	kids   = map[C.uintptr_t]kid{}
)

// adopt records h, made through ctx, as an object of ctx.
func adopt(ctx *ctxRec, h C.uintptr_t, rank int, destroy func(C.uintptr_t) C.int) {
	if ctx == nil {
		return
	}
	kidsMu.Lock()
	kids[h] = kid{ctx: ctx, rank: rank, destroy: destroy}
	kidsMu.Unlock()
}

// orphans destroys what is left of ctx's objects, in dependency order. The
// C objects stay allocated (the program still holds them, as libibverbs
// leaves a provider's leftovers to the process).
func orphans(ctx *ctxRec) {
	kidsMu.Lock()
	var hs []C.uintptr_t
	for h, k := range kids {
		if k.ctx == ctx {
			hs = append(hs, h)
		}
	}
	sort.Slice(hs, func(i, j int) bool {
		a, b := kids[hs[i]], kids[hs[j]]
		if a.rank != b.rank {
			return a.rank < b.rank
		}
		return hs[i] < hs[j]
	})
	ks := make([]kid, len(hs))
	for i, h := range hs {
		ks[i] = kids[h]
	}
	kidsMu.Unlock()
	for i, h := range hs {
		if rc := ks[i].destroy(h); rc != 0 {
			debugf("close_device: tearing down a leftover object: errno %d", int(rc))
		}
	}
}

// bytesAt is the C memory [p, p+n) as a byte slice. The simulator reads and
// writes it in place, as an adapter does the registered pages.
func bytesAt(p unsafe.Pointer, n uint64) []byte {
	if n == 0 {
		return []byte{}
	}
	return unsafe.Slice((*byte)(p), n)
}

// cAddr is the C address a (an SGE's or an inline buffer's) as a pointer.
// The memory is C's, so the garbage collector has no business with it.
func cAddr(a uint64) unsafe.Pointer {
	p := uintptr(a)
	return *(*unsafe.Pointer)(unsafe.Pointer(&p))
}

// eventfd signalling: the counter is 1 exactly while the queue it stands
// for is non-empty, so the descriptor polls readable exactly then.
func fdRaise(fd int) {
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	for {
		_, err := syscall.Write(fd, one[:])
		if err != syscall.EINTR {
			return
		}
	}
}

func fdClear(fd int) {
	var b [8]byte
	for {
		_, err := syscall.Read(fd, b[:])
		if err != syscall.EINTR {
			return
		}
	}
}

//export vs_init
func vs_init(n *C.int) C.int {
	fabOnce.Do(initFabric)
	if fabErr != nil {
		return C.int(syscall.ENODEV)
	}
	if n != nil {
		if fab == nil {
			*n = 0
		} else {
			*n = C.int(len(fab.Devices()))
		}
	}
	return 0
}

// extraDevice returns the k-th device made by the test hooks
// (testhooks.go, test-mode library only), or nil; nil in the production
// library, which has no such devices.
var extraDevice func(k int) *sim.Device

// deviceAt returns the device of index i: the fabric's devices, then those
// the test hooks made; nil for none.
func deviceAt(i int) *sim.Device {
	devs := fab.Devices()
	switch {
	case i < 0:
		return nil
	case i < len(devs):
		return devs[i]
	case extraDevice != nil:
		return extraDevice(i - len(devs))
	}
	return nil
}

//export vs_device
func vs_device(i C.int, name *C.char, guid *C.uint64_t) C.int {
	if fab == nil || name == nil || guid == nil {
		return C.int(syscall.EINVAL)
	}
	d := deviceAt(int(i))
	if d == nil {
		return C.int(syscall.ENODEV)
	}
	n := d.Name()
	if len(n) > 63 {
		n = n[:63]
	}
	dst := unsafe.Slice((*byte)(unsafe.Pointer(name)), 64)
	copy(dst, n)
	dst[len(n)] = 0
	*guid = C.uint64_t(d.GUID())
	return 0
}

//export vs_open
func vs_open(i C.int, asyncFD C.int, h *C.uintptr_t, ncomp *C.int) C.int {
	if fab == nil || h == nil || ncomp == nil {
		return C.int(syscall.EINVAL)
	}
	d := deviceAt(int(i))
	if d == nil {
		return C.int(syscall.ENODEV)
	}
	c, err := d.Open()
	if err != nil {
		return errno(err)
	}
	r := &ctxRec{c: c, asyncFD: int(asyncFD), done: make(chan struct{}), dying: map[any]bool{}}
	r.feed = evfeed.New(&r.mu, c.GetAsyncEvent, c.TryGetAsyncEvent, r.take)
	var ctx context.Context
	ctx, r.cancel = context.WithCancel(context.Background())
	front(simhook.FrontEvent{Kind: simhook.FrontReader, Obj: c})
	go r.pump(ctx)
	openMu.Lock()
	openCtxs[r] = true
	openMu.Unlock()
	*h = newHandle(r)
	*ncomp = C.int(c.NumCompVectors())
	return 0
}

// pump moves the context's async events to the queue behind its
// descriptor (feed).
func (r *ctxRec) pump(ctx context.Context) {
	defer close(r.done)
	r.feed.Run(ctx)
}

// take queues an async event for the program, or acknowledges it at once
// when it names an object being destroyed. r.mu is held.
func (r *ctxRec) take(ev sim.AsyncEvent) {
	if evfeed.Object(ev) != nil && r.dying[evfeed.Object(ev)] {
		checkDiscard(r.c, evfeed.Object(ev), 1)
		ev.Ack()
		return
	}
	r.queue = append(r.queue, ev)
	if len(r.queue) == 1 {
		fdRaise(r.asyncFD)
	}
}

// forget drops the unread async events of obj, acknowledging them to the
// engine as the kernel forgets a destroyed object's queued events, and marks
// obj dying so the pump does the same with any in flight. It returns a
// function that clears the mark.
func (r *ctxRec) forget(obj any) func() {
	r.mu.Lock()
	r.dying[obj] = true
	kept := r.queue[:0]
	for _, ev := range r.queue {
		if evfeed.Object(ev) == obj {
			checkDiscard(r.c, obj, 1)
			ev.Ack()
			continue
		}
		kept = append(kept, ev)
	}
	was := len(r.queue)
	r.queue = kept
	if was > 0 && len(kept) == 0 {
		fdClear(r.asyncFD)
	}
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		delete(r.dying, obj)
		r.mu.Unlock()
	}
}

//export vs_close
func vs_close(h C.uintptr_t) C.int {
	r := rec[ctxRec](h)
	if r == nil {
		return C.int(syscall.EINVAL)
	}
	if err := r.c.Close(); err != nil {
		if !errors.Is(err, syscall.EBUSY) {
			return errno(err)
		}
		orphans(r)
		if err := r.c.Close(); err != nil {
			return errno(err)
		}
	}
	r.cancel()
	<-r.done
	freeHandle(h)
	openMu.Lock()
	delete(openCtxs, r)
	last := len(openCtxs) == 0
	openMu.Unlock()
	if last {
		writeTrace()
	}
	return 0
}

//export vs_shutdown
func vs_shutdown() {
	if fabWire != nil {
		fabWire.flush(time.Second)
	}
	writeTrace()
	writeReport()
	if fab != nil && C.capi_checking != 0 {
		fab.Close() // the sanitizer's leaks and summary
	}
}

// writeReport appends to VERBSIM_REPORT one line saying which readings of
// the profile decided something in this process's run (the portability
// report, `verbsim report`): "verbsim-report profile=NAME readings=0xR
// consulted=0xC pid=N", R the profile's readings as set (with any
// VERBSIM_READINGS) and C those that decided something. Several processes
// may append to one file; each line is one write.
func writeReport() {
	if fab == nil || fabCfg.Report == "" {
		return
	}
	f, err := os.OpenFile(fabCfg.Report, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintf(os.Stderr, "verbsim: report: %v\n", err)
		return
	}
	defer f.Close()
	p := fab.Profile()
	line := fmt.Sprintf("verbsim-report profile=%s readings=%#x consulted=%#x pid=%d\n",
		p.Name, uint64(p.Readings.On()), uint64(fab.ReadingsConsulted()), os.Getpid())
	if _, err := f.WriteString(line); err != nil {
		fmt.Fprintf(os.Stderr, "verbsim: report: %v\n", err)
	}
}

//export vs_query_device
func vs_query_device(h C.uintptr_t, out *C.struct_ibv_device_attr) C.int {
	r := rec[ctxRec](h)
	if r == nil || out == nil {
		return C.int(syscall.EINVAL)
	}
	a, err := r.c.QueryDevice()
	if err != nil {
		return errno(err)
	}
	fillDeviceAttr(out, &a)
	return 0
}

func be64(v uint64) C.uint64_t {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return C.uint64_t(binary.NativeEndian.Uint64(b[:]))
}

func fillDeviceAttr(out *C.struct_ibv_device_attr, a *verbs.DeviceAttr) {
	*out = C.struct_ibv_device_attr{}
	fw := a.FWVer
	if len(fw) > 63 {
		fw = fw[:63]
	}
	dst := unsafe.Slice((*byte)(unsafe.Pointer(&out.fw_ver[0])), 64)
	copy(dst, fw)
	out.node_guid = C.__be64(be64(a.NodeGUID))
	out.sys_image_guid = C.__be64(be64(a.SysImageGUID))
	out.max_mr_size = C.uint64_t(a.MaxMRSize)
	out.page_size_cap = 0xfffff000
	out.vendor_id = C.uint32_t(a.VendorID)
	out.vendor_part_id = C.uint32_t(a.VendorPartID)
	out.hw_ver = 0
	out.max_qp = C.int(a.MaxQP)
	out.max_qp_wr = C.int(a.MaxQPWR)
	out.device_cap_flags = C.uint(a.DeviceCapFlags)
	out.max_sge = C.int(a.MaxSGE)
	out.max_sge_rd = C.int(a.MaxSGERD)
	out.max_cq = C.int(a.MaxCQ)
	out.max_cqe = C.int(a.MaxCQE)
	out.max_mr = C.int(a.MaxMR)
	out.max_pd = C.int(a.MaxPD)
	out.max_qp_rd_atom = C.int(a.MaxQPRDAtom)
	out.max_qp_init_rd_atom = C.int(a.MaxQPInitRDAtom)
	out.max_res_rd_atom = C.int(a.MaxQP * a.MaxQPRDAtom)
	out.atomic_cap = uint32(a.AtomicCap)
	out.max_mw = C.int(a.MaxMW)
	out.max_ah = C.int(a.MaxAH)
	out.max_srq = C.int(a.MaxSRQ)
	out.max_srq_wr = C.int(a.MaxSRQWR)
	out.max_srq_sge = C.int(a.MaxSRQSGE)
	out.max_pkeys = 128
	out.local_ca_ack_delay = 16
	out.phys_port_cnt = C.uint8_t(a.PhysPortCnt)
}

//export vs_query_device_ex
func vs_query_device_ex(h C.uintptr_t, out *C.struct_ibv_device_attr_ex) C.int {
	r := rec[ctxRec](h)
	if r == nil || out == nil {
		return C.int(syscall.EINVAL)
	}
	a, err := r.c.QueryDeviceEx(0)
	if err != nil {
		return errno(err)
	}
	fillDeviceAttr(&out.orig_attr, &a.Orig)
	out.completion_timestamp_mask = C.uint64_t(a.CompletionTimestampMask)
	out.hca_core_clock = C.uint64_t(a.HCACoreClock)
	out.device_cap_flags_ex = C.uint64_t(a.DeviceCapFlagsEx)
	out.odp_caps.general_caps = C.uint64_t(a.ODPCaps.GeneralCaps)
	out.odp_caps.per_transport_caps.rc_odp_caps = C.uint32_t(a.ODPCaps.RCODPCaps)
	out.odp_caps.per_transport_caps.uc_odp_caps = C.uint32_t(a.ODPCaps.UCODPCaps)
	out.odp_caps.per_transport_caps.ud_odp_caps = C.uint32_t(a.ODPCaps.UDODPCaps)
	out.xrc_odp_caps = C.uint32_t(a.XRCODPCaps)
	out.phys_port_cnt_ex = C.uint32_t(a.PhysPortCntEx)
	out.max_dm_size = C.uint64_t(a.MaxDMSize)
	return 0
}

//export vs_query_port
func vs_query_port(h C.uintptr_t, port C.uint8_t, out *C.struct_ibv_port_attr) C.int {
	r := rec[ctxRec](h)
	if r == nil || out == nil {
		return C.int(syscall.EINVAL)
	}
	a, err := r.c.QueryPort(uint8(port))
	if err != nil {
		return errno(err)
	}
	*out = C.struct_ibv_port_attr{
		state:           uint32(a.State),
		max_mtu:         uint32(a.MaxMTU),
		active_mtu:      uint32(a.ActiveMTU),
		gid_tbl_len:     C.int(a.GIDTblLen),
		port_cap_flags:  C.uint32_t(a.PortCapFlags),
		max_msg_sz:      C.uint32_t(a.MaxMsgSz),
		bad_pkey_cntr:   C.uint32_t(a.BadPKeyCntr),
		qkey_viol_cntr:  C.uint32_t(a.QKeyViolCntr),
		pkey_tbl_len:    C.uint16_t(a.PKeyTblLen),
		lid:             C.uint16_t(a.LID),
		sm_lid:          C.uint16_t(a.SMLID),
		lmc:             C.uint8_t(a.LMC),
		max_vl_num:      C.uint8_t(a.MaxVLNum),
		sm_sl:           C.uint8_t(a.SMSL),
		subnet_timeout:  C.uint8_t(a.SubnetTimeout),
		init_type_reply: C.uint8_t(a.InitTypeReply),
		active_width:    C.uint8_t(a.ActiveWidth),
		active_speed:    C.uint8_t(a.ActiveSpeed),
		phys_state:      C.uint8_t(a.PhysState),
		link_layer:      C.uint8_t(a.LinkLayer),
		flags:           C.uint8_t(a.Flags),
		port_cap_flags2: C.uint16_t(a.PortCapFlags2),
	}
	return 0
}

//export vs_query_gid
func vs_query_gid(h C.uintptr_t, port C.uint8_t, index C.int, out *C.uint8_t) C.int {
	r := rec[ctxRec](h)
	if r == nil || out == nil {
		return C.int(syscall.EINVAL)
	}
	g, err := r.c.QueryGID(uint8(port), int(index))
	if err != nil {
		return errno(err)
	}
	copy(unsafe.Slice((*byte)(unsafe.Pointer(out)), 16), g[:])
	return 0
}

//export vs_query_gid_ex
func vs_query_gid_ex(h C.uintptr_t, port, index C.uint32_t, gid *C.uint8_t, typ *C.uint32_t) C.int {
	r := rec[ctxRec](h)
	if r == nil || gid == nil || typ == nil {
		return C.int(syscall.EINVAL)
	}
	e, err := r.c.QueryGIDEx(uint32(port), uint32(index), 0)
	if err != nil {
		return errno(err)
	}
	copy(unsafe.Slice((*byte)(unsafe.Pointer(gid)), 16), e.GID[:])
	*typ = C.uint32_t(e.GIDType)
	return 0
}

//export vs_query_pkey
func vs_query_pkey(h C.uintptr_t, port C.uint8_t, index C.int, out *C.uint16_t) C.int {
	r := rec[ctxRec](h)
	if r == nil || out == nil {
		return C.int(syscall.EINVAL)
	}
	k, err := r.c.QueryPKey(uint8(port), int(index))
	if err != nil {
		return errno(err)
	}
	*out = C.uint16_t(k)
	return 0
}

// Async events.

// vs_get_async takes the oldest async event for ibv_get_async_event, or
// returns EAGAIN. With sync set (a non-blocking descriptor about to say
// EAGAIN) it first moves the events the engine has raised and the pump not
// yet moved (internal/evfeed).
//
//export vs_get_async
func vs_get_async(h C.uintptr_t, typ *C.uint32_t, cptr *C.uintptr_t, port *C.int, sync C.int) C.int {
	r := rec[ctxRec](h)
	if r == nil || typ == nil || cptr == nil || port == nil {
		return C.int(syscall.EINVAL)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.queue) == 0 && sync != 0 {
		r.feed.SyncLocked()
	}
	if len(r.queue) == 0 {
		return C.int(syscall.EAGAIN)
	}
	ev := r.queue[0]
	r.queue = r.queue[1:]
	if len(r.queue) == 0 {
		fdClear(r.asyncFD)
	}
	r.out = append(r.out, ev)
	front(simhook.FrontEvent{Kind: simhook.FrontRead, Obj: r.c, About: evfeed.Object(ev)})
	*typ = C.uint32_t(ev.Type())
	*port = C.int(ev.Port())
	*cptr = 0
	if evfeed.Object(ev) != nil {
		*cptr = C.uintptr_t(cptrOf(evfeed.Object(ev)))
	}
	return 0
}

//export vs_ack_async
func vs_ack_async(h C.uintptr_t, typ C.uint32_t, cptr C.uintptr_t, port C.int) C.int {
	r := rec[ctxRec](h)
	if r == nil {
		return C.int(syscall.EINVAL)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, ev := range r.out {
		if uint32(ev.Type()) != uint32(typ) {
			continue
		}
		if evfeed.Object(ev) != nil && C.uintptr_t(cptrOf(evfeed.Object(ev))) != cptr {
			continue
		}
		if evfeed.Object(ev) == nil && C.int(ev.Port()) != port {
			continue
		}
		r.out = append(r.out[:i], r.out[i+1:]...)
		return errno(ev.Ack())
	}
	return C.int(syscall.EINVAL)
}

// vs_ack_port_event acknowledges a port event, which names no object and
// so no context: the first open context that has one of that type and port
// outstanding takes the ack.
//
//export vs_ack_port_event
func vs_ack_port_event(typ C.uint32_t, port C.int) {
	openMu.Lock()
	ctxs := make([]*ctxRec, 0, len(openCtxs))
	for r := range openCtxs {
		ctxs = append(ctxs, r)
	}
	openMu.Unlock()
	for _, r := range ctxs {
		r.mu.Lock()
		for i, ev := range r.out {
			if evfeed.Object(ev) == nil && uint32(ev.Type()) == uint32(typ) && C.int(ev.Port()) == port {
				r.out = append(r.out[:i], r.out[i+1:]...)
				r.mu.Unlock()
				ev.Ack()
				return
			}
		}
		r.mu.Unlock()
	}
}

// Protection domains and memory regions.

//export vs_alloc_pd
func vs_alloc_pd(h C.uintptr_t, out *C.uintptr_t, handle *C.uint32_t) C.int {
	r := rec[ctxRec](h)
	if r == nil || out == nil || handle == nil {
		return C.int(syscall.EINVAL)
	}
	pd, err := r.c.AllocPD()
	if err != nil {
		return errno(err)
	}
	*out = newHandle(&pdRec{pd: pd, ctx: r})
	adopt(r, *out, rankPD, vs_dealloc_pd)
	*handle = C.uint32_t(pd.Handle())
	return 0
}

//export vs_dealloc_pd
func vs_dealloc_pd(h C.uintptr_t) C.int {
	r := rec[pdRec](h)
	if r == nil {
		return C.int(syscall.EINVAL)
	}
	if r.bounce != nil {
		if err := r.bounce.Dereg(); err != nil {
			return errno(err)
		}
	}
	if err := r.pd.Dealloc(); err != nil {
		if r.bounce != nil { // put the bounce MR back, so the PD is as it was
			r.bounce, _ = r.pd.RegMRIOVA(r.bbuf, uint64(uintptr(unsafe.Pointer(&r.bbuf[0]))), 0)
		}
		return errno(err)
	}
	freeHandle(h)
	return 0
}

//export vs_reg_mr
func vs_reg_mr(h C.uintptr_t, addr unsafe.Pointer, length C.size_t, iova C.uint64_t, access C.uint32_t,
	out *C.uintptr_t, lkey, rkey *C.uint32_t) C.int {
	r := rec[pdRec](h)
	if r == nil || out == nil || lkey == nil || rkey == nil {
		return C.int(syscall.EINVAL)
	}
	if addr == nil && length != 0 {
		return C.int(implicitODP(r, uint64(length), verbs.AccessFlags(access)))
	}
	mr, err := r.pd.RegMRIOVA(bytesAt(addr, uint64(length)), uint64(iova), verbs.AccessFlags(access))
	if err != nil {
		return errno(err)
	}
	*out = newHandle(&mrRec{mr: mr})
	adopt(r.ctx, *out, rankMR, vs_dereg_mr)
	*lkey, *rkey = C.uint32_t(mr.LKey()), C.uint32_t(mr.RKey())
	return 0
}

// implicitODP is the errno of a registration at address NULL (ODP-02):
// with length SIZE_MAX and ON_DEMAND it asks for an implicit on-demand MR,
// which a device without ODP refuses as it refuses any ON_DEMAND
// registration (EOPNOTSUPP, the core's access check), and one with ODP but
// without IBV_ODP_SUPPORT_IMPLICIT refuses with EINVAL, as mlx5 and rxe
// do. verbsim never offers implicit ODP: the MR would cover every address
// of the process, and an access to unmapped memory would crash the
// process instead of failing its work request. Anything else at NULL is
// EINVAL.
func implicitODP(r *pdRec, length uint64, access verbs.AccessFlags) syscall.Errno {
	if length != math.MaxUint64 || access&verbs.AccessOnDemand == 0 {
		return syscall.EINVAL
	}
	a, err := r.ctx.c.QueryDeviceEx(0)
	switch {
	case err != nil:
		return syscall.Errno(errno(err))
	case a.ODPCaps.GeneralCaps&verbs.ODPSupport == 0:
		return syscall.EOPNOTSUPP
	}
	return syscall.EINVAL
}

// vs_advise_mr is ibv_advise_mr (PD.AdviseMR): the SGEs are copied, as
// the kernel copies them in.
//
//export vs_advise_mr
func vs_advise_mr(h C.uintptr_t, advice, flags C.uint32_t, sgl *C.struct_ibv_sge, n C.uint32_t) C.int {
	r := rec[pdRec](h)
	if r == nil {
		return C.int(syscall.EINVAL)
	}
	var list []verbs.SGE
	if n > 0 {
		list = make([]verbs.SGE, n)
		for i, s := range unsafe.Slice(sgl, int(n)) {
			list[i] = verbs.SGE{Addr: uint64(s.addr), Length: uint32(s.length), LKey: uint32(s.lkey)}
		}
	}
	if err := r.pd.AdviseMR(verbs.AdviseMRAdvice(advice), verbs.AdviseMRFlags(flags), list); err != nil {
		return errno(err)
	}
	return 0
}

//export vs_dereg_mr
func vs_dereg_mr(h C.uintptr_t) C.int {
	r := rec[mrRec](h)
	if r == nil {
		return C.int(syscall.EINVAL)
	}
	if err := r.mr.Dereg(); err != nil {
		return errno(err)
	}
	freeHandle(h)
	return 0
}

//export vs_rereg_mr
func vs_rereg_mr(h C.uintptr_t, flags C.int, pdh C.uintptr_t, addr unsafe.Pointer, length C.size_t, access C.int,
	lkey, rkey *C.uint32_t, eno *C.int) C.int {
	r := rec[mrRec](h)
	if r == nil || lkey == nil || rkey == nil || eno == nil || (addr == nil && length != 0) {
		if eno != nil {
			*eno = C.int(syscall.EINVAL)
		}
		return C.int(verbs.ReregErrInput)
	}
	var pd *sim.PD
	if pdh != 0 {
		pr := rec[pdRec](pdh)
		if pr == nil {
			*eno = C.int(syscall.EINVAL)
			return C.int(verbs.ReregErrInput)
		}
		pd = pr.pd
	}
	var buf []byte
	if addr != nil {
		buf = bytesAt(addr, uint64(length))
	}
	// libibverbs passes the new buffer's address as hca_va (MR-13).
	if err := r.mr.ReregIOVA(verbs.ReregFlags(flags), pd, buf, uint64(uintptr(addr)), verbs.AccessFlags(access)); err != nil {
		*eno = errno(err)
		var re *verbs.ReregError
		if errors.As(err, &re) {
			return C.int(re.Failure)
		}
		return C.int(verbs.ReregErrInput)
	}
	*lkey, *rkey = C.uint32_t(r.mr.LKey()), C.uint32_t(r.mr.RKey())
	return 0
}

// Memory windows.

type mwRec struct{ mw *sim.MW }

//export vs_alloc_mw
func vs_alloc_mw(pdh C.uintptr_t, typ C.int, out *C.uintptr_t, rkey *C.uint32_t) C.int {
	r := rec[pdRec](pdh)
	if r == nil || out == nil || rkey == nil {
		return C.int(syscall.EINVAL)
	}
	mw, err := r.pd.AllocMW(verbs.MWType(typ))
	if err != nil {
		return errno(err)
	}
	*out = newHandle(&mwRec{mw: mw})
	adopt(r.ctx, *out, rankMR, vs_dealloc_mw)
	*rkey = C.uint32_t(mw.RKey())
	return 0
}

//export vs_dealloc_mw
func vs_dealloc_mw(h C.uintptr_t) C.int {
	r := rec[mwRec](h)
	if r == nil {
		return C.int(syscall.EINVAL)
	}
	if err := r.mw.Dealloc(); err != nil {
		return errno(err)
	}
	freeHandle(h)
	return 0
}

// vs_bind_mw is ibv_bind_mw, a type 1 window: mrh 0 with length 0 unbinds.
//
//export vs_bind_mw
func vs_bind_mw(qph, mwh C.uintptr_t, wrID C.uint64_t, flags C.uint32_t, mrh C.uintptr_t,
	addr, length C.uint64_t, access C.uint32_t, rkey *C.uint32_t) C.int {
	q, w := rec[qpRec](qph), rec[mwRec](mwh)
	if q == nil || w == nil || rkey == nil {
		return C.int(syscall.EINVAL)
	}
	info := verbs.MWBindInfo{Addr: uint64(addr), Length: uint64(length), Access: verbs.AccessFlags(access)}
	if mrh != 0 {
		m := rec[mrRec](mrh)
		if m == nil {
			return C.int(syscall.EINVAL)
		}
		info.MR = m.mr
	}
	if err := q.q.BindMW(w.mw, uint64(wrID), verbs.SendFlags(flags), info); err != nil {
		return errno(err)
	}
	*rkey = C.uint32_t(w.mw.RKey())
	return 0
}

// Address handles.

func ahFromC(a *C.struct_ibv_ah_attr) verbs.AHAttr {
	out := verbs.AHAttr{
		DLID:        uint16(a.dlid),
		SL:          uint8(a.sl),
		SrcPathBits: uint8(a.src_path_bits),
		StaticRate:  uint8(a.static_rate),
		IsGlobal:    a.is_global != 0,
		PortNum:     uint8(a.port_num),
	}
	g := &a.grh
	copy(out.GRH.DGID[:], unsafe.Slice((*byte)(unsafe.Pointer(&g.dgid)), 16))
	out.GRH.FlowLabel = uint32(g.flow_label)
	out.GRH.SGIDIndex = uint8(g.sgid_index)
	out.GRH.HopLimit = uint8(g.hop_limit)
	out.GRH.TrafficClass = uint8(g.traffic_class)
	return out
}

func ahToC(a *verbs.AHAttr, out *C.struct_ibv_ah_attr) {
	*out = C.struct_ibv_ah_attr{}
	out.dlid = C.uint16_t(a.DLID)
	out.sl = C.uint8_t(a.SL)
	out.src_path_bits = C.uint8_t(a.SrcPathBits)
	out.static_rate = C.uint8_t(a.StaticRate)
	if a.IsGlobal {
		out.is_global = 1
	}
	out.port_num = C.uint8_t(a.PortNum)
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&out.grh.dgid)), 16), a.GRH.DGID[:])
	out.grh.flow_label = C.uint32_t(a.GRH.FlowLabel)
	out.grh.sgid_index = C.uint8_t(a.GRH.SGIDIndex)
	out.grh.hop_limit = C.uint8_t(a.GRH.HopLimit)
	out.grh.traffic_class = C.uint8_t(a.GRH.TrafficClass)
}

//export vs_create_ah
func vs_create_ah(h C.uintptr_t, attr *C.struct_ibv_ah_attr, out *C.uintptr_t) C.int {
	r := rec[pdRec](h)
	if r == nil || attr == nil || out == nil {
		return C.int(syscall.EINVAL)
	}
	ah, err := r.pd.CreateAH(ahFromC(attr))
	if err != nil {
		return errno(err)
	}
	*out = newHandle(&ahRec{ah: ah})
	adopt(r.ctx, *out, rankMR, vs_destroy_ah)
	return 0
}

//export vs_destroy_ah
func vs_destroy_ah(h C.uintptr_t) C.int {
	r := rec[ahRec](h)
	if r == nil {
		return C.int(syscall.EINVAL)
	}
	if err := r.ah.Destroy(); err != nil {
		return errno(err)
	}
	freeHandle(h)
	return 0
}

// Completion channels.

//export vs_create_channel
func vs_create_channel(h C.uintptr_t, fd C.int, out *C.uintptr_t) C.int {
	r := rec[ctxRec](h)
	if r == nil || out == nil || fd < 0 {
		return C.int(syscall.EINVAL)
	}
	ch, err := r.c.CreateCompChannel()
	if err != nil {
		return errno(err)
	}
	cr := &chRec{ch: ch, fd: int(fd), dying: map[*cqRec]bool{}, done: make(chan struct{})}
	cr.feed = evfeed.New(&cr.mu, func(ctx context.Context) (any, error) {
		_, cqc, err := ch.GetEvent(ctx)
		return cqc, err
	}, func() (any, error) {
		_, cqc, err := ch.TryGetEvent()
		return cqc, err
	}, cr.take)
	var ctx context.Context
	ctx, cr.cancel = context.WithCancel(context.Background())
	front(simhook.FrontEvent{Kind: simhook.FrontReader, Obj: ch})
	go cr.pump(ctx)
	*out = newHandle(cr)
	return 0
}

// pump moves the channel's events to the queue behind its descriptor
// (feed).
func (r *chRec) pump(ctx context.Context) {
	defer close(r.done)
	r.feed.Run(ctx)
}

// take queues a completion event, given its CQ's cq_context (the CQ's
// record), for the program, or acknowledges it at once when the CQ is
// being destroyed. r.mu is held.
func (r *chRec) take(cqc any) {
	c, _ := cqc.(*cqRec)
	if c == nil {
		return
	}
	if r.dying[c] {
		checkDiscard(r.ch, c.cq, 1)
		c.cq.AckEvents(1)
		return
	}
	r.queue = append(r.queue, c)
	if len(r.queue) == 1 {
		fdRaise(r.fd)
	}
}

//export vs_destroy_channel
func vs_destroy_channel(h C.uintptr_t) C.int {
	r := rec[chRec](h)
	if r == nil {
		return C.int(syscall.EINVAL)
	}
	if err := r.ch.Destroy(); err != nil {
		return errno(err)
	}
	r.cancel()
	<-r.done
	freeHandle(h)
	return 0
}

// vs_chan_get takes the oldest completion event for ibv_get_cq_event, or
// returns EAGAIN; sync as for vs_get_async.
//
//export vs_chan_get
func vs_chan_get(h C.uintptr_t, cptr *C.uintptr_t, sync C.int) C.int {
	r := rec[chRec](h)
	if r == nil || cptr == nil {
		return C.int(syscall.EINVAL)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.queue) == 0 && sync != 0 {
		r.feed.SyncLocked()
	}
	if len(r.queue) == 0 {
		if r.ch.Destroyed() {
			return C.int(syscall.EBADF)
		}
		return C.int(syscall.EAGAIN)
	}
	c := r.queue[0]
	r.queue = r.queue[1:]
	if len(r.queue) == 0 {
		fdClear(r.fd)
	}
	front(simhook.FrontEvent{Kind: simhook.FrontRead, Obj: r.ch, About: c.cq})
	*cptr = C.uintptr_t(c.cptr)
	return 0
}

// Completion queues.

//export vs_create_cq
func vs_create_cq(h C.uintptr_t, cqe C.int, chh C.uintptr_t, vector C.int, wcFlags C.uint64_t,
	compMask, flags C.uint32_t, ex C.int, cptr C.uintptr_t, out *C.uintptr_t, real *C.int) C.int {
	r := rec[ctxRec](h)
	if r == nil || out == nil || real == nil || cptr == 0 {
		return C.int(syscall.EINVAL)
	}
	var ch *chRec
	if chh != 0 {
		if ch = rec[chRec](chh); ch == nil {
			return C.int(syscall.EINVAL)
		}
	}
	cr := &cqRec{ch: ch, ctx: r, cptr: uintptr(cptr)}
	attr := sim.CQInitAttr{CQE: int(cqe), Context: cr, CompVector: int(vector),
		WCFlags: verbs.WCExFlags(wcFlags), CompMask: verbs.CQInitAttrMask(compMask), Flags: verbs.CQCreateFlags(flags)}
	if ch != nil {
		attr.Channel = ch.ch
	}
	var c *sim.CQ
	var err error
	if ex != 0 {
		c, err = r.c.CreateCQEx(attr)
	} else { // ibv_create_cq: IBV_WC_STANDARD_FLAGS, no comp_mask or flags
		c, err = r.c.CreateCQ(attr.CQE, attr.Context, attr.Channel, attr.CompVector)
	}
	if err != nil {
		return errno(err)
	}
	cr.cq = c
	setCptr(c, uintptr(cptr))
	*out = newHandle(cr)
	adopt(r, *out, rankCQ, vs_destroy_cq)
	*real = C.int(c.CQE())
	return 0
}

//export vs_destroy_cq
func vs_destroy_cq(h C.uintptr_t) C.int {
	r := rec[cqRec](h)
	if r == nil {
		return C.int(syscall.EINVAL)
	}
	// A CQ still in use is refused before anything changes (CQ-11).
	if r.cq.Snapshot().Refs > 0 {
		return C.int(syscall.EBUSY)
	}
	// Events the pump moved to the descriptor's queue but the program has
	// not read are dropped, as the kernel drops a destroyed CQ's queued
	// events; the engine counts them read, so they are acked for it.
	var undo func()
	if ch := r.ch; ch != nil {
		ch.mu.Lock()
		ch.dying[r] = true
		kept, n := ch.queue[:0], 0
		for _, c := range ch.queue {
			if c == r {
				n++
				continue
			}
			kept = append(kept, c)
		}
		if n > 0 && len(kept) == 0 {
			fdClear(ch.fd)
		}
		ch.queue = kept
		ch.mu.Unlock()
		if n > 0 {
			checkDiscard(ch.ch, r.cq, n)
			r.cq.AckEvents(n)
		}
		undo = func() {
			ch.mu.Lock()
			delete(ch.dying, r)
			ch.mu.Unlock()
		}
	}
	undoAsync := r.ctx.forget(r.cq)
	err := r.cq.Destroy()
	undoAsync()
	if undo != nil {
		undo()
	}
	if err != nil {
		return errno(err)
	}
	setCptr(r.cq, 0)
	freeHandle(h)
	return 0
}

func wcToC(w *verbs.WC, o *C.struct_capi_wc) {
	o.wr_id = C.uint64_t(w.WRID)
	o.status = C.uint32_t(w.Status)
	o.opcode = C.uint32_t(w.Opcode)
	o.vendor_err = C.uint32_t(w.VendorErr)
	o.byte_len = C.uint32_t(w.ByteLen)
	o.imm_data = C.uint32_t(w.ImmData)
	o.qp_num = C.uint32_t(w.QPNum)
	o.src_qp = C.uint32_t(w.SrcQP)
	o.wc_flags = C.uint32_t(w.WCFlags)
	o.pkey_index = C.uint16_t(w.PKeyIndex)
	o.slid = C.uint16_t(w.SLID)
	o.sl = C.uint8_t(w.SL)
	o.dlid_path_bits = C.uint8_t(w.DLIDPathBits)
}

//export vs_poll_cq
func vs_poll_cq(h C.uintptr_t, n C.int, out *C.struct_capi_wc) C.int {
	r := rec[cqRec](h)
	if r == nil || n < 0 || (out == nil && n > 0) {
		return -C.int(syscall.EINVAL)
	}
	if n == 0 {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	want := int(n)
	if want > 64 {
		want = 64
	}
	if cap(r.wcs) < want {
		r.wcs = make([]verbs.WC, want)
	}
	got, err := r.cq.Poll(r.wcs[:want])
	if err != nil && got == 0 {
		return -errno(err)
	}
	if got == 0 && fabWire != nil {
		// A program busy-polling an empty CQ would take the fabric's lock
		// back at once, again and again, and keep the goroutine that
		// delivers packets from other processes waiting for it: let it run.
		runtime.Gosched()
	}
	dst := unsafe.Slice(out, got)
	for i := 0; i < got; i++ {
		wcToC(&r.wcs[i], &dst[i])
	}
	return C.int(got)
}

//export vs_req_notify
func vs_req_notify(h C.uintptr_t, solicited C.int) C.int {
	r := rec[cqRec](h)
	if r == nil {
		return C.int(syscall.EINVAL)
	}
	return errno(r.cq.ReqNotify(solicited != 0))
}

//export vs_ack_cq
func vs_ack_cq(h C.uintptr_t, n C.uint) C.int {
	r := rec[cqRec](h)
	if r == nil {
		return C.int(syscall.EINVAL)
	}
	return errno(r.cq.AckEvents(int(n)))
}

//export vs_resize_cq
func vs_resize_cq(h C.uintptr_t, cqe C.int, real *C.int) C.int {
	r := rec[cqRec](h)
	if r == nil || real == nil {
		return C.int(syscall.EINVAL)
	}
	if err := r.cq.Resize(int(cqe)); err != nil {
		return errno(err)
	}
	*real = C.int(r.cq.CQE())
	return 0
}

// vs_cq_poll_ex is start_poll (next 0), next_poll (next 1) or end_poll
// (next 2) of the extended CQ; after a successful start or next it reads
// every field the CQ's wc_flags allow into out.
//
//export vs_cq_poll_ex
func vs_cq_poll_ex(h C.uintptr_t, next C.int, out *C.struct_capi_wc, ts, wall *C.uint64_t) C.int {
	r := rec[cqRec](h)
	if r == nil || out == nil || ts == nil || wall == nil {
		return C.int(syscall.EINVAL)
	}
	c := r.cq
	var err error
	switch next {
	case 0:
		err = c.StartPoll()
	case 1:
		err = c.NextPoll()
	default:
		return errno(c.EndPoll())
	}
	if err != nil {
		return errno(err)
	}
	id, st, err := c.Current()
	if err != nil {
		return errno(err)
	}
	w := verbs.WC{WRID: id, Status: st}
	if v, err := c.ReadOpcode(); err == nil {
		w.Opcode = v
	}
	if v, err := c.ReadVendorErr(); err == nil {
		w.VendorErr = v
	}
	if v, err := c.ReadByteLen(); err == nil {
		w.ByteLen = v
	}
	if v, err := c.ReadWCFlags(); err == nil {
		w.WCFlags = v
	}
	if w.WCFlags&verbs.WCWithInv != 0 {
		if v, err := c.ReadInvalidatedRkey(); err == nil {
			w.ImmData = v
		}
	} else if v, err := c.ReadImmData(); err == nil {
		w.ImmData = v
	}
	if v, err := c.ReadQPNum(); err == nil {
		w.QPNum = v
	}
	if v, err := c.ReadSrcQP(); err == nil {
		w.SrcQP = v
	}
	if v, err := c.ReadSLID(); err == nil {
		w.SLID = uint16(v)
	}
	if v, err := c.ReadSL(); err == nil {
		w.SL = v
	}
	if v, err := c.ReadDLIDPathBits(); err == nil {
		w.DLIDPathBits = v
	}
	*ts, *wall = 0, 0
	if v, err := c.ReadCompletionTS(); err == nil {
		*ts = C.uint64_t(v)
	}
	if v, err := c.ReadCompletionWallclockNS(); err == nil {
		*wall = C.uint64_t(v)
	}
	wcToC(&w, out)
	return 0
}

// Queue pairs.

//export vs_create_qp
func vs_create_qp(h C.uintptr_t, in *C.struct_capi_qp_init, cptr C.uintptr_t, out *C.uintptr_t,
	qpn *C.uint32_t, capOut *C.struct_ibv_qp_cap) C.int {
	pd := rec[pdRec](h)
	if pd == nil || in == nil || out == nil || qpn == nil || capOut == nil || cptr == 0 {
		return C.int(syscall.EINVAL)
	}
	scq, rcq := rec[cqRec](in.send_cq), rec[cqRec](in.recv_cq)
	xrc := verbs.QPType(in.qp_type) == verbs.QPTypeXRCSend // no receive side (XRC-06)
	if scq == nil || (rcq == nil && !xrc) {
		return C.int(syscall.EINVAL)
	}
	attr := sim.QPInitAttr{
		SendCQ: scq.cq,
		Cap: verbs.QPCap{MaxSendWR: uint32(in.cap.max_send_wr), MaxRecvWR: uint32(in.cap.max_recv_wr),
			MaxSendSGE: uint32(in.cap.max_send_sge), MaxRecvSGE: uint32(in.cap.max_recv_sge),
			MaxInlineData: uint32(in.cap.max_inline_data)},
		Type:     verbs.QPType(in.qp_type),
		SQSigAll: in.sq_sig_all != 0,
	}
	if rcq != nil {
		attr.RecvCQ = rcq.cq
	}
	if in.srq != 0 {
		s := rec[srqRec](in.srq)
		if s == nil {
			return C.int(syscall.EINVAL)
		}
		attr.SRQ = s.s
	}
	if in.comp_mask&C.IBV_QP_INIT_ATTR_SEND_OPS_FLAGS != 0 {
		attr.CompMask = sim.QPInitSendOpsFlags
		attr.SendOpsFlags = verbs.QPSendOps(in.send_ops_flags)
	}
	q, err := pd.pd.CreateQP(attr)
	if err != nil {
		return errno(err)
	}
	qr := &qpRec{q: q, pd: pd, ctx: pd.ctx, cptr: uintptr(cptr)}
	setCptr(q, uintptr(cptr))
	c := q.Cap()
	*capOut = C.struct_ibv_qp_cap{max_send_wr: C.uint32_t(c.MaxSendWR), max_recv_wr: C.uint32_t(c.MaxRecvWR),
		max_send_sge: C.uint32_t(c.MaxSendSGE), max_recv_sge: C.uint32_t(c.MaxRecvSGE),
		max_inline_data: C.uint32_t(c.MaxInlineData)}
	*qpn = C.uint32_t(q.Num())
	*out = newHandle(qr)
	adopt(qr.ctx, *out, rankQP, vs_destroy_qp)
	return 0
}

//export vs_destroy_qp
func vs_destroy_qp(h C.uintptr_t) C.int {
	r := rec[qpRec](h)
	if r == nil {
		return C.int(syscall.EINVAL)
	}
	undo := r.ctx.forget(r.q)
	err := r.q.Destroy()
	undo()
	if err != nil {
		return errno(err)
	}
	setCptr(r.q, 0)
	freeHandle(h)
	return 0
}

//export vs_modify_qp
func vs_modify_qp(h C.uintptr_t, a *C.struct_ibv_qp_attr, mask C.int) C.int {
	r := rec[qpRec](h)
	if r == nil || a == nil {
		return C.int(syscall.EINVAL)
	}
	attr := verbs.QPAttr{
		QPState:          verbs.QPState(a.qp_state),
		CurQPState:       verbs.QPState(a.cur_qp_state),
		PathMTU:          verbs.MTU(a.path_mtu),
		PathMigState:     verbs.MigState(a.path_mig_state),
		QKey:             uint32(a.qkey),
		RQPSN:            uint32(a.rq_psn),
		SQPSN:            uint32(a.sq_psn),
		DestQPNum:        uint32(a.dest_qp_num),
		QPAccessFlags:    verbs.AccessFlags(a.qp_access_flags),
		AHAttr:           ahFromC(&a.ah_attr),
		AltAHAttr:        ahFromC(&a.alt_ah_attr),
		PKeyIndex:        uint16(a.pkey_index),
		AltPKeyIndex:     uint16(a.alt_pkey_index),
		EnSQDAsyncNotify: a.en_sqd_async_notify != 0,
		MaxRDAtomic:      uint8(a.max_rd_atomic),
		MaxDestRDAtomic:  uint8(a.max_dest_rd_atomic),
		MinRNRTimer:      uint8(a.min_rnr_timer),
		PortNum:          uint8(a.port_num),
		Timeout:          uint8(a.timeout),
		RetryCnt:         uint8(a.retry_cnt),
		RNRRetry:         uint8(a.rnr_retry),
		AltPortNum:       uint8(a.alt_port_num),
		AltTimeout:       uint8(a.alt_timeout),
		RateLimit:        uint32(a.rate_limit),
		Cap: verbs.QPCap{MaxSendWR: uint32(a.cap.max_send_wr), MaxRecvWR: uint32(a.cap.max_recv_wr),
			MaxSendSGE: uint32(a.cap.max_send_sge), MaxRecvSGE: uint32(a.cap.max_recv_sge),
			MaxInlineData: uint32(a.cap.max_inline_data)},
	}
	return errno(r.q.Modify(&attr, verbs.QPAttrMask(mask)))
}

//export vs_query_qp
func vs_query_qp(h C.uintptr_t, mask C.int, a *C.struct_ibv_qp_attr, ia *C.struct_ibv_qp_init_attr) C.int {
	r := rec[qpRec](h)
	if r == nil || a == nil || ia == nil {
		return C.int(syscall.EINVAL)
	}
	attr, init, err := r.q.Query(verbs.QPAttrMask(mask))
	if err != nil {
		return errno(err)
	}
	*a = C.struct_ibv_qp_attr{}
	a.qp_state = uint32(attr.QPState)
	a.cur_qp_state = uint32(attr.CurQPState)
	a.path_mtu = uint32(attr.PathMTU)
	a.path_mig_state = uint32(attr.PathMigState)
	a.qkey = C.uint32_t(attr.QKey)
	a.rq_psn = C.uint32_t(attr.RQPSN)
	a.sq_psn = C.uint32_t(attr.SQPSN)
	a.dest_qp_num = C.uint32_t(attr.DestQPNum)
	a.qp_access_flags = C.uint(attr.QPAccessFlags)
	c := attr.Cap
	a.cap = C.struct_ibv_qp_cap{max_send_wr: C.uint32_t(c.MaxSendWR), max_recv_wr: C.uint32_t(c.MaxRecvWR),
		max_send_sge: C.uint32_t(c.MaxSendSGE), max_recv_sge: C.uint32_t(c.MaxRecvSGE),
		max_inline_data: C.uint32_t(c.MaxInlineData)}
	ahToC(&attr.AHAttr, &a.ah_attr)
	ahToC(&attr.AltAHAttr, &a.alt_ah_attr)
	a.pkey_index = C.uint16_t(attr.PKeyIndex)
	a.alt_pkey_index = C.uint16_t(attr.AltPKeyIndex)
	if attr.EnSQDAsyncNotify {
		a.en_sqd_async_notify = 1
	}
	if attr.SQDraining {
		a.sq_draining = 1
	}
	a.max_rd_atomic = C.uint8_t(attr.MaxRDAtomic)
	a.max_dest_rd_atomic = C.uint8_t(attr.MaxDestRDAtomic)
	a.min_rnr_timer = C.uint8_t(attr.MinRNRTimer)
	a.port_num = C.uint8_t(attr.PortNum)
	a.timeout = C.uint8_t(attr.Timeout)
	a.retry_cnt = C.uint8_t(attr.RetryCnt)
	a.rnr_retry = C.uint8_t(attr.RNRRetry)
	a.alt_port_num = C.uint8_t(attr.AltPortNum)
	a.alt_timeout = C.uint8_t(attr.AltTimeout)
	a.rate_limit = C.uint32_t(attr.RateLimit)
	// glue.c fills the pointers of the init attributes from the C QP.
	ic := init.Cap
	ia.cap = C.struct_ibv_qp_cap{max_send_wr: C.uint32_t(ic.MaxSendWR), max_recv_wr: C.uint32_t(ic.MaxRecvWR),
		max_send_sge: C.uint32_t(ic.MaxSendSGE), max_recv_sge: C.uint32_t(ic.MaxRecvSGE),
		max_inline_data: C.uint32_t(ic.MaxInlineData)}
	ia.qp_type = uint32(init.Type)
	if init.SQSigAll {
		ia.sq_sig_all = 1
	} else {
		ia.sq_sig_all = 0
	}
	return 0
}

// bounceSGE copies an inline request's payload (which need not be in
// registered memory) into the PD's bounce MR and returns one SGE naming the
// copy. The engine copies inline payloads when the request is posted, so
// the bounce buffer is free again as soon as PostSend returns.
func (r *qpRec) bounceSGE(list []verbs.SGE) ([]verbs.SGE, error) {
	pd := r.pd
	if pd.bounce == nil {
		pd.bbuf = make([]byte, 1<<16)
		mr, err := pd.pd.RegMRIOVA(pd.bbuf, uint64(uintptr(unsafe.Pointer(&pd.bbuf[0]))), 0)
		if err != nil {
			return nil, err
		}
		pd.bounce = mr
	}
	n := 0
	for _, s := range list {
		if uint64(n)+uint64(s.Length) > uint64(len(pd.bbuf)) {
			return nil, syscall.EINVAL
		}
		if s.Length > 0 && s.Addr == 0 {
			return nil, syscall.EFAULT
		}
		n += copy(pd.bbuf[n:], unsafe.Slice((*byte)(cAddr(s.Addr)), s.Length))
	}
	if n == 0 {
		return nil, nil
	}
	// The engine finds inline payloads by the MR's simulated address
	// (ibv_mr.addr in Go terms), not by the IOVA work requests use.
	return []verbs.SGE{{Addr: pd.bounce.Addr(), Length: uint32(n), LKey: pd.bounce.LKey()}}, nil
}

func sgesFromC(dst []verbs.SGE, p *C.struct_ibv_sge, n int) []verbs.SGE {
	if n <= 0 || p == nil {
		return dst
	}
	for _, s := range unsafe.Slice(p, n) {
		dst = append(dst, verbs.SGE{Addr: uint64(s.addr), Length: uint32(s.length), LKey: uint32(s.lkey)})
	}
	return dst
}

// bounceMu serializes the bounce buffers of all PDs: an inline post holds
// it from the copy until PostSend has taken the payload.
var bounceMu sync.Mutex

//export vs_post_send
func vs_post_send(h C.uintptr_t, in *C.struct_capi_swr, n C.int, posted *C.int) C.int {
	r := rec[qpRec](h)
	if r == nil || posted == nil || n < 0 || (in == nil && n > 0) {
		return C.int(syscall.EINVAL)
	}
	*posted = 0
	if n == 0 {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	wrs := unsafe.Slice(in, int(n))
	r.swrs, r.sges = r.swrs[:0], r.sges[:0]
	inline := false
	for i := range wrs {
		w := &wrs[i]
		if int(w.num_sge) < 0 || int(w.num_sge) > 1<<16 {
			*posted = C.int(i)
			return C.int(syscall.EINVAL)
		}
		r.sges = sgesFromC(r.sges, w.sg_list, int(w.num_sge))
		sw := verbs.SendWR{
			WRID: uint64(w.wr_id), Opcode: verbs.WROpcode(w.opcode), Flags: verbs.SendFlags(w.flags),
			Imm: uint32(w.imm), RemoteAddr: uint64(w.remote_addr), RKey: uint32(w.rkey),
			CompareAdd: uint64(w.compare_add), Swap: uint64(w.swap),
			RemoteQPN: uint32(w.remote_qpn), RemoteQKey: uint32(w.remote_qkey),
			RemoteSRQN: uint32(w.xrc_srqn),
		}
		if w.ah != 0 {
			a := rec[ahRec](w.ah)
			if a == nil {
				*posted = C.int(i)
				return C.int(syscall.EINVAL)
			}
			sw.AH = a.ah
		}
		if w.mw != 0 && !bindFromC(w, &sw) {
			*posted = C.int(i)
			return C.int(syscall.EINVAL)
		}
		if sw.Flags&verbs.SendInline != 0 && r.pd != nil { // an XRC_RECV QP has no PD, and sends nothing
			inline = true
		}
		r.swrs = append(r.swrs, sw)
	}
	// SGLists are cut after the appends, as r.sges may have moved.
	off := 0
	for i := range r.swrs {
		k := int(wrs[i].num_sge)
		r.swrs[i].SGList = r.sges[off : off+k : off+k]
		off += k
	}
	if inline {
		bounceMu.Lock()
		defer bounceMu.Unlock()
		// Post one request at a time, each inline one through the bounce
		// buffer, so the buffer holds only one payload at once.
		for i := range r.swrs {
			w := r.swrs[i]
			if w.Flags&verbs.SendInline != 0 {
				l, err := r.bounceSGE(w.SGList)
				if err != nil {
					*posted = C.int(i)
					return errno(err)
				}
				w.SGList = l
			}
			if _, err := r.q.PostSend([]verbs.SendWR{w}); err != nil {
				*posted = C.int(i)
				return errno(err)
			}
		}
		*posted = n
		return 0
	}
	got, err := r.q.PostSend(r.swrs)
	*posted = C.int(got)
	return errno(err)
}

func recvFromC(dst []verbs.RecvWR, sges []verbs.SGE, in *C.struct_capi_rwr, n int) ([]verbs.RecvWR, []verbs.SGE, bool) {
	ws := unsafe.Slice(in, n)
	dst = dst[:0]
	sges = sges[:0]
	for i := range ws {
		if ws[i].num_sge < 0 || ws[i].num_sge > 1<<16 {
			return dst, sges, false
		}
		sges = sgesFromC(sges, ws[i].sg_list, int(ws[i].num_sge))
		dst = append(dst, verbs.RecvWR{WRID: uint64(ws[i].wr_id)})
	}
	off := 0
	for i := range dst {
		k := int(ws[i].num_sge)
		dst[i].SGList = sges[off : off+k : off+k]
		off += k
	}
	return dst, sges, true
}

//export vs_post_recv
func vs_post_recv(h C.uintptr_t, in *C.struct_capi_rwr, n C.int, posted *C.int) C.int {
	r := rec[qpRec](h)
	if r == nil || posted == nil || n < 0 || (in == nil && n > 0) {
		return C.int(syscall.EINVAL)
	}
	*posted = 0
	if n == 0 {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var ok bool
	r.rwrs, r.sges, ok = recvFromC(r.rwrs, r.sges, in, int(n))
	if !ok {
		return C.int(syscall.EINVAL)
	}
	got, err := r.q.PostRecv(r.rwrs)
	*posted = C.int(got)
	return errno(err)
}

// vs_wr is the work request builder of an extended QP: one entry for every
// wr_* function, op naming which.
//
//export vs_wr
func vs_wr(h C.uintptr_t, op C.int, wrID C.uint64_t, flags C.uint32_t, a32, b32 C.uint32_t,
	a64, b64, c64 C.uint64_t, obj C.uintptr_t) C.int {
	r := rec[qpRec](h)
	if r == nil {
		return C.int(syscall.EINVAL)
	}
	q := r.q
	// The wr_id and flags the program put in struct ibv_qp_ex before this
	// builder apply to the request it starts.
	switch op {
	case C.CAPI_WR_SEND, C.CAPI_WR_SEND_IMM, C.CAPI_WR_SEND_INV, C.CAPI_WR_RDMA_WRITE,
		C.CAPI_WR_RDMA_WRITE_IMM, C.CAPI_WR_RDMA_READ, C.CAPI_WR_ATOMIC_CMP_SWP,
		C.CAPI_WR_ATOMIC_FETCH_ADD, C.CAPI_WR_LOCAL_INV, C.CAPI_WR_BIND_MW, C.CAPI_WR_ATOMIC_WRITE:
		q.SetWRID(uint64(wrID))
		q.SetWRFlags(verbs.SendFlags(flags))
	}
	switch op {
	case C.CAPI_WR_START:
		q.WRStart()
	case C.CAPI_WR_COMPLETE:
		return errno(q.WRComplete())
	case C.CAPI_WR_ABORT:
		q.WRAbort()
	case C.CAPI_WR_SEND:
		q.WRSend()
	case C.CAPI_WR_SEND_IMM:
		q.WRSendImm(uint32(a32))
	case C.CAPI_WR_SEND_INV:
		q.WRSendInv(uint32(a32))
	case C.CAPI_WR_RDMA_WRITE:
		q.WRRDMAWrite(uint32(a32), uint64(a64))
	case C.CAPI_WR_RDMA_WRITE_IMM:
		q.WRRDMAWriteImm(uint32(a32), uint64(a64), uint32(b32))
	case C.CAPI_WR_RDMA_READ:
		q.WRRDMARead(uint32(a32), uint64(a64))
	case C.CAPI_WR_ATOMIC_CMP_SWP:
		q.WRAtomicCmpSwp(uint32(a32), uint64(a64), uint64(b64), uint64(c64))
	case C.CAPI_WR_ATOMIC_FETCH_ADD:
		q.WRAtomicFetchAdd(uint32(a32), uint64(a64), uint64(b64))
	case C.CAPI_WR_ATOMIC_WRITE:
		var v [8]byte
		binary.NativeEndian.PutUint64(v[:], uint64(b64))
		q.WRAtomicWrite(uint32(a32), uint64(a64), v)
	case C.CAPI_WR_LOCAL_INV:
		q.WRLocalInv(uint32(a32))
	case C.CAPI_WR_SET_SGE:
		q.WRSetSGE(uint32(a32), uint64(a64), uint32(b32))
	case C.CAPI_WR_BIND_MW:
		wrBindMW(q, a32, b32, a64, b64, c64, obj)
	case C.CAPI_WR_SET_XRC_SRQN:
		q.WRSetXRCSRQN(uint32(a32))
	case C.CAPI_WR_SET_UD_ADDR:
		var ah *sim.AH
		if a := rec[ahRec](obj); a != nil {
			ah = a.ah
		}
		q.WRSetUDAddr(ah, uint32(a32), uint32(b32))
	case C.CAPI_WR_SET_INLINE:
		// a64 is the address, b64 the length of one buffer; the builder
		// copies it now.
		if a64 == 0 && b64 != 0 {
			q.WRSetInlineData(nil)
			return C.int(syscall.EFAULT)
		}
		q.WRSetInlineData(bytesAt(cAddr(uint64(a64)), uint64(b64)))
	default:
		return C.int(syscall.EINVAL)
	}
	return 0
}

//export vs_wr_sge_list
func vs_wr_sge_list(h C.uintptr_t, p *C.struct_ibv_sge, n C.size_t) C.int {
	r := rec[qpRec](h)
	if r == nil || (p == nil && n > 0) || n > 1<<16 {
		return C.int(syscall.EINVAL)
	}
	r.mu.Lock()
	r.sges = sgesFromC(r.sges[:0], p, int(n))
	r.q.WRSetSGEList(r.sges)
	r.mu.Unlock()
	return 0
}

//export vs_wr_inline_list
func vs_wr_inline_list(h C.uintptr_t, p *C.struct_ibv_data_buf, n C.size_t) C.int {
	r := rec[qpRec](h)
	if r == nil || (p == nil && n > 0) || n > 1<<16 {
		return C.int(syscall.EINVAL)
	}
	bufs := make([][]byte, 0, int(n))
	for _, b := range unsafe.Slice(p, int(n)) {
		if b.addr == nil && b.length != 0 {
			return C.int(syscall.EFAULT)
		}
		bufs = append(bufs, bytesAt(b.addr, uint64(b.length)))
	}
	r.q.WRSetInlineDataList(bufs)
	return 0
}

// Shared receive queues.

//export vs_create_srq
func vs_create_srq(h C.uintptr_t, attr *C.struct_ibv_srq_attr, cptr C.uintptr_t, out *C.uintptr_t) C.int {
	pd := rec[pdRec](h)
	if pd == nil || attr == nil || out == nil || cptr == 0 {
		return C.int(syscall.EINVAL)
	}
	s, err := pd.pd.CreateSRQ(sim.SRQInitAttr{Attr: verbs.SRQAttr{MaxWR: uint32(attr.max_wr),
		MaxSGE: uint32(attr.max_sge), SRQLimit: uint32(attr.srq_limit)}})
	if err != nil {
		return errno(err)
	}
	got, err := s.Query()
	if err == nil {
		attr.max_wr, attr.max_sge = C.uint32_t(got.MaxWR), C.uint32_t(got.MaxSGE)
	}
	setCptr(s, uintptr(cptr))
	*out = newHandle(&srqRec{s: s, ctx: pd.ctx, cptr: uintptr(cptr)})
	adopt(pd.ctx, *out, rankSRQ, vs_destroy_srq)
	return 0
}

//export vs_modify_srq
func vs_modify_srq(h C.uintptr_t, attr *C.struct_ibv_srq_attr, mask C.int) C.int {
	r := rec[srqRec](h)
	if r == nil || attr == nil {
		return C.int(syscall.EINVAL)
	}
	a := verbs.SRQAttr{MaxWR: uint32(attr.max_wr), MaxSGE: uint32(attr.max_sge), SRQLimit: uint32(attr.srq_limit)}
	return errno(r.s.Modify(&a, verbs.SRQAttrMask(mask)))
}

//export vs_query_srq
func vs_query_srq(h C.uintptr_t, attr *C.struct_ibv_srq_attr) C.int {
	r := rec[srqRec](h)
	if r == nil || attr == nil {
		return C.int(syscall.EINVAL)
	}
	a, err := r.s.Query()
	if err != nil {
		return errno(err)
	}
	attr.max_wr, attr.max_sge, attr.srq_limit = C.uint32_t(a.MaxWR), C.uint32_t(a.MaxSGE), C.uint32_t(a.SRQLimit)
	return 0
}

//export vs_destroy_srq
func vs_destroy_srq(h C.uintptr_t) C.int {
	r := rec[srqRec](h)
	if r == nil {
		return C.int(syscall.EINVAL)
	}
	undo := r.ctx.forget(r.s)
	err := r.s.Destroy()
	undo()
	if err != nil {
		return errno(err)
	}
	setCptr(r.s, 0)
	freeHandle(h)
	return 0
}

//export vs_post_srq_recv
func vs_post_srq_recv(h C.uintptr_t, in *C.struct_capi_rwr, n C.int, posted *C.int) C.int {
	r := rec[srqRec](h)
	if r == nil || posted == nil || n < 0 || (in == nil && n > 0) {
		return C.int(syscall.EINVAL)
	}
	*posted = 0
	if n == 0 {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var ok bool
	r.rwrs, r.sges, ok = recvFromC(r.rwrs, r.sges, in, int(n))
	if !ok {
		return C.int(syscall.EINVAL)
	}
	got, err := r.s.PostRecv(r.rwrs)
	*posted = C.int(got)
	return errno(err)
}

// describe names the configuration for diagnostics (VERBSIM_DEBUG).
func describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "devices=%d ports=%d profile=%s mode=%v", fabCfg.Devices, fabCfg.Ports, fabCfg.Profile.Name, fabCfg.Mode)
	if fabCfg.Tick != 0 {
		fmt.Fprintf(&b, " tick=%v", fabCfg.Tick)
	}
	if fabWire == nil {
		b.WriteString(" fabric=none (this process only)")
		return b.String()
	}
	fmt.Fprintf(&b, " fabric=%s stations:", fabCfg.Fabric)
	for i := 0; i < fabCfg.Devices; i++ {
		name := fmt.Sprintf("sim%d", i)
		for p := 1; p <= fabCfg.Ports; p++ {
			fmt.Fprintf(&b, " %s/%d=%d", name, p, fabWire.lid(name, p))
		}
	}
	return b.String()
}
