package qp

import (
	"fmt"
	"syscall"

	"github.com/verbsim/verbsim/sim/trace"
	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// Modify changes the QP's attributes and state (ibv_modify_qp). The call is
// checked as a whole by CheckModify against the transition table (QP-07..12,
// QP-14..21), the value limits (QP-22) and the SQD-drain rule (QP-23), and
// either everything in mask takes effect or nothing does (QP-13). On a
// destroyed QP it returns EINVAL.
//
// Entering a state has these effects:
//   - ERR: every outstanding work request of both queues completes with
//     IBV_WC_WR_FLUSH_ERR (FLUSH-01..04); no async event (FLUSH-14).
//   - RESET: both queues are emptied without completions; the QP can be
//     taken through INIT, RTR and RTS again (FLUSH-08).
//   - SQD: the send queue stops taking new work; with nothing in flight the
//     drain is over at once, and with EnSQDAsyncNotify an
//     IBV_EVENT_SQ_DRAINED names the QP (ASYNC-13).
func (q *QP) Modify(attr *verbs.QPAttr, mask verbs.QPAttrMask) error {
	if q == nil {
		return verr.New(verbModify, syscall.EINVAL, "nil QP")
	}
	if attr == nil {
		return verr.New(verbModify, syscall.EINVAL, "nil attr")
	}
	q.enterVerb(verbModify)
	defer q.leave()
	return q.ModifyLocked(attr, mask)
}

// ModifyLocked is Modify for a caller that holds the domain lock.
func (q *QP) ModifyLocked(attr *verbs.QPAttr, mask verbs.QPAttrMask) error {
	if q == nil || attr == nil {
		return verr.New(verbModify, syscall.EINVAL, "nil QP or attr")
	}
	if q.life != live {
		err := verr.New(verbModify, syscall.EINVAL, "the QP has been destroyed")
		q.traceVerbLocked("modify_qp", "", err)
		return err
	}
	next, err := CheckModify(Current{State: q.state, Port: q.attr.PortNum, Draining: q.drainingLocked()}, q.typ, attr, mask, q.cfg.Modify, q.cfg.Policy)
	if err != nil {
		if q.tracing() {
			detail := fmt.Sprintf("%v, mask %#x", q.state, uint32(mask))
			if mask&verbs.QPAttrState != 0 {
				detail = fmt.Sprintf("%v→%v", q.state, attr.QPState)
			}
			q.traceVerbLocked("modify_qp", detail, err)
		}
		return err
	}
	norm := verbs.NormalizeQPAttr(*attr, mask)
	q.attr.Apply(&norm, mask)
	q.attrGen++ // a RESET below clears attr: the same change
	prev := q.state
	q.state = next
	if q.tracing() {
		q.traceVerbLocked("modify_qp", fmt.Sprintf("%v→%v", prev, next), nil)
	}
	switch {
	case next == verbs.QPStateErr:
		q.stopTimersLocked()
		q.flushLocked()
	case next == verbs.QPStateReset:
		q.sq.reset()
		q.rq.reset()
		q.forgetForcedLocked()
		q.attr = verbs.QPAttr{}
		q.lastWQE = false
		q.resetTransportLocked()
		q.purgeCQsLocked()
	case next == verbs.QPStateRTR && prev == verbs.QPStateInit:
		q.rx = q.rx.fresh(q.attr.RQPSN)
	case next == verbs.QPStateRTS && prev == verbs.QPStateRTR:
		q.tx = sendState{next: q.sq.tail, assigned: q.sq.tail, psn: q.attr.SQPSN,
			retryLeft: q.attr.RetryCnt, rnrLeft: q.attr.RNRRetry}
	case next == verbs.QPStateRTS && prev == verbs.QPStateSQE:
		q.tx.halted = false
		q.scheduleLocked()
	case next == verbs.QPStateRTS && prev == verbs.QPStateSQD:
		q.tx.drainOwed = false
		q.scheduleLocked() // QP-39: what waited in SQD starts now
	case next == verbs.QPStateSQD && prev != verbs.QPStateSQD:
		// The request belongs to this modify call, not to the QP: an
		// earlier RTS→SQD that asked does not make a later one ask.
		asked := mask&verbs.QPAttrEnSQDAsyncNotify != 0 && attr.EnSQDAsyncNotify
		q.tx.drainOwed = asked || q.cfg.Transport.AlwaysSQDrained
		q.drainCheckLocked()
	}
	if next == verbs.QPStateRTS || next == verbs.QPStateSQD {
		// Attribute changes (retry counts, timeouts) apply from now on.
		q.tx.retryLeft, q.tx.rnrLeft = q.attr.RetryCnt, q.attr.RNRRetry
	}
	return nil
}

// SetErrorLocked moves the QP to ERR outside ibv_modify_qp, as the adapter
// does on a fatal error or a CQ overrun (CQ-24), and flushes it.
//
// Precondition: the domain lock is held.
func (q *QP) SetErrorLocked() {
	if q == nil || q.life != live || q.state == verbs.QPStateErr {
		return
	}
	q.state = verbs.QPStateErr
	q.traceLocked(trace.Record{Kind: trace.KindState, Name: "state ERR", Why: "an error moved the QP to ERR"})
	q.stopTimersLocked()
	q.flushLocked()
}

// purgeCQsLocked deletes q's completions still in its CQs when the
// transport reading asks for it (CQ-26 B, mlx5): at RESET and at destroy.
func (q *QP) purgeCQsLocked() {
	if !q.cfg.Transport.ResetPurgesCQ {
		return
	}
	type purger interface{ PurgeQPLocked(qpn uint32) int }
	if p, ok := q.init.SendCQ.(purger); ok {
		p.PurgeQPLocked(q.num)
	}
	if q.init.RecvCQ != q.init.SendCQ {
		if p, ok := q.init.RecvCQ.(purger); ok {
			p.PurgeQPLocked(q.num)
		}
	}
}
