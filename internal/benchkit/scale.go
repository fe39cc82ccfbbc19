package benchkit

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// ScaleConfig sizes a scale run.
type ScaleConfig struct {
	Pairs   int // connected RC QP pairs on one fabric
	Msgs    int // timed messages per pair, both directions together (rounded up to even)
	Workers int // goroutines that post and poll; each owns a contiguous shard of the pairs
	// Total, if positive, fixes the total number of messages instead of
	// Msgs: each pair then carries Total/Pairs of them (rounded up to
	// even). The 1-pair baseline uses it to carry as many messages as the
	// run it is compared with.
	Total int
}

// ScaleBatch is how many pairs of its shard a worker posts to before it
// polls: each pair gets one SEND each way, then the worker polls its two
// CQs until the batch's 4 completions per pair are in, reposting each
// receive as its completion comes. A round of one message each way on
// every pair runs before the timed rounds: it allocates the work queues'
// slots (a queue allocates them at its first post) and is reported apart.
const ScaleBatch = 32

// ScaleResult is what a scale run measured.
type ScaleResult struct {
	Pairs, Workers int
	Messages       int64 // SENDs carried in the timed rounds: receive completions polled
	Sends          int64 // send completions polled in the timed rounds
	WarmMessages   int64 // SENDs carried in the first, untimed round (2 per pair)
	WarmWall       time.Duration
	Wall           time.Duration
	CPU            time.Duration // user+system time of the whole process during the exchange
	SetupWall      time.Duration // creating, connecting and pre-posting the pairs
	SetupBytes     float64       // live heap per pair after set-up (after a GC)
	RunBytes       float64       // live heap per pair after the exchange (slots now allocated)
	PeakBytes      float64       // HeapPeak less the heap before set-up, per pair
	HeapPeak       uint64        // highest heap object bytes seen (sampled every 5 ms, and at each phase's end)
	VmHWM          uint64        // the process's peak resident set, bytes, since the reset before the run; 0 if unknown
	VmHWMReset     bool          // whether /proc/self/clear_refs reset the peak before the run
}

// WarmNsPerMsg is the wall time per message of the first round.
func (r ScaleResult) WarmNsPerMsg() float64 {
	return float64(r.WarmWall.Nanoseconds()) / float64(r.WarmMessages)
}

// NsPerMsg is the wall time per message.
func (r ScaleResult) NsPerMsg() float64 { return float64(r.Wall.Nanoseconds()) / float64(r.Messages) }

// CPUNsPerMsg is the process CPU time per message.
func (r ScaleResult) CPUNsPerMsg() float64 { return float64(r.CPU.Nanoseconds()) / float64(r.Messages) }

// MsgsPerSec is the message rate.
func (r ScaleResult) MsgsPerSec() float64 { return float64(r.Messages) / r.Wall.Seconds() }

// Scale connects c.Pairs RC QP pairs between two devices of one fabric
// (one context, PD, 4 KiB buffer and MR per device; one CQ per device per
// worker; QPs with 16-deep queues and one SGE) and has c.Workers
// goroutines exchange 64-byte SENDs on them: worker w owns pairs
// [w·P/W, (w+1)·P/W) and their CQs, and per round posts one signaled SEND
// each way on every pair of its shard, ScaleBatch pairs at a time, polling
// both CQs and reposting each receive before the next batch. Every
// completion must be a success; the run fails if a worker sees no
// completion for 30 s of wall time (a stuck engine, not a slow machine).
func Scale(cfg sim.Config, c ScaleConfig) (ScaleResult, error) {
	if c.Pairs < 1 || c.Workers < 1 || c.Msgs < 1 && c.Total < 1 {
		return ScaleResult{}, fmt.Errorf("scale: pairs, workers and messages must be positive")
	}
	c.Workers = min(c.Workers, c.Pairs)
	perPair := c.Msgs
	if c.Total > 0 {
		perPair = (c.Total + c.Pairs - 1) / c.Pairs
	}
	rounds := (perPair + 1) / 2
	r := ScaleResult{Pairs: c.Pairs, Workers: c.Workers}

	runtime.GC()
	debug.FreeOSMemory()
	r.VmHWMReset = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
	peak := startHeapSampler()
	base := liveHeap()

	attr := sim.DefaultDeviceAttr()
	attr.MaxQP = max(attr.MaxQP, c.Pairs+1)
	cfg.Devices = []sim.DeviceConfig{{Name: "a", Attr: attr}, {Name: "b", Attr: attr}}
	setupStart := time.Now()
	f, err := sim.NewFabric(cfg)
	if err != nil {
		peak.stop()
		return r, err
	}
	defer f.Close()
	s := &scaleRun{}
	for d, dev := range f.Devices() {
		ctx, err := dev.Open()
		if err != nil {
			peak.stop()
			return r, err
		}
		pd, err := ctx.AllocPD()
		if err != nil {
			peak.stop()
			return r, err
		}
		buf := make([]byte, 64*(c.Workers+1))
		mr, err := pd.RegMR(buf, verbs.AccessLocalWrite)
		if err != nil {
			peak.stop()
			return r, err
		}
		s.mr[d] = mr
		for range c.Workers {
			cq, err := ctx.CreateCQ(4*ScaleBatch+16, nil, nil, 0)
			if err != nil {
				peak.stop()
				return r, err
			}
			s.cqs[d] = append(s.cqs[d], cq)
		}
		s.qps[d] = make([]*sim.QP, c.Pairs)
		s.pds[d] = pd
	}
	for w := range c.Workers {
		lo, hi := w*c.Pairs/c.Workers, (w+1)*c.Pairs/c.Workers
		for p := lo; p < hi; p++ {
			for d := range 2 {
				cq := s.cqs[d][w]
				q, err := s.pds[d].CreateQP(sim.QPInitAttr{SendCQ: cq, RecvCQ: cq, Type: verbs.QPTypeRC,
					Cap: verbs.QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1}})
				if err != nil {
					peak.stop()
					return r, fmt.Errorf("scale: pair %d: %w", p, err)
				}
				s.qps[d][p] = q
			}
			if err := sim.Connect(s.qps[0][p], s.qps[1][p], sim.ConnectOptions{}); err != nil {
				peak.stop()
				return r, fmt.Errorf("scale: pair %d: %w", p, err)
			}
			for d := range 2 {
				rw := []verbs.RecvWR{{WRID: uint64(p)<<1 | uint64(d), SGList: []verbs.SGE{s.sge(d, w+1)}}}
				if _, err := s.qps[d][p].PostRecv(rw); err != nil {
					peak.stop()
					return r, fmt.Errorf("scale: pair %d: %w", p, err)
				}
			}
		}
	}
	r.SetupWall = time.Since(setupStart)
	peak.sample()
	r.SetupBytes = float64(liveHeap()-base) / float64(c.Pairs)

	// The first round, untimed, then a collection so that the garbage of
	// set-up is not collected during the timed rounds.
	start := time.Now()
	if err := s.runWorkers(c, 1); err != nil {
		peak.stop()
		return r, err
	}
	r.WarmWall = time.Since(start)
	r.WarmMessages = s.recvs.Swap(0)
	warmSends := s.sends.Swap(0)
	runtime.GC()

	cpu0 := cpuTime()
	start = time.Now()
	err = s.runWorkers(c, rounds)
	r.Wall = time.Since(start)
	r.CPU = cpuTime() - cpu0
	peak.stop()
	r.HeapPeak = peak.max.Load()
	r.PeakBytes = (float64(r.HeapPeak) - float64(base)) / float64(c.Pairs)
	r.VmHWM = vmHWM()
	r.Messages, r.Sends = s.recvs.Load(), s.sends.Load()
	if err != nil {
		return r, err
	}
	r.RunBytes = float64(liveHeap()-base) / float64(c.Pairs)
	if want := int64(c.Pairs) * 2; r.WarmMessages != want || warmSends != want {
		return r, fmt.Errorf("scale: first round: %d receive and %d send completions, want %d each", r.WarmMessages, warmSends, want)
	}
	if want := int64(c.Pairs) * int64(2*rounds); r.Messages != want || r.Sends != want {
		return r, fmt.Errorf("scale: %d receive and %d send completions, want %d each", r.Messages, r.Sends, want)
	}
	return r, nil
}

// runWorkers runs c.Workers workers of rounds rounds each and returns the
// first error.
func (s *scaleRun) runWorkers(c ScaleConfig, rounds int) error {
	var wg sync.WaitGroup
	errs := make([]error, c.Workers)
	for w := range c.Workers {
		wg.Go(func() {
			errs[w] = s.work(w, w*c.Pairs/c.Workers, (w+1)*c.Pairs/c.Workers, rounds)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// scaleRun is the shared state of a scale run's workers.
type scaleRun struct {
	pds          [2]*sim.PD
	mr           [2]*sim.MR
	cqs          [2][]*sim.CQ // per device, per worker
	qps          [2][]*sim.QP // per device, per pair
	sends, recvs atomic.Int64 // completions polled
}

// sge addresses the 64-byte slot i of device d's buffer (0 is the source
// of every SEND, 1+w the receive slot of worker w).
func (s *scaleRun) sge(d, i int) verbs.SGE {
	return verbs.SGE{Addr: s.mr[d].Addr() + uint64(64*i), Length: 64, LKey: s.mr[d].LKey()}
}

// work runs worker w's rounds over pairs [lo, hi).
func (s *scaleRun) work(w, lo, hi, rounds int) error {
	var send [2][]verbs.SendWR
	var recv [2][]verbs.RecvWR
	for d := range 2 {
		send[d] = []verbs.SendWR{{Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{s.sge(d, 0)}}}
		recv[d] = []verbs.RecvWR{{SGList: []verbs.SGE{s.sge(d, w+1)}}}
	}
	wcs := make([]verbs.WC, 16)
	var sends, recvs int64
	defer func() { s.sends.Add(sends); s.recvs.Add(recvs) }()
	for range rounds {
		for b := lo; b < hi; b += ScaleBatch {
			e := min(b+ScaleBatch, hi)
			for p := b; p < e; p++ {
				for d := range 2 {
					send[d][0].WRID = uint64(p)<<1 | uint64(d)
					if _, err := s.qps[d][p].PostSend(send[d]); err != nil {
						return fmt.Errorf("scale: pair %d: post send: %w", p, err)
					}
				}
			}
			last := time.Now()
			for got, want := 0, 4*(e-b); got < want; {
				n := 0
				for d := range 2 {
					k, err := s.cqs[d][w].Poll(wcs)
					if err != nil {
						return fmt.Errorf("scale: worker %d: poll: %w", w, err)
					}
					for i := range wcs[:k] {
						c := &wcs[i]
						if c.Status != verbs.WCSuccess {
							return fmt.Errorf("scale: worker %d: %v", w, c)
						}
						if !c.Opcode.IsRecv() {
							sends++
							continue
						}
						recvs++
						recv[d][0].WRID = c.WRID
						if _, err := s.qps[d][c.WRID>>1].PostRecv(recv[d]); err != nil {
							return fmt.Errorf("scale: pair %d: post recv: %w", c.WRID>>1, err)
						}
					}
					n += k
				}
				got += n
				if n > 0 {
					continue
				}
				if time.Since(last) > 30*time.Second {
					return fmt.Errorf("scale: worker %d: %d of %d completions after 30 s without progress", w, got, want)
				}
				runtime.Gosched()
			}
		}
	}
	return nil
}

// heapSampler records the highest heap object bytes it sees.
type heapSampler struct {
	max  atomic.Uint64
	done chan struct{}
	wg   sync.WaitGroup
}

// heapObjects is the runtime/metrics name of the bytes of heap objects,
// live and not yet swept: MemStats.HeapAlloc without stopping the world.
const heapObjects = "/memory/classes/heap/objects:bytes"

func startHeapSampler() *heapSampler {
	h := &heapSampler{done: make(chan struct{})}
	h.sample()
	h.wg.Go(func() {
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-h.done:
				return
			case <-t.C:
				h.sample()
			}
		}
	})
	return h
}

func (h *heapSampler) sample() {
	s := []metrics.Sample{{Name: heapObjects}}
	metrics.Read(s)
	v := s[0].Value.Uint64()
	for {
		m := h.max.Load()
		if v <= m || h.max.CompareAndSwap(m, v) {
			return
		}
	}
}

func (h *heapSampler) stop() {
	h.sample()
	close(h.done)
	h.wg.Wait()
}

// liveHeap is the heap in use after a collection.
func liveHeap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// vmHWM is VmHWM of /proc/self/status in bytes, or 0.
func vmHWM() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(v)
			if len(f) == 2 && f[1] == "kB" {
				if n, err := strconv.ParseUint(f[0], 10, 64); err == nil {
					return n << 10
				}
			}
		}
	}
	return 0
}
