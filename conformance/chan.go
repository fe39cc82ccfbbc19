package conformance

import (
	"context"
	"fmt"
	"syscall"

	"github.com/google/go-cmp/cmp"
	"github.com/verbsim/verbsim/verbs"
)

// chanCases are the cases of the CHAN family: completion channels, reading
// completion events and acknowledging them. Events are produced by arming a
// CQ and injecting a completion (chanFire).
var chanCases = []Case{
	{"CHAN-01", "a new channel is usable", newChannelUsable},
	{"CHAN-02", "events name their CQ and its context", eventsNameCQAndContext},
	{"CHAN-03", "GetEvent blocks until an event is queued", getEventBlocks},
	{"CHAN-04", "non-blocking read of an idle channel is EAGAIN", tryGetEventIdle},
	{"CHAN-05", "the channel is readable while events are queued", channelReadableWhileQueued},
	{"CHAN-06", "events are handed out FIFO", eventsFIFO},
	{"CHAN-07", "one ack may cover several events", oneAckManyEvents},
	{"CHAN-08", "over-ack is refused and changes nothing", overAckRefused},
	{"CHAN-09", "a channel in use cannot be destroyed", channelInUseNotDestroyed},
	{"CHAN-10", "an event carries no completion", eventCarriesNoCompletion},
	{"CHAN-11", "each event wakes exactly one reader", eventWakesOneReader},
	{"CHAN-12", "ack(2) equals ack(1) twice", ackTwoIsAckOneTwice},
}

func newChannelUsable(t *tester, e *env) {
	ch := e.Channel()
	if ch == nil {
		t.Fatalf("ibv_create_comp_channel returned no channel and no error")
	}
	q, _, err := ch.TryGetEvent()
	e.WantErrno("ibv_get_cq_event on a new channel", err, syscall.EAGAIN)
	if q != nil {
		t.Errorf("ibv_get_cq_event on a new channel named a CQ")
	}
	q = e.CQ(4, nil, ch)
	chanFire(e, q)
	e.notifyWant("an armed CQ on the new channel fired", ch, q, 1)
	ctx, cancel := patient()
	defer cancel()
	e.WantOK("ibv_destroy_cq", q.DestroyContext(ctx))
	e.WantOK("ibv_destroy_comp_channel", ch.Destroy())
}

func eventsNameCQAndContext(t *tester, e *env) {
	ch := e.Channel()
	ta, tb := &notifyTag{"A"}, &notifyTag{"B"}
	a := e.CQ(4, ta, ch)
	b := e.CQ(4, tb, ch)
	chanFire(e, b)
	chanFire(e, a)
	cqs, ctxs := e.notifyTake("two CQs on one channel fired, B then A", ch)
	if len(cqs) != 2 {
		t.Fatalf("two CQs on one channel fired: %d events, want 2", len(cqs))
	}
	for i, want := range []struct {
		q   verbs.CQ
		tag *notifyTag
	}{{b, tb}, {a, ta}} {
		if cqs[i] != want.q || ctxs[i] != any(want.tag) {
			t.Errorf("event %d: cq=%v context=%v, want CQ %s and its cq_context %v", i+1, cqs[i], ctxs[i], want.tag.name, want.tag)
		}
	}
}

func getEventBlocks(t *tester, e *env) {
	ch := e.Channel()
	q := e.CQ(4, nil, ch)
	r := chanReaders(ch, 1)
	defer r.stop()
	e.Push(q, SendWC(1), false) // the CQ is not armed: no event
	if got := r.idle(); got != nil {
		t.Fatalf("ibv_get_cq_event returned with no event queued: cq=%v err=%v", got.v, got.err)
	}
	e.PollAll(q, 4)
	chanFire(e, q)
	got := r.next()
	if got.err != nil || got.v != q {
		t.Fatalf("the blocked ibv_get_cq_event: cq=%v err=%v, want the event of the CQ", got.v, got.err)
	}
	e.WantOK("ibv_ack_cq_events", q.AckEvents(1))
}

func tryGetEventIdle(t *tester, e *env) {
	ch := e.Channel()
	q := e.CQ(4, nil, ch)
	e.NoEvent("a channel with no event", ch)
	chanFire(e, q)
	e.GetEvent("an armed CQ fired", ch)
	e.WantOK("ibv_ack_cq_events", q.AckEvents(1))
	got, _, err := ch.TryGetEvent()
	e.WantErrno("ibv_get_cq_event after the only event was read", err, syscall.EAGAIN)
	if got != nil {
		t.Errorf("ibv_get_cq_event on an idle channel named a CQ")
	}
}

func channelReadableWhileQueued(t *tester, e *env) {
	ch := e.Channel()
	d, ok := ch.(Depth)
	if !ok {
		t.Logf("the channel does not report its depth (conformance.Depth); nothing to check")
		return
	}
	if n := d.Len(); n != 0 {
		t.Errorf("a new channel reports %d queued events, want 0", n)
	}
	var qs []verbs.CQ
	for i := range 3 {
		q := e.CQ(4, nil, ch)
		qs = append(qs, q)
		chanFire(e, q)
		if n := d.Len(); n != i+1 {
			t.Errorf("after %d events: depth %d, want %d", i+1, n, i+1)
		}
	}
	for i := range 3 {
		q, _ := e.GetEvent("reading a queued event", ch)
		e.WantOK("ibv_ack_cq_events", q.AckEvents(1))
		if n := d.Len(); n != 2-i {
			t.Errorf("after reading %d of 3 events: depth %d, want %d", i+1, n, 2-i)
		}
	}
	e.NoEvent("depth 0", ch)
	// An event of a destroyed CQ is discarded unread (CQ-13): the depth
	// drops with it.
	chanFire(e, qs[0])
	ctx, cancel := patient()
	defer cancel()
	e.WantOK("ibv_destroy_cq with an unread event", qs[0].DestroyContext(ctx))
	if n := d.Len(); n != 0 {
		t.Errorf("after destroying the only CQ with a queued event: depth %d, want 0", n)
	}
}

func eventsFIFO(t *tester, e *env) {
	ch := e.Channel()
	var qs []verbs.CQ
	for range 3 {
		qs = append(qs, e.CQ(4, nil, ch))
	}
	a, b, c := qs[0], qs[1], qs[2]
	order := []verbs.CQ{b, a, c, a, a, c}
	for _, q := range order {
		chanFire(e, q)
	}
	got, _ := e.notifyTake("six events from three CQs", ch)
	name := func(cqs []verbs.CQ) (s []string) {
		for _, q := range cqs {
			switch q {
			case a:
				s = append(s, "A")
			case b:
				s = append(s, "B")
			case c:
				s = append(s, "C")
			default:
				s = append(s, "?")
			}
		}
		return s
	}
	if d := cmp.Diff(name(order), name(got)); d != "" {
		t.Errorf("events read in another order than fired (-fired +read):\n%s", d)
	}
}

func oneAckManyEvents(t *tester, e *env) {
	ch := e.Channel()
	q := e.CQ(8, nil, ch)
	chanRead(e, ch, q, 3)
	e.WantOK("ibv_ack_cq_events(3)", q.AckEvents(3))
	ctx, cancel := patient()
	defer cancel()
	e.WantOK("ibv_destroy_cq after 3 events acked in one call", q.DestroyContext(ctx))
}

func overAckRefused(t *tester, e *env) {
	ch := e.Channel()
	q := e.CQ(8, nil, ch)
	chanRead(e, ch, q, 2)
	e.WantErrno("ibv_ack_cq_events(3) after reading 2", q.AckEvents(3), syscall.EINVAL)
	e.WantOK("ibv_ack_cq_events(1) after the refused over-ack", q.AckEvents(1))
	e.WantErrno("ibv_ack_cq_events(2) with 1 event unacked", q.AckEvents(2), syscall.EINVAL)
	e.notifyDestroyWaits("after refused over-acks, 1 of 2 events acked", q, func() {
		e.WantOK("ibv_ack_cq_events(1) for the last event", q.AckEvents(1))
	})
}

func channelInUseNotDestroyed(t *tester, e *env) {
	ch := e.Channel()
	a := e.CQ(4, nil, ch)
	b := e.CQ(4, nil, ch)
	ctx, cancel := patient()
	defer cancel()
	e.WantErrno("ibv_destroy_comp_channel with two CQs on it", ch.Destroy(), syscall.EBUSY)
	e.WantOK("ibv_destroy_cq", a.DestroyContext(ctx))
	e.WantErrno("ibv_destroy_comp_channel with one CQ on it", ch.Destroy(), syscall.EBUSY)
	chanFire(e, b) // the channel still works
	e.notifyWant("after a refused destroy", ch, b, 1)
	e.WantOK("ibv_destroy_cq", b.DestroyContext(ctx))
	e.WantOK("ibv_destroy_comp_channel once no CQ uses it", ch.Destroy())
}

func eventCarriesNoCompletion(t *tester, e *env) {
	ch := e.Channel()
	q := e.CQ(4, nil, ch)
	e.WantOK("ibv_req_notify_cq", q.ReqNotify(false))
	w := RecvWC(77)
	w.ImmData, w.WCFlags = 0xfeed, verbs.WCWithImm
	e.Push(q, w, false)
	e.GetEvent("the event", ch)
	e.WantOK("ibv_ack_cq_events", q.AckEvents(1))
	if d := cmp.Diff([]verbs.WC{w}, e.PollAll(q, 4)); d != "" {
		t.Errorf("the completion behind an event must still be polled (-want +got):\n%s", d)
	}
}

func eventWakesOneReader(t *tester, e *env) {
	const readers, events = 8, 3
	ch := e.Channel()
	var qs []verbs.CQ
	for range events {
		qs = append(qs, e.CQ(4, nil, ch))
	}
	r := chanReaders(ch, readers)
	defer r.stop()
	if got := r.idle(); got != nil {
		t.Fatalf("a reader returned with no event queued: cq=%v err=%v", got.v, got.err)
	}
	for _, q := range qs {
		e.WantOK("ibv_req_notify_cq", q.ReqNotify(false))
	}
	for _, q := range qs {
		chanFireArmed(e, q)
	}
	seen := map[verbs.CQ]int{}
	for range events {
		got := r.next()
		if got.err != nil || got.v == nil {
			t.Fatalf("a blocked reader: cq=%v err=%v, want an event", got.v, got.err)
		}
		seen[got.v]++
	}
	if got := r.idle(); got != nil {
		t.Errorf("%d events woke more than %d readers: an extra one got cq=%v err=%v", events, events, got.v, got.err)
	}
	for i, q := range qs {
		if seen[q] != 1 {
			t.Errorf("the event of CQ %d was delivered %d times, want once", i+1, seen[q])
		}
	}
	for _, q := range qs {
		e.WantOK("ibv_ack_cq_events", q.AckEvents(1))
	}
}

func ackTwoIsAckOneTwice(t *tester, e *env) {
	ch := e.Channel()
	batch := e.CQ(8, nil, ch)
	single := e.CQ(8, nil, ch)
	chanRead(e, ch, batch, 2)
	chanRead(e, ch, single, 2)
	e.notifyDestroyWaits("2 events read, none acked", batch, func() {
		e.WantOK("ibv_ack_cq_events(2)", batch.AckEvents(2))
	})
	e.WantOK("ibv_ack_cq_events(1), first of two", single.AckEvents(1))
	e.notifyDestroyWaits("2 events read, 1 acked", single, func() {
		e.WantOK("ibv_ack_cq_events(1), second of two", single.AckEvents(1))
	})
}

// chanFire arms q for the next completion and injects one, which queues one
// event on q's channel.
func chanFire(e *env, q verbs.CQ) {
	e.T.Helper()
	e.WantOK("ibv_req_notify_cq", q.ReqNotify(false))
	chanFireArmed(e, q)
}

// chanFireArmed injects into the armed q a completion that fires any arm: a
// successful receive of a solicited message.
func chanFireArmed(e *env, q verbs.CQ) {
	e.T.Helper()
	e.Push(q, RecvWC(1), true)
}

// chanRead fires q n times and reads the n events from ch, leaving them
// unacked.
func chanRead(e *env, ch verbs.CompChannel, q verbs.CQ, n int) {
	e.T.Helper()
	for i := range n {
		chanFire(e, q)
		if got, _ := e.GetEvent(fmt.Sprintf("event %d of %d", i+1, n), ch); got != q {
			e.T.Fatalf("event %d of %d names another CQ", i+1, n)
		}
	}
}

// chanPool is a set of goroutines blocked in GetEvent on one channel, each
// reading once.
type chanPool = readerPool[verbs.CQ]

// chanReaders starts n goroutines blocked in GetEvent on ch. Call stop before
// the case returns.
func chanReaders(ch verbs.CompChannel, n int) *chanPool {
	read := func(ctx context.Context) (verbs.CQ, error) {
		q, _, err := ch.GetEvent(ctx)
		return q, err
	}
	return startReaders(n, read, func(q verbs.CQ) {
		if q != nil {
			_ = q.AckEvents(1)
		}
	})
}
