package simtest

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// Poll returns every completion the end's CQs hold now (the send CQ's
// first), without waiting and without moving the clock. A failed poll fails
// the test.
func (e *End) Poll() []verbs.WC { return e.PollN(-1) }

// PollN returns up to n of the completions the end's CQs hold now (all of
// them when n is negative), the send CQ's first, without waiting.
func (e *End) PollN(n int) []verbs.WC {
	e.F.t.Helper()
	var out []verbs.WC
	for _, c := range e.cqs {
		for c != nil && n != 0 {
			want := len(e.wcs)
			if n > 0 {
				want = min(want, n)
			}
			got, err := c.Poll(e.wcs[:want])
			if err != nil {
				e.F.t.Fatalf("simtest: %s: poll_cq: %v", e.Name, err)
			}
			out = append(out, e.wcs[:got]...)
			if n > 0 {
				n -= got
			}
			if got < want {
				break
			}
		}
	}
	return out
}

// Await returns the next n completions of the end's CQs, waiting for them
// in virtual time (see the package doc): in Auto mode the wait runs the
// timers the completions depend on. When they have not all come within
// Options.Bound of virtual time, the test fails with what came.
func (e *End) Await(n int) []verbs.WC {
	e.F.t.Helper()
	var got []verbs.WC
	e.F.Until(fmt.Sprintf("%d completion(s) on %s's CQs", n, e.Name), func() bool {
		got = append(got, e.PollN(n-len(got))...)
		return len(got) >= n
	}, func() string { return fmt.Sprintf("%d came: %v", len(got), wcList(got)) })
	return got
}

// AwaitEvent waits in virtual time for the next completion event on the
// end's channel, acknowledges it (ibv_ack_cq_events, 1) and returns its
// CQ. The CQ is then disarmed: call End.Arm (or CQ.ReqNotify) before
// waiting for the next event. Without a channel (PairOptions.Channel) the
// test fails.
func (e *End) AwaitEvent() *sim.CQ {
	e.F.t.Helper()
	if e.Chan == nil {
		e.F.t.Fatalf("simtest: %s: AwaitEvent needs a completion channel (PairOptions.Channel)", e.Name)
		return nil
	}
	var cq *sim.CQ
	e.F.Until("a completion event on "+e.Name+"'s channel", func() bool {
		c, _, err := e.Chan.TryGetEvent()
		switch {
		case err == nil:
			cq = c
			return true
		case errors.Is(err, syscall.EAGAIN):
			return false
		}
		e.F.t.Fatalf("simtest: %s: get_cq_event: %v", e.Name, err)
		return true
	}, func() string {
		armed := ""
		for _, c := range e.cqs {
			if c != nil {
				armed += fmt.Sprintf(" %v", c.Armed())
			}
		}
		return "the CQs' arm states:" + armed
	})
	if cq != nil {
		if err := cq.AckEvents(1); err != nil {
			e.F.t.Fatalf("simtest: %s: ack_cq_events: %v", e.Name, err)
		}
	}
	return cq
}

// Until waits until cond reports true, bounded by Options.Bound of virtual
// time, moving the clock as the package doc says for the fabric's mode.
// cond is called from the calling goroutine, first at once. what names
// what is awaited for the failure message; state, if not nil, adds what
// was seen. When the bound passes, Until fails the test with t.Fatalf (and
// returns false if Fatalf returns, as a fake testing.TB's may).
func (f *Fabric) Until(what string, cond func() bool, state func() string) bool {
	f.t.Helper()
	start, wallStart := f.Now(), time.Now()
	bound := f.opts.Bound
	step := max(bound/idleSteps, 1)
	sleep := time.Microsecond
	tickDur := f.opts.TickDuration
	if tickDur <= 0 {
		tickDur = time.Nanosecond
	}
	var spent uint64
	for {
		if cond() {
			return true
		}
		spent = f.Now() - start
		if f.Mode() == sim.Background {
			// The fabric's clock moves only when its goroutine wakes,
			// which an idle fabric puts off; the time it maps to is
			// the wall (or bubble) time passed, one tick per
			// TickDuration.
			spent = max(spent, uint64(time.Since(wallStart)/tickDur))
		}
		if spent >= bound {
			break
		}
		switch f.Mode() {
		case sim.Background:
			// The fabric's goroutine moves the clock; poll, sleeping
			// longer each time up to a two-hundredth of the bound.
			time.Sleep(sleep)
			sleep = min(2*sleep, time.Duration(step)*tickDur)
			continue
		case sim.Manual:
			if f.Step() {
				continue
			}
		}
		if f.AdvanceToNext() {
			continue
		}
		// Nothing is pending: give the test's other goroutines their
		// turn, and let virtual time pass while they take it. The sleep
		// grows to 10 ms, so that an idle wait fails only after a couple
		// of seconds of wall time in all: long enough that no load on
		// the machine keeps a goroutine that would have acted from its
		// turn, and only ever spent on a wait that fails.
		time.Sleep(sleep)
		sleep = min(2*sleep, 10*time.Millisecond)
		f.Tick(min(step, bound-spent))
	}
	ready, future := f.Pending()
	msg := fmt.Sprintf("simtest: awaited %s: not done within %s of virtual time (the fabric's clock from t=%d to t=%d); pending: %d ready, %d future (timers, delayed packets)",
		what, ticks(spent), start, f.Now(), ready, future)
	if fut := f.Future(); len(fut) > 0 {
		msg += "; next due:"
		for i, ev := range fut {
			if i == 5 {
				msg += fmt.Sprintf(" (and %d more)", len(fut)-i)
				break
			}
			msg += " [" + ev.String() + "]"
		}
	}
	if state != nil {
		msg += "; " + state()
	}
	if future == 0 && ready == 0 && f.Mode() != sim.Background {
		msg += "; the fabric was idle: no timer or packet could make it happen, so it needed a verb call (a post, a receive, an arm) that never came"
	}
	f.t.Fatalf("%s", msg)
	return false
}

// wcList renders completions briefly.
func wcList(ws []verbs.WC) string {
	s := "["
	for i := range ws {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("wr_id=%d %v %v", ws[i].WRID, ws[i].Opcode, ws[i].Status)
	}
	return s + "]"
}
