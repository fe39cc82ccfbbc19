package conformance

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/verbsim/verbsim/verbs"
)

// Cases of the XFER family about where data goes when nothing fails:
// receive consumption (XFER-01), scatter and gather (XFER-02, XFER-03),
// empty messages (XFER-04), RDMA WRITE, WRITE_WITH_IMM and READ (XFER-11..13),
// ordering (XFER-18), the UD receive layout (XFER-21) and zero-length RDMA
// (XFER-24).

// pair connects a pair of QPs of type typ; for UD it also returns an AH
// from A to B.
func (w *wire) pair(typ verbs.QPType, o endOpts) (a, b *end, ah verbs.AH) {
	w.t.Helper()
	a, b = w.connect(typ, o)
	if typ == verbs.QPTypeUD {
		ah = w.ah(w.a, w.b, false)
	}
	return a, b, ah
}

// addressed addresses r from a to b: for UD, through ah.
func addressed(r verbs.SendWR, ah verbs.AH, b *end) verbs.SendWR {
	if b.typ == verbs.QPTypeUD {
		return datagram(r, ah, b)
	}
	return r
}

// grhLen is the room a UD receive buffer keeps for the GRH (XFER-21).
func grhLen(typ verbs.QPType) int {
	if typ == verbs.QPTypeUD {
		return 40
	}
	return 0
}

// xferDataCases are the cases of the XFER family in xfer_data.go.
var xferDataCases = []Case{
	{"XFER-01", "each message consumes the oldest receive request, whatever its packet count", oldestReceive},
	{"XFER-02", "a message is scattered over the receive SGEs in order; the rest stays untouched", scatter},
	{"XFER-03", "the message sent is the concatenation of the send SGEs in order", gather},
	{"XFER-04", "a SEND without SGEs consumes a receive and reports byte_len 0", sendWithoutSGEs},
	{"XFER-11", "RDMA WRITE places the data, consumes no receive and completes nothing remotely", rdmaWrite},
	{"XFER-12", "WRITE_WITH_IMM places the data and consumes one receive, even one without SGEs", writeWithImm},
	{"XFER-13", "RDMA READ copies the remote range; byte_len is its length; no responder completion", rdmaRead},
	{"XFER-18", "an earlier WRITE's data is in place when the later SEND completes remotely", writeBeforeSend},
	{"XFER-21", "a UD receive keeps 40 bytes for the GRH; the payload starts at offset 40", udGRHSpace},
	{"XFER-24", "zero-length READ and WRITE need no valid rkey or address", zeroLengthRDMA},
}

func oldestReceive(t *tester, e *env) {
	w := newWire(t, e)
	rng := rand.New(rand.NewPCG(1, 0x8801))
	for round := range 9 {
		typ := qpTypes[round%3]
		o := w.opts()
		o.mtu = verbs.MTU256
		a, b, ah := w.pair(typ, o)
		k := 1 + rng.IntN(8)
		m := 1 + rng.IntN(k)
		for i := range k {
			b.recvAt("receives", uint64(100+i), i*2048, 2048)
		}
		for i := range m {
			n := 1 + rng.IntN(1000)
			if typ == verbs.QPTypeUD {
				n = 1 + rng.IntN(200)
			}
			op := verbs.WRSend
			if rng.IntN(2) == 0 {
				op = verbs.WRSendWithImm
			}
			a.post("a message", addressed(sendWR(uint64(i), op, a.s.sge(0, n)), ah, b))
		}
		what := fmt.Sprintf("round %d: %v, %d receives posted, %d messages of up to 4 packets", round, typ, k, m)
		w.await(a.scq, m, what+": sender")
		got := w.await(b.rcq, m, what+": receiver")
		if want := idRange(100, m); !slices.Equal(idsOf(got), want) {
			t.Errorf("%s: receive wr_ids %v, want %v (the oldest first)", what, idsOf(got), want)
		}
	}
}

func scatter(t *tester, e *env) {
	w := newWire(t, e)
	rng := rand.New(rand.NewPCG(2, 0x8802))
	for round := range 12 {
		typ := qpTypes[round%3]
		a, b, ah := w.pair(typ, w.opts())
		// Up to max_recv_sge pieces, out of buffer order and with gaps.
		nsge := 1 + rng.IntN(int(b.o.cap.MaxRecvSGE))
		var sges []verbs.SGE
		var offs, lens []int
		total := 0
		for i := range nsge {
			n := 1 + rng.IntN(300)
			if i == 0 && typ == verbs.QPTypeUD {
				n += 40
			}
			off := 8192 * (nsge - i)
			sges = append(sges, b.s.sge(off, n))
			offs, lens = append(offs, off), append(lens, n)
			total += n
		}
		canary := byte(0xC0 + round)
		for i := range b.s.buf[:8192*(nsge+1)] {
			b.s.buf[i] = canary
		}
		msg := total - grhLen(typ) - rng.IntN(total-grhLen(typ))
		fill(a.s.buf[:msg], byte(round))
		b.recv("a scattered receive", verbs.RecvWR{WRID: 7, SGList: sges})
		a.post("a message", addressed(sendWR(1, verbs.WRSend, a.s.sge(0, msg)), ah, b))
		what := fmt.Sprintf("round %d: %v, %d bytes into %d SGEs of %v", round, typ, msg, nsge, lens)
		w.await(a.scq, 1, what+": sender")
		r := w.await(b.rcq, 1, what+": receiver")[0]
		if !b.want(what, r, 7, verbs.WCSuccess) {
			continue
		}
		if int(r.ByteLen) != msg+grhLen(typ) {
			t.Errorf("%s: byte_len %d, want %d", what, r.ByteLen, msg+grhLen(typ))
		}
		var placed []byte
		for i := range sges {
			placed = append(placed, b.s.buf[offs[i]:offs[i]+lens[i]]...)
		}
		want := a.s.buf[:msg]
		if got := placed[grhLen(typ) : grhLen(typ)+msg]; !bytes.Equal(got, want) {
			t.Errorf("%s: the payload did not land contiguously in SGE order", what)
		}
		if rest := placed[grhLen(typ)+msg:]; bytes.Count(rest, []byte{canary}) != len(rest) {
			t.Errorf("%s: the %d bytes past the message were written", what, len(rest))
		}
		if b.s.buf[offs[0]-1] != canary || b.s.buf[offs[nsge-1]+lens[nsge-1]] != canary {
			t.Errorf("%s: bytes next to the SGEs were written", what)
		}
	}
}

func gather(t *tester, e *env) {
	w := newWire(t, e)
	rng := rand.New(rand.NewPCG(3, 0x8803))
	fill(w.a.buf, 3)
	for round := range 12 {
		typ := qpTypes[round%3]
		a, b, ah := w.pair(typ, w.opts())
		nsge := 1 + rng.IntN(int(a.o.cap.MaxSendSGE))
		var sges []verbs.SGE
		var want []byte
		for range nsge {
			n, off := rng.IntN(200), rng.IntN(bufLen-200)
			sges = append(sges, a.s.sge(off, n))
			want = append(want, a.s.buf[off:off+n]...)
		}
		b.recvAt("a receive", 9, 0, 4096)
		a.post("a gathered message", addressed(sendWR(1, verbs.WRSend, sges...), ah, b))
		what := fmt.Sprintf("round %d: %v, %d SGEs, %d bytes", round, typ, nsge, len(want))
		w.await(a.scq, 1, what+": sender")
		r := w.await(b.rcq, 1, what+": receiver")[0]
		if !b.want(what, r, 9, verbs.WCSuccess) {
			continue
		}
		g := grhLen(typ)
		if int(r.ByteLen) != len(want)+g || !bytes.Equal(b.s.buf[g:g+len(want)], want) {
			t.Errorf("%s: the receiver got %d bytes that are not the SGEs' bytes in order", what, r.ByteLen)
		}
	}
}

func sendWithoutSGEs(t *tester, e *env) {
	w := newWire(t, e)
	for _, typ := range qpTypes {
		for _, op := range []verbs.WROpcode{verbs.WRSend, verbs.WRSendWithImm} {
			a, b, ah := w.pair(typ, w.opts())
			b.recvAt("a receive", 5, 0, 64)
			r := addressed(sendWR(1, op), ah, b)
			r.Imm = 0xfeedf00d
			a.post("an empty message", r)
			what := fmt.Sprintf("%v %v with num_sge 0", typ, op)
			if s := w.await(a.scq, 1, what+": sender")[0]; !a.want(what+": sender", s, 1, verbs.WCSuccess) {
				continue
			}
			c := w.await(b.rcq, 1, what+": receiver")[0]
			if !b.want(what+": receiver", c, 5, verbs.WCSuccess) {
				continue
			}
			if int(c.ByteLen) != grhLen(typ) || c.Opcode != verbs.WCRecv {
				t.Errorf("%s: receive completion %v len %d, want RECV len %d", what, c.Opcode, c.ByteLen, grhLen(typ))
			}
			if op == verbs.WRSendWithImm && (c.WCFlags&verbs.WCWithImm == 0 || c.ImmData != 0xfeedf00d) {
				t.Errorf("%s: flags %v imm %#x, want WITH_IMM and 0xfeedf00d", what, c.WCFlags, c.ImmData)
			}
		}
	}
}

func rdmaWrite(t *tester, e *env) {
	w := newWire(t, e)
	rng := rand.New(rand.NewPCG(11, 0x8811))
	for _, typ := range []verbs.QPType{verbs.QPTypeRC, verbs.QPTypeUC} {
		o := w.opts()
		o.mtu = verbs.MTU256
		a, b := w.connect(typ, o)
		b.recvAt("a receive kept for the SEND", 77, 60000, 64)
		for round := range 6 {
			n, src, dst := 1+rng.IntN(3000), rng.IntN(20000), 20000+rng.IntN(30000)
			fill(a.s.buf[src:src+n], byte(round+1))
			a.post("a WRITE", rdmaWR(uint64(round), verbs.WRRDMAWrite, b.s, dst, a.s.sge(src, n)))
			what := fmt.Sprintf("%v WRITE of %d bytes", typ, n)
			c := w.await(a.scq, 1, what)[0]
			if a.want(what, c, uint64(round), verbs.WCSuccess) && c.Opcode != verbs.WCRDMAWrite {
				t.Errorf("%s: requester opcode %v, want RDMA_WRITE", what, c.Opcode)
			}
			if !bytes.Equal(b.s.buf[dst:dst+n], a.s.buf[src:src+n]) {
				t.Errorf("%s: the remote range does not hold the source bytes", what)
			}
		}
		w.quiet(b.rcq, fmt.Sprintf("%v responder after six WRITEs", typ))
		a.post("a SEND after the WRITEs", sendWR(99, verbs.WRSend, a.s.sge(0, 8)))
		w.await(a.scq, 1, "the SEND")
		if r := w.await(b.rcq, 1, "the SEND's receive")[0]; r.WRID != 77 {
			t.Errorf("%v: the SEND after six WRITEs consumed wr_id %d, want 77: the WRITEs took none", typ, r.WRID)
		}
	}
}

func writeWithImm(t *tester, e *env) {
	w := newWire(t, e)
	for _, typ := range []verbs.QPType{verbs.QPTypeRC, verbs.QPTypeUC} {
		a, b := w.connect(typ, w.opts())
		fill(a.s.buf[:1500], 12)
		b.recv("a receive without SGEs", verbs.RecvWR{WRID: 31})
		r := rdmaWR(1, verbs.WRRDMAWriteWithImm, b.s, 30000, a.s.sge(0, 1500))
		r.Imm = 0x01020304
		a.post("a WRITE_WITH_IMM", r)
		what := fmt.Sprintf("%v WRITE_WITH_IMM of 1500 bytes", typ)
		w.await(a.scq, 1, what+": requester")
		c := w.await(b.rcq, 1, what+": responder")[0]
		if b.want(what, c, 31, verbs.WCSuccess) {
			if c.Opcode != verbs.WCRecvRDMAWithImm || c.WCFlags&verbs.WCWithImm == 0 || c.ImmData != 0x01020304 || c.ByteLen != 1500 {
				t.Errorf("%s: %v flags %v imm %#x len %d, want RECV_RDMA_WITH_IMM, WITH_IMM, 0x01020304, 1500",
					what, c.Opcode, c.WCFlags, c.ImmData, c.ByteLen)
			}
		}
		if !bytes.Equal(b.s.buf[30000:31500], a.s.buf[:1500]) {
			t.Errorf("%s: the data was not placed", what)
		}
	}
	// Without a receive: RNR at an RC responder, silence at a UC one.
	o := w.opts()
	o.rnrRetry = 0
	a, b := w.connect(verbs.QPTypeRC, o)
	a.post("a WRITE_WITH_IMM to an empty receive queue", rdmaWR(2, verbs.WRRDMAWriteWithImm, b.s, 0, a.s.sge(0, 8)))
	a.want("RC WRITE_WITH_IMM, no receive, rnr_retry 0", w.await(a.scq, 1, "RC, no receive")[0], 2, verbs.WCRNRRetryExcErr)
	a, b = w.connect(verbs.QPTypeUC, w.opts())
	a.post("a WRITE_WITH_IMM to an empty receive queue", rdmaWR(3, verbs.WRRDMAWriteWithImm, b.s, 0, a.s.sge(0, 8)))
	a.want("UC WRITE_WITH_IMM, no receive", w.await(a.scq, 1, "UC, no receive")[0], 3, verbs.WCSuccess)
	w.quiet(b.rcq, "UC WRITE_WITH_IMM without a receive")
}

func rdmaRead(t *tester, e *env) {
	w := newWire(t, e)
	rng := rand.New(rand.NewPCG(13, 0x8813))
	o := w.opts()
	o.mtu = verbs.MTU256
	a, b := w.connect(verbs.QPTypeRC, o)
	fill(b.s.buf, 13)
	for round := range 8 {
		n, src, dst := 1+rng.IntN(4000), rng.IntN(30000), rng.IntN(28000)
		// Two local SGEs: the bytes read fill them in order.
		cut := rng.IntN(n + 1)
		a.post("a READ", rdmaWR(uint64(round), verbs.WRRDMARead, b.s, src, a.s.sge(dst, cut), a.s.sge(dst+32768, n-cut)))
		what := fmt.Sprintf("READ of %d bytes", n)
		c := w.await(a.scq, 1, what)[0]
		if !a.want(what, c, uint64(round), verbs.WCSuccess) {
			continue
		}
		if c.Opcode != verbs.WCRDMARead || int(c.ByteLen) != n {
			t.Errorf("%s: %v byte_len %d, want RDMA_READ %d", what, c.Opcode, c.ByteLen, n)
		}
		got := append(slices.Clone(a.s.buf[dst:dst+cut]), a.s.buf[dst+32768:dst+32768+n-cut]...)
		if !bytes.Equal(got, b.s.buf[src:src+n]) {
			t.Errorf("%s: the local SGEs do not hold the remote bytes", what)
		}
	}
	w.quiet(b.rcq, "responder after eight READs")
}

func writeBeforeSend(t *tester, e *env) {
	w := newWire(t, e)
	for _, typ := range []verbs.QPType{verbs.QPTypeRC, verbs.QPTypeUC} {
		for _, last := range []verbs.WROpcode{verbs.WRSend, verbs.WRRDMAWriteWithImm} {
			o := w.opts()
			o.mtu = verbs.MTU256
			a, b := w.connect(typ, o)
			fill(a.s.buf[:4000], byte(last)+1)
			b.recvAt("the flag's receive", 1, 60000, 64)
			a.post("a WRITE", rdmaWR(10, verbs.WRRDMAWrite, b.s, 8192, a.s.sge(0, 4000)))
			a.post("then the flag", rdmaWR(11, last, b.s, 40000, a.s.sge(4000, 8)))
			what := fmt.Sprintf("%v WRITE then %v", typ, last)
			w.await(b.rcq, 1, what+": the flag's completion")
			// Look before anything else is polled: the flag's
			// completion must find the WRITE done.
			if !bytes.Equal(b.s.buf[8192:12192], a.s.buf[:4000]) {
				t.Errorf("%s: when the flag completed, the WRITE's data was not all in place", what)
			}
			w.await(a.scq, 2, what+": requester")
		}
	}
}

func udGRHSpace(t *tester, e *env) {
	w := newWire(t, e)
	a, b, ah := w.pair(verbs.QPTypeUD, w.opts())
	copy(a.s.buf, "abc")
	b.recvAt("a receive of 43 bytes", 1, 1000, 43)
	a.post("a UD SEND of abc", datagram(sendWR(1, verbs.WRSend, a.s.sge(0, 3)), ah, b))
	w.await(a.scq, 1, "sender")
	c := w.await(b.rcq, 1, "receiver")[0]
	if b.want("UD SEND of 3 bytes", c, 1, verbs.WCSuccess) && c.ByteLen != 43 {
		t.Errorf("byte_len %d, want 43 (40 + 3)", c.ByteLen)
	}
	if got := string(b.s.buf[1040:1043]); got != "abc" {
		t.Errorf("bytes 40..42 of the receive buffer hold %q, want \"abc\"", got)
	}
	// 42 bytes of room (40 + 2) do not hold 3 bytes of payload: the
	// datagram is dropped and the receive waits for one that fits.
	b.recvAt("a receive of 42 bytes", 2, 2000, 42)
	a.post("abc again", datagram(sendWR(2, verbs.WRSend, a.s.sge(0, 3)), ah, b))
	w.await(a.scq, 1, "sender, second datagram")
	w.quiet(b.rcq, "3 bytes into a receive of 40+2")
	a.post("two bytes", datagram(sendWR(3, verbs.WRSend, a.s.sge(0, 2)), ah, b))
	w.await(a.scq, 1, "sender, third datagram")
	if c := w.await(b.rcq, 1, "2 bytes into a receive of 40+2")[0]; b.want("2 bytes into 40+2", c, 2, verbs.WCSuccess) && c.ByteLen != 42 {
		t.Errorf("2 bytes into 40+2: byte_len %d, want 42", c.ByteLen)
	}
	// Through a global AH the GRH is there: the header the datagram came
	// with, between the two ports' GIDs (AV-05: the IPv6 layout, SGID at 8
	// and DGID at 24, or on RoCE v2 between IPv4-mapped GIDs the IPv4
	// header in the last 20 bytes).
	b.recvAt("a receive", 3, 3000, 100)
	a.post("a datagram with a GRH", datagram(sendWR(4, verbs.WRSend, a.s.sge(0, 3)), w.ah(w.a, w.b, true), b))
	w.await(a.scq, 1, "a datagram with a GRH")
	if c := w.await(b.rcq, 1, "a datagram with a GRH: receiver")[0]; b.want("a datagram with a GRH", c, 3, verbs.WCSuccess) {
		want := grhWant{hop: avTo(w.b, true).GRH.HopLimit, sgid: w.a.port.GID, dgid: w.b.port.GID, ethernet: w.b.port.Ethernet, transport: udTransportBytes(3, false)}
		if why := checkGRH(b.s.buf[3000:3040], want); why != "" || string(b.s.buf[3040:3043]) != "abc" {
			t.Errorf("a datagram with a GRH: the first 40 bytes are not a GRH from %x to %x followed by the payload (%s): % x", w.a.port.GID, w.b.port.GID, why, b.s.buf[3000:3043])
		}
	}
}

func zeroLengthRDMA(t *tester, e *env) {
	w := newWire(t, e)
	a, b := w.connect(verbs.QPTypeRC, w.opts())
	for i, op := range []verbs.WROpcode{verbs.WRRDMARead, verbs.WRRDMAWrite} {
		r := sendWR(uint64(i), op)
		r.RemoteAddr, r.RKey = 0xdead0000, 0
		a.post(fmt.Sprintf("%v of 0 bytes with rkey 0", op), r)
		what := fmt.Sprintf("zero-length %v with rkey 0 and a wild address", op)
		a.want(what, w.await(a.scq, 1, what)[0], uint64(i), verbs.WCSuccess)
	}
	a.wantState("after two zero-length RDMA requests", verbs.QPStateRTS)
	b.wantState("after two zero-length RDMA requests", verbs.QPStateRTS)
}
