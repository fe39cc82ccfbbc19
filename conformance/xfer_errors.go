package conformance

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"syscall"

	"github.com/verbsim/verbsim/verbs"
)

// Cases of the XFER family about requests that fail: receive buffers too
// small (XFER-05, XFER-06), remote access (XFER-14, XFER-15), local
// protection (XFER-16), atomics (XFER-17), message size (XFER-23) and
// SEND_WITH_INV (XFER-29).

// badKey is a key that names no MR: k with its index bits changed.
func badKey(k uint32) uint32 { return k ^ 0x5a5a00 }

// remoteCase is one row of the remote-access matrix of XFER-14.
type remoteCase struct {
	name    string
	deny    verbs.AccessFlags // removed from the responder QP's access flags
	mrDeny  uint32            // removed from the target MR's access
	badKey  bool
	off     int // offset of the target from the MR's start (may be outside)
	otherPD bool
	rc, uc  verbs.WCStatus // the requester's status on RC; UC: Success or a drop
}

// remoteOp is an operation of XFER-14 and the right it needs.
type remoteOp struct {
	op    verbs.WROpcode
	right verbs.AccessFlags
	mr    uint32
}

var remoteOps = []remoteOp{
	{verbs.WRRDMAWrite, verbs.AccessRemoteWrite, accessRemoteWrite},
	{verbs.WRRDMARead, verbs.AccessRemoteRead, accessRemoteRead},
	{verbs.WRAtomicFetchAndAdd, verbs.AccessRemoteAtomic, accessRemoteAtomic},
}

// target registers, on side b, the 256-byte target of a remote request
// with the rights of row r; it returns the request's address and rkey.
func (w *wire) target(b *end, r remoteCase) (addr uint64, rkey uint32) {
	w.t.Helper()
	pd := b.s.pd
	if r.otherPD {
		pd = w.pdOn(b.s.ctx)
	}
	mr := w.e.mrReg(pd, make([]byte, 256), accessAll&^r.mrDeny)
	addr, rkey = mr.Addr()+uint64(r.off), mr.RKey()
	if r.badKey {
		rkey = badKey(rkey)
	}
	return addr, rkey
}

// remoteReq returns request id of op against (addr, rkey), 8 bytes long.
func (a *end) remoteReq(id uint64, op verbs.WROpcode, addr uint64, rkey uint32) verbs.SendWR {
	r := sendWR(id, op, a.s.sge(0, 8))
	r.RemoteAddr, r.RKey = addr, rkey
	return r
}

// xferErrorsCases are the cases of the XFER, SRQ, ASYNC families in xfer_errors.go.
var xferErrorsCases = []Case{
	{"XFER-05", "[CONFLICT] an RC SEND too long for the receive: REM_INV_REQ_ERR; receiver status per reading", rcSendTooLong},
	{"XFER-06", "[IMPL] a UC or UD message too long for the receive is dropped; the receive stays for the next", ucUDTooLong},
	{"XFER-14", "[CONFLICT] remote access: QP flags first (REM_INV_REQ_ERR), then the rkey's MR (REM_ACCESS_ERR)", remoteAccessOrder},
	{"XFER-30", "[IMPL] WRITE_WITH_IMM with a bad rkey consumes the receive WR: LOC_ACCESS_ERR (rxe: REM_ACCESS_ERR for one packet, a flush for more)", writeImmBadRkey},
	{"XFER-15", "after an RC remote error both QPs are in ERR; later requests flush", rcRemoteErrorBothErr},
	{"XFER-16", "[IMPL] local protection: LOC_PROT_ERR at the requester; a bad receive SGE per reading", localProtection},
	{"XFER-31", "[IMPL] a READ's or atomic's bad local SGE: LOC_PROT_ERR before sending, or (rxe) once the response arrives", readAtomicBadLocalSGE},
	{"SRQ-12", "[IMPL] a receive WR taken from an SRQ is checked against the SRQ's PD (rxe: the QP's)", srqReceivePD},
	{"XFER-17", "atomics: CMP_AND_SWP and FETCH_AND_ADD on a native-order word, returning the original", atomics},
	{"XFER-23", "a message longer than max_msg_sz fails locally with LOC_LEN_ERR", maxMsgSize},
	{"XFER-29", "SEND_WITH_INV invalidates the rkey at the responder; an unknown rkey is an invalid request", sendWithInv},
	{"ASYNC-09", "an invalid request (QP access flags) raises QP_REQ_ERR on the responder, unless the reading has no QP events", invalidRequestEvent},
	{"ASYNC-10", "an access violation (rkey) raises QP_ACCESS_ERR on the responder, unless the reading has no QP events", accessViolationEvent},
}

func rcSendTooLong(t *tester, e *env) {
	w := newWire(t, e)
	a, b := w.connect(verbs.QPTypeRC, w.opts())
	b.recvAt("a 100-byte receive", 1, 0, 100)
	a.post("a 101-byte SEND", sendWR(2, verbs.WRSend, a.s.sge(0, 101)))
	a.want("requester", w.await(a.scq, 1, "requester")[0], 2, verbs.WCRemInvReqErr)
	want := verbs.WCLocLenErr
	if w.tp.RecvTooSmallRemInvReq {
		want = verbs.WCRemInvReqErr
	}
	b.want(fmt.Sprintf("receiver (RecvTooSmallRemInvReq=%v)", w.tp.RecvTooSmallRemInvReq), w.await(b.rcq, 1, "receiver")[0], 1, want)
	a.wantState("requester after the length error", verbs.QPStateErr)
	b.wantState("responder after the length error", verbs.QPStateErr)
}

func ucUDTooLong(t *tester, e *env) {
	w := newWire(t, e)
	for _, typ := range []verbs.QPType{verbs.QPTypeUC, verbs.QPTypeUD} {
		a, b, ah := w.pair(typ, w.opts())
		g := grhLen(typ)
		b.recvAt("a receive of 100 bytes of payload", 1, 0, 100+g)
		fill(a.s.buf[:101], 6)
		a.post("101 bytes", addressed(sendWR(2, verbs.WRSend, a.s.sge(0, 101)), ah, b))
		what := fmt.Sprintf("%v: 101 bytes into a receive of 100", typ)
		a.want(what+": sender", w.await(a.scq, 1, what)[0], 2, verbs.WCSuccess)
		w.quiet(b.rcq, what+": receiver")
		b.wantState(what, verbs.QPStateRTS)
		a.post("100 bytes", addressed(sendWR(3, verbs.WRSend, a.s.sge(1, 100)), ah, b))
		w.await(a.scq, 1, what+", then 100 bytes: sender")
		c := w.await(b.rcq, 1, what+", then 100 bytes: receiver")[0]
		if b.want(what+", then 100 bytes", c, 1, verbs.WCSuccess) && int(c.ByteLen) != 100+g {
			t.Errorf("%s, then 100 bytes: byte_len %d, want %d", what, c.ByteLen, 100+g)
		}
	}
	// With an SRQ (UD only: UC QPs take none, QP-04) the rxe reading
	// completes the receive with REM_INV_REQ_ERR.
	for _, typ := range []verbs.QPType{verbs.QPTypeUD} {
		s := w.srqOn(w.b, 4)
		ob := w.opts()
		ob.srq = s
		a, b := w.connect2(typ, w.opts(), ob)
		var ah verbs.AH
		if typ == verbs.QPTypeUD {
			ah = w.ah(w.a, w.b, false)
		}
		g := grhLen(typ)
		if n, err := s.PostRecv([]verbs.RecvWR{{WRID: 1, SGList: []verbs.SGE{b.s.sge(0, 100+g)}}}); n != 1 || err != nil {
			t.Fatalf("ibv_post_srq_recv: %d, %v", n, err)
		}
		a.post("101 bytes", addressed(sendWR(2, verbs.WRSend, a.s.sge(0, 101)), ah, b))
		what := fmt.Sprintf("%v: 101 bytes into an SRQ receive of 100", typ)
		a.want(what+": sender", w.await(a.scq, 1, what)[0], 2, verbs.WCSuccess)
		w.settle()
		got, _ := w.pollNow(b.rcq)
		w.expect("srq-too-long", len(got) == 1 && got[0].WRID == 1 && got[0].Status == verbs.WCRemInvReqErr,
			"%s: receiver completions %s, want wr_id 1 with REM_INV_REQ_ERR", what, showWCs(got))
	}
}

func remoteAccessOrder(t *tester, e *env) {
	w := newWire(t, e)
	const inv, acc, ok = verbs.WCRemInvReqErr, verbs.WCRemAccessErr, verbs.WCSuccess
	for _, op := range remoteOps {
		past := 256 - 7 // one byte beyond the end
		if op.op == verbs.WRAtomicFetchAndAdd {
			past = 256 // aligned, so that the range is what fails
		}
		rows := []remoteCase{
			{name: "everything granted", rc: ok, uc: ok},
			{name: "QP flag missing", deny: op.right, rc: inv},
			{name: "MR right missing", mrDeny: op.mr, rc: acc},
			{name: "rkey names no MR", badKey: true, rc: acc},
			{name: "range ends past the MR", off: past, rc: acc},
			{name: "range starts before the MR", off: -8, rc: acc},
			{name: "MR of another PD", otherPD: true, rc: acc},
			{name: "QP flag missing and a bad rkey", deny: op.right, badKey: true, rc: inv},
		}
		for _, r := range rows {
			for _, typ := range []verbs.QPType{verbs.QPTypeRC, verbs.QPTypeUC} {
				if typ == verbs.QPTypeUC && op.op != verbs.WRRDMAWrite {
					continue
				}
				o := w.opts()
				o.deny = r.deny
				a, b := w.connect(typ, o)
				addr, rkey := w.target(b, r)
				fill(a.s.buf[:8], 0x14)
				a.post("the request", a.remoteReq(1, op.op, addr, rkey))
				what := fmt.Sprintf("%v %v, %s", typ, op.op, r.name)
				want := r.rc
				if typ == verbs.QPTypeUC {
					want = ok // UC: the responder drops silently
				}
				a.want(what, w.await(a.scq, 1, what)[0], 1, want)
				if typ == verbs.QPTypeUC && r.rc != ok {
					b.wantState(what+" (UC drops, the responder goes on)", verbs.QPStateRTS)
				}
			}
		}
	}
}

func writeImmBadRkey(t *tester, e *env) {
	w := newWire(t, e)
	for _, packets := range []int{1, 3} {
		a, b := w.connect(verbs.QPTypeRC, w.opts())
		n := packets * 256 // the path MTU is 256 or more, so this is at most 3 packets
		if packets > 1 {
			n = packets * min(verbs.MTU1024, a.s.port.ActiveMTU, b.s.port.ActiveMTU).Bytes()
		}
		addr, rkey := w.target(b, remoteCase{badKey: true})
		b.recvAt("the receive the immediate is for", 1, 0, 64)
		b.recvAt("a receive behind it", 2, 64, 64)
		r := sendWR(3, verbs.WRRDMAWriteWithImm, a.s.sge(0, n))
		r.RemoteAddr, r.RKey, r.Imm = addr, rkey, 0x30
		a.post("a WRITE_WITH_IMM with a bad rkey", r)
		what := fmt.Sprintf("a %d-packet WRITE_WITH_IMM with a bad rkey", packets)
		a.want(what+": requester", w.await(a.scq, 1, what)[0], 3, verbs.WCRemAccessErr)
		first := verbs.WCLocAccessErr
		switch {
		case w.tp.WriteImmRKeyRemAccess && packets == 1:
			first = verbs.WCRemAccessErr
		case w.tp.WriteImmRKeyRemAccess:
			first = verbs.WCWRFlushErr
		}
		got := w.await(b.rcq, 2, what+": responder")
		reading := fmt.Sprintf("%s: responder (WriteImmRKeyRemAccess=%v)", what, w.tp.WriteImmRKeyRemAccess)
		if len(got) == 2 {
			b.want(reading+", the first receive", got[0], 1, first)
			b.want(reading+", the receive behind it", got[1], 2, verbs.WCWRFlushErr)
		}
		b.wantState(what, verbs.QPStateErr)
	}
}

func rcRemoteErrorBothErr(t *tester, e *env) {
	w := newWire(t, e)
	for _, r := range []remoteCase{{name: "bad rkey", badKey: true}, {name: "QP flag missing", deny: verbs.AccessRemoteWrite}} {
		o := w.opts()
		o.deny = r.deny
		a, b := w.connect(verbs.QPTypeRC, o)
		addr, rkey := w.target(b, r)
		a.post("a bad WRITE and two SENDs", a.remoteReq(1, verbs.WRRDMAWrite, addr, rkey),
			sendWR(2, verbs.WRSend, a.s.sge(0, 8)), sendWR(3, verbs.WRSend, a.s.sge(0, 8)))
		got := w.await(a.scq, 3, r.name)
		for i, c := range got[1:] {
			a.want(r.name+": the request after the error", c, uint64(i+2), verbs.WCWRFlushErr)
		}
		a.wantState(r.name, verbs.QPStateErr)
		b.wantState(r.name, verbs.QPStateErr)
		a.post("a request posted in ERR", sendWR(4, verbs.WRSend, a.s.sge(0, 8)))
		a.want(r.name+": posted in ERR", w.await(a.scq, 1, r.name+": posted in ERR")[0], 4, verbs.WCWRFlushErr)
	}
}

func localProtection(t *tester, e *env) {
	w := newWire(t, e)
	other := w.e.mrReg(w.pdOn(w.a.ctx), make([]byte, 64), accessAll)
	gone := w.e.mrReg(w.a.pd, make([]byte, 64), accessAll)
	e.WantOK("ibv_dereg_mr", gone.Dereg())
	for _, c := range []struct {
		name string
		sge  verbs.SGE
	}{
		{"an lkey that names no MR", verbs.SGE{Addr: w.a.addr(0), Length: 8, LKey: badKey(w.a.mr.LKey())}},
		{"an MR of another PD", verbs.SGE{Addr: other.Addr(), Length: 8, LKey: other.LKey()}},
		{"a range past the MR's end", w.a.sge(bufLen-4, 8)},
		{"a deregistered MR", verbs.SGE{Addr: gone.Addr(), Length: 8, LKey: gone.LKey()}},
	} {
		for _, op := range []verbs.WROpcode{verbs.WRSend, verbs.WRRDMAWrite} {
			a, b := w.connect(verbs.QPTypeRC, w.opts())
			b.recvAt("a receive", 1, 0, 64)
			req := rdmaWR(7, op, b.s, 0, c.sge)
			what := fmt.Sprintf("RC %v from %s", op, c.name)
			a.post(what, req)
			a.want(what, w.await(a.scq, 1, what)[0], 7, verbs.WCLocProtErr)
			a.wantState(what, verbs.QPStateErr)
		}
	}
	// A bad lkey in the receive a SEND lands in.
	a, b := w.connect(verbs.QPTypeRC, w.opts())
	b.recv("a receive with a bad lkey", verbs.RecvWR{WRID: 1, SGList: []verbs.SGE{{Addr: w.b.addr(0), Length: 64, LKey: badKey(w.b.mr.LKey())}}})
	a.post("a SEND", sendWR(2, verbs.WRSend, a.s.sge(0, 8)))
	a.want("requester of a SEND into a bad receive SGE", w.await(a.scq, 1, "requester")[0], 2, verbs.WCRemOpErr)
	b.want(fmt.Sprintf("receiver with a bad receive SGE (RecvProtQPOp=%v)", w.tp.RecvProtQPOp), w.await(b.rcq, 1, "receiver")[0], 1, w.badRecvStatus())
}

func readAtomicBadLocalSGE(t *tester, e *env) {
	w := newWire(t, e)
	word := func(s *side, off int) uint64 { return binary.NativeEndian.Uint64(s.buf[off:]) }
	bad := verbs.SGE{Addr: w.a.addr(0), Length: 8, LKey: badKey(w.a.mr.LKey())}
	late := w.tp.LateLocalCheck
	reading := fmt.Sprintf("(LateLocalCheck=%v)", late)

	// Against a good remote buffer the local error is all there is.
	a, b := w.connect(verbs.QPTypeRC, w.opts())
	a.post("a READ into a bad local SGE", rdmaWR(1, verbs.WRRDMARead, b.s, 0, bad))
	a.want("a READ into a bad local SGE", w.await(a.scq, 1, "READ")[0], 1, verbs.WCLocProtErr)
	a.wantState("after a READ into a bad local SGE", verbs.QPStateErr)

	// Against a bad rkey: the first check made decides.
	a, b = w.connect(verbs.QPTypeRC, w.opts())
	r := sendWR(2, verbs.WRRDMARead, bad)
	r.RemoteAddr, r.RKey = w.target(b, remoteCase{badKey: true})
	a.post("a READ into a bad local SGE from a bad rkey", r)
	want, responder := verbs.WCLocProtErr, verbs.QPStateRTS // never sent: the responder saw nothing
	if late {
		want, responder = verbs.WCRemAccessErr, verbs.QPStateErr
	}
	a.want("a READ into a bad local SGE from a bad rkey "+reading, w.await(a.scq, 1, "READ, bad rkey")[0], 2, want)
	b.wantState("the responder of a READ into a bad local SGE from a bad rkey "+reading, responder)

	// A compare-and-swap whose result buffer is bad: the remote word is
	// untouched when the request is never sent, swapped when it is.
	a, b = w.connect(verbs.QPTypeRC, w.opts())
	const orig = 0x3131
	binary.NativeEndian.PutUint64(b.s.buf[64:], orig)
	cas := rdmaWR(3, verbs.WRAtomicCmpAndSwp, b.s, 64, bad)
	cas.CompareAdd, cas.Swap = orig, 99
	a.post("a CMP_AND_SWP into a bad local SGE", cas)
	a.want("a CMP_AND_SWP into a bad local SGE "+reading, w.await(a.scq, 1, "CMP_AND_SWP")[0], 3, verbs.WCLocProtErr)
	after := uint64(orig)
	if late {
		after = 99
	}
	w.settle()
	if got := word(b.s, 64); got != after {
		t.Errorf("a CMP_AND_SWP into a bad local SGE %s: remote word %#x, want %#x", reading, got, after)
	}
}

func srqReceivePD(t *tester, e *env) {
	w := newWire(t, e)
	srqPD := w.pdOn(w.b.ctx) // the QPs are in the side's own PD
	srqMR := w.e.mrReg(srqPD, make([]byte, 256), accessAll)
	for i, c := range []struct {
		name      string
		inSRQsPD  bool
		succeedsA bool
	}{
		{"a receive buffer in the SRQ's PD, not the QP's", true, true},
		{"a receive buffer in the QP's PD, not the SRQ's", false, false},
	} {
		s := w.srqIn(w.b, srqPD, 4)
		ob := w.opts()
		ob.srq = s
		a, b := w.connect2(verbs.QPTypeRC, w.opts(), ob)
		sge := w.b.sge(0, 64)
		if c.inSRQsPD {
			sge = verbs.SGE{Addr: srqMR.Addr(), Length: 64, LKey: srqMR.LKey()}
		}
		id := uint64(10 * (i + 1))
		if n, err := s.PostRecv([]verbs.RecvWR{{WRID: id, SGList: []verbs.SGE{sge}}}); n != 1 || err != nil {
			t.Fatalf("%s: ibv_post_srq_recv: %d, %v", c.name, n, err)
		}
		a.post("a SEND", sendWR(id+1, verbs.WRSend, a.s.sge(0, 8)))
		what := fmt.Sprintf("a SEND into %s (SRQRecvQPPD=%v)", c.name, w.tp.SRQRecvQPPD)
		if c.succeedsA != w.tp.SRQRecvQPPD {
			a.want(what+": requester", w.await(a.scq, 1, what)[0], id+1, verbs.WCSuccess)
			b.want(what+": receiver", w.await(b.rcq, 1, what)[0], id, verbs.WCSuccess)
			continue
		}
		a.want(what+": requester", w.await(a.scq, 1, what)[0], id+1, verbs.WCRemOpErr)
		b.want(what+": receiver", w.await(b.rcq, 1, what)[0], id, w.badRecvStatus())
	}
}

func atomics(t *tester, e *env) {
	w := newWire(t, e)
	word := func(s *side, off int) uint64 { return binary.NativeEndian.Uint64(s.buf[off:]) }
	put := func(s *side, off int, v uint64) { binary.NativeEndian.PutUint64(s.buf[off:], v) }
	a, b := w.connect(verbs.QPTypeRC, w.opts())
	const orig = 0x0102030405060708
	for i, c := range []struct {
		op              verbs.WROpcode
		cmpAdd, swap    uint64
		after, returned uint64
	}{
		{verbs.WRAtomicCmpAndSwp, orig, 99, 99, orig},
		{verbs.WRAtomicCmpAndSwp, orig + 1, 99, orig, orig},
		{verbs.WRAtomicFetchAndAdd, 5, 0, orig + 5, orig},
		{verbs.WRAtomicFetchAndAdd, ^uint64(0), 0, orig - 1, orig},
	} {
		put(b.s, 64, orig)
		put(a.s, 128, 0)
		r := rdmaWR(uint64(i), c.op, b.s, 64, a.s.sge(128, 8))
		r.CompareAdd, r.Swap = c.cmpAdd, c.swap
		a.post("an atomic", r)
		what := fmt.Sprintf("%v(compare_add %#x, swap %d) on %#x", c.op, c.cmpAdd, c.swap, uint64(orig))
		s := w.await(a.scq, 1, what)[0]
		if !a.want(what, s, uint64(i), verbs.WCSuccess) {
			continue
		}
		if got := word(b.s, 64); got != c.after {
			t.Errorf("%s: remote word %#x, want %#x", what, got, c.after)
		}
		if got := word(a.s, 128); got != c.returned {
			t.Errorf("%s: returned %#x, want %#x", what, got, c.returned)
		}
	}
	// Concurrent FETCH_AND_ADDs from four QPs: the sum lands, and every
	// add saw a different value before it.
	rng := rand.New(rand.NewPCG(17, 0x8817))
	put(w.b, 256, 1000)
	var qps []*end
	sum, n := uint64(1000), 0
	for q := range 4 {
		x, _ := w.connect(verbs.QPTypeRC, w.opts())
		qps = append(qps, x)
		for k := range 8 {
			add := 1 + rng.Uint64N(1<<20)
			sum += add
			r := rdmaWR(uint64(k), verbs.WRAtomicFetchAndAdd, w.b, 256, x.s.sge(1024+64*q+8*k, 8))
			r.CompareAdd = add
			x.post("a FETCH_AND_ADD", r)
			n++
		}
	}
	seen := map[uint64]bool{}
	for q, x := range qps {
		for _, c := range w.await(x.scq, 8, "FETCH_AND_ADDs") {
			if !x.want("a concurrent FETCH_AND_ADD", c, c.WRID, verbs.WCSuccess) {
				continue
			}
			v := word(w.a, 1024+64*q+8*int(c.WRID))
			if seen[v] {
				t.Errorf("two FETCH_AND_ADDs returned the same prior value %d", v)
			}
			seen[v] = true
		}
	}
	if got := word(w.b, 256); got != sum {
		t.Errorf("after %d concurrent FETCH_AND_ADDs the word is %d, want %d", n, got, sum)
	}
	// Violations: refused at post (rxe), or failed as IBTA says.
	for _, c := range []struct {
		name string
		sge  verbs.SGE
		off  int
		want verbs.WCStatus
	}{
		{"a 4-byte local buffer", w.a.sge(128, 4), 64, verbs.WCLocLenErr},
		{"a misaligned remote address", w.a.sge(128, 8), 68, verbs.WCRemInvReqErr},
	} {
		a, _ := w.connect(verbs.QPTypeRC, w.opts())
		r := rdmaWR(1, verbs.WRAtomicFetchAndAdd, w.b, c.off, c.sge)
		n, err := a.q.PostSend([]verbs.SendWR{r})
		if errors.Is(err, syscall.EINVAL) && n == 0 {
			continue
		}
		if err != nil {
			t.Errorf("FETCH_AND_ADD with %s: ibv_post_send: %v, want EINVAL or success", c.name, err)
			continue
		}
		a.want("FETCH_AND_ADD with "+c.name, w.await(a.scq, 1, c.name)[0], 1, c.want)
	}
}

func maxMsgSize(t *tester, e *env) {
	w := newWire(t, e)
	limit := uint64(w.a.port.MaxMsgSz)
	o := w.opts()
	o.cap.MaxSendSGE = uint32(min(30, w.lim.MaxSGE))
	// The SGEs all cover one buffer: a long message needs no more
	// memory than one of them.
	per := (limit + 1 + uint64(o.cap.MaxSendSGE) - 1) / uint64(o.cap.MaxSendSGE)
	if per > 64<<20 {
		t.Logf("max_msg_sz %d needs SGEs of %d bytes; skipped", limit, per)
		return
	}
	big := make([]byte, per)
	mr := w.e.mrReg(w.a.pd, big, accessLocalWrite)
	sges := make([]verbs.SGE, o.cap.MaxSendSGE)
	for i := range sges {
		sges[i] = verbs.SGE{Addr: mr.Addr(), Length: uint32(per), LKey: mr.LKey()}
	}
	for i, typ := range []verbs.QPType{verbs.QPTypeRC, verbs.QPTypeUC} {
		a, b := w.connect(typ, o)
		b.recvAt("a receive", 1, 0, 64)
		r := sendWR(uint64(i), verbs.WRSend, sges...)
		if typ == verbs.QPTypeUC {
			r = rdmaWR(uint64(i), verbs.WRRDMAWrite, b.s, 0, sges...)
		}
		what := fmt.Sprintf("%v %v of %d bytes (max_msg_sz %d)", typ, r.Opcode, per*uint64(len(sges)), limit)
		a.post(what, r)
		a.want(what, w.await(a.scq, 1, what)[0], uint64(i), verbs.WCLocLenErr)
	}
}

func sendWithInv(t *tester, e *env) {
	w := newWire(t, e)
	for _, typ := range []verbs.QPType{verbs.QPTypeRC, verbs.QPTypeUC} {
		a, b := w.connect(typ, w.opts())
		target := w.e.mrReg(b.s.pd, make([]byte, 64), accessAll)
		b.recvAt("a receive", 1, 0, 64)
		r := sendWR(1, verbs.WRSendWithInv, a.s.sge(0, 8))
		r.Imm = target.RKey()
		a.post("SEND_WITH_INV", r)
		what := fmt.Sprintf("%v SEND_WITH_INV", typ)
		a.want(what, w.await(a.scq, 1, what)[0], 1, verbs.WCSuccess)
		c := w.await(b.rcq, 1, what+": responder")[0]
		if b.want(what+": responder", c, 1, verbs.WCSuccess) && (c.WCFlags&verbs.WCWithInv == 0 || c.InvalidatedRkey() != target.RKey()) {
			t.Errorf("%s: flags %v invalidated_rkey %#x, want WITH_INV and %#x", what, c.WCFlags, c.InvalidatedRkey(), target.RKey())
		}
		if typ == verbs.QPTypeRC {
			a.post("a WRITE to the invalidated rkey", a.remoteReq(2, verbs.WRRDMAWrite, target.Addr(), target.RKey()))
			a.want("RC WRITE to an invalidated rkey", w.await(a.scq, 1, "WRITE after SEND_WITH_INV")[0], 2, verbs.WCRemAccessErr)
		}
	}
	a, b := w.connect(verbs.QPTypeRC, w.opts())
	b.recvAt("a receive", 1, 0, 64)
	r := sendWR(3, verbs.WRSendWithInv, a.s.sge(0, 8))
	r.Imm = badKey(b.s.mr.RKey())
	a.post("SEND_WITH_INV of an unknown rkey", r)
	sendInvFails(w, a, b, 3, 1, "RC SEND_WITH_INV of an unknown rkey")
}

func invalidRequestEvent(t *tester, e *env) {
	responderEvent(t, e, remoteCase{name: "WRITE to a QP without REMOTE_WRITE", deny: verbs.AccessRemoteWrite}, verbs.EventQPReqErr)
}

func accessViolationEvent(t *tester, e *env) {
	responderEvent(t, e, remoteCase{name: "WRITE with a bad rkey", badKey: true}, verbs.EventQPAccessErr)
}

// sendInvFails checks the outcome of an RC SEND_WITH_INV (WR id id)
// whose rkey the responder cannot invalidate, the receive WR rid held for
// it (XFER-29): under reading A the send fails with REM_INV_REQ_ERR, the
// receive with LOC_QP_OP_ERR and both QPs end in ERR; under reading B
// (SendInvErrAcked, rxe) the send succeeds and the requester stays in RTS,
// and the receive fails with REM_INV_REQ_ERR and the responder alone is in
// ERR.
func sendInvFails(w *wire, a, b *end, id, rid uint64, what string) {
	w.t.Helper()
	sendSt, recvSt, reqState := verbs.WCRemInvReqErr, verbs.WCLocQPOpErr, verbs.QPStateErr
	if w.tp.SendInvErrAcked {
		sendSt, recvSt, reqState = verbs.WCSuccess, verbs.WCRemInvReqErr, verbs.QPStateRTS
	}
	what = fmt.Sprintf("%s (SendInvErrAcked=%v)", what, w.tp.SendInvErrAcked)
	a.want(what, w.await(a.scq, 1, what)[0], id, sendSt)
	b.want(what+": responder", w.await(b.rcq, 1, what+": responder")[0], rid, recvSt)
	a.wantState(what+": requester", reqState)
	b.wantState(what+": responder", verbs.QPStateErr)
}

// responderEvent makes one bad RC WRITE of row r and checks the responder's
// async event typ (none under NoQPEvents), and that the responder is in ERR.
func responderEvent(t *tester, e *env, r remoteCase, typ verbs.EventType) {
	t.Helper()
	w := newWire(t, e)
	o := w.opts()
	o.deny = r.deny
	a, b := w.connect(verbs.QPTypeRC, o)
	addr, rkey := w.target(b, r)
	a.post(r.name, a.remoteReq(1, verbs.WRRDMAWrite, addr, rkey))
	w.await(a.scq, 1, r.name)
	b.wantState(r.name, verbs.QPStateErr)
	evs := w.allEvents()
	want := 1
	if w.tp.NoQPEvents {
		want = 0
	}
	if got := eventsAbout(evs, typ, b.q); got != want {
		t.Errorf("%s: %d %v events naming the responder QP (NoQPEvents=%v), want %d; events: %v", r.name, got, typ, w.tp.NoQPEvents, want, evs)
	}
	if got := eventsAbout(evs, typ, a.q); got != 0 {
		t.Errorf("%s: %d %v events name the requester QP, want 0", r.name, got, typ)
	}
}
