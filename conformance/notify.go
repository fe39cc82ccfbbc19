package conformance

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"syscall"

	"github.com/google/go-cmp/cmp"
	"github.com/verbsim/verbsim/verbs"
)

// notifyCases are the cases of the NOTIFY family: arming a CQ with
// ibv_req_notify_cq and the consumer loop built on it. Completions are
// injected (Injector), so none of these cases needs a QP. Events are taken
// with TryGetEvent, as env.GetEvent does: by the time Push returns, the event
// its completion fired (if any) is queued, so a missing event shows at once
// rather than after a wait.
var notifyCases = []Case{
	{"NOTIFY-01", "an arm fires once", armFiresOnce},
	{"NOTIFY-02", "completions present at arm time never fire", presentAtArmNeverFire},
	{"NOTIFY-03", "next fires on any new completion", nextFiresOnAny},
	{"NOTIFY-04", "solicited fires on solicited receives only", solicitedOnSolicitedOnly},
	{"NOTIFY-05", "solicited arm and unsuccessful completions", solicitedArmErrors},
	{"NOTIFY-07", "next dominates solicited in either order", nextDominatesSolicited},
	{"NOTIFY-08", "repeated arms collapse", repeatedArmsCollapse},
	{"NOTIFY-09", "re-arm before reading queues a second event", reArmBeforeReading},
	{"NOTIFY-10", "errors are positive errnos", errorsPositiveErrnos},
	{"NOTIFY-11", "one event may stand for many completions", oneEventManyCompletions},
	{"NOTIFY-12", "an event comes after its completion is pollable", eventAfterPollable},
	{"NOTIFY-13", "an event may find the CQ empty", eventMayFindEmpty},
	{"NOTIFY-14", "the documented loop never loses a wake-up", documentedLoop},
	{"NOTIFY-15", "draining before re-arming loses a wake-up", drainThenArmLosesWakeup},
	{"NOTIFY-16", "solicited arm on a send-only CQ", solicitedArmSendOnly},
	{"NOTIFY-17", "arming a CQ without a channel", armWithoutChannel},
	{"NOTIFY-18", "one firing is one event, whatever feeds the CQ", oneFiringOneEvent},
}

func armFiresOnce(t *tester, e *env) {
	ch := e.Channel()
	q := e.CQ(16, nil, ch)
	e.WantOK("ibv_req_notify_cq(next)", q.ReqNotify(false))
	for i := range 3 {
		e.Push(q, SendWC(uint64(i)), false)
	}
	e.notifyWant("three completions after one arm", ch, q, 1)
	e.Push(q, SendWC(3), false)
	e.notifyWant("a completion after the event, without a re-arm", ch, q, 0)

	e.WantOK("ibv_req_notify_cq(solicited)", q.ReqNotify(true))
	for i := range 3 {
		e.Push(q, RecvWC(uint64(10+i)), true)
	}
	e.notifyWant("three solicited receives after one solicited arm", ch, q, 1)
	e.Push(q, RecvWC(13), true)
	e.notifyWant("a solicited receive after the event, without a re-arm", ch, q, 0)
}

func presentAtArmNeverFire(t *tester, e *env) {
	ch := e.Channel()
	next := e.CQ(16, nil, ch)
	sol := e.CQ(16, nil, ch)
	for i := range 2 {
		e.Push(next, SendWC(uint64(i)), false)
		e.Push(sol, RecvWC(uint64(i)), true)
	}
	e.WantOK("ibv_req_notify_cq(next) with 2 unpolled completions", next.ReqNotify(false))
	e.WantOK("ibv_req_notify_cq(solicited) with 2 unpolled solicited receives", sol.ReqNotify(true))
	e.NoEvent("arming CQs that already hold completions", ch)
	e.Push(next, SendWC(2), false)
	e.notifyWant("a completion added after the arm (next)", ch, next, 1)
	e.Push(sol, RecvWC(2), true)
	e.notifyWant("a solicited receive added after the arm (solicited)", ch, sol, 1)
}

func nextFiresOnAny(t *tester, e *env) {
	ch := e.Channel()
	q := e.CQ(16, nil, ch)
	for _, c := range []struct {
		what string
		w    verbs.WC
	}{
		{"a successful send", SendWC(1)},
		{"a successful unsolicited receive", RecvWC(2)},
		{"an unsuccessful completion", ErrWC(3, verbs.WCLocLenErr)},
		{"a flushed completion", ErrWC(4, verbs.WCWRFlushErr)},
	} {
		e.WantOK("ibv_req_notify_cq(next)", q.ReqNotify(false))
		e.Push(q, c.w, false)
		e.notifyWant("arm(next), then "+c.what, ch, q, 1)
	}
}

func solicitedOnSolicitedOnly(t *tester, e *env) {
	ch := e.Channel()
	q := e.CQ(16, nil, ch)
	e.WantOK("ibv_req_notify_cq(solicited)", q.ReqNotify(true))
	e.Push(q, RecvWC(1), false)
	e.notifyWant("arm(solicited), then a successful receive without the solicited bit", ch, q, 0)
	e.Push(q, SendWC(2), false)
	e.notifyWant("arm(solicited), then a successful send", ch, q, 0)
	e.Push(q, SendWC(3), true)
	e.notifyWant("arm(solicited), then a successful send pushed as solicited", ch, q, 0)
	e.Push(q, RecvWC(4), true)
	e.notifyWant("arm(solicited), then a successful solicited receive", ch, q, 1)

	e.WantOK("ibv_req_notify_cq(solicited)", q.ReqNotify(true))
	imm := RecvWC(5)
	imm.Opcode, imm.WCFlags, imm.ImmData = verbs.WCRecvRDMAWithImm, verbs.WCWithImm, 0x1234
	e.Push(q, imm, true)
	e.notifyWant("arm(solicited), then a solicited RDMA write with immediate", ch, q, 1)
}

func solicitedArmErrors(t *tester, e *env) {
	ch := e.Channel()
	q := e.CQ(16, nil, ch)
	e.WantOK("ibv_req_notify_cq(solicited)", q.ReqNotify(true))
	e.Push(q, ErrWC(1, verbs.WCWRFlushErr), false) // a send-side flush: never solicited
	if !e.Profile.SolicitedBitOnly {
		e.notifyWant("arm(solicited), then a flushed send (man-page reading: every error fires)", ch, q, 1)
		e.WantOK("ibv_req_notify_cq(solicited)", q.ReqNotify(true))
		recvErr := ErrWC(2, verbs.WCLocLenErr)
		recvErr.QPNum = RecvWC(0).QPNum
		e.Push(q, recvErr, false)
		e.notifyWant("arm(solicited), then a failed receive without the solicited bit", ch, q, 1)
		return
	}
	e.notifyWant("arm(solicited), then a flushed send (rxe reading: only the solicited bit counts)", ch, q, 0)
	e.Push(q, ErrWC(2, verbs.WCWRFlushErr), true)
	e.notifyWant("arm(solicited), then an unsuccessful completion pushed as solicited", ch, q, 1)
}

func nextDominatesSolicited(t *tester, e *env) {
	ch := e.Channel()
	for _, order := range [][2]bool{{true, false}, {false, true}} {
		q := e.CQ(4, nil, ch)
		what := fmt.Sprintf("arm(%s) then arm(%s), then a successful send", notifyArmName(order[0]), notifyArmName(order[1]))
		e.WantOK(what, q.ReqNotify(order[0]))
		e.WantOK(what, q.ReqNotify(order[1]))
		e.Push(q, SendWC(1), false)
		e.notifyWant(what, ch, q, 1)
	}
}

func repeatedArmsCollapse(t *tester, e *env) {
	ch := e.Channel()
	for _, so := range []bool{false, true} {
		q := e.CQ(8, nil, ch)
		for range 3 {
			e.WantOK("ibv_req_notify_cq("+notifyArmName(so)+")", q.ReqNotify(so))
		}
		for i := range 3 {
			e.Push(q, RecvWC(uint64(i)), true)
		}
		e.notifyWant("arm("+notifyArmName(so)+") three times, then three solicited receives", ch, q, 1)
	}
}

func reArmBeforeReading(t *tester, e *env) {
	ch := e.Channel()
	q := e.CQ(8, nil, ch)
	e.WantOK("ibv_req_notify_cq", q.ReqNotify(false))
	e.Push(q, SendWC(1), false)
	e.WantOK("ibv_req_notify_cq before reading the first event", q.ReqNotify(false))
	e.Push(q, SendWC(2), false)
	if d, ok := ch.(Depth); ok && d.Len() != 2 {
		t.Errorf("fire, re-arm, add: the channel holds %d events, want 2", d.Len())
	}
	for i := range 2 {
		if got, _ := e.GetEvent(fmt.Sprintf("event %d of 2", i+1), ch); got != q {
			t.Errorf("event %d of 2 names %v, want the armed CQ", i+1, got)
		}
	}
	e.NoEvent("after reading both events", ch)
	e.WantOK("ibv_ack_cq_events(1) for the first event", q.AckEvents(1))
	e.notifyDestroyWaits("one of two events acked", q, func() {
		e.WantOK("ibv_ack_cq_events(1) for the second event", q.AckEvents(1))
	})
}

func errorsPositiveErrnos(t *tester, e *env) {
	q := e.CQ(4, nil, nil)
	for _, so := range []bool{false, true} {
		if err := q.ReqNotify(so); err != nil {
			t.Errorf("ibv_req_notify_cq(%s) on a live CQ: %v, want nil", notifyArmName(so), err)
		}
	}
	ctx, cancel := patient()
	defer cancel()
	e.WantOK("ibv_destroy_cq", q.DestroyContext(ctx))
	for _, so := range []bool{false, true} {
		err := q.ReqNotify(so)
		what := "ibv_req_notify_cq(" + notifyArmName(so) + ") on a destroyed CQ"
		e.WantErrno(what, err, syscall.EINVAL)
		var n syscall.Errno
		if err != nil && (!errors.As(err, &n) || n <= 0) {
			t.Errorf("%s: the error %v carries no positive errno", what, err)
		}
	}
}

func oneEventManyCompletions(t *tester, e *env) {
	ch := e.Channel()
	q := e.CQ(16, nil, ch)
	e.WantOK("ibv_req_notify_cq", q.ReqNotify(false))
	var want []verbs.WC
	for i := range 10 {
		w := SendWC(uint64(i))
		switch i % 3 {
		case 1:
			w = RecvWC(uint64(i))
		case 2:
			w = ErrWC(uint64(i), verbs.WCRemAccessErr)
		}
		e.Push(q, w, i%2 == 0)
		want = append(want, w)
	}
	e.notifyWant("ten completions after one arm", ch, q, 1)
	if d := cqDiff(want, e.PollAll(q, 4)); d != "" {
		t.Errorf("the completions behind one event (-want +got):\n%s", d)
	}
	e.notifyWant("after polling, without a re-arm", ch, q, 0)
}

func eventAfterPollable(t *tester, e *env) {
	for seed := range uint64(150) {
		if !e.notifyPollableAfterEvent(seed) {
			return
		}
	}
	e.notifyPollableUnderContention(1, 200)
}

func eventMayFindEmpty(t *tester, e *env) {
	ch := e.Channel()
	q := e.CQ(8, nil, ch)
	e.WantOK("ibv_req_notify_cq", q.ReqNotify(false))
	e.Push(q, SendWC(1), false)
	e.GetEvent("the first event", ch)
	e.WantOK("ibv_ack_cq_events", q.AckEvents(1))
	e.WantOK("re-arm", q.ReqNotify(false))
	e.Push(q, SendWC(2), false) // between the re-arm and the drain
	if got := e.PollAll(q, 4); len(got) != 2 {
		t.Errorf("the drain polled %d completions, want 2", len(got))
	}
	got, _, err := ch.TryGetEvent()
	if err != nil {
		t.Fatalf("the completion added between re-arm and drain fired the re-arm: want a second event, got %v", err)
	}
	if got != q {
		t.Errorf("the second event names %v, want the CQ", got)
	}
	e.WantOK("ibv_ack_cq_events", q.AckEvents(1))
	e.WantOK("re-arm", q.ReqNotify(false))
	if n, err := q.Poll(make([]verbs.WC, 4)); n != 0 || err != nil {
		t.Errorf("poll after the second event: %d, %v; want 0 (the completion was drained already)", n, err)
	}
}

func documentedLoop(t *tester, e *env) {
	ch := e.Channel()
	for k := 1; k <= 4; k++ {
		runs, hang := e.notifyExplore(ch, notifyRecipe, k)
		if hang != "" {
			t.Fatalf("get event, ack, re-arm, drain: with %d insertions the consumer sleeps on a non-empty CQ after\n\t%s", k, hang)
		}
		t.Logf("%d insertions: %d interleavings, none hangs", k, runs)
	}
}

func drainThenArmLosesWakeup(t *tester, e *env) {
	ch := e.Channel()
	q := e.CQ(8, nil, ch)
	e.WantOK("ibv_req_notify_cq", q.ReqNotify(false))
	e.Push(q, SendWC(1), false)
	e.GetEvent("the first event", ch)
	e.WantOK("ibv_ack_cq_events", q.AckEvents(1))
	if got := e.PollAll(q, 4); len(got) != 1 {
		t.Fatalf("the drain polled %d completions, want 1", len(got))
	}
	e.Push(q, SendWC(2), false) // after the last empty poll, before the re-arm
	e.WantOK("re-arm after the drain", q.ReqNotify(false))
	for range 3 {
		e.NoEvent("drain, then re-arm, then wait, with a completion added before the re-arm (the wait would never end)", ch)
	}
	// The fix: poll once more after re-arming.
	buf := make([]verbs.WC, 4)
	if n, err := q.Poll(buf); n != 1 || err != nil || buf[0].WRID != 2 {
		t.Errorf("poll after re-arming: %d, %v; want the completion the wait would have missed", n, err)
	}
	// The fixed loop (drain, re-arm, drain again) never sleeps on a
	// non-empty CQ, whatever the interleaving.
	for k := 1; k <= 3; k++ {
		if _, hang := e.notifyExplore(ch, notifyRecipeFixed, k); hang != "" {
			t.Errorf("get event, ack, drain, re-arm, drain: with %d insertions the consumer sleeps on a non-empty CQ after\n\t%s", k, hang)
		}
	}
}

func solicitedArmSendOnly(t *tester, e *env) {
	ch := e.Channel()
	q := e.CQ(16, nil, ch)
	e.WantOK("ibv_req_notify_cq(solicited)", q.ReqNotify(true))
	write := SendWC(3)
	write.Opcode = verbs.WCRDMAWrite
	e.Push(q, SendWC(1), false)
	e.Push(q, SendWC(2), true)
	e.Push(q, write, true)
	e.notifyWant("arm(solicited) on a send CQ, then successful sends", ch, q, 0)
}

func armWithoutChannel(t *tester, e *env) {
	ch := e.Channel()
	other := e.CQ(4, nil, ch)
	q := e.CQ(4, nil, nil)
	e.WantOK("ibv_req_notify_cq(next) without a channel", q.ReqNotify(false))
	e.Push(q, SendWC(1), false)
	e.WantOK("ibv_req_notify_cq(solicited) without a channel", q.ReqNotify(true))
	e.Push(q, RecvWC(2), true)
	e.NoEvent("a channel-less CQ fired: another CQ's channel", ch)
	if ev, err := e.Ctx.TryGetAsyncEvent(); !errors.Is(err, syscall.EAGAIN) {
		t.Errorf("a channel-less CQ fired: want no async event (EAGAIN), got %v, %v", ev, err)
	}
	if got := e.PollAll(q, 4); len(got) != 2 {
		t.Errorf("the channel-less CQ holds %d completions, want 2", len(got))
	}
	e.WantOK("ibv_req_notify_cq", other.ReqNotify(false))
	e.Push(other, SendWC(3), false)
	e.notifyWant("the CQ that has the channel", ch, other, 1)
}

func oneFiringOneEvent(t *tester, e *env) {
	ch := e.Channel()
	tag := &notifyTag{"NOTIFY-18"}
	q := e.CQ(16, tag, ch)
	e.WantOK("ibv_req_notify_cq", q.ReqNotify(false))
	for qpn := range uint32(3) {
		w := SendWC(uint64(qpn))
		w.QPNum = 0x100 + qpn
		e.Push(q, w, false)
	}
	e.notifyWantOne("completions of three QPs after one arm", ch, q, tag)
	e.PollAll(q, 8)

	// The same with the completions arriving concurrently.
	in := e.Injector(q)
	e.WantOK("ibv_req_notify_cq", q.ReqNotify(false))
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	for qpn := range uint32(4) {
		wg.Go(func() {
			w := RecvWC(uint64(qpn))
			w.QPNum = 0x200 + qpn
			_, err := in.Push(w, true)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		e.WantOK("injecting a completion", err)
	}
	e.notifyWantOne("completions of four QPs arriving together after one arm", ch, q, tag)
	qps := map[uint32]bool{}
	for _, w := range e.PollAll(q, 8) {
		qps[w.QPNum] = true
	}
	if len(qps) != 4 {
		t.Errorf("the CQ held completions of %d QPs, want 4", len(qps))
	}
}

// notifyTag is a cq_context sentinel: events must hand back the very pointer.
type notifyTag struct{ name string }

func notifyArmName(solicitedOnly bool) string {
	if solicitedOnly {
		return "solicited"
	}
	return "next"
}

// notifyTake takes every event queued on ch without blocking and acks each on
// the CQ it names. It returns the CQs and contexts the events named, in order.
func (e *env) notifyTake(what string, ch verbs.CompChannel) (cqs []verbs.CQ, ctxs []any) {
	e.T.Helper()
	for {
		q, c, err := ch.TryGetEvent()
		if errors.Is(err, syscall.EAGAIN) {
			return cqs, ctxs
		}
		if err != nil || q == nil {
			e.T.Fatalf("%s: ibv_get_cq_event: cq=%v err=%v, want an event or EAGAIN", what, q, err)
		}
		e.WantOK(what+": ibv_ack_cq_events", q.AckEvents(1))
		cqs, ctxs = append(cqs, q), append(ctxs, c)
		if len(cqs) > 1000 {
			e.T.Fatalf("%s: the channel still has events after 1000 reads", what)
		}
	}
}

// notifyWant checks that ch holds exactly n events, all naming q, and takes
// and acks them.
func (e *env) notifyWant(what string, ch verbs.CompChannel, q verbs.CQ, n int) {
	e.T.Helper()
	cqs, _ := e.notifyTake(what, ch)
	if len(cqs) != n {
		e.T.Errorf("%s: %d completion events, want %d", what, len(cqs), n)
	}
	for i, got := range cqs {
		if got != q {
			e.T.Errorf("%s: event %d names another CQ", what, i+1)
		}
	}
}

// notifyWantOne checks that ch holds exactly one event, naming q and its
// context tag, and takes and acks it.
func (e *env) notifyWantOne(what string, ch verbs.CompChannel, q verbs.CQ, tag any) {
	e.T.Helper()
	cqs, ctxs := e.notifyTake(what, ch)
	if len(cqs) != 1 {
		e.T.Errorf("%s: %d completion events, want 1", what, len(cqs))
		return
	}
	if cqs[0] != q || ctxs[0] != tag {
		e.T.Errorf("%s: the event names cq=%v context=%v, want the CQ and its cq_context %v", what, cqs[0], ctxs[0], tag)
	}
}

// notifyDestroyWaits checks that destroying q does not finish while events read
// for it are unacked, then calls ack, which must supply the missing acks, and
// checks that the destroy then finishes. Under DestroyBusyOnUnacked the first
// destroy must fail with EBUSY instead of waiting.
func (e *env) notifyDestroyWaits(what string, q verbs.CQ, ack func()) {
	e.T.Helper()
	ctx, cancel := patient()
	defer cancel()
	if e.Profile.DestroyBusyOnUnacked {
		e.WantErrno(what+": ibv_destroy_cq with events unacked", q.DestroyContext(ctx), syscall.EBUSY)
		ack()
		e.WantOK(what+": ibv_destroy_cq after the acks", q.DestroyContext(ctx))
		return
	}
	done := make(chan error, 1)
	pending := true
	go func() { done <- q.DestroyContext(ctx) }()
	defer func() {
		if pending {
			cancel()
			<-done
		}
	}()
	g, gcancel := graceful()
	defer gcancel()
	select {
	case err := <-done:
		pending = false
		e.T.Fatalf("%s: ibv_destroy_cq returned (%v) while events read for the CQ were not acked", what, err)
	case <-g.Done():
	}
	ack()
	err := <-done
	pending = false
	if err != nil {
		e.T.Fatalf("%s: ibv_destroy_cq after the acks: %v, want success", what, err)
	}
}

// notifyPollableAfterEvent checks NOTIFY-12 on one random sequence of arms,
// injections and non-blocking event reads. The sequence runs in phases; no
// phase polls before its end, so any event read in a phase was fired by a
// completion nobody has polled, and the first poll at the end of the phase
// must return it. It reports whether the case may go on.
func (e *env) notifyPollableAfterEvent(seed uint64) bool {
	e.T.Helper()
	rng := rand.New(rand.NewPCG(seed, 0x4e4f54494659)) // deterministic: a failure names its seed
	ch := e.Channel()
	q := e.CQ(64, nil, ch)
	var log []string
	for range 8 {
		events := 0
		for range 1 + rng.IntN(12) {
			switch rng.IntN(4) {
			case 0:
				so := rng.IntN(2) == 0
				e.WantOK("ibv_req_notify_cq", q.ReqNotify(so))
				log = append(log, "arm("+notifyArmName(so)+")")
			case 1, 2:
				w, so := notifyRandomWC(rng, uint64(len(log)))
				e.Push(q, w, so)
				log = append(log, fmt.Sprintf("push(%s,solicited=%v)", w.Opcode, so))
			case 3:
				n := len(e.notifyTakeQuiet(ch))
				events += n
				log = append(log, fmt.Sprintf("get→%d", n))
			}
		}
		events += len(e.notifyTakeQuiet(ch))
		buf := make([]verbs.WC, 1+rng.IntN(4))
		n, err := q.Poll(buf)
		e.WantOK("ibv_poll_cq", err)
		if events > 0 && n == 0 {
			e.T.Errorf("seed %d: after %d event(s) and no poll since the arm, ibv_poll_cq returned 0; steps: %v", seed, events, log)
			return false
		}
		e.PollAll(q, 16)
		log = append(log, "drain")
	}
	ctx, cancel := patient()
	defer cancel()
	e.WantOK("ibv_destroy_cq", q.DestroyContext(ctx))
	e.WantOK("ibv_destroy_comp_channel", ch.Destroy())
	return true
}

// notifyTakeQuiet is notifyTake under a fixed description.
func (e *env) notifyTakeQuiet(ch verbs.CompChannel) []verbs.CQ {
	e.T.Helper()
	cqs, _ := e.notifyTake("taking events", ch)
	return cqs
}

// notifyRandomWC returns a random completion and solicited bit.
func notifyRandomWC(rng *rand.Rand, id uint64) (verbs.WC, bool) {
	so := rng.IntN(2) == 0
	switch rng.IntN(3) {
	case 0:
		return SendWC(id), so
	case 1:
		return RecvWC(id), so
	}
	return ErrWC(id, verbs.WCWRFlushErr), so
}

// notifyPollableUnderContention checks NOTIFY-12 with a producer goroutine
// injecting completions while the consumer arms and then blocks in GetEvent:
// when GetEvent returns, nobody has polled since the arm, so a poll must
// return at least one completion. Each round the producer gets one batch of
// work before the arm (racing with it) and one after; every batch ends with
// completions that fire any arm, so the wait always ends.
func (e *env) notifyPollableUnderContention(seed uint64, rounds int) {
	e.T.Helper()
	rng := rand.New(rand.NewPCG(seed, 0x4e4f54494659))
	ch := e.Channel()
	q := e.CQ(1023, nil, ch)
	in := e.Injector(q)

	batches := make(chan int, 2)
	stop := make(chan struct{})
	var (
		wg   sync.WaitGroup
		perr error // the producer's first injection error; read after wg.Wait
	)
	wg.Go(func() {
		prng := rand.New(rand.NewPCG(seed, 1))
		id := uint64(0)
		for {
			select {
			case <-stop:
				return
			case n := <-batches:
				for i := range n + 2 {
					id++
					w, so := notifyRandomWC(prng, id)
					switch i {
					case n: // each of the last two fires any arm
						w, so = RecvWC(id), true
					case n + 1:
						w, so = ErrWC(id, verbs.WCWRFlushErr), true
					}
					if _, err := in.Push(w, so); err != nil && perr == nil {
						perr = err
					}
				}
			}
		}
	})
	defer func() {
		close(stop)
		wg.Wait()
		if perr != nil {
			e.T.Errorf("the producer's injections: %v", perr)
		}
	}()

	ctx, cancel := patient()
	defer cancel()
	buf := make([]verbs.WC, 8)
	for round := range rounds {
		batches <- rng.IntN(16)
		so := rng.IntN(2) == 0
		e.WantOK("ibv_req_notify_cq", q.ReqNotify(so))
		batches <- rng.IntN(16)
		got, _, err := ch.GetEvent(ctx)
		if err != nil {
			e.T.Fatalf("round %d: ibv_get_cq_event after arm(%s) with completions arriving: %v", round, notifyArmName(so), err)
		}
		if got != q {
			e.T.Fatalf("round %d: the event names another CQ", round)
		}
		e.WantOK("ibv_ack_cq_events", q.AckEvents(1))
		n, err := q.Poll(buf)
		e.WantOK("ibv_poll_cq", err)
		if n == 0 {
			e.T.Fatalf("round %d: an event arrived, nobody polled since the arm, and ibv_poll_cq returned 0", round)
		}
		e.PollAll(q, len(buf))
	}
}

// notifyStep is one step of a consumer loop, as notifyExplore runs it.
type notifyStep uint8

const (
	notifyGet   notifyStep = iota // ibv_get_cq_event; EAGAIN means the consumer would sleep
	notifyAck                     // ibv_ack_cq_events(cq, 1)
	notifyArm                     // ibv_req_notify_cq(cq, 0)
	notifyDrain                   // ibv_poll_cq of one entry, repeated (one step each) until it returns 0
)

var (
	// notifyRecipe is the loop of ibv_get_cq_event(3): re-arm, then drain.
	notifyRecipe = []notifyStep{notifyGet, notifyAck, notifyArm, notifyDrain}
	// notifyRecipeFixed drains, re-arms, then drains once more (NOTIFY-15's fix).
	notifyRecipeFixed = []notifyStep{notifyGet, notifyAck, notifyDrain, notifyArm, notifyDrain}
)

// notifyExplore runs a consumer executing recipe against a producer that
// injects k completions, once for every interleaving of the two, each time on
// a fresh CQ on ch armed before the first completion. A run ends when the
// consumer would sleep (TryGetEvent gives EAGAIN) and the producer has
// nothing left to add; it hangs if the consumer has not polled every
// completion by then. notifyExplore returns how many interleavings it ran and
// the steps of the first that hangs, or "".
//
// Schedules are enumerated depth first: each run follows a prefix of forced
// choices and takes the consumer step at every later choice point; the next
// run flips the last consumer choice that has not been flipped yet.
func (e *env) notifyExplore(ch verbs.CompChannel, recipe []notifyStep, k int) (runs int, hang string) {
	e.T.Helper()
	var forced []bool // true: the producer moves at that choice point
	for {
		taken, hang := e.notifyRun(ch, recipe, k, forced)
		runs++
		if hang != "" {
			return runs, hang
		}
		if runs > 200000 {
			e.T.Fatalf("exploring the consumer loop: more than %d interleavings", runs)
		}
		i := len(taken) - 1
		for i >= 0 && taken[i] {
			i--
		}
		if i < 0 {
			return runs, ""
		}
		forced = append(taken[:i:i], true)
	}
}

// notifyRun is one run of notifyExplore. It returns the choice taken at every
// choice point (true: the producer moved) and, if the run hangs, its steps.
func (e *env) notifyRun(ch verbs.CompChannel, recipe []notifyStep, k int, forced []bool) (taken []bool, hang string) {
	e.T.Helper()
	q, err := e.Ctx.CreateCQ(k, nil, ch, 0)
	if err != nil {
		e.T.Fatalf("ibv_create_cq(%d): %v", k, err)
	}
	destroyed := false
	defer func() {
		if !destroyed { // the run failed: best effort
			ctx, cancel := graceful()
			_ = q.DestroyContext(ctx)
			cancel()
		}
	}()
	e.WantOK("ibv_req_notify_cq before any completion", q.ReqNotify(false))
	var (
		log      []string
		pc       int
		asleep   bool
		inserted int
		polled   []uint64
		buf      = make([]verbs.WC, 1)
	)
	for steps := 0; ; steps++ {
		if steps > 100*(k+1) {
			e.T.Fatalf("the consumer loop does not settle: %v", log)
		}
		consumer, producer := !asleep, inserted < k
		if !consumer && !producer {
			break
		}
		if consumer && producer {
			choice := len(taken) < len(forced) && forced[len(taken)]
			taken = append(taken, choice)
			consumer = !choice
		}
		if !consumer {
			inserted++
			e.Push(q, SendWC(uint64(inserted)), false)
			log = append(log, fmt.Sprintf("INSERT#%d", inserted))
			asleep = false
			continue
		}
		switch recipe[pc] {
		case notifyGet:
			got, _, err := ch.TryGetEvent()
			if errors.Is(err, syscall.EAGAIN) {
				log = append(log, "get→EAGAIN")
				asleep = true
				continue
			}
			if err != nil || got != q {
				e.T.Fatalf("ibv_get_cq_event: cq=%v err=%v, want an event of the CQ or EAGAIN", got, err)
			}
			log = append(log, "get")
		case notifyAck:
			e.WantOK("ibv_ack_cq_events", q.AckEvents(1))
			log = append(log, "ack")
		case notifyArm:
			e.WantOK("ibv_req_notify_cq", q.ReqNotify(false))
			log = append(log, "arm")
		case notifyDrain:
			n, err := q.Poll(buf)
			e.WantOK("ibv_poll_cq", err)
			log = append(log, fmt.Sprintf("poll→%d", n))
			if n > 0 {
				polled = append(polled, buf[0].WRID)
				continue // stay on the drain
			}
		}
		pc = (pc + 1) % len(recipe)
	}
	want := make([]uint64, k)
	for i := range want {
		want[i] = uint64(i + 1)
	}
	if !cmp.Equal(polled, want) {
		hang = fmt.Sprintf("%v (polled %v of %v)", log, polled, want)
	}
	ctx, cancel := patient()
	defer cancel()
	destroyed = true
	if err := q.DestroyContext(ctx); err != nil {
		e.T.Fatalf("ibv_destroy_cq after a run of the consumer loop: %v", err)
	}
	return taken, hang
}
