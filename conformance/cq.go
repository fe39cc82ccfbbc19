package conformance

import (
	"errors"
	"math"
	"math/rand/v2"
	"syscall"

	"github.com/verbsim/verbsim/verbs"
)

// cqCases are the cases of the CQ family: completion queue lifecycle, polling
// and overrun. Only the rules that need no QP and no traffic are here;
// completions are added through the Injector capability. The properties use
// math/rand/v2 with fixed seeds, so every run checks the same sequences.
var cqCases = []Case{
	{"CQ-01", "cqe bounds", cqeBounds},
	{"CQ-02", "cqe reports the real capacity, at least the request", cqeRealCapacity},
	{"CQ-03", "comp_vector range", compVectorRange},
	{"CQ-04", "cq_context handed back by the event", cqContextInEvent},
	{"CQ-05", "channel optional; a used channel cannot be destroyed", channelOptional},
	{"CQ-06", "max_cq exhausted: ENOMEM", maxCQExhausted},
	{"CQ-08", "resize bounds: unpolled count and max_cqe", resizeBounds},
	{"CQ-09", "resize gives at least the request; cqe is the real size", resizeRealSize},
	{"CQ-10", "resize keeps unpolled completions in order", resizeKeepsOrder},
}

func cqeBounds(t *tester, e *env) {
	max := e.Limits().MaxCQE
	for _, bad := range []int{0, -1, math.MinInt32, max + 1} {
		q, err := e.Ctx.CreateCQ(bad, nil, nil, 0)
		if q != nil {
			e.Track(q)
			t.Errorf("ibv_create_cq(cqe=%d) returned a CQ along with error %v; a failed create returns none", bad, err)
		}
		e.WantErrno("ibv_create_cq(cqe="+itoa(bad)+")", err, syscall.EINVAL)
	}
	for _, good := range []int{1, max} {
		q, err := e.Ctx.CreateCQ(good, nil, nil, 0)
		if err != nil {
			t.Errorf("ibv_create_cq(cqe=%d): %v, want success", good, err)
			continue
		}
		e.Track(q)
		cqDestroy(t, e, q, "ibv_destroy_cq(cqe="+itoa(good)+")")
	}
}

func cqeRealCapacity(t *tester, e *env) {
	// check creates a CQ of n entries in the environment on and checks its
	// reported capacity; with fill it also checks that the capacity is
	// real: that many completions fit and one more overruns.
	check := func(on *env, n int, fill bool) {
		t.Helper()
		q, err := on.Ctx.CreateCQ(n, nil, nil, 0)
		if err != nil {
			t.Errorf("ibv_create_cq(cqe=%d): %v, want success", n, err)
			return
		}
		on.Track(q)
		c := q.CQE()
		switch {
		case c < n:
			t.Errorf("ibv_create_cq(cqe=%d) reports cqe=%d, below the request", n, c)
		case e.Profile.ExactCQE && c != n:
			t.Errorf("ibv_create_cq(cqe=%d) reports cqe=%d; the profile says the capacity equals the request", n, c)
		}
		if fill && c >= n {
			cqFill(t, on, q, c, "a CQ created with cqe="+itoa(n))
		}
		cqDestroy(t, on, q, "ibv_destroy_cq(cqe="+itoa(n)+")")
	}
	max := e.Limits().MaxCQE
	sizes := []int{127, 128, 129, 255, 256, 257, 1000, 4095, 4096, 4097, 1<<16 - 1, 1 << 16}
	for n := 1; n <= 70; n++ {
		sizes = append(sizes, n)
	}
	rng := rand.New(rand.NewPCG(2, 0x5eed))
	for range 20 {
		sizes = append(sizes, 1+rng.IntN(min(max, 1<<16)))
	}
	for _, n := range sizes {
		if n <= max {
			check(e, n, n <= 300)
		}
	}
	// Sizes up to max_cqe on a device whose max_cqe is small (and not of
	// the form 2^k-1, so a rounding implementation meets its limit).
	if small := cqLimitedEnv(t, e, Limits{MaxCQE: 1000}); small != nil {
		for n := 1; n <= 1000; n++ {
			if n <= 150 || n%37 == 0 || n >= 990 {
				check(small, n, n <= 20 || n%111 == 0 || n == 1000)
			}
		}
	}
}

func compVectorRange(t *tester, e *env) {
	nv := e.Limits().NumCompVectors
	for _, bad := range []int{nv, nv + 1, -1, math.MinInt32} {
		q, err := e.Ctx.CreateCQ(4, nil, nil, bad)
		if q != nil {
			e.Track(q)
			t.Errorf("ibv_create_cq(comp_vector=%d) returned a CQ along with error %v", bad, err)
		}
		e.WantErrno("ibv_create_cq(comp_vector="+itoa(bad)+"), num_comp_vectors="+itoa(nv), err, syscall.EINVAL)
	}
	ch := e.Channel()
	for v := range min(nv, 256) {
		for _, c := range []verbs.CompChannel{nil, ch} {
			q, err := e.Ctx.CreateCQ(4, nil, c, v)
			if err != nil {
				t.Errorf("ibv_create_cq(comp_vector=%d) of num_comp_vectors=%d: %v, want success", v, nv, err)
				continue
			}
			e.Track(q)
			cqDestroy(t, e, q, "ibv_destroy_cq(comp_vector="+itoa(v)+")")
		}
	}
}

func cqContextInEvent(t *tester, e *env) {
	type sentinel struct{ name string }
	ch := e.Channel()
	contexts := []any{&sentinel{"first"}, "second", nil, &sentinel{"fourth"}}
	var qs []verbs.CQ
	for _, c := range contexts {
		qs = append(qs, e.CQ(4, c, ch))
	}
	// Fire them in an order unlike creation, twice each.
	for round := range 2 {
		for _, i := range []int{2, 0, 3, 1} {
			q, want := qs[i], contexts[i]
			e.WantOK("ibv_req_notify_cq", q.ReqNotify(false))
			e.Push(q, RecvWC(uint64(10*round+i)), true)
			gq, got := cqGetEvent(t, ch, "the event of CQ "+itoa(i))
			if gq != q {
				t.Errorf("the event of CQ %d names another CQ", i)
			}
			if got != want {
				t.Errorf("the event of CQ %d hands back cq_context %#v, want %#v as given at creation", i, got, want)
			}
			e.WantOK("ibv_ack_cq_events", q.AckEvents(1))
			e.PollAll(q, 4) // arm the next round on an empty CQ
		}
	}
}

func channelOptional(t *tester, e *env) {
	ch := e.Channel()
	user := e.CQ(4, "user", ch)
	q := e.CQ(4, nil, nil)
	e.WantOK("ibv_req_notify_cq(next) on a CQ without a channel", q.ReqNotify(false))
	want := []verbs.WC{SendWC(1), ErrWC(2, verbs.WCLocLenErr)}
	for _, w := range want {
		if e.Push(q, w, true) {
			t.Errorf("wr_id %d overran a CQ of cqe=%d holding fewer", w.WRID, q.CQE())
		}
	}
	e.WantOK("ibv_req_notify_cq(solicited) on a CQ without a channel", q.ReqNotify(true))
	e.Push(q, RecvWC(3), true)
	want = append(want, RecvWC(3))
	e.NoEvent("a channel not given to the armed CQ", ch)
	if ev, err := e.Ctx.TryGetAsyncEvent(); !errors.Is(err, syscall.EAGAIN) {
		t.Errorf("arming a CQ without a channel raised async event %v (err %v)", ev, err)
	}
	if d := cqDiff(want, e.PollAll(q, 8)); d != "" {
		t.Errorf("completions of the channel-less CQ (-want +got):\n%s", d)
	}

	e.WantErrno("ibv_destroy_comp_channel while a CQ uses it", ch.Destroy(), syscall.EBUSY)
	// The refused destroy changed nothing: the channel still delivers.
	e.WantOK("ibv_req_notify_cq", user.ReqNotify(false))
	e.Push(user, RecvWC(4), true)
	if gq, c := cqGetEvent(t, ch, "after the refused channel destroy"); gq != user || c != "user" {
		t.Errorf("the channel delivered an event naming another CQ (context %v)", c)
	}
	e.WantOK("ibv_ack_cq_events", user.AckEvents(1))
	cqDestroy(t, e, user, "ibv_destroy_cq")
	e.WantOK("ibv_destroy_comp_channel once its CQ is gone", ch.Destroy())
}

func maxCQExhausted(t *tester, e *env) {
	small := cqLimitedEnv(t, e, Limits{MaxCQ: 6})
	if small == nil {
		if m := e.Limits().MaxCQ; m > 4096 {
			t.Fatalf("max_cq is %d and the device cannot make one with smaller limits (conformance.LimitedDevice); this case needs either", m)
		}
		small = e
	}
	max := small.Limits().MaxCQ
	qs := make([]verbs.CQ, 0, max)
	for i := range max {
		q, err := small.Ctx.CreateCQ(1+i%5, nil, nil, 0)
		if err != nil {
			t.Fatalf("ibv_create_cq number %d of max_cq=%d: %v, want success", i+1, max, err)
		}
		small.Track(q)
		qs = append(qs, q)
	}
	ch := small.Channel()
	over := func(what string, cqe int, c verbs.CompChannel) {
		t.Helper()
		q, err := small.Ctx.CreateCQ(cqe, nil, c, 0)
		if q != nil {
			small.Track(q)
			t.Errorf("%s: a create beyond max_cq=%d returned a CQ (err %v)", what, max, err)
		}
		small.WantErrno(what+": ibv_create_cq beyond max_cq="+itoa(max), err, syscall.ENOMEM)
	}
	over("plain", 1, nil)
	over("with a channel and a larger cqe", 64, ch)

	// Destroying one CQ frees exactly one slot, even if destroyed twice.
	cqDestroy(t, small, qs[0], "ibv_destroy_cq")
	ctx, cancel := patient()
	defer cancel()
	small.WantErrno("ibv_destroy_cq a second time", qs[0].DestroyContext(ctx), syscall.EINVAL)
	q, err := small.Ctx.CreateCQ(2, nil, ch, 0)
	if err != nil {
		t.Fatalf("ibv_create_cq after destroying one of max_cq=%d CQs: %v, want success", max, err)
	}
	small.Track(q)
	over("after the freed slot was taken again", 1, nil)
}

func resizeBounds(t *tester, e *env) {
	q := e.CQ(16, nil, nil)
	before := q.CQE()
	max := e.Limits().MaxCQE
	const k = 10
	var want []verbs.WC
	for i := range k {
		w := RecvWC(uint64(100 + i))
		e.Push(q, w, false)
		want = append(want, w)
	}
	for _, bad := range []int{k - 1, 1, 0, -1, max + 1} {
		e.WantErrno("ibv_resize_cq("+itoa(bad)+") with "+itoa(k)+" unpolled", q.Resize(bad), syscall.EINVAL)
		if c := q.CQE(); c != before {
			t.Errorf("a refused ibv_resize_cq(%d) changed cqe from %d to %d", bad, before, c)
		}
	}
	// Exactly the unpolled count is enough.
	e.WantOK("ibv_resize_cq to the unpolled count", q.Resize(k))
	if c := q.CQE(); c < k {
		t.Errorf("after ibv_resize_cq(%d) cqe is %d", k, c)
	}
	if d := cqDiff(want, e.PollAll(q, 3)); d != "" {
		t.Errorf("completions after the refused resizes (-want +got):\n%s", d)
	}
	// Bounds hold on an empty CQ too.
	for _, bad := range []int{0, -1, max + 1} {
		e.WantErrno("ibv_resize_cq("+itoa(bad)+") on an empty CQ", q.Resize(bad), syscall.EINVAL)
	}
}

func resizeRealSize(t *tester, e *env) {
	q := e.CQ(100, nil, nil)
	for _, req := range []int{50, 10, 1, 3, 64, 200, 1000, 7} {
		e.WantOK("ibv_resize_cq("+itoa(req)+")", q.Resize(req))
		c := q.CQE()
		switch {
		case c < req:
			t.Errorf("after ibv_resize_cq(%d) cqe is %d, below the request", req, c)
			continue
		case e.Profile.ExactCQE && c != req:
			t.Errorf("after ibv_resize_cq(%d) cqe is %d; the profile says it equals the request", req, c)
		}
		// cqe is the real capacity: c completions fit; drain them again.
		for i := range c {
			if e.Push(q, SendWC(uint64(i)), false) {
				t.Fatalf("after ibv_resize_cq(%d), cqe=%d: completion %d overran", req, c, i+1)
			}
		}
		if n := len(e.PollAll(q, 64)); n != c {
			t.Fatalf("after ibv_resize_cq(%d): filled %d, polled %d", req, c, n)
		}
	}
	// ... and the completion beyond it overruns.
	q2 := e.CQ(100, nil, nil)
	e.WantOK("ibv_resize_cq(7)", q2.Resize(7))
	cqFill(t, e, q2, q2.CQE(), "a CQ resized to 7")
}

func resizeKeepsOrder(t *tester, e *env) {
	m := cqModel{t: t, e: e, q: e.CQ(8, nil, nil)}
	a := m.q.CQE()
	m.add(a)          // full
	m.take(a/2 + 1)   // the head moves into the ring
	m.add(a / 2)      // the tail wraps round the end: a-1 unpolled
	m.resize(2*a + 3) // grow a wrapped ring
	m.take(1)
	m.add(a)
	m.resize(len(m.want)) // shrink to exactly the unpolled count
	m.take(3)
	m.add(3)
	m.resize(len(m.want) + 1)
	m.drain()

	// The same under a seeded random mix of adds, polls and resizes.
	r := cqModel{t: t, e: e, q: e.CQ(8, nil, nil), rng: rand.New(rand.NewPCG(10, 0xcafe))}
	for range 600 {
		switch op := r.rng.IntN(10); {
		case op < 5:
			r.add(r.rng.IntN(r.q.CQE() - len(r.want) + 1))
		case op < 8:
			r.take(1 + r.rng.IntN(2*r.q.CQE()))
		default:
			lo := max(1, len(r.want))
			r.resize(lo + r.rng.IntN(max(lo, 8)+40-lo+1))
		}
	}
	r.drain()
}
