package sim_test

import (
	"encoding/binary"
	"testing"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/trace"
	"github.com/verbsim/verbsim/verbs"
)

// TestLostAtomicResponseBehindFourAtomics: with max_rd_atomic 16, five
// FETCH_AND_ADDs and an RDMA WRITE are in flight and the response of the
// first atomic is lost. The ACK of the WRITE passes that atomic, so the
// requester asks for it again, with everything after it (go-back-N). The
// responder must replay the saved result of every atomic it may be asked
// about again (XFER-25): up to max_dest_rd_atomic of them.
//
// Found by internal/soak. A responder that remembers only its last four
// atomics ignores the duplicate of the first, answers the rest, and ACKs
// the WRITE again; that ACK passes the unanswered atomic once more, the
// requester asks again at once, and the two exchange packets at the same
// tick for ever, inside one Stabilize (or one verb in Auto mode), holding
// the fabric's lock so that every other goroutine blocks.
func TestLostAtomicResponseBehindFourAtomics(t *testing.T) {
	f, a, b := rcPair(t, sim.Config{Mode: sim.Manual}, sim.ConnectOptions{RDAtomic: 16})
	const n = 5
	wrs := make([]verbs.SendWR, n, n+1)
	for i := range wrs {
		wrs[i] = verbs.SendWR{WRID: uint64(i), Opcode: verbs.WRAtomicFetchAndAdd, Flags: verbs.SendSignaled,
			SGList: []verbs.SGE{a.sge(8*i, 8)}, RemoteAddr: b.mr.Addr() + 1024, RKey: b.mr.RKey(), CompareAdd: 1}
	}
	wrs = append(wrs, verbs.SendWR{WRID: n, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
		SGList: []verbs.SGE{a.sge(512, 64)}, RemoteAddr: b.mr.Addr() + 2048, RKey: b.mr.RKey()})
	if _, err := a.q.PostSend(wrs); err != nil {
		t.Fatal(err)
	}
	// FIFO: the requester's run puts the five requests on the wire, then
	// they arrive in order. Lose the answer to the first.
	if !f.Step() {
		t.Fatal("no run event")
	}
	must(t, f.SetFaults(sim.Faults{Drop: 1}))
	if !f.Step() {
		t.Fatal("the first atomic did not arrive")
	}
	must(t, f.SetFaults(sim.Faults{}))
	for steps := 0; f.Step(); steps++ {
		if steps == 10_000 {
			t.Fatalf("still %d ready events after %d steps at tick %d: requester and responder loop", pending(f), steps, f.Now())
		}
	}
	f.RunUntilIdle(1 << 30) // ACK timeouts, if it comes to that
	ws := a.poll(t, n+1)
	for i, w := range ws {
		if w.Status != verbs.WCSuccess || w.WRID != uint64(i) {
			t.Errorf("completion %d: %v", i, &w)
		}
		if i == n {
			break
		}
		if got := binary.NativeEndian.Uint64(a.buf[8*i:]); got != uint64(i) {
			t.Errorf("atomic %d returned %d, want %d", i, got, i)
		}
	}
	if got := binary.NativeEndian.Uint64(b.buf[1024:]); got != n {
		t.Errorf("the remote word is %d, want %d: an atomic ran twice or not at all", got, n)
	}
}

func pending(f *sim.Fabric) int { r, _ := f.Pending(); return r }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestLostReadResponsesSpendRetries: every READ response is lost, and a
// SEND behind the READ is acknowledged each time. Each ACK passes the
// unanswered READ (an implied NAK), and the requester asks for it again:
// that must spend retry_cnt like a timeout does, ending in RETRY_EXC_ERR,
// never loop at one tick inside one verb.
func TestLostReadResponsesSpendRetries(t *testing.T) {
	for _, p := range sim.Profiles() {
		t.Run(p.Name, func(t *testing.T) {
			f, a, b := rcPair(t, sim.Config{Mode: sim.Manual, Profile: p}, sim.ConnectOptions{Timeout: 5, RetryCnt: 3})
			if _, err := f.InjectPacketFault(sim.PacketFault{Match: sim.OfKind(trace.PacketReadResp), Action: sim.FaultDrop}); err != nil {
				t.Fatal(err)
			}
			if _, err := b.q.PostRecv([]verbs.RecvWR{{WRID: 9, SGList: []verbs.SGE{b.sge(0, 64)}}}); err != nil {
				t.Fatal(err)
			}
			wrs := []verbs.SendWR{
				{WRID: 1, Opcode: verbs.WRRDMARead, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(0, 8)},
					RemoteAddr: b.mr.Addr() + 1024, RKey: b.mr.RKey()},
				{WRID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(64, 8)}},
			}
			if _, err := a.q.PostSend(wrs); err != nil {
				t.Fatal(err)
			}
			for steps := 0; f.Step(); steps++ {
				if steps == 10_000 {
					t.Fatalf("still %d ready events after %d steps at tick %d: requester and responder loop", pending(f), steps, f.Now())
				}
			}
			f.RunUntilIdle(1 << 40)
			ws := a.poll(t, 2)
			if ws[0].WRID != 1 || ws[0].Status != verbs.WCRetryExcErr {
				t.Errorf("the READ: %v, want RETRY_EXC_ERR", &ws[0])
			}
			if ws[1].WRID != 2 || ws[1].Status != verbs.WCWRFlushErr {
				t.Errorf("the SEND behind it: %v, want WR_FLUSH_ERR", &ws[1])
			}
		})
	}
}

// TestLostReadResponsesUnlimitedRetries: under the rxe reading retry_cnt 7
// retries for ever; the implied NAK then waits for the ACK timer, so time
// passes between tries and no step loops at one tick.
func TestLostReadResponsesUnlimitedRetries(t *testing.T) {
	f, a, b := rcPair(t, sim.Config{Mode: sim.Manual, Profile: sim.RXEProfile()}, sim.ConnectOptions{Timeout: 5, RetryCnt: 7})
	x, err := f.InjectPacketFault(sim.PacketFault{Match: sim.OfKind(trace.PacketReadResp), Action: sim.FaultDrop})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.q.PostRecv([]verbs.RecvWR{{WRID: 9, SGList: []verbs.SGE{b.sge(0, 64)}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.q.PostSend([]verbs.SendWR{
		{WRID: 1, Opcode: verbs.WRRDMARead, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(0, 8)},
			RemoteAddr: b.mr.Addr() + 1024, RKey: b.mr.RKey()},
		{WRID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(64, 8)}},
	}); err != nil {
		t.Fatal(err)
	}
	for steps := 0; f.Step(); steps++ {
		if steps == 10_000 {
			t.Fatalf("still %d ready events after %d steps at tick %d: requester and responder loop", pending(f), steps, f.Now())
		}
	}
	const window = 100 * 4096 << 5 // a hundred ACK timeouts of code 5
	if f.RunUntilIdle(window) {
		t.Error("the fabric went idle: an unlimited retry budget gave up")
	}
	if hits := x.Hits(); hits < 10 {
		t.Errorf("%d READ responses lost in %d ticks: the READ is not asked for again on every timeout", hits, window)
	}
	a.poll(t, 0)
}
