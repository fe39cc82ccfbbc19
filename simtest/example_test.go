package simtest_test

import (
	"testing"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/simtest"
	"github.com/verbsim/verbsim/verbs"
)

// pingAcrossALossyLink is a new user's test: an RC pair, a targeted fault
// that loses a's first packet, and an event loop on b. a.Await runs the
// ACK timeout, so the retransmission, b's receive and its event all happen
// inside it; no wall time passes. TestRCFaultEventLoop runs it.
func pingAcrossALossyLink(t *testing.T) {
	a, b := simtest.RC(t, simtest.PairOptions{Channel: true, Recvs: 1, Connect: sim.ConnectOptions{Timeout: 5}})
	a.F.InjectPacketFault(sim.PacketFault{Match: sim.FromQP(a.QP), Action: sim.FaultDrop, Count: 1}) // lose a's first packet
	got := make(chan string, 1)
	b.Arm()
	go func() { // b's event loop: wait, ack, re-arm, drain
		cq, _, err := b.Chan.GetEvent(t.Context())
		if err != nil {
			return
		}
		cq.AckEvents(1)
		cq.ReqNotify(false)
		var w [1]verbs.WC
		if n, _ := cq.Poll(w[:]); n == 1 {
			got <- string(b.Received(w[0]))
		}
	}()
	a.Send(1, []byte("ping"))
	if w := a.Await(1)[0]; w.Status != verbs.WCSuccess { // Await runs the ACK timeout: the retry happens inside it
		t.Fatalf("send: %v", w.Status)
	}
	if msg := <-got; msg != "ping" {
		t.Errorf("b received %q", msg)
	}
}

// A test of RDMA code with the rig: the whole file is the example. Its
// function pingAcrossALossyLink is the body of a Test function (this
// package's TestRCFaultEventLoop runs it): an RC pair with a completion
// channel and a posted receive on each end, a fault that loses the first
// packet, an event loop, and a wait in virtual time that runs the
// retransmission.
func ExampleRC() {
	// func TestPing(t *testing.T) { pingAcrossALossyLink(t) }
}

// pingOverTheCM is a test of code that connects by address: the pair is
// made through the connection manager (the client resolved the server's
// address, the server accepted), and the ends then work as any other.
// TestPingOverTheCM runs it.
func pingOverTheCM(t *testing.T) {
	a, b := simtest.RCOverCM(t, simtest.PairOptions{Recvs: 1})
	a.Send(1, []byte("over the CM"))
	a.Await(1)
	w := b.Await(1)[0]
	if got := b.Received(w); string(got) != "over the CM" || a.ID.PeerAddr() != b.ID.LocalAddr() {
		t.Errorf("b received %q; a's peer %v, b's address %v", got, a.ID.PeerAddr(), b.ID.LocalAddr())
	}
}

func TestPingOverTheCM(t *testing.T) { pingOverTheCM(t) }

// A test of code that connects by address, through the connection
// manager: see pingOverTheCM in this file.
func ExampleRCOverCM() {
	// func TestPing(t *testing.T) { pingOverTheCM(t) }
}
