package sim_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/internal/qp"
	"github.com/verbsim/verbsim/sim/trace"
	"github.com/verbsim/verbsim/verbs"
)

// busyWorkload runs several RC and UD QP pairs with sends, writes, reads
// and atomics under faults and the random schedule, and returns the text
// trace.
func busyWorkload(t *testing.T, seed uint64) string {
	t.Helper()
	log := &trace.Log{}
	f, da, db := twoDevices(t, sim.Config{Seed: seed, Schedule: sim.Random, Trace: log,
		Faults: sim.Faults{Drop: 0.05, Duplicate: 0.05, Delay: 0.05, MaxDelay: 100}})
	var pairs [][2]*end
	for range 3 {
		a, b := newEnd(t, da, verbs.QPTypeRC, 1<<14), newEnd(t, db, verbs.QPTypeRC, 1<<14)
		if err := sim.Connect(a.q, b.q, sim.ConnectOptions{PathMTU: verbs.MTU256, Timeout: 3}); err != nil {
			t.Fatal(err)
		}
		pairs = append(pairs, [2]*end{a, b})
	}
	for round := range 20 {
		for i, p := range pairs {
			a, b := p[0], p[1]
			off := (round % 8) * 1024
			if _, err := b.q.PostRecv([]verbs.RecvWR{{WRID: uint64(round), SGList: []verbs.SGE{b.sge(off, 1024)}}}); err != nil {
				t.Fatal(err)
			}
			wrs := []verbs.SendWR{
				{WRID: uint64(round*10 + 1), Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(off, 700)}},
				{WRID: uint64(round*10 + 2), Opcode: verbs.WRRDMAWrite, SGList: []verbs.SGE{a.sge(off, 500)},
					RemoteAddr: b.mr.Addr() + 9000, RKey: b.mr.RKey()},
				{WRID: uint64(round*10 + 3), Opcode: verbs.WRRDMARead, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(9000+i*64, 64)},
					RemoteAddr: b.mr.Addr() + 9000, RKey: b.mr.RKey()},
			}
			if _, err := a.q.PostSend(wrs); err != nil {
				t.Fatal(err)
			}
		}
		f.Tick(50)
	}
	if !f.RunUntilIdle(1 << 40) {
		t.Fatal("never idle")
	}
	for _, p := range pairs {
		p[0].poll(t, 40)
		p[1].poll(t, 20)
	}
	var buf bytes.Buffer
	if err := f.WriteTrace(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// TestDeterminism: the same seed and the same calls give a byte-identical
// trace (DESIGN.md §2); another seed gives another one.
func TestDeterminism(t *testing.T) {
	for seed := range uint64(30) {
		busyWorkload(t, seed) // every seed completes every WR exactly once
	}
	one, two := busyWorkload(t, 42), busyWorkload(t, 42)
	if one != two {
		t.Fatalf("two runs with seed 42 differ (%d vs %d bytes)", len(one), len(two))
	}
	if len(one) < 10_000 {
		t.Fatalf("the trace is suspiciously short: %d bytes", len(one))
	}
	for _, want := range []string{"fault: drop", "fault: duplicate", "fault: arrives at", "duplicate", "poll_cq", "post_send", "modify_qp"} {
		if !bytes.Contains([]byte(one), []byte(want)) {
			t.Errorf("trace lacks %q", want)
		}
	}
	if other := busyWorkload(t, 43); other == one {
		t.Error("seeds 42 and 43 gave the same trace")
	}
}

// TestManualStep: in Manual mode nothing moves until the caller steps.
func TestManualStep(t *testing.T) {
	f, a, b := rcPair(t, sim.Config{Mode: sim.Manual}, sim.ConnectOptions{})
	b.q.PostRecv([]verbs.RecvWR{{WRID: 1, SGList: []verbs.SGE{b.sge(0, 64)}}})
	a.q.PostSend([]verbs.SendWR{{WRID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(0, 8)}}})
	a.poll(t, 0)
	b.poll(t, 0)
	if ready, _ := f.Pending(); ready != 1 {
		t.Fatalf("ready %d, want 1 (the requester)", ready)
	}
	steps := 0
	for f.Step() {
		steps++
	}
	if steps != 3 { // run the requester, deliver the SEND, deliver the ACK
		t.Errorf("%d steps, want 3", steps)
	}
	a.poll(t, 1)
	b.poll(t, 1)
}

// TestChooser: an injected chooser sees the ready events that may run next
// and picks.
func TestChooser(t *testing.T) {
	var seen []string
	pick := func(ready []sim.ReadyEvent) int {
		seen = append(seen, fmt.Sprint(len(ready)))
		return len(ready) - 1
	}
	f, a, b := rcPair(t, sim.Config{Chooser: pick}, sim.ConnectOptions{})
	b.q.PostRecv([]verbs.RecvWR{{WRID: 1, SGList: []verbs.SGE{b.sge(0, 64)}}, {WRID: 2, SGList: []verbs.SGE{b.sge(64, 64)}}})
	a.q.PostSend([]verbs.SendWR{{WRID: 3, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(0, 8)}},
		{WRID: 4, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(0, 8)}}})
	if len(seen) == 0 {
		t.Fatal("the chooser was never asked")
	}
	// The chooser picks the newest event it is offered, but the second
	// SEND is offered only once the first has arrived: the two travel on
	// one path (XFER-32).
	f.RunUntilIdle(0)
	r := b.poll(t, 2)
	if r[0].WRID != 1 || r[1].WRID != 2 {
		t.Errorf("receives %v", r)
	}
	a.poll(t, 2)
}

// TestBackgroundRNR: in Background mode the RNR timer fires on its own. The
// test runs in a synctest bubble, where the clock the driver follows is
// virtual: the deadline below is exact, whatever the machine's load.
func TestBackgroundRNR(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, a, b := rcPair(t, sim.Config{Mode: sim.Background}, sim.ConnectOptions{MinRNRTimer: 1, RNRRetry: 7})
		a.q.PostSend([]verbs.SendWR{{WRID: 1, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(0, 8)}}})
		time.Sleep(time.Millisecond)
		b.q.PostRecv([]verbs.RecvWR{{WRID: 2, SGList: []verbs.SGE{b.sge(0, 64)}}})
		deadline := time.Now().Add(10 * time.Second)
		var w [1]verbs.WC
		for {
			if n, _ := a.cq.Poll(w[:]); n == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the RNR retry never happened")
			}
			time.Sleep(100 * time.Microsecond)
		}
		if w[0].Status != verbs.WCSuccess {
			t.Errorf("send %v", &w[0])
		}
		if f.Now() < qp.RNRTicks(1) {
			t.Errorf("clock at %d, below the RNR delay", f.Now())
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestBackgroundIdleTimer: a Background fabric left idle (its clock
// goroutine asleep, the clock behind the wall clock) arms a retry timer
// from the wall clock's tick, not from the stale one: a SEND whose packets
// are lost right after an idle second is retried on its ACK timeout, not
// at once. Armed from the stale tick, the timer and each retry fell due as
// soon as the goroutine caught up, and the QP ended in RETRY_EXC_ERR at
// once (the suite's SQ_DRAINED case with losses found it through C). In
// a synctest bubble, as TestBackgroundRNR.
func TestBackgroundIdleTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Timeout 10: 4096 << 10 ns, about 4.2 ms; three retries.
		f, a, _ := rcPair(t, sim.Config{Mode: sim.Background}, sim.ConnectOptions{Timeout: 10, RetryCnt: 3})
		time.Sleep(time.Second) // idle: nothing armed, the clock goroutine asleep
		if err := f.SetFaults(sim.Faults{Drop: 1}); err != nil {
			t.Fatal(err)
		}
		a.q.PostSend([]verbs.SendWR{{WRID: 1, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(0, 8)}}})
		time.Sleep(time.Millisecond)
		synctest.Wait()
		var w [1]verbs.WC
		if n, _ := a.cq.Poll(w[:]); n != 0 || a.q.State() != verbs.QPStateRTS {
			t.Fatalf("1 ms after the SEND: %d completions (%v), state %v; want none before the 4 ms ACK timeout, RTS", n, &w[0], a.q.State())
		}
		time.Sleep(100 * time.Millisecond) // 4 timeouts: the retries are spent
		synctest.Wait()
		if n, _ := a.cq.Poll(w[:]); n != 1 || w[0].Status != verbs.WCRetryExcErr {
			t.Errorf("after the retries: %d completions (%v), want RETRY_EXC_ERR", n, &w[0])
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestLinkFlap: a port going down loses packets and raises PORT_ERR; up
// raises PORT_ACTIVE and RC recovers by retransmission (ASYNC-16).
func TestLinkFlap(t *testing.T) {
	f, a, b := rcPair(t, sim.Config{}, sim.ConnectOptions{Timeout: 5})
	dev := f.Devices()[1]
	if err := dev.SetPortState(1, false); err != nil {
		t.Fatal(err)
	}
	ev, err := b.ctx.TryGetAsyncEvent()
	if err != nil || ev.Type() != verbs.EventPortErr || ev.Port() != 1 {
		t.Fatalf("event %v, %v", ev, err)
	}
	ev.Ack()
	b.q.PostRecv([]verbs.RecvWR{{WRID: 1, SGList: []verbs.SGE{b.sge(0, 64)}}})
	a.q.PostSend([]verbs.SendWR{{WRID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(0, 8)}}})
	a.poll(t, 0)
	dev.SetPortState(1, true)
	if ev, err := b.ctx.TryGetAsyncEvent(); err != nil || ev.Type() != verbs.EventPortActive {
		t.Fatalf("event %v, %v", ev, err)
	} else {
		ev.Ack()
	}
	f.RunUntilIdle(0)
	if w := a.poll(t, 1)[0]; w.Status != verbs.WCSuccess {
		t.Errorf("send %v", &w)
	}
	b.poll(t, 1)
}

// TestForceStatus: a forced status fails the chosen WR and flushes the
// rest.
func TestForceStatus(t *testing.T) {
	f, a, b := rcPair(t, sim.Config{}, sim.ConnectOptions{})
	if err := f.ForceStatus(a.q, 2, false, verbs.WCRemOpErr); err != nil {
		t.Fatal(err)
	}
	b.q.PostRecv([]verbs.RecvWR{{WRID: 1, SGList: []verbs.SGE{b.sge(0, 64)}}, {WRID: 2, SGList: []verbs.SGE{b.sge(64, 64)}}})
	a.q.PostSend([]verbs.SendWR{
		{WRID: 1, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(0, 8)}},
		{WRID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(0, 8)}},
		{WRID: 3, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(0, 8)}},
	})
	ws := a.poll(t, 3)
	if ws[0].Status != verbs.WCSuccess || ws[1].Status != verbs.WCRemOpErr || ws[2].Status != verbs.WCWRFlushErr {
		t.Errorf("statuses %v %v %v", ws[0].Status, ws[1].Status, ws[2].Status)
	}
	if a.q.State() != verbs.QPStateErr {
		t.Errorf("state %v", a.q.State())
	}
}

// TestForcedStatusIsSpentOnce: a forced status is spent by the next
// completion of its WR whatever that is: a flush keeps WR_FLUSH_ERR and uses
// the fault up, and RESET forgets a fault that was never spent. Neither may
// fail a later WR that reuses the wr_id after the QPs are connected again.
func TestForcedStatusIsSpentOnce(t *testing.T) {
	f, a, b := rcPair(t, sim.Config{}, sim.ConnectOptions{})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(f.ForceStatus(a.q, 2, false, verbs.WCGeneralErr)) // spent by a flush
	must(f.ForceStatus(a.q, 5, false, verbs.WCGeneralErr)) // never spent
	must(a.q.Modify(&verbs.QPAttr{QPState: verbs.QPStateErr}, verbs.QPAttrState))
	a.q.PostSend([]verbs.SendWR{{WRID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(0, 8)}}})
	if w := a.poll(t, 1)[0]; w.Status != verbs.WCWRFlushErr {
		t.Fatalf("the WR posted in ERR completed with %v, want WR_FLUSH_ERR", w.Status)
	}
	for _, e := range []*end{a, b} {
		must(e.q.Modify(&verbs.QPAttr{QPState: verbs.QPStateReset}, verbs.QPAttrState))
	}
	must(sim.Connect(a.q, b.q, sim.ConnectOptions{}))
	b.q.PostRecv([]verbs.RecvWR{{WRID: 1, SGList: []verbs.SGE{b.sge(0, 64)}}, {WRID: 2, SGList: []verbs.SGE{b.sge(64, 64)}}})
	a.q.PostSend([]verbs.SendWR{
		{WRID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(0, 8)}},
		{WRID: 5, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(0, 8)}},
	})
	for _, w := range a.poll(t, 2) {
		if w.Status != verbs.WCSuccess {
			t.Errorf("wr_id %d after RESET and reconnect: %v, want SUCCESS", w.WRID, w.Status)
		}
	}
	b.poll(t, 2)
}

// TestPeerDestroyedMidStream: the peer QP vanishes; the requester retries
// and fails with RETRY_EXC_ERR.
func TestPeerDestroyedMidStream(t *testing.T) {
	f, a, b := rcPair(t, sim.Config{}, sim.ConnectOptions{Timeout: 4, RetryCnt: 1})
	if err := b.q.DestroyContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	a.q.PostSend([]verbs.SendWR{{WRID: 1, Opcode: verbs.WRSend, SGList: []verbs.SGE{a.sge(0, 8)}}})
	f.RunUntilIdle(0)
	if w := a.poll(t, 1)[0]; w.Status != verbs.WCRetryExcErr {
		t.Errorf("send %v", &w)
	}
}

// TestManualRNR: in Manual mode the RNR NAK, the wait and the retry each
// happen only when the caller steps and moves the clock (XFER-07, XFER-08).
func TestManualRNR(t *testing.T) {
	f, a, b := rcPair(t, sim.Config{Mode: sim.Manual}, sim.ConnectOptions{MinRNRTimer: 3, RNRRetry: 1})
	a.q.PostSend([]verbs.SendWR{{WRID: 1, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(0, 8)}}})
	f.Stabilize() // send, RNR NAK, back at the requester
	b.q.PostRecv([]verbs.RecvWR{{WRID: 2, SGList: []verbs.SGE{b.sge(0, 64)}}})
	f.Stabilize()
	a.poll(t, 0)
	f.Tick(qp.RNRTicks(3) - 1) // 0.03 ms less one tick: still waiting
	a.poll(t, 0)
	f.Tick(1)
	if w := a.poll(t, 1)[0]; w.Status != verbs.WCSuccess {
		t.Errorf("send %v", &w)
	}
	b.poll(t, 1)
}

// TestSQDrainedOnlyWhenAsked: en_sqd_async_notify belongs to one RTS→SQD
// call; a later RTS→SQD without it raises nothing (ASYNC-13, default).
func TestSQDrainedOnlyWhenAsked(t *testing.T) {
	_, a, _ := rcPair(t, sim.Config{}, sim.ConnectOptions{})
	toSQD := func(ask bool) {
		t.Helper()
		mask := verbs.QPAttrState
		if ask {
			mask |= verbs.QPAttrEnSQDAsyncNotify
		}
		if err := a.q.Modify(&verbs.QPAttr{QPState: verbs.QPStateSQD, EnSQDAsyncNotify: ask}, mask); err != nil {
			t.Fatal(err)
		}
	}
	toSQD(true)
	ev, err := a.ctx.TryGetAsyncEvent()
	if err != nil || ev.Type() != verbs.EventSQDrained {
		t.Fatalf("asked: %v, %v", ev, err)
	}
	ev.Ack()
	if err := a.q.Modify(&verbs.QPAttr{QPState: verbs.QPStateRTS}, verbs.QPAttrState); err != nil {
		t.Fatal(err)
	}
	toSQD(false)
	if ev, err := a.ctx.TryGetAsyncEvent(); err == nil {
		t.Errorf("not asked, yet %v", ev.Type())
	}
}

// TestSQDDrainCoversRNRWait: a SEND waiting for its RNR retry has started,
// so RTS→SQD is still draining (sq_draining, no SQ_DRAINED yet, QP-23)
// until the retry succeeds (QP-39, ASYNC-13).
func TestSQDDrainCoversRNRWait(t *testing.T) {
	f, a, b := rcPair(t, sim.Config{}, sim.ConnectOptions{RNRRetry: 7, MinRNRTimer: 1})
	a.q.PostSend([]verbs.SendWR{{WRID: 1, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(0, 8)}}})
	f.Tick(5_000) // inside the first 10 µs RNR wait
	if err := a.q.Modify(&verbs.QPAttr{QPState: verbs.QPStateSQD, EnSQDAsyncNotify: true}, verbs.QPAttrState|verbs.QPAttrEnSQDAsyncNotify); err != nil {
		t.Fatal(err)
	}
	if attr, _, _ := a.q.Query(verbs.QueryableQPAttrs); !attr.SQDraining {
		t.Error("sq_draining is false while the SEND waits for its RNR retry")
	}
	if ev, err := a.ctx.TryGetAsyncEvent(); err == nil {
		t.Errorf("%v before the SEND completed", ev.Type())
	}
	if err := a.q.Modify(&verbs.QPAttr{QPState: verbs.QPStateRTS}, verbs.QPAttrState); err == nil {
		t.Error("SQD→RTS accepted while draining (QP-23)")
	}
	b.q.PostRecv([]verbs.RecvWR{{WRID: 2, SGList: []verbs.SGE{b.sge(0, 64)}}})
	f.RunUntilIdle(0)
	a.poll(t, 1)
	ev, err := a.ctx.TryGetAsyncEvent()
	if err != nil || ev.Type() != verbs.EventSQDrained {
		t.Fatalf("after the drain: %v, %v", ev, err)
	}
	ev.Ack()
	if attr, _, _ := a.q.Query(verbs.QueryableQPAttrs); attr.SQDraining {
		t.Error("still draining")
	}
}
