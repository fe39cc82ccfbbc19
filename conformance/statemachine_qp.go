package conformance

import (
	"github.com/verbsim/verbsim/verbs"
	"pgregory.net/rapid"
)

// The QP steps of StateMachine: QPs on the machine's CQs are created,
// walked up to RTS, given send and receive requests, moved to ERR (which
// flushes them into the CQs), reset and destroyed, with the restrictions
// machine_qp.go states (no request ever executes).

// smMaxQPs bounds the QPs one run creates.
const smMaxQPs = 6

// qpSteps returns the QP steps of s.
func (s *smRun) qpSteps() []smAction {
	return []smAction{
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
func (s *smRun) startQPs(t *rapid.T) {
	for range 3 - rapid.IntRange(0, 2).Draw(t, "qps") {
		before := len(s.m.qps)
		s.createQP(t)
		if n := len(s.m.qps); n > before {
			for range 3 - rapid.IntRange(0, 3).Draw(t, "up") {
				s.step(t, Op{Kind: OpModifyQP, QP: n - 1, Up: true})
			}
		}
	}
}

// anyQP draws a QP, live ones for which first holds first.
func (s *smRun) anyQP(t *rapid.T, first func(st verbs.QPState, typ verbs.QPType) bool) (int, bool) {
	return s.pick(t, "qp", len(s.m.qps), func(i int) bool {
		q := s.m.m.QP(i)
		return !q.Destroyed && first(q.State, q.Init.Type)
	})
}

func (s *smRun) createQP(t *rapid.T) {
	if len(s.m.qps) >= smMaxQPs || len(s.m.cqs) == 0 {
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
	s.step(t, Op{
		Kind: OpCreateQP, CQ: scq, RecvCQ: rcq, QPType: typ,
		SendWR: 4 - rapid.IntRange(0, 4).Draw(t, "max_send_wr"), RecvWR: 4 - rapid.IntRange(0, 4).Draw(t, "max_recv_wr"),
		AboveMax: rapid.IntRange(0, 15).Draw(t, "above max") == 9, // rapid favours both ends SigAll: rapid.Bool().Draw(t, "sq_sig_all"),
	})
}

// qpUp takes a QP one step on the way to RTS, those not there yet first.
func (s *smRun) qpUp(t *rapid.T) {
	if i, ok := s.anyQP(t, func(st verbs.QPState, _ verbs.QPType) bool { return st != verbs.QPStateRTS }); ok {
		s.step(t, Op{Kind: OpModifyQP, QP: i, Up: true})
	}
}

// modifyQP tries any target, UNKNOWN included, now and then with a spoiled
// mask.
func (s *smRun) modifyQP(t *rapid.T) {
	if i, ok := s.anyQP(t, func(verbs.QPState, verbs.QPType) bool { return true }); ok {
		s.step(t, Op{
			Kind: OpModifyQP, QP: i, Target: verbs.QPState(rapid.IntRange(0, int(verbs.QPStateUnknown)).Draw(t, "target")),
			Illegal: rapid.IntRange(0, 2).Draw(t, "illegal") == 0,
		})
	}
}

// qpTo moves a QP to ERR or RESET, those with requests outstanding first.
func (s *smRun) qpTo(t *rapid.T, to verbs.QPState) {
	if i, ok := s.pick(t, "qp", len(s.m.qps), func(i int) bool {
		q := s.m.m.QP(i)
		return !q.Destroyed && len(q.SQ.Outstanding)+len(q.RQ.Outstanding) > 0
	}); ok {
		s.step(t, Op{Kind: OpModifyQP, QP: i, Target: to})
	}
}

// postSend posts up to four SENDs, RC QPs in RTS or SQD and QPs in ERR
// first (the machine skips the posts that could execute).
func (s *smRun) postSend(t *rapid.T) {
	if i, ok := s.anyQP(t, func(st verbs.QPState, typ verbs.QPType) bool {
		return st == verbs.QPStateErr || typ == verbs.QPTypeRC && (st == verbs.QPStateRTS || st == verbs.QPStateSQD)
	}); ok {
		s.step(t, Op{
			Kind: OpPostSend, QP: i, N: 4 - rapid.IntRange(0, 4).Draw(t, "n"),
			Signaled: uint8(rapid.IntRange(0, 15).Draw(t, "signaled")),
		})
	}
}

// postRecv posts up to four receives, on QPs past RESET first.
func (s *smRun) postRecv(t *rapid.T) {
	if i, ok := s.anyQP(t, func(st verbs.QPState, _ verbs.QPType) bool { return st != verbs.QPStateReset }); ok {
		s.step(t, Op{Kind: OpPostRecv, QP: i, N: 4 - rapid.IntRange(0, 4).Draw(t, "n")})
	}
}

func (s *smRun) destroyQP(t *rapid.T) {
	if i, ok := s.anyQP(t, func(verbs.QPState, verbs.QPType) bool { return true }); ok {
		s.step(t, Op{Kind: OpDestroyQP, QP: i})
	}
}

// qpCycle is one life of a connection: walk a QP up to RTS, post receives
// and sends (sometimes after draining to SQD), move it to ERR and poll what
// that flushed.
func (s *smRun) qpCycle(t *rapid.T) {
	i, ok := s.anyQP(t, func(st verbs.QPState, _ verbs.QPType) bool { return st != verbs.QPStateErr })
	if !ok {
		return
	}
	for range 3 {
		if q := s.m.m.QP(i); q.Destroyed || q.State == verbs.QPStateRTS {
			break
		}
		s.step(t, Op{Kind: OpModifyQP, QP: i, Up: true})
	}
	s.step(t, Op{Kind: OpPostRecv, QP: i, N: 4 - rapid.IntRange(0, 4).Draw(t, "n")})
	if rapid.IntRange(0, 3).Draw(t, "drain first") == 1 { // sends posted in SQD wait (QP-26)
		s.step(t, Op{Kind: OpModifyQP, QP: i, Target: verbs.QPStateSQD})
	}
	s.step(t, Op{Kind: OpPostSend, QP: i, N: 4 - rapid.IntRange(0, 4).Draw(t, "n"),
		Signaled: uint8(rapid.IntRange(0, 15).Draw(t, "signaled"))})
	s.step(t, Op{Kind: OpModifyQP, QP: i, Target: verbs.QPStateErr})
	q := s.m.m.QP(i)
	s.step(t, Op{Kind: OpPoll, CQ: q.Init.SendCQ, N: 8, Ex: rapid.Bool().Draw(t, "ex")})
	if q.Init.RecvCQ != q.Init.SendCQ {
		s.step(t, Op{Kind: OpPoll, CQ: q.Init.RecvCQ, N: 8, Ex: rapid.Bool().Draw(t, "ex")})
	}
}
