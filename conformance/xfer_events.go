package conformance

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/verbsim/verbsim/verbs"
)

// Cases of events that traffic raises: the solicited-event bit (NOTIFY-06)
// and the responder's QP events (ASYNC-11, ASYNC-12), and SQ_DRAINED after
// requests in flight (ASYNC-13).

// eventOn reads at most one completion event from ch, acking it on q, and
// reports whether there was one.
func (w *wire) eventOn(ch verbs.CompChannel, q verbs.CQ) bool {
	w.t.Helper()
	w.settle()
	got, _, err := ch.TryGetEvent()
	if errors.Is(err, syscall.EAGAIN) {
		return false
	}
	if err != nil {
		w.t.Fatalf("ibv_get_cq_event: %v", err)
	}
	if got != q {
		w.t.Errorf("the event names another CQ")
	}
	w.e.WantOK("ibv_ack_cq_events", q.AckEvents(1))
	return true
}

// xferEventsCases are the cases of the NOTIFY, ASYNC families in xfer_events.go.
var xferEventsCases = []Case{
	{"NOTIFY-06", "IBV_SEND_SOLICITED sets the SE bit of SENDs and WRITE_WITH_IMM; nothing else completes remotely", solicitedBit},
	{"NOTIFY-04", "a solicited-only arm: a SEND with SOLICITED fires it; plain SENDs and send completions do not", solicitedArmTraffic},
	{"NOTIFY-05", "[CONFLICT] errors and flushes from traffic wake a solicited-only arm: all (default), or per rxe", solicitedArmTrafficErrors},
	{"ASYNC-11", "[IMPL] responder errors raise QP_REQ_ERR or QP_ACCESS_ERR, or (rxe) no event at all", responderErrorEvents},
	{"ASYNC-12", "COMM_EST: the first packet reaching a QP in RTR, once (not under the rxe reading)", commEst},
	{"ASYNC-08", "QP_FATAL: a catastrophic work-queue error takes the QP to ERR and names it (not under the rxe reading)", qpFatal},
	{"ASYNC-13", "SQ_DRAINED comes once the requests in flight at RTS→SQD have completed", sqDrainedAfterInFlight},
}

func solicitedBit(t *tester, e *env) {
	w := newWire(t, e)
	for _, c := range []struct {
		typ       verbs.QPType
		op        verbs.WROpcode
		solicited bool
		fires     bool // a solicited-only arm fires
		recv      bool // the responder gets a completion
	}{
		{verbs.QPTypeRC, verbs.WRSend, false, false, true},
		{verbs.QPTypeRC, verbs.WRSend, true, true, true},
		{verbs.QPTypeRC, verbs.WRSendWithImm, true, true, true},
		{verbs.QPTypeRC, verbs.WRRDMAWriteWithImm, true, true, true},
		{verbs.QPTypeRC, verbs.WRRDMAWriteWithImm, false, false, true},
		{verbs.QPTypeRC, verbs.WRRDMAWrite, true, false, false},
		{verbs.QPTypeUC, verbs.WRSend, true, true, true},
		{verbs.QPTypeUC, verbs.WRRDMAWrite, true, false, false},
		{verbs.QPTypeUD, verbs.WRSend, true, true, true},
		{verbs.QPTypeUD, verbs.WRSend, false, false, true},
	} {
		ob := w.opts()
		ob.recvCh = w.b.channel()
		a, b := w.connect2(c.typ, w.opts(), ob)
		var ah verbs.AH
		if c.typ == verbs.QPTypeUD {
			ah = w.ah(w.a, w.b, false)
		}
		b.recvAt("a receive", 1, 0, 128)
		e.WantOK("ibv_req_notify_cq(solicited_only=1)", b.rcq.ReqNotify(true))
		r := addressed(rdmaWR(1, c.op, b.s, 1024, a.s.sge(0, 8)), ah, b)
		if c.solicited {
			r.Flags |= verbs.SendSolicited
		}
		a.post("the request", r)
		what := fmt.Sprintf("%v %v, SOLICITED %v", c.typ, c.op, c.solicited)
		w.await(a.scq, 1, what+": requester")
		if c.recv {
			w.await(b.rcq, 1, what+": responder")
		} else {
			w.quiet(b.rcq, what+": responder")
		}
		if got := w.eventOn(ob.recvCh, b.rcq); got != c.fires {
			t.Errorf("%s: a solicited-only arm fired: %v, want %v", what, got, c.fires)
		}
	}
}

func solicitedArmTraffic(t *tester, e *env) {
	w := newWire(t, e)
	oa, ob := w.opts(), w.opts()
	oa.sendCh, ob.recvCh = w.a.channel(), w.b.channel()
	a, b := w.connect2(verbs.QPTypeRC, oa, ob)
	for i, sol := range []bool{false, true, false} {
		b.recvAt("a receive", uint64(i), 0, 64)
		e.WantOK("arming the responder's CQ", b.rcq.ReqNotify(true))
		e.WantOK("arming the requester's CQ", a.scq.ReqNotify(true))
		r := sendWR(uint64(i), verbs.WRSend, a.s.sge(0, 8))
		if sol {
			r.Flags |= verbs.SendSolicited
		}
		a.post("a SEND", r)
		what := fmt.Sprintf("SEND %d, SOLICITED %v", i, sol)
		w.await(a.scq, 1, what+": requester")
		w.await(b.rcq, 1, what+": responder")
		if got := w.eventOn(ob.recvCh, b.rcq); got != sol {
			t.Errorf("%s: the responder's solicited-only arm fired: %v, want %v", what, got, sol)
		}
		if w.eventOn(oa.sendCh, a.scq) {
			t.Errorf("%s: a successful send completion fired a solicited-only arm", what)
		}
	}
}

func solicitedArmTrafficErrors(t *tester, e *env) {
	w := newWire(t, e)
	rxe := e.Profile.SolicitedBitOnly
	oa, ob := w.opts(), w.opts()
	oa.sendCh, ob.recvCh = w.a.channel(), w.b.channel()
	a, b := w.connect2(verbs.QPTypeRC, oa, ob)
	// A receive error caused by a packet without SE: too long a SEND.
	b.recvAt("a 10-byte receive", 1, 0, 10)
	e.WantOK("arming the responder's CQ", b.rcq.ReqNotify(true))
	e.WantOK("arming the requester's CQ", a.scq.ReqNotify(true))
	a.post("a 20-byte SEND without SOLICITED, then another", sendWR(1, verbs.WRSend, a.s.sge(0, 20)), sendWR(2, verbs.WRSend, a.s.sge(0, 8)))
	w.await(a.scq, 2, "requester: an error and a flush")
	w.await(b.rcq, 1, "responder: a receive error")
	bug := ""
	if rxe {
		bug = "rxe-recv-error-se"
	}
	got := w.eventOn(ob.recvCh, b.rcq)
	w.expect(bug, got == !rxe, "receive error of a packet without SE (SolicitedBitOnly=%v): the arm fired: %v, want %v", rxe, got, !rxe)
	if got := w.eventOn(oa.sendCh, a.scq); got != !rxe {
		t.Errorf("send error and flush (SolicitedBitOnly=%v): the arm fired: %v, want %v", rxe, got, !rxe)
	}
	// A receive flush (no packet) fires under both readings.
	e.WantOK("arming the responder's CQ", b.rcq.ReqNotify(true))
	b.recvAt("a receive posted in ERR", 2, 0, 64)
	w.await(b.rcq, 1, "a flushed receive")
	if !w.eventOn(ob.recvCh, b.rcq) {
		t.Errorf("a receive flush did not fire a solicited-only arm")
	}
}

func responderErrorEvents(t *tester, e *env) {
	w := newWire(t, e)
	for _, c := range []struct {
		name string
		deny verbs.AccessFlags
		run  func(a, b *end)
	}{
		{"WRITE with a bad rkey", 0, func(a, b *end) {
			a.post("a bad WRITE", a.remoteReq(1, verbs.WRRDMAWrite, b.s.addr(0), badKey(b.s.mr.RKey())))
		}},
		{"READ from a QP without REMOTE_READ", verbs.AccessRemoteRead, func(a, b *end) {
			a.post("a READ", rdmaWR(1, verbs.WRRDMARead, b.s, 0, a.s.sge(0, 8)))
		}},
		{"SEND into a receive with a bad lkey", 0, func(a, b *end) {
			b.recv("a bad receive", verbs.RecvWR{WRID: 1, SGList: []verbs.SGE{{Addr: b.s.addr(0), Length: 64, LKey: badKey(b.s.mr.LKey())}}})
			a.post("a SEND", sendWR(1, verbs.WRSend, a.s.sge(0, 8)))
		}},
	} {
		o := w.opts()
		o.deny = c.deny
		a, b := w.connect(verbs.QPTypeRC, o)
		c.run(a, b)
		w.await(a.scq, 1, c.name)
		evs := w.allEvents()
		n := eventsAbout(evs, verbs.EventQPReqErr, b.q) + eventsAbout(evs, verbs.EventQPAccessErr, b.q)
		want := 1
		if w.tp.NoQPEvents {
			want = 0
		}
		if n != want || len(evs) != n+eventsAbout(evs, verbs.EventCommEst, b.q) {
			t.Errorf("%s (NoQPEvents=%v): events %v, want %d QP_REQ_ERR or QP_ACCESS_ERR naming the responder and nothing else", c.name, w.tp.NoQPEvents, evs, want)
		}
	}
}

func commEst(t *tester, e *env) {
	w := newWire(t, e)
	for _, typ := range []verbs.QPType{verbs.QPTypeRC, verbs.QPTypeUC} {
		ob := w.opts()
		ob.upTo = verbs.QPStateRTR
		a, b := w.connect2(typ, w.opts(), ob)
		b.recvAt("receive 1", 1, 0, 64)
		b.recvAt("receive 2", 2, 64, 64)
		a.post("two SENDs to a QP in RTR", sendWR(1, verbs.WRSend, a.s.sge(0, 8)), sendWR(2, verbs.WRSend, a.s.sge(0, 8)))
		what := fmt.Sprintf("%v, two SENDs to a QP in RTR", typ)
		w.await(b.rcq, 2, what+": the QP in RTR receives")
		want := 1
		if w.tp.NoQPEvents {
			want = 0
		}
		evs := w.allEvents()
		if got := eventsAbout(evs, verbs.EventCommEst, b.q); got != want {
			t.Errorf("%s (NoQPEvents=%v): %d COMM_EST naming it, want %d; events %v", what, w.tp.NoQPEvents, got, want, evs)
		}
		if got := eventsAbout(evs, verbs.EventCommEst, a.q); got != 0 {
			t.Errorf("%s: COMM_EST names the sender in RTS", what)
		}
	}
}

func qpFatal(t *tester, e *env) {
	w := newWire(t, e)
	a, b := w.connect(verbs.QPTypeRC, w.opts())
	fi, ok := a.q.(FatalInjector)
	if !ok {
		// Real hardware offers no way to cause this on purpose.
		t.Logf("ASYNC-08 not checked: the QP cannot be made to fail (conformance.FatalInjector)")
		return
	}
	b.recvAt("a receive", 1, 0, 64)
	a.recvAt("a receive of its own", 9, 0, 64)
	e.WantOK("inject a fatal error", fi.InjectFatal())
	w.await(a.rcq, 1, "the fatal QP's receive")
	a.wantState("after the fatal error", verbs.QPStateErr)
	want := 1
	if w.tp.NoQPEvents {
		want = 0
	}
	evs := w.allEvents()
	if got := eventsAbout(evs, verbs.EventQPFatal, a.q); got != want {
		t.Errorf("%d QP_FATAL naming the QP (NoQPEvents=%v), want %d; events %v", got, w.tp.NoQPEvents, want, evs)
	}
	if got := eventsAbout(evs, verbs.EventQPFatal, b.q); got != 0 {
		t.Errorf("QP_FATAL names the peer")
	}
}

func sqDrainedAfterInFlight(t *tester, e *env) {
	w := newWire(t, e)
	f, faults := e.Dev.(Faults)
	for _, lost := range []bool{true, false} {
		if lost && !faults {
			continue
		}
		for _, ask := range []bool{true, false} {
			drainUnder(w, f, lost, ask)
		}
	}
}

// drainUnder moves an RC QP to SQD while a SEND is in flight and checks the
// drain: sq_draining, then exactly the SQ_DRAINED the reading wants once the
// SEND completes. The SEND is in flight either because its packets are
// lost (lost: the ACK timeout resends it once the wire is clean again) or
// because the responder has no receive (RNR waits until one is posted).
func drainUnder(w *wire, f Faults, lost, ask bool) {
	w.t.Helper()
	o := w.opts()
	o.minRNR = 14 // 1.28 ms: settling for a virtual second costs few RNR rounds
	a, b := w.connect(verbs.QPTypeRC, o)
	if lost {
		b.recvAt("the receive", 1, 0, 64)
		w.e.WantOK("dropping every packet", f.SetFaults(1, 0, 0))
		defer func() { _ = f.SetFaults(0, 0, 0) }()
	}
	a.post("a SEND", sendWR(1, verbs.WRSend, a.s.sge(0, 8)))
	w.pause(100_000)
	mask := verbs.QPAttrState
	if ask {
		mask |= verbs.QPAttrEnSQDAsyncNotify
	}
	w.modify(a, "RTS→SQD", verbs.QPAttr{QPState: verbs.QPStateSQD, EnSQDAsyncNotify: ask}, mask)
	what := fmt.Sprintf("RTS→SQD, en_sqd_async_notify=%v, with a SEND in flight (lost packets %v, RNR %v)", ask, lost, !lost)
	attr, err := queryQP(a.q)
	if err != nil || attr.QPState != verbs.QPStateSQD {
		w.t.Fatalf("%s: query: state %v err %v, want SQD", what, attr.QPState, err)
	}
	if !attr.SQDraining {
		w.t.Errorf("%s: sq_draining is false before the SEND completed", what)
	}
	if !lost {
		if eventsAbout(w.allEvents(), verbs.EventSQDrained, a.q) != 0 {
			w.t.Errorf("%s: SQ_DRAINED before the SEND completed", what)
		}
		b.recvAt("the receive", 1, 0, 64)
	} else {
		if eventsAbout(w.a.eventsNow(), verbs.EventSQDrained, a.q) != 0 {
			w.t.Errorf("%s: SQ_DRAINED before the SEND completed", what)
		}
		w.e.WantOK("a clean wire again", f.SetFaults(0, 0, 0))
	}
	a.want(what, w.await(a.scq, 1, what)[0], 1, verbs.WCSuccess)
	want := 0
	if ask || w.tp.AlwaysSQDrained {
		want = 1
	}
	got := eventsAbout(w.allEvents(), verbs.EventSQDrained, a.q)
	if got != want {
		w.t.Errorf("%s (AlwaysSQDrained=%v): %d SQ_DRAINED, want %d", what, w.tp.AlwaysSQDrained, got, want)
	}
	if attr, err := queryQP(a.q); err != nil || attr.SQDraining {
		w.t.Errorf("%s: after the drain sq_draining is %v (err %v), want false", what, attr.SQDraining, err)
	}
}
