package echo_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/verbsim/verbsim/examples/echo"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/simtest"
	"github.com/verbsim/verbsim/verbs"
)

// TestEchoUnreachable is the recipe: the application code (package echo)
// sees only verbs objects; the test makes a fabric with simtest inside a
// testing/synctest bubble (Background mode: timers fire on their own, in
// virtual time, with no wall time spent), aims a packet fault at one QP,
// and checks what the application reports.
func TestEchoUnreachable(t *testing.T) {
	simtest.InBubble(t, simtest.Options{}, func(t *testing.T, f *simtest.Fabric) {
		srv, cli, err := echo.Pair(f.Device(0), f.Device(1), echo.Config{})
		if err != nil {
			t.Fatal(err)
		}
		go srv.Serve(t.Context()) // returns when the test ends
		if got, err := cli.Call(t.Context(), []byte("ping")); err != nil || string(got) != "ping" {
			t.Fatalf("Call = %q, %v; want the echo", got, err)
		}
		q, _ := sim.QPOf(cli.QP) // the handle behind the verbs.QP, for the fault
		f.InjectPacketFault(sim.PacketFault{Match: sim.FromQP(q), Action: sim.FaultDrop})
		start := time.Now()
		_, err = cli.Call(t.Context(), []byte("lost"))
		var ce *echo.CompletionError
		if !errors.As(err, &ce) || ce.WC.Status != verbs.WCRetryExcErr {
			t.Fatalf("Call with every packet dropped: %v; want RETRY_EXC_ERR", err)
		}
		// 1 try + RetryCnt 3 retries, one ACK timeout (code 14) each: the
		// failure comes after exactly four ACK timeouts of virtual time,
		// and the QP counted four (the README's promise).
		if d, want := time.Since(start), 4*time.Duration(verbs.ACKTimeout(14)); d != want {
			t.Errorf("the failure came after %v of virtual time; want exactly %v", d, want)
		}
		if st := q.Stats(); st.ACKTimeouts != 4 || st.RetryExceeded != 1 {
			t.Errorf("the client's QP counted %d ACK timeouts and %d retries exceeded; want 4 and 1", st.ACKTimeouts, st.RetryExceeded)
		}
	})
}

// TestEchoMany sends more messages than there are slots, through the
// event loops of both ends, in the default Auto mode without a bubble.
func TestEchoMany(t *testing.T) {
	f := simtest.New(t)
	srv, cli, err := echo.Pair(f.Device(0), f.Device(1), echo.Config{Slots: 2})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(t.Context()) }()
	for i := range 10 {
		msg := []byte{byte('a' + i)}
		if got, err := cli.Call(t.Context(), msg); err != nil || string(got) != string(msg) {
			t.Fatalf("Call %d = %q, %v", i, got, err)
		}
	}
	t.Cleanup(func() {
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Serve: %v", err)
		}
	})
}
