package model

import (
	"slices"
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/verbs"
)

// The QP half of the model, pinned against the catalogue like the CQ half.

// Short names of the mask bits the tests name.
const (
	mPKey, mPort, mAccess, mQKey = verbs.QPAttrPKeyIndex, verbs.QPAttrPort, verbs.QPAttrAccessFlags, verbs.QPAttrQKey
	mAV, mMTU, mDestQPN          = verbs.QPAttrAV, verbs.QPAttrPathMTU, verbs.QPAttrDestQPN
	mRQPSN, mDestAt              = verbs.QPAttrRQPSN, verbs.QPAttrMaxDestRDAtomic
)

var qpLim = Limits{MaxCQE: 16, NumCompVectors: 2, MaxQPWR: 8}

// minimal returns STATE plus the bits the model requires from→to.
func minimal(t *testing.T, r verbs.Readings, from, to verbs.QPState, typ verbs.QPType) verbs.QPAttrMask {
	t.Helper()
	req, _, ok := verbs.Transition(from, to, typ, r)
	if !ok {
		t.Fatalf("%v→%v on %v is not in verbs.Transition", from, to, typ)
	}
	return verbs.QPAttrState | req
}

// newQP returns a model with send and receive CQs of capacity 16 and a QP of
// type typ with depths sq and rq on them, taken to state s along the way up
// (or to ERR through INIT).
func newQP(t *testing.T, r verbs.Readings, typ verbs.QPType, sq, rq int, s verbs.QPState) (m *Model, id, scq, rcq int) {
	t.Helper()
	m = New(r, qpLim)
	scq, _ = m.CreateCQ(16, nil, -1, 0)
	rcq, _ = m.CreateCQ(16, nil, -1, 0)
	for _, c := range []int{scq, rcq} {
		if err := m.AcceptCQE(c, 16); err != nil {
			t.Fatal(err)
		}
	}
	id, errno := m.CreateQP(QPInit{Type: typ, SendCQ: scq, RecvCQ: rcq, MaxSendWR: sq, MaxRecvWR: rq})
	want(t, "CreateQP", errno, OK)
	if err := m.AcceptQP(id, 0x11, sq, rq); err != nil {
		t.Fatal(err)
	}
	path := map[verbs.QPState][]verbs.QPState{
		verbs.QPStateReset: nil, verbs.QPStateInit: {verbs.QPStateInit}, verbs.QPStateRTR: {verbs.QPStateInit, verbs.QPStateRTR},
		verbs.QPStateRTS: {verbs.QPStateInit, verbs.QPStateRTR, verbs.QPStateRTS}, verbs.QPStateSQD: {verbs.QPStateInit, verbs.QPStateRTR, verbs.QPStateRTS, verbs.QPStateSQD}, verbs.QPStateErr: {verbs.QPStateInit, verbs.QPStateErr},
	}[s]
	cur := verbs.QPStateReset
	for _, next := range path {
		if _, errno := m.ModifyQP(id, next, minimal(t, r, cur, next, typ)); errno != OK {
			t.Fatalf("%v→%v: %v", cur, next, errno)
		}
		cur = next
	}
	return m, id, scq, rcq
}

func wrIDs(ws []verbs.WC) []uint64 {
	var out []uint64
	for _, w := range ws {
		out = append(out, w.WRID)
	}
	return out
}

// TestQPTransitionMasks checks the mask rule of QP-10 (and QP-07, QP-09,
// QP-11, QP-21) through ModifyQP: a refused modify changes nothing.
func TestQPTransitionMasks(t *testing.T) {
	m, id, _, _ := newQP(t, verbs.Readings{}, verbs.QPTypeRC, 2, 2, verbs.QPStateInit)
	_, errno := m.ModifyQP(id, verbs.QPStateRTR, verbs.QPAttrState|mAV|mMTU|mDestQPN|mRQPSN|mDestAt) // one short
	want(t, "INIT→RTR without MIN_RNR_TIMER (QP-10)", errno, syscall.EINVAL)
	_, errno = m.ModifyQP(id, verbs.QPStateErr, verbs.QPAttrState|mPort)
	want(t, "INIT→ERR with PORT (QP-09)", errno, syscall.EINVAL)
	_, errno = m.ModifyQP(id, verbs.QPStateRTS, verbs.QPAttrState)
	want(t, "INIT→RTS (QP-07)", errno, syscall.EINVAL)
	_, errno = m.ModifyQP(id, verbs.QPStateInit, verbs.QPAttrState|verbs.QPAttrCap)
	want(t, "INIT→INIT with CAP (QP-21)", errno, syscall.EINVAL)
	s, _ := m.QueryQP(id)
	want(t, "state after refused modifies (QP-13)", s, verbs.QPStateInit)
	_, errno = m.ModifyQP(id, verbs.QPStateErr, mPort) // no STATE: INIT→INIT (QP-11)
	want(t, "PORT alone in INIT (QP-11)", errno, OK)
	s, _ = m.QueryQP(id)
	want(t, "state after an attribute-only modify", s, verbs.QPStateInit)
}

// TestQPCreate checks the creation checks and the CQ references (QP-02,
// QP-03, CQ-11).
func TestQPCreate(t *testing.T) {
	m := New(verbs.Readings{}, qpLim)
	a, _ := m.CreateCQ(4, nil, -1, 0)
	b, _ := m.CreateCQ(4, nil, -1, 0)
	for _, c := range []QPInit{
		{Type: verbs.QPTypeRC, SendCQ: a, RecvCQ: a, MaxSendWR: 9},
		{Type: verbs.QPTypeUD, SendCQ: a, RecvCQ: a, MaxRecvWR: 9},
		{Type: verbs.QPType(99), SendCQ: a, RecvCQ: a},
	} {
		_, errno := m.CreateQP(c)
		want(t, "CreateQP(bad)", errno, syscall.EINVAL)
	}
	id, errno := m.CreateQP(QPInit{Type: verbs.QPTypeUC, SendCQ: a, RecvCQ: b, MaxSendWR: 8})
	want(t, "CreateQP", errno, OK)
	if m.AcceptQP(id, 5, 7, 0) == nil {
		t.Error("a depth below the request was accepted (QP-02)")
	}
	want(t, "AcceptQP", m.AcceptQP(id, 5, 8, 0), error(nil))
	id2, _ := m.CreateQP(QPInit{Type: verbs.QPTypeRC, SendCQ: b, RecvCQ: b})
	if m.AcceptQP(id2, 5, 0, 0) == nil {
		t.Error("a second live QP with the same qp_num was accepted (QP-01)")
	}
	for _, c := range []int{a, b} {
		_, errno := m.DestroyCQ(c)
		want(t, "DestroyCQ of a CQ a QP holds (CQ-11)", errno, syscall.EBUSY)
	}
	want(t, "DestroyQP", m.DestroyQP(id), OK)
	want(t, "DestroyQP again", m.DestroyQP(id), syscall.EINVAL)
	_, errno = m.QueryQP(id)
	want(t, "QueryQP of a destroyed QP", errno, syscall.EINVAL)
	_, errno = m.DestroyCQ(a)
	want(t, "DestroyCQ once the QP is gone", errno, OK)
	_, errno = m.CreateQP(QPInit{Type: verbs.QPTypeRC, SendCQ: a, RecvCQ: b})
	want(t, "CreateQP on a destroyed CQ", errno, syscall.EINVAL)
}

// TestQPPostStates checks in which states posts are accepted (QP-25, QP-26).
func TestQPPostStates(t *testing.T) {
	for _, s := range []verbs.QPState{verbs.QPStateReset, verbs.QPStateInit, verbs.QPStateRTR, verbs.QPStateRTS, verbs.QPStateSQD, verbs.QPStateErr} {
		m, id, _, _ := newQP(t, verbs.Readings{}, verbs.QPTypeRC, 4, 4, s)
		_, _, errno := m.PostSend(id, []uint64{1})
		wantSend := OK
		if s == verbs.QPStateReset || s == verbs.QPStateInit || s == verbs.QPStateRTR {
			wantSend = syscall.EINVAL
		}
		want(t, "PostSend in "+s.String()+" (QP-26)", errno, wantSend)
		_, _, errno = m.PostRecv(id, []uint64{2})
		wantRecv := OK
		if s == verbs.QPStateReset {
			wantRecv = syscall.EINVAL
		}
		want(t, "PostRecv in "+s.String()+" (QP-25)", errno, wantRecv)
	}
}

// TestQPFlush checks flush on ERR: every request, each on its own CQ, in
// posting order, with its wr_id and qp_num (FLUSH-01, 02, 04, 06), then
// requests posted in ERR (FLUSH-05).
func TestQPFlush(t *testing.T) {
	m, id, scq, rcq := newQP(t, verbs.Readings{}, verbs.QPTypeRC, 4, 4, verbs.QPStateRTS)
	m.PostSend(id, []uint64{1, 2, 3})
	m.PostRecv(id, []uint64{10, 11})
	fl, errno := m.ModifyQP(id, verbs.QPStateErr, verbs.QPAttrState)
	want(t, "RTS→ERR", errno, OK)
	want(t, "flush completions", len(fl), 5)
	sends, _ := m.Poll(scq, 8)
	recvs, _ := m.Poll(rcq, 8)
	if !slices.Equal(wrIDs(sends), []uint64{1, 2, 3}) || !slices.Equal(wrIDs(recvs), []uint64{10, 11}) {
		t.Errorf("flushed sends %v, receives %v", wrIDs(sends), wrIDs(recvs))
	}
	for _, w := range append(sends, recvs...) {
		if w.Status != verbs.WCWRFlushErr || w.QPNum != 0x11 {
			t.Errorf("flush completion %+v, want WR_FLUSH_ERR with qp_num 0x11", w)
		}
	}
	n, fl, errno := m.PostSend(id, []uint64{4, 5})
	want(t, "PostSend in ERR (FLUSH-05)", errno, OK)
	want(t, "posted in ERR", n, 2)
	want(t, "flushed at once", len(fl), 2)
	if q := m.QP(id); len(q.SQ.Outstanding) != 0 {
		t.Errorf("requests outstanding in ERR: %v", q.SQ.Outstanding)
	}
}

// TestQPCapacity checks that a slot frees only when the completion covering
// it is polled (QP-29 A, QP-31), and that RESET frees everything while the
// old completions stay pollable and free nothing (FLUSH-08, CQ-26).
func TestQPCapacity(t *testing.T) {
	m, id, _, rcq := newQP(t, verbs.Readings{}, verbs.QPTypeUD, 0, 2, verbs.QPStateRTS)
	n, _, errno := m.PostRecv(id, []uint64{1, 2, 3})
	want(t, "posted of three on a depth of 2", n, 2)
	want(t, "third post (QP-31)", errno, syscall.ENOMEM)
	m.ModifyQP(id, verbs.QPStateErr, verbs.QPAttrState)
	_, _, errno = m.PostRecv(id, []uint64{4})
	want(t, "post in ERR before polling", errno, syscall.ENOMEM)
	m.Poll(rcq, 1)
	n, _, errno = m.PostRecv(id, []uint64{5, 6})
	want(t, "post after polling one: posted", n, 1)
	want(t, "post after polling one", errno, syscall.ENOMEM)
	m.ModifyQP(id, verbs.QPStateReset, verbs.QPAttrState)
	want(t, "completions left after RESET (CQ-26)", len(m.CQ(rcq).WCs), 2)
	m.ModifyQP(id, verbs.QPStateInit, verbs.QPAttrState|mPKey|mPort|mQKey)
	n, _, _ = m.PostRecv(id, []uint64{7, 8})
	want(t, "posted after RESET", n, 2)
	m.Poll(rcq, 4) // stale completions free nothing
	_, _, errno = m.PostRecv(id, []uint64{9})
	want(t, "post on a full queue after polling stale completions", errno, syscall.ENOMEM)
}

// TestQPCapacityOnRetire checks QP-29 B: outstanding requests fill the
// queue as under A, but a flush frees their slots at once, before any poll
// and even when the completion is lost to an overrun; a list posted in ERR
// still stops at the queue's depth, since it is flushed once queued.
func TestQPCapacityOnRetire(t *testing.T) {
	r := verbs.Readings{FreeSlotOnRetire: true}
	m, id, scq, rcq := newQP(t, r, verbs.QPTypeRC, 2, 2, verbs.QPStateRTS)
	n, _, errno := m.PostSend(id, []uint64{1, 2, 3})
	want(t, "sends posted of three on a depth of 2", n, 2)
	want(t, "third send (QP-29)", errno, syscall.ENOMEM)
	n, _, errno = m.PostRecv(id, []uint64{11, 12, 13})
	want(t, "receives posted of three on a depth of 2", n, 2)
	want(t, "third receive (QP-31)", errno, syscall.ENOMEM)
	fl, _ := m.ModifyQP(id, verbs.QPStateErr, verbs.QPAttrState)
	want(t, "flushes", len(fl), 4)
	q := m.QP(id)
	want(t, "send slots taken after the flush", q.SQ.Occupied(), 0)
	want(t, "receive slots taken after the flush", q.RQ.Occupied(), 0)
	n, _, errno = m.PostSend(id, []uint64{4, 5, 6})
	want(t, "sends posted in ERR of three, nothing polled", n, 2)
	want(t, "third send in ERR", errno, syscall.ENOMEM)
	n, _, errno = m.PostRecv(id, []uint64{14, 15})
	want(t, "receives posted in ERR, nothing polled", n, 2)
	want(t, "receives in ERR", errno, OK)
	want(t, "send completions stored", len(m.CQ(scq).WCs), 4)
	want(t, "receive completions stored", len(m.CQ(rcq).WCs), 4)
	m.Poll(scq, 16) // retires nothing more
	want(t, "send slots taken after the poll", m.QP(id).SQ.Occupied(), 0)

	// Completions lost to an overrun free their slots too.
	m2 := New(r, qpLim)
	c, _ := m2.CreateCQ(1, nil, -1, 0)
	_ = m2.AcceptCQE(c, 1)
	id2, _ := m2.CreateQP(QPInit{Type: verbs.QPTypeRC, SendCQ: c, RecvCQ: c, MaxSendWR: 4, MaxRecvWR: 4})
	_ = m2.AcceptQP(id2, 0x12, 4, 4)
	m2.ModifyQP(id2, verbs.QPStateInit, verbs.QPAttrState|mPKey|mPort|mAccess)
	m2.PostRecv(id2, []uint64{1, 2, 3})
	fl, _ = m2.ModifyQP(id2, verbs.QPStateErr, verbs.QPAttrState)
	if len(fl) != 3 || fl[0].Overrun || !fl[1].Overrun || !fl[2].Overrun {
		t.Fatalf("flushes %+v, want the last two to overrun", fl)
	}
	want(t, "receive slots taken after a flush that overran", m2.QP(id2).RQ.Occupied(), 0)
	n, _, errno = m2.PostRecv(id2, []uint64{4, 5, 6, 7})
	want(t, "receives posted after a flush that overran, nothing polled", n, 4)
	want(t, "receives after a flush that overran", errno, OK)
}

// TestQPFlushOverrun checks that flush completions go through the CQ's
// overrun rule (CQ-22, CQ-23) and that a lost completion's slot stays taken
// until a later completion of the queue is polled (QP-29 A).
func TestQPFlushOverrun(t *testing.T) {
	for _, r := range []verbs.Readings{{}, {OverrunDrops: true}} {
		m := New(r, qpLim)
		c, _ := m.CreateCQ(2, nil, -1, 0)
		_ = m.AcceptCQE(c, 2)
		id, _ := m.CreateQP(QPInit{Type: verbs.QPTypeRC, SendCQ: c, RecvCQ: c, MaxSendWR: 4, MaxRecvWR: 4})
		_ = m.AcceptQP(id, 0x11, 4, 4)
		m.ModifyQP(id, verbs.QPStateInit, verbs.QPAttrState|mPKey|mPort|mAccess)
		m.PostRecv(id, []uint64{1, 2, 3})
		fl, _ := m.ModifyQP(id, verbs.QPStateErr, verbs.QPAttrState)
		if len(fl) != 3 || fl[0].Overrun || fl[1].Overrun || !fl[2].Overrun {
			t.Fatalf("%+v: flushes %+v, want the third to overrun", r, fl)
		}
		ev, errno := m.GetAsync()
		want(t, "CQ_ERR after a flush overran", errno, OK)
		want(t, "CQ_ERR names the CQ", ev.CQ, c)
		m.Poll(c, 4)
		want(t, "occupied after polling two of three", m.QP(id).RQ.Occupied(), 1)
		m.PostRecv(id, []uint64{4})
		m.Poll(c, 4)
		wantOcc := 2 // sticky error: the flush of 4 is lost too
		if r.OverrunDrops {
			wantOcc = 0 // polling 4's flush covers the lost one
		}
		want(t, "occupied after the next flush was polled", m.QP(id).RQ.Occupied(), wantOcc)
	}
}

// TestQPFlushNotifies checks that a flush fires an arm like any completion,
// and that under NOTIFY-05 B only receive flushes fire a solicited arm.
func TestQPFlushNotifies(t *testing.T) {
	for _, r := range []verbs.Readings{{}, {SolicitedBitOnly: true}} {
		m := New(r, qpLim)
		ch := m.CreateChannel()
		c, _ := m.CreateCQ(8, "ctx", ch, 0)
		_ = m.AcceptCQE(c, 8)
		id, _ := m.CreateQP(QPInit{Type: verbs.QPTypeRC, SendCQ: c, RecvCQ: c, MaxSendWR: 4, MaxRecvWR: 4})
		_ = m.AcceptQP(id, 0x11, 4, 4)
		m.ModifyQP(id, verbs.QPStateInit, verbs.QPAttrState|mPKey|mPort|mAccess)
		m.ModifyQP(id, verbs.QPStateErr, verbs.QPAttrState)
		m.Arm(c, true)
		m.PostSend(id, []uint64{1})
		_, errno := m.GetEvent(ch)
		wantErr := OK
		if r.SolicitedBitOnly {
			wantErr = syscall.EAGAIN
		}
		want(t, "event after a send flush on a solicited arm (NOTIFY-05)", errno, wantErr)
		m.Arm(c, true)
		m.PostRecv(id, []uint64{2})
		_, errno = m.GetEvent(ch)
		want(t, "event after a receive flush on a solicited arm (NOTIFY-05)", errno, OK)
	}
}

// TestQPDestroy checks that destroying a QP drops its requests without
// completions (QP-37) and leaves its completions in the CQ (CQ-26).
func TestQPDestroy(t *testing.T) {
	m, id, _, rcq := newQP(t, verbs.Readings{}, verbs.QPTypeRC, 4, 4, verbs.QPStateRTS)
	m.PostRecv(id, []uint64{1})
	m.ModifyQP(id, verbs.QPStateErr, verbs.QPAttrState)
	m.DestroyQP(id)
	want(t, "completions of a destroyed QP (CQ-26)", len(m.CQ(rcq).WCs), 1)
	m.Poll(rcq, 4) // retires nothing of a destroyed QP
	m2, id2, scq2, rcq2 := newQP(t, verbs.Readings{}, verbs.QPTypeRC, 4, 4, verbs.QPStateRTS)
	m2.PostSend(id2, []uint64{1})
	m2.PostRecv(id2, []uint64{2})
	want(t, "DestroyQP", m2.DestroyQP(id2), OK)
	want(t, "send completions after destroy (QP-37)", len(m2.CQ(scq2).WCs), 0)
	want(t, "receive completions after destroy (QP-37)", len(m2.CQ(rcq2).WCs), 0)
	_, _, errno := m2.PostRecv(id2, []uint64{3})
	want(t, "PostRecv on a destroyed QP", errno, syscall.EINVAL)
	_, errno = m2.ModifyQP(id2, verbs.QPStateReset, verbs.QPAttrState)
	want(t, "ModifyQP on a destroyed QP", errno, syscall.EINVAL)
}

// TestSQDrained checks the SQ_DRAINED events of rxe's reading of ASYNC-13:
// one per move from RTS to SQD with nothing in flight, acked per QP, and
// discarded with the QP; none under the man pages' reading.
func TestSQDrained(t *testing.T) {
	for _, r := range []verbs.Readings{{}, {AlwaysSQDrained: true}} {
		m, id, _, _ := newQP(t, r, verbs.QPTypeRC, 2, 2, verbs.QPStateRTS)
		_, errno := m.ModifyQP(id, verbs.QPStateSQD, minimal(t, r, verbs.QPStateRTS, verbs.QPStateSQD, verbs.QPTypeRC))
		want(t, "RTS→SQD", errno, OK)
		ev, errno := m.GetAsync()
		if !r.AlwaysSQDrained {
			want(t, "no event under the man pages' reading", errno, syscall.EAGAIN)
			continue
		}
		want(t, "SQ_DRAINED read", errno, OK)
		if ev != (AsyncEvent{Type: EventSQDrained, CQ: -1, QP: id}) {
			t.Errorf("event %+v, want SQ_DRAINED naming qp %d", ev, id)
		}
		want(t, "unacked after the read", m.QP(id).Unacked(), 1)
		want(t, "ack", m.AckAsync(ev), OK)
		want(t, "second ack", m.AckAsync(ev), syscall.EINVAL)
		// Back to RTS and into SQD again; the QP's destroy discards the
		// unread event.
		m.ModifyQP(id, verbs.QPStateRTS, verbs.QPAttrState)
		m.ModifyQP(id, verbs.QPStateSQD, verbs.QPAttrState)
		want(t, "destroy", m.DestroyQP(id), OK)
		_, errno = m.GetAsync()
		want(t, "the destroyed QP's event is gone", errno, syscall.EAGAIN)
	}
}
