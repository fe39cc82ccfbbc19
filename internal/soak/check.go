package soak

import (
	"bytes"
	"encoding/binary"

	"github.com/verbsim/verbsim/verbs"
)

// organic reports whether the traffic can end a WR with st by itself:
// flushed after an error, or out of retries against a peer that is gone.
// Everything else must have been forced on that WR.
func organic(st verbs.WCStatus) bool {
	return st == verbs.WCWRFlushErr || st == verbs.WCRetryExcErr
}

// handle checks one completion against the ledger and resolves its WR.
// c.mu is held, and completions of c come in the CQ's order.
func (s *soak) handle(c *cqState, w *verbs.WC) {
	s.st.completions.Add(1)
	if int(w.Status) < len(s.st.byStatus) {
		s.st.byStatus[w.Status].Add(1)
	}
	idx, recv, seq := decodeWRID(w.WRID)
	rq := s.round.Load()
	if rq == nil || idx < rq.base || idx >= rq.base+len(rq.qps) {
		s.fail("%s: completion of a WR that is not in this round's ledger: %v", c.name, w)
		return
	}
	q := rq.qps[idx-rq.base]
	if w.QPNum != q.num {
		s.fail("%s: completion of wr_id %#x names QP %#x, the WR was posted on QP %#x", c.name, w.WRID, w.QPNum, q.num)
		return
	}
	l, what := &q.sq, "send"
	if recv {
		l, what = &q.rq, "recv"
	}
	if l.cq != c {
		s.fail("%s: completion of QP %#x %s WR %d, whose queue feeds %s", c.name, q.num, what, seq, l.cq.name)
		return
	}
	last := l.last.Load()
	switch {
	case seq <= last:
		s.fail("QP %#x %s WR %d completes again or out of order (the last completion was of WR %d): %v", q.num, what, seq, last, w)
		return
	case seq >= l.posted.Load():
		s.fail("QP %#x %s WR %d completes but only %d were posted: %v", q.num, what, seq, l.posted.Load(), w)
		return
	}
	// The WRs between the last completion and this one finished without
	// a completion, which only an unsignaled WR that succeeded may do.
	for t := last + 1; t < seq; t++ {
		if r := &l.recs[t%depth]; r.signaled {
			s.fail("QP %#x %s WR %d (signaled %v) has no completion; WR %d completed next with %v",
				q.num, what, t, wrOpcode[r.op], seq, w.Status)
		}
		s.st.silent.Add(1)
	}
	r := &l.recs[seq%depth]
	if w.Status == verbs.WCSuccess {
		switch {
		case l.errored:
			s.fail("QP %#x %s WR %d succeeds after an error on its queue", q.num, what, seq)
		case !r.signaled:
			s.fail("QP %#x unsignaled %s WR %d completes successfully (CQ-19)", q.num, what, seq)
		case r.op == opDummy:
			s.fail("QP %#x: the SEND posted in ERR succeeds (FLUSH-05)", q.num)
		case recv:
			s.checkRecv(c, q, seq, w)
		default:
			s.checkSend(c, q, r, w)
		}
	} else {
		if l.errored && w.Status != verbs.WCWRFlushErr {
			s.fail("QP %#x %s WR %d: %v after an earlier error on its queue; only flushes may follow", q.num, what, seq, w.Status.Name())
		}
		if !organic(w.Status) && !s.wasForced(w.WRID, w.Status) {
			s.fail("QP %#x %s WR %d (%v) completes with %v, which was not forced on it; DEBUG msg %d peer %#x destroyed %v fatal %v broken %v exited %v rq %d/%d rcNext %d state %v", q.num, what, seq, wrOpcode[r.op], w.Status.Name(), r.msg, q.peer.num, q.peer.destroyed.Load(), q.peer.fatal.Load(), q.peer.broken.Load(), q.peer.exited.Load(), q.peer.rq.last.Load(), q.peer.rq.posted.Load(), q.peer.rcNext, q.peer.q.State())
		}
		l.errored = true
		q.broken.Store(true)
		if recv {
			q.recvDead.Store(true)
		}
	}
	l.last.Store(seq)
	poke(q.wake)
	poke(q.peer.wake) // what the peer may wait for: receives resolved, recvDead
}

// checkSend checks a successful send-side completion: its opcode, and the
// data of RC WRITEs (at the peer), READs and atomics.
func (s *soak) checkSend(c *cqState, q *qpState, r *wrRec, w *verbs.WC) {
	want, _ := wrOpcode[r.op].SendCompletion()
	if w.Opcode != want {
		s.fail("QP %#x send WR %d (%v): completion opcode %v", q.num, r.seq, wrOpcode[r.op], w.Opcode)
		return
	}
	p := q.peer
	dir := uint64(q.side)
	if r.op.consumesRecv() && int64(r.msg) > q.maxOKMsg {
		q.maxOKMsg = int64(r.msg)
	}
	switch r.op {
	case opWrite, opWriteImm:
		if q.typ != verbs.QPTypeRC {
			return // UC: on the wire is all a success says (XFER-26)
		}
		exp := c.want[:r.length]
		fill(exp, mix(s.cfg.Seed, tagWrite, uint64(q.connID), dir, r.wseq, uint64(r.length)))
		got := p.buf[writeBase+int(r.wseq%writeSlots)*maxLen:][:r.length]
		if !bytes.Equal(got, exp) {
			s.fail("RC conn %d side %d: WRITE %d succeeded but the target holds other data (first difference at byte %d)",
				q.connID, q.side, r.wseq, firstDiff(got, exp))
		}
		s.st.writes.Add(1)
	case opRead:
		if w.ByteLen != r.length {
			s.fail("QP %#x READ %d: byte_len %d, want %d", q.num, r.seq, w.ByteLen, r.length)
		}
		src := c.want[:readSrcLen]
		fill(src, mix(s.cfg.Seed, tagReadSrc, uint64(p.connID), uint64(p.side)))
		exp := src[r.roff:][:r.length]
		got := q.buf[sendOff(r.seq):][:r.length]
		if !bytes.Equal(got, exp) {
			s.fail("RC conn %d side %d: READ of %d bytes at %d returned other data (first difference at byte %d)",
				q.connID, q.side, r.length, r.roff, firstDiff(got, exp))
		}
		s.st.reads.Add(1)
	case opCAS, opFAA:
		if w.ByteLen != 8 {
			s.fail("QP %#x atomic %d: byte_len %d, want 8", q.num, r.seq, w.ByteLen)
		}
		// The k-th atomic of a connection finds k: each earlier one ran
		// exactly once (an atomic that ran twice, or not at all, shifts it).
		if got := binary.NativeEndian.Uint64(q.buf[sendOff(r.seq):]); got != r.aseq {
			s.fail("RC conn %d side %d: atomic %d (%v) returned %d, want %d",
				q.connID, q.side, r.aseq, wrOpcode[r.op], got, r.aseq)
		}
		q.atomicsOK++
		s.st.atomics.Add(1)
	}
}

// checkRecv checks a successful receive: the message it holds, its
// immediate data, and its place in the order of its connection.
func (s *soak) checkRecv(c *cqState, q *qpState, seq int64, w *verbs.WC) {
	p := q.peer
	var msg uint64
	switch w.Opcode {
	case verbs.WCRecv:
		data := q.buf[recvOff(seq):][:slotLen]
		n := int(w.ByteLen)
		if q.typ == verbs.QPTypeUD {
			if n < grhLen || w.SrcQP != p.num {
				s.fail("UD QP %#x recv %d: byte_len %d, src_qp %#x (peer %#x)", q.num, seq, n, w.SrcQP, p.num)
				return
			}
			data, n = data[grhLen:], n-grhLen
		}
		if n < hdrLen || n > maxLen {
			s.fail("QP %#x recv %d: byte_len %d", q.num, seq, w.ByteLen)
			return
		}
		h := data[:hdrLen]
		msg = binary.LittleEndian.Uint64(h[16:])
		kind := opKind(h[9])
		if binary.LittleEndian.Uint32(h) != magic || binary.LittleEndian.Uint32(h[4:]) != q.connID ||
			int(h[8]) != p.side || int(binary.LittleEndian.Uint32(h[24:])) != n || (kind != opSend && kind != opSendImm) {
			s.fail("QP %#x recv %d: %d bytes that are no message of conn %d from side %d: header % x", q.num, seq, n, q.connID, p.side, h)
			return
		}
		exp := c.want[:n]
		message(exp, s.cfg.Seed, q.connID, p.side, msg, kind)
		if !bytes.Equal(data[:n], exp) {
			s.fail("QP %#x recv %d: message %d of conn %d differs at byte %d", q.num, seq, msg, q.connID, firstDiff(data[:n], exp))
			return
		}
		hasImm := w.WCFlags&verbs.WCWithImm != 0
		if hasImm != (kind == opSendImm) || hasImm && w.ImmData != immOf(q.connID, p.side, msg) {
			s.fail("QP %#x recv %d: message %d (%v): flags %#x imm %#x", q.num, seq, msg, wrOpcode[kind], w.WCFlags, w.ImmData)
		}
	case verbs.WCRecvRDMAWithImm:
		if q.typ == verbs.QPTypeUD || w.WCFlags&verbs.WCWithImm == 0 {
			s.fail("QP %#x recv %d: RECV_RDMA_WITH_IMM on %v with flags %#x", q.num, seq, q.typ, w.WCFlags)
			return
		}
		m32 := w.ImmData ^ immOf(q.connID, p.side, 0)
		switch q.typ {
		case verbs.QPTypeRC:
			msg = q.rcNext
			if uint32(msg) != m32 {
				s.fail("RC conn %d: side %d expects message %d, a WRITE_WITH_IMM brings %d", q.connID, q.side, msg, m32)
				return
			}
		case verbs.QPTypeUC:
			msg = uint64(m32)
			if msg < UCWindow {
				n := w.ByteLen
				exp := c.want[:n]
				fill(exp, mix(s.cfg.Seed, tagUCWrite, uint64(q.connID), uint64(p.side), msg, uint64(n)))
				if got := q.buf[ucBase+int(msg)*maxLen:][:n]; !bytes.Equal(got, exp) {
					s.fail("UC conn %d: WRITE_WITH_IMM %d of %d bytes placed other data (first difference at byte %d)", q.connID, msg, n, firstDiff(got, exp))
				}
			}
		}
	default:
		s.fail("QP %#x recv %d: opcode %v", q.num, seq, w.Opcode)
		return
	}
	switch q.typ {
	case verbs.QPTypeRC: // exactly once, in order (XFER-25)
		if msg != q.rcNext {
			s.fail("RC conn %d: side %d received message %d, expected %d", q.connID, q.side, msg, q.rcNext)
		}
		q.rcNext = msg + 1
	case verbs.QPTypeUC: // lost messages are skipped; none arrives twice or late
		if int64(msg) <= q.ucLast {
			s.fail("UC conn %d: side %d received message %d after %d", q.connID, q.side, msg, q.ucLast)
		}
		q.ucLast = int64(msg)
	case verbs.QPTypeUD: // duplicated and overtaken datagrams are legal
		if msg >= p.msgPosted.Load() {
			s.fail("UD conn %d: side %d received message %d, only %d were sent", q.connID, q.side, msg, p.msgPosted.Load())
		}
		if q.udSeen[msg] {
			s.st.udDups.Add(1)
			if s.cfg.Faults.Duplicate == 0 {
				s.fail("UD conn %d: message %d received twice without the duplicate fault", q.connID, msg)
			}
		}
		q.udSeen[msg] = true
	}
	s.st.messages.Add(1)
}

// message fills b with message msg of a connection's side: a header
// (magic, connection, side, kind, message number, length) and a payload
// that depends on all of them and the seed.
func message(b []byte, seed uint64, connID uint32, side int, msg uint64, kind opKind) {
	h := b[:hdrLen]
	clear(h)
	binary.LittleEndian.PutUint32(h, magic)
	binary.LittleEndian.PutUint32(h[4:], connID)
	h[8], h[9] = byte(side), byte(kind)
	binary.LittleEndian.PutUint64(h[16:], msg)
	binary.LittleEndian.PutUint32(h[24:], uint32(len(b)))
	fill(b[hdrLen:], mix(seed, tagSend, uint64(connID), uint64(side), msg, uint64(len(b))))
}

// immOf is the immediate data of message msg: its number, salted with the
// connection and side so that a message of another connection stands out.
func immOf(connID uint32, side int, msg uint64) uint32 {
	return uint32(msg) ^ uint32(mix(uint64(connID), uint64(side)))
}

// mix hashes its arguments into one seed.
func mix(vs ...uint64) uint64 {
	x := uint64(0x243f6a8885a308d3)
	for _, v := range vs {
		x = splitmix(x ^ v)
	}
	return x
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	z := x
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// fill writes the SplitMix64 stream of key into b.
func fill(b []byte, key uint64) {
	var w [8]byte
	for i := 0; i < len(b); i += 8 {
		key = splitmix(key)
		binary.LittleEndian.PutUint64(w[:], key)
		copy(b[i:], w[:])
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
