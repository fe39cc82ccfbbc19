package cq_test

import (
	"testing"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/sim/internal/cq"
	"github.com/verbsim/verbsim/verbs"
)

// The hot path allocates nothing: TestHotPathAllocatesNothing guards it and
// the benchmarks report it (-benchmem).

func benchCQ(b testing.TB, cqe int) *cq.CQ {
	c, err := cq.New(cq.Config{CQE: cqe})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

func TestHotPathAllocatesNothing(t *testing.T) {
	c := benchCQ(t, 64)
	w := send(1)
	buf := make([]verbs.WC, 16)
	if n := testing.AllocsPerRun(1000, func() {
		c.Push(w, false)
		c.Poll(buf[:1])
	}); n != 0 {
		t.Fatalf("Push+Poll allocates %v times", n)
	}
	if n := testing.AllocsPerRun(1000, func() {
		for range 16 {
			c.Push(w, true)
		}
		c.Poll(buf)
		c.ReqNotify(false)
	}); n != 0 {
		t.Fatalf("batch Push+Poll+ReqNotify allocates %v times", n)
	}
	over := benchCQ(t, 1)
	over.Push(w, false)
	over.Push(w, false) // overrun: error state, Poll now reports EIO
	if n := testing.AllocsPerRun(100, func() { over.Poll(buf) }); n != 0 {
		t.Fatalf("Poll on an overrun CQ allocates %v times", n)
	}
}

// BenchmarkPoll1 polls one completion per call.
func BenchmarkPoll1(b *testing.B) { benchPoll(b, 1) }

// BenchmarkPollBatch16 polls 16 completions per call.
func BenchmarkPollBatch16(b *testing.B) { benchPoll(b, 16) }

// BenchmarkPollBatch16Retire polls 16 completions per call, each pushed
// with a retirer as a work queue's are.
func BenchmarkPollBatch16Retire(b *testing.B) { benchPollRetire(b, 16, &countRetirer{}) }

// countRetirer is a retirer as cheap as a work queue's.
type countRetirer struct{ retired uint64 }

func (r *countRetirer) RetireLocked(seq uint64) {
	if seq+1 > r.retired {
		r.retired = seq + 1
	}
}

// benchPoll measures Poll with a batch of n from a CQ that always holds
// completions; refills happen with the timer stopped, so only Poll counts.
func benchPoll(b *testing.B, n int) { benchPollRetire(b, n, nil) }

// benchPollRetire is benchPoll with completions pushed with retirer r (nil:
// none).
func benchPollRetire(b *testing.B, n int, r *countRetirer) {
	const depth = 1 << 14
	d := domain.New()
	c, err := cq.New(cq.Config{CQE: depth, Domain: d})
	if err != nil {
		b.Fatal(err)
	}
	w := send(1)
	buf := make([]verbs.WC, n)
	left := 0
	seq := uint64(0)
	b.ReportAllocs()
	for b.Loop() {
		if left < n {
			b.StopTimer()
			for range depth - left {
				if r == nil {
					c.Push(w, false)
					continue
				}
				d.Lock()
				c.PushWQELocked(&w, false, r, seq)
				d.Unlock()
				seq++
			}
			left = depth
			b.StartTimer()
		}
		c.Poll(buf)
		left -= n
	}
}

// BenchmarkPushPoll adds one completion and polls it.
func BenchmarkPushPoll(b *testing.B) {
	c := benchCQ(b, 64)
	w := send(1)
	buf := make([]verbs.WC, 1)
	b.ReportAllocs()
	for b.Loop() {
		c.Push(w, false)
		c.Poll(buf)
	}
}

// BenchmarkPollEmpty is the cost of a busy-poll miss.
func BenchmarkPollEmpty(b *testing.B) {
	c := benchCQ(b, 64)
	buf := make([]verbs.WC, 16)
	b.ReportAllocs()
	for b.Loop() {
		c.Poll(buf)
	}
}
