package cq_test

import (
	"context"
	"errors"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/verbs"

	"github.com/google/go-cmp/cmp"
	"github.com/verbsim/verbsim/sim/internal/cq"
	"github.com/verbsim/verbsim/sim/internal/notify"
)

type world struct {
	mu    *domain.Domain
	ch    *cq.Channel
	async *notify.AsyncQueue
}

func newWorld() *world {
	w := &world{}
	w.mu = domain.New()
	w.ch = cq.NewChannel(w.mu)
	w.async = notify.NewAsyncQueue(w.mu)
	return w
}

func (w *world) cq(t *testing.T, cfg cq.Config) *cq.CQ {
	t.Helper()
	cfg.Domain = w.mu
	if cfg.Async == nil {
		cfg.Async = w.async
	}
	c, err := cq.New(cfg)
	if err != nil {
		t.Fatalf("cq.New(%+v): %v", cfg, err)
	}
	return c
}

func send(id uint64) verbs.WC {
	return verbs.WC{WRID: id, Status: verbs.WCSuccess, Opcode: verbs.WCSend, QPNum: 7}
}

func mustPush(t *testing.T, c *cq.CQ, w verbs.WC) bool {
	t.Helper()
	over, err := c.Push(w, false)
	if err != nil {
		t.Fatalf("Push(%d): %v", w.WRID, err)
	}
	return over
}

func pollAll(t *testing.T, c *cq.CQ) []uint64 {
	t.Helper()
	var ids []uint64
	buf := make([]verbs.WC, 3)
	for {
		n, _ := c.Poll(buf)
		if n == 0 {
			return ids
		}
		for _, w := range buf[:n] {
			ids = append(ids, w.WRID)
		}
	}
}

func TestNewValidates(t *testing.T) {
	w := newWorld()
	other := cq.NewChannel(nil)
	lim := cq.Limits{MaxCQE: 100, NumCompVectors: 2}
	bad := []cq.Config{
		{CQE: 0, Limits: lim},
		{CQE: -5, Limits: lim},
		{CQE: 101, Limits: lim},
		{CQE: 1, CompVector: 2, Limits: lim},
		{CQE: 1, CompVector: -1, Limits: lim},
		{CQE: 1, Channel: other, Limits: lim},
		{CQE: 1, Overrun: 9, Limits: lim},
		{CQE: 1, Limits: cq.Limits{MaxCQE: 0, NumCompVectors: 1}},
	}
	for _, cfg := range bad {
		cfg.Domain = w.mu
		if c, err := cq.New(cfg); !errors.Is(err, syscall.EINVAL) || c != nil {
			t.Errorf("New(%+v) = %v, %v; want nil, EINVAL", cfg, c, err)
		}
	}
	if other.Refs() != 0 {
		t.Fatal("a failed New kept a channel reference")
	}
}

// TestCapacityRounding: capacity >= request (CQ-02), pow2-1 or exact, capped
// at max_cqe.
func TestCapacityRounding(t *testing.T) {
	w := newWorld()
	lim := cq.Limits{MaxCQE: 1000, NumCompVectors: 1}
	for _, tt := range []struct {
		req  int
		r    cq.Rounding
		want int
	}{{1, cq.RoundPow2, 1}, {2, cq.RoundPow2, 3}, {4, cq.RoundPow2, 7}, {7, cq.RoundPow2, 7},
		{8, cq.RoundPow2, 15}, {1000, cq.RoundPow2, 1000}, {600, cq.RoundPow2, 1000}, {5, cq.RoundExact, 5}} {
		c := w.cq(t, cq.Config{CQE: tt.req, Rounding: tt.r, Limits: lim})
		if c.CQE() != tt.want {
			t.Errorf("cqe %d rounding %v: capacity %d, want %d", tt.req, tt.r, c.CQE(), tt.want)
		}
	}
}

// TestRingWrapAndResize: order survives wrapping and resizes in both
// directions (CQ-10); resize below the unpolled count fails (CQ-08).
func TestRingWrapAndResize(t *testing.T) {
	w := newWorld()
	c := w.cq(t, cq.Config{CQE: 4, Rounding: cq.RoundExact})
	var want []uint64
	next := uint64(0)
	add := func(k int) {
		for range k {
			mustPush(t, c, send(next))
			want = append(want, next)
			next++
		}
	}
	add(3)
	buf := make([]verbs.WC, 2)
	if n, err := c.Poll(buf); n != 2 || err != nil {
		t.Fatalf("Poll = %d, %v", n, err)
	}
	want = want[2:]
	add(3) // wraps: 4 unpolled in a ring of 4
	if err := c.Resize(3); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("Resize below count: %v, want EINVAL", err)
	}
	if err := c.Resize(10); err != nil || c.CQE() != 10 {
		t.Fatalf("Resize(10): %v, capacity %d", err, c.CQE())
	}
	add(5)
	if err := c.Resize(9); err != nil || c.CQE() != 9 {
		t.Fatalf("Resize(9): %v, capacity %d", err, c.CQE())
	}
	for _, bad := range []int{0, -1, cq.DefaultLimits.MaxCQE + 1} {
		if err := c.Resize(bad); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("Resize(%d): %v, want EINVAL", bad, err)
		}
	}
	if d := cmp.Diff(want, pollAll(t, c)); d != "" {
		t.Fatalf("order changed (-want +got):\n%s", d)
	}
}

func TestPollEdgeCases(t *testing.T) {
	w := newWorld()
	c := w.cq(t, cq.Config{CQE: 8})
	mustPush(t, c, send(1))
	for _, buf := range [][]verbs.WC{nil, {}} {
		if n, err := c.Poll(buf); n != 0 || err != nil {
			t.Fatalf("Poll(%v) = %d, %v", buf, n, err)
		}
	}
	buf := []verbs.WC{{WRID: 99}, {WRID: 98}, {WRID: 97}}
	if n, _ := c.Poll(buf); n != 1 || buf[0].WRID != 1 || buf[1].WRID != 98 || buf[2].WRID != 97 {
		t.Fatalf("Poll wrote past n: %v", buf)
	}
}

func TestOverrunPolicies(t *testing.T) {
	for _, tt := range []struct {
		name         string
		cfg          cq.Config
		sticky       bool
		events       int // CQ_ERR after the second overrun attempt
		storedLater  bool
		errorOnPolls bool
	}{
		{"error", cq.Config{CQE: 2, Rounding: cq.RoundExact}, true, 2, false, true},
		{"drop", cq.Config{CQE: 2, Rounding: cq.RoundExact, Overrun: cq.OverrunDrop}, false, 1, true, false},
		{"ignore", cq.Config{CQE: 2, Rounding: cq.RoundExact, IgnoreOverrun: true}, false, 0, true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld()
			c := w.cq(t, tt.cfg)
			mustPush(t, c, send(1))
			mustPush(t, c, send(2))
			if !mustPush(t, c, send(3)) {
				t.Fatal("third completion into a CQ of 2 did not overrun")
			}
			if c.Overrun() != tt.sticky {
				t.Fatalf("Overrun() = %v", c.Overrun())
			}
			buf := make([]verbs.WC, 4)
			n, err := c.Poll(buf)
			if n != 2 || (err != nil) != tt.errorOnPolls {
				t.Fatalf("Poll = %d, %v", n, err)
			}
			if tt.errorOnPolls && !errors.Is(err, syscall.EIO) {
				t.Fatalf("Poll error %v does not match EIO", err)
			}
			over := mustPush(t, c, send(4))
			if over == tt.storedLater {
				t.Fatalf("push after drain: overrun=%v", over)
			}
			if got := w.async.Raised(verbs.EventCQErr); got != uint64(tt.events) {
				t.Fatalf("CQ_ERR raised %d times, want %d", got, tt.events)
			}
			if st := c.Snapshot().Stats; st.Dropped != uint64(1+btoi(!tt.storedLater)) {
				t.Fatalf("Dropped = %d", st.Dropped)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestNotifyOrdering: the event for a completion is queued after the
// completion is pollable (NOTIFY-12), at most once per arm (NOTIFY-01), and a
// channel-less CQ is disarmed silently (NOTIFY-17).
func TestNotifyOrdering(t *testing.T) {
	w := newWorld()
	c := w.cq(t, cq.Config{CQE: 8, Channel: w.ch, Context: "ctx"})
	if err := c.ReqNotify(false); err != nil {
		t.Fatal(err)
	}
	mustPush(t, c, send(1))
	mustPush(t, c, send(2))
	q, ctx, err := w.ch.TryGetEvent()
	if err != nil || q != c || ctx != "ctx" {
		t.Fatalf("event = %v, %v, %v", q, ctx, err)
	}
	if c.Len() < 1 {
		t.Fatal("event visible before its completion")
	}
	if _, _, err := w.ch.TryGetEvent(); !errors.Is(err, syscall.EAGAIN) {
		t.Fatalf("second event without re-arm: %v", err)
	}
	if err := c.AckEvents(1); err != nil {
		t.Fatal(err)
	}

	bare := w.cq(t, cq.Config{CQE: 8})
	if err := bare.ReqNotify(true); err != nil {
		t.Fatal(err)
	}
	if _, err := bare.Push(verbs.WC{Status: verbs.WCWRFlushErr}, false); err != nil {
		t.Fatal(err)
	}
	if bare.Armed() != notify.Disarmed || bare.Snapshot().Stats.ArmsFired != 1 {
		t.Fatal("channel-less CQ kept its arm after a firing completion")
	}
}

type retirer struct{ seqs []uint64 }

func (r *retirer) RetireLocked(seq uint64) { r.seqs = append(r.seqs, seq) }

// TestRetirerSeesPolls: a completion pushed with a retirer reports its seq
// when polled, and not before; a run of one retirer's completions polled
// together is told once, with its last seq (which covers the earlier ones);
// an overrun completion never does.
func TestRetirerSeesPolls(t *testing.T) {
	w := newWorld()
	r := &retirer{}
	c := w.cq(t, cq.Config{CQE: 2, Rounding: cq.RoundExact, Overrun: cq.OverrunDrop})
	w.mu.Lock()
	for seq := uint64(5); seq <= 7; seq++ {
		x := send(seq)
		c.PushWQELocked(&x, false, r, seq)
	}
	w.mu.Unlock()
	if len(r.seqs) != 0 {
		t.Fatalf("retired before polling: %v", r.seqs)
	}
	pollAll(t, c)
	if d := cmp.Diff([]uint64{6}, r.seqs); d != "" {
		t.Fatalf("retired (-want +got):\n%s", d)
	}
}

// TestRetirerRuns: Poll tells each run of one retirer's completions once,
// with the run's highest seq, in the order the runs were polled; a
// completion without a retirer ends no run.
func TestRetirerRuns(t *testing.T) {
	w := newWorld()
	a, b := &retirer{}, &retirer{}
	c := w.cq(t, cq.Config{CQE: 16, Rounding: cq.RoundExact})
	w.mu.Lock()
	for _, p := range []struct {
		r   *retirer
		seq uint64
	}{{a, 1}, {a, 2}, {nil, 0}, {a, 3}, {b, 7}, {b, 8}, {a, 4}} {
		x := send(p.seq)
		var r cq.Retirer
		if p.r != nil {
			r = p.r
		}
		c.PushWQELocked(&x, false, r, p.seq)
	}
	w.mu.Unlock()
	buf := make([]verbs.WC, 16)
	if n, err := c.Poll(buf); n != 7 || err != nil {
		t.Fatalf("Poll = %d, %v", n, err)
	}
	if d := cmp.Diff([]uint64{3, 4}, a.seqs); d != "" {
		t.Fatalf("a retired (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]uint64{8}, b.seqs); d != "" {
		t.Fatalf("b retired (-want +got):\n%s", d)
	}
}

// TestDestroy covers CQ-11, CQ-12, CQ-13 and the verbs on a destroyed CQ.
func TestDestroy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		destroyedHook := 0
		c := w.cq(t, cq.Config{CQE: 2, Rounding: cq.RoundExact, Channel: w.ch, OnDestroy: func() { destroyedHook++ }})
		if err := c.Ref(); err != nil {
			t.Fatal(err)
		}
		mustPush(t, c, send(1))
		c.ReqNotify(false)
		if err := c.Destroy(); !errors.Is(err, syscall.EBUSY) {
			t.Fatalf("Destroy while referenced: %v, want EBUSY", err)
		}
		if c.Len() != 1 || c.Armed() != notify.ArmNext || c.Destroyed() {
			t.Fatal("failed Destroy changed the CQ")
		}
		c.Unref()
		// One event read and not acked, one unread; one CQ_ERR read and not acked.
		mustPush(t, c, send(2))
		if _, _, err := w.ch.TryGetEvent(); err != nil {
			t.Fatal(err)
		}
		c.ReqNotify(false)
		mustPush(t, c, send(3)) // overrun: no completion event, one CQ_ERR
		aev, err := w.async.TryGetAsyncEvent()
		if err != nil || aev.Object != c {
			t.Fatalf("CQ_ERR = %v, %v", aev, err)
		}
		mustPush(t, c, send(4)) // sticky: another CQ_ERR, left unread
		if w.async.Len() != 1 {
			t.Fatalf("async Len = %d, want 1", w.async.Len())
		}

		ctx, cancel := context.WithTimeout(context.Background(), 1)
		err = c.DestroyContext(ctx)
		cancel()
		if !errors.Is(err, syscall.EINTR) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("bounded destroy: %v", err)
		}
		if destroyedHook != 1 || w.async.Len() != 0 || w.ch.Refs() != 1 {
			t.Fatalf("after the first phase: hook %d, async Len %d, channel refs %d", destroyedHook, w.async.Len(), w.ch.Refs())
		}
		for name, err := range map[string]error{
			"Poll":      second(c.Poll(make([]verbs.WC, 1))),
			"ReqNotify": c.ReqNotify(false),
			"Resize":    c.Resize(4),
			"Push":      second(c.Push(send(9), false)),
			"Ref":       c.Ref(),
		} {
			if !errors.Is(err, syscall.EINVAL) {
				t.Errorf("%s on a destroying CQ: %v, want EINVAL", name, err)
			}
		}
		done := make(chan error, 1)
		go func() { done <- c.Destroy() }()
		synctest.Wait()
		if len(done) != 0 {
			t.Fatal("Destroy returned with events unacked")
		}
		if err := c.AckEvents(1); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if len(done) != 0 {
			t.Fatal("Destroy returned with the CQ_ERR unacked")
		}
		if err := c.AckEvents(1); !errors.Is(err, syscall.EINVAL) {
			t.Fatalf("over-ack while destroying: %v", err)
		}
		if err := aev.Ack(); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if err := <-done; err != nil {
			t.Fatalf("Destroy after the acks: %v", err)
		}
		if w.ch.Refs() != 0 {
			t.Fatal("destroyed CQ still holds its channel")
		}
		if err := c.Destroy(); !errors.Is(err, syscall.EINVAL) {
			t.Fatalf("double destroy: %v, want EINVAL", err)
		}
		if err := c.AckEvents(0); !errors.Is(err, syscall.EINVAL) {
			t.Fatalf("ack on a destroyed CQ: %v, want EINVAL", err)
		}
	})
}

// TestDestroyBusyPolicy: with DestroyBusy, unacked events make destroy fail
// with EBUSY and change nothing.
func TestDestroyBusyPolicy(t *testing.T) {
	w := newWorld()
	c := w.cq(t, cq.Config{CQE: 4, Channel: w.ch, Destroy: cq.DestroyBusy})
	c.ReqNotify(false)
	mustPush(t, c, send(1))
	if _, _, err := w.ch.TryGetEvent(); err != nil {
		t.Fatal(err)
	}
	if err := c.Destroy(); !errors.Is(err, syscall.EBUSY) {
		t.Fatalf("Destroy with an unacked event: %v, want EBUSY", err)
	}
	if c.Destroyed() || c.Len() != 1 {
		t.Fatal("failed Destroy changed the CQ")
	}
	if err := c.AckEvents(1); err != nil {
		t.Fatal(err)
	}
	if err := c.Destroy(); err != nil {
		t.Fatal(err)
	}
}

// TestConcurrentProducersConsumers: under -race, producers pushing, a poller
// and an inspector running at once lose nothing, duplicate nothing, and keep
// each producer's order (CQ-17).
func TestConcurrentProducersConsumers(t *testing.T) {
	w := newWorld()
	c := w.cq(t, cq.Config{CQE: 1 << 12, Channel: w.ch})
	const producers, each = 4, 500
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for i := range each {
				x := verbs.WC{WRID: uint64(i), QPNum: uint32(p), Status: verbs.WCSuccess, Opcode: verbs.WCRecv}
				if over, err := c.Push(x, i%7 == 0); err != nil || over {
					t.Errorf("Push: overrun=%v err=%v", over, err)
					return
				}
				if i%50 == 0 {
					if err := c.ReqNotify(i%100 == 0); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	stop := make(chan struct{})
	var inspector sync.WaitGroup
	inspector.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				_ = c.Snapshot()
				_ = w.ch.Len()
			}
		}
	})
	next := make([]uint64, producers)
	buf := make([]verbs.WC, 16)
	for got := 0; got < producers*each; {
		n, err := c.Poll(buf)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range buf[:n] {
			if x.WRID != next[x.QPNum] {
				t.Fatalf("producer %d: got wr_id %d, want %d", x.QPNum, x.WRID, next[x.QPNum])
			}
			next[x.QPNum]++
		}
		got += n
	}
	wg.Wait()
	close(stop)
	inspector.Wait()
	// Read and ack every event so that Destroy returns at once.
	n := 0
	for {
		if _, _, err := w.ch.TryGetEvent(); err != nil {
			break
		}
		n++
	}
	if err := c.AckEvents(n); err != nil {
		t.Fatal(err)
	}
	if err := c.Destroy(); err != nil {
		t.Fatal(err)
	}
}

func second[A any](_ A, err error) error { return err }

// TestPushRejectsValuesOutsideTheEnums: a completion whose status, opcode
// or flags are no value of enum ibv_wc_status, ibv_wc_opcode or
// ibv_wc_flags is EINVAL and stores nothing; Push used to store status 999
// and opcode 999 as they were.
func TestPushRejectsValuesOutsideTheEnums(t *testing.T) {
	c, err := cq.New(cq.Config{CQE: 4})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ReqNotify(false); err != nil {
		t.Fatal(err)
	}
	bad := map[string]verbs.WC{
		"status 999":        {Status: 999, Opcode: verbs.WCSend},
		"status 24":         {Status: verbs.WCTMRndvIncomplete + 1, Opcode: verbs.WCSend},
		"opcode 999":        {Opcode: 999},
		"opcode 8":          {Opcode: 8},
		"opcode 138":        {Opcode: verbs.WCDriver3 + 1},
		"flags bit 7":       {Opcode: verbs.WCRecv, WCFlags: 1 << 7},
		"error status, 999": {Status: verbs.WCRemOpErr, Opcode: 999},
	}
	for name, w := range bad {
		if over, err := c.Push(w, false); over || !errors.Is(err, syscall.EINVAL) {
			t.Errorf("Push(%s) = %v, %v; want EINVAL", name, over, err)
		}
	}
	if s := c.Snapshot(); s.Len != 0 || s.Stats.Added != 0 || s.Arm == notify.Disarmed {
		t.Errorf("after the refused pushes: %d stored, %d added, arm %v", s.Len, s.Stats.Added, s.Arm)
	}
	for _, w := range []verbs.WC{
		{Status: verbs.WCTMRndvIncomplete, Opcode: verbs.WCAtomicWrite},
		{Opcode: verbs.WCDriver3, WCFlags: verbs.WCGRH | verbs.WCTMDataValid},
	} {
		if _, err := c.Push(w, false); err != nil {
			t.Errorf("Push(%v): %v", &w, err)
		}
	}
}
