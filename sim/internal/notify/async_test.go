package notify_test

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"testing/synctest"

	"github.com/verbsim/verbsim/sim/internal/notify"
	"github.com/verbsim/verbsim/verbs"
)

func raise(q *notify.AsyncQueue, typ verbs.EventType, obj any, t *notify.Tally, port uint8) error {
	mu := q.Domain()
	mu.Lock()
	defer mu.Unlock()
	return q.RaiseLocked(typ, obj, t, port)
}

// TestRaiseChecksElement: an event must name what its type says (ASYNC-03).
func TestRaiseChecksElement(t *testing.T) {
	q := notify.NewAsyncQueue(nil)
	var tally notify.Tally
	obj := &fakeCQ{"cq"}
	bad := []struct {
		typ   verbs.EventType
		obj   any
		tally *notify.Tally
	}{
		{verbs.EventCQErr, nil, nil},
		{verbs.EventCQErr, obj, nil},
		{verbs.EventPortActive, obj, &tally},
		{verbs.EventType(20), nil, nil},
	}
	for _, b := range bad {
		if err := raise(q, b.typ, b.obj, b.tally, 1); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("RaiseLocked(%v, %v): %v, want EINVAL", b.typ.Name(), b.obj, err)
		}
	}
	if q.Len() != 0 {
		t.Fatalf("rejected events were queued: Len %d", q.Len())
	}
}

// TestAsyncGetAck: FIFO, elements, per-object accounting, over-ack.
func TestAsyncGetAck(t *testing.T) {
	q := notify.NewAsyncQueue(nil)
	var tally notify.Tally
	obj := &fakeCQ{"cq"}
	if _, err := q.TryGetAsyncEvent(); !errors.Is(err, syscall.EAGAIN) {
		t.Fatalf("idle TryGetAsyncEvent: %v, want EAGAIN (ASYNC-02)", err)
	}
	if err := raise(q, verbs.EventCQErr, obj, &tally, 0); err != nil {
		t.Fatal(err)
	}
	if err := raise(q, verbs.EventPortErr, nil, nil, 1); err != nil {
		t.Fatal(err)
	}
	if q.Raised(verbs.EventCQErr) != 1 || q.Raised(verbs.EventPortErr) != 1 {
		t.Fatal("Raised counts wrong")
	}
	e1, err := q.TryGetAsyncEvent()
	if err != nil || e1.Type != verbs.EventCQErr || e1.Object != obj {
		t.Fatalf("first event %v, %v", e1, err)
	}
	if e1.String() != "IBV_EVENT_CQ_ERR (cq)" {
		t.Errorf("String = %q", e1.String())
	}
	e2, err := q.TryGetAsyncEvent()
	if err != nil || e2.Type != verbs.EventPortErr || e2.Port != 1 || e2.Object != nil {
		t.Fatalf("second event %v, %v", e2, err)
	}
	if e2.String() != "IBV_EVENT_PORT_ERR (port 1)" {
		t.Errorf("String = %q", e2.String())
	}
	mu := q.Domain()
	mu.Lock()
	settled := tally.Settled()
	mu.Unlock()
	if settled {
		t.Fatal("an unacked CQ_ERR left the CQ's tally settled")
	}
	if err := e1.Ack(); err != nil {
		t.Fatal(err)
	}
	if err := e1.Ack(); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("second ack of the only CQ event: %v, want EINVAL", err)
	}
	if err := e2.Ack(); err != nil {
		t.Fatal(err)
	}
	if err := e2.Ack(); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("second ack of the only port event: %v, want EINVAL", err)
	}
	if err := (notify.AsyncEvent{}).Ack(); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("ack of a made-up event: %v, want EINVAL", err)
	}
	if r, a := q.Counts(); r != 2 || a != 2 {
		t.Fatalf("Counts = %d, %d; want 2, 2", r, a)
	}
}

// TestAsyncBlockingAndClose: a blocked reader wakes on an event (ASYNC-01);
// closing wakes readers with EBADF; closing twice is EINVAL.
func TestAsyncBlockingAndClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := notify.NewAsyncQueue(nil)
		got := make(chan notify.AsyncEvent, 1)
		go func() {
			ev, err := q.GetAsyncEvent(context.Background())
			if err != nil {
				t.Error(err)
			}
			got <- ev
		}()
		synctest.Wait()
		if len(got) != 0 {
			t.Fatal("GetAsyncEvent returned with nothing queued")
		}
		raise(q, verbs.EventPortActive, nil, nil, 2)
		synctest.Wait()
		if ev := <-got; ev.Type != verbs.EventPortActive || ev.Port != 2 {
			t.Fatalf("got %v", ev)
		}
		errc := make(chan error, 1)
		go func() { _, err := q.GetAsyncEvent(context.Background()); errc <- err }()
		synctest.Wait()
		if err := q.Close(); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if err := <-errc; !errors.Is(err, syscall.EBADF) {
			t.Fatalf("reader after close: %v, want EBADF", err)
		}
		if err := q.Close(); !errors.Is(err, syscall.EINVAL) {
			t.Fatalf("second Close: %v, want EINVAL", err)
		}
		if err := raise(q, verbs.EventPortErr, nil, nil, 1); err != nil || q.Len() != 0 {
			t.Fatalf("raise on closed queue: %v, Len %d", err, q.Len())
		}
	})
}

// TestAsyncDiscard drops only the named object's unread events.
func TestAsyncDiscard(t *testing.T) {
	q := notify.NewAsyncQueue(nil)
	var ta, tb notify.Tally
	a, b := &fakeCQ{"a"}, &fakeCQ{"b"}
	raise(q, verbs.EventCQErr, a, &ta, 0)
	raise(q, verbs.EventCQErr, b, &tb, 0)
	raise(q, verbs.EventCQErr, a, &ta, 0)
	mu := q.Domain()
	mu.Lock()
	n := q.DiscardLocked(a)
	mu.Unlock()
	if n != 2 || q.Len() != 1 {
		t.Fatalf("discarded %d, Len %d", n, q.Len())
	}
	if ev, _ := q.TryGetAsyncEvent(); ev.Object != b {
		t.Fatalf("remaining event names %v, want b", ev.Object)
	}
}

// TestElement checks the element of every event type (ASYNC-03).
func TestElement(t *testing.T) {
	want := map[verbs.EventType]verbs.EventElement{
		verbs.EventCQErr: verbs.ElementCQ, verbs.EventQPFatal: verbs.ElementQP,
		verbs.EventQPReqErr: verbs.ElementQP, verbs.EventQPAccessErr: verbs.ElementQP,
		verbs.EventCommEst: verbs.ElementQP, verbs.EventSQDrained: verbs.ElementQP,
		verbs.EventPathMig: verbs.ElementQP, verbs.EventPathMigErr: verbs.ElementQP,
		verbs.EventDeviceFatal: verbs.ElementPort, verbs.EventPortActive: verbs.ElementPort,
		verbs.EventPortErr: verbs.ElementPort, verbs.EventLIDChange: verbs.ElementPort,
		verbs.EventPKeyChange: verbs.ElementPort, verbs.EventSMChange: verbs.ElementPort,
		verbs.EventSRQErr: verbs.ElementSRQ, verbs.EventSRQLimitReached: verbs.ElementSRQ,
		verbs.EventQPLastWQEReached: verbs.ElementQP, verbs.EventClientReregister: verbs.ElementPort,
		verbs.EventGIDChange: verbs.ElementPort, verbs.EventWQFatal: verbs.ElementWQ,
	}
	for typ := verbs.EventType(0); typ <= 21; typ++ {
		if got := typ.Element(); got != want[typ] {
			t.Errorf("%s.Element() = %v, want %v", typ.Name(), got, want[typ])
		}
	}
}

// TestAsyncPending: Pending shows the queued events without reading them,
// and its copies cannot be acknowledged.
func TestAsyncPending(t *testing.T) {
	q := notify.NewAsyncQueue(nil)
	if p := q.Pending(); p != nil {
		t.Fatalf("empty queue: %v", p)
	}
	var tally notify.Tally
	obj := &fakeCQ{"cq"}
	if err := raise(q, verbs.EventCQErr, obj, &tally, 0); err != nil {
		t.Fatal(err)
	}
	if err := raise(q, verbs.EventPortErr, nil, nil, 1); err != nil {
		t.Fatal(err)
	}
	p := q.Pending()
	if len(p) != 2 || p[0].Type != verbs.EventCQErr || p[0].Object != obj || p[1].Type != verbs.EventPortErr || p[1].Port != 1 {
		t.Fatalf("Pending = %v", p)
	}
	if read, _ := q.Counts(); read != 0 || q.Len() != 2 {
		t.Fatalf("Pending read events: read %d, Len %d", read, q.Len())
	}
	if err := p[0].Ack(); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Ack of a pending copy: %v, want EINVAL", err)
	}
	var nilQ *notify.AsyncQueue
	if nilQ.Pending() != nil {
		t.Error("nil queue")
	}
}
