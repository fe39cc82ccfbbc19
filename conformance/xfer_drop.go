package conformance

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/verbsim/verbsim/verbs"
)

// Cases of the XFER family about messages that vanish without an error at
// the receiver: no receive posted on UC/UD (XFER-09), UD above the MTU
// (XFER-20), UD addressing (XFER-22), UC without acknowledgements (XFER-26),
// connected QPs hearing only their peer (XFER-27) and QPs not ready to
// receive (XFER-28).

// message writes message i (n bytes, its number first) at off of s.
func message(s *side, off, n, i int) []byte {
	b := s.buf[off : off+n]
	fill(b, byte(i))
	if n >= 4 {
		binary.BigEndian.PutUint32(b, uint32(i))
	}
	return b
}

// xferDropCases are the cases of the XFER family in xfer_drop.go.
var xferDropCases = []Case{
	{"XFER-09", "UC and UD with no receive posted: dropped at the receiver, SUCCESS at the sender", ucUDNoReceive},
	{"XFER-20", "[CONFLICT] a UD message above the MTU is not sent and completes SUCCESS", udAboveMTU},
	{"XFER-22", "UD: a wrong Q_Key or an unknown QPN drops the datagram silently", udWrongQKey},
	{"XFER-26", "UC: SUCCESS once sent; a message the receiver cannot take is discarded whole", ucDiscardWhole},
	{"XFER-27", "a connected QP takes packets only from its dest_qp_num", connectedPeerOnly},
	{"XFER-28", "a QP in RESET, INIT or ERR drops packets: RC senders fail RETRY_EXC_ERR, UC and UD succeed", notReadyDrops},
}

func ucUDNoReceive(t *tester, e *env) {
	w := newWire(t, e)
	for _, typ := range []verbs.QPType{verbs.QPTypeUC, verbs.QPTypeUD} {
		a, b, ah := w.pair(typ, w.opts())
		message(a.s, 0, 32, 1)
		a.post("a message to an empty receive queue", addressed(sendWR(1, verbs.WRSend, a.s.sge(0, 32)), ah, b))
		what := fmt.Sprintf("%v SEND, no receive posted", typ)
		a.want(what, w.await(a.scq, 1, what)[0], 1, verbs.WCSuccess)
		w.quiet(b.rcq, what)
		b.wantState(what, verbs.QPStateRTS)
		// The message is gone, not kept for a later receive.
		g := grhLen(typ)
		b.recvAt("a receive", 5, 1000, 64+g)
		want := message(a.s, 100, 32, 2)
		a.post("a second message", addressed(sendWR(2, verbs.WRSend, a.s.sge(100, 32)), ah, b))
		w.await(a.scq, 1, what+", second message")
		c := w.await(b.rcq, 1, what+", second message: receiver")[0]
		if b.want(what+", second message", c, 5, verbs.WCSuccess) && !bytes.Equal(b.s.buf[1000+g:1032+g], want) {
			t.Errorf("%s: the receive posted later holds other bytes than the second message", what)
		}
	}
}

func udAboveMTU(t *tester, e *env) {
	w := newWire(t, e)
	mtu := min(w.a.port.ActiveMTU.Bytes(), w.b.port.ActiveMTU.Bytes())
	if mtu+41 > bufLen/2 {
		t.Fatalf("an active MTU of %d bytes does not fit the case's buffers", mtu)
	}
	a, b, ah := w.pair(verbs.QPTypeUD, w.opts())
	b.recvAt("a receive room for MTU+1 bytes", 1, bufLen/2, mtu+41)
	a.post("MTU+1 bytes", datagram(sendWR(1, verbs.WRSend, a.s.sge(0, mtu+1)), ah, b))
	what := fmt.Sprintf("UD SEND of %d bytes (MTU %d)", mtu+1, mtu)
	a.want(what, w.await(a.scq, 1, what)[0], 1, verbs.WCSuccess)
	w.quiet(b.rcq, what)
	a.wantState(what, verbs.QPStateRTS)
	a.post("MTU bytes", datagram(sendWR(2, verbs.WRSend, a.s.sge(0, mtu)), ah, b))
	w.await(a.scq, 1, "MTU bytes")
	if c := w.await(b.rcq, 1, "MTU bytes: receiver")[0]; b.want("UD SEND of MTU bytes", c, 1, verbs.WCSuccess) && int(c.ByteLen) != mtu+40 {
		t.Errorf("UD SEND of MTU bytes: byte_len %d, want %d", c.ByteLen, mtu+40)
	}
}

func udWrongQKey(t *tester, e *env) {
	w := newWire(t, e)
	a, b, ah := w.pair(verbs.QPTypeUD, w.opts())
	b.recvAt("a receive", 1, 0, 128)
	bad := datagram(sendWR(1, verbs.WRSend, a.s.sge(0, 8)), ah, b)
	bad.RemoteQKey = udQKey + 1
	lost := datagram(sendWR(2, verbs.WRSend, a.s.sge(0, 8)), ah, b)
	lost.RemoteQPN = b.q.Num() ^ 0x800000
	a.post("a wrong Q_Key, then an unknown QPN", bad, lost)
	for i, c := range w.await(a.scq, 2, "senders") {
		a.want("UD SEND to a wrong Q_Key or QPN", c, uint64(i+1), verbs.WCSuccess)
	}
	w.quiet(b.rcq, "UD SENDs with a wrong Q_Key and to an unknown QPN")
	a.post("the right address", datagram(sendWR(3, verbs.WRSend, a.s.sge(0, 8)), ah, b))
	w.await(a.scq, 1, "the right address")
	b.want("UD SEND with the right Q_Key", w.await(b.rcq, 1, "the right address: receiver")[0], 1, verbs.WCSuccess)
}

func ucDiscardWhole(t *tester, e *env) {
	w := newWire(t, e)
	o := w.opts()
	o.mtu = verbs.MTU256
	a, b := w.connect(verbs.QPTypeUC, o)
	a.post("a SEND to a QP without receives", sendWR(1, verbs.WRSend, a.s.sge(0, 700)))
	a.want("UC SEND without a receive", w.await(a.scq, 1, "UC, no receive")[0], 1, verbs.WCSuccess)
	w.quiet(b.rcq, "UC SEND without a receive")
	f, ok := e.Dev.(Faults)
	if !ok {
		t.Logf("the device cannot drop packets (conformance.Faults): the part with losses is skipped")
		return
	}
	// Messages of three packets through a lossy wire: whatever
	// completes at the receiver is a whole message.
	e.WantOK("setting faults", f.SetFaults(0.15, 0, 0))
	t.Cleanup(func() { _ = f.SetFaults(0, 0, 0) })
	const n, size = 24, 700
	for i := range n {
		b.recvAt("a receive", uint64(i), i*1024, 1024)
	}
	for i := range n {
		message(a.s, i*1024, size, i)
		a.post("a message", sendWR(uint64(i), verbs.WRSend, a.s.sge(i*1024, size)))
	}
	for i, c := range w.await(a.scq, n, "UC sender on a lossy wire") {
		a.want("UC sender on a lossy wire", c, uint64(i), verbs.WCSuccess)
	}
	w.settle()
	got, err := w.pollNow(b.rcq)
	if err != nil {
		t.Fatalf("ibv_poll_cq: %v", err)
	}
	last := -1
	for k, c := range got {
		if !b.want("UC receiver on a lossy wire", c, uint64(k), verbs.WCSuccess) {
			continue
		}
		msg := b.s.buf[k*1024 : k*1024+size]
		i := int(binary.BigEndian.Uint32(msg))
		if c.ByteLen != size || i <= last || i >= n || !bytes.Equal(msg, a.s.buf[i*1024:i*1024+size]) {
			t.Errorf("receive %d: byte_len %d holds message %d, not a whole message after message %d", k, c.ByteLen, i, last)
		}
		last = i
	}
	if len(got) == n {
		t.Logf("no message was lost on a wire dropping 15%% of packets")
	}
}

func connectedPeerOnly(t *tester, e *env) {
	w := newWire(t, e)
	for _, typ := range []verbs.QPType{verbs.QPTypeRC, verbs.QPTypeUC} {
		o := w.opts()
		o.retry = 1
		a, b := w.connect(typ, o)
		// c is a third QP of side A that believes it is B's peer: its
		// PSNs even match what B expects.
		oc := o
		oc.sqpsn = a.o.sqpsn
		c := w.newEnd(w.a, typ, oc)
		w.bring(c, b, verbs.QPStateRTS)
		b.recvAt("B's receive", 1, 0, 64)
		fill(c.s.buf[:8], 0x27)
		before := bytes.Clone(b.s.buf[512:520])
		c.post("a SEND from a stranger", sendWR(9, verbs.WRSend, c.s.sge(0, 8)), rdmaWR(10, verbs.WRRDMAWrite, b.s, 512, c.s.sge(0, 8)))
		what := fmt.Sprintf("%v SEND and WRITE from a QP B is not connected to", typ)
		want := verbs.WCSuccess
		if typ == verbs.QPTypeRC {
			want = verbs.WCRetryExcErr // nobody answers
		}
		c.want(what, w.await(c.scq, 2, what)[0], 9, want)
		w.quiet(b.rcq, what)
		if !bytes.Equal(b.s.buf[512:520], before) {
			t.Errorf("%s: the stranger's WRITE landed", what)
		}
		a.post("a SEND from the peer", sendWR(1, verbs.WRSend, a.s.sge(0, 8)))
		w.await(a.scq, 1, what+", then the peer")
		b.want(what+", then the peer's SEND", w.await(b.rcq, 1, "the peer's SEND")[0], 1, verbs.WCSuccess)
	}
}

func notReadyDrops(t *tester, e *env) {
	w := newWire(t, e)
	for _, typ := range qpTypes {
		for _, st := range []verbs.QPState{verbs.QPStateReset, verbs.QPStateInit, verbs.QPStateErr} {
			o := w.opts()
			o.retry = 1
			ob := o
			ob.upTo = st
			if st == verbs.QPStateErr {
				ob.upTo = verbs.QPStateRTS
			}
			a, b := w.connect2(typ, o, ob)
			if st == verbs.QPStateErr {
				b.toState(verbs.QPStateErr)
			}
			var ah verbs.AH
			if typ == verbs.QPTypeUD {
				ah = w.ah(w.a, w.b, false)
			}
			if st != verbs.QPStateReset {
				b.recvAt("a receive", 1, 0, 128)
				if st == verbs.QPStateErr {
					w.await(b.rcq, 1, "the receive posted in ERR is flushed")
				}
			}
			a.post("a SEND", addressed(sendWR(1, verbs.WRSend, a.s.sge(0, 8)), ah, b))
			what := fmt.Sprintf("%v SEND to a QP in %v", typ, st)
			want := verbs.WCSuccess
			if typ == verbs.QPTypeRC {
				want = verbs.WCRetryExcErr
			}
			a.want(what, w.await(a.scq, 1, what)[0], 1, want)
			w.quiet(b.rcq, what)
		}
	}
}
