package conformance

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/verbsim/verbsim/verbs"
)

// Cases where CQs meet real QPs: several QPs feeding one CQ (CQ-07, and
// NOTIFY-18 with QPs instead of injected completions), sizing a CQ for the
// flushes of full queues (CQ-25), and the completions of a QP that is reset
// or destroyed (CQ-26). The only completions a QP produces without traffic
// are flush completions, so every case makes them by moving QPs to ERR.
//
// Send requests are posted only in SQD, where they are accepted and wait
// (QP-26) and from which the cases only ever go on to ERR, and connected
// QPs aim at noQPN, a number no QP has: nothing posted here can
// start executing once the transport exists (issue #4).
//
// Left for the transport: the part of CQ-07 that tells sends from receives
// by the opcode, which only successful completions carry (FLUSH-06).

// silentStep moves q from one state to another with the minimal mask, like
// step, with dest_qp_num noQPN.
func (w *qpWorld) silentStep(q verbs.QP, from, to verbs.QPState) {
	w.t.Helper()
	w.stepWith(q, from, to, func(a *verbs.QPAttr) { a.DestQPNum = noQPN })
}

// drainedToSQD takes q from RESET through RTS to SQD, where it accepts sends
// and keeps them waiting (QP-39). On a device that raises SQ_DRAINED unasked
// the event is taken on the way (sqDrained), so the CQ_ERR CQ-25 waits for
// is the next event.
func (w *qpWorld) drainedToSQD(q verbs.QP) {
	w.t.Helper()
	cur := verbs.QPStateReset
	for _, next := range []verbs.QPState{verbs.QPStateInit, verbs.QPStateRTR, verbs.QPStateRTS, verbs.QPStateSQD} {
		w.silentStep(q, cur, next)
		cur = next
	}
}

// flushedQueue is what one queue of one QP was given: a name for messages, the
// QP's number and the wr_ids posted, in order.
type flushedQueue struct {
	name string
	qpn  uint32
	ids  []uint64
}

// countFlushed returns the requests posted to the queues.
func countFlushed(qs []flushedQueue) int {
	n := 0
	for _, q := range qs {
		n += len(q.ids)
	}
	return n
}

// checkFlushed checks that wcs are the flush completions of exactly the requests
// of queues: each carries the number of the QP it was posted to (CQ-07,
// FLUSH-06), and each queue's come in posting order (FLUSH-02), whatever
// the interleaving of queues.
func (w *qpWorld) checkFlushed(what string, wcs []verbs.WC, queues []flushedQueue) {
	w.t.Helper()
	owner := map[uint64]int{}
	for i, q := range queues {
		for _, id := range q.ids {
			owner[id] = i
		}
	}
	got := make([][]uint64, len(queues))
	bad := 0 // field errors reported; the first few tell the story
	report := func(format string, args ...any) {
		w.t.Helper()
		if bad++; bad <= 4 {
			w.t.Errorf(format, args...)
		}
	}
	for _, c := range wcs {
		i, ok := owner[c.WRID]
		if !ok {
			report("%s: a completion with wr_id %d, which no queue feeding the CQ was given", what, c.WRID)
			continue
		}
		if c.QPNum != queues[i].qpn {
			report("%s: wr_id %d of the %s carries qp_num %#x, want %#x", what, c.WRID, queues[i].name, c.QPNum, queues[i].qpn)
		}
		if c.Status != verbs.WCWRFlushErr {
			report("%s: wr_id %d of the %s has status %v, want WR_FLUSH_ERR", what, c.WRID, queues[i].name, c.Status)
		}
		got[i] = append(got[i], c.WRID)
	}
	if bad > 4 {
		w.t.Errorf("%s: %d more such completions", what, bad-4)
	}
	for i, q := range queues {
		if !slices.Equal(got[i], q.ids) {
			w.t.Errorf("%s: the %s flushed %v, want %v in posting order", what, q.name, got[i], q.ids)
		}
	}
}

// feed creates a QP of type typ on the two CQs, takes it to SQD and fills
// it with sends (one unsignaled) and receives; it returns the QP and its
// two queues.
func (w *qpWorld) feed(typ verbs.QPType, send, recv verbs.CQ, base uint64, sends, recvs int) (verbs.QP, flushedQueue, flushedQueue) {
	w.t.Helper()
	q := w.createWith(verbs.QPInitAttr{Type: typ, Cap: w.qpCap(), SendCQ: send, RecvCQ: recv})
	w.drainedToSQD(q)
	sq := flushedQueue{fmt.Sprintf("send queue of %v QP %#x", typ, q.Num()), q.Num(), idRange(base, sends)}
	rq := flushedQueue{fmt.Sprintf("receive queue of %v QP %#x", typ, q.Num()), q.Num(), idRange(base+500, recvs)}
	wrs := w.sendIDs(q, sq.ids...)
	if len(wrs) > 1 {
		wrs[1].Flags &^= verbs.SendSignaled // flushed all the same (FLUSH-04)
	}
	w.postSend("sends in SQD", q, wrs)
	w.postRecv("receives", q, w.recvIDs(rq.ids...))
	return q, sq, rq
}

// sizing is one round of CQ-25: a CQ and QPs whose queues add up to its
// real capacity, plus extra; all queues are filled and the QPs moved to
// ERR. With extra 0 every flush completion must be stored and no CQ_ERR
// raised; with extra 1 the CQ must overrun, keeping cqe of them.
func (w *qpWorld) sizing(rng *rand.Rand, round, extra int) {
	t, e := w.t, w.e
	t.Helper()
	cq := e.CQ(2+rng.IntN(30), nil, nil)
	var qs []verbs.QP
	var queues []flushedQueue
	total := 0
	add := func(typ verbs.QPType, sendWR, recvWR int) {
		c := w.qpCap()
		c.MaxSendWR, c.MaxRecvWR = uint32(sendWR), uint32(recvWR)
		q := w.createWith(verbs.QPInitAttr{Type: typ, Cap: c, SendCQ: cq, RecvCQ: cq})
		real := w.query(q).Cap
		total += int(real.MaxSendWR + real.MaxRecvWR)
		qs = append(qs, q)
	}
	for range 1 + rng.IntN(3) {
		left := cq.CQE() + extra - total
		if left <= 0 {
			break
		}
		s := rng.IntN(min(left, 8) + 1)
		add(qpTypes[rng.IntN(3)], s, rng.IntN(min(left-s, 8)+1))
	}
	// Queues may be deeper than asked (QP-02) and a CQ bigger (CQ-02, CQ-09):
	// add a receive-only QP for what is missing, or resize the CQ to what the
	// queues hold, until they match.
	for i := 0; total != cq.CQE()+extra; i++ {
		if i == 8 {
			t.Fatalf("round %d: cannot make queues of %d requests in all fit a CQ of cqe %d plus %d", round, total, cq.CQE(), extra)
		}
		if left := cq.CQE() + extra - total; left > 0 {
			add(verbs.QPTypeUD, 0, min(left, w.lim.MaxQPWR))
		} else {
			e.WantOK(fmt.Sprintf("ibv_resize_cq(%d)", total-extra), cq.Resize(total-extra))
		}
	}
	cqe := cq.CQE()
	for k, q := range qs {
		real := w.query(q).Cap
		w.drainedToSQD(q)
		base := uint64(100000 * (k + 1))
		sq := flushedQueue{fmt.Sprintf("send queue of QP %d", k), q.Num(), idRange(base, int(real.MaxSendWR))}
		rq := flushedQueue{fmt.Sprintf("receive queue of QP %d", k), q.Num(), idRange(base+50000, int(real.MaxRecvWR))}
		wrs := w.sendIDs(q, sq.ids...)
		for i := range wrs {
			wrs[i].Flags &^= verbs.SendSignaled // flushes come all the same (FLUSH-04)
		}
		w.postSend("a full send queue, unsignaled", q, wrs)
		w.postRecv("a full receive queue", q, w.recvIDs(rq.ids...))
		queues = append(queues, sq, rq)
	}
	for _, q := range qs {
		w.step(q, verbs.QPStateSQD, verbs.QPStateErr)
	}
	what := fmt.Sprintf("round %d: %d QPs with %d requests queued in all, flushed into a CQ of cqe %d", round, len(qs), total, cqe)
	if extra == 0 {
		w.checkFlushed(what, w.collect(cq, total, what), queues)
		w.flushNoAsync(what)
		return
	}
	ev := cqWaitAsync(t, e, what)
	if ev.EventType() != verbs.EventCQErr || ev.CQ() != cq {
		t.Errorf("%s: async event %v naming %v, want CQ_ERR naming the CQ (CQ-22)", what, ev.EventType(), named(ev))
	}
	e.WantOK("ibv_ack_async_event", ev.Ack())
	if got := cqDrainOverrun(t, e, cq, what); len(got) != cqe {
		t.Errorf("%s: %d completions polled, want the %d the CQ holds (CQ-22)", what, len(got), cqe)
	}
}

// pollUntil polls cq, for up to Patience, until the completions polled
// include every wr_id of need, then until it is empty, and returns them all.
func (w *qpWorld) pollUntil(cq verbs.CQ, need []uint64, what string) []verbs.WC {
	w.t.Helper()
	var got []verbs.WC
	buf := make([]verbs.WC, 16)
	deadline := time.Now().Add(Patience)
	var nap time.Duration
	for {
		n, err := cq.Poll(buf)
		if err != nil {
			w.t.Fatalf("%s: ibv_poll_cq: %v", what, err)
		}
		got = append(got, buf[:n]...)
		if n > 0 {
			continue
		}
		ids := wrIDs(got)
		missing := slices.ContainsFunc(need, func(id uint64) bool { return !slices.Contains(ids, id) })
		if !missing {
			return got
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("%s: within %v the CQ gave %v, without all of %v", what, Patience, ids, need)
		}
		nap = qpNap(nap)
	}
}

// allOrNone checks the completions of a QP that was reset or destroyed
// after they were produced: all of them, in order per queue and intact, or
// none (CQ-26).
func (w *qpWorld) allOrNone(what string, got []verbs.WC, queues []flushedQueue) {
	w.t.Helper()
	var mine []verbs.WC
	for _, c := range got {
		for _, q := range queues {
			if slices.Contains(q.ids, c.WRID) || c.QPNum == q.qpn {
				mine = append(mine, c)
				break
			}
		}
	}
	if len(mine) == 0 {
		return
	}
	if len(mine) != countFlushed(queues) {
		w.t.Errorf("%s: %d of the QP's %d completions are left (wr_ids %v); either all stay or none",
			what, len(mine), countFlushed(queues), wrIDs(mine))
	}
	w.checkFlushed(what+", its completions left in the CQ", mine, queues)
}

// qpCqCases are the cases of the CQ, NOTIFY families in qp_cq.go.
var qpCqCases = []Case{
	{"CQ-07", "one CQ takes completions of several QPs and both sides; each names its QP", sharedCQ},
	{"NOTIFY-18", "flushes of several QPs into one armed CQ raise one event", flushesRaiseOneEvent},
	{"CQ-25", "a CQ as deep as the queues feeding it takes all their flushes; one entry less overruns", cqDeepAsQueues},
	{"CQ-26", "completions of a QP reset or destroyed afterwards: all still there or none", completionsOutliveQP},
}

func sharedCQ(t *tester, e *env) {
	w := qpSetup(t, e)
	shared, own := e.CQ(256, nil, nil), e.CQ(64, nil, nil)
	feeds := []struct {
		typ        verbs.QPType
		send, recv verbs.CQ
	}{
		{verbs.QPTypeRC, shared, shared}, {verbs.QPTypeUC, shared, shared}, {verbs.QPTypeUD, shared, shared},
		{verbs.QPTypeRC, shared, shared}, {verbs.QPTypeUD, shared, own}, {verbs.QPTypeRC, own, shared},
	}
	var qs []verbs.QP
	var onShared, onOwn []flushedQueue
	nums := map[uint32]bool{}
	for k, f := range feeds {
		q, sq, rq := w.feed(f.typ, f.send, f.recv, uint64(1000*(k+1)), 3, 4)
		if nums[q.Num()] {
			t.Fatalf("two live QPs have qp_num %#x; completions could not tell them apart", q.Num())
		}
		nums[q.Num()] = true
		qs = append(qs, q)
		for _, p := range []struct {
			c  verbs.CQ
			qu flushedQueue
		}{{f.send, sq}, {f.recv, rq}} {
			if p.c == shared {
				onShared = append(onShared, p.qu)
			} else {
				onOwn = append(onOwn, p.qu)
			}
		}
	}
	for _, k := range []int{3, 0, 5, 2, 4, 1} { // not in creation order
		w.step(qs[k], verbs.QPStateSQD, verbs.QPStateErr)
	}
	what := fmt.Sprintf("%d queues of %d QPs of three transports flushed into one CQ", len(onShared), len(qs))
	w.checkFlushed(what, w.collect(shared, countFlushed(onShared), what), onShared)
	w.checkFlushed("the other CQ", w.collect(own, countFlushed(onOwn), "the other CQ"), onOwn)
}

func flushesRaiseOneEvent(t *tester, e *env) {
	w := qpSetup(t, e)
	ch := e.Channel()
	tag := &notifyTag{"NOTIFY-18 with QPs"}
	cq := e.CQ(64, tag, ch)
	for _, together := range []bool{false, true} {
		var qs []verbs.QP
		for i, typ := range []verbs.QPType{verbs.QPTypeRC, verbs.QPTypeUC, verbs.QPTypeUD, verbs.QPTypeRC} {
			q := w.createWith(verbs.QPInitAttr{Type: typ, Cap: w.qpCap(), SendCQ: cq, RecvCQ: cq})
			w.silentStep(q, verbs.QPStateReset, verbs.QPStateInit)
			w.postRecv("receives", q, w.recvIDs(uint64(10*i+1), uint64(10*i+2)))
			qs = append(qs, q)
		}
		e.WantOK("ibv_req_notify_cq", cq.ReqNotify(false))
		what := "four QPs flushed one after another after one arm"
		if together {
			what = "four QPs flushed at once after one arm"
			errs := make([]error, len(qs))
			var wg sync.WaitGroup
			for i, q := range qs {
				wg.Go(func() { errs[i] = q.Modify(&verbs.QPAttr{QPState: verbs.QPStateErr}, verbs.QPAttrState) })
			}
			wg.Wait()
			e.WantOK("INIT→ERR", errors.Join(errs...))
		} else {
			for _, q := range qs {
				w.step(q, verbs.QPStateInit, verbs.QPStateErr)
			}
		}
		w.collect(cq, 2*len(qs), what)
		got, c := cqGetEvent(t, ch, what)
		if got != cq || c != tag {
			t.Errorf("%s: the event names cq=%v context=%v, want the CQ and its cq_context", what, got, c)
		}
		e.WantOK("ibv_ack_cq_events", cq.AckEvents(1))
		time.Sleep(Grace)
		e.notifyWant(what+", after the first event", ch, cq, 0)
	}
}

func cqDeepAsQueues(t *tester, e *env) {
	// Property over random QPs and depths: the CQ's real capacity (cqe),
	// not the request, is what the queues must add up to.
	w := qpSetup(t, e)
	rng := rand.New(rand.NewPCG(25, 0xc025))
	for round := range 8 {
		w.sizing(rng, round, 0)
		w.sizing(rng, round, 1)
		if t.Failed() {
			return
		}
	}
}

func completionsOutliveQP(t *tester, e *env) {
	w := qpSetup(t, e)
	for _, how := range []string{"ERR→RESET", "destroy"} {
		cq := e.CQ(64, nil, nil)
		victim := w.createWith(verbs.QPInitAttr{Type: verbs.QPTypeRC, Cap: w.qpCap(), SendCQ: cq, RecvCQ: cq})
		other := w.createWith(verbs.QPInitAttr{Type: verbs.QPTypeUD, Cap: w.qpCap(), SendCQ: cq, RecvCQ: cq})
		w.silentStep(victim, verbs.QPStateReset, verbs.QPStateInit)
		w.silentStep(other, verbs.QPStateReset, verbs.QPStateInit)
		vr := flushedQueue{"receive queue of the QP " + how, victim.Num(), []uint64{1, 2, 3, 4, 5}}
		vs := flushedQueue{"send queue of the QP " + how, victim.Num(), []uint64{6, 7}}
		or := flushedQueue{"receive queue of the other QP", other.Num(), []uint64{11, 12, 13}}
		w.postRecv("receives", victim, w.recvIDs(1, 2, 3))
		w.postRecv("receives", other, w.recvIDs(11, 12, 13))
		w.step(victim, verbs.QPStateInit, verbs.QPStateErr)
		w.step(other, verbs.QPStateInit, verbs.QPStateErr)
		w.postRecv("receives in ERR", victim, w.recvIDs(4, 5)) // flushed at once (FLUSH-05)
		w.postSend("sends in ERR", victim, w.sendIDs(victim, 6, 7))
		what := fmt.Sprintf("completions of a QP before its %s", how)
		if how == "destroy" {
			ctx, cancel := patient()
			e.WantOK("ibv_destroy_qp", victim.DestroyContext(ctx))
			cancel()
		} else {
			w.step(victim, verbs.QPStateErr, verbs.QPStateReset)
		}
		got := w.pollUntil(cq, or.ids, what)
		var others []verbs.WC
		for _, c := range got {
			if c.QPNum == other.Num() {
				others = append(others, c)
			}
		}
		w.checkFlushed(what+": the other QP's", others, []flushedQueue{or})
		w.allOrNone(what, got, []flushedQueue{vr, vs})
		if how == "destroy" {
			continue
		}
		// The QP lives on: what it completes from now on is delivered.
		w.silentStep(victim, verbs.QPStateReset, verbs.QPStateInit)
		w.postRecv("a receive after the reset", victim, w.recvIDs(21))
		w.step(victim, verbs.QPStateInit, verbs.QPStateErr)
		w.wantFlushes(what+": after the reset", w.collect(cq, 1, what+": after the reset"), []uint64{21})
	}
}
