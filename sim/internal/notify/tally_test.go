package notify_test

import (
	"context"
	"errors"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/sim/internal/notify"
)

// TestAckComp: batching (CHAN-07, CHAN-12) and over-ack detection (CHAN-08).
func TestAckComp(t *testing.T) {
	ch := notify.NewChannel[*fakeCQ](nil)
	mu := ch.Domain()
	var tally notify.Tally
	q := &fakeCQ{"q"}
	for range 3 {
		push(ch, q, nil, &tally)
		if _, _, err := ch.TryGetEvent(); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, n := range []int{-1, 4} {
		if err := tally.AckComp(n); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("AckComp(%d) with 3 unacked: %v, want EINVAL", n, err)
		}
	}
	if tally.Unacked() != 3 {
		t.Fatalf("a rejected ack changed the count: %d unacked", tally.Unacked())
	}
	if err := tally.AckComp(0); err != nil {
		t.Fatalf("AckComp(0): %v", err)
	}
	if err := tally.AckComp(2); err != nil {
		t.Fatalf("AckComp(2): %v", err)
	}
	if err := tally.AckComp(1); err != nil || !tally.Settled() {
		t.Fatalf("AckComp(1): %v, settled %v", err, tally.Settled())
	}
	if err := tally.AckComp(1); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("over-ack after settling: %v, want EINVAL", err)
	}
}

// TestWaitSettled: every waiter returns once the last ack arrives, and a
// waiter whose context ends first reports the context's error.
func TestWaitSettled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ch := notify.NewChannel[*fakeCQ](nil)
		mu := ch.Domain()
		var tally notify.Tally
		q := &fakeCQ{"q"}
		push(ch, q, nil, &tally)
		push(ch, q, nil, &tally)
		ch.TryGetEvent()
		ch.TryGetEvent()

		var wg sync.WaitGroup
		done := make(chan error, 3)
		for range 3 {
			wg.Go(func() {
				mu.Lock()
				defer mu.Unlock()
				done <- tally.WaitSettled(context.Background(), mu, &domain.Waiter{Obj: q})
			})
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancelled := make(chan error, 1)
		go func() {
			mu.Lock()
			defer mu.Unlock()
			cancelled <- tally.WaitSettled(ctx, mu, &domain.Waiter{Obj: q})
		}()
		synctest.Wait()
		if len(done) != 0 {
			t.Fatal("a waiter returned with events unacked")
		}
		cancel()
		synctest.Wait()
		if err := <-cancelled; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled waiter: %v", err)
		}
		mu.Lock()
		tally.AckComp(1)
		mu.Wake(q)
		mu.Unlock()
		synctest.Wait()
		if len(done) != 0 {
			t.Fatal("a waiter returned with one event unacked")
		}
		mu.Lock()
		tally.AckComp(1)
		mu.Wake(q)
		mu.Unlock()
		wg.Wait()
		for range 3 {
			if err := <-done; err != nil {
				t.Fatalf("waiter: %v", err)
			}
		}
	})
}
