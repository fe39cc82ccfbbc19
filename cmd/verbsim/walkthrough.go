package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/trace"
	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// walkthrough narrates the completion side of an HCA on live objects. Every
// result it prints is what the engine returned, not a script.
// When log is not nil the fabric records its trace there.
func walkthrough(w io.Writer, p sim.Profile, log *trace.Log) error {
	n := &narrator{w: w}
	fabric, err := sim.NewFabric(sim.Config{Profile: p, Trace: log})
	if err != nil {
		return err
	}
	dev := fabric.Devices()[0]
	vctx, err := dev.Open()
	if err != nil {
		return err
	}
	n.printf("verbsim walkthrough: completion queues, arming and events\n")
	n.printf("device %s, profile %s\n", dev.Name(), fabric.Profile())

	steps := []func(*narrator, *sim.Context) error{
		stepCreate, stepArmOnlyNew, stepSolicited, stepSpurious, stepLostWakeup, stepDestroy, stepOverrun,
	}
	for _, step := range steps {
		if err := step(n, vctx); err != nil {
			return err
		}
	}
	n.section("Done")
	n.say("Every result above came from the engine. The rules behind each step are explained in docs/cq.md, docs/notify.md and docs/channels.md; run with -profile rxe to see where soft-RoCE reads them differently.")
	return n.err
}

// outcome renders a verb's error the way the walkthrough prints results.
func outcome(err error) string {
	if err == nil {
		return "ok"
	}
	var e *verr.Error
	if errors.As(err, &e) {
		return verr.Name(e.Errno) + " (" + e.Reason + ")"
	}
	return err.Error()
}

func recv(id uint64) verbs.WC {
	return verbs.WC{WRID: id, Status: verbs.WCSuccess, Opcode: verbs.WCRecv, ByteLen: 64, QPNum: 0x11}
}

func send(id uint64) verbs.WC {
	return verbs.WC{WRID: id, Status: verbs.WCSuccess, Opcode: verbs.WCSend, QPNum: 0x11}
}

// state is the objects the steps share.
var (
	ch *sim.CompChannel
	cq *sim.CQ
)

func stepCreate(n *narrator, vctx *sim.Context) error {
	n.section("A completion channel and a CQ")
	n.say("A CQ is a ring the adapter writes work completions into. A completion channel is where an armed CQ reports that something arrived. We ask for 4 entries; like real adapters, verbsim may round the size up (CQ-02).")
	var err error
	ch, err = vctx.CreateCompChannel()
	n.do("ibv_create_comp_channel()", outcome(err))
	if err != nil {
		return err
	}
	cq, err = vctx.CreateCQ(4, "cq-A", ch, 0)
	n.do("ibv_create_cq(cqe=4, ctx=\"cq-A\", ch)", outcome(err))
	if err != nil {
		return err
	}
	n.do("cq->cqe", cq.CQE())
	n.show("cq-A", cq, ch)
	return nil
}

func stepArmOnlyNew(n *narrator, _ *sim.Context) error {
	n.section("Arming sees only new completions")
	n.say("Two receives complete before anyone arms the CQ. Then we arm it. The two waiting completions never raise an event (NOTIFY-02): a program that arms and then blocks without polling first would wait for ever.")
	cq.Push(recv(1), false)
	cq.Push(recv(2), false)
	n.do("(adapter) completes wr_id 1 and 2", "stored")
	n.do("ibv_req_notify_cq(cq-A, 0)", outcome(cq.ReqNotify(false)))
	_, _, err := ch.TryGetEvent()
	n.do("ibv_get_cq_event (non-blocking)", outcome(err))
	n.show("cq-A", cq, ch)

	n.say("A third completion arrives after the arm: it fires the request, and the event is queued only after the completion is in the ring (NOTIFY-12). A fourth arrives too, but the arm is one-shot (NOTIFY-01): still one event.")
	cq.Push(send(3), false)
	cq.Push(send(4), false)
	n.do("(adapter) completes wr_id 3 and 4", "stored")
	n.show("cq-A", cq, ch)
	got, cqCtx, err := ch.TryGetEvent()
	n.do("ibv_get_cq_event", fmt.Sprintf("%s, cq=%v ctx=%v", outcome(err), got == cq, cqCtx))
	_, _, err = ch.TryGetEvent()
	n.do("ibv_get_cq_event again", outcome(err))
	n.say("The event carries no completion (CHAN-10); we acknowledge it (CHAN-07) and poll the ring empty.")
	n.do("ibv_ack_cq_events(cq-A, 1)", outcome(cq.AckEvents(1)))
	buf := make([]verbs.WC, 8)
	k, err := cq.Poll(buf)
	n.do("ibv_poll_cq(cq-A, 8)", fmt.Sprintf("%d completions, %s", k, outcome(err)))
	n.show("cq-A", cq, ch)
	return nil
}

func stepSolicited(n *narrator, _ *sim.Context) error {
	n.section("Solicited-only versus next")
	n.say("ibv_req_notify_cq(cq, 1) asks only for solicited receives: a message whose sender set IBV_SEND_SOLICITED. Successful sends and ordinary receives pass by silently (NOTIFY-04).")
	n.do("ibv_req_notify_cq(cq-A, 1)", outcome(cq.ReqNotify(true)))
	cq.Push(send(5), false)
	cq.Push(recv(6), false)
	n.do("(adapter) send 5 and plain receive 6", "stored")
	_, _, err := ch.TryGetEvent()
	n.do("ibv_get_cq_event (non-blocking)", outcome(err))
	cq.Push(recv(7), true)
	n.do("(adapter) receive 7 with the solicited bit", "stored")
	_, _, err = ch.TryGetEvent()
	n.do("ibv_get_cq_event", outcome(err))
	cq.AckEvents(1)

	n.say("Arming for solicited and then for next leaves next pending, and so does the other order (NOTIFY-07).")
	cq.ReqNotify(true)
	cq.ReqNotify(false)
	n.do("ibv_req_notify_cq(cq-A, 1); ibv_req_notify_cq(cq-A, 0)", "arm="+cq.Armed().String())
	cq.ReqNotify(true)
	n.do("ibv_req_notify_cq(cq-A, 1) again", "arm="+cq.Armed().String())
	cq.Push(send(8), false)
	_, _, err = ch.TryGetEvent()
	n.do("(adapter) send 8; ibv_get_cq_event", outcome(err))
	cq.AckEvents(1)

	n.say("A failed completion is something a solicited-only waiter must hear about. The man pages say every unsuccessful completion fires it; soft-RoCE marks send-side completions unsolicited, so a send-side error does not (NOTIFY-05).")
	cq.ReqNotify(true)
	cq.Push(verbs.WC{WRID: 9, Status: verbs.WCWRFlushErr, QPNum: 0x11}, false)
	n.do("(adapter) send 9 completes with WR_FLUSH_ERR", "stored")
	_, _, err = ch.TryGetEvent()
	n.do("ibv_get_cq_event", outcome(err))
	if err == nil {
		cq.AckEvents(1)
	} else {
		cq.ReqNotify(false) // leave the CQ in a known state: disarm by firing
		cq.Push(send(10), false)
		ch.TryGetEvent()
		cq.AckEvents(1)
	}
	drain(cq)
	n.show("cq-A", cq, ch)
	return nil
}

func drain(q *sim.CQ) int {
	buf := make([]verbs.WC, 16)
	total := 0
	for {
		k, _ := q.Poll(buf)
		if k == 0 {
			return total
		}
		total += k
	}
}

func stepSpurious(n *narrator, _ *sim.Context) error {
	n.section("The event that finds an empty CQ")
	n.say("The correct loop is: get event, ack, re-arm, then poll until empty (NOTIFY-14). Here a completion lands after the re-arm but before the drain ends: the drain consumes it, yet it also fired the new arm. The next wake-up finds nothing to poll, and that is legal (NOTIFY-13).")
	cq.ReqNotify(false)
	cq.Push(recv(11), false)
	ch.TryGetEvent()
	n.do("(adapter) receive 11; consumer wakes", "event read")
	n.do("ibv_ack_cq_events(cq-A, 1)", outcome(cq.AckEvents(1)))
	n.do("ibv_req_notify_cq(cq-A, 0)", outcome(cq.ReqNotify(false)))
	cq.Push(recv(12), false)
	n.do("(adapter) receive 12 lands now", "stored, arm fired")
	n.do("drain: ibv_poll_cq until 0", fmt.Sprintf("%d completions", drain(cq)))
	n.show("cq-A", cq, ch)
	_, _, err := ch.TryGetEvent()
	n.do("ibv_get_cq_event", outcome(err))
	n.do("ibv_ack_cq_events(cq-A, 1)", outcome(cq.AckEvents(1)))
	n.do("ibv_poll_cq", fmt.Sprintf("%d completions: the consumer must accept this", drain(cq)))
	return nil
}

func stepLostWakeup(n *narrator, _ *sim.Context) error {
	n.section("Drain, then arm: the lost wake-up")
	n.say("The tempting order is the wrong one: poll until empty, then re-arm, then block. A completion that lands between the last empty poll and the re-arm is in the ring but was added before the arm, so it never fires (NOTIFY-02, NOTIFY-15).")
	n.do("drain: ibv_poll_cq until 0", fmt.Sprintf("%d completions", drain(cq)))
	cq.Push(recv(13), false)
	n.do("(adapter) receive 13 lands now", "stored")
	n.do("ibv_req_notify_cq(cq-A, 0)", outcome(cq.ReqNotify(false)))
	_, _, err := ch.TryGetEvent()
	n.do("ibv_get_cq_event (non-blocking)", outcome(err))
	n.show("cq-A", cq, ch)
	n.say("A blocking ibv_get_cq_event would now sleep for ever beside a non-empty CQ. The fix: poll once more after re-arming.")
	n.do("ibv_poll_cq after the re-arm", fmt.Sprintf("%d completion(s)", drain(cq)))
	return nil
}

func stepDestroy(n *narrator, _ *sim.Context) error {
	n.section("Acknowledgements and destroy")
	n.say("A channel cannot be destroyed while a CQ uses it (CHAN-09).")
	n.do("ibv_destroy_comp_channel(ch)", outcome(ch.Destroy()))
	n.say("Every event read must be acknowledged. ibv_destroy_cq waits until the acks match the events read (CQ-13); libibverbs would wait for ever, verbsim lets the caller bound the wait. We read an event, do not ack it, and give destroy 50 ms.")
	cq.Push(recv(14), false) // the arm from the previous step fires
	ch.TryGetEvent()
	n.do("(adapter) receive 14; ibv_get_cq_event", "event read, not acked")
	wait, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	err := cq.DestroyContext(wait)
	cancel()
	n.do("ibv_destroy_cq(cq-A) bounded by 50ms", outcome(err))
	n.show("cq-A", cq, ch)
	n.do("ibv_ack_cq_events(cq-A, 1)", outcome(cq.AckEvents(1)))
	n.do("ibv_destroy_cq(cq-A)", outcome(cq.Destroy()))
	n.do("ibv_destroy_cq(cq-A) again", outcome(cq.Destroy()))
	n.do("ibv_destroy_comp_channel(ch)", outcome(ch.Destroy()))
	return nil
}

func stepOverrun(n *narrator, vctx *sim.Context) error {
	n.section("Overrun into IBV_EVENT_CQ_ERR")
	n.say("A CQ of one entry receives two completions before anyone polls. The second does not fit: it is lost and the context's async queue gets IBV_EVENT_CQ_ERR naming the CQ (CQ-22).")
	small, err := vctx.CreateCQ(1, "cq-B", nil, 0)
	n.do("ibv_create_cq(cqe=1, ctx=\"cq-B\")", outcome(err))
	if err != nil {
		return err
	}
	small.Push(recv(21), false)
	over, _ := small.Push(recv(22), false)
	n.do("(adapter) completes 21 and 22", fmt.Sprintf("overrun=%v", over))
	ev, err := vctx.TryGetAsyncEvent()
	n.do("ibv_get_async_event", fmt.Sprintf("%s: %v, element is cq-B: %v", outcome(err), ev, ev.CQ() == small))
	n.do("ibv_ack_async_event", outcome(ev.Ack()))
	buf := make([]verbs.WC, 4)
	k, err := small.Poll(buf)
	n.do("ibv_poll_cq(cq-B, 4)", fmt.Sprintf("%d completion(s), %s", k, outcome(err)))
	n.say("What happens next depends on the adapter (CQ-23). By the man pages the CQ is now in error for good; soft-RoCE drops only the completion that did not fit and carries on.")
	over, _ = small.Push(recv(23), false)
	n.do("(adapter) completes 23 after the drain", fmt.Sprintf("overrun=%v", over))
	n.show("cq-B", small, nil)
	if small.Overrun() {
		n.do("CQ_ERR events raised so far", vctx.AsyncEventsRaised(verbs.EventCQErr))
	}
	for {
		ev, err := vctx.TryGetAsyncEvent()
		if err != nil {
			break
		}
		ev.Ack()
	}
	n.do("ibv_destroy_cq(cq-B)", outcome(small.Destroy()))
	n.do("ibv_close_device", outcome(vctx.Close()))
	return nil
}
