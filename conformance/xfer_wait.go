package conformance

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/verbsim/verbsim/conformance/model"
	"github.com/verbsim/verbsim/verbs"
)

// Waiting in the transport cases: for completions and async events that
// must come, moving the device's clock when it has one and polling in wall
// time (bounded by Patience) when not; and for what must not come, once
// everything under way has settled.

// advance lets time pass: with a clock it runs until idle (bounded) and
// reports true; without one it reports false and the caller sleeps.
func (w *wire) advance() bool {
	if w.clock == nil {
		return false
	}
	w.clock.RunUntilIdle(idleLimit)
	return true
}

// settle lets whatever is under way finish before a "must not happen"
// check: the clock runs until idle, or Grace passes.
func (w *wire) settle() {
	if !w.advance() {
		time.Sleep(Grace)
	}
}

// pollToEmpty polls cq until it is empty, without letting time pass, and
// returns what it got and the first error.
func pollToEmpty(cq verbs.CQ) ([]verbs.WC, error) {
	var got []verbs.WC
	buf := make([]verbs.WC, 32)
	for range 1 << 12 {
		n, err := cq.Poll(buf)
		got = append(got, buf[:n]...)
		if err != nil || n == 0 {
			return got, err
		}
	}
	return got, nil
}

// pollNow is pollToEmpty with the checks every completion of a transport case
// must pass (checkWC).
func (w *wire) pollNow(cq verbs.CQ) ([]verbs.WC, error) {
	w.t.Helper()
	got, err := pollToEmpty(cq)
	for i := range got {
		w.checkWC(cq, &got[i])
	}
	return got, err
}

// checkWC checks what any completion the transport produces must be: its
// status is none of model.NeverProduced unless the case forced it (WC-S03, S14,
// S15, S17, S18, S22); and, when it succeeded, its opcode is a classic
// one, never a tag-matching or driver opcode, whose IBV_WC_RECV bit is set
// exactly when a receive request completed (WC-06). An error completion's
// opcode is undefined (WC-03) and is not looked at.
func (w *wire) checkWC(cq verbs.CQ, c *verbs.WC) {
	w.t.Helper()
	if c.Status != verbs.WCSuccess {
		if id, never := model.NeverProduced(c.Status); never && !w.forcing {
			w.t.Errorf("wr_id %d of QP %#x completed with %v, which no RC, UC or UD traffic produces (%s)", c.WRID, c.QPNum, c.Status, id)
		}
		return
	}
	if !model.ClassicOpcode(c.Opcode) {
		w.t.Errorf("wr_id %d of QP %#x completed with opcode %v, not a classic opcode: TM and DRIVER opcodes are never produced (WC-06)", c.WRID, c.QPNum, c.Opcode)
		return
	}
	q, known := w.queues[queueKey{cq, c.QPNum}]
	switch {
	case !known || q.send == q.recv:
		// A CQ this case's QPs do not use, or both queues of one QP: the
		// opcode alone tells.
	case q.recv && !c.Opcode.IsRecv():
		w.t.Errorf("wr_id %d completed a receive request of QP %#x with opcode %v: IBV_WC_RECV is not set (WC-06)", c.WRID, c.QPNum, c.Opcode)
	case q.send && c.Opcode.IsRecv():
		w.t.Errorf("wr_id %d completed a send request of QP %#x with opcode %v: IBV_WC_RECV is set (WC-06)", c.WRID, c.QPNum, c.Opcode)
	}
}

// await polls cq until n completions have come, letting time pass in
// between, and checks that no more came. On a device with a clock, an idle
// device that produced fewer fails at once.
func (w *wire) await(cq verbs.CQ, n int, what string) []verbs.WC {
	w.t.Helper()
	got, err := w.pollNow(cq)
	deadline := time.Now().Add(Patience)
	var nap time.Duration
	// With a clock, a device that is idle, or still busy after a few
	// virtual seconds without a completion (an endless RNR loop), will
	// not produce more.
	stalls := 0
	for err == nil && len(got) < n && !time.Now().After(deadline) {
		if w.clock != nil {
			idle := w.clock.RunUntilIdle(idleLimit)
			more, e := w.pollNow(cq)
			got, err = append(got, more...), e
			if len(more) > 0 {
				stalls = 0
			} else if stalls++; idle || stalls >= 4 {
				break
			}
			continue
		}
		nap = min(max(2*nap, 50*time.Microsecond), 10*time.Millisecond)
		time.Sleep(nap)
		var more []verbs.WC
		more, err = w.pollNow(cq)
		got = append(got, more...)
	}
	if err != nil {
		w.t.Fatalf("%s: ibv_poll_cq: %v (after %d completions)", what, err, len(got))
	}
	if len(got) != n {
		w.t.Fatalf("%s: %d completions, want %d: %s", what, len(got), n, showWCs(got))
	}
	return got
}

// quiet checks that cq stays empty once everything under way has settled.
func (w *wire) quiet(cq verbs.CQ, what string) {
	w.t.Helper()
	w.settle()
	if got, err := w.pollNow(cq); len(got) != 0 || err != nil {
		w.t.Errorf("%s: want no completion, got %s (err %v)", what, showWCs(got), err)
	}
}

// showWCs renders completions briefly: wr_id, status and, for successful
// ones, opcode and byte_len.
func showWCs(wcs []verbs.WC) string {
	s := "["
	for i, c := range wcs {
		if i > 0 {
			s += " "
		}
		if c.Status == verbs.WCSuccess {
			s += fmt.Sprintf("{%d %v len=%d qp=%#x}", c.WRID, c.Opcode, c.ByteLen, c.QPNum)
		} else {
			s += fmt.Sprintf("{%d %v qp=%#x}", c.WRID, c.Status, c.QPNum)
		}
	}
	return s + "]"
}

// want checks one completion's wr_id and status, and qp_num against x.
func (x *end) want(what string, c verbs.WC, id uint64, st verbs.WCStatus) bool {
	x.s.w.t.Helper()
	if c.WRID != id || c.Status != st || c.QPNum != x.q.Num() {
		x.s.w.t.Errorf("%s: completion {wr_id %d, %v, qp %#x}, want {wr_id %d, %v, qp %#x}",
			what, c.WRID, c.Status, c.QPNum, id, st, x.q.Num())
		return false
	}
	return true
}

// seenEvent is an async event, read and acked.
type seenEvent struct {
	typ  verbs.EventType
	obj  any
	port uint8
}

// events reads and acks every async event queued on the side's context
// once everything under way has settled.
func (s *side) events() []seenEvent {
	s.w.t.Helper()
	s.w.settle()
	return s.eventsNow()
}

// eventsNow reads and acks the async events queued on the side's context,
// without letting time pass.
func (s *side) eventsNow() []seenEvent {
	s.w.t.Helper()
	var out []seenEvent
	for range 1 << 10 {
		ev, err := s.ctx.TryGetAsyncEvent()
		if errors.Is(err, syscall.EAGAIN) {
			break
		}
		if err != nil {
			s.w.t.Fatalf("side %s: ibv_get_async_event: %v", s.name, err)
		}
		out = append(out, seenEvent{ev.EventType(), named(ev), ev.Port()})
		if err := ev.Ack(); err != nil {
			s.w.t.Errorf("side %s: ibv_ack_async_event: %v", s.name, err)
		}
	}
	return out
}

// allEvents reads and acks the async events of both sides (one context in
// loopback).
func (w *wire) allEvents() []seenEvent {
	w.t.Helper()
	evs := w.a.events()
	if !w.loop {
		evs = append(evs, w.b.events()...)
	}
	return evs
}

// eventsAbout counts the events of evs of type typ that name obj.
func eventsAbout(evs []seenEvent, typ verbs.EventType, obj any) int {
	n := 0
	for _, ev := range evs {
		if ev.typ == typ && ev.obj == obj {
			n++
		}
	}
	return n
}
