package sim_test

import (
	"errors"
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/trace"
	"github.com/verbsim/verbsim/verbs"
)

func sendOne(t *testing.T, a, b *end, id uint64) {
	t.Helper()
	if _, err := b.q.PostRecv([]verbs.RecvWR{{WRID: id, SGList: []verbs.SGE{b.sge(0, 64)}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.q.PostSend([]verbs.SendWR{{WRID: id, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(0, 8)}}}); err != nil {
		t.Fatal(err)
	}
}

// TestFaultDropsOneAck: the ACK of the first message is lost; the requester
// times out, resends, the responder answers the duplicate without
// delivering it again, and the send succeeds.
func TestFaultDropsOneAck(t *testing.T) {
	f, a, b := rcPair(t, sim.Config{}, sim.ConnectOptions{Timeout: 5, RetryCnt: 3})
	x, err := f.InjectPacketFault(sim.PacketFault{Match: sim.All(sim.FromQP(b.q), sim.OfKind(trace.PacketAck)), Action: sim.FaultDrop, Count: 1})
	if err != nil {
		t.Fatal(err)
	}
	sendOne(t, a, b, 1)
	f.RunUntilIdle(0) // Auto mode runs what is ready; the retry timer needs the clock moved
	if s := a.poll(t, 1)[0]; s.Status != verbs.WCSuccess {
		t.Errorf("send %v", &s)
	}
	b.poll(t, 1) // exactly one receive: the resent request is a duplicate
	if x.Hits() != 1 || !x.Spent() {
		t.Errorf("hits %d, spent %v; want 1, true", x.Hits(), x.Spent())
	}
	if f.Now() < uint64(verbs.ACKTimeout(5)) {
		t.Errorf("clock at %d: the send completed without waiting for its timeout (%d)", f.Now(), uint64(verbs.ACKTimeout(5)))
	}
	if st := f.Stats(); st.Dropped != 1 {
		t.Errorf("dropped %d packets, want 1", st.Dropped)
	}
}

// TestFaultExhaustsRetries: dropping the next retry_cnt+1 packets of a QP
// turns its send into RETRY_EXC_ERR, and the QP goes to ERR.
func TestFaultExhaustsRetries(t *testing.T) {
	f, a, b := rcPair(t, sim.Config{}, sim.ConnectOptions{Timeout: 5, RetryCnt: 2})
	x, err := f.InjectPacketFault(sim.PacketFault{Match: sim.FromQP(a.q), Action: sim.FaultDrop, Count: 3})
	if err != nil {
		t.Fatal(err)
	}
	sendOne(t, a, b, 1)
	f.RunUntilIdle(0)
	if s := a.poll(t, 1)[0]; s.Status != verbs.WCRetryExcErr || s.WRID != 1 {
		t.Errorf("send %v, want RETRY_EXC_ERR", &s)
	}
	if a.q.State() != verbs.QPStateErr {
		t.Errorf("QP in %v, want ERR", a.q.State())
	}
	if x.Hits() != 3 {
		t.Errorf("hits %d, want 3", x.Hits())
	}
}

// TestFaultSkipAimsAtOnePacket: Skip lets matching packets by; the fault
// then hits exactly Count of them, and packets it does not match are never
// counted.
func TestFaultSkipAimsAtOnePacket(t *testing.T) {
	log := &trace.Log{}
	f, a, b := rcPair(t, sim.Config{Trace: log}, sim.ConnectOptions{Timeout: 5, RetryCnt: 3})
	var psns []uint32 // of the SENDs offered to the fault, in order
	x, err := f.InjectPacketFault(sim.PacketFault{
		Match: func(p sim.Packet) bool {
			if p.Kind == trace.PacketSend && p.SrcQPN == a.q.Num() {
				psns = append(psns, p.PSN)
				return true
			}
			return false
		},
		Action: sim.FaultDrop, Skip: 1, Count: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	for id := uint64(1); id <= 3; id++ {
		sendOne(t, a, b, id)
	}
	for _, s := range a.poll(t, 3) {
		if s.Status != verbs.WCSuccess {
			t.Errorf("send %v", &s)
		}
	}
	b.poll(t, 3)
	if x.Hits() != 1 {
		t.Errorf("hits %d, want 1", x.Hits())
	}
	var hit []trace.Record
	for _, r := range log.Records() {
		if r.Fault == 1 && r.Kind == trace.KindPacket {
			hit = append(hit, r)
		}
	}
	// The second SEND offered is the one lost; once spent, the fault sees
	// no more packets (the resent SEND among them).
	if len(psns) != 2 {
		t.Fatalf("the fault was offered the SENDs of PSN %d, want the first two only", psns)
	}
	if len(hit) != 1 || hit[0].Name != "drop" || hit[0].Packet == nil || hit[0].Packet.Kind != trace.PacketSend || hit[0].Packet.PSN != psns[1] {
		t.Errorf("trace records of fault #1: %v, want one drop of the SEND of PSN %d", hit, psns[1])
	}
}

// TestFaultDelay: a delayed packet arrives exactly Delay ticks late.
func TestFaultDelay(t *testing.T) {
	f, a, b := rcPair(t, sim.Config{}, sim.ConnectOptions{})
	const delay = 123_456
	if _, err := f.InjectPacketFault(sim.PacketFault{Match: sim.ToQP(b.q), Action: sim.FaultDelay, Delay: delay, Count: 1}); err != nil {
		t.Fatal(err)
	}
	sendOne(t, a, b, 1)
	f.RunUntilIdle(0)
	if s := a.poll(t, 1)[0]; s.Status != verbs.WCSuccess {
		t.Errorf("send %v", &s)
	}
	b.poll(t, 1)
	if now := f.Now(); now < delay {
		t.Errorf("clock at %d, below the delay %d", now, delay)
	}
	if st := f.Stats(); st.Delayed != 1 || st.Dropped != 0 {
		t.Errorf("stats %+v, want one delayed packet and none dropped", st)
	}
}

// TestFaultDuplicateUD: a duplicated UD datagram fills two receives.
func TestFaultDuplicateUD(t *testing.T) {
	f, a, b, ah := udPair(t, sim.Config{})
	if _, err := f.InjectPacketFault(sim.PacketFault{Match: sim.FromQP(a.q), Action: sim.FaultDuplicate, Count: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.q.PostRecv([]verbs.RecvWR{{WRID: 5, SGList: []verbs.SGE{b.sge(0, 100)}}, {WRID: 6, SGList: []verbs.SGE{b.sge(100, 100)}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.q.PostSend([]verbs.SendWR{{WRID: 1, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(0, 3)},
		AH: ah, RemoteQPN: b.q.Num(), RemoteQKey: 0x1111}}); err != nil {
		t.Fatal(err)
	}
	a.poll(t, 1)
	r := b.poll(t, 2)
	if r[0].WRID != 5 || r[1].WRID != 6 {
		t.Errorf("receives %v", r)
	}
}

// TestFaultRemove: a removed fault hits nothing more.
func TestFaultRemove(t *testing.T) {
	f, a, b := rcPair(t, sim.Config{}, sim.ConnectOptions{Timeout: 5, RetryCnt: 1})
	x, err := f.InjectPacketFault(sim.PacketFault{Match: sim.FromQP(a.q), Action: sim.FaultDrop})
	if err != nil {
		t.Fatal(err)
	}
	x.Remove()
	x.Remove()
	sendOne(t, a, b, 1)
	if s := a.poll(t, 1)[0]; s.Status != verbs.WCSuccess {
		t.Errorf("send %v", &s)
	}
	if x.Hits() != 0 || !x.Spent() {
		t.Errorf("hits %d, spent %v; want 0, true", x.Hits(), x.Spent())
	}
}

// TestFaultBadInput: malformed faults are refused with EINVAL and arm
// nothing.
func TestFaultBadInput(t *testing.T) {
	f, a, b := rcPair(t, sim.Config{}, sim.ConnectOptions{})
	for _, pf := range []sim.PacketFault{
		{},
		{Action: 99},
		{Action: sim.FaultDelay},
		{Action: sim.FaultDrop, Skip: -1},
		{Action: sim.FaultDrop, Count: -1},
	} {
		if x, err := f.InjectPacketFault(pf); !errors.Is(err, syscall.EINVAL) || x != nil {
			t.Errorf("%+v: %v, %v; want EINVAL", pf, x, err)
		}
	}
	var nilFabric *sim.Fabric
	if _, err := nilFabric.InjectPacketFault(sim.PacketFault{Action: sim.FaultDrop}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("nil fabric: %v", err)
	}
	var nilFault *sim.Fault
	nilFault.Remove()
	if nilFault.Hits() != 0 || nilFault.Spent() {
		t.Error("a nil fault should return zero values")
	}
	sendOne(t, a, b, 1) // nothing was armed
	if s := a.poll(t, 1)[0]; s.Status != verbs.WCSuccess {
		t.Errorf("send %v", &s)
	}
}

// TestFaultSeesNAKKind: a fault's Match reads what a NAK says; the RNR NAK
// it drops is in the trace as a drop carrying that NAK kind and the
// fault's number, and the requester, hearing nothing, times out and asks
// again.
func TestFaultSeesNAKKind(t *testing.T) {
	log := &trace.Log{}
	f, a, _ := rcPair(t, sim.Config{Trace: log}, sim.ConnectOptions{Timeout: 5, RetryCnt: 3, RNRRetry: 7, MinRNRTimer: 1})
	var naks []trace.NAKKind
	x, err := f.InjectPacketFault(sim.PacketFault{
		Match: func(p sim.Packet) bool {
			if p.Kind == trace.PacketAck {
				naks = append(naks, p.NAK)
			}
			return p.NAK == trace.NAKRNR
		},
		Action: sim.FaultDrop, Count: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.q.PostSend([]verbs.SendWR{{WRID: 1, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(0, 8)}}}); err != nil {
		t.Fatal(err)
	}
	if x.Hits() != 1 || len(naks) != 1 || naks[0] != trace.NAKRNR {
		t.Fatalf("hits %d, NAK kinds offered %v; want one RNR NAK, dropped", x.Hits(), naks)
	}
	var drops int
	for _, r := range log.Records() {
		if r.Kind == trace.KindPacket && r.Name == "drop" && r.NAK() == trace.NAKRNR && r.Fault == 1 {
			drops++
		}
	}
	if drops != 1 {
		t.Errorf("%d drop records of fault #1 with an RNR NAK, want 1", drops)
	}
	if fut := f.Future(); len(fut) != 1 || fut[0].Timer != trace.TimerACK {
		t.Fatalf("future %v: want the ACK timeout only (the RNR NAK never arrived)", fut)
	}
	f.AdvanceToNext() // the timeout: a sends again, b answers RNR again, and that one arrives
	if fut := f.Future(); len(fut) != 1 || fut[0].Timer != trace.TimerRNR {
		t.Errorf("future %v: want the RNR wait", fut)
	}
}
