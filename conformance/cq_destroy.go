package conformance

import (
	"context"
	"errors"
	"syscall"

	"github.com/verbsim/verbsim/verbs"
)

// cqDestroyCases are the destroy cases of the CQ family: references, unacked
// events, abandoned destroys (CQ-11, CQ-12, CQ-13).
var cqDestroyCases = []Case{
	{"CQ-11", "destroy while referenced: EBUSY, nothing changes", destroyWhileReferenced},
	{"CQ-12", "destroy with unpolled completions or a pending arm", destroyUnpolledOrArmed},
	{"CQ-12", "verbs on a destroyed CQ fail with EINVAL", verbsOnDestroyedCQ},
	{"CQ-13", "destroy waits for acks of read events; rejected acks count nothing", destroyWaitsForAcks},
	{"CQ-13", "unread events are discarded by destroy and need no ack", unreadEventsDiscarded},
	{"CQ-13", "an abandoned destroy is EINTR and can be finished", abandonedDestroy},
}

func destroyWhileReferenced(t *tester, e *env) {
	ch := e.Channel()
	q := e.CQ(8, "held", ch)
	r, ok := q.(Referencer)
	if !ok {
		t.Fatalf("the CQ cannot be held the way a QP holds it (conformance.Referencer); this case needs it")
	}
	e.WantOK("first reference", r.Ref())
	e.WantOK("second reference", r.Ref())
	ctx, cancel := patient()
	defer cancel()

	// Refused with completions stored: they stay, in order.
	want := []verbs.WC{SendWC(1), RecvWC(2), ErrWC(3, verbs.WCRemAccessErr)}
	for _, w := range want {
		e.Push(q, w, false)
	}
	cqe := q.CQE()
	e.WantErrno("ibv_destroy_cq while referenced twice", q.DestroyContext(ctx), syscall.EBUSY)
	if c := q.CQE(); c != cqe {
		t.Errorf("a refused destroy changed cqe from %d to %d", cqe, c)
	}
	if d := cqDiff(want, e.PollAll(q, 2)); d != "" {
		t.Errorf("completions after the refused destroy (-want +got):\n%s", d)
	}

	// Refused with an arm pending: the arm stays and fires on the next
	// completion.
	e.WantOK("ibv_req_notify_cq", q.ReqNotify(false))
	r.Unref()
	e.WantErrno("ibv_destroy_cq while still referenced once", q.DestroyContext(ctx), syscall.EBUSY)
	if _, _, err := ch.TryGetEvent(); !errors.Is(err, syscall.EAGAIN) {
		t.Fatalf("the refused destroy raised an event (err %v)", err)
	}
	e.Push(q, RecvWC(4), true)
	if gq, c := cqGetEvent(t, ch, "the arm made before the refused destroy"); gq != q || c != "held" {
		t.Errorf("the event names another CQ (context %v)", c)
	}
	e.WantOK("ibv_ack_cq_events", q.AckEvents(1))
	if d := cqDiff([]verbs.WC{RecvWC(4)}, e.PollAll(q, 2)); d != "" {
		t.Errorf("completion after the refused destroy (-want +got):\n%s", d)
	}
	r.Unref()
	e.WantOK("ibv_destroy_cq once unreferenced", q.DestroyContext(ctx))
}

func destroyUnpolledOrArmed(t *tester, e *env) {
	ch := e.Channel()
	unpolled := e.CQ(8, nil, ch)
	for i := range 3 {
		e.Push(unpolled, SendWC(uint64(i)), false)
	}
	cqDestroy(t, e, unpolled, "ibv_destroy_cq with 3 unpolled completions")

	armed := e.CQ(8, nil, ch)
	e.WantOK("ibv_req_notify_cq(next)", armed.ReqNotify(false))
	cqDestroy(t, e, armed, "ibv_destroy_cq armed, not fired")

	both := e.CQ(8, nil, ch)
	e.WantOK("ibv_req_notify_cq(solicited)", both.ReqNotify(true))
	e.Push(both, SendWC(7), false) // a successful send never fires a solicited arm
	e.Push(both, RecvWC(8), false) // nor an unsolicited receive
	cqDestroy(t, e, both, "ibv_destroy_cq armed (solicited), unfired, with unpolled completions")

	e.NoEvent("after destroying the unfired CQs", ch)
	e.WantOK("ibv_destroy_comp_channel once its CQs are destroyed", ch.Destroy())
}

func verbsOnDestroyedCQ(t *tester, e *env) {
	ch := e.Channel()
	q := e.CQ(8, nil, ch)
	e.Push(q, SendWC(1), false)
	e.Push(q, SendWC(2), false)
	e.WantOK("ibv_req_notify_cq", q.ReqNotify(false))
	cqDestroy(t, e, q, "ibv_destroy_cq")

	buf := cqCanaries(4)
	n, err := q.Poll(buf)
	if n != 0 {
		t.Errorf("ibv_poll_cq on a destroyed CQ returned %d completions", n)
	}
	e.WantErrno("ibv_poll_cq on a destroyed CQ", err, syscall.EINVAL)
	cqCheckCanaries(t, buf, 0, "ibv_poll_cq on a destroyed CQ")
	e.WantErrno("ibv_req_notify_cq(next) on a destroyed CQ", q.ReqNotify(false), syscall.EINVAL)
	e.WantErrno("ibv_req_notify_cq(solicited) on a destroyed CQ", q.ReqNotify(true), syscall.EINVAL)
	e.WantErrno("ibv_ack_cq_events(1) on a destroyed CQ", q.AckEvents(1), syscall.EINVAL)
	e.WantErrno("ibv_ack_cq_events(-1) on a destroyed CQ", q.AckEvents(-1), syscall.EINVAL)
	e.WantErrno("ibv_resize_cq(16) on a destroyed CQ", q.Resize(16), syscall.EINVAL)
	e.WantErrno("ibv_resize_cq(0) on a destroyed CQ", q.Resize(0), syscall.EINVAL)
	ctx, cancel := patient()
	defer cancel()
	e.WantErrno("ibv_destroy_cq a second time", q.DestroyContext(ctx), syscall.EINVAL)
	_ = q.CQE() // must not panic
	if in, ok := q.(Injector); ok {
		_, err := in.Push(SendWC(3), false)
		e.WantErrno("adding a completion to a destroyed CQ", err, syscall.EINVAL)
	}
	// Nothing reached the channel, and it still serves its other CQs.
	e.NoEvent("after verbs on the destroyed CQ", ch)
	other := e.CQ(8, "other", ch)
	e.WantOK("ibv_req_notify_cq on another CQ", other.ReqNotify(false))
	e.Push(other, RecvWC(4), true)
	if gq, c := cqGetEvent(t, ch, "another CQ on the channel"); gq != other || c != "other" {
		t.Errorf("the channel delivered an event naming another CQ (context %v)", c)
	}
	e.WantOK("ibv_ack_cq_events", other.AckEvents(1))
}

func destroyWaitsForAcks(t *tester, e *env) {
	// qa: one completion event read, none acked; one completion stored.
	cha := e.Channel()
	qa := e.CQ(4, nil, cha)
	cqReadEvents(t, e, qa, cha, 1, 100)
	wantA := []verbs.WC{SendWC(150)}
	e.Push(qa, wantA[0], false)
	// qb: two read, one acked.
	chb := e.Channel()
	qb := e.CQ(4, nil, chb)
	cqReadEvents(t, e, qb, chb, 2, 200)
	e.WantOK("ibv_ack_cq_events(1) of 2", qb.AckEvents(1))
	// qc: its CQ_ERR read, not acked.
	qc := e.CQ(1, nil, nil)
	wantC, evc := cqOverrun(t, e, qc)
	// qd: one read; acks that must be refused and count nothing.
	chd := e.Channel()
	qd := e.CQ(4, nil, chd)
	e.WantErrno("ibv_ack_cq_events(-1) with nothing read", qd.AckEvents(-1), syscall.EINVAL)
	e.WantErrno("ibv_ack_cq_events(1) with nothing read", qd.AckEvents(1), syscall.EINVAL)
	cqReadEvents(t, e, qd, chd, 1, 400)
	e.WantErrno("ibv_ack_cq_events(2) with 1 read", qd.AckEvents(2), syscall.EINVAL)
	e.WantErrno("ibv_ack_cq_events(-1) with 1 read", qd.AckEvents(-1), syscall.EINVAL)

	held := []*cqHeld{
		cqHoldDestroy(t, e, qa, "1 completion event read, none acked"),
		cqHoldDestroy(t, e, qb, "2 completion events read, 1 acked"),
		cqHoldDestroy(t, e, qc, "its CQ_ERR read, not acked"),
		cqHoldDestroy(t, e, qd, "1 read, only refused acks"),
	}
	cqStillHeld(t, held...)
	acksA := 1
	if e.Profile.DestroyBusyOnUnacked {
		// The refused destroy changed nothing: completions, arming and
		// events still work.
		if d := cqDiff(wantA, e.PollAll(qa, 4)); d != "" {
			t.Errorf("completions after the refused destroy (-want +got):\n%s", d)
		}
		cqReadEvents(t, e, qa, cha, 1, 160)
		acksA++
		if d := cqDiff(wantC, cqDrainOverrun(t, e, qc, "after the refused destroy")); d != "" {
			t.Errorf("completions of the overrun CQ after the refused destroy (-want +got):\n%s", d)
		}
	}
	e.WantOK("ibv_ack_cq_events on qa", qa.AckEvents(acksA))
	e.WantOK("ibv_ack_cq_events(1) on qb", qb.AckEvents(1))
	e.WantOK("ibv_ack_async_event of the CQ_ERR", evc.Ack())
	e.WantOK("ibv_ack_cq_events(1) on qd", qd.AckEvents(1))
	for _, h := range held {
		h.finish(t, e)
	}
}

func unreadEventsDiscarded(t *tester, e *env) {
	ch := e.Channel()
	doomed := e.CQ(4, "doomed", ch)
	other := e.CQ(4, "other", ch)
	for _, q := range []verbs.CQ{doomed, other} {
		e.WantOK("ibv_req_notify_cq", q.ReqNotify(false))
	}
	for _, q := range []verbs.CQ{doomed, other} {
		e.Push(q, RecvWC(1), true)
	}
	over := e.CQ(1, nil, nil)
	for i := range over.CQE() + 1 {
		e.Push(over, SendWC(uint64(i)), false)
	}
	// Neither the completion event nor the CQ_ERR has been read: both
	// destroys complete without any ack.
	cqDestroy(t, e, doomed, "ibv_destroy_cq with an unread completion event")
	cqDestroy(t, e, over, "ibv_destroy_cq with an unread CQ_ERR")
	if gq, c := cqGetEvent(t, ch, "the event of the surviving CQ"); gq != other || c != "other" {
		t.Errorf("the next event on the channel names a destroyed CQ (context %v); its unread events must be gone", c)
	}
	e.WantOK("ibv_ack_cq_events", other.AckEvents(1))
	e.NoEvent("after the surviving CQ's event", ch)
	if ev, err := e.Ctx.TryGetAsyncEvent(); !errors.Is(err, syscall.EAGAIN) {
		if err == nil {
			_ = ev.Ack()
		}
		t.Errorf("an async event (%v, err %v) survived the destroy of the CQ it names", ev, err)
	}
}

func abandonedDestroy(t *tester, e *env) {
	ch := e.Channel()
	q := e.CQ(4, nil, ch)
	cqReadEvents(t, e, q, ch, 1, 1)
	qc := e.CQ(1, nil, nil)
	_, ev := cqOverrun(t, e, qc)
	ctx, cancel := graceful()
	defer cancel()
	for _, x := range []struct {
		q    verbs.CQ
		what string
	}{{q, "a completion event"}, {qc, "a CQ_ERR"}} {
		err := x.q.DestroyContext(ctx)
		switch {
		case e.Profile.DestroyBusyOnUnacked:
			e.WantErrno("ibv_destroy_cq with "+x.what+" read, unacked", err, syscall.EBUSY)
		case !errors.Is(err, syscall.EINTR) || !errors.Is(err, context.DeadlineExceeded):
			t.Errorf("ibv_destroy_cq with %s unacked, whose context expired: got %v, want an error matching both EINTR and context.DeadlineExceeded", x.what, err)
		}
	}
	e.WantOK("ibv_ack_cq_events(1) after the abandoned destroy", q.AckEvents(1))
	e.WantOK("ibv_ack_async_event after the abandoned destroy", ev.Ack())
	cqDestroy(t, e, q, "ibv_destroy_cq again after the ack")
	cqDestroy(t, e, qc, "ibv_destroy_cq again after the CQ_ERR ack")
	ctx2, cancel2 := patient()
	defer cancel2()
	e.WantErrno("ibv_destroy_cq once finished", q.DestroyContext(ctx2), syscall.EINVAL)
}
