package conformance

import (
	"errors"
	"syscall"

	"github.com/verbsim/verbsim/verbs"
)

// SRQErrorInjector is an optional capability of an SRQ: making it hit a
// catastrophic error, as a fault in the adapter would (IBV_EVENT_SRQ_ERR,
// ASYNC-15). Real adapters offer no way to do this on purpose; the case that
// needs it logs and returns without it.
type SRQErrorInjector interface {
	InjectError() error
}

// srqErrorCases are the cases of the ASYNC family in srq_error.go.
var srqErrorCases = []Case{
	{"ASYNC-15", "SRQ_ERR names the failed SRQ; the QPs receiving through it go to ERR with QP_FATAL", srqErrNamesSRQ},
}

func srqErrNamesSRQ(t *tester, e *env) {
	w := qpSetup(t, e)
	bad, good := w.srq(8, 1), w.srq(8, 1)
	inj, ok := bad.(SRQErrorInjector)
	if !ok {
		t.Logf("SRQ_ERR not checked: the SRQ cannot be made to fail (conformance.SRQErrorInjector)")
		return
	}
	tp := e.Profile
	onSRQ := func(s verbs.SRQ) verbs.QP {
		q := w.createWith(verbs.QPInitAttr{Type: verbs.QPTypeRC, Cap: w.qpCap(), SendCQ: w.cq, RecvCQ: w.cq, SRQ: s})
		w.walk(q, verbs.QPStateInit)
		return q
	}
	users := []verbs.QP{onSRQ(bad), onSRQ(bad)}
	bystanders := []verbs.QP{onSRQ(good), w.at(verbs.QPTypeRC, verbs.QPStateInit)}
	srqPost(w, "two receives on the SRQ that will fail", bad, idRange(1, 2))
	e.WantOK("inject the SRQ error", inj.InjectError())

	// SRQ_ERR first, then QP_FATAL for each QP of the SRQ (none under
	// the rxe reading, ASYNC-11); QP_LAST_WQE_REACHED may come too,
	// since each of them enters ERR with an SRQ (SRQ-09).
	wantFatal := 1
	if tp.NoQPEvents {
		wantFatal = 0
	}
	ev := cqWaitAsync(t, e, "after the SRQ error")
	if ev.EventType() != verbs.EventSRQErr || ev.SRQ() != bad {
		t.Errorf("the first async event is %v naming %v, want SRQ_ERR naming the failed SRQ", ev.EventType(), named(ev))
	}
	e.WantOK("ibv_ack_async_event(SRQ_ERR)", ev.Ack())
	fatal := map[verbs.QP]int{}
	for missing := len(users) * wantFatal; missing > 0; missing-- {
		ev := cqWaitAsync(t, e, "waiting for QP_FATAL")
		for ev.EventType() == verbs.EventQPLastWQEReached {
			e.WantOK("ibv_ack_async_event", ev.Ack())
			ev = cqWaitAsync(t, e, "waiting for QP_FATAL")
		}
		q := ev.QP()
		if ev.EventType() == verbs.EventQPFatal {
			fatal[q]++
		} else {
			t.Errorf("async event %v naming %v; want QP_FATAL for the QPs of the failed SRQ", ev.EventType(), named(ev))
		}
		e.WantOK("ibv_ack_async_event", ev.Ack())
	}
	for {
		ev, err := e.Ctx.TryGetAsyncEvent()
		if errors.Is(err, syscall.EAGAIN) {
			break
		}
		if err != nil {
			t.Fatalf("ibv_get_async_event: %v", err)
		}
		if ev.EventType() != verbs.EventQPLastWQEReached || (ev.QP() != users[0] && ev.QP() != users[1]) {
			t.Errorf("unexpected async event %v naming %v after the SRQ error", ev.EventType(), named(ev))
		}
		e.WantOK("ibv_ack_async_event", ev.Ack())
	}
	for i, q := range users {
		if fatal[q] != wantFatal {
			t.Errorf("QP %d of the failed SRQ: %d QP_FATAL events naming it, want %d (NoQPEvents=%v)", i, fatal[q], wantFatal, tp.NoQPEvents)
		}
		if s := w.query(q).QPState; s != verbs.QPStateErr {
			t.Errorf("QP %d of the failed SRQ is in %v, want ERR", i, s)
		}
	}
	for i, q := range bystanders {
		if s := w.query(q).QPState; s != verbs.QPStateInit {
			t.Errorf("bystander %d (another SRQ, or none) went from INIT to %v", i, s)
		}
	}
	// The SRQ's receives are not flushed (FLUSH-07): it still holds
	// both, so exactly max_wr - 2 more fit.
	srqFill(w, "the failed SRQ", bad, int(srqQuery(w, bad).MaxWR)-2)
	ctx, cancel := patient()
	defer cancel()
	for _, q := range users {
		e.WantOK("ibv_destroy_qp", q.DestroyContext(ctx))
	}
	e.WantOK("ibv_destroy_srq after its error", bad.DestroyContext(ctx))
}
