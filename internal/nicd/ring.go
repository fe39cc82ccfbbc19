//go:build linux

package nicd

import (
	"fmt"
	"math/bits"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/verbsim/verbsim/internal/cabi"
	"github.com/verbsim/verbsim/internal/simhook"
	"github.com/verbsim/verbsim/verbs"
)

// The fast path of a CQ (nicd.h, struct nicd_cq_ring): the daemon mirrors
// the engine CQ's completions into memory the program shares with it, which
// the program polls without a system call. cqRing is the daemon's side: a
// simhook.CQShadow of the engine CQ. The engine stays the CQ; the program's
// progress (tail, seen) reaches it through TakenLocked.

// ringHeader is the size of struct nicd_cq_ring's header.
var (
	ringHeader = cabi.Size[cqRingHeader]()
	cqeSize    = cabi.Size[cqe]()
)

// The memfd seals the daemon requires, so that the program cannot shrink
// the memory under it (which would be SIGBUS in the daemon).
const (
	fGetSeals  = 1034 // F_GET_SEALS
	fSealShrnk = 0x2  // F_SEAL_SHRINK
)

type cqRing struct {
	mem    []byte
	hdr    *cqRingHeader
	size   uint64
	head   uint64 // what the daemon wrote; hdr.Head is its published copy
	synced uint64 // the tail the engine was last told of
	// pending are completions that did not fit: only between a resize
	// that outgrew the ring and the program's new ring (NICD_CQ_RING).
	pending []cqe
	flags   verbs.WCExFlags
	khz     uint64 // hca_core_clock, for the timestamps in cycles
	mapped  bool   // mem is an mmap of the program's memfd
}

// mapRing maps the program's ring memfd, which must be sealed against
// shrinking and hold size entries.
func mapRing(fd int, size uint64) (*cqRing, error) {
	if size == 0 || size&(size-1) != 0 || size > 1<<24 {
		return nil, fmt.Errorf("a ring of %d entries: want a power of two up to 2^24: %w", size, syscall.EINVAL)
	}
	seals, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), fGetSeals, 0)
	if e != 0 || seals&fSealShrnk == 0 {
		return nil, fmt.Errorf("the ring's memfd is not sealed against shrinking: %w", syscall.EINVAL)
	}
	var st syscall.Stat_t
	n := uint64(ringHeader) + size*uint64(cqeSize)
	if err := syscall.Fstat(fd, &st); err != nil || uint64(st.Size) < n {
		return nil, fmt.Errorf("the ring's memfd holds %d bytes, want %d: %w", st.Size, n, syscall.EINVAL)
	}
	mem, err := syscall.Mmap(fd, 0, int(n), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	r := newRing(mem, size)
	r.mapped = true
	return r, nil
}

// newRing is the ring in mem (header and size entries).
func newRing(mem []byte, size uint64) *cqRing {
	r := &cqRing{mem: mem, hdr: (*cqRingHeader)(unsafe.Pointer(&mem[0])), size: size}
	r.head = atomic.LoadUint64(&r.hdr.Head)
	r.synced = r.head
	atomic.StoreUint32(&r.hdr.Size, uint32(size))
	return r
}

func (r *cqRing) unmap() {
	if r.mem != nil && r.mapped {
		syscall.Munmap(r.mem)
	}
	r.mem, r.hdr = nil, nil
}

func (r *cqRing) entry(i uint64) *cqe {
	return (*cqe)(unsafe.Pointer(&r.mem[ringHeader+int(i&(r.size-1))*cqeSize]))
}

// progress reads the program's tail and seen, each clamped to what the
// daemon wrote: a program that writes nonsense only loses its completions.
func (r *cqRing) progress() (tail, seen uint64) {
	tail = atomic.LoadUint64(&r.hdr.Tail)
	if tail < r.synced || tail > r.head {
		tail = r.synced
	}
	seen = atomic.LoadUint64(&r.hdr.Seen)
	if seen < tail || seen > r.head {
		seen = tail
	}
	return tail, seen
}

// live counts the entries of [from, to) not marked dead.
func (r *cqRing) live(from, to uint64) int {
	n := 0
	for i := from; i < to; i++ {
		if atomic.LoadUint32(&r.entry(i).Dead) == 0 {
			n++
		}
	}
	return n
}

// fill makes the ring's entry for completion w.
func (r *cqRing) fill(x *cqe, w *verbs.WC, ns uint64) {
	v := *w
	f := r.flags
	if f&verbs.WCExByteLen == 0 {
		v.ByteLen = 0
	}
	if f&verbs.WCExImm == 0 {
		v.ImmData = 0
	}
	if f&verbs.WCExQPNum == 0 {
		v.QPNum = 0
	}
	if f&verbs.WCExSrcQP == 0 {
		v.SrcQP = 0
	}
	if f&verbs.WCExSLID == 0 {
		v.SLID = 0
	}
	if f&verbs.WCExSL == 0 {
		v.SL = 0
	}
	if f&verbs.WCExDLIDPathBits == 0 {
		v.DLIDPathBits = 0
	}
	x.WC.Set(&v)
	x.TS, x.Wallclock = 0, 0
	if f&verbs.WCExCompletionTimestamp != 0 {
		x.TS = cycles(ns, r.khz)
	}
	if f&verbs.WCExCompletionTimestampWallclock != 0 {
		x.Wallclock = ns
	}
	x.Dead = 0
}

// put writes x as the next entry, if there is room; false otherwise.
func (r *cqRing) put(x *cqe) bool {
	tail, _ := r.progress()
	if r.head-tail >= r.size {
		return false
	}
	*r.entry(r.head) = *x
	r.head++
	atomic.StoreUint64(&r.hdr.Head, r.head)
	r.wake()
	return true
}

// wake bumps wseq and wakes the program's polls that sleep on it.
func (r *cqRing) wake() {
	atomic.AddUint32(&r.hdr.WSeq, 1)
	if atomic.LoadUint32(&r.hdr.Waiters) != 0 {
		syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(&r.hdr.WSeq)), futexWake, 1<<30, 0, 0, 0)
	}
}

// futexWake is FUTEX_WAKE, on memory shared between processes.
const futexWake = 1

// flush writes the pending completions that now fit.
func (r *cqRing) flush() {
	for len(r.pending) > 0 && r.put(&r.pending[0]) {
		r.pending = r.pending[1:]
	}
	if len(r.pending) == 0 {
		r.pending = nil
	}
}

// PushedLocked implements simhook.CQShadow.
func (r *cqRing) PushedLocked(w *verbs.WC, ns uint64) {
	var x cqe
	r.fill(&x, w, ns)
	if len(r.pending) > 0 || !r.put(&x) {
		r.pending = append(r.pending, x)
	}
}

// TakenLocked implements simhook.CQShadow.
func (r *cqRing) TakenLocked() (popped, seen int) {
	tail, reach := r.progress()
	popped = r.live(r.synced, tail)
	seen = r.live(tail, reach)
	r.synced = tail
	r.flush()
	return popped, seen
}

// ResetLocked implements simhook.CQShadow: the engine's completions are a
// subsequence of what the ring and the pending list hold past tail (a
// purge keeps the rest in order; a resize keeps them all), so the ones
// the engine no longer has are marked dead.
func (r *cqRing) ResetLocked(entries func(yield func(w *verbs.WC, ns uint64) bool)) {
	type item struct {
		w  verbs.WC
		ns uint64
	}
	var want []item
	entries(func(w *verbs.WC, ns uint64) bool {
		want = append(want, item{*w, ns})
		return true
	})
	tail, _ := r.progress()
	k := 0
	for i := tail; i < r.head; i++ {
		x := r.entry(i)
		if atomic.LoadUint32(&x.Dead) != 0 {
			continue
		}
		var y cqe
		if k < len(want) {
			r.fill(&y, &want[k].w, want[k].ns)
		}
		if k < len(want) && y.WC == x.WC {
			k++
			continue
		}
		atomic.StoreUint32(&x.Dead, 1)
	}
	// What the ring does not hold is pending, in order.
	r.pending = r.pending[:0]
	for ; k < len(want); k++ {
		var y cqe
		r.fill(&y, &want[k].w, want[k].ns)
		r.pending = append(r.pending, y)
	}
	r.flush()
}

// OverrunLocked implements simhook.CQShadow.
func (r *cqRing) OverrunLocked() {
	atomic.StoreUint32(&r.hdr.Error, 1)
	r.wake()
}

// BatchLocked implements simhook.CQShadow.
func (r *cqRing) BatchLocked() bool { return atomic.LoadUint32(&r.hdr.Batch) != 0 }

// cycles converts ns nanoseconds into cycles of a khz clock, as the
// engine's CQ does (CQX-09).
func cycles(ns, khz uint64) uint64 {
	hi, lo := bits.Mul64(ns, khz)
	if hi >= 1e6 {
		return ^uint64(0)
	}
	q, _ := bits.Div64(hi, lo, 1e6)
	return q
}

func init() { handlers[opCQRing] = hCQRing }

// hCQRing gives a CQ the ring the program polls from now on: the memfd
// that came with the request, of a entries (NICD_CQ_RING). A ring the CQ
// had before is replaced, what it held moving to the new one.
func hCQRing(c *conn, r *req, body []byte, fds []int) (reply, error) {
	q := get[cqObj](c.s, r.Obj)
	if q == nil || len(fds) != 1 {
		return reply{}, einval("ibv_create_cq")
	}
	ring, err := mapRing(fds[0], r.A)
	if err != nil {
		return reply{}, err
	}
	ring.flags = q.cq.WCFlags()
	if a, err := q.ctx.c.QueryDeviceEx(0); err == nil {
		ring.khz = a.HCACoreClock
	}
	if err := simhook.SetCQShadow(q.cq, ring); err != nil {
		ring.unmap()
		return reply{}, err
	}
	q.mu.Lock()
	old := q.ring
	q.ring = ring
	q.mu.Unlock()
	if old != nil {
		old.unmap()
	}
	return reply{}, nil
}
