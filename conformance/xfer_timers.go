package conformance

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/verbsim/verbsim/verbs"
)

// Cases that wait for time: RNR (XFER-07, XFER-08, SRQ-09), the ACK
// timeout (XFER-10, FLUSH-11), retransmission (XFER-25) and link flaps
// (ASYNC-16). With a Clock the cases move virtual time and check when
// things happen; without one they wait in wall time and check only what
// happens.

// rnrTenMicros is the RNR delay of each min_rnr_timer code in units of
// 10 µs (XFER-08); code 0 is the longest.
var rnrTenMicros = [32]uint64{
	65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192,
	256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152,
}

// rnrTicks is the RNR delay of code c in ticks (nanoseconds).
func rnrTicks(c uint8) uint64 { return rnrTenMicros[c&31] * 10_000 }

// timeoutTicks is the ACK timeout of code c in ticks: 4.096 µs × 2^c.
func timeoutTicks(c uint8) uint64 { return 4096 << c }

// pause lets ticks nanoseconds of the device's time pass: Tick with a clock, a sleep
// without.
func (w *wire) pause(ticks uint64) {
	if w.clock != nil {
		w.clock.Tick(ticks)
		return
	}
	time.Sleep(time.Duration(ticks))
}

// noneYet checks that cq has nothing, without letting time pass.
func (w *wire) noneYet(cq verbs.CQ, what string) bool {
	w.t.Helper()
	got, err := w.pollNow(cq)
	if len(got) != 0 || err != nil {
		w.t.Errorf("%s: want no completion yet, got %s (err %v)", what, showWCs(got), err)
		return false
	}
	return true
}

// xferTimersCases are the cases of the XFER, SRQ, FLUSH, ASYNC families in xfer_timers.go.
var xferTimersCases = []Case{
	{"XFER-07", "RC receiver not ready: RNR NAKs use rnr_retry; a receive posted in time lets the message through", rnrRetry},
	{"XFER-08", "the RNR wait is the responder's min_rnr_timer; the retry budget is the requester's rnr_retry", rnrTimer},
	{"XFER-10", "[CONFLICT] the ACK timeout: retry_cnt retransmissions, then RETRY_EXC_ERR; 7 per reading; timeout 0 waits forever", ackTimeout},
	{"XFER-25", "RC delivers every message once and in order across losses, duplicates and delays", rcLossy},
	{"SRQ-09", "an empty SRQ is an empty receive queue: RNR on RC, a drop on UD", emptySRQ},
	{"FLUSH-11", "a QP in ERR answers nothing: an RC peer fails with RETRY_EXC_ERR", errQPSilent},
	{"ASYNC-16", "a link flap raises PORT_ERR then PORT_ACTIVE naming the port", linkFlap},
}

func rnrRetry(t *tester, e *env) {
	w := newWire(t, e)
	for _, op := range []verbs.WROpcode{verbs.WRSend, verbs.WRRDMAWriteWithImm} {
		for _, retry := range []uint8{0, 2} {
			o := w.opts()
			o.rnrRetry = retry
			a, b := w.connect(verbs.QPTypeRC, o)
			a.post("a message to an empty receive queue", rdmaWR(1, op, b.s, 0, a.s.sge(0, 8)), sendWR(2, verbs.WRSend, a.s.sge(0, 8)))
			what := fmt.Sprintf("%v, no receive, rnr_retry %d", op, retry)
			got := w.await(a.scq, 2, what)
			a.want(what, got[0], 1, verbs.WCRNRRetryExcErr)
			a.want(what+": the request after it", got[1], 2, verbs.WCWRFlushErr)
			a.wantState(what, verbs.QPStateErr)
			b.wantState(what+" (an RNR is no error of the responder)", verbs.QPStateRTS)
		}
		// rnr_retry 7: retried until a receive comes. The message spans
		// four packets.
		o := w.opts()
		o.minRNR, o.mtu = 1, verbs.MTU256 // 10 µs
		a, b := w.connect(verbs.QPTypeRC, o)
		msg := message(a.s, 0, 1000, int(op))
		a.post("a message to an empty receive queue", rdmaWR(1, op, b.s, 0, a.s.sge(0, 1000)))
		what := fmt.Sprintf("%v of 4 packets, rnr_retry 7, the receive posted 5 ms later", op)
		w.pause(5_000_000)
		w.noneYet(a.scq, what+": before the receive")
		b.recvAt("the late receive", 7, 0, 1024)
		a.want(what, w.await(a.scq, 1, what)[0], 1, verbs.WCSuccess)
		c := w.await(b.rcq, 1, what+": responder")[0]
		if b.want(what+": responder", c, 7, verbs.WCSuccess) && (c.ByteLen != 1000 || !bytes.Equal(b.s.buf[:1000], msg)) {
			t.Errorf("%s: byte_len %d, or the bytes differ from the message", what, c.ByteLen)
		}
	}
}

func rnrTimer(t *tester, e *env) {
	w := newWire(t, e)
	// The budget: rnr_retry 2 at the requester fails even though the
	// responder's own rnr_retry is 7.
	oa, ob := w.opts(), w.opts()
	oa.rnrRetry, ob.rnrRetry = 2, 7
	a, _ := w.connect2(verbs.QPTypeRC, oa, ob)
	a.post("a SEND to an empty receive queue", sendWR(1, verbs.WRSend, a.s.sge(0, 8)))
	a.want("requester rnr_retry 2, responder rnr_retry 7", w.await(a.scq, 1, "budget")[0], 1, verbs.WCRNRRetryExcErr)
	if w.clock == nil {
		t.Logf("the device has no clock (conformance.Clock): the RNR delays are not measured")
		return
	}
	for c := range uint8(32) {
		r := rnrTicks(c)
		// The requester's own timer is far from the responder's, so
		// that using it shows.
		oa, ob := w.opts(), w.opts()
		oa.minRNR, ob.minRNR = 31, c
		if r >= rnrTicks(31)/4 {
			oa.minRNR = 1
		}
		oa.rnrRetry = 2
		a, b := w.connect2(verbs.QPTypeRC, oa, ob)
		a.post("a SEND to an empty receive queue", sendWR(1, verbs.WRSend, a.s.sge(0, 8)))
		b.recvAt("a receive, in time for the first retry", 1, 0, 64)
		what := fmt.Sprintf("responder min_rnr_timer %d (%d µs), requester's %d", c, r/1000, oa.minRNR)
		w.clock.Tick(r - 1)
		if !w.noneYet(a.scq, what+": the retry came before the delay") {
			continue
		}
		w.clock.Tick(r)
		got, _ := w.pollNow(a.scq)
		if len(got) != 1 || got[0].Status != verbs.WCSuccess {
			t.Errorf("%s: after twice the delay the message has not gone through: %s", what, showWCs(got))
		}
	}
	// Each RNR uses one unit of the budget: rnr_retry 2 fails at the
	// third NAK, two delays after the first.
	oa, ob = w.opts(), w.opts()
	oa.rnrRetry, ob.minRNR = 2, 14 // 1.28 ms
	r := rnrTicks(14)
	a, _ = w.connect2(verbs.QPTypeRC, oa, ob)
	a.post("a SEND to an empty receive queue", sendWR(1, verbs.WRSend, a.s.sge(0, 8)))
	w.clock.Tick(2*r - 1)
	w.noneYet(a.scq, "rnr_retry 2, before the second retry")
	w.clock.Tick(r)
	if got, _ := w.pollNow(a.scq); len(got) != 1 || got[0].Status != verbs.WCRNRRetryExcErr {
		t.Errorf("rnr_retry 2: three delays after the first NAK, completions %s, want RNR_RETRY_EXC_ERR", showWCs(got))
	}
}

func ackTimeout(t *tester, e *env) {
	w := newWire(t, e)
	const code = 8 // 1.05 ms
	tester := timeoutTicks(code)
	for _, retry := range []uint8{0, 2, 7} {
		o := w.opts()
		o.timeout, o.retry = code, retry
		a, b := w.connect(verbs.QPTypeRC, o)
		b.toState(verbs.QPStateErr) // a silent peer
		a.post("two SENDs to a silent peer", sendWR(1, verbs.WRSend, a.s.sge(0, 8)), sendWR(2, verbs.WRSend, a.s.sge(0, 8)))
		what := fmt.Sprintf("retry_cnt %d against a silent peer", retry)
		if retry == 7 && w.tp.InfiniteRetry7 {
			if w.clock != nil {
				w.clock.Tick(100 * tester)
				w.noneYet(a.scq, what+" (InfiniteRetry7: retries without end)")
			}
			continue
		}
		if w.clock != nil {
			w.clock.Tick(uint64(retry+1)*tester - 1)
			w.noneYet(a.scq, what+", before the last timeout")
			w.clock.Tick(tester)
		}
		got := w.await(a.scq, 2, what)
		a.want(what, got[0], 1, verbs.WCRetryExcErr)
		a.want(what+": the request after it", got[1], 2, verbs.WCWRFlushErr)
		a.wantState(what, verbs.QPStateErr)
	}
	o := w.opts()
	o.timeout = 0
	a, b := w.connect(verbs.QPTypeRC, o)
	b.toState(verbs.QPStateErr)
	a.post("a SEND to a silent peer", sendWR(1, verbs.WRSend, a.s.sge(0, 8)))
	if w.clock != nil {
		w.clock.Tick(1 << 40) // 18 minutes
	} else {
		time.Sleep(Grace)
	}
	w.noneYet(a.scq, "timeout 0 (wait forever) against a silent peer")
	a.wantState("timeout 0 against a silent peer", verbs.QPStateRTS)
}

func rcLossy(t *tester, e *env) {
	w := newWire(t, e)
	f, ok := e.Dev.(Faults)
	if !ok {
		t.Logf("the device cannot inject faults (conformance.Faults): a clean wire only")
	}
	for _, p := range [][3]float64{{0.05, 0.1, 0.1}, {0, 0.3, 0.3}} {
		if ok {
			e.WantOK("setting faults", f.SetFaults(p[0], p[1], p[2]))
		}
		exactlyOnce(w, fmt.Sprintf("drop %v, duplicate %v, delay %v", p[0], p[1], p[2]))
		if ok {
			e.WantOK("clearing faults", f.SetFaults(0, 0, 0))
		}
	}
}

func emptySRQ(t *tester, e *env) {
	w := newWire(t, e)
	for _, typ := range []verbs.QPType{verbs.QPTypeRC, verbs.QPTypeUD} {
		s := w.srqOn(w.b, 8)
		oa, ob := w.opts(), w.opts()
		oa.rnrRetry = 0
		ob.srq = s
		a, b := w.connect2(typ, oa, ob)
		var ah verbs.AH
		if typ == verbs.QPTypeUD {
			ah = w.ah(w.a, w.b, false)
		}
		a.post("a SEND to a QP with an empty SRQ", addressed(sendWR(1, verbs.WRSend, a.s.sge(0, 8)), ah, b))
		what := fmt.Sprintf("%v SEND to a QP with an empty SRQ", typ)
		want := verbs.WCSuccess
		if typ == verbs.QPTypeRC {
			want = verbs.WCRNRRetryExcErr
		}
		a.want(what, w.await(a.scq, 1, what)[0], 1, want)
		w.quiet(b.rcq, what)
		if typ == verbs.QPTypeUD {
			if n, err := s.PostRecv([]verbs.RecvWR{{WRID: 5, SGList: []verbs.SGE{b.s.sge(0, 128)}}}); n != 1 || err != nil {
				t.Fatalf("ibv_post_srq_recv: %d, %v", n, err)
			}
			a.post("a second SEND", datagram(sendWR(2, verbs.WRSend, a.s.sge(0, 8)), ah, b))
			w.await(a.scq, 1, what+", again")
			b.want(what+", once the SRQ has a receive", w.await(b.rcq, 1, "receiver")[0], 5, verbs.WCSuccess)
		}
	}
}

func errQPSilent(t *tester, e *env) {
	w := newWire(t, e)
	o := w.opts()
	o.retry = 2
	a, b := w.connect(verbs.QPTypeRC, o)
	b.recvAt("a receive", 1, 0, 64)
	b.toState(verbs.QPStateErr)
	b.want("the receive of the QP moved to ERR", w.await(b.rcq, 1, "flush")[0], 1, verbs.WCWRFlushErr)
	a.post("a SEND, a WRITE and a READ to a QP in ERR", sendWR(1, verbs.WRSend, a.s.sge(0, 8)),
		rdmaWR(2, verbs.WRRDMAWrite, b.s, 0, a.s.sge(0, 8)), rdmaWR(3, verbs.WRRDMARead, b.s, 0, a.s.sge(64, 8)))
	got := w.await(a.scq, 3, "requester")
	a.want("the first request to a QP in ERR", got[0], 1, verbs.WCRetryExcErr)
	w.quiet(b.rcq, "a QP in ERR receiving packets")
}

func linkFlap(t *tester, e *env) {
	w := newWire(t, e)
	lc, ok := e.Dev.(LinkControl)
	if !ok {
		t.Logf("the device cannot take its link down (conformance.LinkControl); skipped")
		return
	}
	w.allEvents() // nothing before
	e.WantOK("link down", lc.SetPortState(1, false))
	if p, err := queryPortInfo(w.a.ctx, 1); err != nil || p.Active {
		t.Errorf("ibv_query_port after the link went down: active=%v err=%v, want not active", p.Active, err)
	}
	e.WantOK("link up", lc.SetPortState(1, true))
	evs := w.a.events()
	var types []verbs.EventType
	for _, ev := range evs {
		types = append(types, ev.typ)
		if ev.port != 1 || ev.obj != nil {
			t.Errorf("%v names port %d and object %v, want port 1 and no object", ev.typ, ev.port, ev.obj)
		}
	}
	if len(types) != 2 || types[0] != verbs.EventPortErr || types[1] != verbs.EventPortActive {
		t.Errorf("events after a link flap: %v, want [PORT_ERR PORT_ACTIVE]", types)
	}
	if !w.loop {
		if evs := w.b.events(); len(evs) != 0 {
			t.Errorf("the other device's context got %v from a flap of this device's port", evs)
		}
	}
	// Traffic flows again once the link is up.
	a, b := w.connect(verbs.QPTypeRC, w.opts())
	b.recvAt("a receive", 1, 0, 64)
	a.post("a SEND after the flap", sendWR(1, verbs.WRSend, a.s.sge(0, 8)))
	a.want("a SEND after the flap", w.await(a.scq, 1, "after the flap")[0], 1, verbs.WCSuccess)
	if w.clock == nil {
		return
	}
	// A SEND posted while the link is down is lost, retransmitted on
	// the ACK timeout, and goes through once the link is back within
	// its retry budget.
	o := w.opts()
	o.timeout, o.retry = 8, 3
	a, b = w.connect(verbs.QPTypeRC, o)
	b.recvAt("a receive", 1, 0, 64)
	e.WantOK("link down", lc.SetPortState(1, false))
	a.post("a SEND while the link is down", sendWR(1, verbs.WRSend, a.s.sge(0, 8)))
	w.clock.Tick(timeoutTicks(8) * 3 / 2)
	w.noneYet(b.rcq, "a SEND while the link is down")
	e.WantOK("link up", lc.SetPortState(1, true))
	a.want("a SEND retransmitted after the link came back", w.await(a.scq, 1, "link back")[0], 1, verbs.WCSuccess)
	b.want("a SEND retransmitted after the link came back: receiver", w.await(b.rcq, 1, "link back")[0], 1, verbs.WCSuccess)
	w.allEvents()
}

// exactlyOnce runs, per round, a SEND, a WRITE_WITH_IMM, a READ of what
// that wrote and a FETCH_AND_ADD of 1, each spanning several packets, and
// checks that every message arrived once, in order, intact.
func exactlyOnce(w *wire, what string) {
	w.t.Helper()
	t := w.t
	o := w.opts()
	o.mtu, o.timeout, o.retry = verbs.MTU256, 8, 7
	a, b := w.connect(verbs.QPTypeRC, o)
	const n = 12
	const counter = 60000
	clear(b.s.buf)
	for i := range 2 * n {
		b.recvAt("a receive", uint64(i), i*1024, 1024)
	}
	for i := range n {
		message(a.s, i*1024, 600, i)
		message(a.s, 24576+i*1024, 700, 100+i)
		wi := rdmaWR(uint64(4*i+1), verbs.WRRDMAWriteWithImm, b.s, 24576+i*1024, a.s.sge(24576+i*1024, 700))
		wi.Imm = uint32(i)
		rd := rdmaWR(uint64(4*i+2), verbs.WRRDMARead, b.s, 24576+i*1024, a.s.sge(40000+i*1024, 700))
		add := rdmaWR(uint64(4*i+3), verbs.WRAtomicFetchAndAdd, b.s, counter, a.s.sge(59000+8*i, 8))
		add.CompareAdd = 1
		a.post("a round", sendWR(uint64(4*i), verbs.WRSend, a.s.sge(i*1024, 600)), wi, rd, add)
	}
	seen := map[uint64]bool{}
	for k, c := range w.await(a.scq, 4*n, what+": requester") {
		if !a.want(what+": requester", c, uint64(k), verbs.WCSuccess) {
			continue
		}
		i := k / 4
		switch k % 4 {
		case 2:
			if !bytes.Equal(a.s.buf[40000+i*1024:40000+i*1024+700], a.s.buf[24576+i*1024:24576+i*1024+700]) {
				t.Errorf("%s: READ %d did not fetch what the WRITE before it wrote", what, i)
			}
		case 3:
			v := binary.NativeEndian.Uint64(a.s.buf[59000+8*i:])
			if seen[v] || v >= n {
				t.Errorf("%s: FETCH_AND_ADD %d saw %d: an add was executed twice", what, i, v)
			}
			seen[v] = true
		}
	}
	for k, c := range w.await(b.rcq, 2*n, what+": responder") {
		if !b.want(what+": responder", c, uint64(k), verbs.WCSuccess) {
			continue
		}
		i := k / 2
		if k%2 == 0 && (c.Opcode != verbs.WCRecv || c.ByteLen != 600 || !bytes.Equal(b.s.buf[k*1024:k*1024+600], a.s.buf[i*1024:i*1024+600])) {
			t.Errorf("%s: receive %d: %v byte_len %d, or its bytes are not SEND %d", what, k, c.Opcode, c.ByteLen, i)
		}
		if k%2 == 1 && (c.Opcode != verbs.WCRecvRDMAWithImm || c.ImmData != uint32(i) || c.ByteLen != 700) {
			t.Errorf("%s: receive %d: %v imm %d byte_len %d, want WRITE_WITH_IMM %d of 700 bytes", what, k, c.Opcode, c.ImmData, c.ByteLen, i)
		}
	}
	if !bytes.Equal(b.s.buf[24576:24576+n*1024], a.s.buf[24576:24576+n*1024]) {
		t.Errorf("%s: the WRITEs' data is not in place", what)
	}
	if got := binary.NativeEndian.Uint64(b.s.buf[counter:]); got != n {
		t.Errorf("%s: %d FETCH_AND_ADDs of 1 left %d: duplicates were executed", what, n, got)
	}
}
