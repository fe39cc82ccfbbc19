package notify_test

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/sim/internal/notify"
)

type fakeCQ struct{ name string }

func (q *fakeCQ) TraceName() string { return q.name }

func push(ch *notify.Channel[*fakeCQ], q *fakeCQ, ctx any, t *notify.Tally) {
	mu := ch.Domain()
	mu.Lock()
	ch.PushLocked(q, ctx, t)
	mu.Unlock()
}

func counts(mu *domain.Domain, t *notify.Tally) (cr, ca, ar, aa uint64) {
	mu.Lock()
	defer mu.Unlock()
	return t.Counts()
}

// TestGetEventBlocksUntilPush: a blocked reader wakes exactly when an event
// is queued, and the event names its CQ and context (CHAN-03, CHAN-02).
func TestGetEventBlocksUntilPush(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ch := notify.NewChannel[*fakeCQ](nil)
		a := &fakeCQ{"a"}
		var tally notify.Tally
		got := make(chan *fakeCQ, 1)
		go func() {
			q, c, err := ch.GetEvent(context.Background())
			if err != nil || c != "ctx-a" {
				t.Errorf("GetEvent = %v, %v, %v", q, c, err)
			}
			got <- q
		}()
		synctest.Wait()
		select {
		case q := <-got:
			t.Fatalf("GetEvent returned %v with no event queued", q)
		default:
		}
		push(ch, a, "ctx-a", &tally)
		synctest.Wait()
		if q := <-got; q != a {
			t.Fatalf("GetEvent returned %v, want a", q)
		}
		if cr, _, _, _ := counts(ch.Domain(), &tally); cr != 1 {
			t.Fatalf("compRead = %d after one read, want 1", cr)
		}
	})
}

// TestEachEventToOneReader: with several blocked readers each event is
// delivered once (CHAN-11), and readers beyond the events stay blocked.
func TestEachEventToOneReader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ch := notify.NewChannel[*fakeCQ](nil)
		var tally notify.Tally
		ctx, cancel := context.WithCancel(context.Background())
		const readers, events = 5, 3
		results := make(chan *fakeCQ, readers)
		errs := make(chan error, readers)
		for range readers {
			go func() {
				q, _, err := ch.GetEvent(ctx)
				if err != nil {
					errs <- err
					return
				}
				results <- q
			}()
		}
		synctest.Wait()
		cqs := []*fakeCQ{{"0"}, {"1"}, {"2"}}
		for _, q := range cqs {
			push(ch, q, nil, &tally)
		}
		synctest.Wait()
		if len(results) != events {
			t.Fatalf("%d readers returned for %d events", len(results), events)
		}
		seen := map[*fakeCQ]bool{}
		for range events {
			q := <-results
			if seen[q] {
				t.Fatalf("event of %s delivered twice", q.name)
			}
			seen[q] = true
		}
		cancel()
		synctest.Wait()
		if len(errs) != readers-events {
			t.Fatalf("%d readers ended by cancel, want %d", len(errs), readers-events)
		}
		for range readers - events {
			err := <-errs
			if !errors.Is(err, syscall.EINTR) || !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled GetEvent error %v does not match EINTR and context.Canceled", err)
			}
		}
	})
}

// TestGetEventDeadline: a wait bounded by a deadline ends with an error that
// matches both EINTR and context.DeadlineExceeded, and takes no event.
func TestGetEventDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ch := notify.NewChannel[*fakeCQ](nil)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, _, err := ch.GetEvent(ctx)
		if !errors.Is(err, syscall.EINTR) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("GetEvent after deadline: %v", err)
		}
	})
}

// TestTryGetEventFIFO: non-blocking reads return EAGAIN when idle (CHAN-04)
// and events in raise order (CHAN-06); Len tracks readiness (CHAN-05).
func TestTryGetEventFIFO(t *testing.T) {
	ch := notify.NewChannel[*fakeCQ](nil)
	var ta, tb notify.Tally
	a, b := &fakeCQ{"a"}, &fakeCQ{"b"}
	if _, _, err := ch.TryGetEvent(); !errors.Is(err, syscall.EAGAIN) {
		t.Fatalf("TryGetEvent on idle channel: %v, want EAGAIN", err)
	}
	push(ch, a, 1, &ta)
	push(ch, b, 2, &tb)
	push(ch, a, 1, &ta)
	if ch.Len() != 3 {
		t.Fatalf("Len = %d, want 3", ch.Len())
	}
	for i, want := range []*fakeCQ{a, b, a} {
		q, _, err := ch.TryGetEvent()
		if err != nil || q != want {
			t.Fatalf("event %d = %v, %v; want %s", i, q, err, want.name)
		}
	}
	if ch.Len() != 0 {
		t.Fatalf("Len = %d after draining, want 0", ch.Len())
	}
	if cr, _, _, _ := counts(ch.Domain(), &ta); cr != 2 {
		t.Fatalf("a read %d events, want 2", cr)
	}
}

// TestChannelDestroy: EBUSY while referenced (CHAN-09), EINVAL twice, and
// blocked readers return EBADF.
func TestChannelDestroy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ch := notify.NewChannel[*fakeCQ](nil)
		mu := ch.Domain()
		mu.Lock()
		if err := ch.RefLocked(); err != nil {
			t.Fatal(err)
		}
		mu.Unlock()
		if err := ch.Destroy(); !errors.Is(err, syscall.EBUSY) {
			t.Fatalf("Destroy with a CQ attached: %v, want EBUSY", err)
		}
		if ch.Destroyed() || ch.Refs() != 1 {
			t.Fatal("failed Destroy changed the channel")
		}
		mu.Lock()
		ch.UnrefLocked()
		mu.Unlock()
		done := make(chan error, 1)
		go func() { _, _, err := ch.GetEvent(context.Background()); done <- err }()
		synctest.Wait()
		if err := ch.Destroy(); err != nil {
			t.Fatalf("Destroy: %v", err)
		}
		synctest.Wait()
		if err := <-done; !errors.Is(err, syscall.EBADF) {
			t.Fatalf("blocked reader after destroy: %v, want EBADF", err)
		}
		if err := ch.Destroy(); !errors.Is(err, syscall.EINVAL) {
			t.Fatalf("second Destroy: %v, want EINVAL", err)
		}
		mu.Lock()
		err := ch.RefLocked()
		mu.Unlock()
		if !errors.Is(err, syscall.EINVAL) {
			t.Fatalf("RefLocked on destroyed channel: %v, want EINVAL", err)
		}
		if _, _, err := ch.TryGetEvent(); !errors.Is(err, syscall.EBADF) {
			t.Fatalf("TryGetEvent on destroyed channel: %v, want EBADF", err)
		}
	})
}

// TestDiscard removes only the named CQ's unread events, keeping order.
func TestDiscard(t *testing.T) {
	ch := notify.NewChannel[*fakeCQ](nil)
	var tally notify.Tally
	a, b := &fakeCQ{"a"}, &fakeCQ{"b"}
	for _, q := range []*fakeCQ{a, b, a, b} {
		push(ch, q, nil, &tally)
	}
	mu := ch.Domain()
	mu.Lock()
	n := ch.DiscardLocked(a)
	mu.Unlock()
	if n != 2 || ch.Len() != 2 {
		t.Fatalf("DiscardLocked removed %d, Len %d; want 2, 2", n, ch.Len())
	}
	for range 2 {
		if q, _, _ := ch.TryGetEvent(); q != b {
			t.Fatalf("got %v after discarding a, want b", q)
		}
	}
}

// TestTryGetEventAllocatesNothing: a busy non-blocking loop on an idle
// channel must not allocate.
func TestTryGetEventAllocatesNothing(t *testing.T) {
	ch := notify.NewChannel[*fakeCQ](nil)
	if n := testing.AllocsPerRun(100, func() { _, _, _ = ch.TryGetEvent() }); n != 0 {
		t.Fatalf("TryGetEvent allocates %v times per call", n)
	}
}

// TestChannelPending: Pending names the CQs of the queued events, oldest
// first, and reads nothing: the counts and the queue stay as they were.
func TestChannelPending(t *testing.T) {
	ch := notify.NewChannel[*fakeCQ](nil)
	if p := ch.Pending(); p != nil {
		t.Fatalf("empty channel: %v", p)
	}
	var ta, tb notify.Tally
	a, b := &fakeCQ{"a"}, &fakeCQ{"b"}
	push(ch, a, nil, &ta)
	push(ch, b, nil, &tb)
	p := ch.Pending()
	if len(p) != 2 || p[0] != a || p[1] != b {
		t.Fatalf("Pending = %v", p)
	}
	if ch.Len() != 2 {
		t.Fatalf("Pending consumed events: Len %d", ch.Len())
	}
	if cr, _, _, _ := counts(ch.Domain(), &ta); cr != 0 {
		t.Fatalf("Pending counted a read: %d", cr)
	}
	if got, _, err := ch.TryGetEvent(); err != nil || got != a {
		t.Fatalf("first event %v, %v", got, err)
	}
	if p := ch.Pending(); len(p) != 1 || p[0] != b {
		t.Fatalf("after one read: %v", p)
	}
	var nilCh *notify.Channel[*fakeCQ]
	if nilCh.Pending() != nil {
		t.Error("nil channel")
	}
}
