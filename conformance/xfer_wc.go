package conformance

import (
	"fmt"
	"math/rand/v2"

	"github.com/verbsim/verbsim/conformance/model"
	"github.com/verbsim/verbsim/verbs"
)

// Cases of the WC family that traffic shows: the fields of completions
// produced by real work requests (WC-01, 02, 04, 05, 08..13).

// opCheck is a work request opcode and what it needs.
type opCheck struct {
	op     verbs.WROpcode
	send   verbs.WCOpcode // the requester's completion opcode (WC-04)
	recv   verbs.WCOpcode // the responder's, when it has one (WC-05)
	recvs  bool           // it consumes a receive
	remote bool           // it names remote memory
	types  []verbs.QPType // the transports it runs on
}

var opChecks = []opCheck{
	{verbs.WRSend, verbs.WCSend, verbs.WCRecv, true, false, []verbs.QPType{verbs.QPTypeRC, verbs.QPTypeUC, verbs.QPTypeUD}},
	{verbs.WRSendWithImm, verbs.WCSend, verbs.WCRecv, true, false, []verbs.QPType{verbs.QPTypeRC, verbs.QPTypeUC, verbs.QPTypeUD}},
	{verbs.WRSendWithInv, verbs.WCSend, verbs.WCRecv, true, false, []verbs.QPType{verbs.QPTypeRC, verbs.QPTypeUC}},
	{verbs.WRRDMAWrite, verbs.WCRDMAWrite, 0, false, true, []verbs.QPType{verbs.QPTypeRC, verbs.QPTypeUC}},
	{verbs.WRRDMAWriteWithImm, verbs.WCRDMAWrite, verbs.WCRecvRDMAWithImm, true, true, []verbs.QPType{verbs.QPTypeRC, verbs.QPTypeUC}},
	{verbs.WRRDMARead, verbs.WCRDMARead, 0, false, true, []verbs.QPType{verbs.QPTypeRC}},
	{verbs.WRAtomicCmpAndSwp, verbs.WCCompSwap, 0, false, true, []verbs.QPType{verbs.QPTypeRC}},
	{verbs.WRAtomicFetchAndAdd, verbs.WCFetchAdd, 0, false, true, []verbs.QPType{verbs.QPTypeRC}},
}

// roundTrip runs one request of opcode op from a to b (with a receive posted
// when it consumes one) and returns the requester's completion and the
// responder's, if any. imm is the immediate data; a SEND_WITH_INV
// invalidates a fresh MR of b's PD, whose rkey it returns.
func (w *wire) roundTrip(what string, o opCheck, a, b *end, ah verbs.AH, id, imm uint32, n int) (s verbs.WC, r []verbs.WC, inv uint32) {
	w.t.Helper()
	if o.recvs {
		b.recvAt(what, uint64(id)+1000, 0, n+grhLen(b.typ))
	}
	req := addressed(sendWR(uint64(id), o.op, a.s.sge(4096, n)), ah, b)
	req.Imm = imm
	if o.remote {
		req.RemoteAddr, req.RKey = b.s.addr(8192), b.s.mr.RKey()
	}
	switch o.op {
	case verbs.WRSendWithInv:
		inv = w.e.mrReg(b.s.pd, make([]byte, 64), accessAll).RKey()
		req.Imm = inv
	case verbs.WRAtomicCmpAndSwp, verbs.WRAtomicFetchAndAdd:
		req.SGList = []verbs.SGE{a.s.sge(4096, 8)}
	}
	a.post(what, req)
	s = w.await(a.scq, 1, what+": requester")[0]
	a.want(what+": requester", s, uint64(id), verbs.WCSuccess)
	if o.recvs {
		r = w.await(b.rcq, 1, what+": responder")
	} else {
		w.quiet(b.rcq, what+": responder of a request that consumes no receive")
	}
	return s, r, inv
}

// xferWcCases are the cases of the WC family in xfer_wc.go.
var xferWcCases = []Case{
	{"WC-01", "wr_id comes back bit-exact, for every status", wrIDBitExact},
	{"WC-02", "qp_num names the local QP, for every status, on a shared CQ", qpNumLocal},
	{"WC-04", "each requester opcode completes with its WC opcode", requesterOpcodes},
	{"WC-05", "receive opcodes: RECV for SENDs, RECV_RDMA_WITH_IMM for WRITE_WITH_IMM, nothing else", receiveOpcodes},
	{"WC-06", "IBV_WC_RECV is set exactly on receive completions; no tag-matching or driver opcode", recvFlagBit},
	{"WC-08", "receive flags: WITH_IMM for immediates, WITH_INV for invalidations, never both; GRH for UD", receiveFlags},
	{"WC-09", "imm_data arrives bit-for-bit as the sender wrote it", immData},
	{"WC-10", "receive byte_len: the payload, +40 on UD, the write length for WRITE_WITH_IMM", receiveByteLen},
	{"WC-11", "requester byte_len: the bytes read for READ, 8 for atomics", requesterByteLen},
	{"WC-12", "a UD receive names the sender: src_qp, and slid on InfiniBand", udSource},
	{"WC-13", "[IMPL] requester completions of *_WITH_IMM carry WITH_IMM only under the rxe reading", requesterWithImmFlag},
}

func wrIDBitExact(t *tester, e *env) {
	w := newWire(t, e)
	rng := rand.New(rand.NewPCG(1, 0x7701))
	for round := range 8 {
		a, b := w.connect(verbs.QPTypeRC, w.opts())
		ns := 2 + rng.IntN(6)
		nr := ns + rng.IntN(3)
		rids, sids := make([]uint64, nr), make([]uint64, ns)
		for i := range rids {
			rids[i] = rng.Uint64()
			b.recv("a receive", verbs.RecvWR{WRID: rids[i], SGList: []verbs.SGE{b.s.sge(i*64, 64)}})
		}
		bad := -1
		if round%2 == 1 {
			bad = rng.IntN(ns)
		}
		for i := range sids {
			sids[i] = rng.Uint64()
			r := sendWR(sids[i], verbs.WRSend, a.s.sge(0, 16))
			if i == bad {
				r = rdmaWR(sids[i], verbs.WRRDMAWrite, b.s, 0, a.s.sge(0, 16))
				r.RKey ^= 0x5a5a00
			}
			a.post("a request", r)
		}
		what := fmt.Sprintf("round %d (bad request at %d of %d)", round, bad, ns)
		got := w.await(a.scq, ns, what+": requester")
		for i, c := range got {
			st := verbs.WCSuccess
			switch {
			case i == bad:
				st = verbs.WCRemAccessErr
			case bad >= 0 && i > bad:
				st = verbs.WCWRFlushErr
			}
			if c.WRID != sids[i] || c.Status != st {
				t.Errorf("%s: send completion %d: wr_id %#x %v, want %#x %v", what, i, c.WRID, c.Status, sids[i], st)
			}
		}
		// Each SEND consumed a receive; after a remote error the
		// responder is in ERR and flushes the rest (FLUSH-12).
		consumed := ns
		if bad >= 0 {
			consumed = nr
		}
		got = w.await(b.rcq, consumed, what+": responder")
		for i, c := range got {
			if c.WRID != rids[i] {
				t.Errorf("%s: receive completion %d (%v): wr_id %#x, want %#x", what, i, c.Status, c.WRID, rids[i])
			}
		}
	}
}

func qpNumLocal(t *tester, e *env) {
	w := newWire(t, e)
	shared := w.a.cq(256, nil)
	oa, ob := w.opts(), w.opts()
	oa.sendCQ, oa.recvCQ = shared, shared
	rc, rcb := w.connect2(verbs.QPTypeRC, oa, ob)
	uc, ucb := w.connect2(verbs.QPTypeUC, oa, ob)
	ud, udb := w.connect2(verbs.QPTypeUD, oa, ob)
	ah := w.ah(w.a, w.b, false)
	owner := map[uint64]*end{}
	post := func(x *end, id uint64, r verbs.SendWR) {
		owner[id] = x
		r.WRID = id
		x.post("a request", r)
	}
	// Successes in both directions, one remote error, then flushes.
	back := w.ah(w.b, w.a, false)
	for i, x := range []*end{rc, uc, ud} {
		peer := []*end{rcb, ucb, udb}[i]
		id := uint64(10 * (i + 1))
		owner[id+5] = x
		x.recvAt("a receive", id+5, 0, 128)
		peer.recvAt("the peer's receive", 1, 0, 128)
		post(x, id, addressed(sendWR(0, verbs.WRSend, x.s.sge(0, 8)), ah, peer))
		peer.post("a reply", addressed(sendWR(0, verbs.WRSend, peer.s.sge(0, 8)), back, x))
	}
	bad := rdmaWR(0, verbs.WRRDMAWrite, w.b, 0, rc.s.sge(0, 8))
	bad.RKey ^= 0x5a5a00
	post(rc, 40, bad)
	post(rc, 41, sendWR(0, verbs.WRSend, rc.s.sge(0, 8)))
	owner[42] = rc
	rc.recvAt("a receive flushed later", 42, 256, 8)
	got := w.await(shared, len(owner), "three QPs on one CQ")
	for _, c := range got {
		x := owner[c.WRID]
		if x == nil {
			t.Errorf("a completion with wr_id %d, never posted on side A", c.WRID)
			continue
		}
		if c.QPNum != x.q.Num() {
			t.Errorf("wr_id %d (%v, %v QP): qp_num %#x, want %#x", c.WRID, c.Status, x.typ, c.QPNum, x.q.Num())
		}
	}
}

func requesterOpcodes(t *tester, e *env) {
	w := newWire(t, e)
	id := uint32(0)
	for _, o := range opChecks {
		for _, typ := range o.types {
			id++
			a, b, ah := w.pair(typ, w.opts())
			what := fmt.Sprintf("%v on %v", o.op, typ)
			if s, _, _ := w.roundTrip(what, o, a, b, ah, id, 7, 16); s.Status == verbs.WCSuccess && s.Opcode != o.send {
				t.Errorf("%s: requester opcode %v, want %v", what, s.Opcode, o.send)
			}
		}
	}
}

func receiveOpcodes(t *tester, e *env) {
	w := newWire(t, e)
	id := uint32(0)
	for _, o := range opChecks {
		for _, typ := range o.types {
			id++
			a, b, ah := w.pair(typ, w.opts())
			what := fmt.Sprintf("%v on %v", o.op, typ)
			_, r, _ := w.roundTrip(what, o, a, b, ah, id, 7, 16)
			if len(r) == 1 && r[0].Status == verbs.WCSuccess && r[0].Opcode != o.recv {
				t.Errorf("%s: responder opcode %v, want %v", what, r[0].Opcode, o.recv)
			}
		}
	}
}

func recvFlagBit(t *tester, e *env) {
	// Every poll of the transport cases checks this where the CQ tells
	// the queue (wire.checkWC); here each opcode on each transport,
	// and a QP whose queues share one CQ, where only wr_id tells.
	w := newWire(t, e)
	id := uint32(0)
	for _, o := range opChecks {
		for _, typ := range o.types {
			id++
			a, b, ah := w.pair(typ, w.opts())
			what := fmt.Sprintf("%v on %v", o.op, typ)
			s, r, _ := w.roundTrip(what, o, a, b, ah, id, 7, 16)
			wantRecvBit(t, what+": requester", s, false)
			for _, c := range r {
				wantRecvBit(t, what+": responder", c, true)
			}
		}
	}
	oa, ob := w.opts(), w.opts()
	oa.sendCQ = w.a.cq(64, nil)
	oa.recvCQ = oa.sendCQ
	ob.sendCQ = w.b.cq(64, nil)
	ob.recvCQ = ob.sendCQ
	a, b := w.connect2(verbs.QPTypeRC, oa, ob)
	for i := range 3 {
		a.recvAt("A's receive", uint64(100+i), 128*i, 128)
		b.recvAt("B's receive", uint64(100+i), 128*i, 128)
	}
	a.post("A's requests", sendWR(1, verbs.WRSend, a.s.sge(1024, 8)), rdmaWR(2, verbs.WRRDMAWriteWithImm, b.s, 2048, a.s.sge(1024, 8)),
		rdmaWR(3, verbs.WRRDMARead, b.s, 2048, a.s.sge(1024, 8)))
	b.post("B's requests", sendWR(1, verbs.WRSendWithImm, b.s.sge(1024, 8)), rdmaWR(2, verbs.WRRDMAWrite, a.s, 2048, b.s.sge(1024, 8)))
	for _, x := range []*end{a, b} {
		for _, c := range w.await(x.scq, 4, "side "+x.s.name+": both queues on one CQ") {
			wantRecvBit(t, fmt.Sprintf("side %s, one CQ for both queues: wr_id %d", x.s.name, c.WRID), c, c.WRID >= 100)
		}
	}
}

func receiveFlags(t *tester, e *env) {
	w := newWire(t, e)
	id := uint32(0)
	for _, o := range opChecks {
		if !o.recvs {
			continue
		}
		for _, typ := range o.types {
			id++
			a, b, ah := w.pair(typ, w.opts())
			what := fmt.Sprintf("%v on %v", o.op, typ)
			_, r, inv := w.roundTrip(what, o, a, b, ah, id, 0x12345678, 16)
			if len(r) != 1 || r[0].Status != verbs.WCSuccess {
				continue
			}
			f := r[0].WCFlags
			if got, want := f&verbs.WCWithImm != 0, o.op.HasImm(); got != want {
				t.Errorf("%s: WITH_IMM is %v, want %v (flags %v)", what, got, want, f)
			}
			if got, want := f&verbs.WCWithInv != 0, o.op == verbs.WRSendWithInv; got != want {
				t.Errorf("%s: WITH_INV is %v, want %v (flags %v)", what, got, want, f)
			}
			if f&verbs.WCWithInv != 0 && r[0].InvalidatedRkey() != inv {
				t.Errorf("%s: invalidated_rkey %#x, want %#x", what, r[0].InvalidatedRkey(), inv)
			}
		}
	}
	// UD: GRH is set exactly when the datagram carried one, which a
	// global address handle (and every RoCE port) makes it do.
	for _, global := range []bool{false, true} {
		if !global && (w.b.port.Ethernet || w.b.port.LID == 0) {
			continue
		}
		a, b := w.connect(verbs.QPTypeUD, w.opts())
		ah := w.ah(w.a, w.b, global)
		b.recvAt("a UD receive", 1, 0, 100)
		a.post("a UD SEND", datagram(sendWR(1, verbs.WRSend, a.s.sge(0, 8)), ah, b))
		w.await(a.scq, 1, "UD sender")
		r := w.await(b.rcq, 1, "UD receiver")[0]
		if got := r.WCFlags&verbs.WCGRH != 0; r.Status == verbs.WCSuccess && got != global {
			t.Errorf("UD SEND through a global=%v AH: GRH flag %v, want %v", global, got, global)
		}
	}
}

func immData(t *tester, e *env) {
	w := newWire(t, e)
	rng := rand.New(rand.NewPCG(9, 0x7709))
	for round := range 12 {
		typ := qpTypes[round%3]
		o := opChecks[1] // SEND_WITH_IMM
		if typ != verbs.QPTypeUD && round%2 == 0 {
			o = opChecks[4] // WRITE_WITH_IMM
		}
		a, b, ah := w.pair(typ, w.opts())
		imm := rng.Uint32()
		what := fmt.Sprintf("%v on %v, imm %#08x", o.op, typ, imm)
		if _, r, _ := w.roundTrip(what, o, a, b, ah, uint32(round), imm, 8); len(r) == 1 && r[0].Status == verbs.WCSuccess {
			if r[0].ImmData != imm || r[0].WCFlags&verbs.WCWithImm == 0 {
				t.Errorf("%s: imm_data %#08x flags %v, want %#08x with WITH_IMM", what, r[0].ImmData, r[0].WCFlags, imm)
			}
		}
	}
}

func receiveByteLen(t *tester, e *env) {
	w := newWire(t, e)
	rng := rand.New(rand.NewPCG(10, 0x7710))
	for round := range 12 {
		typ := qpTypes[round%3]
		o := opChecks[round%2] // SEND or SEND_WITH_IMM
		if typ != verbs.QPTypeUD && round%4 == 3 {
			o = opChecks[4] // WRITE_WITH_IMM
		}
		n := rng.IntN(2000)
		if typ == verbs.QPTypeUD {
			n = rng.IntN(min(2000, w.b.port.ActiveMTU.Bytes()+1))
		}
		a, b, ah := w.pair(typ, w.opts())
		what := fmt.Sprintf("%v of %d bytes on %v", o.op, n, typ)
		if _, r, _ := w.roundTrip(what, o, a, b, ah, uint32(round), 1, n); len(r) == 1 && r[0].Status == verbs.WCSuccess {
			if want := n + grhLen(typ); int(r[0].ByteLen) != want {
				t.Errorf("%s: byte_len %d, want %d", what, r[0].ByteLen, want)
			}
		}
	}
}

func requesterByteLen(t *tester, e *env) {
	w := newWire(t, e)
	rng := rand.New(rand.NewPCG(11, 0x7711))
	for round, o := range []opCheck{opChecks[5], opChecks[5], opChecks[5], opChecks[6], opChecks[7]} {
		a, b, ah := w.pair(verbs.QPTypeRC, w.opts())
		n := 1 + rng.IntN(3000)
		want := n
		if o.op != verbs.WRRDMARead {
			want = 8
		}
		what := fmt.Sprintf("%v of %d bytes", o.op, want)
		if s, _, _ := w.roundTrip(what, o, a, b, ah, uint32(round), 0, n); s.Status == verbs.WCSuccess && int(s.ByteLen) != want {
			t.Errorf("%s: byte_len %d, want %d", what, s.ByteLen, want)
		}
	}
}

func udSource(t *tester, e *env) {
	w := newWire(t, e)
	b := w.newEnd(w.b, verbs.QPTypeUD, w.opts())
	w.bring(b, nil, verbs.QPStateRTS)
	av := avTo(w.b, false)
	ah, err := w.a.pd.CreateAH(verbs.AHAttr{PortNum: 1, DLID: av.DLID, SL: 3, IsGlobal: av.IsGlobal, GRH: verbs.GlobalRoute{DGID: av.GRH.DGID, HopLimit: av.GRH.HopLimit}})
	if err != nil {
		t.Fatalf("ibv_create_ah(sl=3): %v", err)
	}
	t.Cleanup(func() { _ = ah.Destroy() })
	for i := range 3 {
		a := w.newEnd(w.a, verbs.QPTypeUD, w.opts())
		w.bring(a, nil, verbs.QPStateRTS)
		b.recvAt("a receive", uint64(i), i*128, 128)
		a.post("a datagram", datagram(sendWR(uint64(i), verbs.WRSend, a.s.sge(0, 8)), ah, b))
		w.await(a.scq, 1, "sender")
		r := w.await(b.rcq, 1, "receiver")[0]
		what := fmt.Sprintf("datagram from the %d-th QP of side A", i+1)
		if !b.want(what, r, uint64(i), verbs.WCSuccess) {
			continue
		}
		if r.SrcQP != a.q.Num() {
			t.Errorf("%s: src_qp %#x, want %#x", what, r.SrcQP, a.q.Num())
		}
		if !w.a.port.Ethernet && (r.SLID != w.a.port.LID || r.SL != 3) {
			t.Errorf("%s: slid %#x sl %d, want the sending port's LID %#x and the AH's sl 3", what, r.SLID, r.SL, w.a.port.LID)
		}
	}
}

func requesterWithImmFlag(t *tester, e *env) {
	w := newWire(t, e)
	for i, o := range []opCheck{opChecks[1], opChecks[4]} {
		for _, typ := range []verbs.QPType{verbs.QPTypeRC, verbs.QPTypeUC} {
			a, b, ah := w.pair(typ, w.opts())
			what := fmt.Sprintf("%v on %v", o.op, typ)
			s, _, _ := w.roundTrip(what, o, a, b, ah, uint32(i), 0xabcd, 8)
			if s.Status != verbs.WCSuccess {
				continue
			}
			if got := s.WCFlags&verbs.WCWithImm != 0; got != w.tp.SendWCImm {
				t.Errorf("%s: requester WITH_IMM is %v; the profile's reading (SendWCImm) says %v", what, got, w.tp.SendWCImm)
			} else if got && s.ImmData != 0xabcd {
				t.Errorf("%s: requester imm_data %#x, want 0xabcd", what, s.ImmData)
			}
		}
	}
}

// wantRecvBit checks a successful completion's opcode: a classic one, with
// IBV_WC_RECV set exactly when recv (WC-06).
func wantRecvBit(t *tester, what string, c verbs.WC, recv bool) {
	t.Helper()
	if c.Status != verbs.WCSuccess {
		return
	}
	if !model.ClassicOpcode(c.Opcode) || c.Opcode.IsRecv() != recv {
		t.Errorf("%s: opcode %v; want a classic opcode whose IBV_WC_RECV bit is %v", what, c.Opcode, recv)
	}
}
