package conformance

import (
	"fmt"
	"syscall"

	"github.com/verbsim/verbsim/conformance/model"
	"github.com/verbsim/verbsim/verbs"
)

// The QP operations of Machine: create, modify, post and destroy, compared
// with the QP half of the reference model. Their only completions are flush
// completions, which reach the model's CQs through the same push as injected
// ones, so the CQ, overrun and notification rules apply to them too.
//
// Until traffic exists (issue #4) nothing may execute, and the machine stays
// within what cannot execute even once the transport engine runs posted
// requests, as long as virtual time never advances (the machine never
// advances it):
//
//   - SENDs are posted on RC QPs only, whose dest_qp_num (set at INIT→RTR)
//     is machineDestQPN, which no QP can have: such a send waits for an
//     acknowledgement that never comes, and stays outstanding until flushed.
//   - On UC and UD QPs, SENDs are posted only in ERR, where they are flushed
//     at once, or in RESET, INIT and RTR, where they are refused; a post in
//     RTS, SQD or SQE is skipped.
//   - An RC QP with sends outstanding is never moved to SQD, whose drain
//     would wait for them (QP-23, QP-39); that modify is skipped.
//   - Receives may be posted on any QP: nothing is ever sent to them.
//
// The machine also never uses an SRQ or IBV_QP_EN_SQD_ASYNC_NOTIFY, so the
// only QP async event that arises is the SQ_DRAINED a device that raises it
// unasked (Profile.AlwaysSQDrained, ASYNC-13 rxe reading) raises on each
// RTS→SQD. Those are expected, one per such move, and OpGetAsync acks and
// skips them where it finds them (see getAsync); any other QP event, or one
// more SQ_DRAINED than moves, is a difference from the model.

// machineDestQPN is the dest_qp_num (and the remote QPN of UD sends) of
// every QP the machine connects: a 24-bit number no QP of a device with
// fewer than 2^24-16 QPs is given.
const machineDestQPN = 0xFFFFF0

// machineQPs is the QP side of a Machine.
type machineQPs struct {
	pd   PD     // allocated by the first OpCreateQP
	ah   AH     // for UD sends, created by the first one
	qps  []QP   // QPs created successfully, by model index
	wrid uint64 // the last wr_id posted

	// drained counts, by model index, the SQ_DRAINED events of each QP that
	// are due and not read yet (Profile.AlwaysSQDrained).
	drained map[int]int
}

// skipDrained reports whether ev is an SQ_DRAINED that a QP's RTS→SQD made
// due (ASYNC-13), and if so counts it as read. The caller acks it.
func (m *Machine) skipDrained(ev AsyncEvent) bool {
	if ev.EventType() != verbs.EventSQDrained {
		return false
	}
	for i, q := range m.qps {
		if ev.QP() == q && m.drained[i] > 0 {
			m.drained[i]--
			return true
		}
	}
	return false
}

// qpString renders a QP operation.
func (o Op) qpString() string {
	switch o.Kind {
	case OpCreateQP:
		sq := fmt.Sprint(o.SendWR)
		if o.AboveMax {
			sq = "max_qp_wr+1"
		}
		return fmt.Sprintf("create-qp %v send_cq=%d recv_cq=%d max_send_wr=%s max_recv_wr=%d sq_sig_all=%t",
			o.QPType, o.CQ, o.RecvCQ, sq, o.RecvWR, o.SigAll)
	case OpModifyQP:
		to := o.Target.String()
		if o.Up {
			to = "up"
		}
		return fmt.Sprintf("modify-qp qp=%d to=%s illegal=%t", o.QP, to, o.Illegal)
	case OpPostSend:
		return fmt.Sprintf("post-send qp=%d n=%d signaled=%08b", o.QP, o.N, o.Signaled)
	case OpPostRecv:
		return fmt.Sprintf("post-recv qp=%d n=%d", o.QP, o.N)
	}
	return fmt.Sprintf("%s qp=%d", o.Kind, o.QP)
}

// upFrom is the state OpModifyQP with Up moves to: the next one on the way
// RESET→INIT→RTR→RTS, back to RTS from SQD and SQE, and from ERR to RESET.
func upFrom(s verbs.QPState) verbs.QPState {
	switch s {
	case verbs.QPStateReset:
		return verbs.QPStateInit
	case verbs.QPStateInit:
		return verbs.QPStateRTR
	case verbs.QPStateErr:
		return verbs.QPStateReset
	}
	return verbs.QPStateRTS
}

func (m *Machine) applyQP(op Op) error {
	if op.Kind == OpCreateQP {
		return m.createQP(op)
	}
	if len(m.qps) == 0 {
		return nil
	}
	i := mod(op.QP, len(m.qps))
	q := m.qps[i]
	switch op.Kind {
	case OpModifyQP:
		return m.modifyQP(op, i, q)
	case OpPostSend:
		return m.postSend(op, i, q)
	case OpPostRecv:
		ids := m.wrIDs(op.N)
		wrs := make([]verbs.RecvWR, len(ids))
		for j, id := range ids {
			wrs[j] = verbs.RecvWR{WRID: id} // no SGE: a zero-length buffer (QP-32)
		}
		n, err := q.PostRecv(wrs)
		wantN, fl, want := m.m.PostRecv(i, ids)
		return m.posted(op, "ibv_post_recv", n, err, wantN, fl, want)
	case OpDestroyQP:
		ctx, cancel := patient()
		defer cancel()
		err := q.DestroyContext(ctx)
		want := m.m.DestroyQP(i)
		if err == nil {
			delete(m.drained, i) // its unread events go with it
			m.purged(i)
		}
		return m.same(op, "ibv_destroy_qp", err, want)
	}
	return fmt.Errorf("%v: unknown operation", op)
}

// wrIDs returns n fresh wr_ids (n < 0 counts as 0).
func (m *Machine) wrIDs(n int) []uint64 {
	ids := make([]uint64, max(n, 0))
	for j := range ids {
		m.wrid++
		ids[j] = m.wrid
	}
	return ids
}

func (m *Machine) createQP(op Op) error {
	if len(m.cqs) == 0 {
		return nil
	}
	if m.pd == nil {
		pd, err := m.ctx.AllocPD()
		if err != nil || pd == nil {
			return fmt.Errorf("%v: ibv_alloc_pd: %v", op, err)
		}
		m.pd = pd
	}
	in := model.QPInit{
		Type: op.QPType, SendCQ: mod(op.CQ, len(m.cqs)), RecvCQ: mod(op.RecvCQ, len(m.cqs)),
		MaxSendWR: op.SendWR, MaxRecvWR: op.RecvWR, SQSigAll: op.SigAll,
	}
	if op.AboveMax {
		in.MaxSendWR = m.lim.MaxQPWR + 1
	}
	q, err := m.pd.CreateQP(QPInitAttr{
		SendCQ: m.cqs[in.SendCQ], RecvCQ: m.cqs[in.RecvCQ], Type: in.Type, SQSigAll: in.SQSigAll,
		Cap: verbs.QPCap{MaxSendWR: uint32(in.MaxSendWR), MaxRecvWR: uint32(in.MaxRecvWR), MaxSendSGE: 1, MaxRecvSGE: 1},
	})
	id, want := m.m.CreateQP(in)
	if e := m.same(op, "ibv_create_qp", err, want); e != nil {
		return e
	}
	if want != 0 {
		return nil
	}
	if q == nil {
		return fmt.Errorf("%v: ibv_create_qp returned no QP and no error", op)
	}
	m.qps = append(m.qps, q)
	a, err := queryQP(q)
	if err != nil {
		return fmt.Errorf("%v: ibv_query_qp of the new QP: %v", op, err)
	}
	if a.QPState != verbs.QPStateReset {
		return fmt.Errorf("%v: the new QP is in %v, not RESET (QP-01)", op, a.QPState)
	}
	if err := m.m.AcceptQP(id, q.Num(), int(a.Cap.MaxSendWR), int(a.Cap.MaxRecvWR)); err != nil {
		return fmt.Errorf("%v: %w", op, err)
	}
	return nil
}

func (m *Machine) modifyQP(op Op, i int, q QP) error {
	mq := m.m.QP(i)
	from, to := mq.State, op.Target
	if op.Up {
		to = upFrom(from)
	}
	if to == verbs.QPStateSQD && mq.Init.Type == verbs.QPTypeRC && len(mq.SQ.Outstanding) > 0 {
		return nil // the drain would wait for the sends (see the top of the file)
	}
	// The mask comes from the suite's table (qp.go) and the outcome from the
	// model's own: the two tables are checked against each other too.
	req, _, _ := verbs.Transition(from, to, mq.Init.Type, m.prof)
	mask := bState | req
	if op.Illegal && req != 0 {
		mask &^= req & -req // QP-10: one required bit short
	} else if op.Illegal {
		mask |= bCap // QP-21: no transition takes IBV_QP_CAP
	}
	attr := qpAttr(m.lim, from, to)
	attr.DestQPNum = machineDestQPN
	err := q.Modify(&attr, mask)
	fl, want := m.m.ModifyQP(i, to, mask)
	m.flushed(fl)
	if err == nil && to == verbs.QPStateReset {
		m.purged(i)
	}
	if e := m.same(op, fmt.Sprintf("ibv_modify_qp(%v→%v, %v)", from, to, mask), err, want); e != nil {
		return e
	}
	if err == nil && from == verbs.QPStateRTS && to == verbs.QPStateSQD && m.prof.AlwaysSQDrained {
		if m.drained == nil {
			m.drained = map[int]int{}
		}
		m.drained[i]++ // nothing is outstanding in its send queue (see above): the drain is over
	}
	return m.sameState(op, i, q)
}

// purged records in the history the completions a reset or destroyed QP
// i's CQs delete under Readings.ResetPurgesCQ (CQ-26 B).
func (m *Machine) purged(i int) {
	if !m.prof.ResetPurgesCQ {
		return
	}
	mq := m.m.QP(i)
	m.h.Purged(mq.Init.SendCQ, mq.Num)
	if mq.Init.RecvCQ != mq.Init.SendCQ {
		m.h.Purged(mq.Init.RecvCQ, mq.Num)
	}
}

// sameState compares the state q reports with the model's (QP-13, QP-24).
func (m *Machine) sameState(op Op, i int, q QP) error {
	want, errno := m.m.QueryQP(i)
	if errno != 0 {
		return nil
	}
	a, err := queryQP(q)
	if err != nil {
		return fmt.Errorf("%v: ibv_query_qp: %v", op, err)
	}
	if a.QPState != want {
		return fmt.Errorf("%v: the QP is in %v; the model expects %v (QP-13, QP-24)", op, a.QPState, want)
	}
	return nil
}

func (m *Machine) postSend(op Op, i int, q QP) error {
	mq := m.m.QP(i)
	if mq.Init.Type != verbs.QPTypeRC && !mq.Destroyed {
		switch mq.State {
		case verbs.QPStateRTS, verbs.QPStateSQD, verbs.QPStateSQE:
			return nil // it would run (see the top of the file)
		}
	}
	if mq.Init.Type == verbs.QPTypeUD && m.ah == nil {
		ah, err := m.pd.CreateAH(pdAHAttr)
		if err != nil || ah == nil {
			return fmt.Errorf("%v: ibv_create_ah: %v", op, err)
		}
		m.ah = ah
	}
	ids := m.wrIDs(op.N)
	wrs := make([]verbs.SendWR, len(ids))
	for j, id := range ids {
		wrs[j] = verbs.SendWR{WRID: id, Opcode: verbs.WRSend}
		if j < 8 && op.Signaled&(1<<j) != 0 {
			wrs[j].Flags = verbs.SendSignaled
		}
		if mq.Init.Type == verbs.QPTypeUD {
			wrs[j].AH, wrs[j].RemoteQPN, wrs[j].RemoteQKey = m.ah, machineDestQPN, 0x11110000
		}
	}
	n, err := q.PostSend(wrs)
	wantN, fl, want := m.m.PostSend(i, ids)
	return m.posted(op, "ibv_post_send", n, err, wantN, fl, want)
}

// posted compares the outcome of a post.
func (m *Machine) posted(op Op, verb string, n int, err error, wantN int, fl []model.Flushed, want syscall.Errno) error {
	m.flushed(fl)
	if e := m.same(op, verb, err, want); e != nil {
		return e
	}
	if n != wantN {
		return fmt.Errorf("%v: %s posted %d requests; the model expects %d (QP-27, QP-29, QP-31)", op, verb, n, wantN)
	}
	return nil
}

// flushed records the flush completions the model says a CQ stored. The
// device does not say which completions a flush stored, so these are the
// model's; poll compares them with the device's.
func (m *Machine) flushed(fl []model.Flushed) {
	for _, f := range fl {
		if !f.Overrun {
			m.h.Accepted(f.CQ, f.WC)
		}
	}
}

// meaningful returns the model's polled completions and the device's, where
// a device completion that completes a QP's work request and agrees with the
// model on wr_id, status and qp_num is replaced by the model's: the other
// fields of an error completion mean nothing (FLUSH-06, WC-03).
func meaningful(ps []model.Polled, dev []verbs.WC) (want, got []verbs.WC) {
	got = append([]verbs.WC(nil), dev...)
	for j, p := range ps {
		want = append(want, p.WC)
		if p.QP >= 0 && j < len(got) {
			g := got[j]
			if g.WRID == p.WC.WRID && g.Status == p.WC.Status && g.QPNum == p.WC.QPNum {
				got[j] = p.WC
			}
		}
	}
	return want, got
}

// pollRules names the rules a poll's completions follow: CQ-17 for any, and
// the flush rules when some came from QPs.
func pollRules(ps []model.Polled) string {
	for _, p := range ps {
		if p.QP >= 0 {
			return "CQ-17, CQ-26, FLUSH-01, FLUSH-02, FLUSH-04, FLUSH-06"
		}
	}
	return "CQ-17"
}

// checkQPs compares every live QP's state, depths and, where it reports
// them, outstanding requests with the model.
func (m *Machine) checkQPs() []error {
	var errs []error
	for i, q := range m.qps {
		mq := m.m.QP(i)
		if mq.Destroyed {
			continue
		}
		a, err := queryQP(q)
		if err != nil {
			errs = append(errs, fmt.Errorf("qp %d: ibv_query_qp: %v", i, err))
			continue
		}
		if a.QPState != mq.State {
			errs = append(errs, fmt.Errorf("qp %d is in %v; the model expects %v (QP-24)", i, a.QPState, mq.State))
		}
		if int(a.Cap.MaxSendWR) != mq.SQ.Depth || int(a.Cap.MaxRecvWR) != mq.RQ.Depth {
			errs = append(errs, fmt.Errorf("qp %d reports max_send_wr %d, max_recv_wr %d; it reported %d, %d at creation (QP-02)",
				i, a.Cap.MaxSendWR, a.Cap.MaxRecvWR, mq.SQ.Depth, mq.RQ.Depth))
		}
		if o, ok := q.(Outstander); ok {
			s, r := o.Outstanding()
			if s != len(mq.SQ.Outstanding) || r != len(mq.RQ.Outstanding) {
				errs = append(errs, fmt.Errorf("qp %d has %d send and %d receive requests outstanding; the model expects %d and %d (FLUSH-01, FLUSH-08, QP-37)",
					i, s, r, len(mq.SQ.Outstanding), len(mq.RQ.Outstanding)))
			}
		}
	}
	return errs
}
