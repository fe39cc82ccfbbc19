package ops

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/verbsim/verbsim/conformance"
	"github.com/verbsim/verbsim/conformance/model"
	"github.com/verbsim/verbsim/verbs"
)

// The QP operations of Machine: create, modify, post and destroy, compared
// with the QP half of the reference model. Their only completions are flush
// completions, which reach the model's CQs through the same push as injected
// ones, so the CQ, overrun and notification rules apply to them too.
//
// No request may ever execute: the model leaves traffic to the traffic
// state machine (traffic.go). The machine therefore stays within what
// cannot execute even though the engine runs posted requests, as long as
// virtual time never advances (the machine never advances it); check
// refuses the operations that would step outside:
//
//   - SENDs are posted on RC QPs in any state: their dest_qp_num (set at
//     INIT→RTR) is DestQPN, which no QP has, so a send waits for an
//     acknowledgement that never comes, and stays outstanding until flushed.
//   - On UC and UD QPs, SENDs are posted only in ERR, where they are flushed
//     at once, or in RESET, INIT and RTR, where they are refused; a post in
//     RTS, SQD or SQE is refused by check.
//   - An RC QP with sends outstanding is never moved to SQD, whose drain
//     would wait for them (QP-23, QP-39).
//   - Receives may be posted on any QP: nothing is ever sent to them.
//   - A QP is not destroyed while an async event read for it awaits its
//     ack: the destroy would wait (ASYNC-05), which the cases check.
//
// The machine never uses an SRQ or IBV_QP_EN_SQD_ASYNC_NOTIFY, so the only
// QP async event that arises is the SQ_DRAINED a device that raises it
// unasked (Profile.AlwaysSQDrained, ASYNC-13 rxe reading) raises on each
// RTS→SQD, which the model predicts.

func (o CreateQP) check(m *Machine) error {
	if _, err := m.cq(o.SendCQ); err != nil {
		return err
	}
	if _, err := m.cq(o.RecvCQ); err != nil {
		return err
	}
	return m.fresh("qp", o.Name)
}

func (o CreateQP) apply(m *Machine) error {
	m.created["qp"]++
	sc, _ := m.cq(o.SendCQ)
	rc, _ := m.cq(o.RecvCQ)
	in := model.QPInit{Type: o.Type, SendCQ: sc, RecvCQ: rc, MaxSendWR: o.MaxSendWR, MaxRecvWR: o.MaxRecvWR, SQSigAll: o.SigAll}
	q, err := m.pd.CreateQP(verbs.QPInitAttr{
		SendCQ: m.cqs.items[sc], RecvCQ: m.cqs.items[rc], Type: o.Type, SQSigAll: o.SigAll,
		Cap: verbs.QPCap{MaxSendWR: uint32(o.MaxSendWR), MaxRecvWR: uint32(o.MaxRecvWR), MaxSendSGE: 1, MaxRecvSGE: 1},
	})
	id, want := m.m.CreateQP(in)
	if e := m.same(o, "ibv_create_qp", err, want); e != nil {
		return e
	}
	if want != 0 {
		return nil
	}
	if q == nil {
		return fmt.Errorf("%v: ibv_create_qp returned no QP and no error", o)
	}
	m.qps.add(o.Name, q)
	a, err := queryQP(q)
	if err != nil {
		return fmt.Errorf("%v: ibv_query_qp of the new QP: %v", o, err)
	}
	if a.QPState != verbs.QPStateReset {
		return fmt.Errorf("%v: the new QP is in %v, not RESET (QP-01)", o, a.QPState)
	}
	if err := m.m.AcceptQP(id, q.Num(), int(a.Cap.MaxSendWR), int(a.Cap.MaxRecvWR)); err != nil {
		return fmt.Errorf("%v: %w", o, err)
	}
	return nil
}

// queryQP is ibv_query_qp of every attribute the machine reads: the state
// and the real capacities.
func queryQP(q verbs.QP) (verbs.QPAttr, error) {
	a, _, err := q.Query(verbs.KnownQPAttrs &^ verbs.QPAttrRateLimit)
	return a, err
}

// Up returns the move that takes QP name one step on the way up: the next
// state on the way RESET→INIT→RTR→RTS, back to RTS from SQD and SQE, and
// from ERR to RESET, with the minimal mask.
func (m *Machine) Up(name string) ModifyQP {
	to := verbs.QPStateRTS
	if i := m.qps.find(name); i >= 0 {
		switch m.m.QP(i).State {
		case verbs.QPStateReset:
			to = verbs.QPStateInit
		case verbs.QPStateInit:
			to = verbs.QPStateRTR
		case verbs.QPStateErr:
			to = verbs.QPStateReset
		}
	}
	return ModifyQP{QP: name, To: to}
}

// Spoiled returns the move of QP name to state to with the minimal mask
// spoiled: one required bit short (QP-10) or, where nothing is required,
// with IBV_QP_CAP, which no transition takes (QP-21).
func (m *Machine) Spoiled(name string, to verbs.QPState) ModifyQP {
	mask := verbs.QPAttrState | verbs.QPAttrCap
	if i := m.qps.find(name); i >= 0 {
		q := m.m.QP(i)
		if req, _, _ := verbs.Transition(q.State, to, q.Init.Type, m.prof); req != 0 {
			mask = verbs.QPAttrState | req&^(req&-req)
		}
	}
	return ModifyQP{QP: name, To: to, Mask: mask}
}

func (o ModifyQP) check(m *Machine) error {
	i, err := m.qp(o.QP)
	if err != nil {
		return err
	}
	if q := m.m.QP(i); o.To == verbs.QPStateSQD && q.Init.Type == verbs.QPTypeRC && len(q.SQ.Outstanding) > 0 {
		return errors.New("the drain to SQD would wait for the sends outstanding")
	}
	return nil
}

func (o ModifyQP) apply(m *Machine) error {
	i, _ := m.qp(o.QP)
	q := m.qps.items[i]
	mq := m.m.QP(i)
	from := mq.State
	mask := o.Mask
	if mask == 0 {
		req, _, _ := verbs.Transition(from, o.To, mq.Init.Type, m.prof)
		mask = verbs.QPAttrState | req
	}
	attr := qpAttr(m.lim, from, o.To)
	err := q.Modify(&attr, mask)
	fl, want := m.m.ModifyQP(i, o.To, mask)
	m.flushed(fl)
	if e := m.same(o, fmt.Sprintf("ibv_modify_qp(%v→%v, %v)", from, o.To, mask), err, want); e != nil {
		return e
	}
	return m.sameState(o, i, q)
}

// qpAttr returns attributes with a valid value in every field for a QP bound
// to port 1 of a device with limits l, moving from one state to another:
// whichever bits a modify names, no value makes it fail. dest_qp_num is
// DestQPN.
func qpAttr(l conformance.Limits, from, to verbs.QPState) verbs.QPAttr {
	return verbs.QPAttr{
		QPState: to, CurQPState: from,
		PathMTU: min(verbs.MTU1024, l.Port.MaxMTU), PathMigState: verbs.MigMigrated,
		QKey: QKey, RQPSN: 0x100, SQPSN: 0x200, DestQPNum: DestQPN,
		QPAccessFlags: verbs.AccessRemoteWrite | verbs.AccessRemoteRead,
		AHAttr:        ahAttr, AltAHAttr: ahAttr, AltPortNum: 1, AltTimeout: 14,
		MaxRDAtomic:     uint8(min(1, l.MaxQPInitRDAtom)),
		MaxDestRDAtomic: uint8(min(1, l.MaxQPRDAtom)),
		MinRNRTimer:     12, PortNum: 1, Timeout: 14, RetryCnt: 7, RNRRetry: 7,
	}
}

// sameState compares the state q reports with the model's (QP-13, QP-24).
func (m *Machine) sameState(op Op, i int, q verbs.QP) error {
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

func (o PostSend) check(m *Machine) error {
	i, err := m.qp(o.QP)
	if err != nil {
		return err
	}
	if len(o.WRIDs) == 0 {
		return errors.New("no work request")
	}
	q := m.m.QP(i)
	if o.UD != (q.Init.Type == verbs.QPTypeUD) {
		return fmt.Errorf("a %v QP's sends are posted with UD %v", q.Init.Type, !o.UD)
	}
	if q.Init.Type != verbs.QPTypeRC && !q.Destroyed {
		switch q.State {
		case verbs.QPStateRTS, verbs.QPStateSQD, verbs.QPStateSQE:
			return fmt.Errorf("a send of a %v QP in %v would execute", q.Init.Type, q.State)
		}
	}
	return nil
}

func (o PostSend) apply(m *Machine) error {
	i, _ := m.qp(o.QP)
	wrs := make([]verbs.SendWR, len(o.WRIDs))
	for j, id := range o.WRIDs {
		wrs[j] = verbs.SendWR{WRID: id, Opcode: verbs.WRSend}
		for _, s := range o.Signaled {
			if s == id {
				wrs[j].Flags = verbs.SendSignaled
			}
		}
		if o.UD {
			wrs[j].AH, wrs[j].RemoteQPN, wrs[j].RemoteQKey = m.ah, DestQPN, QKey
		}
	}
	n, err := m.qps.items[i].PostSend(wrs)
	wantN, fl, want := m.m.PostSend(i, o.WRIDs)
	return m.posted(o, "ibv_post_send", n, err, wantN, fl, want)
}

func (o PostRecv) check(m *Machine) error {
	if _, err := m.qp(o.QP); err != nil {
		return err
	}
	if len(o.WRIDs) == 0 {
		return errors.New("no work request")
	}
	return nil
}

func (o PostRecv) apply(m *Machine) error {
	i, _ := m.qp(o.QP)
	wrs := make([]verbs.RecvWR, len(o.WRIDs))
	for j, id := range o.WRIDs {
		wrs[j] = verbs.RecvWR{WRID: id} // no SGE: a zero-length buffer (QP-32)
	}
	n, err := m.qps.items[i].PostRecv(wrs)
	wantN, fl, want := m.m.PostRecv(i, o.WRIDs)
	return m.posted(o, "ibv_post_recv", n, err, wantN, fl, want)
}

func (o DestroyQP) check(m *Machine) error {
	i, err := m.qp(o.QP)
	if err == nil && m.m.QP(i).Unacked() > 0 {
		err = errors.New("an async event read for the QP awaits its ack")
	}
	return err
}

func (o DestroyQP) apply(m *Machine) error {
	i, _ := m.qp(o.QP)
	ctx, cancel := patient()
	defer cancel()
	return m.same(o, "ibv_destroy_qp", m.qps.items[i].DestroyContext(ctx), m.m.DestroyQP(i))
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
// model's; Poll compares them with the device's.
func (m *Machine) flushed(fl []model.Flushed) {
	for _, f := range fl {
		if !f.Overrun {
			m.h.Accepted(f.CQ, f.WC)
		}
	}
}

// checkQPs compares every live QP's state, depths and, where it reports
// them, outstanding requests with the model.
func (m *Machine) checkQPs() []error {
	var errs []error
	for i, q := range m.qps.items {
		mq := m.m.QP(i)
		if mq.Destroyed {
			continue
		}
		name := m.qps.names[i]
		a, err := queryQP(q)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: ibv_query_qp: %v", name, err))
			continue
		}
		if a.QPState != mq.State {
			errs = append(errs, fmt.Errorf("%s is in %v; the model expects %v (QP-24)", name, a.QPState, mq.State))
		}
		if int(a.Cap.MaxSendWR) != mq.SQ.Depth || int(a.Cap.MaxRecvWR) != mq.RQ.Depth {
			errs = append(errs, fmt.Errorf("%s reports max_send_wr %d, max_recv_wr %d; it reported %d, %d at creation (QP-02)",
				name, a.Cap.MaxSendWR, a.Cap.MaxRecvWR, mq.SQ.Depth, mq.RQ.Depth))
		}
		if o, ok := q.(conformance.Outstander); ok {
			s, r := o.Outstanding()
			if s != len(mq.SQ.Outstanding) || r != len(mq.RQ.Outstanding) {
				errs = append(errs, fmt.Errorf("%s has %d send and %d receive requests outstanding; the model expects %d and %d (FLUSH-01, FLUSH-08, QP-37)",
					name, s, r, len(mq.SQ.Outstanding), len(mq.RQ.Outstanding)))
			}
		}
	}
	return errs
}
