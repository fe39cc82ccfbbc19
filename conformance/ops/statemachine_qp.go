package ops

import (
	"github.com/verbsim/verbsim/verbs"
	"pgregory.net/rapid"
)

// The QP steps of StateMachine: QPs on the machine's CQs are created,
// walked up to RTS, given send and receive requests, moved to ERR (which
// flushes them into the CQs), reset and destroyed, within the limits
// apply_qp.go states (no request ever executes).

// maxQPs bounds the QPs one run creates.
const maxQPs = 6

// qpSteps returns the QP steps of s.
func (s *run) qpSteps() []action {
	return []action{
		{"create-qp", 1, s.createQP},
		{"qp-up", 3, s.qpUp},
		{"modify-qp", 1, s.modifyQP},
		{"qp-err", 1, func(t *rapid.T) { s.qpTo(t, verbs.QPStateErr) }},
		{"qp-reset", 1, func(t *rapid.T) { s.qpTo(t, verbs.QPStateReset) }},
		{"post-send", 2, s.postSend},
		{"post-recv", 2, s.postRecv},
		{"destroy-qp", 1, s.destroyQP},
		{"qp-cycle", 2, s.qpCycle},
	}
}

// startQPs creates a few QPs and walks each up, mostly all the way to RTS.
// (rapid favours small draws, so the draws here count down from the
// interesting end.)
func (s *run) startQPs(t *rapid.T) {
	for range 3 - rapid.IntRange(0, 2).Draw(t, "qps") {
		before := len(s.m.QPs())
		s.createQP(t)
		if n := len(s.m.QPs()); n > before {
			for range 3 - rapid.IntRange(0, 3).Draw(t, "up") {
				s.step(t, s.m.Up(s.m.QPs()[n-1]))
			}
		}
	}
}

// anyQP draws a QP, live ones for which first holds first.
func (s *run) anyQP(t *rapid.T, first func(st verbs.QPState, typ verbs.QPType) bool) (string, bool) {
	return pick(t, "qp", s.m.QPs(), func(i int) bool {
		q := s.m.m.QP(i)
		return !q.Destroyed && first(q.State, q.Init.Type)
	})
}

func (s *run) createQP(t *rapid.T) {
	if len(s.m.QPs()) >= maxQPs || len(s.m.CQs()) == 0 {
		return
	}
	scq, _ := s.anyCQ(t)
	rcq := scq
	if rapid.Bool().Draw(t, "other recv cq") {
		rcq, _ = s.anyCQ(t)
	}
	// Mostly RC, whose sends may be posted in every state; now and then a
	// transport that does not exist.
	typ := []verbs.QPType{verbs.QPTypeRC, verbs.QPTypeRC, verbs.QPTypeRC, verbs.QPTypeUC, verbs.QPTypeUD, verbs.QPTypeUD, verbs.QPType(99)}[rapid.IntRange(0, 6).Draw(t, "type")]
	op := CreateQP{
		Name: s.m.NextName("qp"), Type: typ, SendCQ: scq, RecvCQ: rcq,
		MaxSendWR: 4 - rapid.IntRange(0, 4).Draw(t, "max_send_wr"), MaxRecvWR: 4 - rapid.IntRange(0, 4).Draw(t, "max_recv_wr"),
	}
	if rapid.IntRange(0, 15).Draw(t, "above max") == 9 { // rapid favours both ends
		op.MaxSendWR = s.m.lim.MaxQPWR + 1
	}
	op.SigAll = rapid.Bool().Draw(t, "sq_sig_all")
	s.step(t, op)
}

// qpUp takes a QP one step on the way to RTS, those not there yet first.
func (s *run) qpUp(t *rapid.T) {
	if q, ok := s.anyQP(t, func(st verbs.QPState, _ verbs.QPType) bool { return st != verbs.QPStateRTS }); ok {
		s.step(t, s.m.Up(q))
	}
}

// modifyQP tries any target, UNKNOWN included, now and then with a spoiled
// mask.
func (s *run) modifyQP(t *rapid.T) {
	if q, ok := s.anyQP(t, func(verbs.QPState, verbs.QPType) bool { return true }); ok {
		to := verbs.QPState(rapid.IntRange(0, int(verbs.QPStateUnknown)).Draw(t, "target"))
		if rapid.IntRange(0, 2).Draw(t, "illegal") == 0 {
			s.step(t, s.m.Spoiled(q, to))
		} else {
			s.step(t, ModifyQP{QP: q, To: to})
		}
	}
}

// qpTo moves a QP to ERR or RESET, those with requests outstanding first.
func (s *run) qpTo(t *rapid.T, to verbs.QPState) {
	if q, ok := pick(t, "qp", s.m.QPs(), func(i int) bool {
		q := s.m.m.QP(i)
		return !q.Destroyed && len(q.SQ.Outstanding)+len(q.RQ.Outstanding) > 0
	}); ok {
		s.step(t, ModifyQP{QP: q, To: to})
	}
}

// sends returns the post of n SENDs on QP q, those whose bit in signaled is
// set signaled (bit i for the i-th request).
func (s *run) sends(q string, n int, signaled uint8) PostSend {
	op := PostSend{QP: q, WRIDs: s.m.NextWRIDs(n)}
	for j, id := range op.WRIDs {
		if j < 8 && signaled&(1<<j) != 0 {
			op.Signaled = append(op.Signaled, id)
		}
	}
	op.UD = s.m.QPType(q) == verbs.QPTypeUD
	return op
}

// postSend posts up to four SENDs, RC QPs in RTS or SQD and QPs in ERR
// first (the machine refuses the posts that could execute).
func (s *run) postSend(t *rapid.T) {
	if q, ok := s.anyQP(t, func(st verbs.QPState, typ verbs.QPType) bool {
		return st == verbs.QPStateErr || typ == verbs.QPTypeRC && (st == verbs.QPStateRTS || st == verbs.QPStateSQD)
	}); ok {
		n := 4 - rapid.IntRange(0, 3).Draw(t, "n")
		s.step(t, s.sends(q, n, uint8(rapid.IntRange(0, 15).Draw(t, "signaled"))))
	}
}

// postRecv posts up to four receives, on QPs past RESET first.
func (s *run) postRecv(t *rapid.T) {
	if q, ok := s.anyQP(t, func(st verbs.QPState, _ verbs.QPType) bool { return st != verbs.QPStateReset }); ok {
		s.step(t, PostRecv{QP: q, WRIDs: s.m.NextWRIDs(4 - rapid.IntRange(0, 3).Draw(t, "n"))})
	}
}

func (s *run) destroyQP(t *rapid.T) {
	if q, ok := s.anyQP(t, func(verbs.QPState, verbs.QPType) bool { return true }); ok {
		s.step(t, DestroyQP{QP: q})
	}
}

// qpCycle is one life of a connection: walk a QP up to RTS, post receives
// and sends (sometimes after draining to SQD), move it to ERR and poll what
// that flushed.
func (s *run) qpCycle(t *rapid.T) {
	q, ok := s.anyQP(t, func(st verbs.QPState, _ verbs.QPType) bool { return st != verbs.QPStateErr })
	if !ok {
		return
	}
	i := s.m.qps.find(q)
	for range 3 {
		if mq := s.m.m.QP(i); mq.Destroyed || mq.State == verbs.QPStateRTS {
			break
		}
		s.step(t, s.m.Up(q))
	}
	s.step(t, PostRecv{QP: q, WRIDs: s.m.NextWRIDs(4 - rapid.IntRange(0, 3).Draw(t, "n"))})
	if rapid.IntRange(0, 3).Draw(t, "drain first") == 1 { // sends posted in SQD wait (QP-26)
		s.step(t, ModifyQP{QP: q, To: verbs.QPStateSQD})
	}
	n := 4 - rapid.IntRange(0, 3).Draw(t, "n")
	s.step(t, s.sends(q, n, uint8(rapid.IntRange(0, 15).Draw(t, "signaled"))))
	s.step(t, ModifyQP{QP: q, To: verbs.QPStateErr})
	mq := s.m.m.QP(i)
	s.step(t, Poll{CQ: s.m.CQs()[mq.Init.SendCQ], N: 8, Ex: rapid.Bool().Draw(t, "ex")})
	if mq.Init.RecvCQ != mq.Init.SendCQ {
		s.step(t, Poll{CQ: s.m.CQs()[mq.Init.RecvCQ], N: 8, Ex: rapid.Bool().Draw(t, "ex")})
	}
}
