package simtest_test

import (
	"testing"
	"time"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/simtest"
	"github.com/verbsim/verbsim/verbs"
)

// retryInBubble is a test body that runs in a testing/synctest bubble:
// a's first packet is lost, and a's event loop (written as for hardware:
// it blocks in GetEvent and moves no clock) sees the SEND complete after
// the retransmission that the ACK timeout triggers on its own, exactly one
// timeout (Timeout 5: 4.096 µs << 5 = 131.072 µs) after the post.
// TestRetryInBubble runs it.
func retryInBubble(t *testing.T) {
	simtest.InBubble(t, simtest.Options{}, func(t *testing.T, f *simtest.Fabric) {
		a, b := f.RC(simtest.PairOptions{Channel: true, Recvs: 1, Connect: sim.ConnectOptions{Timeout: 5}})
		f.InjectPacketFault(sim.PacketFault{Match: sim.FromQP(a.QP), Action: sim.FaultDrop, Count: 1})
		done := make(chan time.Duration, 1)
		a.Arm()
		start := time.Now() // the bubble's clock: the fabric's virtual time
		go func() {         // a's event loop
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
		a.Send(1, []byte("ping"))
		if d := <-done; d != 131072*time.Nanosecond {
			t.Errorf("the SEND completed after %v, want exactly one ACK timeout, 131.072µs", d)
		}
		if w := b.Await(1)[0]; string(b.Received(w)) != "ping" {
			t.Errorf("b received %q", b.Received(w))
		}
	})
}

// The synctest recipe: run the test inside a testing/synctest bubble with
// a Background fabric, which InBubble does. Timers fire on their own, at
// exact virtual instants, so an event loop written for hardware (it blocks
// in GetEvent and never moves the clock) works unchanged, time.Since reads
// exact virtual durations, and no wall time passes. The whole file is the
// example: its function retryInBubble is the body of a Test function
// (TestRetryInBubble runs it), since an Example cannot start a bubble.
func ExampleInBubble() {
	// func TestRetry(t *testing.T) { retryInBubble(t) }
}
