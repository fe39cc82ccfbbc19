package conformance

import (
	"errors"
	"syscall"

	"github.com/verbsim/verbsim/verbs"
)

// Cases of the ASYNC family that need no QP: reading and acknowledging async
// events, with IBV_EVENT_CQ_ERR raised by overrunning a CQ (CQ-22). The event
// types of QPs, SRQs, WQs and ports (ASYNC-08..16) belong to later families.

// asyncVerbsTypes is enum ibv_event_type of rdma-core 44: each Go constant,
// the value verbs.h gives its enumerator, the enumerator and the text of
// ibv_event_type_str. async_test.go checks the table against the golden file
// printed from libibverbs itself; the cases check the Go constants and the
// device against the table.
var asyncVerbsTypes = [...]struct {
	typ  verbs.EventType
	val  uint32
	name string
	str  string
}{
	{verbs.EventCQErr, 0, "IBV_EVENT_CQ_ERR", "CQ error"},
	{verbs.EventQPFatal, 1, "IBV_EVENT_QP_FATAL", "local work queue catastrophic error"},
	{verbs.EventQPReqErr, 2, "IBV_EVENT_QP_REQ_ERR", "invalid request local work queue error"},
	{verbs.EventQPAccessErr, 3, "IBV_EVENT_QP_ACCESS_ERR", "local access violation work queue error"},
	{verbs.EventCommEst, 4, "IBV_EVENT_COMM_EST", "communication established"},
	{verbs.EventSQDrained, 5, "IBV_EVENT_SQ_DRAINED", "send queue drained"},
	{verbs.EventPathMig, 6, "IBV_EVENT_PATH_MIG", "path migrated"},
	{verbs.EventPathMigErr, 7, "IBV_EVENT_PATH_MIG_ERR", "path migration request error"},
	{verbs.EventDeviceFatal, 8, "IBV_EVENT_DEVICE_FATAL", "local catastrophic error"},
	{verbs.EventPortActive, 9, "IBV_EVENT_PORT_ACTIVE", "port active"},
	{verbs.EventPortErr, 10, "IBV_EVENT_PORT_ERR", "port error"},
	{verbs.EventLIDChange, 11, "IBV_EVENT_LID_CHANGE", "LID change"},
	{verbs.EventPKeyChange, 12, "IBV_EVENT_PKEY_CHANGE", "P_Key change"},
	{verbs.EventSMChange, 13, "IBV_EVENT_SM_CHANGE", "SM change"},
	{verbs.EventSRQErr, 14, "IBV_EVENT_SRQ_ERR", "SRQ catastrophic error"},
	{verbs.EventSRQLimitReached, 15, "IBV_EVENT_SRQ_LIMIT_REACHED", "SRQ limit reached"},
	{verbs.EventQPLastWQEReached, 16, "IBV_EVENT_QP_LAST_WQE_REACHED", "last WQE reached"},
	{verbs.EventClientReregister, 17, "IBV_EVENT_CLIENT_REREGISTER", "client reregistration"},
	{verbs.EventGIDChange, 18, "IBV_EVENT_GID_CHANGE", "GID table change"},
	{verbs.EventWQFatal, 19, "IBV_EVENT_WQ_FATAL", "WQ fatal"},
}

// asyncOutOfRange are values past the v44 enum (20 is DEVICE_SPEED_CHANGE in
// later rdma-core) for which ibv_event_type_str says "unknown".
var asyncOutOfRange = []uint32{20, 21, 100, 1<<32 - 1}

// asyncCases are the cases of the ASYNC family in async.go.
var asyncCases = []Case{
	{"ASYNC-01", "GetAsyncEvent blocks until an event", getAsyncEventBlocks},
	{"ASYNC-02", "non-blocking async read when idle is EAGAIN", tryGetAsyncEventIdle},
	{"ASYNC-03", "CQ_ERR names the CQ that overran", cqErrNamesOverranCQ},
	{"ASYNC-04", "event type values are those of verbs.h", eventTypeValues},
	{"ASYNC-05", "destroy waits for the ack of a read CQ_ERR", destroyWaitsForCQErrAck},
	{"ASYNC-06", "an async event goes to exactly one reader", asyncEventOneReader},
	{"ASYNC-07", "CQ_ERR means overrun", cqErrMeansOverrun},
	{"ASYNC-17", "event type strings are ibv_event_type_str", eventTypeStrings},
}

func getAsyncEventBlocks(t *tester, e *env) {
	q := e.CQ(1, nil, nil)
	r := asyncReaders(e, 1)
	defer r.stop()
	if got := r.idle(); got != nil {
		t.Fatalf("ibv_get_async_event returned with no event queued: %v, %v", got.v, got.err)
	}
	e.Push(q, SendWC(1), false) // a completion that fits raises nothing
	if got := r.idle(); got != nil {
		t.Fatalf("ibv_get_async_event returned before any overrun: %v, %v", got.v, got.err)
	}
	e.asyncOverrun(q)
	got := r.next()
	if got.err != nil || got.v == nil {
		t.Fatalf("the blocked ibv_get_async_event after an overrun: %v, %v; want CQ_ERR", got.v, got.err)
	}
	if got.v.EventType() != verbs.EventCQErr || got.v.CQ() != q {
		t.Errorf("the blocked reader got %v naming %v, want CQ_ERR naming the CQ", got.v.EventType(), named(got.v))
	}
	e.WantOK("ibv_ack_async_event", got.v.Ack())
}

func tryGetAsyncEventIdle(t *tester, e *env) {
	ev, err := e.Ctx.TryGetAsyncEvent()
	e.WantErrno("ibv_get_async_event with nothing pending", err, syscall.EAGAIN)
	if ev != nil {
		t.Errorf("ibv_get_async_event with nothing pending returned an event")
	}
	q := e.CQ(1, nil, nil)
	e.asyncOverrun(q)
	e.WantOK("ibv_ack_async_event", e.asyncTake("after an overrun").Ack())
	ev, err = e.Ctx.TryGetAsyncEvent()
	e.WantErrno("ibv_get_async_event after the only event was read", err, syscall.EAGAIN)
	if ev != nil {
		t.Errorf("ibv_get_async_event after the only event was read returned an event")
	}
}

func cqErrNamesOverranCQ(t *tester, e *env) {
	a := e.CQ(1, nil, nil)
	b := e.CQ(1, nil, nil)
	for _, c := range []struct {
		name string
		q    verbs.CQ
	}{{"B", b}, {"A", a}} {
		e.asyncOverrun(c.q)
		ev := e.asyncTake("CQ " + c.name + " overran")
		if ev.EventType() != verbs.EventCQErr {
			t.Errorf("CQ %s overran: event type %d (%v), want CQ_ERR", c.name, uint32(ev.EventType()), ev.EventType())
		}
		if ev.CQ() != c.q {
			t.Errorf("CQ %s overran: the event names %v, want CQ %s", c.name, named(ev), c.name)
		}
		e.WantOK("ibv_ack_async_event", ev.Ack())
	}
}

func eventTypeValues(t *tester, e *env) {
	for _, r := range asyncVerbsTypes {
		if uint32(r.typ) != r.val {
			t.Errorf("%s is %d, want %d", r.name, uint32(r.typ), r.val)
		}
	}
	q := e.CQ(1, nil, nil)
	e.asyncOverrun(q)
	ev := e.asyncTake("after an overrun")
	if got := uint32(ev.EventType()); got != 0 {
		t.Errorf("the overrun event has type %d, want %d (IBV_EVENT_CQ_ERR)", got, 0)
	}
	e.WantOK("ibv_ack_async_event", ev.Ack())
}

func destroyWaitsForCQErrAck(t *tester, e *env) {
	q := e.CQ(1, nil, nil)
	e.asyncOverrun(q)
	ev := e.asyncTake("after an overrun")
	e.notifyDestroyWaits("CQ_ERR read, not acked", q, func() {
		e.WantOK("ibv_ack_async_event", ev.Ack())
	})
}

func asyncEventOneReader(t *tester, e *env) {
	q := e.CQ(1, nil, nil)
	r := asyncReaders(e, 4)
	defer r.stop()
	if got := r.idle(); got != nil {
		t.Fatalf("a reader returned with no event queued: %v, %v", got.v, got.err)
	}
	e.asyncOverrun(q)
	got := r.next()
	if got.err != nil || got.v == nil {
		t.Fatalf("a blocked reader after an overrun: %v, %v; want CQ_ERR", got.v, got.err)
	}
	e.WantOK("ibv_ack_async_event", got.v.Ack())
	if extra := r.idle(); extra != nil {
		t.Errorf("one event woke a second reader, which got %v, %v", extra.v, extra.err)
	}
}

func cqErrMeansOverrun(t *tester, e *env) {
	q := e.CQ(4, nil, nil)
	c := q.CQE()
	for i := range c {
		w := SendWC(uint64(i))
		if i%2 == 1 {
			w = ErrWC(uint64(i), verbs.WCRetryExcErr) // an unsuccessful completion is no CQ error
		}
		if e.Push(q, w, i%2 == 1) {
			t.Fatalf("completion %d of a CQ of %d overran", i+1, c)
		}
	}
	ev, err := e.Ctx.TryGetAsyncEvent()
	if !errors.Is(err, syscall.EAGAIN) {
		t.Fatalf("a full CQ that did not overrun raised an async event: %v, %v", ev, err)
	}
	if !e.Push(q, SendWC(uint64(c)), false) {
		t.Fatalf("completion %d of a CQ of %d did not overrun", c+1, c)
	}
	ev = e.asyncTake("after an overrun")
	if ev.EventType() != verbs.EventCQErr || ev.CQ() != q {
		t.Errorf("the overrun raised %v naming %v, want CQ_ERR naming the CQ", ev.EventType(), named(ev))
	}
	e.WantOK("ibv_ack_async_event", ev.Ack())
}

func eventTypeStrings(t *tester, e *env) {
	for _, r := range asyncVerbsTypes {
		if got := r.typ.Str(); got != r.str {
			t.Errorf("%s: Str() = %q, want %q", r.name, got, r.str)
		}
	}
	for _, v := range asyncOutOfRange {
		if got := verbs.EventType(v).Str(); got != "unknown" {
			t.Errorf("EventType(%d).Str() = %q, want \"unknown\"", v, got)
		}
	}
	q := e.CQ(1, nil, nil)
	e.asyncOverrun(q)
	ev := e.asyncTake("after an overrun")
	if got, want := ev.EventType().Str(), asyncVerbsTypes[0].str; got != want {
		t.Errorf("the overrun event renders as %q, want %q", got, want)
	}
	e.WantOK("ibv_ack_async_event", ev.Ack())
}

// asyncOverrun injects completions into q until one does not fit, which
// overruns it (CQ-22) and raises CQ_ERR.
func (e *env) asyncOverrun(q verbs.CQ) {
	e.T.Helper()
	for i := range q.CQE() + 1 {
		if e.Push(q, SendWC(uint64(1000+i)), false) {
			return
		}
	}
	e.T.Fatalf("%d completions into a CQ of %d: no overrun", q.CQE()+1, q.CQE())
}

// asyncTake reads the next async event without blocking, or fails the case.
func (e *env) asyncTake(what string) verbs.AsyncEvent {
	e.T.Helper()
	ev, err := e.Ctx.TryGetAsyncEvent()
	if err != nil || ev == nil {
		e.T.Fatalf("%s: ibv_get_async_event: %v, %v; want an event", what, ev, err)
	}
	return ev
}

// asyncPool is a set of goroutines blocked in GetAsyncEvent, each reading
// once.
type asyncPool = readerPool[verbs.AsyncEvent]

// asyncReaders starts n goroutines blocked in GetAsyncEvent. Call stop before
// the case returns.
func asyncReaders(e *env, n int) *asyncPool {
	return startReaders(n, e.Ctx.GetAsyncEvent, func(ev verbs.AsyncEvent) {
		if ev != nil {
			_ = ev.Ack()
		}
	})
}

// named returns what an async event names, its CQ, QP or SRQ, or nil for a
// port or device event: for messages, and for comparing with an object of
// any kind.
func named(ev verbs.AsyncEvent) any {
	if q := ev.CQ(); q != nil {
		return q
	}
	if q := ev.QP(); q != nil {
		return q
	}
	if s := ev.SRQ(); s != nil {
		return s
	}
	return nil
}
