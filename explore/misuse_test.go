package explore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/verbsim/verbsim/explore"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// twoPollers is a world of two goroutines polling: the same CQ (shared)
// or one CQ each.
func twoPollers(shared bool) func(*explore.World) {
	return func(w *explore.World) {
		f := w.Fabric()
		c, _ := f.Devices()[0].Open()
		q1, _ := c.CreateCQ(8, nil, nil, 0)
		q2 := q1
		if !shared {
			q2, _ = c.CreateCQ(8, nil, nil, 0)
		}
		for i, q := range []*sim.CQ{q1, q2} {
			w.Go([]string{"p1", "p2"}[i], func(context.Context) {
				wcs := make([]verbs.WC, 1)
				for range 2 {
					q.Poll(wcs)
				}
			})
		}
	}
}

// TestCheckConcurrentPoll: with Options.Check, two goroutines polling one
// CQ at once is a Misuse naming USE-02, found as it happens, and its token
// replays it; a CQ each is no finding.
func TestCheckConcurrentPoll(t *testing.T) {
	shared := twoPollers(true)
	res := explore.Explore(shared, explore.Options{Check: true, Strategy: explore.Exhaustive, Schedules: 100})
	f := res.Failure
	if f == nil || f.Kind != explore.Misuse || !strings.Contains(f.Message, "USE-02") {
		t.Fatalf("%v: %v", res, f)
	}
	again, err := explore.RunToken(shared, f.Token)
	if err != nil || again == nil || again.Kind != explore.Misuse || again.Message != f.Message {
		t.Errorf("the token replays as %v, %v; want %v", again, err, f)
	}
	if res := explore.Explore(twoPollers(false), explore.Options{Check: true, Strategy: explore.Exhaustive, Schedules: 100}); res.Failure != nil {
		t.Errorf("two CQs: %v", res.Failure)
	}
	if res := explore.Explore(twoPollers(true), explore.Options{Strategy: explore.Exhaustive, Schedules: 100}); res.Failure != nil {
		t.Errorf("without Check: %v", res.Failure)
	}
}

// twoReaders is a world of two goroutines reading one channel, whose one
// CQ gets one event per reader.
func twoReaders(w *explore.World) {
	f := w.Fabric()
	c, _ := f.Devices()[0].Open()
	ch, _ := c.CreateCompChannel()
	q, _ := c.CreateCQ(8, nil, ch, 0)
	for _, name := range []string{"r1", "r2"} {
		w.Go(name, func(ctx context.Context) {
			q.ReqNotify(false)
			if got, _, err := ch.GetEvent(ctx); err == nil {
				got.AckEvents(1)
			}
		})
	}
	w.Go("producer", func(context.Context) {
		for i := range 2 {
			q.ReqNotify(false)
			q.Push(verbs.WC{WRID: uint64(i), Opcode: verbs.WCRecv}, false)
		}
	})
}

// TestCheckTwoReaders: two goroutines blocked at once on a channel of one
// CQ is a Misuse naming CHAN-11.
func TestCheckTwoReaders(t *testing.T) {
	res := explore.Explore(twoReaders, explore.Options{Check: true, Strategy: explore.Exhaustive, Schedules: 500, AllowUnconsumed: true})
	if f := res.Failure; f == nil || f.Kind != explore.Misuse || !strings.Contains(f.Message, "CHAN-11") {
		t.Fatalf("%v: %v", res, f)
	}
}

// manPageWorld is the verbs documentation's example as a world: the CQ is
// created with no channel, a channel is created later that no CQ uses, and
// the consumer waits on it.
func manPageWorld(w *explore.World) {
	c, _ := w.Fabric().Devices()[0].Open()
	q, _ := c.CreateCQ(8, nil, nil, 0)
	ch, _ := c.CreateCompChannel()
	w.Go("consumer", func(ctx context.Context) {
		q.ReqNotify(false)
		if got, _, err := ch.GetEvent(ctx); err == nil {
			got.AckEvents(1)
		}
	})
}

// TestCheckSaysWhyAWorldHangs: without Check the explorer finds the
// deadlock once nothing can move; with it, the wait is a Misuse as it
// starts, naming CHAN-13, the channel and the CQ.
func TestCheckSaysWhyAWorldHangs(t *testing.T) {
	if f := explore.Explore(manPageWorld, explore.Options{}).Failure; f == nil || f.Kind != explore.Deadlock {
		t.Fatalf("without Check: %v", f)
	}
	f := explore.Explore(manPageWorld, explore.Options{Check: true}).Failure
	if f == nil || f.Kind != explore.Misuse {
		t.Fatalf("with Check: %v", f)
	}
	for _, want := range []string{"CHAN-13", "ibv_get_cq_event on a/chan#1", "a/cq#1"} {
		if !strings.Contains(f.Message, want) {
			t.Errorf("the finding does not say %q: %v", want, f)
		}
	}
}
