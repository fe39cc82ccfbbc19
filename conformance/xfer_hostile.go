package conformance

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/verbsim/verbsim/verbs"
)

// Cases that play a buggy or hostile peer with forged packets (Forger): a
// WRITE whose packets do not carry its DMA length (XFER-34), an
// acknowledgement from another address than the connected peer's (XFER-27)
// or beyond every PSN sent (XFER-35). None of them may make a requester
// report success for what did not land, or land what no request sent. A
// device without a Forger is not checked.

// xferHostileCases are the cases of xfer_hostile.go.
var xferHostileCases = []Case{
	{"XFER-34", "a WRITE whose packets do not carry its DMA length is NAKed and lands nothing", writeLengthChecked},
	{"XFER-27", "an ACK from another address than the peer's acknowledges nothing", ackFromAnotherAddress},
	{"XFER-35", "an ACK or NAK beyond every PSN sent acknowledges nothing", ghostAcknowledgement},
}

// hostile is a transport world with the device's Forger.
type hostile struct {
	*wire
	f Forger
}

// hostileSetup returns the world, or nil after logging that the device
// cannot forge packets.
func hostileSetup(t *tester, e *env) *hostile {
	t.Helper()
	f, ok := e.Dev.(Forger)
	if !ok {
		t.Logf("not checked: the device cannot forge packets (conformance.Forger)")
		return nil
	}
	return &hostile{newWire(t, e), f}
}

// forge puts a packet of kind k from QP from (at its side's address) to QP
// to on the wire.
func (h *hostile) forge(k ForgedKind, from, to *end, psn uint32, edit func(p *ForgedPacket)) {
	h.t.Helper()
	av := avTo(to.s, false)
	p := ForgedPacket{Kind: k, Transport: to.typ, SrcQPN: from.q.Num(), DstQPN: to.q.Num(), PSN: psn,
		SLID: from.s.port.LID, DLID: to.s.port.LID, Global: av.IsGlobal, SGID: from.s.port.GID, DGID: to.s.port.GID}
	if edit != nil {
		edit(&p)
	}
	if err := h.f.Forge(p); errors.Is(err, errors.ErrUnsupported) {
		h.t.Fatalf("the device cannot forge packets here (conformance.Forger); this case needs it")
	} else if err != nil {
		h.t.Fatalf("forging a packet: %v", err)
	}
}

// elsewhere moves p's source to an address no port of the case has.
func elsewhere(p *ForgedPacket) {
	if p.SLID != 0 {
		p.SLID ^= 0x40
	}
	p.SGID[15] ^= 0x5a
}

// pathMTU is the path MTU the transport cases connect with.
func (w *wire) pathMTU() int {
	return min(verbs.MTU1024, w.a.port.ActiveMTU, w.b.port.ActiveMTU).Bytes()
}

// writeLengthChecked forges WRITEs whose packets do not add up to their
// DMA length: each makes the responder NAK (invalid request) and enter ERR
// (FLUSH-12), with none of the offending payload in its memory. A
// truncated packet at the PSN of a genuine WRITE still to come leaves that
// WRITE unacknowledged: it fails, never succeeds with the bytes missing.
func writeLengthChecked(t *tester, e *env) {
	h := hostileSetup(t, e)
	if h == nil {
		return
	}
	w := h.wire
	mtu := w.pathMTU()
	zero := func(what string, x *end, off, n int) {
		t.Helper()
		if !bytes.Equal(x.s.buf[off:off+n], make([]byte, n)) {
			t.Errorf("%s: bytes landed in [%d, %d) of the target", what, off, off+n)
		}
	}
	// A WRITE of 512 bytes whose only packet carries 100, ahead of the
	// genuine WRITE of that PSN.
	{
		what := "a WRITE packet that carries 100 of its 512 bytes"
		a, b := w.connect(verbs.QPTypeRC, w.opts())
		h.forge(ForgedWrite, a, b, a.o.sqpsn, func(p *ForgedPacket) {
			p.Op, p.First, p.Last, p.RemoteAddr, p.RKey, p.DMALen = verbs.WRRDMAWrite, true, true, b.s.addr(4096), b.s.mr.RKey(), 512
			p.Payload = bytes.Repeat([]byte{'X'}, 100)
		})
		w.settle()
		b.wantState(what+" (NAK invalid request, FLUSH-12)", verbs.QPStateErr)
		zero(what, b, 4096, 512)
		copy(a.s.buf, bytes.Repeat([]byte{'g'}, 512))
		a.post("the genuine WRITE", rdmaWR(1, verbs.WRRDMAWrite, b.s, 4096, a.s.sge(0, 512)))
		if c := w.await(a.scq, 1, "the genuine WRITE")[0]; c.Status == verbs.WCSuccess && !bytes.Equal(b.s.buf[4096:4608], a.s.buf[:512]) {
			t.Errorf("%s: the genuine WRITE of that PSN succeeded, and the target does not hold its bytes", what)
		} else {
			a.want(what+": the genuine WRITE, which the responder in ERR never answers (FLUSH-11)", c, 1, verbs.WCRetryExcErr)
		}
	}
	// Packets longer than the DMA length, and a short middle packet.
	for _, c := range []struct {
		what string
		pkts []int // payload bytes of each packet
		dma  uint32
	}{
		{"a WRITE of DMA length 8 whose packet carries 1024 bytes", []int{min(1024, mtu)}, 8},
		{"a WRITE of DMA length 0 whose packet carries 1024 bytes", []int{min(1024, mtu)}, 0},
		{"a three-packet WRITE whose middle packet is short", []int{mtu, mtu / 2, 100}, uint32(2*mtu + 100)},
	} {
		a, b := w.connect(verbs.QPTypeRC, w.opts())
		for i, n := range c.pkts {
			h.forge(ForgedWrite, a, b, a.o.sqpsn+uint32(i), func(p *ForgedPacket) {
				p.Op, p.First, p.Last = verbs.WRRDMAWrite, i == 0, i == len(c.pkts)-1
				if i == 0 {
					p.RemoteAddr, p.RKey, p.DMALen = b.s.addr(8192), b.s.mr.RKey(), c.dma
				}
				p.Payload = bytes.Repeat([]byte{byte('1' + i)}, n)
			})
		}
		w.settle()
		b.wantState(c.what+" (NAK invalid request, FLUSH-12)", verbs.QPStateErr)
		first := 0
		if len(c.pkts) > 1 {
			first = mtu // the first packet was good and landed
		}
		zero(c.what, b, 8192+first, 2*mtu+100-first)
		a.wantState(c.what+": the requester, which sent nothing, takes no NAK (XFER-35)", verbs.QPStateRTS)
	}
}

// quietPair is an RC pair whose responder B stays in INIT and so never
// answers (XFER-28): A's SEND can end only in RETRY_EXC_ERR.
func (h *hostile) quietPair() (a, b *end) {
	h.t.Helper()
	ob := h.opts()
	ob.upTo = verbs.QPStateInit
	a, b = h.connect2(verbs.QPTypeRC, h.opts(), ob)
	a.post("a SEND that nobody answers", sendWR(1, verbs.WRSend, a.s.sge(0, 8)))
	return a, b
}

// ackFromAnotherAddress forges an ACK of a SEND that never arrived, with
// the peer's QP number and the SEND's PSN, from another LID or GID: it
// acknowledges nothing, and the SEND runs out of retries.
func ackFromAnotherAddress(t *tester, e *env) {
	h := hostileSetup(t, e)
	if h == nil {
		return
	}
	a, b := h.quietPair()
	h.forge(ForgedACK, b, a, a.o.sqpsn, elsewhere)
	c := h.await(a.scq, 1, "the SEND")[0]
	a.want("a SEND never delivered, after an ACK of its PSN from another address than the peer's", c, 1, verbs.WCRetryExcErr)
}

// ghostAcknowledgement forges an ACK, then a sequence NAK, from the peer's
// address for a PSN beyond every PSN sent: neither acknowledges the SEND
// that never arrived, which runs out of retries.
func ghostAcknowledgement(t *tester, e *env) {
	h := hostileSetup(t, e)
	if h == nil {
		return
	}
	for _, k := range []ForgedKind{ForgedACK, ForgedNAKSeq} {
		a, b := h.quietPair()
		h.forge(k, b, a, a.o.sqpsn+50, nil)
		c := h.await(a.scq, 1, "the SEND")[0]
		a.want(fmt.Sprintf("a SEND never delivered, after a %s for PSN %#x (sent: %#x)", map[ForgedKind]string{ForgedACK: "ACK", ForgedNAKSeq: "NAK_SEQ"}[k], a.o.sqpsn+50, a.o.sqpsn), c, 1, verbs.WCRetryExcErr)
	}
}
