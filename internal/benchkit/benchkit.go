// Package benchkit holds the workloads of `verbsim bench` (issue #14): each
// figure of docs/performance.md as a subject, built on real sim objects,
// and the floor it is compared with, a plain-Go operation that does the
// least work the subject could do.
//
// A workload is an Op: it runs n iterations and returns the time they took,
// so that a workload can keep its own refills and set-up out of the
// measurement. Set-up happens once, when the workload is built; Close
// releases what it holds.
package benchkit

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/verbsim/verbsim/explore"
	"github.com/verbsim/verbsim/explore/patterns"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// Op runs n iterations of a workload and returns the time they took.
type Op func(n int) (time.Duration, error)

// Workload is an Op with what it holds.
type Workload struct {
	Op    Op
	Close func() // releases the objects and goroutines of the workload; may be nil
}

// End is one side of a connection: a context, a PD, a CQ, a registered
// buffer and a QP.
type End struct {
	Ctx *sim.Context
	PD  *sim.PD
	CQ  *sim.CQ
	Buf []byte
	MR  *sim.MR
	QP  *sim.QP
}

// EndConfig sizes an End.
type EndConfig struct {
	BufSize int // the registered buffer
	CQE     int // the CQ's capacity
}

// NewEnd opens d and makes an End with a buffer registered for every
// access and an RC QP of depth 64, 4 SGEs and 64 bytes of inline
// data, both of whose queues complete on the End's CQ.
func NewEnd(d *sim.Device, cfg EndConfig) (*End, error) {
	ctx, err := d.Open()
	if err != nil {
		return nil, err
	}
	pd, err := ctx.AllocPD()
	if err != nil {
		return nil, err
	}
	c, err := ctx.CreateCQ(cfg.CQE, nil, nil, 0)
	if err != nil {
		return nil, err
	}
	e := &End{Ctx: ctx, PD: pd, CQ: c, Buf: make([]byte, cfg.BufSize)}
	e.MR, err = pd.RegMR(e.Buf, verbs.AccessLocalWrite|verbs.AccessRemoteWrite|verbs.AccessRemoteRead|verbs.AccessRemoteAtomic)
	if err != nil {
		return nil, err
	}
	if e.QP, err = e.NewQP(); err != nil {
		return nil, err
	}
	return e, nil
}

// NewQP makes one more RC QP on e's PD and CQ, shaped as NewEnd's.
func (e *End) NewQP() (*sim.QP, error) {
	return e.PD.CreateQP(sim.QPInitAttr{SendCQ: e.CQ, RecvCQ: e.CQ, Type: verbs.QPTypeRC,
		Cap: verbs.QPCap{MaxSendWR: 64, MaxRecvWR: 64, MaxSendSGE: 4, MaxRecvSGE: 4, MaxInlineData: 64}})
}

// SGE addresses n bytes of e's buffer from offset off.
func (e *End) SGE(off, n int) verbs.SGE {
	return verbs.SGE{Addr: e.MR.Addr() + uint64(off), Length: uint32(n), LKey: e.MR.LKey()}
}

// Pair makes a fabric of two devices, "a" and "b", with one End on each and
// their QPs connected. The fabric is closed by the caller.
func Pair(cfg sim.Config, bufSize int) (*sim.Fabric, *End, *End, error) {
	cfg.Devices = []sim.DeviceConfig{{Name: "a"}, {Name: "b"}}
	f, err := sim.NewFabric(cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	ec := EndConfig{BufSize: bufSize, CQE: 1024}
	x, err := NewEnd(f.Devices()[0], ec)
	if err != nil {
		f.Close()
		return nil, nil, nil, err
	}
	y, err := NewEnd(f.Devices()[1], ec)
	if err != nil {
		f.Close()
		return nil, nil, nil, err
	}
	if err := sim.Connect(x.QP, y.QP, sim.ConnectOptions{}); err != nil {
		f.Close()
		return nil, nil, nil, err
	}
	return f, x, y, nil
}

// PollOne polls exactly one successful completion from e's CQ.
func (e *End) PollOne(w []verbs.WC) error {
	if n, err := e.CQ.Poll(w[:1]); n != 1 || err != nil || w[0].Status != verbs.WCSuccess {
		return fmt.Errorf("poll: %d completions, %v, %v", n, err, &w[0])
	}
	return nil
}

// Exchange returns an Op that, per iteration, posts recv on the QP of y
// (or of ys[i] for the i-th pair when many are given), posts send on x's,
// then polls one completion on each side.
func Exchange(xs, ys []*sim.QP, xcq, ycq *End, recv []verbs.RecvWR, send []verbs.SendWR) Op {
	w := make([]verbs.WC, 1)
	next := 0
	return func(n int) (time.Duration, error) {
		start := time.Now()
		for range n {
			x, y := xs[next], ys[next]
			if next++; next == len(xs) {
				next = 0
			}
			if _, err := y.PostRecv(recv); err != nil {
				return 0, err
			}
			if _, err := x.PostSend(send); err != nil {
				return 0, err
			}
			if err := xcq.PollOne(w); err != nil {
				return 0, err
			}
			if err := ycq.PollOne(w); err != nil {
				return 0, err
			}
		}
		return time.Since(start), nil
	}
}

// RCSend64 is a 64-byte RC SEND between two devices, posted and both
// completions polled, per iteration.
func RCSend64(cfg sim.Config) (Workload, error) {
	f, x, y, err := Pair(cfg, 1<<16)
	if err != nil {
		return Workload{}, err
	}
	recv := []verbs.RecvWR{{WRID: 1, SGList: []verbs.SGE{y.SGE(0, 64)}}}
	send := []verbs.SendWR{{WRID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{x.SGE(0, 64)}}}
	return Workload{Op: Exchange([]*sim.QP{x.QP}, []*sim.QP{y.QP}, x, y, recv, send), Close: func() { f.Close() }}, nil
}

// ring is the floor's completion queue: a mutex-guarded ring of WCs.
type ring struct {
	mu         sync.Mutex
	buf        []verbs.WC
	head, tail int
}

func newRing(n int) *ring { return &ring{buf: make([]verbs.WC, n)} }

func (r *ring) push(w *verbs.WC) {
	r.mu.Lock()
	r.buf[r.tail%len(r.buf)] = *w
	r.tail++
	r.mu.Unlock()
}

// pop copies up to len(out) entries out; it returns how many.
func (r *ring) pop(out []verbs.WC) int {
	r.mu.Lock()
	n := min(len(out), r.tail-r.head)
	for i := range n {
		out[i] = r.buf[(r.head+i)%len(r.buf)]
	}
	r.head += n
	r.mu.Unlock()
	return n
}

// RingPushPop2 is the floor of RCSend64: two mutex-guarded ring push+pops
// of a WC, one per completion the SEND makes.
func RingPushPop2() Workload {
	a, b := newRing(64), newRing(64)
	w := verbs.WC{WRID: 1, Status: verbs.WCSuccess, Opcode: verbs.WCSend, ByteLen: 64}
	out := make([]verbs.WC, 1)
	return Workload{Op: func(n int) (time.Duration, error) {
		start := time.Now()
		for range n {
			a.push(&w)
			b.push(&w)
			a.pop(out)
			b.pop(out)
		}
		return time.Since(start), nil
	}}
}

// PollBatch16 polls 16 completions per iteration from a CQ that always
// holds them, each pushed as the adapter writes a work completion. Refills
// are not timed.
func PollBatch16() (Workload, error) {
	const depth = 1 << 12
	f, err := sim.NewFabric(sim.Config{})
	if err != nil {
		return Workload{}, err
	}
	vctx, err := f.Devices()[0].Open()
	if err != nil {
		return Workload{}, err
	}
	c, err := vctx.CreateCQ(depth, nil, nil, 0)
	if err != nil {
		return Workload{}, err
	}
	w := verbs.WC{WRID: 1, Status: verbs.WCSuccess, Opcode: verbs.WCRecv, ByteLen: 64}
	buf := make([]verbs.WC, 16)
	cqe, left := c.CQE(), 0
	return Workload{Op: func(n int) (time.Duration, error) {
		var d time.Duration
		for n > 0 {
			for ; left < cqe; left++ {
				if _, err := c.Push(w, false); err != nil {
					return 0, err
				}
			}
			batch := min(n, left/16)
			left -= 16 * batch
			start := time.Now()
			for range batch {
				if k, err := c.Poll(buf); k != 16 || err != nil {
					return 0, fmt.Errorf("poll: %d, %v", k, err)
				}
			}
			d += time.Since(start)
			n -= batch
		}
		return d, nil
	}, Close: func() { c.Destroy() }}, nil
}

// RingPop16 is the floor of PollBatch16: a pop of 16 WCs from a
// mutex-guarded ring. Refills are not timed.
func RingPop16() Workload {
	const depth = 1 << 12
	r := newRing(depth)
	w := verbs.WC{WRID: 1, Status: verbs.WCSuccess, Opcode: verbs.WCRecv, ByteLen: 64}
	out := make([]verbs.WC, 16)
	return Workload{Op: func(n int) (time.Duration, error) {
		var d time.Duration
		for n > 0 {
			for r.tail-r.head < depth {
				r.push(&w)
			}
			batch := min(n, depth/16)
			start := time.Now()
			for range batch {
				r.pop(out)
			}
			d += time.Since(start)
			n -= batch
		}
		return d, nil
	}}
}

// EventWakeup is the event path end to end: a consumer goroutine blocked in
// GetEvent is woken by a completion on an armed CQ, acks the event,
// re-arms and polls, while the producer waits for it to be ready for the
// next round. One iteration is one round trip between two goroutines.
func EventWakeup(cfg sim.Config) (Workload, error) {
	f, err := sim.NewFabric(cfg)
	if err != nil {
		return Workload{}, err
	}
	ctx, err := f.Devices()[0].Open()
	if err != nil {
		f.Close()
		return Workload{}, err
	}
	ch, err := ctx.CreateCompChannel()
	if err != nil {
		f.Close()
		return Workload{}, err
	}
	q, err := ctx.CreateCQ(64, nil, ch, 0)
	if err != nil {
		f.Close()
		return Workload{}, err
	}
	q.ReqNotify(false)
	ready := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]verbs.WC, 16)
		bg := context.Background()
		for {
			ready <- struct{}{}
			got, _, err := ch.GetEvent(bg)
			if err != nil {
				return
			}
			got.AckEvents(1)
			got.ReqNotify(false)
			for {
				if n, _ := got.Poll(buf); n == 0 {
					break
				}
			}
		}
	}()
	w := verbs.WC{WRID: 1, Status: verbs.WCSuccess, Opcode: verbs.WCRecv}
	return Workload{Op: func(n int) (time.Duration, error) {
		start := time.Now()
		for range n {
			<-ready
			if _, err := q.Push(w, false); err != nil {
				return 0, err
			}
		}
		return time.Since(start), nil
	}, Close: func() {
		<-ready
		q.Destroy()
		ch.Destroy() // wakes the consumer with EBADF
		<-done
		f.Close()
	}}, nil
}

// ChannelPingPong is the floor of EventWakeup: a round trip between two
// goroutines over Go channels.
func ChannelPingPong() Workload {
	ping, pong := make(chan int), make(chan int)
	go func() {
		for v := range ping {
			pong <- v
		}
		close(pong)
	}()
	return Workload{Op: func(n int) (time.Duration, error) {
		start := time.Now()
		for i := range n {
			ping <- i
			<-pong
		}
		return time.Since(start), nil
	}, Close: func() {
		close(ping)
		<-pong
	}}
}

// postOne is an Op that posts send on x and polls its one completion.
func postOne(x *End, send []verbs.SendWR) Op {
	w := make([]verbs.WC, 1)
	return func(n int) (time.Duration, error) {
		start := time.Now()
		for range n {
			if _, err := x.QP.PostSend(send); err != nil {
				return 0, err
			}
			if err := x.PollOne(w); err != nil {
				return 0, err
			}
		}
		return time.Since(start), nil
	}
}

// RDMAWrite is an RDMA WRITE of size bytes, posted and its completion
// polled, per iteration.
func RDMAWrite(cfg sim.Config, size int) (Workload, error) {
	f, x, y, err := Pair(cfg, size)
	if err != nil {
		return Workload{}, err
	}
	send := []verbs.SendWR{{WRID: 2, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled, SGList: []verbs.SGE{x.SGE(0, size)},
		RemoteAddr: y.MR.Addr(), RKey: y.MR.RKey()}}
	return Workload{Op: postOne(x, send), Close: func() { f.Close() }}, nil
}

// RDMARead is an RDMA READ of size bytes, posted and its completion
// polled, per iteration.
func RDMARead(cfg sim.Config, size int) (Workload, error) {
	f, x, y, err := Pair(cfg, size)
	if err != nil {
		return Workload{}, err
	}
	send := []verbs.SendWR{{WRID: 2, Opcode: verbs.WRRDMARead, Flags: verbs.SendSignaled, SGList: []verbs.SGE{x.SGE(0, size)},
		RemoteAddr: y.MR.Addr(), RKey: y.MR.RKey()}}
	return Workload{Op: postOne(x, send), Close: func() { f.Close() }}, nil
}

// Copy is the floor of the RDMA figures: a copy() of size bytes.
func Copy(size int) Workload {
	src, dst := make([]byte, size), make([]byte, size)
	return Workload{Op: func(n int) (time.Duration, error) {
		start := time.Now()
		for range n {
			copy(dst, src)
		}
		return time.Since(start), nil
	}}
}

// IdleQPBytes creates n idle RC QPs with 16-deep queues and one SGE each on
// one device and returns the heap they hold, per QP, from
// runtime.MemStats.
func IdleQPBytes(cfg sim.Config, n int) (float64, error) {
	attr := sim.DefaultDeviceAttr()
	if attr.MaxQP < n {
		attr.MaxQP = n
	}
	cfg.Devices = []sim.DeviceConfig{{Name: "d", Attr: attr}}
	f, err := sim.NewFabric(cfg)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	ctx, err := f.Devices()[0].Open()
	if err != nil {
		return 0, err
	}
	pd, err := ctx.AllocPD()
	if err != nil {
		return 0, err
	}
	c, err := ctx.CreateCQ(16, nil, nil, 0)
	if err != nil {
		return 0, err
	}
	init := sim.QPInitAttr{SendCQ: c, RecvCQ: c, Type: verbs.QPTypeRC, Cap: verbs.QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1}}
	qps := make([]*sim.QP, 0, n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range n {
		q, err := pd.CreateQP(init)
		if err != nil {
			return 0, err
		}
		qps = append(qps, q)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / float64(n)
	for _, q := range qps {
		q.Destroy()
	}
	return per, nil
}

// ManyPairs connects pairs RC QP pairs between two devices (one context,
// PD, buffer and CQ per device) and exchanges one 64-byte SEND per
// iteration, on the pairs in turn, polling both completions.
func ManyPairs(cfg sim.Config, pairs int) (Workload, error) {
	f, x, y, err := Pair(cfg, 1<<12)
	if err != nil {
		return Workload{}, err
	}
	xs, ys := []*sim.QP{x.QP}, []*sim.QP{y.QP}
	for len(xs) < pairs {
		a, err := x.NewQP()
		if err != nil {
			f.Close()
			return Workload{}, err
		}
		b, err := y.NewQP()
		if err != nil {
			f.Close()
			return Workload{}, err
		}
		if err := sim.Connect(a, b, sim.ConnectOptions{}); err != nil {
			f.Close()
			return Workload{}, err
		}
		xs, ys = append(xs, a), append(ys, b)
	}
	recv := []verbs.RecvWR{{WRID: 1, SGList: []verbs.SGE{y.SGE(0, 64)}}}
	send := []verbs.SendWR{{WRID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{x.SGE(0, 64)}}}
	return Workload{Op: Exchange(xs, ys, x, y, recv, send), Close: func() { f.Close() }}, nil
}

// InlineSendMRs is a 64-byte inline RC SEND, posted and both completions
// polled, per iteration, with mrs more MRs registered on the sending device
// (64-byte buffers, registered before the sending buffer's own MR is
// looked up, as a program with many registrations would have them).
func InlineSendMRs(cfg sim.Config, mrs int) (Workload, error) {
	f, x, y, err := Pair(cfg, 1<<12)
	if err != nil {
		return Workload{}, err
	}
	for range mrs {
		if _, err := x.PD.RegMR(make([]byte, 64), verbs.AccessLocalWrite); err != nil {
			f.Close()
			return Workload{}, err
		}
	}
	recv := []verbs.RecvWR{{WRID: 1, SGList: []verbs.SGE{y.SGE(0, 64)}}}
	send := []verbs.SendWR{{WRID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled | verbs.SendInline, SGList: []verbs.SGE{x.SGE(0, 64)}}}
	return Workload{Op: Exchange([]*sim.QP{x.QP}, []*sim.QP{y.QP}, x, y, recv, send), Close: func() { f.Close() }}, nil
}

// ExploreRecipe explores the documented event-loop recipe (a producer adds
// 3 completions, a consumer runs get, ack, re-arm, poll until empty: the
// explorer's catalogue world "recipe") with the random walk: one schedule
// per iteration, a new seed per call.
func ExploreRecipe() Workload {
	seed := uint64(1)
	world := patterns.Recipe(3)
	return Workload{Op: func(n int) (time.Duration, error) {
		seed++
		start := time.Now()
		res := explore.Explore(world, explore.Options{Strategy: explore.Random, Seed: seed, Schedules: n})
		d := time.Since(start)
		if res.Failure != nil {
			return d, res.Failure
		}
		if res.Schedules != n {
			return d, fmt.Errorf("explored %d schedules, want %d", res.Schedules, n)
		}
		return d, nil
	}}
}

// PlainRecipe is the floor of ExploreRecipe: the same world run plainly
// (explore.RunPlain: Auto mode, Go's scheduler), once per iteration.
func PlainRecipe() Workload {
	world := patterns.Recipe(3)
	return Workload{Op: func(n int) (time.Duration, error) {
		start := time.Now()
		for range n {
			if f := explore.RunPlain(world); f != nil {
				return 0, f
			}
		}
		return time.Since(start), nil
	}}
}
