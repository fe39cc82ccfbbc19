package sim_test

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// sendIntoEmptyRQ connects an RC pair with rnr_retry = 7 (retry for ever)
// and posts a SEND that meets b's empty receive queue.
func sendIntoEmptyRQ(t *testing.T, cfg sim.Config) (*sim.Fabric, *end) {
	t.Helper()
	f, a, _ := rcPair(t, cfg, sim.ConnectOptions{RNRRetry: 7, MinRNRTimer: 1})
	if _, err := a.q.PostSend([]verbs.SendWR{{WRID: 1, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(0, 8)}}}); err != nil {
		t.Fatal(err)
	}
	return f, a
}

// TestWaitBound: with Config.WaitBound, an Auto-mode GetAsyncEvent that
// steps through RNR retries that never end gives up just past the bound,
// with an error matching EINTR and ErrWaitBound; without it, the same wait
// runs on until its context ends (here: a context ended by the test after
// the clock has passed the bound tenfold).
func TestWaitBound(t *testing.T) {
	const bound = 1_000_000
	f, a := sendIntoEmptyRQ(t, sim.Config{WaitBound: bound})
	_, err := a.ctx.GetAsyncEvent(context.Background())
	if !errors.Is(err, syscall.EINTR) || !errors.Is(err, sim.ErrWaitBound) {
		t.Fatalf("GetAsyncEvent: %v; want EINTR and ErrWaitBound", err)
	}
	if now := f.Now(); now <= bound || now > bound+10_000 {
		t.Errorf("gave up at t=%d; want within one RNR wait (10 µs) past %d", now, bound)
	}

	f, a = sendIntoEmptyRQ(t, sim.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for f.Now() < 10*bound {
			f.Pending() // a verb call: the lock is free between two steps of the wait
		}
		cancel()
	}()
	_, err = a.ctx.GetAsyncEvent(ctx)
	if errors.Is(err, sim.ErrWaitBound) || !errors.Is(err, context.Canceled) {
		t.Fatalf("unbounded GetAsyncEvent: %v; want its context's end", err)
	}
}

// TestWaitErrorSaysHowTimeMoves: a wait abandoned while events are pending
// tells how the clock moves only in Manual mode, where nothing but the
// clock controls will move it.
func TestWaitErrorSaysHowTimeMoves(t *testing.T) {
	for _, mode := range []sim.Mode{sim.Auto, sim.Manual, sim.Background} {
		_, a := sendIntoEmptyRQ(t, sim.Config{Mode: mode})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := a.ctx.GetAsyncEvent(ctx)
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "pending:") {
			t.Fatalf("%v: %v; want the context's end, naming what was pending", mode, err)
		}
		hint := strings.Contains(err.Error(), "in Manual mode the clock moves only through Tick")
		if hint != (mode == sim.Manual) {
			t.Errorf("%v: %v; the Manual-mode hint is there: %v", mode, err, hint)
		}
	}
}
