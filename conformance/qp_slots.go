package conformance

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/verbsim/verbsim/verbs"
)

// Slot reclaim under QP-29 reading B (Profile.FreeSlotOnRetire, rxe): a
// request gives back its slot when the device retires it (completes or
// flushes it), before its completion is polled. Under reading A the cases
// expect ENOMEM where these expect room (qpCapacity, qpCapacityExecuted and
// QP-30).

// postRetired posts every one of ids with post, the requests before them
// retired or about to be but none of their completions polled: under
// reading B each finds a slot. A device that retires in the background may
// free a slot a little after the verb that made it retire the request
// returned (FLUSH-13), so what a post refuses with ENOMEM is posted again,
// after wait, until Patience has passed. It reports whether all were
// posted; if not the case has failed.
func postRetired(t *tester, what string, post func(ids []uint64) (int, error), ids []uint64, wait func()) bool {
	t.Helper()
	deadline := time.Now().Add(Patience)
	total := len(ids)
	for len(ids) > 0 {
		n, err := post(ids)
		ids = ids[n:]
		switch {
		case err == nil && len(ids) > 0:
			t.Errorf("%s: a post of %d returned success having posted %d", what, n+len(ids), n)
			return false
		case err == nil:
		case !errors.Is(err, syscall.ENOMEM):
			t.Errorf("%s: %d of %d posted, then %v", what, total-len(ids), total, err)
			return false
		case time.Now().After(deadline):
			t.Errorf("%s: %d of %d posted; the rest still ENOMEM after %v, although the requests before them have completed or been flushed (QP-29 reading B)",
				what, total-len(ids), total, Patience)
			return false
		default:
			wait()
		}
	}
	return true
}

// napper returns a wait for postRetired that sleeps a little longer each
// time (qpNap).
func napper() func() {
	var nap time.Duration
	return func() { nap = qpNap(nap) }
}

// qpCapacityOnRetire is the end of qpCapacity under reading B: q, whose
// depth requests (wr_ids 0..depth-1) were outstanding, has just been moved
// to ERR. The flush retires them, so the queue takes its maximum again
// before any completion is polled, and again, since what is posted in ERR
// is flushed at once (FLUSH-05); then every flush comes, in order.
func qpCapacityOnRetire(t *tester, w *qpWorld, cq verbs.CQ, what string, depth int, post func([]uint64) (int, error)) {
	t.Helper()
	wait := napper()
	if !postRetired(t, what+" of max requests in ERR, no flush completion polled", post, idRange(101, depth), wait) ||
		!postRetired(t, what+" of max requests more in ERR, no flush completion polled", post, idRange(201, depth), wait) {
		return
	}
	want := append(append(idRange(0, depth), idRange(101, depth)...), idRange(201, depth)...)
	w.wantFlushes(what, w.collect(cq, 3*depth, what+": every flush"), want)
	n, err := post(idRange(300, depth))
	w.wantPost(what+" of max requests once everything is polled", n, err, depth, 0)
}

// qpCapacityExecutedOnRetire is qpCapacityExecuted under reading B: the
// depth sends posted on q (wr_ids 0..depth-1) complete with SUCCESS whoever
// receives them (XFER-22, XFER-26), each freeing its slot as it does, so
// twice the maximum more goes in with no completion polled; then every
// completion comes, in order.
func qpCapacityExecutedOnRetire(t *tester, w *qpWorld, cq verbs.CQ, what string, depth int, post func([]uint64) (int, error)) {
	t.Helper()
	wait := napper()
	if !postRetired(t, what+" of max requests more, no completion polled", post, idRange(100, depth), wait) ||
		!postRetired(t, what+" of max requests more again, no completion polled", post, idRange(200, depth), wait) {
		return
	}
	want := append(append(idRange(0, depth), idRange(100, depth)...), idRange(200, depth)...)
	w.wantSuccesses(what, w.collect(cq, 3*depth, what+": every completion"), want)
}

// qp30OnRetire is the QP-30 case under reading B: the depth unsignaled
// WRITEs posted on a complete and give back their slots with nothing
// polled, so an all-unsignaled stream never fills the queue; it produces
// no completion, and a signaled WRITE after it completes alone.
func qp30OnRetire(w *wire, a *end, depth int, write func(id uint64, signaled bool) verbs.SendWR) {
	t := w.t
	t.Helper()
	var nap time.Duration
	wait := func() {
		if !w.advance() {
			nap = qpNap(nap)
		}
	}
	post := func(ids []uint64) (int, error) {
		wrs := make([]verbs.SendWR, len(ids))
		for i, id := range ids {
			wrs[i] = write(id, false)
		}
		return a.q.PostSend(wrs)
	}
	for round := range 3 {
		what := fmt.Sprintf("round %d: %d more unsignaled WRITEs on a queue of %d, nothing polled", round+1, depth, depth)
		if !postRetired(t, what, post, idRange(uint64(100*(round+1)), depth), wait) {
			return
		}
	}
	w.settle()
	if got, _ := pollToEmpty(a.scq); len(got) != 0 {
		t.Fatalf("unsignaled successful WRITEs completed: %s", showWCs(got))
	}
	a.post("a signaled WRITE after the unsignaled stream", write(99, true))
	a.want("the signaled WRITE after four queue-fulls of unsignaled ones", w.await(a.scq, 1, "the signaled WRITE")[0], 99, verbs.WCSuccess)
}
