package sim_test

import (
	"context"
	"testing"
	"time"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// TestAckWakesDestroy: a destroy that waits for the ack of an event already
// read (ASYNC-05) returns once the event is acknowledged through the
// handle-level AsyncEvent, even with a context that never ends. The ack
// used to wake waiters by the event's handle, while the destroy waits by
// the engine object, so such a destroy slept for ever (the drop-in's
// ibv_destroy_qp hang, docs/c-programs.md).
func TestAckWakesDestroy(t *testing.T) {
	ctx := open(t, sim.Config{})
	q, err := ctx.CreateCQEx(sim.CQInitAttr{CQE: 1})
	if err != nil {
		t.Fatal(err)
	}
	q.Push(verbs.WC{WRID: 1}, false)
	q.Push(verbs.WC{WRID: 2}, false) // overrun: CQ_ERR
	ev, err := ctx.TryGetAsyncEvent()
	if err != nil || ev.Type() != verbs.EventCQErr {
		t.Fatalf("async event %v, %v", ev, err)
	}
	done := make(chan error, 1)
	go func() { done <- q.DestroyContext(context.Background()) }()
	// Let the destroy start waiting; whether it has yet or not, the ack
	// must end it.
	for range 100 {
		select {
		case err := <-done:
			t.Fatalf("the destroy returned %v before the ack", err)
		default:
		}
		time.Sleep(time.Millisecond)
	}
	if err := ev.Ack(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("destroy after the ack: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the ack did not wake the destroy waiting for it")
	}
}
