package conformance

import (
	"fmt"

	"github.com/verbsim/verbsim/verbs"
)

// Cases of the completion statuses that ordinary traffic does not produce:
// the reliable datagram statuses (WC-S03, S14, S15, S17, S18), which an RC,
// UC or UD QP can never meet, MW_BIND_ERR (WC-S06), which only a failed
// memory-window bind produces (MW-05), and those that need a broken adapter
// (WC-S07, S08, S16, S19..S21). Each case makes the adapter fail one
// request with the status (conformance.StatusForcer, as a fault would) on a
// connected RC pair, once on the send side and once on the receive side,
// and checks what a consumer sees: a completion with exactly that status,
// the request's wr_id and the QP's number, and no other field read (WC-03,
// FLUSH-06); the QP in ERR (FLUSH-09) with the requests after the failed
// one and those still outstanding on its other queue flushed (FLUSH-01,
// FLUSH-03); and the peer untouched, since the fault is local: it stays in
// RTS, its own completions succeed and no async event names it.
//
// That the engine never produces the reliable datagram and tag-matching
// statuses by itself is checked wherever completions are
// polled: by every transport case (wire.pollNow) and by the traffic state
// machine.

// forcedRows lists the status rows checked by forcing, with what the row says
// of them.
var forcedRows = []struct {
	id   string
	st   verbs.WCStatus
	what string
}{
	{"WC-S03", verbs.WCLocEECOpErr, "an EE-context error (RD only)"},
	{"WC-S06", verbs.WCMWBindErr, "a failed memory-window bind"},
	{"WC-S07", verbs.WCBadRespErr, "a response with an unexpected opcode"},
	{"WC-S08", verbs.WCLocAccessErr, "a responder's local access error"},
	{"WC-S14", verbs.WCLocRDDViolErr, "an RDD violation (RD only)"},
	{"WC-S15", verbs.WCRemInvRDReqErr, "an invalid RD request (RD only)"},
	{"WC-S16", verbs.WCRemAbortErr, "a remote abort"},
	{"WC-S17", verbs.WCInvEECNErr, "an invalid EE-context number (RD only)"},
	{"WC-S18", verbs.WCInvEECStateErr, "an invalid EE-context state (RD only)"},
	{"WC-S19", verbs.WCFatalErr, "a catastrophic error"},
	{"WC-S20", verbs.WCRespTimeoutErr, "a response timeout"},
	{"WC-S21", verbs.WCGeneralErr, "any other error"},
}

// forcer returns x's StatusForcer, or nil after logging that the case is
// not checked.
func forcer(t *tester, x *end) StatusForcer {
	t.Helper()
	f, ok := x.q.(StatusForcer)
	if !ok {
		// Real hardware offers no way to fail a request on purpose.
		t.Logf("not checked: the QP cannot be made to fail a request (conformance.StatusForcer)")
	}
	return f
}

// forcedCase forces st on a send request, then on a receive request.
func forcedCase(st verbs.WCStatus) func(t *tester, e *env) {
	return func(t *tester, e *env) {
		w := newWire(t, e)
		forcedSend(w, st)
		forcedRecv(w, st)
	}
}

// forcedSend fails the second of three SENDs of A with st. B receives all
// three messages (the fault strikes A's completion, not the wire), and A's
// own receive is flushed with its send queue.
func forcedSend(w *wire, st verbs.WCStatus) {
	w.t.Helper()
	a, b := w.connect(verbs.QPTypeRC, w.opts())
	f := forcer(w.t, a)
	if f == nil {
		return
	}
	what := fmt.Sprintf("%v forced on the second of three SENDs", st)
	for i := range 3 {
		b.recvAt("B's receive", uint64(11+i), 64*i, 64)
	}
	a.recvAt("A's receive", 9, 0, 64)
	w.e.WantOK("forcing the status", f.ForceStatus(2, false, st))
	w.forcing = true
	a.post("three SENDs", sendWR(1, verbs.WRSend, a.s.sge(0, 8)), sendWR(2, verbs.WRSend, a.s.sge(8, 8)), sendWR(3, verbs.WRSend, a.s.sge(16, 8)))
	got := w.await(a.scq, 3, what)
	a.want(what+": the first", got[0], 1, verbs.WCSuccess)
	a.want(what+": the forced one", got[1], 2, st)
	a.want(what+": the one after it", got[2], 3, verbs.WCWRFlushErr)
	a.want(what+": A's outstanding receive", w.await(a.rcq, 1, what+": A's receive")[0], 9, verbs.WCWRFlushErr)
	a.wantState(what, verbs.QPStateErr)
	w.peerUntouched(b, what, 3)
}

// forcedRecv fails the second of three receives of B with st while A
// sends two messages: B's third receive is flushed, and A's SENDs, which B
// acknowledged, succeed.
func forcedRecv(w *wire, st verbs.WCStatus) {
	w.t.Helper()
	a, b := w.connect(verbs.QPTypeRC, w.opts())
	f := forcer(w.t, b)
	if f == nil {
		return
	}
	what := fmt.Sprintf("%v forced on the second of three receives", st)
	for i := range 3 {
		b.recvAt("B's receive", uint64(11+i), 64*i, 64)
	}
	w.e.WantOK("forcing the status", f.ForceStatus(12, true, st))
	w.forcing = true
	a.post("two SENDs", sendWR(1, verbs.WRSend, a.s.sge(0, 8)), sendWR(2, verbs.WRSend, a.s.sge(8, 8)))
	got := w.await(b.rcq, 3, what)
	b.want(what+": the first", got[0], 11, verbs.WCSuccess)
	b.want(what+": the forced one", got[1], 12, st)
	b.want(what+": the one after it", got[2], 13, verbs.WCWRFlushErr)
	b.wantState(what, verbs.QPStateErr)
	w.peerUntouched(a, what, 0)
	sends := w.await(a.scq, 2, what+": the peer's SENDs")
	for i, c := range sends {
		a.want(what+": the peer's SEND", c, uint64(1+i), verbs.WCSuccess)
	}
}

// peerUntouched checks that the fault of the other QP left peer alone: in
// RTS, its first recvs receive completions successful, and no async event
// naming it.
func (w *wire) peerUntouched(peer *end, what string, recvs int) {
	w.t.Helper()
	if recvs > 0 {
		for i, c := range w.await(peer.rcq, recvs, what+": the peer's receives") {
			peer.want(what+": the peer's receive", c, uint64(11+i), verbs.WCSuccess)
		}
	}
	peer.wantState(what+": the peer", verbs.QPStateRTS)
	for _, ev := range w.allEvents() {
		if ev.obj == any(peer.q) {
			w.t.Errorf("%s: async event %v names the peer, whose requests did not fail", what, ev.typ)
		}
	}
}

// xferForcedCases are the status rows checked by forcing (forcedRows), one case
// each.
var xferForcedCases = forcedCases()

func forcedCases() []Case {
	cs := make([]Case, len(forcedRows))
	for i, c := range forcedRows {
		cs[i] = Case{c.id, fmt.Sprintf("%v, forced on a send and on a receive: the consumer sees it, the QP errs, its peer does not", c.st), forcedCase(c.st)}
	}
	return cs
}
