package conformance

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"syscall"
	"time"

	"github.com/verbsim/verbsim/verbs"
)

// Cases of the FLUSH family that a modify to ERR or RESET shows without
// traffic, the QP events that come with it (ASYNC-05 and ASYNC-14 for QPs),
// and SQ_DRAINED (ASYNC-13). Every wait for flush completions is bounded by
// Patience and never requires them at once (FLUSH-13). Posted requests
// execute, so the send requests these cases flush are posted where they
// stay outstanding on any device (hold): on RC QPs in RTS, waiting for an
// acknowledgement that never comes, and on UC and UD QPs in SQD (QP-39).
//
// Left for the transport (issue #4): FLUSH-03 and FLUSH-09..12, which start
// from an error a request meets while executing (RC QPs cannot even be
// modified into SQE, but neither can UD and UC QPs, so that says nothing of
// FLUSH-09); the part of FLUSH-02 about requests that had already finished;
// in FLUSH-07, another QP consuming the SRQ's requests; and, in ASYNC-13,
// the SQ_DRAINED that comes when the sends in flight at RTS→SQD complete.

// flushQP creates a QP of type typ with its own send and receive CQs and
// takes it to where sends stay outstanding (hold), which it returns: RTS
// for RC, SQD for UC and UD.
func (w *qpWorld) flushQP(typ verbs.QPType, sigAll bool) (q verbs.QP, s verbs.QPState, scq, rcq verbs.CQ) {
	w.t.Helper()
	scq, rcq = w.e.CQ(64, nil, nil), w.e.CQ(64, nil, nil)
	q = w.createWith(verbs.QPInitAttr{Type: typ, Cap: w.qpCap(), SendCQ: scq, RecvCQ: rcq, SQSigAll: sigAll})
	return q, w.hold(q), scq, rcq
}

// flushNoAsync checks that the context has no async event queued.
func (w *qpWorld) flushNoAsync(what string) {
	w.t.Helper()
	if ev, err := w.e.Ctx.TryGetAsyncEvent(); !errors.Is(err, syscall.EAGAIN) {
		if ev != nil {
			w.t.Errorf("%s: async event %v naming %v, want none", what, ev.EventType(), named(ev))
			_ = ev.Ack()
			return
		}
		w.t.Errorf("%s: ibv_get_async_event: %v, want EAGAIN", what, err)
	}
}

// flushLastWQE waits for the next async event, which must be
// QP_LAST_WQE_REACHED naming q, and returns it unacked.
func (w *qpWorld) flushLastWQE(what string, q verbs.QP) verbs.AsyncEvent {
	w.t.Helper()
	ev := cqWaitAsync(w.t, w.e, what)
	if ev.EventType() != verbs.EventQPLastWQEReached || ev.QP() != q {
		_ = ev.Ack()
		w.t.Fatalf("%s: async event %v naming %v, want QP_LAST_WQE_REACHED naming the QP", what, ev.EventType(), named(ev))
	}
	return ev
}

// flushCases are the cases of the FLUSH, ASYNC families in flush.go.
var flushCases = []Case{
	{"FLUSH-01", "ERR flushes every outstanding request, each on its own queue's CQ", flushOutstanding},
	{"FLUSH-02", "per queue, flush completions come in posting order", flushInPostingOrder},
	{"FLUSH-04", "unsignaled send requests are flushed too", flushUnsignaled},
	{"FLUSH-05", "requests posted in ERR are accepted and flushed", flushPostedInErr},
	{"FLUSH-06", "a flush completion carries the wr_id, FLUSH_ERR and the QP's number", flushCompletionFields},
	{"FLUSH-07", "an SRQ's requests are not flushed when one of its QPs enters ERR", srqNotFlushed},
	{"FLUSH-08", "RESET discards queued requests without completions; the QP is reusable", resetDiscards},
	{"FLUSH-13", "flush completions arrive after the modify, within a bounded wait", flushAfterModify},
	{"FLUSH-14", "ERR by modify raises no async event, except LAST_WQE_REACHED on an SRQ", errByModifyNoAsync},
	{"ASYNC-13", "RTS→SQD raises one SQ_DRAINED once the drain is over: when asked, or always (rxe)", sqDrainedOnce},
	{"ASYNC-14", "a QP on an SRQ raises LAST_WQE_REACHED when it enters ERR", lastWQEReached},
	{"ASYNC-05", "destroying a QP or an SRQ waits for the ack of its event already read", destroyWaitsForQPEventAck},
}

func flushInPostingOrder(t *tester, e *env) {
	w := qpSetup(t, e)
	rng := rand.New(rand.NewPCG(2, 0xf102))
	for round := range 12 {
		typ := qpTypes[rng.IntN(3)]
		c := w.qpCap()
		c.MaxSendWR, c.MaxRecvWR = uint32(min(32, w.lim.MaxQPWR)), uint32(min(32, w.lim.MaxQPWR))
		q := w.createWith(verbs.QPInitAttr{Type: typ, Cap: c, SendCQ: w.cq, RecvCQ: w.cq})
		state := w.hold(q) // RTS for RC, SQD for UC and UD
		var sends, recvs []uint64
		for range 1 + rng.IntN(6) {
			// An RC QP may go on to SQD, where requests wait too (QP-39),
			// but only while no send is outstanding: the drain would wait
			// for an acknowledgement that never comes.
			if rng.IntN(4) == 0 && state == verbs.QPStateRTS && len(sends) == 0 {
				w.step(q, verbs.QPStateRTS, verbs.QPStateSQD)
				state = verbs.QPStateSQD
			}
			n := 1 + rng.IntN(4)
			if rng.IntN(2) == 0 && len(sends)+n <= int(c.MaxSendWR) {
				ids := idRange(uint64(1000+len(sends)), n)
				w.postSend("sends", q, w.sendIDs(q, ids...))
				sends = append(sends, ids...)
			} else if len(recvs)+n <= int(c.MaxRecvWR) {
				ids := idRange(uint64(5000+len(recvs)), n)
				w.postRecv("receives", q, w.recvIDs(ids...))
				recvs = append(recvs, ids...)
			}
		}
		w.step(q, state, verbs.QPStateErr)
		what := fmt.Sprintf("round %d: %v QP, %v→ERR", round, typ, state)
		got := w.collect(w.cq, len(sends)+len(recvs), what)
		var gs, gr []verbs.WC
		for _, c := range got {
			if c.WRID < 5000 {
				gs = append(gs, c)
			} else {
				gr = append(gr, c)
			}
		}
		w.wantFlushes(what+", send queue", gs, sends)
		w.wantFlushes(what+", receive queue", gr, recvs)
		if t.Failed() {
			return
		}
	}
}

func flushUnsignaled(t *tester, e *env) {
	w := qpSetup(t, e)
	for _, typ := range qpTypes {
		q, s, scq, _ := w.flushQP(typ, false)
		wrs := w.sendIDs(q, 1, 2, 3, 4, 5)
		for i := range wrs {
			if i != 2 {
				wrs[i].Flags &^= verbs.SendSignaled
			}
		}
		w.postSend("mostly unsignaled sends", q, wrs)
		w.step(q, s, verbs.QPStateErr)
		what := fmt.Sprintf("%v %v→ERR, sq_sig_all=0, one signaled send of five", typ, s)
		w.wantFlushes(what, w.collect(scq, 5, what), idRange(1, 5))
	}
}

func flushCompletionFields(t *tester, e *env) {
	// Only these four fields mean anything in an error completion;
	// vendor_err may hold any value and the rest is undefined, so this
	// case looks at nothing else.
	w := qpSetup(t, e)
	var qs []verbs.QP
	var states []verbs.QPState
	for i, typ := range qpTypes {
		q, s := w.held(typ)
		w.postSend("sends", q, w.sendIDs(q, uint64(10*i+1)))
		w.postRecv("receives", q, w.recvIDs(uint64(10*i+2)))
		qs, states = append(qs, q), append(states, s)
	}
	for i, q := range qs {
		w.step(q, states[i], verbs.QPStateErr)
	}
	for _, c := range w.collect(w.cq, 2*len(qs), "three QPs flushed into one CQ") {
		i := int(c.WRID / 10)
		if i >= len(qs) || c.WRID%10 == 0 || c.WRID%10 > 2 {
			t.Errorf("a flush completion with wr_id %d, which was never posted", c.WRID)
			continue
		}
		if c.Status != verbs.WCWRFlushErr {
			t.Errorf("wr_id %d: status %v, want WR_FLUSH_ERR", c.WRID, c.Status)
		}
		if c.QPNum != qs[i].Num() {
			t.Errorf("wr_id %d: qp_num %#x, want %#x, the number of the QP it was posted on", c.WRID, c.QPNum, qs[i].Num())
		}
	}
}

func srqNotFlushed(t *tester, e *env) {
	w := qpSetup(t, e)
	for _, typ := range []verbs.QPType{verbs.QPTypeRC, verbs.QPTypeUD} {
		s := w.srq(8, 1)
		depth := srqQuery(w, s).MaxWR
		rcq := e.CQ(64, nil, nil)
		q := w.createWith(verbs.QPInitAttr{Type: typ, Cap: w.qpCap(), SendCQ: w.cq, RecvCQ: rcq, SRQ: s})
		w.walk(q, verbs.QPStateRTS)
		ids := idRange(1, 5)
		srqPost(w, "five receives", s, ids)
		w.step(q, verbs.QPStateRTS, verbs.QPStateErr)
		// QP_LAST_WQE_REACHED comes once the QP will take nothing more
		// from the SRQ: whatever it flushes is flushed by then.
		what := fmt.Sprintf("%v QP on an SRQ holding 5 requests, moved to ERR", typ)
		e.WantOK("ibv_ack_async_event", w.flushLastWQE(what, q).Ack())
		if got := e.PollAll(rcq, 8); len(got) != 0 {
			t.Errorf("%s: the receive CQ got %v; the SRQ's requests are not the QP's to flush", what, wrIDs(got))
		}
		if d, ok := s.(Depth); ok && d.Len() != len(ids) {
			t.Errorf("%s: the SRQ holds %d requests, want %d", what, d.Len(), len(ids))
		}
		// The five still take their slots: exactly depth-5 more fit.
		n, err := s.PostRecv(w.recvIDs(idRange(100, int(depth)-len(ids)+1)...))
		w.wantPost(what+": filling the SRQ", n, err, int(depth)-len(ids), syscall.ENOMEM)
	}
}

func resetDiscards(t *tester, e *env) {
	w := qpSetup(t, e)
	for _, typ := range qpTypes {
		for _, toErr := range []bool{false, true} {
			q, via, scq, rcq := w.flushQP(typ, true)
			num := q.Num()
			w.postSend("sends", q, w.sendIDs(q, 1, 2))
			w.postRecv("receives", q, w.recvIDs(3, 4, 5))
			if toErr {
				w.step(q, via, verbs.QPStateErr)
				via = verbs.QPStateErr
			}
			what := fmt.Sprintf("%v %v→RESET", typ, via)
			if toErr {
				w.collect(scq, 2, what)
				w.collect(rcq, 3, what)
			}
			w.step(q, via, verbs.QPStateReset)
			for _, c := range []verbs.CQ{scq, rcq} {
				if got := e.PollAll(c, 8); len(got) != 0 {
					t.Errorf("%s produced completions %v", what, wrIDs(got))
				}
			}
			if q.Num() != num {
				t.Errorf("%s: qp_num changed from %#x to %#x", what, num, q.Num())
			}
			back := w.hold(q)
			c := w.query(q).Cap
			sends, recvs := idRange(100, int(c.MaxSendWR)), idRange(200, int(c.MaxRecvWR))
			w.postSend(fmt.Sprintf("%s, back in %v: a full send queue", what, back), q, w.sendIDs(q, sends...))
			w.postRecv(fmt.Sprintf("%s, back in %v: a full receive queue", what, back), q, w.recvIDs(recvs...))
			w.step(q, back, verbs.QPStateErr)
			w.wantFlushes(what+", then ERR: send CQ", w.collect(scq, len(sends), what), sends)
			w.wantFlushes(what+", then ERR: receive CQ", w.collect(rcq, len(recvs), what), recvs)
		}
	}
}

func flushAfterModify(t *tester, e *env) {
	w := qpSetup(t, e)
	q, s, scq, rcq := w.flushQP(verbs.QPTypeRC, true)
	w.postSend("sends", q, w.sendIDs(q, 1, 2, 3, 4))
	w.postRecv("receives", q, w.recvIDs(5, 6))
	w.step(q, s, verbs.QPStateErr)
	// collect polls until they are there: the modify need not wait for
	// them, but they must come.
	w.wantFlushes("send CQ", w.collect(scq, 4, "RC RTS→ERR"), idRange(1, 4))
	w.wantFlushes("receive CQ", w.collect(rcq, 2, "RC RTS→ERR"), idRange(5, 2))
}

func errByModifyNoAsync(t *tester, e *env) {
	w := qpSetup(t, e)
	n := 0
	for _, typ := range qpTypes {
		for _, from := range []verbs.QPState{verbs.QPStateInit, verbs.QPStateRTS, verbs.QPStateSQD} {
			q := w.at(typ, from)
			w.postRecv("receives", q, w.recvIDs(1))
			n++
			w.step(q, from, verbs.QPStateErr)
		}
	}
	// Once the flushes are there, the modifies are over.
	w.collect(w.cq, n, "nine QPs flushed")
	w.flushNoAsync("after nine QPs without an SRQ entered ERR")
	s := w.srq(4, 1)
	for _, typ := range []verbs.QPType{verbs.QPTypeRC, verbs.QPTypeUD} {
		q := w.createWith(verbs.QPInitAttr{Type: typ, Cap: w.qpCap(), SendCQ: w.cq, RecvCQ: w.cq, SRQ: s})
		w.walk(q, verbs.QPStateRTS)
		w.step(q, verbs.QPStateRTS, verbs.QPStateErr)
		what := fmt.Sprintf("%v QP on an SRQ entered ERR", typ)
		e.WantOK("ibv_ack_async_event", w.flushLastWQE(what, q).Ack())
		w.flushNoAsync(what + ", after LAST_WQE_REACHED")
	}
}

func sqDrainedOnce(t *tester, e *env) {
	// Each QP is fresh, so whether SQ_DRAINED was asked for is exactly
	// this modify's en_sqd_async_notify. The modifies bypass step,
	// which would take the event itself (sqDrained).
	w := qpSetup(t, e)
	toSQD := func(q verbs.QP, ask bool) error {
		a := qpAttr(w.lim, verbs.QPStateRTS, verbs.QPStateSQD)
		a.EnSQDAsyncNotify = ask
		mask := bState
		if ask {
			mask |= bSQDNote
		}
		return q.Modify(&a, mask)
	}
	for _, typ := range qpTypes {
		for _, ask := range []bool{true, false} {
			q := w.at(typ, verbs.QPStateRTS)
			what := fmt.Sprintf("%v QP, RTS→SQD with nothing outstanding, en_sqd_async_notify=%t", typ, ask)
			if err := toSQD(q, ask); err != nil {
				t.Fatalf("%s: %v, want success", what, err)
			}
			if ask || e.Profile.AlwaysSQDrained {
				ev := cqWaitAsync(t, e, what)
				if ev.EventType() != verbs.EventSQDrained || ev.QP() != q {
					t.Errorf("%s: async event %v naming %v, want SQ_DRAINED naming the QP", what, ev.EventType(), named(ev))
				}
				e.WantOK("ibv_ack_async_event", ev.Ack())
			}
			time.Sleep(Grace) // once, and unasked not at all under the default reading
			w.flushNoAsync(what)
		}
	}
	// An RC QP whose sends wait for an acknowledgement that never comes
	// (hold) never finishes its drain, so SQ_DRAINED must not come.
	q, _ := w.held(verbs.QPTypeRC)
	w.postSend("sends awaiting an acknowledgement", q, w.sendIDs(q, 1, 2))
	what := "RC QP, RTS→SQD with two sends in flight, en_sqd_async_notify=true"
	if err := toSQD(q, true); err != nil {
		t.Fatalf("%s: %v, want success", what, err)
	}
	time.Sleep(Grace)
	w.flushNoAsync(what + ": the drain is not over")
}

func lastWQEReached(t *tester, e *env) {
	w := qpSetup(t, e)
	s := w.srq(8, 1)
	srqPost(w, "receives", s, idRange(1, 3))
	for _, typ := range []verbs.QPType{verbs.QPTypeRC, verbs.QPTypeUD} {
		for _, from := range []verbs.QPState{verbs.QPStateInit, verbs.QPStateRTS} {
			q := w.createWith(verbs.QPInitAttr{Type: typ, Cap: w.qpCap(), SendCQ: w.cq, RecvCQ: w.cq, SRQ: s})
			w.walk(q, from)
			w.step(q, from, verbs.QPStateErr)
			ev := w.flushLastWQE(fmt.Sprintf("%v QP on an SRQ, %v→ERR", typ, from), q)
			e.WantOK("ibv_ack_async_event", ev.Ack())
		}
	}
}

func destroyWaitsForQPEventAck(t *tester, e *env) {
	w := qpSetup(t, e)
	s := w.srq(4, 1)
	q := w.createWith(verbs.QPInitAttr{Type: verbs.QPTypeRC, Cap: w.qpCap(), SendCQ: w.cq, RecvCQ: w.cq, SRQ: s})
	w.walk(q, verbs.QPStateInit)
	w.step(q, verbs.QPStateInit, verbs.QPStateErr)
	held := []struct {
		what    string
		ev      verbs.AsyncEvent
		destroy func(context.Context) error
	}{{"ibv_destroy_qp", w.flushLastWQE("RC QP on an SRQ entered ERR", q), q.DestroyContext}}
	// An SRQ event needs a request consumed, which only a Consumer
	// can do before there is traffic.
	s2 := w.srq(4, 1)
	if c := srqConsumer(t, s2); c != nil {
		srqPost(w, "two receives", s2, idRange(1, 2))
		lim := verbs.SRQAttr{SRQLimit: 2}
		e.WantOK("ibv_modify_srq(srq_limit=2)", s2.Modify(&lim, verbs.SRQLimit))
		srqTake(w, c, 1)
		ev := cqWaitAsync(t, e, "the SRQ fell below its limit")
		if ev.EventType() != verbs.EventSRQLimitReached {
			_ = ev.Ack()
			t.Fatalf("the SRQ fell below its limit: event %v, want SRQ_LIMIT_REACHED", ev.EventType())
		}
		held = append(held, struct {
			what    string
			ev      verbs.AsyncEvent
			destroy func(context.Context) error
		}{"ibv_destroy_srq", ev, s2.DestroyContext})
	}
	// Each destroy, given Grace, must come back unfinished: the event it
	// waits for is never acked meanwhile. Once it is, a destroy finishes
	// the job (as an abandoned CQ destroy can be finished, CQ-13).
	g, gcancel := graceful()
	defer gcancel()
	errs := make([]error, len(held))
	var wg sync.WaitGroup
	for i, h := range held {
		wg.Go(func() { errs[i] = h.destroy(g) })
	}
	wg.Wait()
	ctx, cancel := patient()
	defer cancel()
	for i, h := range held {
		if errs[i] == nil {
			t.Errorf("%s succeeded while an event read for the object was not acked", h.what)
		}
		e.WantOK("ibv_ack_async_event", h.ev.Ack())
		if errs[i] != nil {
			if err := h.destroy(ctx); err != nil {
				t.Errorf("%s after the ack: %v, want success", h.what, err)
			}
		}
	}
	e.WantOK("ibv_destroy_srq once its QP is gone", s.DestroyContext(ctx))
}

// srqQuery queries s or fails the case.
func srqQuery(w *qpWorld, s verbs.SRQ) verbs.SRQAttr {
	w.t.Helper()
	a, err := s.Query()
	if err != nil {
		w.t.Fatalf("ibv_query_srq: %v", err)
	}
	return a
}

// srqPost posts receives with the given wr_ids to s, or fails the case.
func srqPost(w *qpWorld, what string, s verbs.SRQ, ids []uint64) {
	w.t.Helper()
	if n, err := s.PostRecv(w.recvIDs(ids...)); n != len(ids) || err != nil {
		w.t.Fatalf("%s: ibv_post_srq_recv of %d: %d posted, %v", what, len(ids), n, err)
	}
}

// flushOutstanding checks FLUSH-01: ERR flushes every outstanding request of
// each transport, each on its own queue's CQ with the QP's number.
func flushOutstanding(t *tester, e *env) {
	w := qpSetup(t, e)
	for _, typ := range qpTypes {
		q, s, scq, rcq := w.flushQP(typ, true)
		w.postSend("sends", q, w.sendIDs(q, 1, 2, 3))
		w.postRecv("receives", q, w.recvIDs(11, 12, 13, 14))
		w.step(q, s, verbs.QPStateErr)
		what := fmt.Sprintf("%v %v→ERR", typ, s)
		sends, recvs := w.collect(scq, 3, what+": send CQ"), w.collect(rcq, 4, what+": receive CQ")
		w.wantFlushes(what+": send CQ", sends, idRange(1, 3))
		w.wantFlushes(what+": receive CQ", recvs, idRange(11, 4))
		for _, c := range append(sends, recvs...) {
			if c.QPNum != q.Num() {
				t.Errorf("%s: wr_id %d has qp_num %#x, want %#x", what, c.WRID, c.QPNum, q.Num())
			}
		}
	}
}

// flushPostedInErr checks FLUSH-05: requests posted to a QP in ERR (entered
// from INIT or RTS) are accepted and flushed.
func flushPostedInErr(t *tester, e *env) {
	w := qpSetup(t, e)
	for _, typ := range qpTypes {
		for _, from := range []verbs.QPState{verbs.QPStateInit, verbs.QPStateRTS} {
			scq, rcq := e.CQ(64, nil, nil), e.CQ(64, nil, nil)
			q := w.createWith(verbs.QPInitAttr{Type: typ, Cap: w.qpCap(), SendCQ: scq, RecvCQ: rcq})
			w.walk(q, from)
			w.step(q, from, verbs.QPStateErr)
			what := fmt.Sprintf("%v in ERR (from %v)", typ, from)
			n, err := q.PostSend(w.sendIDs(q, 1, 2))
			w.wantPost(what+": ibv_post_send", n, err, 2, 0)
			n, err = q.PostRecv(w.recvIDs(3, 4, 5))
			w.wantPost(what+": ibv_post_recv", n, err, 3, 0)
			w.wantFlushes(what+": send CQ", w.collect(scq, 2, what), idRange(1, 2))
			w.wantFlushes(what+": receive CQ", w.collect(rcq, 3, what), idRange(3, 3))
		}
	}
}
