package fuzz

import (
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/conformance/ops"
	"github.com/verbsim/verbsim/conformance/simdev"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
	"pgregory.net/rapid"
)

// profiles are the profiles every input runs under: the built-in ones and
// one with the other reading of the destroy, rounding and RESET→ERR rules.
func profiles() []sim.Profile {
	return append(sim.Profiles(), sim.Profile{Name: "busy-exact-ibta",
		Readings: verbs.Readings{DestroyBusyOnUnacked: true, ExactCQE: true, ResetToErr: true}})
}

// verbError rejects an error that is not a *verr.Error carrying an errno.
func verbError(_ ops.Op, err error) error {
	var ve *verr.Error
	if !errors.As(err, &ve) {
		return fmt.Errorf("error %q (%T) is not a *verr.Error", err, err)
	}
	var n syscall.Errno
	if !errors.As(err, &n) || n == 0 {
		return fmt.Errorf("error %q carries no errno", err)
	}
	return nil
}

// Seeds for FuzzCQOps, in Decode's byte code.
var cqSeeds = []struct {
	name string
	data []byte
}{
	{"overrun", []byte{
		0x00,       // create-channel
		0x11, 0x01, // create-cq cqe=1 channel=0
		0x02,       // arm cq 0 (next)
		0x03, 0x00, // push send
		0x03, 0x02, // push recv: overruns
		0x05, 0x04, // poll 4: EIO in the default reading
		0x03, 0x00, // push again: sticky error or stored
		0x0B,       // get-async: CQ_ERR
		0x0B,       // get-async: the second CQ_ERR, if any
		0x0C, 0x1C, // ack-async both
		0x06,       // get-event
		0x07, 0x02, // ack 1
		0x09, 0x0A, // destroy-cq, destroy-channel
	}},
	{"ex-poll", []byte{
		0x00, 0x11, 0x04, // channel, cq cqe=4 on it
		0x02,       // arm cq 0
		0x03, 0x00, // push send
		0x03, 0x02, // push recv
		0x03, 0x03, // push recv with imm
		0x85, 0x01, // poll 1 through the iterator (CQX-10)
		0x05, 0x01, // poll 1 with ibv_poll_cq
		0x85, 0x04, // the iterator reaches the end: ENOENT
		0x06, 0x07, 0x02, // get-event, ack 1
		0x09, 0x0A, // destroy-cq, destroy-channel
	}},
	{"over-ack", []byte{
		0x00, 0x11, 0x04, // channel, cq cqe=4 on it
		0x02, 0x03, 0x02, // arm, push recv
		0x06,       // get-event
		0x07, 0x03, // ack 2: EINVAL
		0x07, 0x00, // ack -1: EINVAL
		0x07, 0x02, // ack 1
		0x07, 0x02, // ack 1 again: EINVAL
		0x09, // destroy-cq
	}},
	{"resize-below-count", []byte{
		0x01, 0x04, // cq cqe=4, no channel
		0x03, 0x00, 0x03, 0x01, 0x03, 0x02, // three pushes
		0x08, 0x02, // resize 2: EINVAL (CQ-08)
		0x08, 0x00, // resize 0: EINVAL
		0x08, 0x12, // resize max_cqe+1: EINVAL
		0x08, 0x03, // resize 3: ok
		0x05, 0x10, // poll 16: all three in order
		0x08, 0x01, // resize 1: ok now
	}},
	{"destroy-with-unacked-event", []byte{
		0x00, 0x11, 0x02, // channel, cq cqe=2 on it
		0x02, 0x03, 0x00, // arm, push
		0x06,       // get-event, not acked
		0x09,       // destroy-cq: blocks (or EBUSY)
		0x05, 0x04, // poll: EINVAL while destroying
		0x0A,       // destroy-channel: EBUSY
		0x07, 0x02, // ack 1
		0x09, // destroy-cq: finishes
		0x0A, // destroy-channel: ok
		0x09, // destroy-cq again: EINVAL
	}},
	{"unread-event-discarded", []byte{
		0x00, 0x11, 0x02, // channel, cq on it
		0x02, 0x03, 0x00, // arm, push: event queued, not read
		0x09, // destroy-cq: completes, the event is discarded
		0x06, // get-event: EAGAIN
	}},
	{"solicited-arm", []byte{
		0x00, 0x11, 0x08, // channel, cq cqe=8 on it
		0x82,       // arm solicited
		0x03, 0x08, // successful send marked solicited: no event
		0x03, 0x02, // recv without the bit: no event
		0x06,       // get-event: EAGAIN
		0x03, 0x05, // flush error without the bit: fires unless SolicitedBitOnly
		0x03, 0x0A, // solicited recv
		0x06, 0x06, // get-event twice
		0x07, 0x03, // ack 2 (EINVAL if only one was read)
	}},
	{"shared-channel-fifo", []byte{
		0x00,                   // channel
		0x11, 0x04, 0x11, 0x04, // two cqs on it
		0x12, 0x02, // arm cq 1, then cq 0
		0x13, 0x00, 0x03, 0x00, // push cq 1, then cq 0
		0x06, 0x06, // events: cq 1 then cq 0
		0x07, 0x02, 0x17, 0x02, // ack both
		0x12, 0x92, // re-arm cq 1: next then solicited -> stays next
		0x13, 0x00, 0x06, // push, event
	}},
	{"referenced", []byte{
		0x01, 0x01, // cq
		0x0D, // ref
		0x09, // destroy: EBUSY
		0x0E, // unref
		0x09, // destroy
		0x0D, // ref on a destroyed cq: EINVAL
	}},
	{"bad-create", []byte{
		0x01, 0x00, // cqe 0
		0x01, 0x11, // cqe -1
		0x01, 0x12, // cqe max+1
		0x01, 0xC1, // comp vector -1
		0x01, 0xE1, // comp vector 65536
		0x00, 0x0A, 0x11, 0x01, // channel, destroy it, cq on it: EINVAL
	}},
}

// FuzzCQOps runs decoded operation sequences against verbsim and the
// reference model under every profile; see Decode and the package doc.
func FuzzCQOps(f *testing.F) {
	for _, s := range cqSeeds {
		f.Add(s.data)
	}
	f.Fuzz(func(t *testing.T, data []byte) { runOps(t, data, Decode) })
}

// runOps applies the operations data decodes to to verbsim and the
// reference model under every profile, checking after every operation. A
// failure prints the run as a scenario, which verbsim run replays.
func runOps(t *testing.T, data []byte, decode func([]byte, *ops.Machine) iter.Seq[ops.Op]) {
	t.Helper()
	for _, p := range profiles() {
		m, err := ops.NewMachine(simdev.Factory(p))
		if err != nil {
			t.Fatal(err)
		}
		m.CheckError = verbError
		for op := range decode(data, m) {
			err := m.Apply(op)
			if err == nil {
				err = m.Check()
			}
			if err != nil {
				t.Fatalf("profile %s: %v", p.Name, m.Failure(err))
			}
		}
		m.Close()
	}
}

// FuzzStateMachine runs the conformance state machine against verbsim with
// the input as rapid's source of choices.
func FuzzStateMachine(f *testing.F) {
	// The input is rapid's stream of choices, one 64-bit word per draw; a run
	// ends (skipped) when the input runs out. Seed with a few long
	// pseudo-random streams so the corpus runs whole state machines.
	for seed := range uint64(4) {
		r := rand.New(rand.NewPCG(seed, 0x7e4b5))
		data := make([]byte, 8<<10)
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		f.Add(data)
	}
	ps := profiles()
	f.Fuzz(rapid.MakeFuzz(func(t *rapid.T) {
		p := ps[rapid.IntRange(0, len(ps)-1).Draw(t, "profile")]
		ops.StateMachine(t, simdev.Factory(p))
	}))
}
