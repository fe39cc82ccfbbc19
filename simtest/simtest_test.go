package simtest_test

import (
	"bytes"
	"errors"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/verbsim/verbsim/internal/leakcheck"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/simtest"
	"github.com/verbsim/verbsim/verbs"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// TestRCFaultEventLoop runs the example's test: an RC pair, a targeted
// fault that drops a's first packet, and an event loop on b.
func TestRCFaultEventLoop(t *testing.T) { pingAcrossALossyLink(t) }

// TestAwaitRunsTheRetry: the wait moves the clock by exactly the ACK
// timeout the retransmission waits for.
func TestAwaitRunsTheRetry(t *testing.T) {
	a, b := simtest.RC(t, simtest.PairOptions{Recvs: 1, Connect: sim.ConnectOptions{Timeout: 5}})
	lost, _ := a.F.InjectPacketFault(sim.PacketFault{Match: sim.FromQP(a.QP), Action: sim.FaultDrop, Count: 1})
	a.Send(1, []byte("ping"))
	if w := a.Await(1)[0]; w.Status != verbs.WCSuccess {
		t.Fatalf("send %v", &w)
	}
	if now := a.F.Now(); now != uint64(verbs.ACKTimeout(5)) || lost.Hits() != 1 {
		t.Errorf("virtual time %d (want one ACK timeout, %d), %d lost", now, uint64(verbs.ACKTimeout(5)), lost.Hits())
	}
	b.Await(1)
}

// TestBubbleEventLoop is the synctest recipe: Background mode inside a
// bubble. a's SEND meets no receive, so b answers RNR NAKs and a retries
// every 10 µs (min_rnr_timer 1); b's application posts its receive after
// 995 µs of its own time; a's event loop sees the completion at exactly 1 ms.
// Zero wall time passes in the sleeps.
func TestBubbleEventLoop(t *testing.T) {
	simtest.InBubble(t, simtest.Options{}, func(t *testing.T, f *simtest.Fabric) {
		a, b := f.RC(simtest.PairOptions{Channel: true, Connect: sim.ConnectOptions{MinRNRTimer: 1}})
		start := time.Now()
		done := make(chan time.Duration, 1)
		a.Arm()
		go func() { // a's event loop
			cq, _, err := a.Chan.GetEvent(t.Context())
			if err != nil {
				return
			}
			cq.AckEvents(1)
			var w [1]verbs.WC
			if n, _ := cq.Poll(w[:]); n == 1 && w[0].Status == verbs.WCSuccess {
				done <- time.Since(start)
			}
		}()
		a.Send(1, []byte("late"))
		time.Sleep(995 * time.Microsecond)
		b.PostRecvSlot(7)
		if d := <-done; d != time.Millisecond {
			t.Errorf("the send completed after %v, want exactly 1ms", d)
		}
		if w := b.Await(1)[0]; string(b.Received(w)) != "late" {
			t.Errorf("b received %q", b.Received(w))
		}
		if now := f.Now(); now != 1_000_000 {
			t.Errorf("virtual clock at %d", now)
		}
	})
}

// TestSynctestByHand is the same recipe without InBubble, as the package
// doc shows it: the fabric made inside synctest.Test, in Background mode.
func TestSynctestByHand(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := simtest.RC(t, simtest.PairOptions{Fabric: simtest.Options{Mode: sim.Background}, Recvs: 1,
			Connect: sim.ConnectOptions{Timeout: 5}})
		a.F.InjectPacketFault(sim.PacketFault{Match: sim.FromQP(a.QP), Action: sim.FaultDrop, Count: 1})
		start := time.Now()
		a.Send(1, []byte("x"))
		a.Await(1)
		b.Await(1)
		// The retransmission came one ACK timeout later; the wait polled
		// in steps, so it saw the completion soon after, never before.
		if d, want := time.Since(start), time.Duration(uint64(verbs.ACKTimeout(5))); d < want || d > 2*want {
			t.Errorf("done after %v, want about %v", d, want)
		}
	})
}

func TestRCWriteRead(t *testing.T) {
	a, b := simtest.RC(t, simtest.PairOptions{SharedCQ: true})
	a.Write(1, []byte("written"), 100)
	if w := a.Await(1)[0]; w.Status != verbs.WCSuccess || w.Opcode != verbs.WCRDMAWrite {
		t.Fatalf("write %v", &w)
	}
	if got := b.Buf[100:107]; string(got) != "written" {
		t.Errorf("b's buffer %q", got)
	}
	copy(b.Buf[200:], "remote")
	a.Read(2, 6, 200)
	if w := a.Await(1)[0]; w.Status != verbs.WCSuccess || w.ByteLen != 6 {
		t.Fatalf("read %v", &w)
	}
	if string(a.Buf[:6]) != "remote" {
		t.Errorf("read %q", a.Buf[:6])
	}
	if ws := b.Poll(); len(ws) != 0 {
		t.Errorf("b has completions %v", ws)
	}
	if a.SendCQ != a.RecvCQ || b.SendCQ != b.RecvCQ {
		t.Error("SharedCQ did not share")
	}
}

func TestUC(t *testing.T) {
	a, b := simtest.UC(t, simtest.PairOptions{Recvs: 2})
	a.Send(1, []byte("one"))
	a.Send(2, []byte("two"))
	ws := b.Await(2)
	if string(b.Received(ws[0]))+string(b.Received(ws[1])) != "onetwo" {
		t.Errorf("received %v", ws)
	}
	if ws := a.PollN(1); len(ws) != 1 || ws[0].WRID != 1 {
		t.Errorf("PollN(1) %v", ws)
	}
	if ws := a.PollN(5); len(ws) != 1 || ws[0].WRID != 2 {
		t.Errorf("PollN(5) %v", ws)
	}
}

func TestUD(t *testing.T) {
	a, b := simtest.UD(t, simtest.PairOptions{Recvs: 1, QKey: 0x42})
	if a.AH == nil || b.AH == nil || a.QKey != 0x42 {
		t.Fatalf("AH %v %v, Q_Key %#x", a.AH, b.AH, a.QKey)
	}
	a.Send(1, []byte("datagram"))
	w := b.Await(1)[0]
	if w.SrcQP != a.QP.Num() || string(b.Received(w)) != "datagram" {
		t.Errorf("received %v %q", &w, b.Received(w))
	}
	b.Send(2, []byte("reply")) // into the receive Recvs posted at a
	if w := b.Await(1)[0]; w.Status != verbs.WCSuccess {
		t.Errorf("reply %v", &w)
	}
	if ws := a.Poll(); len(ws) != 2 || ws[0].WRID != 1 || string(a.Received(ws[1])) != "reply" {
		t.Errorf("a %v", ws)
	}
}

// TestManualMode: the rig's waits step a Manual fabric.
func TestManualMode(t *testing.T) {
	a, b := simtest.RC(t, simtest.PairOptions{Fabric: simtest.Options{Mode: sim.Manual}, Recvs: 1})
	a.Send(1, bytes.Repeat([]byte{'x'}, 100))
	if ws := a.Poll(); len(ws) != 0 {
		t.Fatalf("Manual mode ran the send on its own: %v", ws)
	}
	a.Await(1)
	if w := b.Await(1)[0]; w.ByteLen != 100 {
		t.Errorf("recv %v", &w)
	}
}

// TestAwaitEvent: the rig's own event wait moves the clock through the RNR
// retries that the event depends on.
func TestAwaitEvent(t *testing.T) {
	a, b := simtest.RC(t, simtest.PairOptions{Channel: true, Connect: sim.ConnectOptions{MinRNRTimer: 1}})
	a.Arm()
	a.Send(1, []byte("x"))
	a.F.Tick(25_000) // two RNR retries
	b.PostRecvSlot(9)
	if cq := a.AwaitEvent(); cq != a.SendCQ {
		t.Fatalf("event on %v", cq)
	}
	if now := a.F.Now(); now != 30_000 {
		t.Errorf("clock %d, want the third retry at 30000", now)
	}
	a.Await(1)
}

// TestSend is the package doc's ten-line test.
func TestSend(t *testing.T) {
	a, b := simtest.RC(t, simtest.PairOptions{Recvs: 1})
	a.Send(1, []byte("hello"))
	a.Await(1)         // the SEND's completion
	w := b.Await(1)[0] // the receive's
	if got := b.Received(w); string(got) != "hello" {
		t.Errorf("got %q", got)
	}
}

// TestProfilesAndFaults: the profile is selectable, and under seeded
// fabric-wide drops, duplicates and delays every SEND still completes
// inside Await, which runs the retransmissions.
func TestProfilesAndFaults(t *testing.T) {
	for _, p := range sim.Profiles() {
		t.Run(p.Name, func(t *testing.T) {
			a, b := simtest.RC(t, simtest.PairOptions{
				Fabric:  simtest.Options{Profile: p, Seed: 7, Faults: sim.Faults{Drop: 0.2, Duplicate: 0.1, Delay: 0.1, MaxDelay: 1000}},
				Recvs:   20,
				Connect: sim.ConnectOptions{Timeout: 8},
			})
			if a.F.Profile().Name != p.Name {
				t.Fatalf("profile %q", a.F.Profile().Name)
			}
			for i := range 20 {
				a.Send(uint64(i), []byte{byte(i)})
				if w := a.Await(1)[0]; w.Status != verbs.WCSuccess || w.WRID != uint64(i) {
					t.Fatalf("send %d: %v", i, &w)
				}
				if w := b.Await(1)[0]; b.Received(w)[0] != byte(i) {
					t.Fatalf("receive %d: %v", i, b.Received(w))
				}
			}
			if st := a.F.Stats(); st.Dropped == 0 {
				t.Errorf("no packet dropped: %+v", st)
			}
		})
	}
}

// TestRetryInBubble runs the body of ExampleInBubble.
func TestRetryInBubble(t *testing.T) { retryInBubble(t) }

// forgottenReceive is the trap of an application that never posts its
// receive: a's SEND meets b's empty receive queue, b answers RNR NAKs, and
// with rnr_retry = 7 a retries for ever. The test's goroutine blocks in a
// bare GetEvent on a's channel under t.Context(), which ends only after the
// test: without a bound the wait would step through RNR retries until go
// test's timeout. The rig's Bound ends it (sim.Config.WaitBound): the error
// matches EINTR and sim.ErrWaitBound, and virtual time has passed the bound
// by less than one RNR retry (min_rnr_timer 1: 10 µs).
func forgottenReceive(t *testing.T, f *simtest.Fabric) {
	a, _ := f.RC(simtest.PairOptions{Channel: true, Connect: sim.ConnectOptions{MinRNRTimer: 1, RNRRetry: 7}})
	a.Arm()
	start := f.Now()
	a.Send(1, []byte("nobody receives this"))
	_, _, err := a.Chan.GetEvent(t.Context())
	if !errors.Is(err, syscall.EINTR) || !errors.Is(err, sim.ErrWaitBound) {
		t.Fatalf("GetEvent: %v; want an error matching EINTR and sim.ErrWaitBound", err)
	}
	bound := f.Options().Bound
	const rnrWait = 10_000 // min_rnr_timer 1: 0.01 ms (XFER-08)
	if spent := f.Now() - start; spent <= bound || spent > bound+rnrWait {
		t.Errorf("the wait gave up after %d ticks; want just past the bound, %d", spent, bound)
	}
	if st := a.QP.Stats(); st.RNRNAKsReceived < 2 || st.RNRRetries != st.RNRNAKsReceived-1 {
		t.Errorf("a's counters %+v; want the RNR NAKs and retries the wait stepped through", st)
	}
	t.Logf("GetEvent: %v", err)
}

// TestForgottenReceiveAuto is the trap in Auto mode, where the blocked
// GetEvent moves the clock itself.
func TestForgottenReceiveAuto(t *testing.T) {
	forgottenReceive(t, simtest.New(t, simtest.Options{Bound: 5_000_000}))
}

// TestForgottenReceiveInBubble is the trap in Background mode inside a
// testing/synctest bubble, where the fabric's goroutine moves the clock
// with the bubble's fake time.
func TestForgottenReceiveInBubble(t *testing.T) {
	simtest.InBubble(t, simtest.Options{Bound: 5_000_000}, forgottenReceive)
}

// TestIdleWaitEndsAtTheBoundInBubble: with nothing pending at all, a bare
// GetEvent in a bubble still ends at the bound, at exactly the first tick
// past it (the fabric's goroutine wakes for it), not an hour of fake time
// later.
func TestIdleWaitEndsAtTheBoundInBubble(t *testing.T) {
	simtest.InBubble(t, simtest.Options{Bound: 1_000_000}, func(t *testing.T, f *simtest.Fabric) {
		a, _ := f.RC(simtest.PairOptions{Channel: true})
		a.Arm()
		start := time.Now()
		_, _, err := a.Chan.GetEvent(t.Context())
		if !errors.Is(err, sim.ErrWaitBound) {
			t.Fatalf("GetEvent: %v; want sim.ErrWaitBound", err)
		}
		if d := time.Since(start); d > time.Duration(1_000_001) {
			t.Errorf("the wait gave up after %v of bubble time; want at most the bound, 1ms, and a tick", d)
		}
	})
}
