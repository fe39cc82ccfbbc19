package sim_test

import (
	"testing"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/trace"
	"github.com/verbsim/verbsim/verbs"
)

// TestFuture: Future lists the armed timers and delayed packets in the
// order they are due, and nothing once they have run.
func TestFuture(t *testing.T) {
	f, a, b := rcPair(t, sim.Config{}, sim.ConnectOptions{Timeout: 5, MinRNRTimer: 1})
	if ev := f.Future(); ev != nil {
		t.Fatalf("future of an idle fabric: %v", ev)
	}
	if _, err := f.InjectPacketFault(sim.PacketFault{Match: sim.FromQP(b.q), Action: sim.FaultDelay, Delay: 500, Count: 1}); err != nil {
		t.Fatal(err)
	}
	b.q.PostRecv([]verbs.RecvWR{{WRID: 1, SGList: []verbs.SGE{b.sge(0, 64)}}})
	a.q.PostSend([]verbs.SendWR{{WRID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(0, 8)}}})
	ev := f.Future() // b's ACK arrives at a late; a's ACK timeout is armed
	if len(ev) != 2 {
		t.Fatalf("future %v", ev)
	}
	if want := (sim.FutureEvent{At: 500, Kind: sim.EventPacket, Device: "a", QPN: a.q.Num(), Packet: trace.PacketAck, NAK: trace.NotNAK, PSN: 0,
		What: "delayed RC ACK psn=0"}); ev[0] != want {
		t.Errorf("first %+v\nwant  %+v", ev[0], want)
	}
	if want := (sim.FutureEvent{At: uint64(verbs.ACKTimeout(5)), Kind: sim.EventTimer, Device: "a", QPN: a.q.Num(), Timer: trace.TimerACK,
		What: "ACK timeout"}); ev[1] != want {
		t.Errorf("second %+v\nwant   %+v", ev[1], want)
	}
	if s := ev[1].String(); s != "t=131072 a/qp 0x11: ACK timeout" {
		t.Errorf("String %q", s)
	}
	f.RunUntilIdle(0)
	if ev := f.Future(); ev != nil {
		t.Errorf("future after RunUntilIdle: %v", ev)
	}
	var nilFabric *sim.Fabric
	if nilFabric.Future() != nil {
		t.Error("nil fabric")
	}
}

// TestReady: Ready lists what a Manual fabric would run next, oldest first,
// without running it.
func TestReady(t *testing.T) {
	f, a, b := rcPair(t, sim.Config{Mode: sim.Manual}, sim.ConnectOptions{})
	f.Stabilize()
	if ev := f.Ready(); ev != nil {
		t.Fatalf("ready on an idle fabric: %v", ev)
	}
	b.q.PostRecv([]verbs.RecvWR{{WRID: 1, SGList: []verbs.SGE{b.sge(0, 64)}}})
	a.q.PostSend([]verbs.SendWR{{WRID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(0, 8)}}})
	ev := f.Ready()
	if len(ev) != 1 || ev[0].Kind != sim.EventRun || ev[0].Device != "a" || ev[0].QPN != a.q.Num() {
		t.Fatalf("after post_send: %+v", ev)
	}
	if again := f.Ready(); len(again) != 1 {
		t.Fatalf("Ready ran something: %+v", again)
	}
	f.Step() // a's requester puts the SEND on the wire
	ev = f.Ready()
	if len(ev) != 1 || ev[0].Kind != sim.EventPacket || ev[0].Device != "b" || ev[0].QPN != b.q.Num() ||
		ev[0].Packet != trace.PacketSend || ev[0].PSN != 0 {
		t.Fatalf("after one step: %+v", ev)
	}
	f.Stabilize()
	if ev := f.Ready(); ev != nil {
		t.Errorf("after Stabilize: %+v", ev)
	}
	var nilFabric *sim.Fabric
	if nilFabric.Ready() != nil {
		t.Error("nil fabric")
	}
}
