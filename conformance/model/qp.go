package model

import (
	"fmt"
	"syscall"

	"github.com/verbsim/verbsim/verbs"
)

// This file models queue pairs as far as one adapter decides on its own:
// creation on the model's CQs, the state machine with its attribute masks,
// posting, queue capacity, flush on ERR, reset and destroy. Work requests
// never execute here (traffic is issue #4): a QP's only completions are
// flush completions, and they reach the CQs through the same push as
// injected ones, so overrun, arm and event rules apply to them unchanged.
//
// The transition table is verbs.Transition, the one the simulator enforces
// and the suite's cases follow (QP-07..QP-21).

// source is where a completion in a CQ came from: the work request with
// sequence number seq, counted from the last reset (epoch), of a QP's send
// or receive queue; qp < 0 for a completion added with Push.
type source struct {
	qp    int
	recv  bool
	seq   uint64
	epoch int
}

// WorkQueue is the model of a send or receive queue.
type WorkQueue struct {
	Depth       int      // capacity the implementation reports (QP-02)
	Outstanding []uint64 // wr_ids posted and not yet completed, oldest first
	Posted      uint64   // requests posted since creation or the last reset
	Freed       uint64   // the slots of the first Freed of them are free again
	epoch       int      // resets so far: completions of older epochs free nothing
}

// Occupied returns how many slots are taken: outstanding requests, and under
// QP-29 A completed ones whose covering completion has not been polled.
// (Under QP-29 B a flush frees its slots at once: see flush.)
func (w WorkQueue) Occupied() int { return int(w.Posted - w.Freed) }

// QPInit is what ibv_create_qp is asked for.
type QPInit struct {
	Type           verbs.QPType
	SendCQ, RecvCQ int // CQ indices; they may be the same CQ (QP-03)
	MaxSendWR      int
	MaxRecvWR      int
	SQSigAll       bool // changes nothing without traffic: flushes take every request (FLUSH-04)
}

// QP is the model of one queue pair. Read it through Model.QP.
type QP struct {
	Init      QPInit
	Destroyed bool
	State     verbs.QPState
	Num       uint32 // qp_num, as the implementation chose it (QP-01)
	SQ, RQ    WorkQueue

	AsyncRead, AsyncAcked int // SQ_DRAINED events read and acked
}

// Unacked returns how many async events read for the QP still await an ack;
// ibv_destroy_qp would wait for them (ASYNC-05).
func (q QP) Unacked() int { return q.AsyncRead - q.AsyncAcked }

// Flushed is a flush completion the model produced: the CQ it went to, the
// completion, and whether that CQ overran instead of storing it (CQ-22).
type Flushed struct {
	CQ      int
	WC      verbs.WC
	Overrun bool
}

// NumQPs returns how many QPs have been created (destroyed ones included).
func (m *Model) NumQPs() int { return len(m.qps) }

// QP returns a copy of QP id.
func (m *Model) QP(id int) QP {
	q := *m.qps[id]
	q.SQ.Outstanding = append([]uint64(nil), q.SQ.Outstanding...)
	q.RQ.Outstanding = append([]uint64(nil), q.RQ.Outstanding...)
	return q
}

// CreateQP is ibv_create_qp. It fails with EINVAL for a transport other
// than RC, UC and UD, a CQ that is not live, or a queue above max_qp_wr
// (QP-02, QP-03); otherwise the QP starts in RESET (QP-01) holding both CQs
// (CQ-11), and the caller reports what the implementation chose with
// AcceptQP.
func (m *Model) CreateQP(a QPInit) (int, syscall.Errno) {
	switch a.Type {
	case verbs.QPTypeRC, verbs.QPTypeUC, verbs.QPTypeUD:
	default:
		return -1, syscall.EINVAL
	}
	if m.cqs[a.SendCQ].State != Live || m.cqs[a.RecvCQ].State != Live {
		return -1, syscall.EINVAL
	}
	if a.MaxSendWR < 0 || a.MaxRecvWR < 0 || a.MaxSendWR > m.limits.MaxQPWR || a.MaxRecvWR > m.limits.MaxQPWR {
		return -1, syscall.EINVAL // QP-02
	}
	m.cqs[a.SendCQ].QPs++
	m.cqs[a.RecvCQ].QPs++
	m.qps = append(m.qps, &QP{Init: a, State: verbs.QPStateReset})
	return len(m.qps) - 1, OK
}

// AcceptQP checks the qp_num and queue depths an implementation reports for
// QP id after a successful CreateQP and adopts them: the number must differ
// from every other live QP's (QP-01), and each depth must be at least the
// request (QP-02).
func (m *Model) AcceptQP(id int, num uint32, sendDepth, recvDepth int) error {
	q := m.qps[id]
	for j, o := range m.qps {
		if j != id && !o.Destroyed && o.Num == num {
			return fmt.Errorf("qp_num %#x is already the number of live qp %d (QP-01)", num, j)
		}
	}
	if sendDepth < q.Init.MaxSendWR || recvDepth < q.Init.MaxRecvWR {
		return fmt.Errorf("max_send_wr %d, max_recv_wr %d are below the request %d, %d (QP-02)",
			sendDepth, recvDepth, q.Init.MaxSendWR, q.Init.MaxRecvWR)
	}
	q.Num, q.SQ.Depth, q.RQ.Depth = num, sendDepth, recvDepth
	return nil
}

// QueryQP is ibv_query_qp: the current state (QP-24), or EINVAL on a
// destroyed QP.
func (m *Model) QueryQP(id int) (verbs.QPState, syscall.Errno) {
	q := m.qps[id]
	if q.Destroyed {
		return 0, syscall.EINVAL
	}
	return q.State, OK
}

// ModifyQP is ibv_modify_qp on QP id with a mask; to is the target state,
// read only when mask has IBV_QP_STATE (otherwise the call is checked as
// the current state to itself, QP-11). Attribute values are not modelled:
// the caller must pass valid ones. An illegal pair or mask is EINVAL and
// changes nothing (QP-07, QP-10, QP-13). Entering ERR flushes both queues
// (FLUSH-01); entering RESET empties them without completions (FLUSH-08).
// It returns the flush completions produced.
func (m *Model) ModifyQP(id int, to verbs.QPState, mask verbs.QPAttrMask) ([]Flushed, syscall.Errno) {
	q := m.qps[id]
	if q.Destroyed {
		return nil, syscall.EINVAL
	}
	if mask&verbs.QPAttrState == 0 {
		to = q.State
	}
	req, opt, ok := verbs.Transition(q.State, to, q.Init.Type, m.readings)
	if !ok || mask&req != req || mask&^(req|opt|verbs.QPAttrState) != 0 {
		return nil, syscall.EINVAL
	}
	from := q.State
	q.State = to
	if from == verbs.QPStateRTS && to == verbs.QPStateSQD && m.readings.AlwaysSQDrained && len(q.SQ.Outstanding) == 0 {
		// ASYNC-13, rxe's reading: SQ_DRAINED, asked or not, once nothing
		// is in flight; with sends outstanding it would wait for them,
		// which the model does not run.
		m.async = append(m.async, AsyncEvent{Type: EventSQDrained, CQ: -1, QP: id})
	}
	switch to {
	case verbs.QPStateErr:
		return append(m.flush(id, false), m.flush(id, true)...), OK
	case verbs.QPStateReset:
		q.SQ.reset()
		q.RQ.reset()
	}
	return nil, OK
}

// reset empties the queue without completions and frees every slot.
func (w *WorkQueue) reset() {
	w.Outstanding, w.Posted, w.Freed = nil, 0, 0
	w.epoch++
}

// flush completes every outstanding request of one queue of QP id with
// WR_FLUSH_ERR on that queue's CQ, in posting order, unsignaled ones
// included (FLUSH-01, FLUSH-02, FLUSH-04). Only wr_id, status and qp_num are
// set (FLUSH-06). Receive flushes are marked solicited and send flushes not,
// which matters only under NOTIFY-05 B.
//
// The send queue is flushed before the receive queue. The rules leave the
// interleaving of two queues sharing a CQ open (FLUSH-02 orders each queue
// alone); this is the one order the model commits to, verbsim's.
func (m *Model) flush(id int, recv bool) []Flushed {
	q := m.qps[id]
	w, cq := &q.SQ, q.Init.SendCQ
	if recv {
		w, cq = &q.RQ, q.Init.RecvCQ
	}
	var out []Flushed
	first := w.Posted - uint64(len(w.Outstanding))
	for i, wrid := range w.Outstanding {
		c := verbs.WC{WRID: wrid, Status: verbs.WCWRFlushErr, QPNum: q.Num}
		over, _ := m.push(cq, c, recv, source{qp: id, recv: recv, seq: first + uint64(i), epoch: w.epoch})
		out = append(out, Flushed{CQ: cq, WC: c, Overrun: over})
	}
	w.Outstanding = nil
	if m.readings.FreeSlotOnRetire {
		w.Freed = w.Posted // QP-29 B: flushed is retired, polled or not
	}
	return out
}

// retire frees the slots a polled completion covers: its own and every
// earlier one of its queue (QP-29 A: the slot is freed when the completion
// of the request, or of a later one covering it, is polled). A completion
// from before a reset, or of a destroyed QP, frees nothing. Under QP-29 B
// the flush freed them already.
func (m *Model) retire(s source) {
	if s.qp < 0 {
		return
	}
	q := m.qps[s.qp]
	w := &q.SQ
	if s.recv {
		w = &q.RQ
	}
	if !q.Destroyed && s.epoch == w.epoch && s.seq+1 > w.Freed {
		w.Freed = s.seq + 1
	}
}

// post queues wrIDs in order until the queue is full (ENOMEM, QP-29, QP-31)
// and returns how many were posted (QP-27). A list posted in ERR is flushed
// after the whole list is queued, so it meets a full queue under either
// reading of QP-29.
func (w *WorkQueue) post(wrIDs []uint64) (int, syscall.Errno) {
	for i, id := range wrIDs {
		if w.Occupied() >= w.Depth {
			return i, syscall.ENOMEM
		}
		w.Outstanding = append(w.Outstanding, id)
		w.Posted++
	}
	return len(wrIDs), OK
}

// PostSend is ibv_post_send of well-formed send requests with the given
// wr_ids on QP id. Sends are accepted in RTS, SQD, SQE and ERR, EINVAL
// elsewhere (QP-26); in SQE and ERR what was posted, up to a full queue, is
// flushed at once (FLUSH-05). Nothing executes, so whether a request is
// signaled changes nothing here. It returns how many were posted and the
// flush completions.
func (m *Model) PostSend(id int, wrIDs []uint64) (int, []Flushed, syscall.Errno) {
	q := m.qps[id]
	if q.Destroyed {
		return 0, nil, syscall.EINVAL
	}
	switch q.State {
	case verbs.QPStateRTS, verbs.QPStateSQD, verbs.QPStateSQE, verbs.QPStateErr:
	default:
		return 0, nil, syscall.EINVAL
	}
	n, errno := q.SQ.post(wrIDs)
	var out []Flushed
	if q.State == verbs.QPStateErr || q.State == verbs.QPStateSQE {
		out = m.flush(id, false)
	}
	return n, out, errno
}

// PostRecv is ibv_post_recv of receive requests with the given wr_ids on QP
// id. Receives are accepted in every state but RESET (QP-25); in ERR they are
// flushed at once (FLUSH-05).
func (m *Model) PostRecv(id int, wrIDs []uint64) (int, []Flushed, syscall.Errno) {
	q := m.qps[id]
	if q.Destroyed || q.State == verbs.QPStateReset {
		return 0, nil, syscall.EINVAL
	}
	n, errno := q.RQ.post(wrIDs)
	var out []Flushed
	if q.State == verbs.QPStateErr {
		out = m.flush(id, true)
	}
	return n, out, errno
}

// DestroyQP is ibv_destroy_qp on QP id: outstanding requests vanish without
// completions (QP-37) and the CQs are released (CQ-11). Completions already
// in a CQ stay there (CQ-26, the reading verbsim and rxe follow), and its
// unread async events are discarded. EINVAL the second time.
//
// Precondition: every async event read for the QP is acked (QP.Unacked is
// 0); otherwise ibv_destroy_qp would wait for the acks (ASYNC-05), which
// the model leaves to the cases.
func (m *Model) DestroyQP(id int) syscall.Errno {
	q := m.qps[id]
	if q.Destroyed {
		return syscall.EINVAL
	}
	q.Destroyed = true
	q.SQ.Outstanding, q.RQ.Outstanding = nil, nil
	m.dropAsync(func(ev AsyncEvent) bool { return ev.QP == id })
	m.cqs[q.Init.SendCQ].QPs--
	m.cqs[q.Init.RecvCQ].QPs--
	return OK
}
