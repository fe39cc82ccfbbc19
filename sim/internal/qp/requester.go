package qp

import (
	"encoding/binary"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/sim/trace"
	"github.com/verbsim/verbsim/verbs"
)

// sendState is the requester side of a QP: which send WRs have started,
// the PSNs they use, and the retry budgets. Send WRs of the queue move
// through three ranges: [sq.done, next) have been transmitted and wait for
// their ACK or response, [next, tail) wait to be transmitted. assigned
// marks how far PSNs have been given out: a rewind (retransmission) moves
// next back, never assigned.
type sendState struct {
	next       uint64 // next WR to transmit
	nextPkt    uint32 // packets of slot(next) already sent, when resuming mid-message
	assigned   uint64 // WRs before this have their PSNs
	psn        uint32 // next PSN to give out
	rdInFlight int    // READs and atomics started and not answered (QP-40)
	halted     bool   // a local error stopped the queue (FLUSH-03)
	rnrWait    bool   // waiting for the RNR timer
	retryLeft  uint8
	// impliedNAK: a retry for a READ or atomic response found lost
	// (implied NAK) is under way; until the next progress or ACK timeout,
	// later implied NAKs are part of it (XFER-10).
	impliedNAK bool
	rnrLeft    uint8
	scheduled  bool
	drainOwed  bool // SQ_DRAINED is due when the SQD drain ends (ASYNC-13)
}

// recvState is the responder side.
type recvState struct {
	epsn    uint32 // next PSN expected
	nakSent bool   // a NAK was sent and no in-order packet has arrived since
	inMsg   bool   // a multi-packet SEND or WRITE is being received
	off     uint32 // bytes of it placed so far
	wqe     bool   // a receive WR is held for the message in progress
	// A receive WR taken from an SRQ: its wr_id and SGEs.
	srqWRID uint64
	srqSGE  []verbs.SGE
	srqSeq  uint64 // the held SRQ WR's place in its SRQ, for a checker
	// xsrq is the XRC SRQ the request in progress names, on an XRC_RECV
	// QP (XRC-10).
	xsrq *SRQ
	// The target of the WRITE in progress.
	wAddr   uint64
	wRKey   uint32
	wLen    uint32
	commEst bool // COMM_EST raised (ASYNC-12)
	// Results of recent atomics, replayed for duplicates (XFER-25). A
	// requester may ask again for any of its max_rd_atomic unanswered
	// atomics, which the responder serves up to its max_dest_rd_atomic
	// (at most 255): the ring keeps more than that many. It is allocated
	// by the QP's first atomic, so that QPs that never see one do not
	// carry its 6 KiB.
	atomics []atomicResult
	atomicN int
}

// atomicRing is the number of atomic results a responder keeps.
const atomicRing = 256

type atomicResult struct {
	psn  uint32
	orig uint64
	ok   bool
}

// scheduleLocked asks the engine to run the requester.
func (q *QP) scheduleLocked() {
	h := q.cfg.Host
	if h == nil || q.tx.scheduled {
		return
	}
	q.tx.scheduled = true
	h.ScheduleLocked(q)
}

// tracing reports whether the domain wants trace records.
func (q *QP) tracing() bool { return q.d.Tracing() }

// traceLocked records r, what happened to q, if the domain traces. A
// record that formats text or points to a group (WC, Packet) is built only
// when tracing reports true.
func (q *QP) traceLocked(r trace.Record) { q.d.Emit(q, r) }

// traceVerbLocked records a call of verb on q with detail, failed with err
// or successful when err is nil.
func (q *QP) traceVerbLocked(verb, detail string, err error) {
	r := trace.Record{Kind: trace.KindVerb, Name: verb, Detail: detail}
	domain.Failed(&r, err)
	q.traceLocked(r)
}

// failedWR is the record of a send WR of q that failed before it reached
// the wire (name), with its wr_id and status.
func (q *QP) failedWR(name string, wrid uint64, st verbs.WCStatus) trace.Record {
	return trace.Record{Kind: trace.KindCompletion, Name: name, WC: &trace.WC{QPNum: q.num, WRID: wrid, Status: st}}
}

// nakOf is the trace's name of a NAK syndrome: the two lists share their
// order (checked below).
func nakOf(s Syndrome) trace.NAKKind { return trace.NAKKind(s) }

var (
	_ = [1]int{}[trace.NAKRNR-nakOf(SynRNR)]
	_ = [1]int{}[trace.NAKRemOp-nakOf(SynRemOp)]
	_ = [1]int{}[trace.NotNAK-nakOf(SynACK)]
)

// resetTransportLocked forgets every transport state: RESET, and the
// start of RTR and RTS.
func (q *QP) resetTransportLocked() {
	if h := q.cfg.Host; h != nil {
		h.StopLocked(&q.timers[TimerRetry])
		h.StopLocked(&q.timers[TimerRNR])
	}
	q.tx = sendState{next: q.sq.tail, assigned: q.sq.tail, psn: q.attr.SQPSN}
	q.rx = q.rx.fresh(q.attr.RQPSN)
}

// fresh returns the receive state of a responder that expects PSN epsn
// next, keeping the buffers r allocated, emptied.
func (r *recvState) fresh(epsn uint32) recvState {
	clear(r.atomics)
	return recvState{epsn: epsn, srqSGE: r.srqSGE[:0], atomics: r.atomics}
}

// isRdAtomic reports whether op waits for a response and counts against
// max_rd_atomic: READ, the two fetching atomics and ATOMIC_WRITE, whose
// response carries no data (XFER-33).
func isRdAtomic(op verbs.WROpcode) bool {
	return op == verbs.WRRDMARead || op == verbs.WRAtomicCmpAndSwp || op == verbs.WRAtomicFetchAndAdd || op == verbs.WRAtomicWrite
}

// fetches reports whether op's response brings bytes that land in the
// local SGEs: READ and the two fetching atomics.
func fetches(op verbs.WROpcode) bool {
	return op == verbs.WRRDMARead || op == verbs.WRAtomicCmpAndSwp || op == verbs.WRAtomicFetchAndAdd
}

// mtuLocked is the payload size of one packet.
func (q *QP) mtuLocked() uint32 {
	if q.typ == verbs.QPTypeUD {
		return uint32(q.cfg.Host.PortLocked(q.attr.PortNum).ActiveMTU.Bytes())
	}
	return uint32(q.attr.PathMTU.Bytes())
}

// msgLen is the length of a send WR's message.
func (e *wqe) msgLen() uint64 {
	if e.flags&verbs.SendInline != 0 {
		return uint64(len(e.inline))
	}
	return verbs.SGEListLength(e.sge)
}

// RunLocked is the requester: it transmits the send WRs that may start, in
// order. It stops at a WR that must wait: a FENCE behind unanswered READs or
// atomics (QP-38), a READ or atomic beyond max_rd_atomic (QP-40), anything
// new in SQD (QP-39), a pending RNR wait (XFER-07), or a local error
// (FLUSH-03). The engine calls it after ScheduleLocked.
//
// Precondition: the domain lock is held.
func (q *QP) RunLocked() {
	if q == nil {
		return
	}
	q.tx.scheduled = false
	h := q.cfg.Host
	if h == nil || q.life != live || (q.state != verbs.QPStateRTS && q.state != verbs.QPStateSQD) {
		return
	}
	t := &q.tx
	for t.next < q.sq.tail && !t.rnrWait && !t.halted {
		e := q.sq.slot(t.next)
		if t.next >= t.assigned {
			if q.state == verbs.QPStateSQD {
				break // QP-39: nothing new starts while draining
			}
			if ok, _ := opAllowed(e.op, q.typ); !ok {
				// QP-33 reading B: accepted at post, it has no packet
				// opcode on this transport.
				e.psn, e.npkts = t.psn, 0
				e.status, e.fin = verbs.WCLocQPOpErr, true
				t.assigned++
				t.next++
				t.nextPkt = 0
				t.halted = true
				if q.tracing() {
					r := q.failedWR("opcode not of the transport", e.wrid, e.status)
					r.Rule = "QP-33"
					q.traceLocked(r)
				}
				break
			}
			rd := isRdAtomic(e.op)
			if e.flags&verbs.SendFence != 0 && t.rdInFlight > 0 {
				break // QP-38
			}
			if rd && t.rdInFlight >= int(q.attr.MaxRDAtomic) {
				break // QP-40: waits, no error
			}
			if isLocalOp(e.op) {
				// BIND_MW and LOCAL_INV touch no wire: they run now and
				// finish at once, completing in order behind earlier WRs.
				e.psn, e.npkts = t.psn, 0
				e.status, e.fin = q.localOpLocked(e), true
				t.assigned++
				t.next++
				t.nextPkt = 0
				if e.status != verbs.WCSuccess {
					t.halted = true
					if q.tracing() {
						q.traceLocked(q.failedWR("local operation failed", e.wrid, e.status))
					}
					break
				}
				continue
			}
			if st := q.checkLocalLocked(e); st != verbs.WCSuccess {
				e.status, e.fin = st, true
				t.assigned++
				t.next++
				t.halted = true
				if q.tracing() {
					q.traceLocked(q.failedWR("local error", e.wrid, st))
				}
				break
			}
			e.psn, e.npkts = t.psn, q.packetsLocked(e)
			t.psn = psnAdd(t.psn, e.npkts)
			t.assigned++
			if rd {
				t.rdInFlight++
			}
		}
		if t.nextPkt == 0 && q.d.Checking() {
			q.noteSentLocked(e, t.next)
		}
		if !q.transmitLocked(e) {
			break
		}
		t.next++
		t.nextPkt = 0
		if !reliable(q.typ) {
			e.fin = true // UC and UD complete once sent (XFER-26)
		}
	}
	if reliable(q.typ) && t.next > q.sq.done && q.attr.Timeout != 0 {
		if q.timers[TimerRetry].Index < 0 {
			h.ArmLocked(&q.timers[TimerRetry], TimeoutTicks(q.attr.Timeout))
		}
	}
	q.completeLocked()
}

// isLocalOp reports whether op runs in the adapter without a message.
func isLocalOp(op verbs.WROpcode) bool { return op == verbs.WRBindMW || op == verbs.WRLocalInv }

// localOpLocked executes a BIND_MW (MW-04: MW_BIND_ERR on failure) or a
// LOCAL_INV (MW-07: LOC_QP_OP_ERR when the rkey names nothing it may
// invalidate, as rxe's requester reports).
func (q *QP) localOpLocked(e *wqe) verbs.WCStatus {
	h := q.cfg.Host
	if e.op == verbs.WRBindMW {
		if q.sq.bindWR == nil { // made at the first bind: most QPs never bind
			q.sq.bindWR = new(verbs.SendWR)
		}
		*q.sq.bindWR = e.sendWR()
		return h.BindLocked(q, q.sq.bindWR)
	}
	if !h.InvalidateLocked(q.cfg.PD, e.imm) {
		return verbs.WCLocQPOpErr
	}
	return verbs.WCSuccess
}

// packetsLocked is how many PSNs e uses: one per MTU of payload (at least
// one), and for a READ one per response packet.
func (q *QP) packetsLocked(e *wqe) uint32 {
	switch e.op {
	case verbs.WRAtomicCmpAndSwp, verbs.WRAtomicFetchAndAdd, verbs.WRAtomicWrite:
		return 1
	}
	if q.typ == verbs.QPTypeUD {
		return 1
	}
	n := e.msgLen()
	mtu := uint64(q.mtuLocked())
	return uint32(max(1, (n+mtu-1)/mtu))
}

// checkLocalLocked runs the checks a requester makes before it transmits:
// message size (XFER-23), the atomic result buffer (XFER-17), every local
// SGE (XFER-16, MR-03, MR-08; for a READ or an atomic, only later under
// the XFER-31 B reading) and, for UD, the AH's PD (PD-04).
func (q *QP) checkLocalLocked(e *wqe) verbs.WCStatus {
	h := q.cfg.Host
	n := e.msgLen()
	if n > uint64(h.PortLocked(q.attr.PortNum).MaxMsgSz) {
		return verbs.WCLocLenErr
	}
	op := e.op
	if op == verbs.WRAtomicCmpAndSwp || op == verbs.WRAtomicFetchAndAdd || op == verbs.WRAtomicWrite {
		if n != 8 {
			return verbs.WCLocLenErr
		}
	}
	if q.typ == verbs.QPTypeUD {
		if _, pd, ok := h.AHLocked(e.ext().ah); !ok || pd != q.cfg.PD {
			return verbs.WCLocQPOpErr
		}
	}
	if e.flags&verbs.SendInline != 0 {
		return verbs.WCSuccess
	}
	write := fetches(op)
	for _, s := range e.sge {
		if _, ok := h.LocalLocked(q.cfg.PD, s, write); !ok {
			if write {
				// When a READ's or an atomic's bad SGE is found is the
				// reading's: now (A), or as the response is placed (B).
				q.cfg.consult(verbs.ReadingLateLocalCheck)
				if q.cfg.Transport.LateLocalCheck {
					return verbs.WCSuccess // checked as the response is placed (XFER-31 B)
				}
			}
			return verbs.WCLocProtErr
		}
	}
	return verbs.WCSuccess
}

// gatherLocked copies the bytes [off, off+len(dst)) of e's message into
// dst, reading registered memory now (QP-36). It fails when an SGE no
// longer resolves (MR-07).
func (q *QP) gatherLocked(e *wqe, off uint64, dst []byte) bool {
	if e.flags&verbs.SendInline != 0 {
		copy(dst, e.inline[off:])
		return true
	}
	for _, s := range e.sge {
		if len(dst) == 0 {
			return true
		}
		if off >= uint64(s.Length) {
			off -= uint64(s.Length)
			continue
		}
		b, ok := q.cfg.Host.LocalLocked(q.cfg.PD, s, false)
		if !ok {
			return false
		}
		var n int
		if b != nil {
			n = copy(dst, b[off:])
		} else { // another process's memory (s.Length > off)
			m, _ := q.cfg.Host.LocalMemLocked(q.cfg.PD, s, false)
			n = m.ReadAt(dst, off)
		}
		dst = dst[n:]
		off = 0
	}
	return true
}

// transmitLocked sends e's packets from t.nextPkt on. It returns false
// when e failed instead (a buffer deregistered since the checks).
func (q *QP) transmitLocked(e *wqe) bool {
	h := q.cfg.Host
	t := &q.tx
	op := e.op
	total := e.msgLen()
	mtu := uint64(q.mtuLocked())
	if q.typ == verbs.QPTypeUD && total > mtu {
		// XFER-20 (A): nothing is transmitted, and the WR succeeds.
		q.traceLocked(trace.Record{Kind: trace.KindPacket, Name: "UD message above the MTU not sent", Rule: "XFER-20"})
		return true
	}
	kind := PktSend
	switch {
	case op == verbs.WRRDMAWrite || op == verbs.WRRDMAWriteWithImm:
		kind = PktWrite
	case op == verbs.WRRDMARead:
		kind = PktReadReq
	case op == verbs.WRAtomicCmpAndSwp || op == verbs.WRAtomicFetchAndAdd || op == verbs.WRAtomicWrite:
		kind = PktAtomic
	}
	var awValue uint64
	if op == verbs.WRAtomicWrite {
		// The 8 bytes to write, read from the request's data now
		// (XFER-33, as QP-36), and carried in the packet's Swap.
		var v [8]byte
		if !q.gatherLocked(e, 0, v[:]) {
			e.status, e.fin = verbs.WCLocProtErr, true
			t.halted = true
			t.next++
			return false
		}
		awValue = binary.NativeEndian.Uint64(v[:])
	}
	n := e.npkts
	if kind == PktReadReq {
		n = 1 // one request asks for every response packet
		e.got = 0
		t.nextPkt = 0
	}

	for i := t.nextPkt; i < n; i++ {
		p := h.NewPacketLocked()
		p.Kind, p.Transport, p.Op = kind, q.typ, op
		p.First, p.Last = i == 0, i == n-1
		p.SrcQPN = q.num
		p.PSN = psnAdd(e.psn, i)
		p.Imm = e.imm
		p.RemoteAddr, p.RKey = e.raddr, e.rkey
		p.DMALen = uint32(total)
		p.CompareAdd, p.Swap = e.ext().compareAdd, e.ext().swap
		if op == verbs.WRAtomicWrite {
			p.CompareAdd, p.Swap = 0, awValue
		}
		p.SRQN = e.ext().remoteSRQN
		if p.Last && e.flags&verbs.SendSolicited != 0 && (kind == PktSend || op == verbs.WRRDMAWriteWithImm) {
			p.SE = true // NOTIFY-06
		}
		if kind == PktSend || kind == PktWrite {
			off := uint64(i) * mtu
			size := min(mtu, total-off)
			p.Payload = p.Payload[:size]
			if !q.gatherLocked(e, off, p.Payload) {
				e.status, e.fin = verbs.WCLocProtErr, true
				t.halted = true
				t.next++
				return false
			}
		}
		q.addressLocked(e, p)
		t.nextPkt = i + 1
		h.SendLocked(q, p)
	}
	return true
}

// addressLocked fills the destination of p: the connected peer for RC and
// UC (XFER-27), the AH, remote QPN and Q_Key for UD (XFER-22).
func (q *QP) addressLocked(e *wqe, p *Packet) {
	p.Port = q.attr.PortNum
	av := q.attr.AHAttr
	p.DstQPN = q.attr.DestQPNum
	if q.typ == verbs.QPTypeUD {
		av, _, _ = q.cfg.Host.AHLocked(e.ext().ah)
		p.DstQPN = e.ext().remoteQPN
		p.QKey = e.ext().remoteQKey
		if p.QKey&0x80000000 != 0 {
			p.QKey = q.attr.QKey // a Q_Key with its top bit set means the QP's own
		}
	}
	p.DLID, p.DGID, p.Global, p.SL = av.DLID, av.GRH.DGID, av.IsGlobal, av.SL
	if av.IsGlobal {
		q.grhLocked(p, &av)
	}
}
