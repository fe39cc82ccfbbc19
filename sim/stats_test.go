package sim_test

import (
	"testing"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/trace"
	"github.com/verbsim/verbsim/verbs"
)

// statsCase is one traffic pattern on an RC pair and the counters it must
// leave on both QPs and on the fabric. Counters a case does not name must
// stay zero, except the posting counters, which it does not check.
type statsCase struct {
	name    string
	connect sim.ConnectOptions
	run     func(t *testing.T, f *sim.Fabric, a, b *end)
	a, b    sim.QPStats // requester, responder (posting counters ignored)
	fabric  sim.EngineStats
}

func send(t *testing.T, e *end, wrid uint64, n int) {
	t.Helper()
	if _, err := e.q.PostSend([]verbs.SendWR{{WRID: wrid, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{e.sge(0, n)}}}); err != nil {
		t.Fatal(err)
	}
}

func recv(t *testing.T, e *end, wrid uint64) {
	t.Helper()
	if _, err := e.q.PostRecv([]verbs.RecvWR{{WRID: wrid, SGList: []verbs.SGE{e.sge(1<<15, 4096)}}}); err != nil {
		t.Fatal(err)
	}
}

func inject(t *testing.T, f *sim.Fabric, pf sim.PacketFault) *sim.Fault {
	t.Helper()
	x, err := f.InjectPacketFault(pf)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// rnrExhausted: no receive is ever posted; rnr_retry 2 allows two retries,
// the third RNR NAK fails the SEND (XFER-07, XFER-08).
func rnrExhausted(t *testing.T, f *sim.Fabric, a, b *end) {
	send(t, a, 1, 8)
	f.RunUntilIdle(0)
	if w := a.poll(t, 1)[0]; w.Status != verbs.WCRNRRetryExcErr {
		t.Fatalf("send WC %v", &w)
	}
}

// rnrThenReceive: the first attempt meets an empty queue, the retry finds
// the receive posted meanwhile.
func rnrThenReceive(t *testing.T, f *sim.Fabric, a, b *end) {
	send(t, a, 1, 8)
	recv(t, b, 9)
	f.RunUntilIdle(0)
	if w := a.poll(t, 1)[0]; w.Status != verbs.WCSuccess {
		t.Fatalf("send WC %v", &w)
	}
	b.poll(t, 1)
}

// ackTimeoutsExhausted: every packet a sends is lost; retry_cnt 3 gives
// three retransmissions, the fourth ACK timeout fails the SEND (XFER-10).
func ackTimeoutsExhausted(t *testing.T, f *sim.Fabric, a, b *end) {
	inject(t, f, sim.PacketFault{Match: sim.FromQP(a.q), Action: sim.FaultDrop})
	recv(t, b, 9)
	send(t, a, 1, 8)
	f.RunUntilIdle(0)
	if w := a.poll(t, 1)[0]; w.Status != verbs.WCRetryExcErr {
		t.Fatalf("send WC %v", &w)
	}
}

// seqNAK: the first packet of a two-packet SEND is lost; the responder
// NAKs the second (PSN sequence error) and the requester goes back to
// the first.
func seqNAK(t *testing.T, f *sim.Fabric, a, b *end) {
	inject(t, f, sim.PacketFault{Match: sim.FromQP(a.q), Action: sim.FaultDrop, Count: 1})
	recv(t, b, 9)
	send(t, a, 1, 300) // two packets at MTU 256
	f.RunUntilIdle(0)
	if w := a.poll(t, 1)[0]; w.Status != verbs.WCSuccess {
		t.Fatalf("send WC %v", &w)
	}
	b.poll(t, 1)
}

// errorNAK: an RDMA WRITE with a bad rkey gets a remote access error NAK
// (XFER-14).
func errorNAK(t *testing.T, f *sim.Fabric, a, b *end) {
	if _, err := a.q.PostSend([]verbs.SendWR{{WRID: 1, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
		SGList: []verbs.SGE{a.sge(0, 8)}, RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey() + 1}}); err != nil {
		t.Fatal(err)
	}
	if w := a.poll(t, 1)[0]; w.Status != verbs.WCRemAccessErr {
		t.Fatalf("write WC %v", &w)
	}
}

// duplicate: the responder receives a SEND twice, answers the copy and
// does not execute it again (XFER-25).
func duplicate(t *testing.T, f *sim.Fabric, a, b *end) {
	inject(t, f, sim.PacketFault{Match: sim.FromQP(a.q), Action: sim.FaultDuplicate, Count: 1})
	recv(t, b, 9)
	send(t, a, 1, 8)
	f.RunUntilIdle(0)
	a.poll(t, 1)
	b.poll(t, 1)
}

var statsCases = []statsCase{
	{name: "RNR retries exhausted", connect: sim.ConnectOptions{RNRRetry: 2, MinRNRTimer: 1}, run: rnrExhausted,
		a:      sim.QPStats{RNRNAKsReceived: 3, RNRRetries: 2, RNRRetryExceeded: 1},
		b:      sim.QPStats{RNRNAKsSent: 3},
		fabric: sim.EngineStats{RNRNAKs: 3, RNRTimers: 2}},
	{name: "RNR, then the receive", connect: sim.ConnectOptions{RNRRetry: 7, MinRNRTimer: 1}, run: rnrThenReceive,
		a:      sim.QPStats{RNRNAKsReceived: 1, RNRRetries: 1},
		b:      sim.QPStats{RNRNAKsSent: 1},
		fabric: sim.EngineStats{RNRNAKs: 1, RNRTimers: 1}},
	{name: "ACK timeouts exhausted", connect: sim.ConnectOptions{RetryCnt: 3, Timeout: 5}, run: ackTimeoutsExhausted,
		a:      sim.QPStats{ACKTimeouts: 4, RetryExceeded: 1},
		fabric: sim.EngineStats{ACKTimers: 4}},
	{name: "PSN sequence error NAK", connect: sim.ConnectOptions{PathMTU: verbs.MTU256, Timeout: 5}, run: seqNAK,
		a:      sim.QPStats{SeqNAKsReceived: 1},
		b:      sim.QPStats{SeqNAKsSent: 1},
		fabric: sim.EngineStats{SeqNAKs: 1}},
	{name: "remote access error NAK", run: errorNAK,
		a:      sim.QPStats{ErrorNAKsReceived: 1},
		b:      sim.QPStats{ErrorNAKsSent: 1},
		fabric: sim.EngineStats{ErrorNAKs: 1}},
	{name: "duplicate request", run: duplicate,
		b: sim.QPStats{DuplicateRequests: 1}},
}

// transportStats keeps the counters this test checks: the QP's transport
// counters, or the fabric's NAK and timer counters.
func transportStats(s sim.QPStats) sim.QPStats {
	s.SendPosted, s.RecvPosted, s.SendFlushed, s.RecvFlushed, s.CQOverruns = 0, 0, 0, 0, 0
	return s
}

func nakStats(s sim.EngineStats) sim.EngineStats {
	return sim.EngineStats{RNRNAKs: s.RNRNAKs, SeqNAKs: s.SeqNAKs, ErrorNAKs: s.ErrorNAKs, ACKTimers: s.ACKTimers, RNRTimers: s.RNRTimers}
}

// TestTransportCounters checks the RNR, retry and NAK counters of QPStats
// and EngineStats, case by case.
func TestTransportCounters(t *testing.T) {
	for _, c := range statsCases {
		t.Run(c.name, func(t *testing.T) {
			f, a, b := rcPair(t, sim.Config{}, c.connect)
			c.run(t, f, a, b)
			if got := transportStats(a.q.Stats()); got != c.a {
				t.Errorf("requester:\n got %+v\nwant %+v", got, c.a)
			}
			if got := transportStats(b.q.Stats()); got != c.b {
				t.Errorf("responder:\n got %+v\nwant %+v", got, c.b)
			}
			if got := nakStats(f.Stats()); got != c.fabric {
				t.Errorf("fabric:\n got %+v\nwant %+v", got, c.fabric)
			}
		})
	}
}

// TestFaultAimsAtAnRNRNAK: Packet.NAK lets a fault pick out a NAK by kind.
// Dropping the first RNR NAK leaves the requester to its ACK timeout, after
// which its retransmission meets the receive and succeeds.
func TestFaultAimsAtAnRNRNAK(t *testing.T) {
	f, a, b := rcPair(t, sim.Config{}, sim.ConnectOptions{Timeout: 5, MinRNRTimer: 1})
	var kinds []trace.NAKKind // what every acknowledgement says, seen by a fault that hits nothing
	inject(t, f, sim.PacketFault{Match: func(p sim.Packet) bool {
		if p.Kind == trace.PacketAck {
			kinds = append(kinds, p.NAK)
		}
		return false
	}, Action: sim.FaultDrop})
	lost := inject(t, f, sim.PacketFault{Match: func(p sim.Packet) bool { return p.NAK == trace.NAKRNR }, Action: sim.FaultDrop, Count: 1})
	send(t, a, 1, 8)
	recv(t, b, 9)
	f.RunUntilIdle(0)
	if w := a.poll(t, 1)[0]; w.Status != verbs.WCSuccess {
		t.Fatalf("send WC %v", &w)
	}
	if lost.Hits() != 1 {
		t.Errorf("the fault hit %d packets, want the one RNR NAK", lost.Hits())
	}
	if len(kinds) != 2 || kinds[0] != trace.NAKRNR || kinds[1] != trace.NotNAK {
		t.Errorf("the acknowledgements the fault saw: %v; want [RNR_NAK ACK]", kinds)
	}
	if st := a.q.Stats(); st.RNRNAKsReceived != 0 || st.ACKTimeouts != 1 {
		t.Errorf("requester %+v; want no RNR NAK received and one ACK timeout", st)
	}
}
