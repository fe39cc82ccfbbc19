package conformance

import (
	"fmt"

	"github.com/verbsim/verbsim/verbs"
)

// Cases of the async events that traffic raises, as to what the events
// name: an SRQ limit reached because a peer's SENDs consumed its receives
// (ASYNC-15), and, for every event type the device raises, the QP, SRQ or
// port it names (ASYNC-03). The CQ_ERR half of ASYNC-03 is in async.go.

// srqOn creates an SRQ of max_wr n on side s, destroyed at the end (after
// the QPs made later).
func (w *wire) srqOn(s *side, n uint32) verbs.SRQ {
	w.t.Helper()
	return w.srqIn(s, s.pd, n)
}

// srqIn is srqOn with the SRQ in pd, a PD of side s's context.
func (w *wire) srqIn(s *side, pd verbs.PD, n uint32) verbs.SRQ {
	w.t.Helper()
	srq, err := pd.CreateSRQ(verbs.SRQInitAttr{Attr: verbs.SRQAttr{MaxWR: n, MaxSGE: 1}})
	if err != nil || srq == nil {
		w.t.Fatalf("side %s: ibv_create_srq: srq=%v err=%v", s.name, srq, err)
	}
	w.t.Cleanup(func() {
		c, cancel := graceful()
		defer cancel()
		_ = srq.DestroyContext(c)
	})
	return srq
}

// srqArm posts receives with wr_ids ids to srq (64 bytes each in side s's
// buffer) and arms its limit at limit.
func (w *wire) srqArm(s *side, srq verbs.SRQ, ids []uint64, limit uint32) {
	w.t.Helper()
	var wrs []verbs.RecvWR
	for i, id := range ids {
		wrs = append(wrs, verbs.RecvWR{WRID: id, SGList: []verbs.SGE{s.sge(4096+64*i, 64)}})
	}
	if n, err := srq.PostRecv(wrs); n != len(wrs) || err != nil {
		w.t.Fatalf("ibv_post_srq_recv of %d: %d posted, %v", len(wrs), n, err)
	}
	a := verbs.SRQAttr{SRQLimit: limit}
	w.e.WantOK(fmt.Sprintf("ibv_modify_srq(srq_limit=%d)", limit), srq.Modify(&a, verbs.SRQLimit))
}

// nameOf describes what an event names, for failure messages.
func nameOf(obj any) string {
	switch o := obj.(type) {
	case nil:
		return "nothing"
	case verbs.QP:
		return fmt.Sprintf("QP %#x", o.Num())
	case verbs.SRQ:
		return "an SRQ"
	case verbs.CQ:
		return "a CQ"
	}
	return fmt.Sprintf("%T", obj)
}

// checkNamed checks the events of evs of type typ: want of them, each naming
// obj (ASYNC-03).
func (w *wire) checkNamed(what string, evs []seenEvent, typ verbs.EventType, obj any, name string, want int) {
	w.t.Helper()
	n := 0
	for _, ev := range evs {
		if ev.typ != typ {
			continue
		}
		n++
		if ev.obj != obj {
			w.t.Errorf("%s: %v names %s, want %s", what, typ, nameOf(ev.obj), name)
		}
	}
	if n != want {
		w.t.Errorf("%s: %d %v events, want %d; events %v", what, n, typ, want, evs)
	}
}

// xferAsyncCases are the cases of the ASYNC family in xfer_async.go.
var xferAsyncCases = []Case{
	{"ASYNC-15", "SENDs from a peer drain an SRQ below its limit: SRQ_LIMIT_REACHED names that SRQ, once", srqLimitFromPeerSends},
	{"ASYNC-03", "each QP, SRQ and port event names its own QP, SRQ or port", eventObjects},
}

func srqLimitFromPeerSends(t *tester, e *env) {
	w := newWire(t, e)
	s, other := w.srqOn(w.b, 8), w.srqOn(w.b, 8)
	w.srqArm(w.b, s, idRange(1, 4), 2)
	w.srqArm(w.b, other, idRange(11, 4), 2)
	ob := w.opts()
	ob.srq = s
	a, b := w.connect2(verbs.QPTypeRC, w.opts(), ob)
	// A second pair, on the other SRQ, stays idle.
	oo := w.opts()
	oo.srq = other
	w.connect2(verbs.QPTypeRC, w.opts(), oo)
	send := func(id uint64) {
		a.post("a SEND", sendWR(id, verbs.WRSend, a.s.sge(0, 8)))
		a.want("a SEND into the SRQ", w.await(a.scq, 1, "the SEND")[0], id, verbs.WCSuccess)
		b.want("the SRQ receive it consumed", w.await(b.rcq, 1, "the SRQ receive")[0], id, verbs.WCSuccess)
	}
	send(1)
	send(2)
	if evs := w.allEvents(); len(evs) != 0 {
		t.Errorf("two of four receives consumed, limit 2: events %v, want none yet", evs)
	}
	send(3)
	evs := w.allEvents()
	w.checkNamed("three of four receives consumed, limit 2", evs, verbs.EventSRQLimitReached, any(s), "the SRQ the SENDs drained", 1)
	if len(evs) != 1 {
		t.Errorf("three of four receives consumed, limit 2: events %v, want one SRQ_LIMIT_REACHED", evs)
	}
	if a, err := s.Query(); err != nil || a.SRQLimit != 0 {
		t.Errorf("after the limit fired: srq_limit %d (err %v), want 0: the limit disarms itself", a.SRQLimit, err)
	}
	if a, err := other.Query(); err != nil || a.SRQLimit != 2 {
		t.Errorf("the SRQ nothing consumed: srq_limit %d (err %v), want 2, still armed", a.SRQLimit, err)
	}
	send(4)
	if evs := w.allEvents(); len(evs) != 0 {
		t.Errorf("the last receive consumed after the limit fired: events %v, want none", evs)
	}
}

// eventObjects raises each QP, SRQ and port event the device raises on one
// object among several alike and checks that the event names it: COMM_EST,
// QP_REQ_ERR and QP_ACCESS_ERR the responder (none under the NoQPEvents
// reading, ASYNC-11), QP_FATAL the failed QP (when it can be made to fail),
// SQ_DRAINED the drained QP, QP_LAST_WQE_REACHED the QP on an SRQ that
// erred, SRQ_LIMIT_REACHED the SRQ drained by traffic, and PORT_ERR and
// PORT_ACTIVE port 1 (when the link can be taken down).
func eventObjects(t *tester, e *env) {
	w := newWire(t, e)
	qpEvents := 1
	if w.tp.NoQPEvents {
		qpEvents = 0
	}
	// Decoys: QPs and an SRQ that raise nothing.
	decoy := w.srqOn(w.b, 8)
	w.srqArm(w.b, decoy, idRange(100, 4), 2)
	od := w.opts()
	od.srq = decoy
	w.connect2(verbs.QPTypeRC, w.opts(), od)
	w.connect(verbs.QPTypeRC, w.opts())

	// COMM_EST: the first message reaching a QP in RTR.
	ob := w.opts()
	ob.upTo = verbs.QPStateRTR
	a, b := w.connect2(verbs.QPTypeRC, w.opts(), ob)
	b.recvAt("a receive", 1, 0, 64)
	a.post("a SEND to a QP in RTR", sendWR(1, verbs.WRSend, a.s.sge(0, 8)))
	w.await(b.rcq, 1, "COMM_EST")
	w.checkNamed("COMM_EST", w.allEvents(), verbs.EventCommEst, any(b.q), "the QP in RTR", qpEvents)

	// QP_REQ_ERR and QP_ACCESS_ERR: a bad request, at the responder.
	for _, c := range []struct {
		typ  verbs.EventType
		deny verbs.AccessFlags
		key  func(b *end) uint32
	}{
		{verbs.EventQPReqErr, verbs.AccessRemoteWrite, func(b *end) uint32 { return b.s.mr.RKey() }},
		{verbs.EventQPAccessErr, 0, func(b *end) uint32 { return badKey(b.s.mr.RKey()) }},
	} {
		o := w.opts()
		o.deny = c.deny
		a, b := w.connect(verbs.QPTypeRC, o)
		a.post("a bad WRITE", a.remoteReq(1, verbs.WRRDMAWrite, b.s.addr(0), c.key(b)))
		w.await(a.scq, 1, c.typ.String())
		w.checkNamed(c.typ.String(), w.allEvents(), c.typ, any(b.q), "the responder", qpEvents)
	}

	// QP_FATAL: a catastrophic error of one QP.
	a, _ = w.connect(verbs.QPTypeRC, w.opts())
	if fi, ok := a.q.(FatalInjector); ok {
		w.e.WantOK("inject a fatal error", fi.InjectFatal())
		w.checkNamed("QP_FATAL", w.allEvents(), verbs.EventQPFatal, any(a.q), "the failed QP", qpEvents)
	}

	// SQ_DRAINED: RTS→SQD, asked for, with nothing in flight.
	a, _ = w.connect(verbs.QPTypeRC, w.opts())
	w.modify(a, "RTS→SQD", verbs.QPAttr{QPState: verbs.QPStateSQD, EnSQDAsyncNotify: true}, verbs.QPAttrState|verbs.QPAttrEnSQDAsyncNotify)
	w.checkNamed("SQ_DRAINED", w.allEvents(), verbs.EventSQDrained, any(a.q), "the drained QP", 1)

	// QP_LAST_WQE_REACHED and SRQ_LIMIT_REACHED: a peer's SENDs drain an
	// SRQ below its limit; then one of its QPs enters ERR.
	s := w.srqOn(w.b, 8)
	w.srqArm(w.b, s, idRange(1, 2), 2)
	ob = w.opts()
	ob.srq = s
	a, b = w.connect2(verbs.QPTypeRC, w.opts(), ob)
	ob2 := w.opts()
	ob2.srq = s
	w.connect2(verbs.QPTypeRC, w.opts(), ob2) // another QP on the same SRQ
	a.post("a SEND into the SRQ", sendWR(1, verbs.WRSend, a.s.sge(0, 8)))
	w.await(b.rcq, 1, "SRQ_LIMIT_REACHED")
	w.checkNamed("SRQ_LIMIT_REACHED", w.allEvents(), verbs.EventSRQLimitReached, any(s), "the SRQ the SEND drained", 1)
	b.toState(verbs.QPStateErr)
	w.checkNamed("QP_LAST_WQE_REACHED", w.allEvents(), verbs.EventQPLastWQEReached, any(b.q), "the QP on the SRQ that entered ERR", 1)

	// PORT_ERR and PORT_ACTIVE: a link flap of port 1.
	lc, ok := e.Dev.(LinkControl)
	if !ok {
		return
	}
	w.e.WantOK("link down", lc.SetPortState(1, false))
	w.e.WantOK("link up", lc.SetPortState(1, true))
	var types []verbs.EventType
	for _, ev := range w.allEvents() {
		types = append(types, ev.typ)
		if ev.port != 1 {
			t.Errorf("link flap of port 1: %v names port %d", ev.typ, ev.port)
		}
	}
	if len(types) != 2 || types[0] != verbs.EventPortErr || types[1] != verbs.EventPortActive {
		t.Errorf("link flap of port 1: events %v, want [PORT_ERR PORT_ACTIVE]", types)
	}
}
