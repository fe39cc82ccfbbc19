package conformance

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"syscall"
	"time"

	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// Cases of the posting rules that need no traffic (QP-25..35, QP-37). What
// was posted is seen through the flush completions a move to ERR produces:
// exactly the requests that were posted come back, each once, with
// FLUSH_ERR. Posted requests execute, so where the cases need send requests
// outstanding they post them where they stay so on any device (hold): on RC
// QPs in RTS, waiting for an acknowledgement that never comes, and on UC and
// UD QPs in SQD (QP-39). A UC or UD send posted in RTS completes at once
// with SUCCESS (XFER-22, XFER-26), and QP-29 checks those too. When a slot
// comes free (QP-29, QP-31) is the profile's reading: on poll (A) or when
// the request is retired (B, Profile.FreeSlotOnRetire, qp_slots.go).
//
// Left for the transport (issue #4): QP-30 (capacity reclaimed only through
// signaled completions under reading A, which needs successful ones), the
// capture of inline data at post time (QP-35) and of other buffers at
// execution (QP-36), and the execution rules QP-38..40.

// sge returns an SGE of n bytes at offset off in the world's MR.
func (w *qpWorld) sge(off, n uint32) verbs.SGE {
	return verbs.SGE{Addr: w.mr.Addr() + uint64(off), Length: n, LKey: w.mr.LKey()}
}

// sges returns n SGEs of 8 bytes each in the world's MR.
func (w *qpWorld) sges(n int) []verbs.SGE {
	out := make([]verbs.SGE, n)
	for i := range out {
		out[i] = w.sge(uint32(8*i), 8)
	}
	return out
}

// send returns a SEND with wr_id id and no SGE, suited to q's transport: a
// UD request carries the world's AH.
func (w *qpWorld) send(q verbs.QP, id uint64) verbs.SendWR {
	r := verbs.SendWR{WRID: id, Opcode: verbs.WRSend, Flags: verbs.SendSignaled}
	if w.types[q] == verbs.QPTypeUD {
		r.AH, r.RemoteQPN, r.RemoteQKey = w.udAH(), 0x42, 0x11110000
	}
	return r
}

// sendIDs returns SENDs with the given wr_ids.
func (w *qpWorld) sendIDs(q verbs.QP, ids ...uint64) []verbs.SendWR {
	out := make([]verbs.SendWR, len(ids))
	for i, id := range ids {
		out[i] = w.send(q, id)
	}
	return out
}

// recvIDs returns receive requests with the given wr_ids and one SGE each.
func (w *qpWorld) recvIDs(ids ...uint64) []verbs.RecvWR {
	out := make([]verbs.RecvWR, len(ids))
	for i, id := range ids {
		out[i] = verbs.RecvWR{WRID: id, SGList: []verbs.SGE{w.sge(0, 64)}}
	}
	return out
}

// postSend posts wrs on q and fails the case unless all of them are posted.
func (w *qpWorld) postSend(what string, q verbs.QP, wrs []verbs.SendWR) {
	w.t.Helper()
	if n, err := q.PostSend(wrs); n != len(wrs) || err != nil {
		w.t.Fatalf("%s: ibv_post_send of %d: %d posted, %v", what, len(wrs), n, err)
	}
}

// postRecv posts wrs on q and fails the case unless all of them are posted.
func (w *qpWorld) postRecv(what string, q verbs.QP, wrs []verbs.RecvWR) {
	w.t.Helper()
	if n, err := q.PostRecv(wrs); n != len(wrs) || err != nil {
		w.t.Fatalf("%s: ibv_post_recv of %d: %d posted, %v", what, len(wrs), n, err)
	}
}

// wantPost checks the result of a post: n requests posted and, when errno
// is not 0, that error.
func (w *qpWorld) wantPost(what string, n int, err error, wantN int, errno syscall.Errno) {
	w.t.Helper()
	if n != wantN {
		w.t.Errorf("%s: %d requests posted, want %d", what, n, wantN)
	}
	if errno == 0 {
		if err != nil {
			w.t.Errorf("%s: %v, want success", what, err)
		}
		return
	}
	w.e.WantErrno(what, err, errno)
}

// toErr moves q, which is in state from, to ERR.
func (w *qpWorld) toErr(q verbs.QP, from verbs.QPState) {
	w.t.Helper()
	switch from {
	case verbs.QPStateErr:
	case verbs.QPStateReset:
		w.step(q, verbs.QPStateReset, verbs.QPStateInit)
		w.step(q, verbs.QPStateInit, verbs.QPStateErr)
	default:
		w.step(q, from, verbs.QPStateErr)
	}
}

// collect polls cq until n completions have come, for up to Patience (a
// flush may finish after the modify returned, FLUSH-13), checks that no
// further completion is there, and returns the n.
func (w *qpWorld) collect(cq verbs.CQ, n int, what string) []verbs.WC {
	w.t.Helper()
	got := make([]verbs.WC, 0, n)
	buf := make([]verbs.WC, 64)
	deadline := time.Now().Add(Patience)
	var nap time.Duration
	for len(got) < n {
		k, err := cq.Poll(buf[:min(len(buf), n-len(got))])
		if err != nil {
			w.t.Fatalf("%s: ibv_poll_cq: %v", what, err)
		}
		got = append(got, buf[:k]...)
		if k == 0 {
			if time.Now().After(deadline) {
				w.t.Fatalf("%s: %d of the %d completions expected arrived within %v: %v", what, len(got), n, Patience, wrIDs(got))
			}
			nap = qpNap(nap)
		}
	}
	if k, err := cq.Poll(buf[:4]); k != 0 || err != nil {
		w.t.Errorf("%s: after the %d completions expected, the CQ had %d more (%v), err %v", what, n, k, wrIDs(buf[:k]), err)
	}
	return got
}

// qpNap sleeps a little longer than last time, from 50µs up to 10ms, and
// returns how long it slept: waiting for late completions costs little.
func qpNap(last time.Duration) time.Duration {
	d := min(max(2*last, 50*time.Microsecond), 10*time.Millisecond)
	time.Sleep(d)
	return d
}

// wrIDs returns the wr_ids of wcs.
func wrIDs(wcs []verbs.WC) []uint64 {
	out := make([]uint64, len(wcs))
	for i, c := range wcs {
		out[i] = c.WRID
	}
	return out
}

// idRange returns from, from+1, ..., from+n-1.
func idRange(from uint64, n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = from + uint64(i)
	}
	return out
}

// wantFlushes checks that wcs are flush completions with the wr_ids ids, in
// that order. Only wr_id and status are looked at (FLUSH-06).
func (w *qpWorld) wantFlushes(what string, wcs []verbs.WC, ids []uint64) {
	w.t.Helper()
	if got := wrIDs(wcs); !slices.Equal(got, ids) {
		w.t.Errorf("%s: flushed wr_ids %v, want %v", what, got, ids)
	}
	for _, c := range wcs {
		if c.Status != verbs.WCWRFlushErr {
			w.t.Errorf("%s: wr_id %d completed with %v, want WR_FLUSH_ERR", what, c.WRID, c.Status)
		}
	}
}

// qpPostStates posts one request on a fresh QP of each transport in each
// state, checks it is accepted exactly in the states ok names, then moves
// every QP to ERR and checks that exactly the accepted requests complete,
// each once: flushed, or (a UC or UD send posted in RTS, which executes at
// once, XFER-22, XFER-26) successful. Only their number is checked.
func qpPostStates(t *tester, e *env, recv bool, ok map[verbs.QPState]bool) {
	t.Helper()
	w := qpSetup(t, e)
	verb := "ibv_post_send"
	if recv {
		verb = "ibv_post_recv"
	}
	want := map[[2]uint64]int{}
	id := uint64(100)
	for _, typ := range qpTypes {
		for _, s := range qpReachable {
			q := w.at(typ, s)
			id++
			var n int
			var err error
			if recv {
				n, err = q.PostRecv(w.recvIDs(id))
			} else {
				n, err = q.PostSend(w.sendIDs(q, id))
			}
			what := fmt.Sprintf("%s on %v in %v", verb, typ, s)
			if ok[s] {
				w.wantPost(what, n, err, 1, 0)
				want[[2]uint64{uint64(q.Num()), id}]++
			} else {
				w.wantPost(what, n, err, 0, syscall.EINVAL)
			}
			w.toErr(q, s)
		}
	}
	got := map[[2]uint64]int{}
	n := 0
	for _, v := range want {
		n += v
	}
	for _, c := range w.collect(w.cq, n, "flushing every QP") {
		got[[2]uint64{uint64(c.QPNum), c.WRID}]++
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("QP %#x wr_id %d: %d flush completions, want %d", k[0], k[1], got[k], v)
		}
	}
}

// qpPostCases are the cases of the QP family in qp_post.go.
var qpPostCases = []Case{
	{"QP-25", "receive requests post in every state but RESET", postRecvStates},
	{"QP-26", "send requests post in RTS, SQD and ERR, not before RTS", postSendStates},
	{"QP-27", "a list stops at its first bad request: exactly the ones before it are posted", listStopsAtFirstBad},
	{"QP-28", "immediate errors: EINVAL for a malformed request, ENOMEM for a full queue", immediateErrors},
	{"QP-29", "at most max_send_wr sends outstanding; a slot frees when its completion is polled (A) or its request retired (B)", sendSlots},
	{"QP-31", "at most max_recv_wr receives outstanding; slots free as QP-29's reading says", recvSlots},
	{"QP-32", "num_sge up to the QP's maximum, zero included", numSGE},
	{"QP-33", "which opcodes each transport takes", opcodesPerTransport},
	{"QP-34", "FENCE only on RC; INLINE only on SEND and WRITE; SOLICITED and SIGNALED anywhere", sendFlagsPerOpcode},
	{"QP-35", "inline payload at most max_inline_data; lkeys of inline data are not checked", inlineLimit},
	{"QP-37", "destroying a QP drops its requests without completions", destroyDropsRequests},
}

func postRecvStates(t *tester, e *env) {
	qpPostStates(t, e, true, map[verbs.QPState]bool{verbs.QPStateInit: true, verbs.QPStateRTR: true, verbs.QPStateRTS: true, verbs.QPStateSQD: true, verbs.QPStateErr: true})
}

func postSendStates(t *tester, e *env) {
	qpPostStates(t, e, false, map[verbs.QPState]bool{verbs.QPStateRTS: true, verbs.QPStateSQD: true, verbs.QPStateErr: true})
}

func listStopsAtFirstBad(t *tester, e *env) {
	w := qpSetup(t, e)
	rng := rand.New(rand.NewPCG(27, 0x9927))
	for i := range 24 {
		typ := qpTypes[rng.IntN(3)]
		q, s := w.held(typ)
		c := w.query(q).Cap
		recv := rng.IntN(3) == 0
		depth := int(c.MaxSendWR)
		if recv {
			depth = int(c.MaxRecvWR)
		}
		base := uint64(1000 * (i + 1))
		n := 1 + rng.IntN(depth)
		k := rng.IntN(n)
		errno := syscall.EINVAL
		full := rng.IntN(4) == 0
		if full { // every request is good; the queue runs out at k
			n, k, errno = depth+1+rng.IntN(3), depth, syscall.ENOMEM
		}
		var got int
		var err error
		what := fmt.Sprintf("round %d: %v in %v, %d requests", i, typ, s, n)
		if recv {
			wrs := w.recvIDs(idRange(base, n)...)
			if !full {
				wrs[k].SGList = w.sges(int(c.MaxRecvSGE) + 1)
			}
			what += fmt.Sprintf(", receive list, bad at %d (%s)", k, verr.Name(errno))
			got, err = q.PostRecv(wrs)
		} else {
			wrs := w.sendIDs(q, idRange(base, n)...)
			if !full {
				qpSpoil(w, q, c, &wrs[k], rng.IntN(5))
			}
			what += fmt.Sprintf(", send list, bad at %d (%s)", k, verr.Name(errno))
			got, err = q.PostSend(wrs)
		}
		w.wantPost(what, got, err, k, errno)
		w.toErr(q, s)
		w.wantFlushes(what, w.collect(w.cq, k, what), idRange(base, k))
		if t.Failed() {
			return
		}
	}
}

func immediateErrors(t *tester, e *env) {
	w := qpSetup(t, e)
	for i, r := range []struct {
		name  string
		typ   verbs.QPType
		spoil int // qpSpoil kind
	}{
		{"num_sge above max_send_sge", verbs.QPTypeRC, 0}, {"RDMA READ on UC", verbs.QPTypeUC, 1}, {"RDMA WRITE on UD", verbs.QPTypeUD, 1},
		{"unknown opcode on RC", verbs.QPTypeRC, 1}, {"inline payload above max_inline_data", verbs.QPTypeRC, 2},
		{"FENCE on UD", verbs.QPTypeUD, 3}, {"INLINE on RDMA READ", verbs.QPTypeRC, 4},
	} {
		q := w.at(r.typ, verbs.QPStateRTS)
		wr := w.send(q, uint64(i))
		qpSpoil(w, q, w.query(q).Cap, &wr, r.spoil)
		if r.spoil == 1 && r.typ != verbs.QPTypeRC && e.Profile.TransportOpLocQPOp {
			// QP-33 reading B posts these (opcodeNotOfTransport);
			// qpSpoil gave an opcode refused under both readings.
			r.name += fmt.Sprintf(" (here %v: QP-33 reading B posts the other)", wr.Opcode)
		}
		n, err := q.PostSend([]verbs.SendWR{wr})
		w.wantPost(r.name, n, err, 0, syscall.EINVAL)
	}
	for _, typ := range qpTypes {
		q := w.at(typ, verbs.QPStateRTS)
		c := w.query(q).Cap
		n, err := q.PostRecv([]verbs.RecvWR{{WRID: 1, SGList: w.sges(int(c.MaxRecvSGE) + 1)}})
		w.wantPost(fmt.Sprintf("%v: num_sge above max_recv_sge", typ), n, err, 0, syscall.EINVAL)
		// A full queue, on a QP that holds its sends outstanding: a UC
		// or UD send in RTS may complete, and under QP-29 reading B free
		// its slot, before the list is through.
		q, s := w.held(typ)
		c = w.query(q).Cap
		sends := w.sendIDs(q, idRange(0, int(c.MaxSendWR)+1)...)
		n, err = q.PostSend(sends)
		w.wantPost(fmt.Sprintf("%v in %v: one send more than max_send_wr", typ, s), n, err, int(c.MaxSendWR), syscall.ENOMEM)
		n, err = q.PostRecv(w.recvIDs(idRange(0, int(c.MaxRecvWR)+1)...))
		w.wantPost(fmt.Sprintf("%v in %v: one receive more than max_recv_wr", typ, s), n, err, int(c.MaxRecvWR), syscall.ENOMEM)
	}
}

func sendSlots(t *tester, e *env) {
	qpCapacity(t, e, false)
}

func recvSlots(t *tester, e *env) {
	qpCapacity(t, e, true)
}

func numSGE(t *tester, e *env) {
	w := qpSetup(t, e)
	for _, typ := range qpTypes {
		q := w.at(typ, verbs.QPStateRTS)
		c := w.query(q).Cap
		for _, k := range []int{0, int(c.MaxSendSGE)} {
			wr := w.send(q, uint64(k))
			wr.SGList = w.sges(k)
			n, err := q.PostSend([]verbs.SendWR{wr})
			w.wantPost(fmt.Sprintf("%v: SEND with %d SGEs (max_send_sge %d)", typ, k, c.MaxSendSGE), n, err, 1, 0)
		}
		for _, k := range []int{0, int(c.MaxRecvSGE)} {
			n, err := q.PostRecv([]verbs.RecvWR{{WRID: uint64(k), SGList: w.sges(k)}})
			w.wantPost(fmt.Sprintf("%v: receive with %d SGEs (max_recv_sge %d)", typ, k, c.MaxRecvSGE), n, err, 1, 0)
		}
		wr := w.send(q, 99)
		wr.SGList = w.sges(int(c.MaxSendSGE) + 1)
		n, err := q.PostSend([]verbs.SendWR{wr})
		w.wantPost(fmt.Sprintf("%v: SEND with max_send_sge+1 SGEs", typ), n, err, 0, syscall.EINVAL)
	}
}

func opcodesPerTransport(t *tester, e *env) {
	w := qpSetup(t, e)
	all := []verbs.QPType{verbs.QPTypeRC, verbs.QPTypeUC, verbs.QPTypeUD}
	matrix := []struct {
		op verbs.WROpcode
		on []verbs.QPType
		// exotic opcodes need memory windows or segmentation offload,
		// which a device may lack: it may refuse them with EOPNOTSUPP.
		exotic bool
	}{
		{verbs.WRSend, all, false}, {verbs.WRSendWithImm, all, false},
		{verbs.WRRDMAWrite, all[:2], false}, {verbs.WRRDMAWriteWithImm, all[:2], false}, {verbs.WRSendWithInv, all[:2], false},
		{verbs.WRRDMARead, all[:1], false}, {verbs.WRAtomicCmpAndSwp, all[:1], false}, {verbs.WRAtomicFetchAndAdd, all[:1], false},
		{verbs.WRLocalInv, all[:2], true}, {verbs.WRBindMW, all[:2], true}, {verbs.WRTSO, all[2:], true},
	}
	for _, typ := range qpTypes {
		c := w.qpCap()
		c.MaxSendWR = uint32(min(2*len(matrix), w.lim.MaxQPWR))
		q := w.createWith(verbs.QPInitAttr{Type: typ, Cap: c, SendCQ: w.cq, RecvCQ: w.cq})
		w.walk(q, verbs.QPStateRTS)
		for i, m := range matrix {
			wr := w.send(q, uint64(i))
			wr.Opcode, wr.RemoteAddr, wr.RKey = m.op, 0x1000, 0x1234
			if m.op == verbs.WRAtomicCmpAndSwp || m.op == verbs.WRAtomicFetchAndAdd || m.op == verbs.WRRDMARead {
				wr.SGList = []verbs.SGE{w.sge(0, 8)}
			}
			n, err := q.PostSend([]verbs.SendWR{wr})
			what := fmt.Sprintf("%v on %v", m.op, typ)
			if m.exotic && errors.Is(err, syscall.EOPNOTSUPP) && n == 0 {
				continue
			}
			switch {
			case slices.Contains(m.on, typ):
				w.wantPost(what+" (allowed)", n, err, 1, 0)
			case m.op != verbs.WRTSO && lateOpcode(e.Profile, typ, m.op):
				// Reading B: posted, it fails as it executes
				// (opcodeNotOfTransport checks how).
				w.wantPost(what+" (not allowed; posted under reading B)", n, err, 1, 0)
			default:
				w.wantPost(what+" (not allowed)", n, err, 0, syscall.EINVAL)
			}
		}
	}
}

func sendFlagsPerOpcode(t *tester, e *env) {
	w := qpSetup(t, e)
	for _, typ := range qpTypes {
		q := w.at(typ, verbs.QPStateRTS)
		wr := w.send(q, 1)
		wr.Flags |= verbs.SendFence
		n, err := q.PostSend([]verbs.SendWR{wr})
		if typ == verbs.QPTypeRC {
			w.wantPost("FENCE on RC", n, err, 1, 0)
		} else {
			w.wantPost(fmt.Sprintf("FENCE on %v", typ), n, err, 0, syscall.EINVAL)
		}
		wr = w.send(q, 2)
		wr.Flags = verbs.SendSolicited // unsignaled and solicited: both fine
		w.postSend(fmt.Sprintf("SOLICITED, unsignaled SEND on %v", typ), q, []verbs.SendWR{wr})
	}
	q := w.at(verbs.QPTypeRC, verbs.QPStateRTS)
	for i, op := range []verbs.WROpcode{verbs.WRSend, verbs.WRSendWithImm, verbs.WRRDMAWrite, verbs.WRRDMAWriteWithImm, verbs.WRRDMARead, verbs.WRAtomicCmpAndSwp, verbs.WRAtomicFetchAndAdd} {
		wr := w.send(q, uint64(10+i))
		wr.Opcode, wr.Flags, wr.RemoteAddr, wr.RKey = op, verbs.SendInline|verbs.SendSignaled, 0x1000, 0x1234
		wr.SGList = []verbs.SGE{w.sge(0, 8)}
		n, err := q.PostSend([]verbs.SendWR{wr})
		switch op {
		case verbs.WRRDMARead, verbs.WRAtomicCmpAndSwp, verbs.WRAtomicFetchAndAdd:
			w.wantPost(fmt.Sprintf("INLINE on %v", op), n, err, 0, syscall.EINVAL)
		default:
			w.wantPost(fmt.Sprintf("INLINE on %v", op), n, err, 1, 0)
		}
	}
	sig := w.createWith(verbs.QPInitAttr{Type: verbs.QPTypeRC, Cap: w.qpCap(), SendCQ: w.cq, RecvCQ: w.cq, SQSigAll: true})
	w.walk(sig, verbs.QPStateRTS)
	wr := w.send(sig, 30)
	wr.Flags = verbs.SendSignaled | verbs.SendSolicited
	w.postSend("SIGNALED with sq_sig_all=1", sig, []verbs.SendWR{wr})
}

func inlineLimit(t *tester, e *env) {
	w := qpSetup(t, e)
	for _, typ := range qpTypes {
		q := w.at(typ, verbs.QPStateRTS)
		max := w.query(q).Cap.MaxInlineData
		if max == 0 || max >= 4096 {
			t.Fatalf("%v QP asked for %d inline bytes reports max_inline_data %d", typ, w.qpCap().MaxInlineData, max)
		}
		for i, r := range []struct {
			name  string
			sges  []verbs.SGE
			errno syscall.Errno
		}{
			{"exactly max_inline_data", []verbs.SGE{w.sge(0, max)}, 0},
			{"max_inline_data in two SGEs with lkey 0", []verbs.SGE{{Addr: w.mr.Addr(), Length: max / 2}, {Addr: w.mr.Addr() + 64, Length: max - max/2}}, 0},
			{"max_inline_data+1", []verbs.SGE{w.sge(0, max+1)}, syscall.EINVAL},
			{"max_inline_data+1 over two SGEs", []verbs.SGE{w.sge(0, max), w.sge(0, 1)}, syscall.EINVAL},
		} {
			wr := w.send(q, uint64(i))
			wr.Flags |= verbs.SendInline
			wr.SGList = r.sges
			n, err := q.PostSend([]verbs.SendWR{wr})
			want := 1
			if r.errno != 0 {
				want = 0
			}
			w.wantPost(fmt.Sprintf("%v: INLINE SEND of %s", typ, r.name), n, err, want, r.errno)
		}
	}
}

func destroyDropsRequests(t *tester, e *env) {
	w := qpSetup(t, e)
	for _, typ := range qpTypes {
		scq, rcq := e.CQ(16, nil, nil), e.CQ(16, nil, nil)
		q := w.createWith(verbs.QPInitAttr{Type: typ, Cap: w.qpCap(), SendCQ: scq, RecvCQ: rcq})
		s := w.hold(q)
		w.postSend("sends before destroy", q, w.sendIDs(q, 1, 2, 3))
		w.postRecv("receives before destroy", q, w.recvIDs(4, 5))
		ctx, cancel := patient()
		e.WantOK(fmt.Sprintf("ibv_destroy_qp(%v in %v) with 5 requests outstanding", typ, s), q.DestroyContext(ctx))
		cancel()
		for _, c := range []verbs.CQ{scq, rcq} {
			if got := e.PollAll(c, 8); len(got) != 0 {
				t.Errorf("%v in %v: destroying the QP produced completions %v", typ, s, wrIDs(got))
			}
			cqDestroy(t, e, c, "ibv_destroy_cq once its QP is gone")
		}
	}
}

// qpSpoil makes wr, a good request for q, malformed in one of five ways:
// 0 too many SGEs, 1 an opcode q's transport does not take, 2 an inline
// payload above the QP's maximum, 3 FENCE (INLINE on RDMA READ on RC),
// 4 INLINE on RDMA READ (too many SGEs on UC and UD).
func qpSpoil(w *qpWorld, q verbs.QP, c verbs.QPCap, wr *verbs.SendWR, kind int) {
	typ := w.types[q]
	late := w.e.Profile.TransportOpLocQPOp // QP-33 B: such an opcode is posted
	switch {
	case kind == 1 && typ == verbs.QPTypeUD && late:
		wr.Opcode = verbs.WRBindMW // EINVAL on UD under both readings
	case kind == 1 && typ == verbs.QPTypeUD:
		wr.Opcode = verbs.WRRDMAWrite
	case kind == 1 && typ == verbs.QPTypeUC && !late:
		wr.Opcode = verbs.WRRDMARead
	case kind == 1:
		wr.Opcode = 99
	case kind == 2:
		wr.Flags |= verbs.SendInline
		wr.SGList = []verbs.SGE{w.sge(0, c.MaxInlineData+1)}
	case kind == 3 && typ != verbs.QPTypeRC:
		wr.Flags |= verbs.SendFence
	case kind >= 3 && typ == verbs.QPTypeRC:
		wr.Opcode, wr.Flags, wr.RemoteAddr, wr.RKey = verbs.WRRDMARead, wr.Flags|verbs.SendInline, 0x1000, 0x1234
		wr.SGList = []verbs.SGE{w.sge(0, 8)}
	default:
		wr.SGList = w.sges(int(c.MaxSendSGE) + 1)
	}
}

// qpCapacity checks the capacity of one queue (QP-29 for send, QP-31 for
// receive): it takes exactly the QP's maximum of outstanding requests. After
// a move to ERR, under reading A the flushed requests keep their slots until
// their completions are polled, one slot per completion, and once everything
// is polled the queue takes its maximum again; under reading B
// (Profile.FreeSlotOnRetire) the flush frees them at once, before any poll
// (qpCapacityOnRetire). Sends are posted where they stay outstanding (hold),
// so that they are flushed, not executed; qpCapacityExecuted checks the send
// queue of UC and UD QPs with sends that execute.
func qpCapacity(t *tester, e *env, recv bool) {
	t.Helper()
	w := qpSetup(t, e)
	for _, typ := range qpTypes {
		cq := e.CQ(qpCQE, nil, nil)
		c := w.qpCap()
		c.MaxSendWR, c.MaxRecvWR = uint32(min(5, w.lim.MaxQPWR)), uint32(min(5, w.lim.MaxQPWR))
		q := w.createWith(verbs.QPInitAttr{Type: typ, Cap: c, SendCQ: cq, RecvCQ: cq})
		s := verbs.QPStateRTS
		if recv {
			w.walk(q, s)
		} else {
			s = w.hold(q)
		}
		real := w.query(q).Cap
		depth := int(real.MaxSendWR)
		post := func(ids []uint64) (int, error) { return q.PostSend(w.sendIDs(q, ids...)) }
		verb := "ibv_post_send"
		if recv {
			depth = int(real.MaxRecvWR)
			post = func(ids []uint64) (int, error) { return q.PostRecv(w.recvIDs(ids...)) }
			verb = "ibv_post_recv"
		}
		what := fmt.Sprintf("%v, max %d: %s", typ, depth, verb)
		n, err := post(idRange(0, depth))
		w.wantPost(fmt.Sprintf("%s of max requests in %v", what, s), n, err, depth, 0)
		n, err = post([]uint64{100})
		w.wantPost(fmt.Sprintf("%s of one more in %v", what, s), n, err, 0, syscall.ENOMEM)
		w.step(q, s, verbs.QPStateErr)
		if e.Profile.FreeSlotOnRetire {
			qpCapacityOnRetire(t, w, cq, what, depth, post)
			if t.Failed() {
				return
			}
			continue
		}
		w.qpReclaimOnPoll(cq, what+" in ERR", "flush completion", 101, depth, post, w.wantFlushes)
		if t.Failed() {
			return
		}
	}
	if !recv {
		qpCapacityExecuted(t, w)
	}
}

// qpReclaimOnPoll checks reading A of QP-29/QP-31 on a queue whose depth
// requests (wr_ids 0..depth-1) have all completed or been flushed, their
// completions still in cq: one more post (wr_id extra) is ENOMEM; polling j
// completions frees exactly j slots; once everything is polled the queue
// takes depth again (wr_ids 300..). want checks the completions polled;
// kind names them in messages.
func (w *qpWorld) qpReclaimOnPoll(cq verbs.CQ, what, kind string, extra uint64, depth int, post func([]uint64) (int, error), want func(string, []verbs.WC, []uint64)) {
	w.t.Helper()
	n, err := post([]uint64{extra})
	w.wantPost(fmt.Sprintf("%s: one more before any %s is polled", what, kind), n, err, 0, syscall.ENOMEM)
	j := 1 + depth/2
	want(what, w.collectSome(cq, j), idRange(0, j))
	n, err = post(idRange(200, j+1))
	w.wantPost(fmt.Sprintf("%s after polling %d %ss, of %d", what, j, kind, j+1), n, err, j, syscall.ENOMEM)
	want(what, w.collect(cq, depth, what+": the rest"), append(idRange(uint64(j), depth-j), idRange(200, j)...))
	n, err = post(idRange(300, depth))
	w.wantPost(what+" of max requests once everything is polled", n, err, depth, 0)
}

// qpCapacityExecuted checks QP-29 with sends that execute: on UC and UD QPs
// in RTS they complete with SUCCESS whoever receives them (XFER-22,
// XFER-26). Under reading A their slots still come free only as their
// completions are polled, one slot per completion: whether a send has
// completed or is still under way when the next post comes, its slot is
// taken, so nothing here depends on how fast the device executes. Under
// reading B they come free as the sends complete, which the posts wait for
// (qpCapacityExecutedOnRetire).
func qpCapacityExecuted(t *tester, w *qpWorld) {
	t.Helper()
	for _, typ := range []verbs.QPType{verbs.QPTypeUC, verbs.QPTypeUD} {
		cq := w.e.CQ(qpCQE, nil, nil)
		c := w.qpCap()
		c.MaxSendWR = uint32(min(5, w.lim.MaxQPWR))
		q := w.createWith(verbs.QPInitAttr{Type: typ, Cap: c, SendCQ: cq, RecvCQ: cq})
		w.walk(q, verbs.QPStateRTS)
		depth := int(w.query(q).Cap.MaxSendWR)
		post := func(ids []uint64) (int, error) { return q.PostSend(w.sendIDs(q, ids...)) }
		what := fmt.Sprintf("%v in RTS, max %d: ibv_post_send", typ, depth)
		n, err := post(idRange(0, depth))
		w.wantPost(what+" of max requests", n, err, depth, 0)
		if w.e.Profile.FreeSlotOnRetire {
			qpCapacityExecutedOnRetire(t, w, cq, what, depth, post)
			if t.Failed() {
				return
			}
			continue
		}
		w.qpReclaimOnPoll(cq, what, "completion", 100, depth, post, w.wantSuccesses)
		w.collect(cq, depth, what+": the last ones")
		if t.Failed() {
			return
		}
	}
}

// wantSuccesses checks that wcs are successful completions with the wr_ids
// ids, in that order.
func (w *qpWorld) wantSuccesses(what string, wcs []verbs.WC, ids []uint64) {
	w.t.Helper()
	if got := wrIDs(wcs); !slices.Equal(got, ids) {
		w.t.Errorf("%s: completed wr_ids %v, want %v", what, got, ids)
	}
	for _, c := range wcs {
		if c.Status != verbs.WCSuccess {
			w.t.Errorf("%s: wr_id %d completed with %v, want success", what, c.WRID, c.Status)
		}
	}
}

// collectSome polls exactly n completions from cq, waiting up to Patience,
// and leaves whatever else is there.
func (w *qpWorld) collectSome(cq verbs.CQ, n int) []verbs.WC {
	w.t.Helper()
	got := make([]verbs.WC, 0, n)
	buf := make([]verbs.WC, n)
	deadline := time.Now().Add(Patience)
	var nap time.Duration
	for len(got) < n {
		k, err := cq.Poll(buf[:n-len(got)])
		if err != nil {
			w.t.Fatalf("ibv_poll_cq: %v", err)
		}
		got = append(got, buf[:k]...)
		if k == 0 {
			if time.Now().After(deadline) {
				w.t.Fatalf("%d of %d completions arrived within %v", len(got), n, Patience)
			}
			nap = qpNap(nap)
		}
	}
	return got
}
