package explore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/verbsim/verbsim/explore"
	"github.com/verbsim/verbsim/explore/patterns"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// TestFaultDraws: packet-fault draws are choice points. The UD receiver
// that expects every datagram is found by every strategy when the fabric
// may drop packets, and by none when it may not (no faults configured, or
// a fault budget of none); the failure's token replays it exactly, with
// each draw in the timeline, and its shrunk schedule keeps one fault.
func TestFaultDraws(t *testing.T) {
	faulty := patterns.UDExpectsEveryPacket(3, sim.Faults{Drop: 0.1})
	clean := patterns.UDExpectsEveryPacket(3, sim.Faults{})
	for _, o := range []explore.Options{
		{Strategy: explore.Random, Seed: 1},
		{Strategy: explore.PCT, Seed: 1},
		{Strategy: explore.Exhaustive, Preemptions: -1},
	} {
		res := explore.Explore(faulty, o)
		f := res.Failure
		if f == nil || f.Kind != explore.Deadlock {
			t.Fatalf("%v with drops: %v", o.Strategy, res)
		}
		if f.Size.Faults != 1 || f.Unshrunk.Faults < 1 {
			t.Errorf("%v: %d fault(s) drawn, %d once shrunk; want 1 after shrinking", o.Strategy, f.Unshrunk.Faults, f.Size.Faults)
		}
		for _, want := range []string{"fault draw UD SEND", "first last: drop (chosen among", "first last: deliver (chosen among", "(fault: drop)"} {
			if !strings.Contains(f.Timeline, want) {
				t.Errorf("%v: the timeline lacks %q:\n%s", o.Strategy, want, f.Timeline)
			}
		}
		g, err := explore.RunToken(faulty, f.Token)
		if err != nil || g == nil || g.Timeline != f.Timeline || g.Message != f.Message || g.Size != f.Size {
			t.Errorf("%v: replay of %s: %v, %v", o.Strategy, f.Token, g, err)
		}
		t.Logf("%v: %v; shrunk %+v -> %+v", o.Strategy, res, f.Unshrunk, f.Size)

		if res := explore.Explore(clean, o); res.Failure != nil {
			t.Errorf("%v with no faults: %v\n%s", o.Strategy, res, res.Failure.Timeline)
		}
		none := o
		none.MaxFaults = -1
		if res := explore.Explore(faulty, none); res.Failure != nil {
			t.Errorf("%v with MaxFaults -1: %v", o.Strategy, res)
		}
	}
	// With no fault configured (or none allowed) the tree of schedules is
	// the one it was before fault draws were choice points.
	for _, b := range []int{-1, 1} {
		a := explore.Explore(clean, explore.Options{Strategy: explore.Exhaustive, Preemptions: b, Schedules: 100000})
		c := explore.Explore(faulty, explore.Options{Strategy: explore.Exhaustive, Preemptions: b, Schedules: 100000, MaxFaults: -1})
		if !a.Complete || a.Failure != nil || a.Schedules != c.Schedules || a.Steps != c.Steps || c.Failure != nil {
			t.Errorf("bound %d: no faults %v; faults not allowed %v", b, a, c)
		}
		t.Logf("bound %d: %v", b, a)
	}
}

// TestFaultBudget: Exhaustive draws at most MaxFaults faults per schedule
// (1 by default) and enumerates every outcome within it: a datagram that
// may be dropped, duplicated or delayed, to a receiver that takes what
// comes, gives more schedules with a budget of 2 than of 1, all complete.
func TestFaultBudget(t *testing.T) {
	world := func(w *explore.World) {
		f, err := w.NewFabric(sim.Config{Devices: []sim.DeviceConfig{{Name: "a"}, {Name: "b"}},
			Faults: sim.Faults{Drop: 0.5, Duplicate: 0.5, Delay: 0.5, MaxDelay: 5}})
		if err != nil {
			w.Fatalf("%v", err)
		}
		ud := func(d *sim.Device) (*sim.Context, *sim.PD, *sim.QP, *sim.MR) {
			ctx, _ := d.Open()
			pd, _ := ctx.AllocPD()
			cq, _ := ctx.CreateCQ(16, nil, nil, 0)
			mr, _ := pd.RegMR(make([]byte, 256), verbs.AccessLocalWrite)
			q, err := pd.CreateQP(sim.QPInitAttr{SendCQ: cq, RecvCQ: cq, Type: verbs.QPTypeUD,
				Cap: verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
			if err != nil {
				w.Fatalf("%v", err)
			}
			sim.ReadyUD(q, 1)
			return ctx, pd, q, mr
		}
		_, spd, sq, smr := ud(f.Devices()[0])
		rctx, _, rq, rmr := ud(f.Devices()[1])
		for i := range 4 {
			rq.PostRecv([]verbs.RecvWR{{WRID: uint64(i), SGList: []verbs.SGE{{Addr: rmr.Addr() + uint64(64*i), Length: 64, LKey: rmr.LKey()}}}})
		}
		port, _ := rctx.QueryPort(1)
		ah, _ := spd.CreateAH(verbs.AHAttr{DLID: port.LID, PortNum: 1})
		w.Go("sender", func(context.Context) {
			for i := range 2 {
				sq.PostSend([]verbs.SendWR{{WRID: uint64(i), Opcode: verbs.WRSend, SGList: []verbs.SGE{{Addr: smr.Addr(), Length: 8, LKey: smr.LKey()}},
					AH: ah, RemoteQPN: rq.Num(), RemoteQKey: 1}})
			}
		})
	}
	count := func(budget int) explore.Result {
		return explore.Explore(world, explore.Options{Strategy: explore.Exhaustive, Preemptions: -1, MaxFaults: budget, Schedules: 100000, AllowUnconsumed: true})
	}
	none, one, two := count(-1), count(0), count(2)
	t.Logf("no faults: %v; budget 1: %v; budget 2: %v", none, one, two)
	if !none.Complete || !one.Complete || !two.Complete || none.Failure != nil || one.Failure != nil || two.Failure != nil ||
		one.Schedules <= none.Schedules || two.Schedules <= one.Schedules {
		t.Errorf("no faults: %v; budget 1: %v; budget 2: %v", none, one, two)
	}
}
