package domain

import (
	"context"
	"errors"
	"testing"
)

// TestAutoWaitStopsAtTheBound: a wait that time cannot satisfy, against a
// timer that re-arms for ever, gives up with ErrWaitBound at the first
// advance past its bound, while a wait with no bound would run on.
func TestAutoWaitStopsAtTheBound(t *testing.T) {
	d := New()
	now, advances := uint64(50), 0
	d.Lock()
	defer d.Unlock()
	d.SetHooksLocked(Hooks{
		Now:       func() uint64 { return now },
		Advance:   func() bool { now += 100; advances++; return true }, // a retry every 100 ticks, for ever
		WaitBound: 1000,
	}, true)
	err := d.Wait(context.Background(), &Waiter{Obj: newObj("c"), For: "an event"}, func() bool { return false })
	if !errors.Is(err, ErrWaitBound) || !IsWaitError(err) {
		t.Fatalf("err %v; want a WaitError wrapping ErrWaitBound", err)
	}
	if now != 1150 || advances != 11 {
		t.Errorf("gave up at t=%d after %d advances; want t=1150 (the first step past 50+1000), 11", now, advances)
	}
	if n := len(d.Waiters()); n != 0 {
		t.Errorf("%d waiters left in the table", n)
	}
}

// TestExpireWaits: outside Auto mode the waits only block; ExpireWaitsLocked
// wakes those past their bound, reports the end of the next one's, leaves
// timeless ones alone, and the Deadline hook hears of each bounded wait as
// it begins.
func TestExpireWaits(t *testing.T) {
	d := New()
	var now uint64
	var deadlines []uint64
	d.Lock()
	d.SetHooksLocked(Hooks{
		Now:       func() uint64 { return now },
		WaitBound: 100,
		Deadline:  func(at uint64) { deadlines = append(deadlines, at) },
	}, false)
	if _, ok := d.ExpireWaitsLocked(); ok {
		t.Error("ExpireWaitsLocked reports a deadline with no waiter")
	}
	d.Unlock()

	errs := make(chan error, 3)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := func(at uint64, timeless bool) {
		d.Lock()
		now = at
		d.Unlock()
		go func() {
			d.Lock()
			defer d.Unlock()
			errs <- d.Wait(ctx, &Waiter{Obj: newObj("c"), Timeless: timeless}, func() bool { return false })
		}()
	}
	start(0, false)
	awaitWaiters(d, 1)
	start(30, false)
	awaitWaiters(d, 2)
	start(40, true)
	awaitWaiters(d, 3)

	d.Lock()
	if want := []uint64{101, 131}; len(deadlines) != 2 || deadlines[0] != want[0] || deadlines[1] != want[1] {
		t.Errorf("Deadline heard %v; want %v (the timeless wait has none)", deadlines, want)
	}
	now = 101
	next, ok := d.ExpireWaitsLocked()
	if !ok || next != 131 {
		t.Errorf("ExpireWaitsLocked at t=101 = %d, %v; want 131, true", next, ok)
	}
	d.Unlock()
	if err := <-errs; !errors.Is(err, ErrWaitBound) {
		t.Fatalf("the first wait: %v; want ErrWaitBound", err)
	}
	d.Lock()
	now = 10_000
	if _, ok := d.ExpireWaitsLocked(); ok {
		t.Error("a deadline is left once every bounded wait is past it")
	}
	d.Unlock()
	if err := <-errs; !errors.Is(err, ErrWaitBound) {
		t.Fatalf("the second wait: %v; want ErrWaitBound", err)
	}
	awaitWaiters(d, 1) // the timeless wait blocks on
	d.Lock()
	d.Broadcast()
	d.Unlock()
	select {
	case err := <-errs:
		t.Fatalf("the timeless wait ended: %v", err)
	default:
	}
	cancel()
	if err := <-errs; !errors.Is(err, context.Canceled) {
		t.Fatalf("the timeless wait: %v; want its context's end", err)
	}
}
