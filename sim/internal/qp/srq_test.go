package qp

import (
	"errors"
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/verbs"
)

func (r *rig) srq(t *testing.T, a verbs.SRQAttr, resize bool) *SRQ {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	s, err := NewSRQLocked(SRQConfig{Attr: a, Device: SRQLimits{MaxSRQWR: 32, MaxSRQSGE: 2, Resize: resize}, Domain: r.mu, Async: r.async})
	if err != nil {
		t.Fatalf("NewSRQLocked(%+v): %v", a, err)
	}
	return s
}

func (r *rig) take(s *SRQ) (uint64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id, _, ok := s.TakeLocked(nil)
	return id, ok
}

// TestSRQCreate: SRQ-01, limit ignored at creation by default.
func TestSRQCreate(t *testing.T) {
	r := newRig()
	for _, a := range []verbs.SRQAttr{{MaxWR: 0}, {MaxWR: 33}, {MaxWR: 4, MaxSGE: 3}} {
		r.mu.Lock()
		_, err := NewSRQLocked(SRQConfig{Attr: a, Device: SRQLimits{MaxSRQWR: 32, MaxSRQSGE: 2}, Domain: r.mu})
		r.mu.Unlock()
		if !errors.Is(err, syscall.EINVAL) {
			t.Errorf("NewSRQLocked(%+v): %v, want EINVAL", a, err)
		}
	}
	s := r.srq(t, verbs.SRQAttr{MaxWR: 4, SRQLimit: 3}, false)
	if a, _ := s.Query(); a.MaxWR < 4 || a.MaxSGE < 1 || a.SRQLimit != 0 {
		t.Fatalf("query after create %+v; want capacity >= 4 and the limit ignored", a)
	}
}

// TestSRQPostAndTake: SRQ-02 list rules, SRQ-08 FIFO, SRQ-04/05/11 limit.
func TestSRQPostAndTake(t *testing.T) {
	r := newRig()
	s := r.srq(t, verbs.SRQAttr{MaxWR: 4, MaxSGE: 1}, false)
	n, err := s.PostRecv([]verbs.RecvWR{{WRID: 1}, {WRID: 2, SGList: make([]verbs.SGE, 2)}, {WRID: 3}})
	if n != 1 || !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("post with a bad second WR: %d, %v", n, err)
	}
	if n, err := s.PostRecv([]verbs.RecvWR{{WRID: 2}, {WRID: 3}, {WRID: 4}, {WRID: 5}}); n != 3 || !errors.Is(err, syscall.ENOMEM) {
		t.Fatalf("post past capacity: %d, %v", n, err)
	}
	if err := s.Modify(&verbs.SRQAttr{SRQLimit: 5}, verbs.SRQLimit); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("limit above capacity: %v (SRQ-06)", err)
	}
	if err := s.Modify(&verbs.SRQAttr{SRQLimit: 3}, verbs.SRQLimit); err != nil {
		t.Fatal(err)
	}
	if r.async.Len() != 0 {
		t.Fatal("arming with 4 queued fired at once")
	}
	for want := uint64(1); want <= 2; want++ {
		if id, ok := r.take(s); !ok || id != want {
			t.Fatalf("take = %d, %v; want %d (SRQ-08)", id, ok, want)
		}
	}
	ev, err := r.async.TryGetAsyncEvent()
	if err != nil || ev.Type != verbs.EventSRQLimitReached || ev.Object != s {
		t.Fatalf("limit event %v, %v", ev, err)
	}
	if a, _ := s.Query(); a.SRQLimit != 0 {
		t.Fatalf("limit after firing %d, want 0 (SRQ-05)", a.SRQLimit)
	}
	r.take(s)
	if r.async.Len() != 0 {
		t.Fatal("a fired limit fired again")
	}
	ev.Ack()
	// SRQ-11: arming above the fill level fires only at the next take.
	s.PostRecv([]verbs.RecvWR{{WRID: 6}})
	s.Modify(&verbs.SRQAttr{SRQLimit: 4}, verbs.SRQLimit)
	if r.async.Len() != 0 {
		t.Fatal("arming above the fill level fired without a consumption")
	}
	r.take(s)
	if r.async.Len() != 1 {
		t.Fatal("the consumption did not fire the armed limit")
	}
}

// TestSRQResize: SRQ-07.
func TestSRQResize(t *testing.T) {
	r := newRig()
	fixed := r.srq(t, verbs.SRQAttr{MaxWR: 4}, false)
	if err := fixed.Modify(&verbs.SRQAttr{MaxWR: 8}, verbs.SRQMaxWR); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("resize without the capability: %v", err)
	}
	s := r.srq(t, verbs.SRQAttr{MaxWR: 4}, true)
	s.PostRecv([]verbs.RecvWR{{WRID: 1}, {WRID: 2}, {WRID: 3}})
	r.take(s)
	for _, bad := range []uint32{0, 1, 33} {
		if err := s.Modify(&verbs.SRQAttr{MaxWR: bad}, verbs.SRQMaxWR); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("resize to %d: %v, want EINVAL", bad, err)
		}
	}
	if err := s.Modify(&verbs.SRQAttr{MaxWR: 16}, verbs.SRQMaxWR); err != nil {
		t.Fatal(err)
	}
	for _, want := range []uint64{2, 3} {
		if id, _ := r.take(s); id != want {
			t.Fatalf("after resize took %d, want %d", id, want)
		}
	}
	if err := s.Modify(&verbs.SRQAttr{}, 4); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("unknown mask bit: %v", err)
	}
}

// TestSRQWithQPs: QP-04, SRQ-03, SRQ-10, FLUSH-07, ASYNC-14.
func TestSRQWithQPs(t *testing.T) {
	r := newRig()
	s := r.srq(t, verbs.SRQAttr{MaxWR: 8}, false)
	mk := func(typ verbs.QPType) (*QP, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.qpnum++
		return NewLocked(Config{
			Init:   InitAttr{Type: typ, SendCQ: r.scq, RecvCQ: r.rcq, SRQ: s, Cap: verbs.QPCap{MaxSendWR: 2, MaxRecvWR: 99, MaxRecvSGE: 99}},
			QPNum:  r.qpnum,
			Device: DeviceLimits{MaxQPWR: 64, MaxSGE: 4, MaxInline: 64},
			Modify: testLimits, Domain: r.mu, Async: r.async,
		})
	}
	if _, err := mk(verbs.QPTypeUC); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("UC QP with an SRQ: %v, want EINVAL (QP-04)", err)
	}
	q, err := mk(verbs.QPTypeRC)
	if err != nil {
		t.Fatalf("RC QP with an SRQ and oversized recv caps: %v (they are ignored, QP-04)", err)
	}
	walk(t, q, verbs.QPStateRTS)
	if _, err := q.PostRecv([]verbs.RecvWR{{WRID: 1}}); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("post_recv on an SRQ QP: %v, want EINVAL (SRQ-03)", err)
	}
	s.PostRecv([]verbs.RecvWR{{WRID: 1}, {WRID: 2}})
	if err := s.Destroy(); !errors.Is(err, syscall.EBUSY) {
		t.Fatalf("destroy SRQ with a QP attached: %v, want EBUSY (SRQ-10)", err)
	}
	walk(t, q, verbs.QPStateErr)
	if s.Len() != 2 || len(r.rcq.entries) != 0 {
		t.Fatalf("SRQ WRs flushed: SRQ has %d, recv CQ %d (FLUSH-07)", s.Len(), len(r.rcq.entries))
	}
	ev, err := r.async.TryGetAsyncEvent()
	if err != nil || ev.Type != verbs.EventQPLastWQEReached || ev.Object != q {
		t.Fatalf("LAST_WQE_REACHED: %v, %v (ASYNC-14)", ev, err)
	}
	ev.Ack()
	q.PostSend([]verbs.SendWR{{Opcode: verbs.WRSend}}) // flushed at once; no second LAST_WQE
	if r.async.Len() != 0 {
		t.Fatal("LAST_WQE_REACHED raised twice")
	}
	if err := q.Destroy(); err != nil {
		t.Fatal(err)
	}
	if err := s.Destroy(); err != nil {
		t.Fatalf("destroy SRQ after its QP: %v", err)
	}
	if err := s.Destroy(); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("double destroy: %v", err)
	}
	if _, err := s.PostRecv(nil); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("post on destroyed SRQ: %v", err)
	}
}
