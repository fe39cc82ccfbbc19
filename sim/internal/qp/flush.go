package qp

import "github.com/verbsim/verbsim/verbs"

// flushLocked completes every outstanding work request of both queues with
// IBV_WC_WR_FLUSH_ERR, each on its own queue's CQ, in posting order and after
// the ones already completed (FLUSH-01, FLUSH-02), unsignaled ones included
// (FLUSH-04). Only wr_id, status, qp_num and vendor_err are meaningful in a
// flush completion (FLUSH-06); verbsim leaves the opcode 0, as rxe does.
//
// For the solicited-only arm, receive flushes count as solicited and send
// flushes do not: that is rxe's marking (NOTIFY-05 reading B); under the
// default reading every unsuccessful completion fires anyway.
//
// A QP on an SRQ flushes only what it owns: the SRQ's WRs stay for the other
// QPs (FLUSH-07), and IBV_EVENT_QP_LAST_WQE_REACHED tells the application
// that this QP will take no more of them (ASYNC-14).
func (q *QP) flushLocked() {
	q.flushQueueLocked(&q.sq, q.init.SendCQ, false)
	if q.rx.wqe && q.recvSRQ() != nil {
		// The SRQ WR this QP had taken for a message in progress; an XRC
		// target's goes to its XRC SRQ's CQ.
		if c := q.recvCQ(); c != nil {
			w := verbs.WC{WRID: q.rx.srqWRID, Status: verbs.WCWRFlushErr, QPNum: q.num}
			c.PushWQELocked(&w, true, nil, 0)
			q.stats.RecvFlushed++
		}
	}
	q.rx.wqe, q.rx.inMsg = false, false
	if q.rq.outstanding() > 0 {
		q.flushQueueLocked(&q.rq, q.init.RecvCQ, true)
	}
	if q.init.SRQ != nil && !q.lastWQE && q.cfg.Async != nil {
		q.lastWQE = true
		q.cfg.Async.RaiseLocked(verbs.EventQPLastWQEReached, q, &q.tally, 0)
	}
}

// flushSendLocked flushes only the send queue (SQE, and posts in SQE).
func (q *QP) flushSendLocked() { q.flushQueueLocked(&q.sq, q.init.SendCQ, false) }

// recvSRQ is the SRQ the held receive WR comes from: the QP's SRQ, or on an
// XRC_RECV QP the XRC SRQ the request in progress names; nil for a QP with
// its own receive queue.
func (q *QP) recvSRQ() *SRQ {
	if q.typ == verbs.QPTypeXRCRecv {
		return q.rx.xsrq
	}
	return q.init.SRQ
}

// recvCQ is where receive completions go: the receive CQ, or on an XRC_RECV
// QP the CQ of the XRC SRQ in use, nil when that SRQ has been destroyed.
func (q *QP) recvCQ() CQ {
	if q.typ == verbs.QPTypeXRCRecv {
		if s := q.rx.xsrq; s != nil && s.life == live {
			return s.cfg.CQ
		}
		return nil
	}
	return q.init.RecvCQ
}

func (q *QP) flushQueueLocked(w *wq, c CQ, recv bool) {
	if !recv {
		q.tx.next, q.tx.assigned, q.tx.nextPkt = w.tail, w.tail, 0
		q.tx.rdInFlight, q.tx.halted = 0, false
	}
	for ; w.done < w.tail; w.done++ {
		wrid := w.wrid(w.done)
		if len(q.forced) > 0 {
			q.takeForcedLocked(wrid, recv, verbs.WCWRFlushErr)
		}
		comp := verbs.WC{WRID: wrid, Status: verbs.WCWRFlushErr, QPNum: q.num}
		if !recv && q.d.Checking() {
			q.noteDoneLocked(w.slot(w.done), w.done, verbs.WCWRFlushErr)
		}
		overrun, _ := c.PushWQELocked(&comp, recv, w, w.done)
		if overrun {
			// The completion is lost (CQ-22). Under QP-29 reading A its slot
			// stays occupied until a later completion of the queue is
			// polled or the QP is reset, which is what a lost completion
			// means; under reading B the flush has freed it.
			q.stats.CQOverruns++
		}
		if recv {
			q.stats.RecvFlushed++
		} else {
			q.stats.SendFlushed++
		}
	}
}
