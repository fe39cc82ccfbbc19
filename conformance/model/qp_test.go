package model

import (
	"slices"
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/sim/qp"
	"github.com/verbsim/verbsim/sim/wc"
)

// The QP half of the model, pinned against the catalogue like the CQ half.

var qpLim = Limits{MaxCQE: 16, NumCompVectors: 2, MaxQPWR: 8}

var qpAllTypes = []qp.Type{qp.RC, qp.UC, qp.UD}

// minimal returns STATE plus the bits the model requires from→to.
func minimal(t *testing.T, r Readings, from, to qp.State, typ qp.Type) qp.AttrMask {
	t.Helper()
	req, _, ok := transition(from, to, typ, r.ResetToErr)
	if !ok {
		t.Fatalf("%v→%v on %v is not in the model's table", from, to, typ)
	}
	return qp.AttrState | req
}

// newQP returns a model with send and receive CQs of capacity 16 and a QP of
// type typ with depths sq and rq on them, taken to state s along the way up
// (or to ERR through INIT).
func newQP(t *testing.T, r Readings, typ qp.Type, sq, rq int, s qp.State) (m *Model, id, scq, rcq int) {
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
	path := map[qp.State][]qp.State{
		qp.Reset: nil, qp.Init: {qp.Init}, qp.RTR: {qp.Init, qp.RTR},
		qp.RTS: {qp.Init, qp.RTR, qp.RTS}, qp.SQD: {qp.Init, qp.RTR, qp.RTS, qp.SQD}, qp.Err: {qp.Init, qp.Err},
	}[s]
	cur := qp.Reset
	for _, next := range path {
		if _, errno := m.ModifyQP(id, next, minimal(t, r, cur, next, typ)); errno != OK {
			t.Fatalf("%v→%v: %v", cur, next, errno)
		}
		cur = next
	}
	return m, id, scq, rcq
}

func wrIDs(ws []wc.WC) []uint64 {
	var out []uint64
	for _, w := range ws {
		out = append(out, w.WRID)
	}
	return out
}

// TestQPTransitionPairs checks the legal pairs of the table against QP-07
// and QP-08, for every transport.
func TestQPTransitionPairs(t *testing.T) {
	legal := map[qp.State][]qp.State{ // QP-07
		qp.Reset: {qp.Reset, qp.Init},
		qp.Init:  {qp.Reset, qp.Err, qp.Init, qp.RTR},
		qp.RTR:   {qp.Reset, qp.Err, qp.RTS},
		qp.RTS:   {qp.Reset, qp.Err, qp.RTS, qp.SQD},
		qp.SQD:   {qp.Reset, qp.Err, qp.RTS, qp.SQD},
		qp.SQE:   {qp.Reset, qp.Err, qp.RTS},
		qp.Err:   {qp.Reset, qp.Err},
	}
	for _, typ := range qpAllTypes {
		for from := qp.Reset; from <= qp.Unknown; from++ {
			for to := qp.Reset; to <= qp.Unknown+1; to++ {
				_, _, got := transition(from, to, typ, false)
				if w := slices.Contains(legal[from], to); got != w {
					t.Errorf("%v: %v→%v legal = %t, want %t (QP-07)", typ, from, to, got, w)
				}
				_, _, got = transition(from, to, typ, true)
				w := slices.Contains(legal[from], to) || from == qp.Reset && to == qp.Err
				if got != w {
					t.Errorf("%v, RESET→ERR allowed: %v→%v legal = %t, want %t (QP-08)", typ, from, to, got, w)
				}
			}
		}
	}
}

// TestQPTransitionMasks spot-checks required and optional bits (QP-09,
// QP-14, QP-16, QP-17, QP-21) and the mask rule of QP-10 through ModifyQP.
func TestQPTransitionMasks(t *testing.T) {
	for _, c := range []struct {
		from, to qp.State
		typ      qp.Type
		req      qp.AttrMask
	}{
		{qp.Reset, qp.Init, qp.UD, mPKey | mPort | mQKey},
		{qp.Reset, qp.Init, qp.RC, mPKey | mPort | mAccess},
		{qp.Init, qp.RTR, qp.UD, 0},
		{qp.Init, qp.RTR, qp.UC, mAV | mMTU | mDestQPN | mRQPSN},
		{qp.Init, qp.RTR, qp.RC, mAV | mMTU | mDestQPN | mRQPSN | mDestAt | mMinRNR},
		{qp.RTR, qp.RTS, qp.UC, mSQPSN},
		{qp.RTR, qp.RTS, qp.RC, mSQPSN | mTimeout | mRetry | mRNR | mRdAtom},
		{qp.RTS, qp.Err, qp.RC, 0},
		{qp.Init, qp.Reset, qp.UD, 0},
	} {
		req, opt, _ := transition(c.from, c.to, c.typ, false)
		want(t, c.typ.String()+" "+c.from.String()+"→"+c.to.String()+" required", req, c.req)
		if (c.to == qp.Reset || c.to == qp.Err) && opt != 0 {
			t.Errorf("%v→%v takes optional bits %v (QP-09)", c.from, c.to, opt)
		}
		if req&mQKey != 0 && c.typ != qp.UD || req&(mAccess|mAV|mDestQPN) != 0 && c.typ == qp.UD {
			t.Errorf("%v %v→%v requires a bit the transport does not have (QP-21)", c.typ, c.from, c.to)
		}
	}
	m, id, _, _ := newQP(t, Readings{}, qp.RC, 2, 2, qp.Init)
	_, errno := m.ModifyQP(id, qp.RTR, qp.AttrState|mAV|mMTU|mDestQPN|mRQPSN|mDestAt) // one short
	want(t, "INIT→RTR without MIN_RNR_TIMER (QP-10)", errno, syscall.EINVAL)
	_, errno = m.ModifyQP(id, qp.Err, qp.AttrState|mPort)
	want(t, "INIT→ERR with PORT (QP-09)", errno, syscall.EINVAL)
	_, errno = m.ModifyQP(id, qp.RTS, qp.AttrState)
	want(t, "INIT→RTS (QP-07)", errno, syscall.EINVAL)
	_, errno = m.ModifyQP(id, qp.Init, qp.AttrState|qp.AttrCap)
	want(t, "INIT→INIT with CAP (QP-21)", errno, syscall.EINVAL)
	s, _ := m.QueryQP(id)
	want(t, "state after refused modifies (QP-13)", s, qp.Init)
	_, errno = m.ModifyQP(id, qp.Err, mPort) // no STATE: INIT→INIT (QP-11)
	want(t, "PORT alone in INIT (QP-11)", errno, OK)
	s, _ = m.QueryQP(id)
	want(t, "state after an attribute-only modify", s, qp.Init)
}

// TestQPCreate checks the creation checks and the CQ references (QP-02,
// QP-03, CQ-11).
func TestQPCreate(t *testing.T) {
	m := New(Readings{}, qpLim)
	a, _ := m.CreateCQ(4, nil, -1, 0)
	b, _ := m.CreateCQ(4, nil, -1, 0)
	for _, c := range []QPInit{
		{Type: qp.RC, SendCQ: a, RecvCQ: a, MaxSendWR: 9},
		{Type: qp.UD, SendCQ: a, RecvCQ: a, MaxRecvWR: 9},
		{Type: qp.Type(99), SendCQ: a, RecvCQ: a},
	} {
		_, errno := m.CreateQP(c)
		want(t, "CreateQP(bad)", errno, syscall.EINVAL)
	}
	id, errno := m.CreateQP(QPInit{Type: qp.UC, SendCQ: a, RecvCQ: b, MaxSendWR: 8})
	want(t, "CreateQP", errno, OK)
	if m.AcceptQP(id, 5, 7, 0) == nil {
		t.Error("a depth below the request was accepted (QP-02)")
	}
	want(t, "AcceptQP", m.AcceptQP(id, 5, 8, 0), error(nil))
	id2, _ := m.CreateQP(QPInit{Type: qp.RC, SendCQ: b, RecvCQ: b})
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
	_, errno = m.CreateQP(QPInit{Type: qp.RC, SendCQ: a, RecvCQ: b})
	want(t, "CreateQP on a destroyed CQ", errno, syscall.EINVAL)
}

// TestQPPostStates checks in which states posts are accepted (QP-25, QP-26).
func TestQPPostStates(t *testing.T) {
	for _, s := range []qp.State{qp.Reset, qp.Init, qp.RTR, qp.RTS, qp.SQD, qp.Err} {
		m, id, _, _ := newQP(t, Readings{}, qp.RC, 4, 4, s)
		_, _, errno := m.PostSend(id, []uint64{1})
		wantSend := OK
		if s == qp.Reset || s == qp.Init || s == qp.RTR {
			wantSend = syscall.EINVAL
		}
		want(t, "PostSend in "+s.String()+" (QP-26)", errno, wantSend)
		_, _, errno = m.PostRecv(id, []uint64{2})
		wantRecv := OK
		if s == qp.Reset {
			wantRecv = syscall.EINVAL
		}
		want(t, "PostRecv in "+s.String()+" (QP-25)", errno, wantRecv)
	}
}

// TestQPFlush checks flush on ERR: every request, each on its own CQ, in
// posting order, with its wr_id and qp_num (FLUSH-01, 02, 04, 06), then
// requests posted in ERR (FLUSH-05).
func TestQPFlush(t *testing.T) {
	m, id, scq, rcq := newQP(t, Readings{}, qp.RC, 4, 4, qp.RTS)
	m.PostSend(id, []uint64{1, 2, 3})
	m.PostRecv(id, []uint64{10, 11})
	fl, errno := m.ModifyQP(id, qp.Err, qp.AttrState)
	want(t, "RTS→ERR", errno, OK)
	want(t, "flush completions", len(fl), 5)
	sends, _ := m.Poll(scq, 8)
	recvs, _ := m.Poll(rcq, 8)
	if !slices.Equal(wrIDs(sends), []uint64{1, 2, 3}) || !slices.Equal(wrIDs(recvs), []uint64{10, 11}) {
		t.Errorf("flushed sends %v, receives %v", wrIDs(sends), wrIDs(recvs))
	}
	for _, w := range append(sends, recvs...) {
		if w.Status != wc.WRFlushErr || w.QPNum != 0x11 {
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
	m, id, _, rcq := newQP(t, Readings{}, qp.UD, 0, 2, qp.RTS)
	n, _, errno := m.PostRecv(id, []uint64{1, 2, 3})
	want(t, "posted of three on a depth of 2", n, 2)
	want(t, "third post (QP-31)", errno, syscall.ENOMEM)
	m.ModifyQP(id, qp.Err, qp.AttrState)
	_, _, errno = m.PostRecv(id, []uint64{4})
	want(t, "post in ERR before polling", errno, syscall.ENOMEM)
	m.Poll(rcq, 1)
	n, _, errno = m.PostRecv(id, []uint64{5, 6})
	want(t, "post after polling one: posted", n, 1)
	want(t, "post after polling one", errno, syscall.ENOMEM)
	m.ModifyQP(id, qp.Reset, qp.AttrState)
	want(t, "completions left after RESET (CQ-26)", len(m.CQ(rcq).WCs), 2)
	m.ModifyQP(id, qp.Init, qp.AttrState|mPKey|mPort|mQKey)
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
	r := Readings{FreeSlotOnRetire: true}
	m, id, scq, rcq := newQP(t, r, qp.RC, 2, 2, qp.RTS)
	n, _, errno := m.PostSend(id, []uint64{1, 2, 3})
	want(t, "sends posted of three on a depth of 2", n, 2)
	want(t, "third send (QP-29)", errno, syscall.ENOMEM)
	n, _, errno = m.PostRecv(id, []uint64{11, 12, 13})
	want(t, "receives posted of three on a depth of 2", n, 2)
	want(t, "third receive (QP-31)", errno, syscall.ENOMEM)
	fl, _ := m.ModifyQP(id, qp.Err, qp.AttrState)
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
	id2, _ := m2.CreateQP(QPInit{Type: qp.RC, SendCQ: c, RecvCQ: c, MaxSendWR: 4, MaxRecvWR: 4})
	_ = m2.AcceptQP(id2, 0x12, 4, 4)
	m2.ModifyQP(id2, qp.Init, qp.AttrState|mPKey|mPort|mAccess)
	m2.PostRecv(id2, []uint64{1, 2, 3})
	fl, _ = m2.ModifyQP(id2, qp.Err, qp.AttrState)
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
	for _, r := range []Readings{{}, {OverrunDrops: true}} {
		m := New(r, qpLim)
		c, _ := m.CreateCQ(2, nil, -1, 0)
		_ = m.AcceptCQE(c, 2)
		id, _ := m.CreateQP(QPInit{Type: qp.RC, SendCQ: c, RecvCQ: c, MaxSendWR: 4, MaxRecvWR: 4})
		_ = m.AcceptQP(id, 0x11, 4, 4)
		m.ModifyQP(id, qp.Init, qp.AttrState|mPKey|mPort|mAccess)
		m.PostRecv(id, []uint64{1, 2, 3})
		fl, _ := m.ModifyQP(id, qp.Err, qp.AttrState)
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
	for _, r := range []Readings{{}, {SolicitedBitOnly: true}} {
		m := New(r, qpLim)
		ch := m.CreateChannel()
		c, _ := m.CreateCQ(8, "ctx", ch, 0)
		_ = m.AcceptCQE(c, 8)
		id, _ := m.CreateQP(QPInit{Type: qp.RC, SendCQ: c, RecvCQ: c, MaxSendWR: 4, MaxRecvWR: 4})
		_ = m.AcceptQP(id, 0x11, 4, 4)
		m.ModifyQP(id, qp.Init, qp.AttrState|mPKey|mPort|mAccess)
		m.ModifyQP(id, qp.Err, qp.AttrState)
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
	m, id, _, rcq := newQP(t, Readings{}, qp.RC, 4, 4, qp.RTS)
	m.PostRecv(id, []uint64{1})
	m.ModifyQP(id, qp.Err, qp.AttrState)
	m.DestroyQP(id)
	want(t, "completions of a destroyed QP (CQ-26)", len(m.CQ(rcq).WCs), 1)
	m.Poll(rcq, 4) // retires nothing of a destroyed QP
	m2, id2, scq2, rcq2 := newQP(t, Readings{}, qp.RC, 4, 4, qp.RTS)
	m2.PostSend(id2, []uint64{1})
	m2.PostRecv(id2, []uint64{2})
	want(t, "DestroyQP", m2.DestroyQP(id2), OK)
	want(t, "send completions after destroy (QP-37)", len(m2.CQ(scq2).WCs), 0)
	want(t, "receive completions after destroy (QP-37)", len(m2.CQ(rcq2).WCs), 0)
	_, _, errno := m2.PostRecv(id2, []uint64{3})
	want(t, "PostRecv on a destroyed QP", errno, syscall.EINVAL)
	_, errno = m2.ModifyQP(id2, qp.Reset, qp.AttrState)
	want(t, "ModifyQP on a destroyed QP", errno, syscall.EINVAL)
}
