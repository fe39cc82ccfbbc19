package sim_test

import (
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// TestTickSaturates: the clock stops at sim.MaxTick instead of wrapping.
// Tick(math.MaxUint64) used to wrap the target below the current tick and
// do nothing. At the end of time a retry timer, due after MaxTick, never
// fires, and the calls that move time return instead of spinning.
func TestTickSaturates(t *testing.T) {
	f, a, b := rcPair(t, sim.Config{Mode: sim.Manual}, sim.ConnectOptions{})
	f.Tick(5)
	f.Tick(math.MaxUint64)
	if now := f.Now(); now != sim.MaxTick {
		t.Fatalf("after Tick(5), Tick(MaxUint64): Now() = %d, want MaxTick %d", now, sim.MaxTick)
	}
	f.Tick(1)
	if now := f.Now(); now != sim.MaxTick {
		t.Fatalf("Tick(1) at MaxTick: Now() = %d", now)
	}
	// A send into a QP that no longer exists arms the ACK timer, due after
	// the end of time.
	if err := b.q.Destroy(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.q.PostSend([]verbs.SendWR{{WRID: 1, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(0, 8)}}}); err != nil {
		t.Fatal(err)
	}
	f.Stabilize()
	if _, future := f.Pending(); future == 0 {
		t.Fatal("no timer armed for the unanswered send")
	}
	if f.AdvanceToNext() {
		t.Error("AdvanceToNext found an event before the end of time")
	}
	if f.RunUntilIdle(0) {
		t.Error("RunUntilIdle(0) reports idle with a timer pending")
	}
	if f.RunUntilIdle(10) {
		t.Error("RunUntilIdle(10) reports idle with a timer pending")
	}
	if now := f.Now(); now != sim.MaxTick {
		t.Errorf("Now() = %d after the calls at the end of time", now)
	}
	if n, _ := a.cq.Poll(make([]verbs.WC, 1)); n != 0 {
		t.Error("the send completed although its timer can never fire")
	}
}

// TestBackgroundNowFollowsWallClock: in Background mode Now is the wall
// clock's tick however seldom the clock goroutine looks (it looks only when
// a timer falls due or verbs ask for it). In a synctest bubble the wall
// clock is the bubble's, so the reading is exact.
func TestBackgroundNowFollowsWallClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, err := sim.NewFabric(sim.Config{Mode: sim.Background, Devices: []sim.DeviceConfig{{Name: "a"}}})
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		t0 := f.Now()
		time.Sleep(3 * time.Millisecond)
		if got := f.Now() - t0; got != uint64(3*time.Millisecond) {
			t.Errorf("Now moved %d ticks over 3 ms of wall time, want %d", got, 3*time.Millisecond)
		}
	})
}
