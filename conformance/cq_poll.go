package conformance

import (
	"errors"
	"math/rand/v2"
	"syscall"

	"github.com/verbsim/verbsim/verbs"
)

// cqPollCases are the polling and overrun cases of the CQ family (CQ-14 to
// CQ-17, CQ-22, CQ-23).
var cqPollCases = []Case{
	{"CQ-14", "poll on an empty CQ returns 0 at once", pollEmpty},
	{"CQ-15", "poll returns min(available, num_entries), writes no further", pollMinAvailable},
	{"CQ-16", "poll with num_entries 0 removes nothing", pollZeroEntries},
	{"CQ-17", "FIFO, no peek, no duplicates", pollFIFO},
	{"CQ-22", "overrun: one CQ_ERR naming the CQ, the extra completion lost", overrunOneCQErr},
	{"CQ-23", "after an overrun: sticky error, or only one completion lost", afterOverrun},
}

func pollEmpty(t *tester, e *env) {
	q := e.CQ(4, nil, nil)
	pollEmpty := func(what string) {
		t.Helper()
		type result struct {
			n   int
			err error
		}
		done := make(chan result, 1)
		buf := make([]verbs.WC, 4)
		go func() {
			n, err := q.Poll(buf)
			done <- result{n, err}
		}()
		ctx, cancel := patient()
		defer cancel()
		select {
		case r := <-done:
			if r.n != 0 || r.err != nil {
				t.Errorf("%s: ibv_poll_cq returned (%d, %v), want (0, nil)", what, r.n, r.err)
			}
		case <-ctx.Done():
			t.Fatalf("%s: ibv_poll_cq blocked; it must return 0 at once", what)
		}
	}
	pollEmpty("a new CQ")
	pollEmpty("a new CQ, again")
	e.Push(q, SendWC(1), false)
	e.Push(q, RecvWC(2), false)
	if n := len(e.PollAll(q, 1)); n != 2 {
		t.Errorf("polled %d completions, want 2", n)
	}
	pollEmpty("a drained CQ")
	e.WantOK("ibv_req_notify_cq", q.ReqNotify(false))
	pollEmpty("a drained, armed CQ")
	e.Push(q, SendWC(3), false)
	if got := e.PollAll(q, 4); len(got) != 1 || got[0].WRID != 3 {
		t.Errorf("after the empty polls the CQ returned %v, want wr_id 3", got)
	}
}

func pollMinAvailable(t *tester, e *env) {
	rng := rand.New(rand.NewPCG(15, 0xc0ffee))
	q := e.CQ(32, nil, nil)
	a := q.CQE()
	var want []verbs.WC
	var seq uint64
	for iter := range 400 {
		for range rng.IntN(a - len(want) + 1) {
			seq++
			w := cqRandomWC(rng, seq)
			e.Push(q, w, rng.IntN(2) == 0)
			want = append(want, w)
		}
		m := rng.IntN(a + 5) // num_entries; may exceed what is there and the capacity
		buf := cqCanaries(m + 3)
		n, err := q.Poll(buf[:m])
		if err != nil {
			t.Fatalf("step %d: ibv_poll_cq(num_entries=%d): %v", iter, m, err)
		}
		if exp := min(len(want), m); n != exp {
			t.Fatalf("step %d: ibv_poll_cq(num_entries=%d) with %d available returned %d, want %d", iter, m, len(want), n, exp)
		}
		if d := cqDiff(want[:n], buf[:n]); d != "" {
			t.Fatalf("step %d: polled completions (-want +got):\n%s", iter, d)
		}
		cqCheckCanaries(t, buf, n, "step "+itoa(iter)+": ibv_poll_cq(num_entries="+itoa(m)+")")
		want = want[n:]
	}
	// Failure: no entries, nothing written.
	e.Push(q, SendWC(1), false)
	cqDestroy(t, e, q, "ibv_destroy_cq")
	buf := cqCanaries(4)
	n, err := q.Poll(buf)
	if err == nil || n != 0 {
		t.Errorf("ibv_poll_cq on a destroyed CQ returned (%d, %v), want 0 and an error", n, err)
	}
	cqCheckCanaries(t, buf, 0, "a failed ibv_poll_cq")
}

func pollZeroEntries(t *tester, e *env) {
	q := e.CQ(8, nil, nil)
	zero := func(what string) {
		t.Helper()
		backing := cqCanaries(4)
		for _, s := range []struct {
			name string
			buf  []verbs.WC
		}{{"nil", nil}, {"empty", []verbs.WC{}}, {"zero length, spare capacity", backing[:0]}} {
			n, err := q.Poll(s.buf)
			if n != 0 || err != nil {
				t.Errorf("%s: ibv_poll_cq with a %s slice returned (%d, %v), want (0, nil)", what, s.name, n, err)
			}
		}
		cqCheckCanaries(t, backing, 0, what+": ibv_poll_cq with num_entries 0")
	}
	zero("an empty CQ")
	want := []verbs.WC{SendWC(1), RecvWC(2), ErrWC(3, verbs.WCWRFlushErr)}
	for _, w := range want {
		e.Push(q, w, false)
	}
	for range 3 {
		zero("a CQ holding 3")
	}
	if d := cqDiff(want, e.PollAll(q, 8)); d != "" {
		t.Errorf("completions after polls of 0 entries (-want +got):\n%s", d)
	}
}

func pollFIFO(t *tester, e *env) {
	q := e.CQ(64, nil, nil)
	var want []verbs.WC
	for i := range 40 {
		w := SendWC(uint64(1000 + i))
		if i%3 == 0 {
			w = RecvWC(uint64(1000 + i))
		}
		e.Push(q, w, false)
		want = append(want, w)
	}
	// Uneven batch sizes: concatenated batches must equal the insertion log.
	var got []verbs.WC
	for _, k := range []int{1, 7, 2, 16, 64} {
		buf := make([]verbs.WC, k)
		n, err := q.Poll(buf)
		e.WantOK("ibv_poll_cq", err)
		got = append(got, buf[:n]...)
	}
	if d := cqDiff(want, got); d != "" {
		t.Errorf("polled sequence differs from insertion order (-want +got):\n%s", d)
	}
	if n, _ := q.Poll(make([]verbs.WC, 4)); n != 0 {
		t.Errorf("a drained CQ returned %d more completions", n)
	}

	// Interleaved adds and polls, seeded: the concatenation of every batch
	// is the insertion log, whatever the interleaving.
	rng := rand.New(rand.NewPCG(17, 0xf1f0))
	want, got = nil, nil
	pending := 0
	for i := range 300 {
		for range rng.IntN(q.CQE() - pending + 1) {
			w := cqRandomWC(rng, uint64(i)<<32|uint64(len(want)))
			e.Push(q, w, false)
			want = append(want, w)
			pending++
		}
		buf := make([]verbs.WC, 1+rng.IntN(20))
		n, err := q.Poll(buf)
		e.WantOK("ibv_poll_cq", err)
		got = append(got, buf[:n]...)
		pending -= n
	}
	got = append(got, e.PollAll(q, 5)...)
	if d := cqDiff(want, got); d != "" {
		t.Errorf("interleaved: polled sequence differs from insertion order (-want +got):\n%s", d)
	}
}

func overrunOneCQErr(t *tester, e *env) {
	for _, req := range []int{1, 10} {
		q := e.CQ(req, nil, nil)
		want, ev := cqOverrun(t, e, q)
		e.WantOK("ibv_ack_async_event", ev.Ack())
		if ev, err := e.Ctx.TryGetAsyncEvent(); !errors.Is(err, syscall.EAGAIN) {
			if err == nil {
				_ = ev.Ack()
			}
			t.Errorf("cqe=%d: one overrun raised a second async event (%v, err %v)", q.CQE(), ev, err)
		}
		if d := cqDiff(want, cqDrainOverrun(t, e, q, "after the overrun")); d != "" {
			t.Errorf("cqe=%d: completions after the overrun (-want +got): the CQ must keep exactly the first cqe\n%s", q.CQE(), d)
		}
		cqDestroy(t, e, q, "ibv_destroy_cq after the overrun")
	}
}

func afterOverrun(t *tester, e *env) {
	q := e.CQ(4, nil, nil)
	want, ev := cqOverrun(t, e, q)
	e.WantOK("ibv_ack_async_event", ev.Ack())
	a := q.CQE()
	// Stored completions are handed out, with EIO under the sticky reading.
	buf := make([]verbs.WC, a+4)
	n, err := q.Poll(buf)
	if d := cqDiff(want, buf[:n]); d != "" {
		t.Errorf("the first poll after the overrun (-want +got):\n%s", d)
	}
	if e.Profile.OverrunDrops {
		e.WantOK("ibv_poll_cq after an overrun (profile: the CQ keeps working)", err)
	} else {
		e.WantErrno("ibv_poll_cq after an overrun, alongside the stored completions", err, syscall.EIO)
	}

	// One more completion after the drain.
	extra := SendWC(1000)
	stored := !e.Push(q, extra, false)
	if e.Profile.OverrunDrops {
		if !stored {
			t.Fatalf("after the drain the next completion overran; the profile says only the lost one is gone")
		}
		got := cqDrainOverrun(t, e, q, "after the drain")
		if d := cqDiff([]verbs.WC{extra}, got); d != "" {
			t.Errorf("completions added after the drain (-want +got):\n%s", d)
		}
		if ev, err := e.Ctx.TryGetAsyncEvent(); !errors.Is(err, syscall.EAGAIN) {
			if err == nil {
				_ = ev.Ack()
			}
			t.Errorf("a completion stored after the drain raised async event %v (err %v)", ev, err)
		}
		// The CQ holds its full capacity again.
		cqFill(t, e, q, a, "the CQ recovered from its overrun")
		return
	}
	if stored {
		t.Fatalf("after the drain a completion was stored; the CQ must stay in error after an overrun")
	}
	ev2 := cqWaitAsync(t, e, "the completion added to the CQ in error")
	if ev2.EventType() != verbs.EventCQErr || ev2.CQ() != q {
		t.Errorf("the completion added to the CQ in error raised %v naming %v, want CQ_ERR naming the CQ", ev2.EventType(), named(ev2))
	}
	e.WantOK("ibv_ack_async_event", ev2.Ack())
	for i := range 2 {
		n, err := q.Poll(buf)
		if n != 0 {
			t.Errorf("poll %d on the CQ in error returned %d completions, want none", i, n)
		}
		e.WantErrno("ibv_poll_cq on the drained CQ in error", err, syscall.EIO)
	}
}
