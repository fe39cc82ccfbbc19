package qp

import (
	"encoding/binary"
	"unsafe"

	"github.com/verbsim/verbsim/verbs"
)

// The direct path: an RC or UC message carried out inside the post verb.
//
// In Auto and Background mode the engine settles a posted RC request at
// the verb's Leave, at the tick it was posted: the requester's run (every
// request packet, their payload gathered from memory now), the request
// packets' deliveries (the responder places the data and, at the last,
// completes a receive WR and sends the ACK, or it sends every response of
// a READ at once) and the answers' deliveries (the completer places a
// READ's data, finishes the WR and completes it). When nothing else can
// take part, those events are a
// pure function of the two QPs and the memory they name, so the post can
// compute their outcome directly: no packet is built, routed or queued, no
// timer is armed and stopped, and the payload is copied once. A UC message
// is the run (which completes the send WR: XFER-26) and the deliveries,
// with no answer.
// directLocked does it under the conditions below and leaves everything
// else, every failure included, to the engine, deciding before it changes
// anything. docs/transport.md ("The direct path") says why each condition
// is there; TestDirectMatchesEngine (sim/direct_test.go) runs random
// workloads both ways and requires identical observations.
//
// The engine (DirectHost.DirectPeerLocked) must be in Auto or Background
// mode with no Chooser, no trace, no packet fault (random or targeted), no
// Remote, no ready event (nothing queued anywhere: a settle would run that
// first, and a Random schedule would draw), and the direct path not turned
// off. The request must route to a live QP over active ports, and the
// answer must route back to the requester the same way (XFER-27).
//
// The request is the only one of its PostSend call or builder batch (a
// list runs as one requester run, every request before the first
// answer). The requester q: RC or UC, in RTS, nothing in flight or queued
// before this request (no WR started and unfinished, none waiting, no
// RNR wait, no armed timer, no forced status), and the request one of SEND,
// SEND_WITH_IMM, RDMA_WRITE, RDMA_WRITE_WITH_IMM, RDMA_READ, the two
// atomics (one packet each way), of any length the engine would carry
// (several packets each cut by the same path MTU at both ends, since the
// responder cuts a READ's responses by its own; one packet when the MTUs
// differ), passing the requester's checks (XFER-16, XFER-23, MR-03) and, for a READ
// or an atomic, with max_rd_atomic above 0 (QP-40).
//
// The responder: another QP of the same type, in RTS, SQD or SQE, or in RTR once
// COMM_EST has been raised (ASYNC-12), connected back to q (XFER-27),
// expecting the request's PSN with no message in progress, no SRQ, no
// forced status, and a request it would accept: access flags and keys
// (XFER-14, MW-06), max_dest_rd_atomic (QP-40), atomic alignment (XFER-17),
// a posted receive WR for a SEND or WRITE_WITH_IMM (else RNR: XFER-07) that
// holds the message (XFER-05) in memory that resolves (XFER-16).
//
// The receive CQ must have room: its overrun (CQ-22) leaves the responder
// in ERR without an ACK (CQ-24). The send completion is pushed by the
// completer's own code (completeLocked), the same in both paths, overrun
// included.
//
// What the direct path then does is what the events do, in their order:
// the PSNs, one per packet, the data (gathered whole before any of it is
// placed, as the run gathers every request packet, and a READ's request
// every response, before the first is delivered, so an overlap of source
// and target behaves the same, QP-36), the receive completion (with its arm and channel event,
// NOTIFY-01..06) before the send completion (CQ-18, CQ-19, CQ-20), the
// retry budgets restored, the ACK timer left stopped as the ACK leaves it,
// the clock unmoved (links have no latency), and the engine's counters and
// sequence numbers advanced as the events would advance them: one event
// and one packet per request packet, one ACK for a SEND or WRITE (the
// responder acknowledges only a message's last packet), one response per
// packet of a READ, each restarting the ACK timer.

// DirectHost is implemented by a Host whose engine can let a post carry
// out its request itself (the direct path above).
type DirectHost interface {
	// DirectPeerLocked returns the QP a request from q, sent from local
	// port port to address av and QP dstQPN, would be delivered to, with
	// the addresses the request and its answer come from (q's
	// DirectCache); nil when the engine must run it: the engine is not
	// idle, a fault, trace, Chooser or Remote is set, Manual mode, a port
	// on the way or back is down, or no QP is there.
	DirectPeerLocked(q *QP, port uint8, av *verbs.AHAttr, dstQPN uint32) *DirectCache
	// DirectDoneLocked accounts for the engine events a direct message
	// stands for: events events run, packets packets sent and delivered,
	// and seqs sequence numbers (events and timer arms) drawn; multi
	// reports a message of more than one request or response packet.
	DirectDoneLocked(events, packets, seqs uint64, multi bool)
	// DirectScratchLocked returns a buffer of at least n bytes (n is at
	// most maxScratch) that the caller may use until it returns.
	DirectScratchLocked(n int) []byte
}

// DirectCache is where a DirectHost keeps what DirectPeerLocked found for
// a QP (DirectCacheLocked): the peer, the source addresses of the request
// and of its answer, with what they were derived from: the host's own
// generation of its topology (port states, QPs created and destroyed) and
// the attribute generations (AttrGenLocked) of the QP and of the peer. The
// host checks them all before it trusts the entry.
type DirectCache struct {
	To     *QP
	Topo   uint64 // the host's generation
	Self   uint64 // the QP's AttrGenLocked
	Peer   uint64 // To's AttrGenLocked
	SLID   uint16 // the request's source LID
	Global bool   // the request carries a GRH
	SGID   [16]byte
	// The answer's source address (XFER-27 at the requester).
	BackSLID   uint16
	BackGlobal bool
	BackSGID   [16]byte
}

// DirectCacheLocked returns q's DirectCache.
//
// Precondition: the domain lock is held.
func (q *QP) DirectCacheLocked() *DirectCache { return &q.dcache }

// AttrGenLocked counts the successful modify calls of q: its attributes
// (port, address vector, destination QP) are those they had when it
// returned the same count.
//
// Precondition: the domain lock is held.
func (q *QP) AttrGenLocked() uint64 { return q.attrGen }

// maxScratch is the longest message a direct path gathers through a
// buffer (when either side has several SGEs); a longer one with several
// SGEs on a side goes to the engine. One SGE on each side needs no buffer.
const maxScratch = 64 << 10

// maxPieces is the most resolved SGEs a direct message gathers from or
// places into; a longer list goes to the engine.
const maxPieces = 4

// pieces are the resolved bytes of a scatter/gather list. When one lies in
// another process's memory (b[i] nil: Mem, Extern), x holds every piece
// as a Mem and move goes through it.
type pieces struct {
	b [maxPieces][]byte
	n int
	x *[maxPieces]Mem
}

// resolve fills p with the bytes of the SGEs that gather (write false)
// or scatter (write true) visit to move n bytes from offset 0, in their
// order: non-empty SGEs until n bytes are covered. It reports false when
// one does not resolve, the list is shorter than n or needs more than
// maxPieces.
func (p *pieces) resolve(h Host, pd any, sges []verbs.SGE, n uint64, write bool, x *[maxPieces]Mem) bool {
	if len(sges) == 1 && n != 0 && uint64(sges[0].Length) == n {
		// The common case: one SGE, exactly the message.
		b, ok := h.LocalLocked(pd, sges[0], write)
		p.b[0], p.n = b, 1
		if b == nil && ok { // another process's memory
			x[0], _ = h.LocalMemLocked(pd, sges[0], write)
			p.x = x
		}
		return ok
	}
	p.n = 0
	for _, s := range sges {
		if n == 0 {
			break
		}
		if s.Length == 0 {
			continue
		}
		if p.n == maxPieces {
			return false
		}
		b, ok := h.LocalLocked(pd, s, write)
		if !ok {
			return false
		}
		if b == nil && p.x == nil { // the first piece in another process's memory
			for i := range p.n {
				x[i] = Mem{B: p.b[i]}
			}
			p.x = x
		}
		if p.x != nil {
			if b == nil {
				p.x[p.n], _ = h.LocalMemLocked(pd, s, write)
			} else {
				p.x[p.n] = Mem{B: b}
			}
		}
		p.b[p.n] = b
		p.n++
		n -= min(uint64(s.Length), n)
	}
	return n == 0
}

// oneMem makes p the single piece m, which lies in another process's
// memory, keeping it in x.
func (p *pieces) oneMem(m Mem, x *[maxPieces]Mem) {
	p.b[0], p.n = nil, 1
	x[0], p.x = m, x
}

// mem returns piece i as a Mem.
func (p *pieces) mem(i int) Mem {
	if p.x != nil {
		return p.x[i]
	}
	return Mem{B: p.b[i]}
}

// one makes p the single piece b.
func (p *pieces) one(b []byte) {
	p.b[0], p.n, p.x = b, 1, nil
}

// move copies n bytes from the pieces src to the pieces dst as a packet
// would: gathered whole, then placed, so that overlapping source and
// target read the source as it was before the copy.
func move(h DirectHost, dst, src *pieces, n int) {
	if n == 0 {
		return
	}
	if src.x != nil || dst.x != nil {
		moveMem(h, dst, src, n)
		return
	}
	if src.n == 1 && dst.n == 1 {
		copy(dst.b[0], src.b[0][:n]) // memmove: the same as through a buffer
		return
	}
	buf := h.DirectScratchLocked(n)[:n]
	off := 0
	for _, b := range src.b[:src.n] {
		off += copy(buf[off:], b)
	}
	for _, b := range dst.b[:dst.n] {
		c := copy(b, buf)
		buf = buf[c:]
	}
}

// moveMem is move where a piece lies in another process's memory: in
// chunks of at most maxScratch bytes through the scratch buffer, the same
// as gathering everything first when canMove allowed it.
func moveMem(h DirectHost, dst, src *pieces, n int) {
	buf := h.DirectScratchLocked(min(n, maxScratch))
	for off := 0; off < n; {
		c := buf[:min(n-off, maxScratch)]
		gatherPieces(c, src, uint64(off))
		scatterPieces(dst, c, uint64(off))
		off += len(c)
	}
}

// gatherPieces reads into buf the bytes of the pieces src from offset off
// of the message they hold.
func gatherPieces(buf []byte, src *pieces, off uint64) {
	for i := range src.n {
		if len(buf) == 0 {
			return
		}
		m := src.mem(i)
		if l := m.Len(); off >= l {
			off -= l
			continue
		}
		c := m.ReadAt(buf, off)
		buf, off = buf[c:], 0
	}
}

// scatterPieces writes buf into the pieces dst from offset off of the
// message they hold.
func scatterPieces(dst *pieces, buf []byte, off uint64) {
	for i := range dst.n {
		if len(buf) == 0 {
			return
		}
		m := dst.mem(i)
		if l := m.Len(); off >= l {
			off -= l
			continue
		}
		c := m.WriteAt(buf, off)
		buf, off = buf[c:], 0
	}
}

// canMove reports whether move can carry n bytes from src to dst: a
// message of this process's memory when it has one piece each way (a
// memmove) or at most maxScratch bytes (gathered whole first); one in
// another process's memory when it has at most maxScratch bytes, or
// when no piece of dst may share memory with a piece of src, so that
// moving by chunks reads every source byte before it is overwritten.
func canMove(dst, src *pieces, n uint64) bool {
	if n <= maxScratch {
		return true
	}
	if src.x == nil && dst.x == nil {
		return src.n == 1 && dst.n == 1
	}
	for i := range src.n {
		for j := range dst.n {
			if mayShare(src.mem(i), dst.mem(j)) {
				return false
			}
		}
	}
	return true
}

// mayShare reports whether a and b may hold the same bytes: both of this
// process and overlapping, or both of one other process at overlapping
// addresses.
func mayShare(a, b Mem) bool {
	switch {
	case a.Len() == 0 || b.Len() == 0:
		return false
	case a.X == nil && b.X == nil:
		al := uintptr(unsafe.Pointer(unsafe.SliceData(a.B)))
		bl := uintptr(unsafe.Pointer(unsafe.SliceData(b.B)))
		return al < bl+uintptr(len(b.B)) && bl < al+uintptr(len(a.B))
	case a.X != nil && a.X == b.X:
		return a.At < b.At+b.N && b.At < a.At+a.N
	}
	return false
}

// cqRoom is the number of completions c can take without overrunning.
func cqRoom(c CQ) int {
	if c == nil {
		return 0
	}
	return c.RoomLocked()
}

// directLocked carries out the send WR just posted (the last of the send
// queue) as the engine would, when the conditions of the direct path hold;
// it reports false, having changed nothing, when they do not and the
// engine must run it.
func (q *QP) directLocked() bool {
	t := &q.tx
	seq := q.sq.tail - 1
	if (q.typ != verbs.QPTypeRC && q.typ != verbs.QPTypeUC) || q.state != verbs.QPStateRTS || len(q.forced) > 0 ||
		t.next != seq || t.assigned != seq || q.sq.done != seq || t.scheduled || t.rnrWait || t.halted ||
		t.nextPkt != 0 || t.rdInFlight != 0 || q.timers[TimerRetry].Index >= 0 || q.timers[TimerRNR].Index >= 0 {
		return false
	}
	// The engine first: a fabric that traces, injects faults or runs in
	// Manual mode stops here.
	h := q.direct
	c := h.DirectPeerLocked(q, q.attr.PortNum, &q.attr.AHAttr, q.attr.DestQPNum)
	if c == nil {
		return false
	}
	r := c.To
	if r == nil || r == q || r.life != live || r.typ != q.typ || r.cfg.Host == nil || r.init.SRQ != nil || len(r.forced) > 0 {
		return false
	}
	e := q.sq.slot(seq)
	op := e.op
	if ok, _ := opAllowed(op, q.typ); !ok {
		return false // QP-33 B: the engine fails it
	}
	recv := false                   // the message completes a receive WR
	need := verbs.AccessRemoteWrite // the access it needs at the responder
	switch op {
	case verbs.WRSend, verbs.WRSendWithImm, verbs.WRRDMAWriteWithImm:
		recv = true
	case verbs.WRRDMAWrite:
	case verbs.WRRDMARead:
		need = verbs.AccessRemoteRead
	case verbs.WRAtomicCmpAndSwp, verbs.WRAtomicFetchAndAdd:
		need = verbs.AccessRemoteAtomic
	default:
		return false
	}
	if need != verbs.AccessRemoteWrite && q.attr.MaxRDAtomic == 0 {
		return false // QP-40: it waits
	}
	n := e.msgLen()
	// The packets each way: one per path MTU (at least one) for a SEND or
	// a WRITE, one request and as many responses for a READ, all cut by
	// the same MTU at both ends (the responder cuts a READ's responses by
	// its own), and one each way for an atomic.
	mtu := q.mtuLocked()
	npkts := uint32(1) // packetsLocked, with the MTU in hand
	if need != verbs.AccessRemoteAtomic {
		npkts = uint32(max(1, (n+uint64(mtu)-1)/uint64(mtu)))
	}
	if rm := r.mtuLocked(); rm != mtu && n > uint64(min(mtu, rm)) {
		return false
	}
	switch r.state {
	case verbs.QPStateRTS, verbs.QPStateSQD, verbs.QPStateSQE:
	case verbs.QPStateRTR:
		if !r.rx.commEst {
			return false
		}
	default:
		return false
	}
	// XFER-27 both ways: the responder takes the request from its peer,
	// the requester the answer from its own.
	if !fromPath(&r.attr.AHAttr, r.attr.DestQPNum, q.num, c.SLID, c.Global, &c.SGID) ||
		(q.typ == verbs.QPTypeRC && !fromPath(&q.attr.AHAttr, q.attr.DestQPNum, r.num, c.BackSLID, c.BackGlobal, &c.BackSGID)) ||
		r.rx.epsn != t.psn || r.rx.inMsg || r.rx.wqe {
		return false
	}
	// The requester's checks (checkLocalLocked): the message size
	// (XFER-23, XFER-17) here, the local SGEs (XFER-16, MR-03, MR-08) as
	// they are resolved below, which visits every non-empty one with the
	// same access (a zero-length SGE always resolves). Under the XFER-31 B
	// reading the engine checks a READ's or an atomic's SGEs only as the
	// answer is placed; resolving them first is the same, since a failure
	// goes to the engine.
	if n > uint64(q.cfg.Host.PortLocked(q.attr.PortNum).MaxMsgSz) || n > maxRDMALen || (need == verbs.AccessRemoteAtomic && n != 8) {
		return false
	}
	// The receive completion must fit: an overrun there leaves the
	// responder in ERR with no ACK (CQ-24). An overrun of the send CQ
	// happens in the completer, whose code both paths run (completeLocked).
	if recv && cqRoom(r.recvCQ()) == 0 {
		return false
	}
	// The responder's checks, and the bytes each side reads and writes.
	var src, dst pieces
	var target []byte // the remote bytes of a WRITE, READ or atomic
	var targetX Mem   // those bytes when they lie in another process's memory
	var recvE *rqe    // the receive WR a SEND or WRITE_WITH_IMM takes
	if op != verbs.WRSend && op != verbs.WRSendWithImm {
		if r.attr.QPAccessFlags&need == 0 || (need != verbs.AccessRemoteWrite && r.attr.MaxDestRDAtomic == 0) {
			return false
		}
		if need == verbs.AccessRemoteAtomic && e.raddr%8 != 0 {
			return false
		}
		if n > 0 {
			b, ok := r.cfg.Host.RemoteLocked(r, r.respPD(), e.rkey, e.raddr, uint32(n), need)
			if !ok {
				return false
			}
			target = b
			if b == nil {
				targetX, _ = r.cfg.Host.RemoteMemLocked(r, r.respPD(), e.rkey, e.raddr, uint32(n), need)
			}
		}
	}
	if recv {
		if r.rq.outstanding() == 0 {
			return false // RNR
		}
		recvE = r.rq.rslot(r.rq.done)
	}
	switch op {
	case verbs.WRSend, verbs.WRSendWithImm, verbs.WRRDMAWrite, verbs.WRRDMAWriteWithImm:
		if e.flags&verbs.SendInline != 0 {
			src.one(e.inline)
		} else if !src.resolve(q.cfg.Host, q.cfg.PD, e.sge, n, false, &q.xmem[0]) {
			return false
		}
		if op == verbs.WRSend || op == verbs.WRSendWithImm {
			if n > verbs.SGEListLength(recvE.sge) || !dst.resolve(r.cfg.Host, r.recvPD(), recvE.sge, n, true, &q.xmem[1]) {
				return false
			}
		} else if n > 0 && targetX.X != nil {
			dst.oneMem(targetX, &q.xmem[1])
		} else if n > 0 {
			dst.one(target)
		}
	default: // READ and atomics: the answer lands in the local SGEs
		if !dst.resolve(q.cfg.Host, q.cfg.PD, e.sge, n, true, &q.xmem[1]) {
			return false
		}
		if n > 0 && targetX.X != nil {
			src.oneMem(targetX, &q.xmem[0])
		} else if n > 0 {
			src.one(target)
		}
	}
	if !canMove(&dst, &src, n) {
		return false // move needs a buffer that long
	}

	// The requester's run: PSNs, the request on its way, the ACK timer.
	rc := q.typ == verbs.QPTypeRC
	rd := isRdAtomic(op)
	e.psn, e.npkts, e.got = t.psn, npkts, 0
	t.psn = psnAdd(t.psn, npkts)
	t.assigned++
	if rd {
		t.rdInFlight++
	}
	t.next++
	if !rc {
		// UC completes once sent (XFER-26): the send completion comes
		// before the message arrives, in the run, and nothing answers.
		e.fin = true
		q.completeLocked()
	}

	// The responder.
	rx := &r.rx
	if rc {
		rx.nakSent = false // UC keeps no NAK state
	}
	solicited := e.flags&verbs.SendSolicited != 0
	switch op {
	case verbs.WRSend, verbs.WRSendWithImm:
		move(h, &dst, &src, int(n))
		rx.off = uint32(n)
		rx.epsn = psnAdd(rx.epsn, npkts)
		w := &r.wcbuf // written in place: the CQ copies it once
		*w = verbs.WC{Opcode: verbs.WCRecv, ByteLen: uint32(n), SrcQP: q.num}
		if op == verbs.WRSendWithImm {
			w.WCFlags, w.ImmData = verbs.WCWithImm, e.imm
		}
		r.completeRecvLocked(w, solicited)
	case verbs.WRRDMAWrite, verbs.WRRDMAWriteWithImm:
		rx.wAddr, rx.wRKey, rx.wLen = e.raddr, e.rkey, uint32(n)
		move(h, &dst, &src, int(n))
		rx.off = uint32(n)
		rx.epsn = psnAdd(rx.epsn, npkts)
		if op == verbs.WRRDMAWriteWithImm {
			w := &r.wcbuf
			*w = verbs.WC{Opcode: verbs.WCRecvRDMAWithImm, ByteLen: uint32(n), WCFlags: verbs.WCWithImm, ImmData: e.imm, SrcQP: q.num}
			r.completeRecvLocked(w, solicited)
		}
	case verbs.WRRDMARead:
		rx.epsn = psnAdd(rx.epsn, npkts)
		move(h, &dst, &src, int(n)) // the responses placed by the completer
		e.got = npkts
	default:
		var orig uint64
		if targetX.X != nil {
			orig = atomicMem(targetX, op, e.ext().compareAdd, e.ext().swap)
		} else {
			orig = atomicApply(target, op, e.ext().compareAdd, e.ext().swap)
		}
		rx.saveAtomic(e.psn, orig)
		rx.epsn = psnAdd(rx.epsn, 1)
		var b [8]byte
		binary.NativeEndian.PutUint64(b[:], orig)
		src.one(b[:])
		move(h, &dst, &src, 8)
	}

	np := uint64(npkts)
	multi := npkts > 1
	if !rc {
		h.DirectDoneLocked(1+np, np, 1+np, multi) // the run and the request packets
		return true
	}
	// The completer: the WR is finished, the budgets restored. A SEND or
	// WRITE is answered by one ACK, for its last packet (the responder
	// acknowledges nothing before); a READ by one response per packet,
	// each of which restarts the ACK timer; an atomic by one.
	events := 2 + np  // the run, the request packets and the ACK, or the request and the responses
	arms := uint64(2) // the ACK timer armed by the run, restarted by the ACK
	if op == verbs.WRRDMARead {
		arms = 1 + np // restarted by every response
	}
	seqs := events
	if q.attr.Timeout != 0 {
		seqs += arms
	}
	e.fin = true
	t.retryLeft, t.rnrLeft = q.attr.RetryCnt, q.attr.RNRRetry
	t.impliedNAK = false
	h.DirectDoneLocked(events, events-1, seqs, multi)
	q.completeLocked()
	return true
}
