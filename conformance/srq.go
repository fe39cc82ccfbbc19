package conformance

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"syscall"

	"github.com/google/go-cmp/cmp"
	"github.com/verbsim/verbsim/verbs"
)

// Cases of the SRQ family that need no traffic: creation, posting, the
// limit as ibv_modify_srq and ibv_query_srq show it, resizing and destroy.
// How many requests an SRQ holds is seen through its capacity: exactly
// max_wr minus what it holds can still be posted.
//
// Consumption is what a QP receiving a message does. Before there is
// traffic the suite consumes through the optional Consumer capability; with
// it the limit event (SRQ-04, SRQ-05, SRQ-11, ASYNC-15), the FIFO order
// (SRQ-08) and the wait of ibv_destroy_srq for the ack of an event already
// read (ASYNC-05) are checked, and without it those parts are skipped.
//
// Left for the transport (issue #4): which QP gets a request and the qp_num
// of its completion (SRQ-08), and SRQ-09 (an empty SRQ under traffic).

// srqCreate calls ibv_create_srq on w's PD and checks the failure
// convention; a created SRQ is destroyed at the end of the case.
func srqCreate(w *qpWorld, a verbs.SRQAttr) (verbs.SRQ, error) {
	w.t.Helper()
	s, err := w.pd.CreateSRQ(verbs.SRQInitAttr{Attr: a})
	if s != nil {
		w.t.Cleanup(func() {
			ctx, cancel := graceful()
			defer cancel()
			_ = s.DestroyContext(ctx)
		})
		if err != nil {
			w.t.Errorf("ibv_create_srq(%+v) returned an SRQ along with error %v", a, err)
		}
	} else if err == nil {
		w.t.Errorf("ibv_create_srq(%+v) returned neither an SRQ nor an error", a)
	}
	return s, err
}

// srqOverLimit checks that an SRQ above one of w's limits is EINVAL with no
// SRQ (SRQ-01).
func srqOverLimit(t *tester, w *qpWorld) {
	t.Helper()
	l := w.lim
	for _, r := range []verbs.SRQAttr{{MaxWR: uint32(l.MaxSRQWR) + 1, MaxSGE: 1}, {MaxWR: 4, MaxSGE: uint32(l.MaxSRQSGE) + 1}} {
		s, err := srqCreate(w, r)
		if s != nil {
			t.Errorf("ibv_create_srq(max_wr=%d, max_sge=%d) above the device limits returned an SRQ", r.MaxWR, r.MaxSGE)
		}
		w.e.WantErrno(fmt.Sprintf("ibv_create_srq(max_wr=%d, max_sge=%d)", r.MaxWR, r.MaxSGE), err, syscall.EINVAL)
	}
}

// srqConsumer returns s's Consumer capability, or nil after logging that
// the consumption half of the case is not checked.
func srqConsumer(t *tester, s verbs.SRQ) Consumer {
	t.Helper()
	c, ok := s.(Consumer)
	if !ok {
		t.Logf("the SRQ cannot be consumed without traffic (conformance.Consumer): the consumption half is not checked")
	}
	return c
}

// srqTake consumes n requests of s and returns their wr_ids, or fails the
// case.
func srqTake(w *qpWorld, c Consumer, n int) []uint64 {
	w.t.Helper()
	var ids []uint64
	for range n {
		id, _, ok := c.Take()
		if !ok {
			w.t.Fatalf("consuming from the SRQ: it is empty after %d of %d", len(ids), n)
		}
		ids = append(ids, id)
	}
	return ids
}

// srqLimitEvent waits for the next async event, which must be
// SRQ_LIMIT_REACHED naming s, and acks it.
func srqLimitEvent(w *qpWorld, what string, s verbs.SRQ) {
	w.t.Helper()
	ev := cqWaitAsync(w.t, w.e, what)
	if ev.EventType() != verbs.EventSRQLimitReached || ev.SRQ() != s {
		w.t.Errorf("%s: async event %v naming %v, want SRQ_LIMIT_REACHED naming the SRQ", what, ev.EventType(), named(ev))
	}
	w.e.WantOK("ibv_ack_async_event", ev.Ack())
}

// srqFill posts to s until it is full and checks that exactly free requests
// fit before ENOMEM.
func srqFill(w *qpWorld, what string, s verbs.SRQ, free int) {
	w.t.Helper()
	n, err := s.PostRecv(w.recvIDs(idRange(9000, free+1)...))
	w.wantPost(what+": posting until the SRQ is full", n, err, free, syscall.ENOMEM)
}

// srqRefused checks that ibv_modify_srq(a, mask) fails with EINVAL and
// leaves the SRQ's attributes as they were.
func srqRefused(w *qpWorld, what string, s verbs.SRQ, a verbs.SRQAttr, mask verbs.SRQAttrMask) {
	w.t.Helper()
	before := srqQuery(w, s)
	err := s.Modify(&a, mask)
	w.e.WantErrno(what, err, syscall.EINVAL)
	if after := srqQuery(w, s); after != before {
		w.t.Errorf("%s: a refused ibv_modify_srq changed the SRQ (-before +after):\n%s", what, cmp.Diff(before, after))
	}
}

// srqCases are the cases of the SRQ, ASYNC families in srq.go.
var srqCases = []Case{
	{"SRQ-01", "create writes back at least the request; over a limit is EINVAL; srq_limit follows the profile", srqCreateWritesBack},
	{"SRQ-02", "posting to an SRQ stops at the first bad request; ENOMEM when full", srqPostStopsAtBad},
	{"SRQ-03", "ibv_post_recv on a QP attached to an SRQ is EINVAL", postRecvOnSRQQP},
	{"SRQ-04", "IBV_SRQ_LIMIT arms the limit with any value up to max_wr; 0 disarms", srqLimitArm},
	{"SRQ-05", "query reports srq_limit 0 whenever the limit is not armed", srqLimitQuery},
	{"SRQ-08", "requests leave the SRQ in posting order", srqPostingOrder},
	{"SRQ-06", "ibv_modify_srq is all or nothing; a limit above max_wr is EINVAL", modifySRQAllOrNothing},
	{"SRQ-07", "resizing works only with IBV_DEVICE_SRQ_RESIZE, never below what is queued", srqResize},
	{"SRQ-10", "destroying an SRQ is EBUSY while a QP is attached", destroySRQWhileAttached},
	{"SRQ-11", "arming a limit above the fill level raises nothing by itself", srqLimitAboveFill},
	{"ASYNC-15", "SRQ_LIMIT_REACHED names the SRQ whose limit fired", srqLimitReachedNamesSRQ},
}

func srqCreateWritesBack(t *tester, e *env) {
	// Sizes at the limits run where the limits are small; the refusals
	// also on the device itself.
	w := qpSetup(t, e)
	if s := qpSmallEnv(t, e); s != nil {
		sw := qpSetup(t, s)
		srqOverLimit(t, sw)
		w = sw
	}
	l := w.lim
	rng := rand.New(rand.NewPCG(1, 0x5101))
	reqs := []verbs.SRQAttr{{MaxWR: 1, MaxSGE: 1}, {MaxWR: uint32(l.MaxSRQWR), MaxSGE: 1}, {MaxWR: 4, MaxSGE: uint32(l.MaxSRQSGE)}}
	for range 8 {
		reqs = append(reqs, verbs.SRQAttr{MaxWR: uint32(1 + rng.IntN(min(l.MaxSRQWR, 512))), MaxSGE: uint32(1 + rng.IntN(l.MaxSRQSGE))})
	}
	for _, r := range reqs {
		s, err := srqCreate(w, r)
		if err != nil {
			t.Errorf("ibv_create_srq(max_wr=%d, max_sge=%d) within the device limits: %v", r.MaxWR, r.MaxSGE, err)
			continue
		}
		if got := srqQuery(w, s); got.MaxWR < r.MaxWR || got.MaxSGE < r.MaxSGE {
			t.Errorf("ibv_create_srq(max_wr=%d, max_sge=%d) reports max_wr=%d max_sge=%d", r.MaxWR, r.MaxSGE, got.MaxWR, got.MaxSGE)
		}
		ctx, cancel := patient()
		e.WantOK("ibv_destroy_srq", s.DestroyContext(ctx))
		cancel()
	}
	srqOverLimit(t, qpSetup(t, e))
	s, err := srqCreate(w, verbs.SRQAttr{MaxWR: 16, MaxSGE: 1, SRQLimit: 4})
	if err != nil {
		t.Fatalf("ibv_create_srq(max_wr=16, srq_limit=4): %v", err)
	}
	want := uint32(0)
	if e.Profile.SRQLimitAtCreate {
		want = 4
	}
	if got := srqQuery(w, s).SRQLimit; got != want {
		t.Errorf("an SRQ created with srq_limit=4 reports srq_limit=%d, want %d (the profile's reading)", got, want)
	}
	if c := srqConsumer(t, s); c != nil {
		srqPost(w, "five receives", s, idRange(1, 5))
		srqTake(w, c, 2)
		what := "an SRQ created with srq_limit=4, down to 3 requests"
		if e.Profile.SRQLimitAtCreate {
			srqLimitEvent(w, what+" (the profile arms a limit given at creation)", s)
		}
		w.flushNoAsync(what)
	}
}

func srqPostStopsAtBad(t *tester, e *env) {
	w := qpSetup(t, e)
	rng := rand.New(rand.NewPCG(2, 0x5102))
	for round := range 8 {
		s := w.srq(uint32(4+rng.IntN(8)), uint32(1+rng.IntN(2)))
		a := srqQuery(w, s)
		n := 1 + rng.IntN(int(a.MaxWR))
		k := rng.IntN(n)
		wrs := w.recvIDs(idRange(1, n)...)
		wrs[k].SGList = w.sges(int(a.MaxSGE) + 1)
		what := fmt.Sprintf("round %d: SRQ max_wr %d max_sge %d, %d requests, too many SGEs at %d", round, a.MaxWR, a.MaxSGE, n, k)
		got, err := s.PostRecv(wrs)
		w.wantPost(what, got, err, k, syscall.EINVAL)
		srqFill(w, what, s, int(a.MaxWR)-k)
		got, err = s.PostRecv(w.recvIDs(7))
		w.wantPost(what+": one more on a full SRQ", got, err, 0, syscall.ENOMEM)
		if t.Failed() {
			return
		}
	}
	s := w.srq(4, 1)
	a := srqQuery(w, s)
	for _, k := range []int{0, int(a.MaxSGE)} {
		got, err := s.PostRecv([]verbs.RecvWR{{WRID: 1, SGList: w.sges(k)}})
		w.wantPost(fmt.Sprintf("a request with %d SGEs (max_sge %d)", k, a.MaxSGE), got, err, 1, 0)
	}
}

func postRecvOnSRQQP(t *tester, e *env) {
	w := qpSetup(t, e)
	s := w.srq(8, 1)
	for _, typ := range []verbs.QPType{verbs.QPTypeRC, verbs.QPTypeUD} {
		q := w.createWith(verbs.QPInitAttr{Type: typ, Cap: w.qpCap(), SendCQ: w.cq, RecvCQ: w.cq, SRQ: s})
		for _, st := range []verbs.QPState{verbs.QPStateInit, verbs.QPStateRTR, verbs.QPStateRTS} {
			if st == verbs.QPStateInit {
				w.step(q, verbs.QPStateReset, verbs.QPStateInit)
			} else {
				w.step(q, qpPath[st][len(qpPath[st])-2], st)
			}
			n, err := q.PostRecv(w.recvIDs(1))
			w.wantPost(fmt.Sprintf("ibv_post_recv on a %v QP on an SRQ, in %v", typ, st), n, err, 0, syscall.EINVAL)
		}
	}
	srqFill(w, "the SRQ after the refused posts", s, int(srqQuery(w, s).MaxWR))
}

func srqLimitArm(t *tester, e *env) {
	w := qpSetup(t, e)
	s := w.srq(8, 1)
	max := srqQuery(w, s).MaxWR
	srqPost(w, "receives", s, idRange(1, 2))
	for _, n := range []uint32{1, 2, max, 3, 0, 5} {
		a := verbs.SRQAttr{SRQLimit: n}
		e.WantOK(fmt.Sprintf("ibv_modify_srq(srq_limit=%d)", n), s.Modify(&a, verbs.SRQLimit))
		if got := srqQuery(w, s); got.SRQLimit != n || got.MaxWR != max {
			t.Errorf("after ibv_modify_srq(srq_limit=%d): query says srq_limit=%d max_wr=%d", n, got.SRQLimit, got.MaxWR)
		}
	}
	// Arming leaves the requests alone: two are queued.
	srqFill(w, "after arming", s, int(max)-2)

	s = w.srq(8, 1)
	c := srqConsumer(t, s)
	if c == nil {
		return
	}
	srqPost(w, "four receives", s, idRange(1, 4))
	a := verbs.SRQAttr{SRQLimit: 2}
	e.WantOK("ibv_modify_srq(srq_limit=2) with 4 queued", s.Modify(&a, verbs.SRQLimit))
	for left := 3; left >= 2; left-- {
		srqTake(w, c, 1)
		w.flushNoAsync(fmt.Sprintf("limit 2, %d requests left", left))
	}
	srqTake(w, c, 1)
	srqLimitEvent(w, "limit 2, 1 request left", s)
	w.flushNoAsync("after the limit event")
	srqTake(w, c, 1)
	w.flushNoAsync("limit fired, 0 requests left: the limit is disarmed")
	srqPost(w, "three receives", s, idRange(10, 3))
	e.WantOK("ibv_modify_srq(srq_limit=2), re-arming", s.Modify(&a, verbs.SRQLimit))
	srqTake(w, c, 2)
	srqLimitEvent(w, "re-armed at 2, 1 request left", s)
}

func srqLimitQuery(t *tester, e *env) {
	w := qpSetup(t, e)
	s := w.srq(8, 1)
	if got := srqQuery(w, s).SRQLimit; got != 0 {
		t.Errorf("a new SRQ reports srq_limit=%d, want 0", got)
	}
	srqPost(w, "receives", s, idRange(1, 3))
	if got := srqQuery(w, s).SRQLimit; got != 0 {
		t.Errorf("an SRQ never armed, holding 3 requests, reports srq_limit=%d, want 0", got)
	}
	a := verbs.SRQAttr{SRQLimit: 2}
	e.WantOK("ibv_modify_srq(srq_limit=2)", s.Modify(&a, verbs.SRQLimit))
	if got := srqQuery(w, s).SRQLimit; got != 2 {
		t.Errorf("an armed SRQ reports srq_limit=%d, want 2", got)
	}
	a.SRQLimit = 0
	e.WantOK("ibv_modify_srq(srq_limit=0)", s.Modify(&a, verbs.SRQLimit))
	if got := srqQuery(w, s).SRQLimit; got != 0 {
		t.Errorf("a disarmed SRQ reports srq_limit=%d, want 0", got)
	}
	if c := srqConsumer(t, s); c != nil {
		a.SRQLimit = 3
		e.WantOK("ibv_modify_srq(srq_limit=3) with 3 queued", s.Modify(&a, verbs.SRQLimit))
		srqTake(w, c, 1)
		srqLimitEvent(w, "limit 3, 2 requests left", s)
		if got := srqQuery(w, s).SRQLimit; got != 0 {
			t.Errorf("an SRQ whose limit fired reports srq_limit=%d, want 0", got)
		}
	}
}

func srqPostingOrder(t *tester, e *env) {
	w := qpSetup(t, e)
	s := w.srq(16, 2)
	c := srqConsumer(t, s)
	if c == nil {
		return
	}
	first := w.recvIDs(idRange(1, 3)...)
	first[1].SGList = []verbs.SGE{w.sge(64, 16), w.sge(128, 32)}
	if n, err := s.PostRecv(first); n != 3 || err != nil {
		t.Fatalf("ibv_post_srq_recv of 3: %d posted, %v", n, err)
	}
	srqPost(w, "three more receives", s, idRange(4, 3))
	got := srqTake(w, c, 2)
	srqPost(w, "two more receives", s, idRange(7, 2))
	got = append(got, srqTake(w, c, 6)...)
	if want := idRange(1, 8); !slices.Equal(got, want) {
		t.Errorf("the SRQ handed out wr_ids %v, want %v", got, want)
	}
	if _, _, ok := c.Take(); ok {
		t.Errorf("the SRQ handed out a request after all eight were consumed")
	}
	if n, err := s.PostRecv(first[1:2]); n != 1 || err != nil {
		t.Fatalf("ibv_post_srq_recv: %d posted, %v", n, err)
	}
	if id, sges, ok := c.Take(); !ok || id != 2 || !slices.Equal(sges, first[1].SGList) {
		t.Errorf("consumed wr_id %d with SGEs %+v (ok=%v), want wr_id 2 with %+v", id, sges, ok, first[1].SGList)
	}
}

func modifySRQAllOrNothing(t *tester, e *env) {
	w := qpSetup(t, e)
	s := w.srq(8, 1)
	max := srqQuery(w, s).MaxWR
	a := verbs.SRQAttr{SRQLimit: 3}
	e.WantOK("ibv_modify_srq(srq_limit=3)", s.Modify(&a, verbs.SRQLimit))
	srqRefused(w, "ibv_modify_srq(srq_limit=max_wr+1)", s, verbs.SRQAttr{SRQLimit: max + 1}, verbs.SRQLimit)
	srqRefused(w, "ibv_modify_srq with an unknown mask bit", s, verbs.SRQAttr{SRQLimit: 1}, verbs.SRQLimit|1<<5)
	if w.lim.SRQResize {
		srqRefused(w, "ibv_modify_srq(max_wr=2*max_wr, srq_limit above it)", s, verbs.SRQAttr{MaxWR: 2 * max, SRQLimit: 2*max + 1}, verbs.SRQMaxWR|verbs.SRQLimit)
		srqRefused(w, "ibv_modify_srq(max_wr=max_srq_wr+1, srq_limit=1)", s, verbs.SRQAttr{MaxWR: uint32(w.lim.MaxSRQWR) + 1, SRQLimit: 1}, verbs.SRQMaxWR|verbs.SRQLimit)
	}
	a.SRQLimit = max
	e.WantOK("ibv_modify_srq(srq_limit=max_wr)", s.Modify(&a, verbs.SRQLimit))
	srqFill(w, "after the refused modifies", s, int(max))
}

func srqResize(t *tester, e *env) {
	w := qpSetup(t, e)
	s := w.srq(8, 1)
	max := srqQuery(w, s).MaxWR
	srqPost(w, "receives", s, idRange(1, 4))
	if !w.lim.SRQResize {
		before := srqQuery(w, s)
		a := verbs.SRQAttr{MaxWR: 2 * max}
		if err := s.Modify(&a, verbs.SRQMaxWR); err == nil {
			t.Errorf("ibv_modify_srq(IBV_SRQ_MAX_WR) succeeded on a device without IBV_DEVICE_SRQ_RESIZE")
		} else if after := srqQuery(w, s); after != before {
			t.Errorf("a refused resize changed the SRQ from %+v to %+v", before, after)
		}
		return
	}
	srqRefused(w, "resizing to 3 with 4 requests queued", s, verbs.SRQAttr{MaxWR: 3}, verbs.SRQMaxWR)
	a := verbs.SRQAttr{MaxWR: 2 * max}
	e.WantOK(fmt.Sprintf("ibv_modify_srq(max_wr=%d)", 2*max), s.Modify(&a, verbs.SRQMaxWR))
	grown := srqQuery(w, s).MaxWR
	if grown < 2*max {
		t.Errorf("after resizing to %d, query says max_wr=%d", 2*max, grown)
	}
	a = verbs.SRQAttr{SRQLimit: 6}
	e.WantOK("ibv_modify_srq(srq_limit=6)", s.Modify(&a, verbs.SRQLimit))
	srqRefused(w, "resizing to 5 below the armed limit 6", s, verbs.SRQAttr{MaxWR: 5}, verbs.SRQMaxWR)
	a = verbs.SRQAttr{MaxWR: 6}
	e.WantOK("ibv_modify_srq(max_wr=6), with 4 queued and the limit at 6", s.Modify(&a, verbs.SRQMaxWR))
	srqFill(w, "after shrinking to 6 with 4 queued", s, int(srqQuery(w, s).MaxWR)-4)
}

func destroySRQWhileAttached(t *tester, e *env) {
	w := qpSetup(t, e)
	s := w.srq(8, 1)
	q := w.createWith(verbs.QPInitAttr{Type: verbs.QPTypeRC, Cap: w.qpCap(), SendCQ: w.cq, RecvCQ: w.cq, SRQ: s})
	ctx, cancel := patient()
	defer cancel()
	e.WantErrno("ibv_destroy_srq with a QP attached", s.DestroyContext(ctx), syscall.EBUSY)
	srqPost(w, "the SRQ after the refused destroy", s, idRange(1, 2))
	e.WantOK("ibv_destroy_qp", q.DestroyContext(ctx))
	e.WantOK("ibv_destroy_srq once its QP is gone", s.DestroyContext(ctx))
	e.WantErrno("ibv_destroy_srq twice", s.DestroyContext(ctx), syscall.EINVAL)
}

func srqLimitAboveFill(t *tester, e *env) {
	w := qpSetup(t, e)
	s := w.srq(8, 1)
	srqPost(w, "two receives", s, idRange(1, 2))
	a := verbs.SRQAttr{SRQLimit: 5}
	e.WantOK("ibv_modify_srq(srq_limit=5) with 2 queued", s.Modify(&a, verbs.SRQLimit))
	w.flushNoAsync("arming above the fill level")
	if got := srqQuery(w, s).SRQLimit; got != 5 {
		t.Errorf("after arming above the fill level, query says srq_limit=%d; nothing was consumed, so it is still armed", got)
	}
	if c := srqConsumer(t, s); c != nil {
		srqTake(w, c, 1)
		srqLimitEvent(w, "armed at 5 above the fill level, then one request consumed", s)
	}
}

func srqLimitReachedNamesSRQ(t *tester, e *env) {
	w := qpSetup(t, e)
	a, b := w.srq(8, 1), w.srq(8, 1)
	ca, cb := srqConsumer(t, a), srqConsumer(t, b)
	if ca == nil || cb == nil {
		return
	}
	lim := verbs.SRQAttr{SRQLimit: 2}
	for _, s := range []verbs.SRQ{a, b} {
		srqPost(w, "two receives", s, idRange(1, 2))
		e.WantOK("ibv_modify_srq(srq_limit=2)", s.Modify(&lim, verbs.SRQLimit))
	}
	srqTake(w, cb, 1)
	srqLimitEvent(w, "SRQ B fell below its limit", b)
	srqTake(w, ca, 1)
	srqLimitEvent(w, "SRQ A fell below its limit", a)
}
