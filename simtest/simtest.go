// Package simtest is a test rig for code that uses verbsim: a fabric bound
// to a testing.TB, connected queue-pair ends made in one call, and waits
// bounded in virtual time, so that a hardware-free unit test of RDMA code
// is about ten lines:
//
//	func TestSend(t *testing.T) {
//		a, b := simtest.RC(t, simtest.PairOptions{Recvs: 1})
//		a.Send(1, []byte("hello"))
//		a.Await(1)         // the SEND's completion
//		w := b.Await(1)[0] // the receive's
//		if got := b.Received(w); string(got) != "hello" {
//			t.Errorf("got %q", got)
//		}
//	}
//
// # The fabric
//
// New makes a sim.Fabric bound to the test: closed by t.Cleanup, with a
// check at cleanup that every goroutine the test's goroutine started has
// ended (say, an event loop blocked in GetEvent: give it t.Context(), which
// ends before cleanup), and (unless Options.NoTrace) a trace whose last
// records are written with t.Log when the test has failed, so that a
// failed test shows what the engine did last. RC, UC and UD make a fabric
// with two adapters, "a" and "b", and one connected End on each;
// Fabric.RC, UC and UD make more pairs on the same fabric.
//
// # Waits in virtual time
//
// End.Await, End.AwaitEvent and Fabric.Until wait for something to happen,
// and their bound is virtual time (Options.Bound, 10 s of simulated time by
// default), never wall time. How they make time pass depends on the mode:
//
//   - Auto (the default) and Manual: the wait runs what is ready (Manual:
//     Step) and, when nothing is, moves the clock to the next timer or
//     delayed packet (Fabric.AdvanceToNext): a retransmission after an ACK
//     timeout or an RNR NAK happens inside the wait. When the fabric has
//     nothing pending at all, the wait yields to the other goroutines of the
//     test (time.Sleep, growing from 1 µs to 10 ms) and lets virtual time
//     pass in steps of Bound/200 (Fabric.Tick), so that a goroutine that is
//     about to post gets its turn; after Bound it fails. Only a wait that
//     fails spends the seconds this adds up to.
//   - Background: the fabric's own goroutine moves the clock; the wait
//     sleeps and polls, and fails once Bound has passed in virtual time,
//     which in this mode is wall time (or, inside a testing/synctest
//     bubble, the bubble's fake time) at one tick per TickDuration: the
//     fabric's goroutine sleeps while nothing is pending, so its clock
//     alone would not show the time passing.
//
// A wait that fails calls t.Fatalf with what it awaited, the virtual time
// it spent, and the fabric's pending events: how many are ready, and the
// next future ones (the armed timers and delayed packets, from
// sim.Fabric.Future, each with its tick and QP). Waits call t.Fatalf, so call them from the test's own
// goroutine.
//
// # Blocking verbs and the bound
//
// In Auto mode posting and polling never move the clock, but a blocking
// verb does: a CompChannel.GetEvent or Context.GetAsyncEvent that nothing
// ready can satisfy moves the clock to the next timer or delayed packet, as
// Fabric.AdvanceToNext does, and repeats until its event comes or nothing
// is pending (docs/time.md). So an event-loop goroutine blocked in GetEvent
// gets the event a retransmission or an RNR retry produces, whether that
// timer runs inside its own wait or inside the test goroutine's End.Await.
//
// The trap is an event that never comes while timers keep firing: a SEND
// into a receive queue the test forgot to fill, with rnr_retry = 7 (retry
// for ever, sim.Connect's default). A GetEvent would step through RNR
// retries until its context ends, and t.Context() ends only after the test
// returns: go test's timeout, ten minutes later. The rig therefore bounds
// the blocking verbs as it bounds its own waits: its fabric's
// sim.Config.WaitBound is Options.Bound, and a blocking verb that time
// could satisfy gives up once that much virtual time has passed since it
// began, with an error matching syscall.EINTR and sim.ErrWaitBound that
// names what it waited for and what was pending (TestForgottenReceiveAuto).
// In Background mode the fabric's goroutine ends such a wait at its bound
// too, even with nothing pending. Give an event loop a context.Context that
// the test cancels (t.Context() ends before Cleanup runs) all the same: a
// wait with nothing pending in Auto mode, which only another goroutine's
// verb can end, is not bounded.
//
// # Exact virtual timings: Background mode inside testing/synctest
//
// For code whose goroutines block in GetEvent and rely on timers firing on
// their own (code written for hardware), run the test inside a
// testing/synctest bubble with Options{Mode: sim.Background}; InBubble does
// both. The fabric's
// goroutine then follows the bubble's fake clock: one tick per nanosecond
// of bubble time, so timers fire at exact virtual instants, time.Now inside
// the bubble reads exact timestamps, and the test takes no wall time
// (TestBubbleEventLoop in this package shows an event loop, a retry timer
// and exact timestamps):
//
//	simtest.InBubble(t, simtest.Options{}, func(t *testing.T, f *simtest.Fabric) {
//		a, b := f.RC(simtest.PairOptions{Channel: true})
//		// start the event loop goroutine on b.Chan; post from a; wait ...
//	})
//
// or, by hand (TestSynctestByHand):
//
//	synctest.Test(t, func(t *testing.T) {
//		a, b := simtest.RC(t, simtest.PairOptions{Fabric: simtest.Options{Mode: sim.Background}})
//		...
//	})
//
// The fabric is closed by the bubble test's own Cleanup, before the bubble
// ends, so synctest's check that no goroutine outlives the bubble holds.
//
// The rig hands out sim's handles (sim.QP, sim.CQ) and speaks the verbs
// vocabulary (verbs.SendWR, verbs.WC). For code written against the
// interfaces of package verbs, Fabric.Device gives a verbs.Device to build
// on and End.Verbs shows a pair's objects through the interfaces;
// examples/echo's test is the recipe.
package simtest

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/verbsim/verbsim/internal/leakcheck"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/trace"
)

// Options configure the fabric New makes. The zero value is a fabric of two
// adapters, "a" and "b", in Auto mode with the default profile, no faults,
// a trace, and waits bounded by 10 s of virtual time.
type Options struct {
	// Profile selects the readings of implementation-defined rules; the
	// zero value is sim.DefaultProfile (sim.RXEProfile is soft-RoCE's).
	Profile sim.Profile
	// Devices are the adapters; empty means two named "a" and "b".
	Devices []sim.DeviceConfig
	// Mode is the fabric's execution mode: sim.Auto (the default),
	// sim.Manual or sim.Background.
	Mode sim.Mode
	// TickDuration is Background mode's wall time per tick (default 1 ns).
	TickDuration time.Duration
	// Seed seeds the fabric's faults and Random schedule.
	Seed uint64
	// Faults are fabric-wide fault probabilities from the start. Targeted
	// faults are armed with Fabric.InjectPacketFault.
	Faults sim.Faults
	// NoTrace turns the trace off. With it on (the default), the last
	// TraceTail records are logged when the test fails.
	NoTrace bool
	// TraceTail is how many of the last trace records a failed test logs;
	// 0 means 40, negative means all of them.
	TraceTail int
	// Bound is how much virtual time (in ticks: nanoseconds of simulated
	// time) a wait may spend before it fails; 0 means 10 s. It bounds the
	// rig's waits (Await, AwaitEvent, Until) and, as the fabric's
	// sim.Config.WaitBound, the blocking verbs too: a CompChannel.GetEvent
	// or Context.GetAsyncEvent that time could satisfy gives up after Bound
	// with an error matching syscall.EINTR and sim.ErrWaitBound.
	Bound uint64
	// NoLeakCheck skips the check at cleanup that the goroutines started
	// by the goroutine that called New have ended. The check waits for
	// them as leakcheck.Wait does: it ends as soon as they are gone, and a
	// goroutine that never ends fails the test after a minute.
	NoLeakCheck bool
}

// defaultBound is Options.Bound's default: 10 s of virtual time, longer than
// any retry sequence with the default attributes (7 retries of a 67 ms ACK
// timeout), short enough to be quick to reach by jumps.
const defaultBound = 10_000_000_000

// idleSteps is how many steps of Bound/idleSteps a wait lets pass while the
// fabric has nothing pending.
const idleSteps = 200

// Fabric is a sim.Fabric bound to a test. Its methods are sim.Fabric's, plus
// the rig's pair makers and waits.
type Fabric struct {
	*sim.Fabric
	t    testing.TB
	opts Options
	log  *trace.Log
	mark string // what the stacks of the goroutines the test started contain
}

// New makes a fabric for the test t with the first of opts (the zero
// Options when none is given). The fabric is closed when the test ends; see
// the package doc for what cleanup checks. A configuration the fabric
// refuses fails the test.
func New(t testing.TB, opts ...Options) *Fabric {
	t.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	if len(o.Devices) == 0 {
		o.Devices = []sim.DeviceConfig{{Name: "a"}, {Name: "b"}}
	}
	if o.Bound == 0 {
		o.Bound = defaultBound
	}
	if o.TraceTail == 0 {
		o.TraceTail = 40
	}
	f := &Fabric{t: t, opts: o}
	if !o.NoTrace {
		f.log = &trace.Log{}
	}
	sf, err := sim.NewFabric(sim.Config{Profile: o.Profile, Devices: o.Devices, Mode: o.Mode,
		TickDuration: o.TickDuration, Seed: o.Seed, Faults: o.Faults, Trace: f.log, WaitBound: o.Bound})
	if err != nil {
		t.Fatalf("simtest: new fabric: %v", err)
	}
	f.Fabric = sf
	f.mark = fmt.Sprintf(" in goroutine %d\n", goid())
	t.Cleanup(f.cleanup)
	return f
}

// T returns the test the fabric is bound to.
func (f *Fabric) T() testing.TB { return f.t }

// Options returns the options the fabric was made with, defaults filled in.
func (f *Fabric) Options() Options { return f.opts }

// goid returns the calling goroutine's number, as its stack names it.
func goid() uint64 {
	var buf [64]byte
	s := string(buf[:runtime.Stack(buf[:], false)])
	var id uint64
	fmt.Sscanf(s, "goroutine %d ", &id)
	return id
}

// cleanup closes the fabric, checks for goroutines left waiting on it and,
// if the test failed, logs the trace's last records.
func (f *Fabric) cleanup() {
	f.t.Helper()
	if err := f.Close(); err != nil {
		f.t.Errorf("simtest: close: %v", err)
	}
	if !f.opts.NoLeakCheck {
		if left := leakcheck.Wait(f.mark); left != "" {
			f.t.Errorf("simtest: goroutines the test started are still running after it, with the fabric closed:\n%s", left)
		}
	}
	if f.t.Failed() {
		f.LogTrace()
	}
}

// LogTrace writes the last TraceTail records of the trace with t.Log (the
// rig does it at cleanup when the test has failed). Without a trace it
// says so.
func (f *Fabric) LogTrace() {
	f.t.Helper()
	if f.log == nil {
		f.t.Log("simtest: no trace (Options.NoTrace)")
		return
	}
	recs := f.log.Records()
	n := len(recs)
	if f.opts.TraceTail > 0 && n > f.opts.TraceTail {
		recs = recs[n-f.opts.TraceTail:]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "simtest: the last %d of %d trace records (virtual time %s):\n", len(recs), n, ticks(f.Now()))
	for _, r := range recs {
		b.WriteString(r.String())
		b.WriteByte('\n')
	}
	f.t.Log(b.String())
}

// ticks renders a tick count as simulated time.
func ticks(n uint64) string {
	if n > 1<<62 {
		return fmt.Sprintf("%d ticks", n)
	}
	return fmt.Sprintf("%v (%d ticks)", time.Duration(n), n)
}
