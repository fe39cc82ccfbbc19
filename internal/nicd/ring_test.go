//go:build linux

package nicd

import (
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"pgregory.net/rapid"

	"github.com/verbsim/verbsim/internal/simhook"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// The differential test of the CQ fast path: random workloads on two
// fabrics built alike, one polling its CQ through the engine (Poll and the
// iterator) and one through the ring the daemon shares with a program,
// read by ringConsumer as capi/nicd/ring.c reads it. Every poll, every
// verb's result, and the engine's view of the CQ and the QPs (its
// snapshot, which first takes in what the consumer did) must be the same
// after every step: overruns, the slots a poll frees, resizes that outgrow
// the ring, purges of a reset QP's completions, and poll batches included.

// ringConsumer is the program's side of a ring: ring.c in Go.
type ringConsumer struct {
	r   *cqRing
	cur uint64
	end bool
}

func (c *ringConsumer) at(i uint64) *cqe { return c.r.entry(i) }

func (c *ringConsumer) nextLive(i, head uint64) uint64 {
	for i < head && atomic.LoadUint32(&c.at(i).Dead) != 0 {
		i++
	}
	return i
}

// poll is nicd_ring_poll: the completions, or -1.
func (c *ringConsumer) poll(n int) ([]verbs.WC, int) {
	h := c.r.hdr
	if atomic.LoadUint32(&h.Batch) != 0 {
		return nil, -1
	}
	t, head := atomic.LoadUint64(&h.Tail), atomic.LoadUint64(&h.Head)
	var out []verbs.WC
	for len(out) < n && t < head {
		e := c.at(t)
		t++
		if atomic.LoadUint32(&e.Dead) != 0 {
			continue
		}
		out = append(out, e.WC.Verbs())
	}
	if atomic.LoadUint64(&h.Seen) < t {
		atomic.StoreUint64(&h.Seen, t)
	}
	atomic.StoreUint64(&h.Tail, t)
	if len(out) == 0 && n > 0 && atomic.LoadUint32(&h.Error) != 0 {
		return nil, -1
	}
	return out, len(out)
}

func (c *ringConsumer) current(i uint64) verbs.WC {
	c.cur = i
	if atomic.LoadUint64(&c.r.hdr.Seen) < i+1 {
		atomic.StoreUint64(&c.r.hdr.Seen, i+1)
	}
	return c.at(i).WC.Verbs()
}

func (c *ringConsumer) start() (verbs.WC, syscall.Errno) {
	h := c.r.hdr
	if atomic.LoadUint32(&h.Batch) != 0 {
		return verbs.WC{}, syscall.EINVAL
	}
	head := atomic.LoadUint64(&h.Head)
	i := c.nextLive(atomic.LoadUint64(&h.Tail), head)
	if i == head {
		if atomic.LoadUint32(&h.Error) != 0 {
			return verbs.WC{}, syscall.EIO
		}
		return verbs.WC{}, syscall.ENOENT
	}
	atomic.StoreUint32(&h.Batch, 1)
	c.end = false
	return c.current(i), 0
}

func (c *ringConsumer) next() (verbs.WC, syscall.Errno) {
	h := c.r.hdr
	if atomic.LoadUint32(&h.Batch) == 0 {
		return verbs.WC{}, syscall.EINVAL
	}
	head := atomic.LoadUint64(&h.Head)
	from := c.cur + 1
	if c.end {
		from = c.cur
	}
	i := c.nextLive(from, head)
	if i >= head {
		c.cur, c.end = head, true
		if atomic.LoadUint32(&h.Error) != 0 {
			return verbs.WC{}, syscall.EIO
		}
		return verbs.WC{}, syscall.ENOENT
	}
	c.end = false
	return c.current(i), 0
}

func (c *ringConsumer) finish() {
	h := c.r.hdr
	if atomic.LoadUint32(&h.Batch) == 0 {
		return
	}
	t := c.cur + 1
	if c.end {
		t = c.cur
	}
	if atomic.LoadUint64(&h.Seen) < t {
		atomic.StoreUint64(&h.Seen, t)
	}
	atomic.StoreUint64(&h.Tail, t)
	atomic.StoreUint32(&h.Batch, 0)
}

// rWorld is one fabric of the test: QP a sends to QP b on one device;
// a's send queue and b's receive queue complete in cq.
type rWorld struct {
	wrap  func(*cqRing) simhook.CQShadow // a mutant of the ring, or nil
	swaps int                            // rings attached after a resize
	f     *sim.Fabric
	pd    *sim.PD
	cq    *sim.CQ
	a, b  *sim.QP
	buf   []byte
	mr    *sim.MR
	ring  *ringConsumer // nil: polled through the engine
}

func newRWorld(t *rapid.T, prof sim.Profile, cqe int, ringed bool, wrap func(*cqRing) simhook.CQShadow) *rWorld {
	f, err := sim.NewFabric(sim.Config{Profile: prof, Devices: []sim.DeviceConfig{{Name: "a"}}, Mode: sim.Auto})
	if err != nil {
		t.Fatal(err)
	}
	c, err := f.Devices()[0].Open()
	if err != nil {
		t.Fatal(err)
	}
	w := &rWorld{f: f, buf: make([]byte, 4096), wrap: wrap}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	w.pd, err = c.AllocPD()
	must(err)
	w.cq, err = c.CreateCQEx(sim.CQInitAttr{CQE: cqe, WCFlags: verbs.WCExFlags(0x7f)})
	must(err)
	w.mr, err = w.pd.RegMR(w.buf, verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
	must(err)
	for _, q := range []**sim.QP{&w.a, &w.b} {
		*q, err = w.pd.CreateQP(sim.QPInitAttr{SendCQ: w.cq, RecvCQ: w.cq, Type: verbs.QPTypeRC,
			Cap: verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
		must(err)
	}
	must(sim.Connect(w.a, w.b, sim.ConnectOptions{}))
	if ringed {
		w.attach()
	}
	return w
}

// attach gives the CQ a ring big enough for its capacity, as the library
// does at creation and after a resize that outgrew the ring.
func (w *rWorld) attach() {
	size := uint64(1)
	for size < uint64(w.cq.CQE()) {
		size <<= 1
	}
	r := newRing(make([]byte, ringHeader+int(size)*cqeSize), size)
	r.flags = w.cq.WCFlags()
	var sh simhook.CQShadow = r
	if w.wrap != nil {
		sh = w.wrap(r)
	}
	if err := simhook.SetCQShadow(w.cq, sh); err != nil {
		panic(err)
	}
	w.ring = &ringConsumer{r: r}
}

// rAction is one step of a workload. A batch may post m sends and
// receives before it ends, as ibv_rc_pingpong -t posts inside its batch.
type rAction struct {
	kind, n, m int
}

const (
	raSend = iota
	raRecv
	raPoll
	raBatch
	raResize
	raReset
	raTick
	raCount
)

func (w *rWorld) apply(a rAction) string {
	if w.ring != nil && (a.kind == raSend || a.kind == raRecv) {
		simhook.SyncCQ(w.cq) // as the daemon's post handlers do (post.go)
	}
	switch a.kind {
	case raSend:
		wrs := make([]verbs.SendWR, a.n)
		for i := range wrs {
			wrs[i] = verbs.SendWR{WRID: uint64(100 + i), Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
				SGList: []verbs.SGE{{Addr: w.mr.Addr(), Length: 8, LKey: w.mr.LKey()}}}
		}
		n, err := w.a.PostSend(wrs)
		return fmt.Sprintf("post_send %d %v", n, verr.Errno(err))
	case raRecv:
		wrs := make([]verbs.RecvWR, a.n)
		for i := range wrs {
			wrs[i] = verbs.RecvWR{WRID: uint64(200 + i), SGList: []verbs.SGE{{Addr: w.mr.Addr() + 1024, Length: 64, LKey: w.mr.LKey()}}}
		}
		n, err := w.b.PostRecv(wrs)
		return fmt.Sprintf("post_recv %d %v", n, verr.Errno(err))
	case raPoll:
		if w.ring != nil {
			wcs, code := w.ring.poll(a.n)
			return fmt.Sprintf("poll %d %v", code, wcs)
		}
		if a.n == 0 { // ibv_poll_cq of 0 is 0, as the library answers it
			return fmt.Sprintf("poll %d %v", 0, []verbs.WC(nil))
		}
		wcs := make([]verbs.WC, a.n)
		n, err := w.cq.Poll(wcs)
		if n == 0 && err != nil {
			return fmt.Sprintf("poll %d %v", -1, []verbs.WC(nil))
		}
		if n == 0 {
			wcs = nil
		}
		return fmt.Sprintf("poll %d %v", n, wcs[:n])
	case raBatch:
		var out []string
		if w.ring != nil {
			wc, e := w.ring.start()
			out = append(out, fmt.Sprintf("start %v %v", e, wc))
			for range a.n {
				wc, e := w.ring.next()
				out = append(out, fmt.Sprintf("next %v %v", e, wc))
			}
			if a.m > 0 {
				out = append(out, w.apply(rAction{kind: raRecv, n: a.m}), w.apply(rAction{kind: raSend, n: a.m}))
			}
			if e == 0 {
				w.ring.finish()
			}
			return fmt.Sprint(out)
		}
		err := w.cq.StartPoll()
		out = append(out, fmt.Sprintf("start %v %v", verr.Errno(err), w.current(err)))
		for range a.n {
			err := w.cq.NextPoll()
			out = append(out, fmt.Sprintf("next %v %v", verr.Errno(err), w.current(err)))
		}
		if a.m > 0 {
			out = append(out, w.apply(rAction{kind: raRecv, n: a.m}), w.apply(rAction{kind: raSend, n: a.m}))
		}
		if err == nil {
			w.cq.EndPoll()
		}
		return fmt.Sprint(out)
	case raResize:
		err := w.cq.Resize(a.n)
		if err == nil && w.ring != nil && uint64(w.cq.CQE()) > w.ring.r.size {
			w.attach()
			w.swaps++
		}
		return fmt.Sprintf("resize %d %v cqe %d", a.n, verr.Errno(err), w.cq.CQE())
	case raReset:
		err := w.b.Modify(&verbs.QPAttr{QPState: verbs.QPStateReset}, verbs.QPAttrState)
		return fmt.Sprintf("reset %v", verr.Errno(err))
	case raTick:
		w.f.Tick(uint64(a.n) << 20)
		return "tick"
	}
	return ""
}

// current is the completion the engine's iterator stands on.
func (w *rWorld) current(err error) verbs.WC {
	if err != nil {
		return verbs.WC{}
	}
	id, st, _ := w.cq.Current()
	wc := verbs.WC{WRID: id, Status: st}
	wc.Opcode, _ = w.cq.ReadOpcode()
	wc.VendorErr, _ = w.cq.ReadVendorErr()
	wc.ByteLen, _ = w.cq.ReadByteLen()
	wc.WCFlags, _ = w.cq.ReadWCFlags()
	wc.ImmData, _ = w.cq.ReadImmData()
	wc.QPNum, _ = w.cq.ReadQPNum()
	wc.SrcQP, _ = w.cq.ReadSrcQP()
	slid, _ := w.cq.ReadSLID()
	wc.SLID = uint16(slid)
	wc.SL, _ = w.cq.ReadSL()
	wc.DLIDPathBits, _ = w.cq.ReadDLIDPathBits()
	return wc
}

// observe is what the engine says of the CQ and the QPs.
func (w *rWorld) observe() string {
	s := w.cq.Snapshot()
	sa, ra := w.a.Outstanding()
	sb, rb := w.b.Outstanding()
	return fmt.Sprintf("cqe=%d len=%d overrun=%v stats=%+v completions=%v a=%d/%d %v b=%d/%d %v",
		s.CQE, s.Len, s.Overrun, s.Stats, s.Completions, sa, ra, w.a.State(), sb, rb, w.b.State())
}

// ringCoverage counts what a run of the differential test went through.
type ringCoverage struct {
	overruns, purges, swaps, batches, dead int
}

// ringDiff runs one drawn workload on an engine world and a ring world and
// returns the first difference ("" for none).
func ringDiff(rt *rapid.T, wrap func(*cqRing) simhook.CQShadow, cov *ringCoverage) string {
	// The workload makes its CQs with ibv_create_cq_ex, which siw's
	// provider lacks (CQX-11).
	profs := sim.ProfilesWithout(verbs.ReadingNoCQEx)
	prof := profs[rapid.IntRange(0, len(profs)-1).Draw(rt, "profile")]
	if rapid.Bool().Draw(rt, "purges") {
		prof.Readings.ResetPurgesCQ = true
	}
	cqe := rapid.IntRange(1, 12).Draw(rt, "cqe")
	e := newRWorld(rt, prof, cqe, false, nil)
	defer e.f.Close()
	r := newRWorld(rt, prof, cqe, true, wrap)
	defer r.f.Close()
	steps := rapid.IntRange(10, 80).Draw(rt, "steps")
	for i := range steps {
		a := rAction{kind: rapid.IntRange(0, raCount-1).Draw(rt, "kind")}
		switch a.kind {
		case raSend, raRecv:
			a.n = rapid.IntRange(1, 5).Draw(rt, "n")
		case raPoll:
			a.n = rapid.IntRange(0, 6).Draw(rt, "n")
		case raBatch:
			a.n = rapid.IntRange(0, 4).Draw(rt, "nexts")
			a.m = rapid.IntRange(0, 3).Draw(rt, "posts in the batch")
		case raResize:
			a.n = rapid.IntRange(0, 40).Draw(rt, "cqe")
		case raReset:
			if rapid.IntRange(0, 5).Draw(rt, "reset?") != 0 {
				a.kind, a.n = raPoll, 1
			}
		case raTick:
			a.n = rapid.IntRange(1, 8).Draw(rt, "tick")
		}
		before := e.cq.Snapshot().Len
		re, rr := e.apply(a), r.apply(a)
		if re != rr {
			return fmt.Sprintf("step %d %+v:\nengine: %s\nring:   %s", i, a, re, rr)
		}
		oe, or := e.observe(), r.observe()
		if !reflect.DeepEqual(oe, or) {
			return fmt.Sprintf("step %d %+v (%s):\nengine: %s\nring:   %s", i, a, re, oe, or)
		}
		if cov != nil {
			s := e.cq.Snapshot()
			if s.Overrun {
				cov.overruns++
			}
			if a.kind == raReset && prof.Readings.ResetPurgesCQ && s.Len < before {
				cov.purges++
			}
			if a.kind == raBatch && strings.HasPrefix(re, "[start errno 0") {
				cov.batches++
			}
			h := r.ring.r
			for j := atomic.LoadUint64(&h.hdr.Tail); j < h.head; j++ {
				if atomic.LoadUint32(&h.entry(j).Dead) != 0 {
					cov.dead++
				}
			}
		}
	}
	if cov != nil {
		cov.swaps += r.swaps
	}
	return ""
}

func TestRingMatchesEngine(t *testing.T) {
	var cov ringCoverage
	rapid.Check(t, func(rt *rapid.T) {
		if d := ringDiff(rt, nil, &cov); d != "" {
			rt.Fatal(d)
		}
	})
	// The workloads must reach what the ring has to get right.
	if cov.overruns == 0 || cov.purges == 0 || cov.swaps == 0 || cov.batches == 0 || cov.dead == 0 {
		t.Errorf("the workloads missed a case: %+v", cov)
	}
	t.Logf("coverage: %+v", cov)
}

// The mutants: rings that each get one thing wrong, which the
// differential test must catch.
type (
	noSeen   struct{ *cqRing } // the iterator frees no slots
	noDead   struct{ *cqRing } // a purge marks nothing dead
	noError  struct{ *cqRing } // an overrun is not shown
	eagerPop struct{ *cqRing } // what the iterator reached counts as polled
)

func (m noSeen) TakenLocked() (int, int) { p, _ := m.cqRing.TakenLocked(); return p, 0 }

func (m noDead) ResetLocked(entries func(yield func(w *verbs.WC, ns uint64) bool)) {}

func (m noError) OverrunLocked() {}

func (m eagerPop) TakenLocked() (int, int) { p, s := m.cqRing.TakenLocked(); return p + s, 0 }

func TestRingMutants(t *testing.T) {
	for name, wrap := range map[string]func(*cqRing) simhook.CQShadow{
		"no seen":   func(r *cqRing) simhook.CQShadow { return noSeen{r} },
		"no dead":   func(r *cqRing) simhook.CQShadow { return noDead{r} },
		"no error":  func(r *cqRing) simhook.CQShadow { return noError{r} },
		"eager pop": func(r *cqRing) simhook.CQShadow { return eagerPop{r} },
	} {
		t.Run(name, func(t *testing.T) {
			// Rounds of workloads until one catches the mutant: some
			// mutants show only in rarer workloads, and one round of
			// -short's 20 may miss them; each round is cheap.
			caught := 0
			for round := 0; round < 50 && caught == 0; round++ {
				rapid.Check(t, func(rt *rapid.T) {
					if ringDiff(rt, wrap, nil) != "" {
						caught++
					}
				})
			}
			if caught == 0 {
				t.Errorf("the mutant %q survived every workload of 50 rounds", name)
			}
		})
	}
}
