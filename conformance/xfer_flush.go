package conformance

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/verbsim/verbsim/verbs"
)

// Cases of errors raised by traffic: the error chain and the states it
// leads to (FLUSH-03, 09, 10, 12), the completion statuses (WC-S01..S13 as
// far as the engine produces them), and the MR and PD checks made when a
// request executes (MR-03, 07, 08, PD-04).

// situation is a situation that makes the first request of a fresh pair fail
// with a given status at the requester.
type situation struct {
	name string
	typ  verbs.QPType
	st   verbs.WCStatus
	deny verbs.AccessFlags // removed from the responder QP's access flags
	// run posts the failing request (wr_id 1) on a; it may refuse to run
	// (a device that rejects the request at post time), returning false.
	run func(w *wire, a, b *end, ah verbs.AH) bool
}

// runSituation sets up a pair of type c.typ, runs c and checks the requester's
// completion. It returns the ends for more checks, or nil.
func (w *wire) runSituation(c situation, oa, ob endOpts) (a, b *end) {
	w.t.Helper()
	ob.deny |= c.deny
	a, b = w.connect2(c.typ, oa, ob)
	var ah verbs.AH
	if c.typ == verbs.QPTypeUD {
		ah = w.ah(w.a, w.b, false)
	}
	if !c.run(w, a, b, ah) {
		return nil, nil
	}
	a.want(c.name, w.await(a.scq, 1, c.name)[0], 1, c.st)
	return a, b
}

// postOrRefuse posts r on a; EINVAL at post time is accepted as the
// provider's way of reporting the error (rxe's, for atomics).
func postOrRefuse(a *end, r verbs.SendWR) bool {
	a.s.w.t.Helper()
	n, err := a.q.PostSend([]verbs.SendWR{r})
	if n == 0 && errors.Is(err, syscall.EINVAL) {
		return false
	}
	if err != nil {
		a.s.w.t.Fatalf("ibv_post_send: %v, want success or EINVAL", err)
	}
	return true
}

// situations are the situations of WC-S01..S13 (requester side).
var situations = map[string]situation{
	"WC-S01": {"FETCH_AND_ADD with a 4-byte result buffer", verbs.QPTypeRC, verbs.WCLocLenErr, 0, func(w *wire, a, b *end, _ verbs.AH) bool {
		return postOrRefuse(a, rdmaWR(1, verbs.WRAtomicFetchAndAdd, b.s, 0, a.s.sge(0, 4)))
	}},
	"WC-S02": {"UD SEND through an AH of another PD", verbs.QPTypeUD, verbs.WCLocQPOpErr, 0, func(w *wire, a, b *end, _ verbs.AH) bool {
		other := w.pdOn(w.a.ctx)
		av := avTo(w.b, false)
		ah, err := other.CreateAH(verbs.AHAttr{PortNum: 1, DLID: av.DLID, IsGlobal: av.IsGlobal, GRH: verbs.GlobalRoute{DGID: av.GRH.DGID, HopLimit: av.GRH.HopLimit}})
		if err != nil {
			w.t.Fatalf("ibv_create_ah in another PD: %v", err)
		}
		w.t.Cleanup(func() { _ = ah.Destroy() })
		a.post("a UD SEND through another PD's AH", datagram(sendWR(1, verbs.WRSend, a.s.sge(0, 8)), ah, b))
		return true
	}},
	"WC-S04": {"RC SEND from an lkey that names no MR", verbs.QPTypeRC, verbs.WCLocProtErr, 0, func(w *wire, a, b *end, _ verbs.AH) bool {
		a.post("a SEND with a bad lkey", sendWR(1, verbs.WRSend, verbs.SGE{Addr: a.s.addr(0), Length: 8, LKey: badKey(a.s.mr.LKey())}))
		return true
	}},
	"WC-S09": {"RC WRITE to a QP without REMOTE_WRITE", verbs.QPTypeRC, verbs.WCRemInvReqErr, verbs.AccessRemoteWrite, func(w *wire, a, b *end, _ verbs.AH) bool {
		a.post("a WRITE", rdmaWR(1, verbs.WRRDMAWrite, b.s, 0, a.s.sge(0, 8)))
		return true
	}},
	"WC-S10": {"RC WRITE with an rkey that names no MR", verbs.QPTypeRC, verbs.WCRemAccessErr, 0, func(w *wire, a, b *end, _ verbs.AH) bool {
		a.post("a WRITE with a bad rkey", a.remoteReq(1, verbs.WRRDMAWrite, b.s.addr(0), badKey(b.s.mr.RKey())))
		return true
	}},
	"WC-S11": {"RC SEND into a receive with a bad lkey", verbs.QPTypeRC, verbs.WCRemOpErr, 0, func(w *wire, a, b *end, _ verbs.AH) bool {
		b.recv("a receive with a bad lkey", verbs.RecvWR{WRID: 5, SGList: []verbs.SGE{{Addr: b.s.addr(0), Length: 64, LKey: badKey(b.s.mr.LKey())}}})
		a.post("a SEND", sendWR(1, verbs.WRSend, a.s.sge(0, 8)))
		return true
	}},
	"WC-S12": {"RC SEND to a peer in ERR, retry_cnt 1", verbs.QPTypeRC, verbs.WCRetryExcErr, 0, func(w *wire, a, b *end, _ verbs.AH) bool {
		b.toState(verbs.QPStateErr)
		a.post("a SEND to a silent peer", sendWR(1, verbs.WRSend, a.s.sge(0, 8)))
		return true
	}},
	"WC-S13": {"RC SEND to an empty receive queue, rnr_retry 0", verbs.QPTypeRC, verbs.WCRNRRetryExcErr, 0, func(w *wire, a, b *end, _ verbs.AH) bool {
		a.post("a SEND without a receive", sendWR(1, verbs.WRSend, a.s.sge(0, 8)))
		return true
	}},
}

// situationCase is the case of status rule id: it runs the rule's situation
// (situations).
func situationCase(id string) Case {
	c := situations[id]
	return Case{id, fmt.Sprintf("%v: %s", c.st, c.name), func(t *tester, e *env) {
		w := newWire(t, e)
		oa, ob := w.opts(), w.opts()
		oa.retry, oa.rnrRetry = 1, 0
		a, _ := w.runSituation(c, oa, ob)
		if a != nil && c.typ == verbs.QPTypeRC {
			a.wantState(c.name, verbs.QPStateErr)
		}
	}}
}

// xferFlushCases are the cases of the WC, FLUSH, MR, PD families in xfer_flush.go.
var xferFlushCases = []Case{
	situationCase("WC-S01"),
	situationCase("WC-S02"),
	situationCase("WC-S04"),
	situationCase("WC-S09"),
	situationCase("WC-S10"),
	situationCase("WC-S11"),
	situationCase("WC-S12"),
	situationCase("WC-S13"),
	{"WC-S05", "WR_FLUSH_ERR: requests outstanding at, or posted after, entry to ERR; sends posted in SQE", wrFlushErr},
	{"FLUSH-03", "the first failing send request has its own status; every later one is flushed", firstFailureThenFlush},
	{"FLUSH-09", "an RC QP goes to ERR on any error, never to SQE", rcErrNeverSQE},
	{"FLUSH-10", "[CONFLICT] a UD or UC send error: SQE with receives going on, or (rxe) ERR", udUCSendError},
	{"FLUSH-12", "an RC responder error takes the responder to ERR and flushes its receives", rcResponderError},
	{"MR-03", "the device writes only into LOCAL_WRITE memory: READ, atomic results, receives", writesNeedLocalWrite},
	{"MR-07", "requests that reach a deregistered MR fail: REM_ACCESS_ERR remotely, LOC_PROT_ERR locally", deregisteredMR},
	{"MR-08", "keys are scoped to a PD: another PD's lkey or rkey fails", keysScopedToPD},
	{"PD-04", "a UD request whose AH is of another PD completes with LOC_QP_OP_ERR", udAHOfAnotherPD},
}

func wrFlushErr(t *tester, e *env) {
	flushOutstanding(t, e) // FLUSH-01
	flushPostedInErr(t, e) // FLUSH-05
	flushInSQE(t, e)
}

func firstFailureThenFlush(t *tester, e *env) {
	w := newWire(t, e)
	for _, c := range []struct {
		name  string
		first func(a, b *end) verbs.SendWR
		st    verbs.WCStatus
	}{
		{"a WRITE with a bad rkey", func(a, b *end) verbs.SendWR {
			return a.remoteReq(1, verbs.WRRDMAWrite, b.s.addr(0), badKey(b.s.mr.RKey()))
		}, verbs.WCRemAccessErr},
		{"a SEND with a bad lkey", func(a, b *end) verbs.SendWR {
			return sendWR(1, verbs.WRSend, verbs.SGE{Addr: a.s.addr(0), Length: 8, LKey: badKey(a.s.mr.LKey())})
		}, verbs.WCLocProtErr},
		{"a SEND meeting RNR with rnr_retry 0", func(a, b *end) verbs.SendWR {
			return sendWR(1, verbs.WRSend, a.s.sge(0, 8))
		}, verbs.WCRNRRetryExcErr},
	} {
		o := w.opts()
		o.rnrRetry = 0
		a, b := w.connect(verbs.QPTypeRC, o)
		// The later requests would fail on their own too: a bad rkey,
		// a bad lkey, a SEND without a receive.
		a.post(c.name+" and three more", c.first(a, b),
			a.remoteReq(2, verbs.WRRDMAWrite, b.s.addr(0), badKey(b.s.mr.RKey())),
			sendWR(3, verbs.WRSend, verbs.SGE{Addr: a.s.addr(0), Length: 8, LKey: badKey(a.s.mr.LKey())}),
			sendWR(4, verbs.WRSend, a.s.sge(0, 8)))
		got := w.await(a.scq, 4, c.name)
		a.want(c.name+": the first", got[0], 1, c.st)
		for i, g := range got[1:] {
			a.want(c.name+": a later request", g, uint64(i+2), verbs.WCWRFlushErr)
		}
	}
}

func rcErrNeverSQE(t *tester, e *env) {
	w := newWire(t, e)
	for _, id := range []string{"WC-S04", "WC-S10", "WC-S13"} {
		c := situations[id]
		oa := w.opts()
		oa.rnrRetry = 0
		if a, _ := w.runSituation(c, oa, w.opts()); a != nil {
			a.wantState("RC, "+c.name, verbs.QPStateErr)
		}
	}
}

func udUCSendError(t *tester, e *env) {
	w := newWire(t, e)
	for _, typ := range []verbs.QPType{verbs.QPTypeUD, verbs.QPTypeUC} {
		a, b, ah := w.pair(typ, w.opts())
		back := w.ah(w.b, w.a, false)
		g := grhLen(typ)
		a.recvAt("A's receive", 7, 0, 64+g)
		a.post("a SEND with a bad lkey, then a good one",
			addressed(sendWR(1, verbs.WRSend, verbs.SGE{Addr: a.s.addr(0), Length: 8, LKey: badKey(a.s.mr.LKey())}), ah, b),
			addressed(sendWR(2, verbs.WRSend, a.s.sge(0, 8)), ah, b))
		what := fmt.Sprintf("%v send error (NoSQE=%v)", typ, w.tp.NoSQE)
		got := w.await(a.scq, 2, what)
		a.want(what, got[0], 1, verbs.WCLocProtErr)
		a.want(what+": the next request", got[1], 2, verbs.WCWRFlushErr)
		if w.tp.NoSQE {
			a.wantState(what, verbs.QPStateErr)
			a.want(what+": A's receive", w.await(a.rcq, 1, what+": A's receive")[0], 7, verbs.WCWRFlushErr)
			continue
		}
		a.wantState(what, verbs.QPStateSQE)
		b.post("a SEND to the QP in SQE", addressed(sendWR(3, verbs.WRSend, b.s.sge(0, 8)), back, a))
		w.await(b.scq, 1, what+": the peer's SEND")
		a.want(what+": receiving in SQE", w.await(a.rcq, 1, what+": receiving in SQE")[0], 7, verbs.WCSuccess)
		a.toState(verbs.QPStateRTS)
		b.recvAt("B's receive", 8, 0, 64+g)
		a.post("a SEND after SQE→RTS", addressed(sendWR(4, verbs.WRSend, a.s.sge(0, 8)), ah, b))
		a.want(what+", back in RTS", w.await(a.scq, 1, what+", back in RTS")[0], 4, verbs.WCSuccess)
		b.want(what+", back in RTS: the peer", w.await(b.rcq, 1, "the peer")[0], 8, verbs.WCSuccess)
	}
}

func rcResponderError(t *tester, e *env) {
	w := newWire(t, e)
	for _, c := range []struct {
		name string
		deny verbs.AccessFlags
		req  func(a, b *end) verbs.SendWR
		errs int // receives completed with an error before the flushes
	}{
		{"a bad rkey", 0, func(a, b *end) verbs.SendWR {
			return a.remoteReq(1, verbs.WRRDMAWrite, b.s.addr(0), badKey(b.s.mr.RKey()))
		}, 0},
		{"a QP without REMOTE_WRITE", verbs.AccessRemoteWrite, func(a, b *end) verbs.SendWR {
			return rdmaWR(1, verbs.WRRDMAWrite, b.s, 0, a.s.sge(0, 8))
		}, 0},
		{"a SEND too long for the receive", 0, func(a, b *end) verbs.SendWR {
			return sendWR(1, verbs.WRSend, a.s.sge(0, 65))
		}, 1},
	} {
		o := w.opts()
		o.deny = c.deny
		a, b := w.connect(verbs.QPTypeRC, o)
		for i := range 3 {
			b.recvAt("a receive", uint64(10+i), 64*i, 64)
		}
		a.post(c.name, c.req(a, b))
		w.await(a.scq, 1, c.name)
		b.wantState("responder after "+c.name, verbs.QPStateErr)
		got := w.await(b.rcq, 3, "responder's receives after "+c.name)
		for i, g := range got[c.errs:] {
			b.want("responder's receive after "+c.name, g, uint64(10+c.errs+i), verbs.WCWRFlushErr)
		}
	}
}

func writesNeedLocalWrite(t *tester, e *env) {
	w := newWire(t, e)
	ro := w.e.mrReg(w.a.pd, make([]byte, 64), accessRemoteRead)
	sge := verbs.SGE{Addr: ro.Addr(), Length: 8, LKey: ro.LKey()}
	for _, op := range []verbs.WROpcode{verbs.WRRDMARead, verbs.WRAtomicFetchAndAdd} {
		a, b := w.connect(verbs.QPTypeRC, w.opts())
		a.post("into an MR without LOCAL_WRITE", rdmaWR(1, op, b.s, 0, sge))
		what := fmt.Sprintf("%v into an MR without LOCAL_WRITE", op)
		a.want(what, w.await(a.scq, 1, what)[0], 1, verbs.WCLocProtErr)
	}
	// The same MR serves as a SEND's source (MR-02) but not as a
	// receive buffer.
	a, b := w.connect(verbs.QPTypeRC, w.opts())
	rro := w.e.mrReg(w.b.pd, make([]byte, 64), 0)
	b.recv("a receive into an MR without LOCAL_WRITE", verbs.RecvWR{WRID: 5, SGList: []verbs.SGE{{Addr: rro.Addr(), Length: 64, LKey: rro.LKey()}}})
	a.post("a SEND from an MR without LOCAL_WRITE", sendWR(1, verbs.WRSend, sge))
	a.want("SEND into a receive without LOCAL_WRITE", w.await(a.scq, 1, "requester")[0], 1, verbs.WCRemOpErr)
	b.want("a receive into an MR without LOCAL_WRITE", w.await(b.rcq, 1, "receiver")[0], 5, w.badRecvStatus())
}

func deregisteredMR(t *tester, e *env) {
	w := newWire(t, e)
	a, _ := w.connect(verbs.QPTypeRC, w.opts())
	target := w.e.mrReg(w.b.pd, make([]byte, 64), accessAll)
	for i := range 2 {
		a.post("a WRITE", a.remoteReq(uint64(i), verbs.WRRDMAWrite, target.Addr(), target.RKey()))
		a.want("a WRITE before the dereg", w.await(a.scq, 1, "before")[0], uint64(i), verbs.WCSuccess)
	}
	e.WantOK("ibv_dereg_mr of the target", target.Dereg())
	a.post("a WRITE after the dereg", a.remoteReq(2, verbs.WRRDMAWrite, target.Addr(), target.RKey()))
	a.want("a WRITE to a deregistered MR", w.await(a.scq, 1, "after")[0], 2, verbs.WCRemAccessErr)
	// A request posted while its local MR lived, executed after the
	// dereg (it waits in SQD).
	a, b := w.connect(verbs.QPTypeRC, w.opts())
	src := w.e.mrReg(w.a.pd, make([]byte, 64), accessAll)
	a.toState(verbs.QPStateSQD)
	a.post("a WRITE waiting in SQD", rdmaWR(1, verbs.WRRDMAWrite, b.s, 0, verbs.SGE{Addr: src.Addr(), Length: 8, LKey: src.LKey()}))
	e.WantOK("ibv_dereg_mr of the source", src.Dereg())
	a.toState(verbs.QPStateRTS)
	a.want("a WRITE whose source was deregistered before it ran", w.await(a.scq, 1, "local")[0], 1, verbs.WCLocProtErr)
	// A receive whose buffer was deregistered after it was posted.
	a, b = w.connect(verbs.QPTypeRC, w.opts())
	dst := w.e.mrReg(w.b.pd, make([]byte, 64), accessAll)
	b.recv("a receive", verbs.RecvWR{WRID: 5, SGList: []verbs.SGE{{Addr: dst.Addr(), Length: 64, LKey: dst.LKey()}}})
	e.WantOK("ibv_dereg_mr of the receive buffer", dst.Dereg())
	a.post("a SEND into it", sendWR(1, verbs.WRSend, a.s.sge(0, 8)))
	a.want("a SEND into a deregistered receive buffer", w.await(a.scq, 1, "receive")[0], 1, verbs.WCRemOpErr)
	b.want("a receive whose buffer was deregistered", w.await(b.rcq, 1, "receiver")[0], 5, w.badRecvStatus())
}

func keysScopedToPD(t *tester, e *env) {
	w := newWire(t, e)
	other := w.e.mrReg(w.pdOn(w.a.ctx), make([]byte, 64), accessAll)
	a, _ := w.connect(verbs.QPTypeRC, w.opts())
	a.post("a SEND from another PD's MR", sendWR(1, verbs.WRSend, verbs.SGE{Addr: other.Addr(), Length: 8, LKey: other.LKey()}))
	a.want("lkey of another PD", w.await(a.scq, 1, "lkey")[0], 1, verbs.WCLocProtErr)
	a, b := w.connect(verbs.QPTypeRC, w.opts())
	addr, rkey := w.target(b, remoteCase{otherPD: true})
	a.post("a WRITE to another PD's MR", a.remoteReq(1, verbs.WRRDMAWrite, addr, rkey))
	a.want("rkey of an MR in another PD than the responder QP's", w.await(a.scq, 1, "rkey")[0], 1, verbs.WCRemAccessErr)
}

func udAHOfAnotherPD(t *tester, e *env) {
	w := newWire(t, e)
	c := situations["WC-S02"]
	w.runSituation(c, w.opts(), w.opts())
}

// flushInSQE makes a UD send fail (a bad lkey), which takes the QP to SQE
// (or, under the NoSQE reading, to ERR; FLUSH-10), and checks that the send
// outstanding then and one posted afterwards complete with WR_FLUSH_ERR.
func flushInSQE(t *tester, e *env) {
	t.Helper()
	w := newWire(t, e)
	a, b, ah := w.pair(verbs.QPTypeUD, w.opts())
	a.post("a UD SEND with a bad lkey, then a good one",
		datagram(sendWR(1, verbs.WRSend, verbs.SGE{Addr: a.s.addr(0), Length: 8, LKey: badKey(a.s.mr.LKey())}), ah, b),
		datagram(sendWR(2, verbs.WRSend, a.s.sge(0, 8)), ah, b))
	state := verbs.QPStateSQE
	if w.tp.NoSQE {
		state = verbs.QPStateErr
	}
	what := fmt.Sprintf("UD send error (NoSQE=%v)", w.tp.NoSQE)
	got := w.await(a.scq, 2, what)
	a.want(what, got[0], 1, verbs.WCLocProtErr)
	a.want(what+": the send outstanding", got[1], 2, verbs.WCWRFlushErr)
	a.wantState(what, state)
	a.post(fmt.Sprintf("a UD SEND posted in %v", state), datagram(sendWR(3, verbs.WRSend, a.s.sge(0, 8)), ah, b))
	a.want(fmt.Sprintf("%s: a send posted in %v", what, state), w.await(a.scq, 1, what+": a send posted afterwards")[0], 3, verbs.WCWRFlushErr)
}
