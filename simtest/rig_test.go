package simtest

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/verbsim/verbsim/internal/leakcheck"
	"github.com/verbsim/verbsim/sim"
)

// fakeTB records what the rig reports instead of failing the real test.
// Fatalf records and returns (it does not end the goroutine), so the rig's
// calls after Fatalf must be harmless; cleanups run when the test calls
// finish.
type fakeTB struct {
	testing.TB // the real test, for anything not overridden
	fatals     []string
	errors     []string
	logs       []string
	cleanups   []func()
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.fatals = append(f.fatals, fmt.Sprintf(format, args...))
}
func (f *fakeTB) Errorf(format string, args ...any) {
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}
func (f *fakeTB) Log(args ...any)   { f.logs = append(f.logs, fmt.Sprint(args...)) }
func (f *fakeTB) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }
func (f *fakeTB) Failed() bool      { return len(f.fatals)+len(f.errors) > 0 }

// finish runs the cleanups, last registered first.
func (f *fakeTB) finish() {
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
	f.cleanups = nil
}

// TestAwaitNeverSatisfied: a wait that can never be satisfied fails with a
// message naming what was awaited, the virtual time spent and what is
// pending, instead of hanging; and the trace is logged at cleanup.
func TestAwaitNeverSatisfied(t *testing.T) {
	for _, c := range []struct {
		name string
		opts Options
		rnr  bool
		want []string
	}{
		// No receive and rnr_retry 7: the RNR timer re-arms for ever.
		{"rnr for ever", Options{Bound: 5_000_000}, true,
			[]string{"awaited 1 completion(s) on a's CQs", "of virtual time", "1 future (timers, delayed packets)", "next due: [t=5010000 a/qp 0x11: RNR wait]", "0 came"}},
		// Nothing posted at all: the fabric is idle.
		{"idle", Options{}, false,
			[]string{"awaited 1 completion(s) on b's CQs", "10s (10000000000 ticks)", "0 ready, 0 future", "the fabric was idle"}},
		{"idle, manual", Options{Mode: sim.Manual, Bound: 1000}, false,
			[]string{"awaited 1 completion(s) on b's CQs", "1µs (1000 ticks)", "the fabric was idle"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tb := &fakeTB{TB: t}
			a, b := RC(tb, PairOptions{Fabric: c.opts, Connect: sim.ConnectOptions{MinRNRTimer: 1}})
			e := b
			if c.rnr {
				a.Send(1, []byte("x"))
				e = a
			}
			if ws := e.Await(1); len(ws) != 0 {
				t.Errorf("Await returned %v", ws)
			}
			if len(tb.fatals) != 1 {
				t.Fatalf("fatals %q", tb.fatals)
			}
			for _, w := range c.want {
				if !strings.Contains(tb.fatals[0], w) {
					t.Errorf("message %q lacks %q", tb.fatals[0], w)
				}
			}
			if spent := a.F.Now(); spent < a.F.Options().Bound {
				t.Errorf("failed after %d ticks, below the bound", spent)
			}
			tb.finish()
			if len(tb.logs) != 1 || !strings.Contains(tb.logs[0], "trace records") || !strings.Contains(tb.logs[0], "virtual time") {
				t.Errorf("logs at cleanup %q", tb.logs)
			}
			if len(tb.errors) != 0 {
				t.Errorf("errors %q", tb.errors)
			}
		})
	}
}

// TestAwaitEventNeverSatisfied: an event wait on an unarmed CQ fails with
// the arm states; one without a channel fails at once.
func TestAwaitEventNeverSatisfied(t *testing.T) {
	tb := &fakeTB{TB: t}
	a, b := RC(tb, PairOptions{Channel: true, Recvs: 1, Fabric: Options{Bound: 1000}})
	a.Send(1, []byte("x")) // completes, but nothing is armed
	if cq := a.AwaitEvent(); cq != nil {
		t.Errorf("event on %v", cq)
	}
	if len(tb.fatals) != 1 || !strings.Contains(tb.fatals[0], "a completion event on a's channel") ||
		!strings.Contains(tb.fatals[0], "arm states: disarmed disarmed") {
		t.Errorf("fatals %q", tb.fatals)
	}
	tb.finish()

	tb = &fakeTB{TB: t}
	a, _ = RC(tb, PairOptions{Fabric: Options{NoTrace: true}})
	a.AwaitEvent()
	if len(tb.fatals) != 1 || !strings.Contains(tb.fatals[0], "needs a completion channel") {
		t.Errorf("fatals %q", tb.fatals)
	}
	tb.finish()
	if len(tb.logs) != 1 || !strings.Contains(tb.logs[0], "no trace") {
		t.Errorf("logs %q", tb.logs)
	}
	_ = b
}

// TestLeakCheck: a goroutine left blocked in GetEvent on a rig channel
// fails the test at cleanup. The goroutine is genuinely blocked, so the
// short grace decides nothing but how long the check waits.
func TestLeakCheck(t *testing.T) {
	defer func(g time.Duration) { leakcheck.Grace = g }(leakcheck.Grace)
	leakcheck.Grace = 20 * time.Millisecond
	tb := &fakeTB{TB: t}
	_, b := RC(tb, PairOptions{Channel: true, Fabric: Options{NoTrace: true}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	blocked := make(chan struct{})
	go func() {
		defer close(done)
		close(blocked)
		b.Chan.GetEvent(ctx)
	}()
	<-blocked
	for !strings.Contains(leakcheck.Leftover(), "GetEvent") {
		runtime.Gosched() // until the goroutine is inside GetEvent
	}
	tb.finish()
	cancel()
	<-done
	if len(tb.errors) != 1 || !strings.Contains(tb.errors[0], "goroutines the test started") || !strings.Contains(tb.errors[0], "GetEvent") {
		t.Errorf("errors %q", tb.errors)
	}

	// Without the goroutine, the check passes.
	tb = &fakeTB{TB: t}
	RC(tb, PairOptions{Channel: true})
	tb.finish()
	if tb.Failed() || len(tb.logs) != 0 {
		t.Errorf("errors %q, logs %q", tb.errors, tb.logs)
	}
}

// TestBadOptions: a configuration the fabric refuses fails the test.
func TestBadOptions(t *testing.T) {
	tb := &fakeTB{TB: t}
	f := New(tb, Options{Faults: sim.Faults{Drop: 2}})
	if len(tb.fatals) != 1 || !strings.Contains(tb.fatals[0], "new fabric") {
		t.Errorf("fatals %q", tb.fatals)
	}
	if f.Fabric != nil {
		t.Error("a fabric was made")
	}
	tb.finish()
}

// TestAwaitNeverSatisfiedBackground: in Background mode inside a bubble an
// unsatisfiable wait fails once the bound has passed on the fabric's clock,
// with no wall time spent.
func TestAwaitNeverSatisfiedBackground(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tb := &fakeTB{TB: t}
		start := time.Now()
		_, b := RC(tb, PairOptions{Fabric: Options{Mode: sim.Background, Bound: 2_000_000}})
		b.Await(1)
		if len(tb.fatals) != 1 || !strings.Contains(tb.fatals[0], "awaited 1 completion(s) on b's CQs") || strings.Contains(tb.fatals[0], "idle") {
			t.Errorf("fatals %q", tb.fatals)
		}
		if d := time.Since(start); d < 2*time.Millisecond || d > 3*time.Millisecond {
			t.Errorf("failed after %v of bubble time, want the 2ms bound", d)
		}
		tb.finish()
	})
}
