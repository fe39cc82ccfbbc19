package scenario

// engine_poll.go holds the completion commands: poll_cq, req_notify_cq,
// get_cq_event and ack_cq_events.

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// doPollCQ runs poll_cq (ibv_poll_cq, or the poll iterator).
func (in *interp) doPollCQ(_ *Step, a *args) error {
	c := a.ref("cq", "cq")
	if a.err != nil {
		return a.err
	}
	n := int(min(a.num("n", 16), 1024))
	buf := make([]verbs.WC, n)
	poll, call := in.obj.cq[c].Poll, fmt.Sprintf("ibv_poll_cq(%s, %d)", c, n)
	if a.has("ex") {
		poll = func(wcs []verbs.WC) (int, error) { return pollEx(in.obj.cq[c], wcs) }
		call = fmt.Sprintf("the poll iterator of %s (ibv_start_poll, ibv_next_poll, ibv_end_poll), up to %d", c, n)
	}
	got, err := poll(buf)
	if err != nil {
		in.verbResult(call, err)
		return nil
	}
	if got == 0 {
		in.say("%s = 0: the CQ is empty", call)
		in.note("CQ-14")
		return nil
	}
	in.say("%s = %d, oldest first:", call, got)
	for _, w := range buf[:got] {
		in.say("  %s", in.describeWC(in.obj.cqDev[c], w))
		in.explainWC(in.obj.cqDev[c], w)
	}
	in.note("CQ-17")
	return nil
}

// doReqNotifyCQ runs req_notify_cq (ibv_req_notify_cq).
func (in *interp) doReqNotifyCQ(_ *Step, a *args) error {
	c := a.ref("cq", "cq")
	if a.err != nil {
		return a.err
	}
	q := in.obj.cq[c]
	before := q.Armed()
	sol := a.has("solicited")
	err := q.ReqNotify(sol)
	in.verbResult(fmt.Sprintf("ibv_req_notify_cq(%s, solicited_only=%d)", c, map[bool]int{false: 0, true: 1}[sol]), err)
	if err != nil {
		return nil
	}
	after := q.Armed()
	switch {
	case before == sim.CQArmNext && sol:
		in.say("the CQ stays armed for next: next outranks solicited")
		in.note("NOTIFY-07")
	case before == sim.CQArmSolicited && !sol:
		in.note("NOTIFY-07")
	case before == after && before != sim.CQDisarmed:
		in.note("NOTIFY-08")
	}
	if q.Len() > 0 {
		in.say("%d completion(s) already in the CQ: they will not fire this arm", q.Len())
		in.note("NOTIFY-02")
	}
	if sol {
		in.note("NOTIFY-04")
	} else {
		in.note("NOTIFY-03")
	}
	return nil
}

// doGetCQEvent runs get_cq_event (ibv_get_cq_event, not blocking).
func (in *interp) doGetCQEvent(_ *Step, a *args) error {
	n := a.ref("channel", "channel")
	if a.err != nil {
		return a.err
	}
	q, ctx, err := in.obj.ch[n].TryGetEvent()
	if err != nil {
		in.verbResult("ibv_get_cq_event("+n+")", err)
		if errors.Is(err, syscall.EAGAIN) {
			in.say("(a blocking read would sleep here)")
			in.note("CHAN-04")
		}
		return nil
	}
	in.say("ibv_get_cq_event(%s) = ok: cq %v (cq_context %q); the event carries no completion", n, in.cqName(q), fmt.Sprint(ctx))
	in.note("CHAN-10", "CHAN-07")
	if q.Len() == 0 {
		in.say("the CQ is empty: an event with nothing to poll is legal")
		in.note("NOTIFY-13")
	}
	return nil
}

// doAckCQEvents runs ack_cq_events (ibv_ack_cq_events).
func (in *interp) doAckCQEvents(_ *Step, a *args) error {
	c := a.ref("cq", "cq")
	if a.err != nil {
		return a.err
	}
	k := max(min(a.int("n", 1), 1<<20), -1<<20)
	in.verbResult(fmt.Sprintf("ibv_ack_cq_events(%s, %d)", c, k), in.obj.cq[c].AckEvents(int(k)))
	in.note("CHAN-07", "CHAN-12")
	return nil
}
