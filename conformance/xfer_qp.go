package conformance

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"syscall"

	"github.com/verbsim/verbsim/verbs"
)

// Cases of the QP and CQ families that need requests to execute:
// signaling (QP-05, CQ-19..21), send-queue capacity (QP-30), buffers read
// at execution (QP-36), FENCE (QP-38, XFER-19), SQD (QP-39), rd_atomic depth
// (QP-40), completion order (CQ-18) and overruns (CQ-24).

// xferQpCases are the cases of the QP, CQ, XFER families in xfer_qp.go.
var xferQpCases = []Case{
	{"QP-05", "with sq_sig_all set, an unsignaled request completes anyway", sqSigAll},
	{"CQ-19", "sq_sig_all=1: every send completes; 0: only signaled ones; receives always", sqSigAllOrSignaled},
	{"CQ-20", "a signaled completion covers the unsignaled requests before it", signaledCovers},
	{"WC-S00", "SUCCESS: the request and the unsignaled ones before it are done", signaledCovers},
	{"CQ-21", "a failing unsignaled request still completes, with its wr_id", unsignaledFailureCompletes},
	{"CQ-18", "per work queue, completions come in posting order, whatever finishes first", perQueueOrder},
	{"QP-30", "with sq_sig_all=0 and nothing signaled, the send queue fills for good (QP-29 A) or never (B)", unsignaledFill},
	{"QP-36", "non-inline buffers are read when the request executes, not when it is posted", bufferReadAtExecution},
	{"QP-38", "a FENCEd request waits for the READs and atomics before it", fenceWaits},
	{"XFER-19", "a FENCEd request cannot overtake a READ; completions stay in queue order anyway", fenceAfterRead},
	{"QP-39", "in SQD new send requests wait for RTS; the receive side keeps working", sqdWaits},
	{"QP-40", "max_rd_atomic bounds READs in flight without errors; max_dest_rd_atomic 0 refuses them", maxRdAtomic},
	{"CQ-24", "[CONFLICT] the QP whose completion an overrun lost: ERR, or (rxe) only on the receive side; no ACK for the lost receive", overrunLostQP},
}

func sqSigAll(t *tester, e *env) {
	w := newWire(t, e)
	o := w.opts()
	o.sigAll = true
	for _, typ := range qpTypes {
		a, b, ah := w.pair(typ, o)
		b.recvAt("a receive", 1, 0, 128)
		r := addressed(sendWR(7, verbs.WRSend, a.s.sge(0, 8)), ah, b)
		r.Flags &^= verbs.SendSignaled
		a.post("an unsignaled SEND", r)
		what := fmt.Sprintf("%v, sq_sig_all=1, unsignaled SEND", typ)
		a.want(what, w.await(a.scq, 1, what)[0], 7, verbs.WCSuccess)
	}
}

func sqSigAllOrSignaled(t *tester, e *env) {
	w := newWire(t, e)
	rng := rand.New(rand.NewPCG(19, 0x1919))
	for round := range 8 {
		o := w.opts()
		o.sigAll = round%2 == 0
		a, b := w.connect(verbs.QPTypeRC, o)
		n := 4 + rng.IntN(8)
		var want []uint64
		for i := range n {
			b.recvAt("a receive", uint64(100+i), i*64, 64)
			r := sendWR(uint64(i), verbs.WRSend, a.s.sge(0, 8))
			if rng.IntN(2) == 0 {
				r.Flags &^= verbs.SendSignaled
			}
			if o.sigAll || r.Flags&verbs.SendSignaled != 0 {
				want = append(want, uint64(i))
			}
			a.post("a SEND", r)
		}
		what := fmt.Sprintf("round %d: sq_sig_all=%v, %d SENDs", round, o.sigAll, n)
		w.await(b.rcq, n, what+": receives")
		if len(want) == 0 {
			w.quiet(a.scq, what+": no send signaled")
			continue
		}
		if ids := idsOf(w.await(a.scq, len(want), what+": sends")); !slices.Equal(ids, want) {
			t.Errorf("%s: send completions %v, want %v", what, ids, want)
		}
	}
}

func unsignaledFailureCompletes(t *tester, e *env) {
	w := newWire(t, e)
	a, b := w.connect(verbs.QPTypeRC, w.opts())
	r := rdmaWR(0xfeed, verbs.WRRDMAWrite, b.s, 0, a.s.sge(0, 8))
	r.Flags, r.RKey = 0, badKey(r.RKey)
	a.post("an unsignaled WRITE with a bad rkey", r)
	a.want("unsignaled WRITE with a bad rkey", w.await(a.scq, 1, "unsignaled error")[0], 0xfeed, verbs.WCRemAccessErr)
	o := w.opts()
	o.rnrRetry = 0
	a, _ = w.connect(verbs.QPTypeRC, o)
	r = sendWR(0xbeef, verbs.WRSend, a.s.sge(0, 8))
	r.Flags = 0
	a.post("an unsignaled SEND to an empty receive queue", r)
	a.want("unsignaled SEND, RNR exhausted", w.await(a.scq, 1, "unsignaled RNR")[0], 0xbeef, verbs.WCRNRRetryExcErr)
}

func perQueueOrder(t *tester, e *env) {
	w := newWire(t, e)
	rng := rand.New(rand.NewPCG(18, 0x1818))
	shared, rshared := w.a.cq(512, nil), w.b.cq(512, nil)
	oa, ob := w.opts(), w.opts()
	oa.sendCQ, oa.recvCQ, ob.sendCQ, ob.recvCQ = shared, shared, rshared, rshared
	oa.mtu, ob.mtu = verbs.MTU256, verbs.MTU256
	var as, bs []*end
	for range 3 {
		a, b := w.connect2(verbs.QPTypeRC, oa, ob)
		as, bs = append(as, a), append(bs, b)
	}
	want, rwant := map[uint32][]uint64{}, map[uint32][]uint64{}
	total, rtotal := 0, 0
	ops := []verbs.WROpcode{verbs.WRRDMARead, verbs.WRSend, verbs.WRRDMAWrite, verbs.WRAtomicFetchAndAdd, verbs.WRSendWithImm}
	for i := range 40 {
		k := rng.IntN(3)
		a, b := as[k], bs[k]
		op := ops[rng.IntN(len(ops))]
		n := 1 + rng.IntN(1500)
		sge := a.s.sge(8*i, n)
		if op == verbs.WRAtomicFetchAndAdd {
			sge = a.s.sge(60000+8*i, 8)
		}
		r := rdmaWR(uint64(i), op, b.s, 8*(i%8), sge)
		if rng.IntN(3) == 0 {
			r.Flags = 0
		} else {
			want[a.q.Num()] = append(want[a.q.Num()], uint64(i))
			total++
		}
		if op == verbs.WRSend || op == verbs.WRSendWithImm {
			b.recvAt("a receive", uint64(1000+i), 20000, 2000)
			rwant[b.q.Num()] = append(rwant[b.q.Num()], uint64(1000+i))
			rtotal++
		}
		a.post("a request", r)
	}
	got, rgot := map[uint32][]uint64{}, map[uint32][]uint64{}
	for _, c := range w.await(shared, total, "requesters on one CQ") {
		got[c.QPNum] = append(got[c.QPNum], c.WRID)
	}
	for _, c := range w.await(rshared, rtotal, "responders on one CQ") {
		rgot[c.QPNum] = append(rgot[c.QPNum], c.WRID)
	}
	for q, ids := range want {
		if !slices.Equal(got[q], ids) {
			t.Errorf("send queue of QP %#x: completions %v, want the posting order %v", q, got[q], ids)
		}
	}
	for q, ids := range rwant {
		if !slices.Equal(rgot[q], ids) {
			t.Errorf("receive queue of QP %#x: completions %v, want the posting order %v", q, rgot[q], ids)
		}
	}
}

func unsignaledFill(t *tester, e *env) {
	w := newWire(t, e)
	o := w.opts()
	o.cap.MaxSendWR = 8
	a, b := w.connect(verbs.QPTypeRC, o)
	attr, err := queryQP(a.q)
	if err != nil {
		t.Fatalf("ibv_query_qp: %v", err)
	}
	depth := int(attr.Cap.MaxSendWR)
	write := func(id uint64, signaled bool) verbs.SendWR {
		r := rdmaWR(id, verbs.WRRDMAWrite, b.s, 0, a.s.sge(0, 8))
		if !signaled {
			r.Flags = 0
		}
		return r
	}
	for i := range depth {
		a.post("an unsignaled WRITE", write(uint64(i), false))
	}
	if e.Profile.FreeSlotOnRetire {
		qp30OnRetire(w, a, depth, write) // QP-29 B: no ENOMEM, ever
	} else {
		for range 3 {
			w.settle()
			if got, _ := w.pollNow(a.scq); len(got) != 0 {
				t.Fatalf("unsignaled successful WRITEs completed: %s", showWCs(got))
			}
			n, err := a.q.PostSend([]verbs.SendWR{write(99, true)})
			if n != 0 || !errors.Is(err, syscall.ENOMEM) {
				t.Fatalf("after %d unsignaled WRITEs on a queue of %d: ibv_post_send = %d, %v; want ENOMEM", depth, depth, n, err)
			}
		}
	}
	// One signaled request per queue-full keeps the queue going.
	a, _ = w.connect(verbs.QPTypeRC, o)
	for round := range 4 {
		for i := range depth {
			a.post("a WRITE", write(uint64(i), i == depth-1))
		}
		a.want("the signaled WRITE of a queue-full", w.await(a.scq, 1, fmt.Sprintf("round %d", round))[0], uint64(depth-1), verbs.WCSuccess)
	}
}

func bufferReadAtExecution(t *tester, e *env) {
	w := newWire(t, e)
	for _, op := range []verbs.WROpcode{verbs.WRSend, verbs.WRRDMAWrite} {
		a, b := w.connect(verbs.QPTypeRC, w.opts())
		b.recvAt("a receive", 1, 0, 64)
		a.toState(verbs.QPStateSQD)
		fill(a.s.buf[:32], 1)
		a.post("a request posted in SQD", rdmaWR(1, op, b.s, 0, a.s.sge(0, 32)))
		fill(a.s.buf[:32], 2)
		want := bytes.Clone(a.s.buf[:32])
		a.toState(verbs.QPStateRTS)
		what := fmt.Sprintf("%v posted in SQD, its buffer changed before it executed", op)
		a.want(what, w.await(a.scq, 1, what)[0], 1, verbs.WCSuccess)
		if !bytes.Equal(b.s.buf[:32], want) {
			t.Errorf("%s: the peer got the bytes of post time, want those of execution time", what)
		}
	}
}

func fenceWaits(t *tester, e *env) {
	w := newWire(t, e)
	a, b := w.connect(verbs.QPTypeRC, w.opts())
	fill(b.s.buf[4096:4160], 0x38)
	binary.NativeEndian.PutUint64(b.s.buf[8192:], 0x3838)
	clear(a.s.buf[:128])
	b.recvAt("receive 1", 1, 0, 64)
	b.recvAt("receive 2", 2, 100, 64)
	read := rdmaWR(1, verbs.WRRDMARead, b.s, 4096, a.s.sge(0, 64))
	add := rdmaWR(2, verbs.WRAtomicFetchAndAdd, b.s, 8192, a.s.sge(64, 8))
	s1 := sendWR(3, verbs.WRSend, a.s.sge(0, 64))
	s2 := sendWR(4, verbs.WRSend, a.s.sge(64, 8))
	s1.Flags |= verbs.SendFence
	s2.Flags |= verbs.SendFence
	a.post("READ, FENCE SEND of its target, FETCH_AND_ADD, FENCE SEND of its result", read, s1, add, s2)
	w.await(a.scq, 4, "requester")
	w.await(b.rcq, 2, "responder")
	if !bytes.Equal(b.s.buf[:64], b.s.buf[4096:4160]) {
		t.Errorf("the FENCEd SEND did not carry the data its READ had fetched")
	}
	if got := binary.NativeEndian.Uint64(b.s.buf[100:]); got != 0x3838 {
		t.Errorf("the FENCEd SEND carried %#x, not the value its FETCH_AND_ADD returned (0x3838)", got)
	}
}

func fenceAfterRead(t *tester, e *env) {
	w := newWire(t, e)
	for _, fence := range []bool{true, false} {
		a, b := w.connect(verbs.QPTypeRC, w.opts())
		old := bytes.Clone(message(b.s, 0, 64, 1))
		repl := message(a.s, 1000, 64, 2)
		b.recvAt("a receive over the READ's source", 1, 0, 64)
		s := sendWR(2, verbs.WRSend, a.s.sge(1000, 64))
		if fence {
			s.Flags |= verbs.SendFence
		}
		a.post("a READ, then a SEND overwriting its source", rdmaWR(1, verbs.WRRDMARead, b.s, 0, a.s.sge(0, 64)), s)
		what := fmt.Sprintf("READ then SEND (FENCE %v) over the READ's source", fence)
		got := w.await(a.scq, 2, what)
		if ids := idsOf(got); !slices.Equal(ids, []uint64{1, 2}) {
			t.Errorf("%s: completions %v, want [1 2] (queue order)", what, ids)
		}
		w.await(b.rcq, 1, what+": responder")
		read := a.s.buf[:64]
		switch {
		case bytes.Equal(read, old):
		case !fence && bytes.Equal(read, repl):
		case fence:
			t.Errorf("%s: the READ did not return the bytes from before the SEND", what)
		default:
			t.Errorf("%s: the READ returned neither the bytes from before the SEND nor those after", what)
		}
	}
}

func sqdWaits(t *tester, e *env) {
	w := newWire(t, e)
	for _, typ := range []verbs.QPType{verbs.QPTypeRC, verbs.QPTypeUC} {
		a, b := w.connect(typ, w.opts())
		a.toState(verbs.QPStateSQD)
		b.recvAt("B's receive", 1, 0, 64)
		a.post("a SEND posted in SQD", sendWR(1, verbs.WRSend, a.s.sge(0, 8)))
		what := fmt.Sprintf("%v SEND posted in SQD", typ)
		w.quiet(a.scq, what)
		w.quiet(b.rcq, what+": the peer")
		a.recvAt("A's receive", 2, 0, 64)
		b.post("a SEND to the QP in SQD", sendWR(3, verbs.WRSend, b.s.sge(0, 8)))
		w.await(b.scq, 1, what+": the peer's SEND")
		a.want(what+": receiving in SQD", w.await(a.rcq, 1, "A receiving in SQD")[0], 2, verbs.WCSuccess)
		a.toState(verbs.QPStateRTS)
		a.want(what+", then RTS", w.await(a.scq, 1, what+", then RTS")[0], 1, verbs.WCSuccess)
		b.want(what+", then RTS: the peer", w.await(b.rcq, 1, "the peer")[0], 1, verbs.WCSuccess)
	}
}

func maxRdAtomic(t *tester, e *env) {
	w := newWire(t, e)
	o := w.opts()
	o.rdAtomic = 1
	a, b := w.connect(verbs.QPTypeRC, o)
	fill(b.s.buf[:4096], 40)
	var reqs []verbs.SendWR
	for i := range 6 {
		op := verbs.WRRDMARead
		if i%3 == 2 {
			op = verbs.WRAtomicFetchAndAdd
		}
		r := rdmaWR(uint64(i), op, b.s, 512*i, a.s.sge(512*i, 512))
		if op != verbs.WRRDMARead {
			r.SGList[0].Length = 8
			r.CompareAdd = 1
		}
		reqs = append(reqs, r)
	}
	a.post("six READs and atomics, max_rd_atomic 1", reqs...)
	for i, c := range w.await(a.scq, 6, "max_rd_atomic 1") {
		a.want("a READ or atomic beyond max_rd_atomic", c, uint64(i), verbs.WCSuccess)
	}
	if !bytes.Equal(a.s.buf[:512], b.s.buf[:512]) || !bytes.Equal(a.s.buf[512:1024], b.s.buf[512:1024]) {
		t.Errorf("max_rd_atomic 1: the READs did not fetch the data")
	}
	for _, op := range []verbs.WROpcode{verbs.WRRDMARead, verbs.WRAtomicFetchAndAdd} {
		ob := w.opts()
		ob.destRdAtomic = 0
		a, _ := w.connect2(verbs.QPTypeRC, w.opts(), ob)
		a.post("a request to a responder with max_dest_rd_atomic 0", rdmaWR(1, op, w.b, 0, a.s.sge(0, 8)))
		what := fmt.Sprintf("%v to a responder with max_dest_rd_atomic 0", op)
		a.want(what, w.await(a.scq, 1, what)[0], 1, verbs.WCRemInvReqErr)
	}
}

func overrunLostQP(t *tester, e *env) {
	w := newWire(t, e)
	for _, side := range []string{"send", "receive", "receive (WRITE_WITH_IMM)"} {
		// Only the CQ under test is small.
		oa, ob := w.opts(), w.opts()
		if side == "send" {
			oa.scqe = 1
		} else {
			ob.rcqe = 1
		}
		a, b := w.connect2(verbs.QPTypeRC, oa, ob)
		cq := a.scq
		if side != "send" {
			cq = b.rcq
		}
		n := cq.CQE() + 1
		if n > 60 {
			t.Logf("a CQ asked for 1 entry holds %d; the overrun would need too many requests, skipped", n-1)
			return
		}
		for i := range n {
			b.recvAt("a receive", uint64(i), 64*i, 64)
			if side == "receive (WRITE_WITH_IMM)" {
				a.post("a WRITE_WITH_IMM", rdmaWR(uint64(i), verbs.WRRDMAWriteWithImm, b.s, 64*i, a.s.sge(0, 8)))
			} else {
				a.post("a SEND", sendWR(uint64(i), verbs.WRSend, a.s.sge(0, 8)))
			}
		}
		w.settle()
		x, want := a, verbs.QPStateErr
		if side != "send" {
			x = b
		} else if w.tp.OverrunSendIgnored {
			want = verbs.QPStateRTS
		}
		x.wantState(fmt.Sprintf("%d completions into a %s CQ of %d (OverrunSendIgnored=%v)", n, side, n-1, w.tp.OverrunSendIgnored), want)
		if side != "send" {
			// The responder is in ERR before it can acknowledge the
			// last message, and a QP in ERR answers nothing
			// (FLUSH-11): the requester must not see that message
			// succeed. With retry_cnt 3 it fails with RETRY_EXC_ERR.
			what := fmt.Sprintf("the requester of %d messages (%s) whose last receive completion overran", n, side)
			got := w.await(a.scq, n, what)
			for i, c := range got {
				st := verbs.WCSuccess
				if i == n-1 {
					st = verbs.WCRetryExcErr
				}
				a.want(fmt.Sprintf("%s: message %d", what, i), c, uint64(i), st)
			}
		}
		w.allEvents()
	}
}

// signaledCovers posts two unsignaled WRITEs and a signaled one: exactly one
// completion comes, and once it is there the unsignaled WRITEs are done, so
// their buffers may be reused (CQ-20, WC-S00).
func signaledCovers(t *tester, e *env) {
	w := newWire(t, e)
	a, b := w.connect(verbs.QPTypeRC, w.opts())
	want := bytes.Clone(message(a.s, 0, 64, 1))
	want2 := bytes.Clone(message(a.s, 64, 64, 2))
	u1 := rdmaWR(1, verbs.WRRDMAWrite, b.s, 1000, a.s.sge(0, 64))
	u2 := rdmaWR(2, verbs.WRRDMAWrite, b.s, 2000, a.s.sge(64, 64))
	u1.Flags, u2.Flags = 0, 0
	a.post("U, U, S", u1, u2, rdmaWR(3, verbs.WRRDMAWrite, b.s, 3000, a.s.sge(0, 8)))
	a.want("U, U, S: the one completion", w.await(a.scq, 1, "U, U, S")[0], 3, verbs.WCSuccess)
	// The unsignaled buffers may be reused now.
	clear(a.s.buf[:128])
	w.settle()
	if !bytes.Equal(b.s.buf[1000:1064], want) || !bytes.Equal(b.s.buf[2000:2064], want2) {
		t.Errorf("after the signaled completion, the unsignaled WRITEs' data is not all at the peer")
	}
}
