package qp

import (
	"encoding/binary"
	"strconv"

	"github.com/verbsim/verbsim/sim/trace"
	"github.com/verbsim/verbsim/verbs"
)

// completeLocked retires the send WRs that have finished, oldest first
// (CQ-18): a successful one produces a completion if it is signaled
// (CQ-19, QP-05); a failed one always does (CQ-21) and takes the QP to its
// error state, whose flush completes every later WR (FLUSH-03). An
// unsignaled WR that succeeds produces nothing; the next signaled
// completion covers it (CQ-20).
func (q *QP) completeLocked() {
	progress := false
	for q.sq.done < q.tx.next && q.life == live {
		e := q.sq.slot(q.sq.done)
		if !e.fin {
			break
		}
		if len(q.forced) > 0 {
			e.status = q.takeForcedLocked(e.wrid, false, e.status)
		}
		if e.status != verbs.WCSuccess {
			w := verbs.WC{WRID: e.wrid, Status: e.status, QPNum: q.num}
			seq := q.sq.done
			if q.d.Checking() {
				q.noteDoneLocked(e, seq, e.status)
			}
			q.sq.done++
			q.pushSendLocked(&w, seq)
			if q.tracing() {
				q.traceLocked(q.failedWR("send WR failed", e.wrid, e.status))
			}
			q.sendErrorLocked()
			return
		}
		seq := q.sq.done
		if q.d.Checking() {
			q.noteDoneLocked(e, seq, verbs.WCSuccess)
		}
		q.sq.done++
		progress = true
		if isRdAtomic(e.op) {
			q.tx.rdInFlight--
		}
		if e.signaled {
			op, _ := e.op.SendCompletion()
			w := &q.wcbuf // written in place: the CQ copies it once, into its ring
			*w = verbs.WC{WRID: e.wrid, Opcode: op, QPNum: q.num, ByteLen: uint32(e.msgLen())}
			if e.op.HasImm() {
				q.cfg.consult(verbs.ReadingSendWCImm)
				if q.cfg.Transport.SendWCImm {
					w.WCFlags, w.ImmData = verbs.WCWithImm, e.imm // WC-13 (B)
				}
			}
			q.pushSendLocked(w, seq)
		}
	}
	if q.tx.next == q.sq.done && q.timers[TimerRetry].Index >= 0 {
		if h := q.cfg.Host; h != nil {
			h.StopLocked(&q.timers[TimerRetry]) // a stopped timer has Index -1
		}
	}
	q.drainCheckLocked()
	if progress && q.tx.next < q.sq.tail && !q.tx.halted && !q.tx.rnrWait {
		q.scheduleLocked() // a FENCE or rd_atomic wait may be over
	}
}

// pushSendLocked adds a send-side completion; an overrun applies CQ-24.
//
// The completion is handed to the CQ from a buffer in the QP, so that it
// does not escape to the heap: the CQ copies it. A caller may build it
// there (q.wcbuf) and save a copy.
func (q *QP) pushSendLocked(w *verbs.WC, seq uint64) {
	if w != &q.wcbuf {
		q.wcbuf = *w
	}
	overrun, _ := q.init.SendCQ.PushWQELocked(&q.wcbuf, false, &q.sq, seq)
	if overrun {
		q.stats.CQOverruns++
		q.cfg.consult(verbs.ReadingOverrunSendIgnored)
		if !q.cfg.Transport.OverrunSendIgnored {
			q.SetErrorLocked() // CQ-24 (A)
		}
	}
}

// pushRecvLocked adds a receive completion and reports whether it overran
// the CQ; an overrun moves the QP to ERR
// under every reading (CQ-24). r is the receive queue, or nil for a WR
// taken from an SRQ, whose slot is already free.
//
// w is handed over as pushSendLocked's is (q.wcbuf saves a copy).
func (q *QP) pushRecvLocked(w *verbs.WC, solicited bool, r Retirer, seq uint64) (overrun bool) {
	c := q.recvCQ()
	if c == nil {
		q.traceLocked(trace.Record{Kind: trace.KindCompletion, Name: "receive completion lost", Why: "the XRC SRQ was destroyed while the message arrived"})
		return false
	}
	if w != &q.wcbuf {
		q.wcbuf = *w
	}
	overrun, _ = c.PushWQELocked(&q.wcbuf, solicited, r, seq)
	if overrun {
		q.stats.CQOverruns++
		q.SetErrorLocked()
	}
	return overrun
}

// sendErrorLocked moves the QP to the state a send error leads to: ERR for
// RC (FLUSH-09), SQE for UD and UC unless the profile has no SQE
// (FLUSH-10), flushing the send queue either way.
func (q *QP) sendErrorLocked() {
	if !reliable(q.typ) && q.state != verbs.QPStateErr {
		q.cfg.consult(verbs.ReadingNoSQE)
	}
	if reliable(q.typ) || q.cfg.Transport.NoSQE || q.state == verbs.QPStateErr {
		q.SetErrorLocked()
		return
	}
	if q.state == verbs.QPStateSQE {
		return
	}
	q.state = verbs.QPStateSQE
	q.traceLocked(trace.Record{Kind: trace.KindState, Name: "state SQE", Why: "send error on a UD/UC QP", Rule: "FLUSH-10"})
	q.stopTimersLocked()
	q.flushSendLocked()
}

func (q *QP) stopTimersLocked() {
	if h := q.cfg.Host; h != nil {
		h.StopLocked(&q.timers[TimerRetry])
		h.StopLocked(&q.timers[TimerRNR])
	}
}

// drainCheckLocked ends an SQD drain when nothing is in flight: SQ_DRAINED
// is raised if it was asked for (ASYNC-13).
func (q *QP) drainCheckLocked() {
	if q.state != verbs.QPStateSQD || !q.tx.drainOwed || q.tx.assigned != q.sq.done {
		return
	}
	q.tx.drainOwed = false
	if q.cfg.Async != nil {
		q.cfg.Async.RaiseLocked(verbs.EventSQDrained, q, &q.tally, 0)
	}
}

// drainingLocked reports whether an SQD drain is in progress: WRs that had
// started (been given PSNs) have not completed, including one waiting for
// its RNR retry (QP-23, QP-39).
func (q *QP) drainingLocked() bool { return q.state == verbs.QPStateSQD && q.tx.assigned > q.sq.done }

// ackLocked marks finished every WR whose last PSN is at or before psn,
// unless it waits for response data. A READ or atomic that an ACK passes
// without its response lost that response: the requester goes back to it.
func (q *QP) ackLocked(psn uint32) (progress bool) {
	for seq := q.sq.done; seq < q.tx.next; seq++ {
		e := q.sq.slot(seq)
		if e.fin {
			continue
		}
		last := psnAdd(e.psn, e.npkts-1)
		if psnDiff(last, psn) > 0 {
			break
		}
		if isRdAtomic(e.op) {
			q.impliedNAKLocked(e)
			break
		}
		e.fin = true
		progress = true
	}
	return progress
}

// impliedNAKLocked handles an acknowledgement beyond e, a READ or atomic
// still waiting for its response: the response was lost (an implied NAK),
// and asking for it again is a retry, which spends retry_cnt as an ACK
// timeout does (XFER-10). One retry is started per round: until an ACK or
// response moves things on, or the ACK timer fires, further implied NAKs
// belong to the retry under way and are ignored, as rxe's completer
// ignores them while its retry is started. Without that, a response lost
// every time would have requester and responder exchange packets at one
// tick for ever, inside one verb.
func (q *QP) impliedNAKLocked(e *wqe) {
	t := &q.tx
	if t.impliedNAK {
		return
	}
	t.impliedNAK = true
	if q.attr.RetryCnt == 7 && t.retryLeft == 0 {
		q.cfg.consult(verbs.ReadingInfiniteRetry7) // seven retries spent: the reading decides
	}
	if !(q.attr.RetryCnt == 7 && q.cfg.Transport.InfiniteRetry7) {
		if t.retryLeft == 0 {
			q.stats.RetryExceeded++
			q.traceLocked(trace.Record{Kind: trace.KindTimer, Name: "retries exhausted", Why: "implied NAK: READ/atomic response lost", Rule: "XFER-10"})
			q.failLocked(verbs.WCRetryExcErr)
			return
		}
		t.retryLeft--
	}
	q.stats.ImpliedNAKs++
	q.traceLocked(trace.Record{Kind: trace.KindTimer, Name: "implied NAK", Why: "READ/atomic response lost; asked again", Rule: "XFER-10"})
	q.rewindLocked(e.psn)
	q.scheduleLocked()
}

// ReceiveLocked handles a packet that the engine delivers to q: a request
// for the responder, or an ACK or response for the requester.
//
// Precondition: the domain lock is held.
func (q *QP) ReceiveLocked(p *Packet) {
	if q == nil || p == nil || q.life != live || q.cfg.Host == nil {
		return
	}
	switch p.Kind {
	case PktSend, PktWrite, PktReadReq, PktAtomic:
		q.respondLocked(p)
	default:
		q.completerLocked(p)
	}
}

// completerLocked handles ACKs, NAKs and responses at an RC requester.
func (q *QP) completerLocked(p *Packet) {
	if q.typ != verbs.QPTypeRC && q.typ != verbs.QPTypeXRCSend || (q.state != verbs.QPStateRTS && q.state != verbs.QPStateSQD) {
		return
	}
	if !q.fromPeerLocked(p) {
		q.traceLocked(trace.Record{Kind: trace.KindPacket, Name: "packet ignored", Why: "not from the connected peer", Rule: "XFER-27"})
		return
	}
	t := &q.tx
	switch p.Kind {
	case PktAck:
		if q.ghostLocked(p) {
			if q.tracing() {
				q.traceLocked(trace.Record{Kind: trace.KindPacket, Name: "ghost acknowledgement ignored", Packet: &trace.Packet{NAK: nakOf(p.Syndrome)}, Why: "its PSN is beyond every PSN sent", Rule: "XFER-35"})
			}
			return
		}
		if p.Syndrome != SynACK && psnDiff(p.PSN, q.ackedPSNLocked()) < 0 {
			if q.tracing() {
				q.traceLocked(trace.Record{Kind: trace.KindPacket, Name: "stale NAK ignored", Packet: &trace.Packet{NAK: nakOf(p.Syndrome)}, Why: "its PSN is already acknowledged"})
			}
			return
		}
		switch p.Syndrome {
		case SynACK:
			if q.ackLocked(p.PSN) {
				q.progressLocked()
			}
		case SynSeqErr:
			q.stats.SeqNAKsReceived++
			q.ackLocked(psnAdd(p.PSN, psnMask)) // everything before p.PSN
			q.rewindLocked(p.PSN)
			q.scheduleLocked()
		case SynRNR:
			q.stats.RNRNAKsReceived++
			q.ackLocked(psnAdd(p.PSN, psnMask))
			if t.rnrLeft == 0 {
				q.stats.RNRRetryExceeded++
				q.failLocked(verbs.WCRNRRetryExcErr)
				break
			}
			if t.rnrLeft != 7 {
				t.rnrLeft--
			}
			q.rewindLocked(p.PSN)
			t.rnrWait = true
			q.traceLocked(trace.Record{Kind: trace.KindTimer, Name: "RNR wait", Timer: trace.TimerRNR, Why: "the responder's min_rnr_timer", Rule: "XFER-07, XFER-08"})
			q.cfg.Host.StopLocked(&q.timers[TimerRetry])
			q.cfg.Host.ArmLocked(&q.timers[TimerRNR], RNRTicks(p.RNRTimer))
		default:
			q.stats.ErrorNAKsReceived++
			q.ackLocked(psnAdd(p.PSN, psnMask))
			st := verbs.WCRemInvReqErr
			switch p.Syndrome {
			case SynRemAccess:
				st = verbs.WCRemAccessErr
			case SynRemOp:
				st = verbs.WCRemOpErr
			}
			q.failLocked(st)
		}
	case PktReadResp, PktAtomicAck:
		q.responseLocked(p)
	}
	q.completeLocked()
}

// ackedPSNLocked returns the first PSN of the oldest unfinished WR.
func (q *QP) ackedPSNLocked() uint32 {
	for seq := q.sq.done; seq < q.tx.next; seq++ {
		if e := q.sq.slot(seq); !e.fin {
			return e.psn
		}
	}
	return q.tx.psn
}

// progressLocked restores the retry budgets and restarts the ACK timer
// after an ACK or response moved things on.
func (q *QP) progressLocked() {
	q.tx.retryLeft, q.tx.rnrLeft = q.attr.RetryCnt, q.attr.RNRRetry
	q.tx.impliedNAK = false
	h := q.cfg.Host
	if q.tx.next > q.sq.done && q.attr.Timeout != 0 {
		h.ArmLocked(&q.timers[TimerRetry], TimeoutTicks(q.attr.Timeout)) // restarts it
	} else {
		h.StopLocked(&q.timers[TimerRetry])
	}
}

// responseLocked places READ response data and atomic results.
func (q *QP) responseLocked(p *Packet) {
	for seq := q.sq.done; seq < q.tx.next; seq++ {
		e := q.sq.slot(seq)
		if e.fin || !isRdAtomic(e.op) {
			continue
		}
		if psnAdd(e.psn, e.got) != p.PSN {
			// Not the response this WR waits for next: a duplicate or one
			// after a loss. Lost data is asked for again on timeout.
			if psnDiff(p.PSN, e.psn) >= 0 && psnDiff(p.PSN, psnAdd(e.psn, e.npkts-1)) <= 0 {
				return
			}
			continue
		}
		if p.Kind == PktReadResp && !q.readResponseLengthOK(e, p) {
			q.traceLocked(trace.Record{Kind: trace.KindPacket, Name: "READ response dropped", Why: "it does not carry the bytes due", Rule: "XFER-34"})
			return
		}
		// Everything before this WR is implicitly acknowledged.
		if q.ackLocked(psnAdd(e.psn, psnMask)) {
			q.progressLocked()
		}
		if p.Kind == PktAtomicAck && e.op == verbs.WRAtomicWrite {
			e.fin = true // its response carries nothing to place (XFER-33)
		} else if p.Kind == PktAtomicAck {
			var b [8]byte
			binary.NativeEndian.PutUint64(b[:], p.Orig)
			if !q.scatterSendLocked(e, 0, b[:]) {
				// Only under XFER-31 B: the remote has executed.
				e.status = verbs.WCLocProtErr
			}
			e.fin = true
		} else {
			mtu := uint64(q.mtuLocked())
			if !q.scatterSendLocked(e, uint64(e.got)*mtu, p.Payload) {
				e.status, e.fin = verbs.WCLocProtErr, true
				return
			}
			e.got++
			if e.got == e.npkts {
				e.fin = true
			}
		}
		q.progressLocked()
		return
	}
}

// scatterSendLocked writes READ or atomic result bytes at offset off of e's
// local SGEs, which must grant LOCAL_WRITE (MR-03).
func (q *QP) scatterSendLocked(e *wqe, off uint64, src []byte) bool {
	return scatter(q.cfg.Host, q.cfg.PD, e.sge, off, src)
}

// scatter writes src at offset off of the buffer an SGE list describes.
func scatter(h Host, pd any, sges []verbs.SGE, off uint64, src []byte) bool {
	for _, s := range sges {
		if len(src) == 0 {
			return true
		}
		if off >= uint64(s.Length) {
			off -= uint64(s.Length)
			continue
		}
		b, ok := h.LocalLocked(pd, s, true)
		if !ok {
			return false
		}
		var n int
		if b != nil {
			n = copy(b[off:], src)
		} else { // another process's memory (s.Length > off)
			m, _ := h.LocalMemLocked(pd, s, true)
			n = m.WriteAt(src, off)
		}
		src = src[n:]
		off = 0
	}
	return len(src) == 0
}

// failLocked completes the oldest unfinished WR with st; the QP goes to
// ERR when the completer reaches it (FLUSH-03). An RNR or a NAK names the
// oldest unacknowledged PSN, which belongs to that WR.
func (q *QP) failLocked(st verbs.WCStatus) {
	for seq := q.sq.done; seq < q.tx.next; seq++ {
		e := q.sq.slot(seq)
		if e.fin {
			continue
		}
		e.status, e.fin = st, true
		q.tx.halted = true
		return
	}
}

// rewindLocked makes the requester transmit again from psn (go-back-N):
// from the oldest unfinished WR, and within it from psn when psn falls in
// a SEND or WRITE. A READ or atomic is always asked for again whole.
func (q *QP) rewindLocked(psn uint32) {
	for seq := q.sq.done; seq < q.tx.next; seq++ {
		e := q.sq.slot(seq)
		if e.fin {
			continue
		}
		q.tx.next, q.tx.nextPkt = seq, 0
		if d := psnDiff(psn, e.psn); d > 0 && d < int32(e.npkts) && !isRdAtomic(e.op) {
			q.tx.nextPkt = uint32(d)
		}
		return
	}
}

// TimerLocked handles the expiry of one of q's timers (the engine calls
// it).
//
// Precondition: the domain lock is held.
func (q *QP) TimerLocked(k TimerKind) {
	if q == nil || q.life != live || !reliable(q.typ) || (q.state != verbs.QPStateRTS && q.state != verbs.QPStateSQD) {
		return
	}
	t := &q.tx
	switch k {
	case TimerRNR:
		t.rnrWait = false
		q.stats.RNRRetries++
		q.traceLocked(trace.Record{Kind: trace.KindTimer, Name: "RNR timer fired", Timer: trace.TimerRNR, Why: "retry the message", Rule: "XFER-07"})
		q.RunLocked()
	case TimerRetry:
		if t.next == q.sq.done {
			return
		}
		infinite := q.attr.RetryCnt == 7 && q.cfg.Transport.InfiniteRetry7
		q.stats.ACKTimeouts++
		if t.retryLeft == 0 && q.attr.RetryCnt == 7 {
			q.cfg.consult(verbs.ReadingInfiniteRetry7)
		}
		if t.retryLeft == 0 && !infinite {
			q.stats.RetryExceeded++
			q.traceLocked(trace.Record{Kind: trace.KindTimer, Name: "retries exhausted", Timer: trace.TimerACK, Rule: "XFER-10"})
			q.failLocked(verbs.WCRetryExcErr)
			q.completeLocked()
			return
		}
		if !infinite {
			t.retryLeft--
		}
		t.impliedNAK = false
		q.traceLocked(trace.Record{Kind: trace.KindTimer, Name: "ACK timeout", Timer: trace.TimerACK, Why: "retransmit", Rule: "XFER-10"})
		q.rewindLocked(q.ackedPSNLocked())
		q.RunLocked()
	}
}

// forcedStatus is a fault: the completion of the WR with wrid gets status.
type forcedStatus struct {
	wrid   uint64
	recv   bool
	status verbs.WCStatus
}

// ForceStatusLocked makes the next completion of the send WR (or, with
// recv, the receive WR) whose wr_id is wrID complete with st instead of
// succeeding, as if the adapter had failed it: the QP then goes to its
// error state as for any failed WR, and the rest of the queue is flushed.
// It is the "forced completion status" fault; st must not be Success.
// The fault is spent by that next completion whatever it is: if the WR
// fails on its own or is flushed, it keeps its own status and the fault is
// gone. Moving the QP to RESET forgets every fault not yet spent.
//
// Precondition: the domain lock is held.
func (q *QP) ForceStatusLocked(wrID uint64, recv bool, st verbs.WCStatus) {
	if q == nil {
		return
	}
	q.forced = append(q.forced, forcedStatus{wrid: wrID, recv: recv, status: st})
}

// takeForcedLocked spends the forced status of wrid, if there is one, on a
// completion whose own status is st, and returns the status the completion
// gets: the forced one if st is Success, st otherwise.
func (q *QP) takeForcedLocked(wrid uint64, recv bool, st verbs.WCStatus) verbs.WCStatus {
	for i, f := range q.forced {
		if f.wrid == wrid && f.recv == recv {
			q.forced = append(q.forced[:i], q.forced[i+1:]...)
			if st != verbs.WCSuccess {
				if q.tracing() {
					q.traceLocked(trace.Record{Kind: trace.KindFault, Name: "forced status", Detail: "not applied",
						WC: &trace.WC{QPNum: q.num, WRID: wrid, Status: f.status}, Why: "the WR completed with " + st.Name() + " first"})
				}
				return st
			}
			if q.tracing() {
				q.traceLocked(trace.Record{Kind: trace.KindFault, Name: "forced status", WC: &trace.WC{QPNum: q.num, WRID: wrid, Status: f.status}, Why: "fault: forced status"})
			}
			return f.status
		}
	}
	return st
}

// forgetForcedLocked drops every forced status not yet spent (RESET).
func (q *QP) forgetForcedLocked() {
	if len(q.forced) > 0 {
		if q.tracing() {
			q.traceLocked(trace.Record{Kind: trace.KindFault, Name: "forced statuses forgotten", Detail: strconv.Itoa(len(q.forced)), Why: "RESET"})
		}
		q.forced = q.forced[:0]
	}
}

// FatalLocked is the catastrophic work-queue error of ASYNC-08: the QP goes
// to ERR, flushing both queues, and IBV_EVENT_QP_FATAL names it (unless the
// profile raises no QP events, as rxe, ASYNC-11).
//
// Precondition: the domain lock is held.
func (q *QP) FatalLocked() {
	if q == nil || q.life != live || q.state == verbs.QPStateErr {
		return
	}
	q.traceLocked(trace.Record{Kind: trace.KindEvent, Name: "fatal error", Why: "fault: QP_FATAL", Rule: "ASYNC-08"})
	q.raiseLocked(verbs.EventQPFatal)
	q.SetErrorLocked()
}
