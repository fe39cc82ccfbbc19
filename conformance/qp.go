package conformance

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"syscall"

	"github.com/google/go-cmp/cmp"
	"github.com/verbsim/verbsim/verbs"
)

// Cases of the QP family that need no traffic, and the helpers the QP, FLUSH
// and SRQ cases share. This file has creation (QP-01..04), the state values
// (QP-06) and query (QP-24); qp_modify.go has the state machine and its
// attribute masks, qp_post.go the posting rules.
//
// The transition table is verbs.Transition, the one the simulator enforces
// and the reference model follows; qp_test.go checks its legal pairs
// against QP-07 as the catalogue spells them, and the mutants show that the
// cases hold a device to it.
//
// Left for the transport (issue #4), because they need work requests that
// execute: QP-05 (sq_sig_all=1 makes unsignaled requests complete; a flush
// completes every request whatever its flags), QP-20 (SQE is entered only
// after a send error), QP-23 (a drain in progress), QP-30, QP-36 and
// QP-38..40.

// qpTypes are the transports the suite checks.
var qpTypes = [...]verbs.QPType{verbs.QPTypeRC, verbs.QPTypeUC, verbs.QPTypeUD}

// qpStates are the seven states, in enum order.
var qpStates = [...]verbs.QPState{verbs.QPStateReset, verbs.QPStateInit, verbs.QPStateRTR, verbs.QPStateRTS, verbs.QPStateSQD, verbs.QPStateSQE, verbs.QPStateErr}

// Short names for the mask bits, to keep the cases readable.
const (
	bState   = verbs.QPAttrState
	bCur     = verbs.QPAttrCurState
	bSQDNote = verbs.QPAttrEnSQDAsyncNotify
	bAccess  = verbs.QPAttrAccessFlags
	bPKey    = verbs.QPAttrPKeyIndex
	bPort    = verbs.QPAttrPort
	bQKey    = verbs.QPAttrQKey
	bAV      = verbs.QPAttrAV
	bMTU     = verbs.QPAttrPathMTU
	bTimeout = verbs.QPAttrTimeout
	bRetry   = verbs.QPAttrRetryCnt
	bRNR     = verbs.QPAttrRNRRetry
	bRQPSN   = verbs.QPAttrRQPSN
	bRdAtom  = verbs.QPAttrMaxQPRDAtomic
	bAlt     = verbs.QPAttrAltPath
	bMinRNR  = verbs.QPAttrMinRNRTimer
	bSQPSN   = verbs.QPAttrSQPSN
	bDestAt  = verbs.QPAttrMaxDestRDAtomic
	bMig     = verbs.QPAttrPathMigState
	bCap     = verbs.QPAttrCap
	bDestQPN = verbs.QPAttrDestQPN
	bRate    = verbs.QPAttrRateLimit
)

// noQPN is a dest_qp_num no QP of a device with fewer than 2^24-16 QPs
// has: a connected QP pointed at it sends into the void, so its sends wait
// for acknowledgements that never come.
const noQPN = 0xFFFFF0

// qpPath is how the suite reaches each state from RESET with modifies.
// SQE is missing: only a failing send takes a QP there.
var qpPath = map[verbs.QPState][]verbs.QPState{
	verbs.QPStateReset: nil,
	verbs.QPStateInit:  {verbs.QPStateInit},
	verbs.QPStateRTR:   {verbs.QPStateInit, verbs.QPStateRTR},
	verbs.QPStateRTS:   {verbs.QPStateInit, verbs.QPStateRTR, verbs.QPStateRTS},
	verbs.QPStateSQD:   {verbs.QPStateInit, verbs.QPStateRTR, verbs.QPStateRTS, verbs.QPStateSQD},
	verbs.QPStateErr:   {verbs.QPStateInit, verbs.QPStateErr},
}

// qpReachable are the states qpPath reaches, in enum order.
var qpReachable = [...]verbs.QPState{verbs.QPStateReset, verbs.QPStateInit, verbs.QPStateRTR, verbs.QPStateRTS, verbs.QPStateSQD, verbs.QPStateErr}

// qpAV is a primary or alternate path through port 1 that suits every link
// layer: global, from GID index 0.
var qpAV = verbs.AHAttr{
	PortNum: 1, DLID: 1, IsGlobal: true,
	GRH: verbs.GlobalRoute{DGID: [16]byte{0: 0xfe, 1: 0x80, 15: 1}, HopLimit: 64},
}

// qpAttr returns attributes with a valid value in every field for a QP bound
// to port 1 of a device with limits l, moving from one state to another:
// whichever bits a modify names, no value makes it fail.
func qpAttr(l Limits, from, to verbs.QPState) verbs.QPAttr {
	mtu := min(verbs.MTU1024, l.Port.MaxMTU)
	return verbs.QPAttr{
		QPState: to, CurQPState: from,
		PathMTU: mtu, PathMigState: verbs.MigMigrated,
		QKey: 0x11110000, RQPSN: 0x100, SQPSN: 0x200, DestQPNum: 0x42,
		QPAccessFlags: verbs.AccessRemoteWrite | verbs.AccessRemoteRead,
		AHAttr:        qpAV, AltAHAttr: qpAV, AltPortNum: 1, AltTimeout: 14,
		MaxRDAtomic:     uint8(min(1, l.MaxQPInitRDAtom)),
		MaxDestRDAtomic: uint8(min(1, l.MaxQPRDAtom)),
		MinRNRTimer:     12, PortNum: 1, Timeout: 14, RetryCnt: 7, RNRRetry: 7,
	}
}

// qpUsable drops the bits whose valid values the device cannot have: there
// are no alternate paths on an Ethernet port.
func qpUsable(l Limits, m verbs.QPAttrMask) verbs.QPAttrMask {
	if l.Port.Ethernet {
		m &^= bAlt
	}
	return m
}

// qpCQE is the capacity of the CQ a qpWorld's QPs share: more than the
// flush completions any case leaves in it.
const qpCQE = 1024

// qpWorld is what the QP, FLUSH and SRQ cases work in: a PD, a CQ, a
// registered buffer and the device limits. QPs made through it are destroyed
// when the case ends, before the PD and the CQ.
type qpWorld struct {
	t     *tester
	e     *env
	lim   Limits
	pd    verbs.PD
	cq    verbs.CQ
	mr    verbs.MR
	ah    verbs.AH
	types map[verbs.QP]verbs.QPType
}

func qpSetup(t *tester, e *env) *qpWorld {
	t.Helper()
	w := &qpWorld{t: t, e: e, lim: e.Limits(), types: map[verbs.QP]verbs.QPType{}}
	w.pd = e.pdAlloc()
	w.cq = e.CQ(qpCQE, nil, nil)
	w.mr = e.mrReg(w.pd, make([]byte, 4096), accessLocalWrite)
	return w
}

// udAH returns an address handle of the world's PD, for UD send requests.
func (w *qpWorld) udAH() verbs.AH {
	if w.ah == nil {
		w.ah = w.e.ahCreate(w.pd)
	}
	return w.ah
}

// qpCap are the capacities the cases ask for unless they say otherwise.
func (w *qpWorld) qpCap() verbs.QPCap {
	return verbs.QPCap{
		MaxSendWR: uint32(min(8, w.lim.MaxQPWR)), MaxRecvWR: uint32(min(8, w.lim.MaxQPWR)),
		MaxSendSGE: uint32(min(2, w.lim.MaxSGE)), MaxRecvSGE: uint32(min(2, w.lim.MaxSGE)),
		MaxInlineData: uint32(min(64, w.lim.MaxInline)),
	}
}

// create makes a QP of type typ with qpCap on the world's CQ.
func (w *qpWorld) create(typ verbs.QPType) verbs.QP {
	w.t.Helper()
	return w.createWith(verbs.QPInitAttr{Type: typ, Cap: w.qpCap(), SendCQ: w.cq, RecvCQ: w.cq})
}

// createWith makes a QP from a or fails the case.
func (w *qpWorld) createWith(a verbs.QPInitAttr) verbs.QP {
	w.t.Helper()
	q, err := w.pd.CreateQP(a)
	if err != nil || q == nil {
		w.t.Fatalf("ibv_create_qp(%v, cap %+v, srq %v): qp=%v err=%v, want a QP", a.Type, a.Cap, a.SRQ != nil, q, err)
	}
	w.types[q] = a.Type
	w.t.Cleanup(func() {
		ctx, cancel := graceful()
		defer cancel()
		_ = q.DestroyContext(ctx) // may already be destroyed by the case
	})
	return q
}

// tryCreate makes a QP from a and checks the failure convention: either a QP
// and no error, or no QP and an errno. The QP is destroyed at the end.
func (w *qpWorld) tryCreate(a verbs.QPInitAttr) (verbs.QP, error) {
	w.t.Helper()
	q, err := w.pd.CreateQP(a)
	if q != nil {
		w.types[q] = a.Type
		w.t.Cleanup(func() {
			ctx, cancel := graceful()
			defer cancel()
			_ = q.DestroyContext(ctx)
		})
		if err != nil {
			w.t.Errorf("ibv_create_qp returned a QP along with error %v; a failed create returns none", err)
		}
		return q, err
	}
	var n syscall.Errno
	if err == nil {
		w.t.Errorf("ibv_create_qp returned neither a QP nor an error")
	} else if !errors.As(err, &n) {
		w.t.Errorf("ibv_create_qp failed with %v, which carries no errno", err)
	}
	return nil, err
}

// srq makes an SRQ of the world's PD or fails the case; it is destroyed at
// the end, after the QPs created later.
func (w *qpWorld) srq(maxWR, maxSGE uint32) verbs.SRQ {
	w.t.Helper()
	s, err := w.pd.CreateSRQ(verbs.SRQInitAttr{Attr: verbs.SRQAttr{MaxWR: maxWR, MaxSGE: maxSGE}})
	if err != nil || s == nil {
		w.t.Fatalf("ibv_create_srq(max_wr=%d, max_sge=%d): srq=%v err=%v", maxWR, maxSGE, s, err)
	}
	w.t.Cleanup(func() {
		ctx, cancel := graceful()
		defer cancel()
		_ = s.DestroyContext(ctx)
	})
	return s
}

// minimal returns the smallest legal mask from one state to another for q.
func (w *qpWorld) minimal(q verbs.QP, from, to verbs.QPState) verbs.QPAttrMask {
	req, _, _ := verbs.Transition(from, to, w.types[q], w.e.Profile)
	return bState | req
}

// step moves q from one state to another with the minimal mask, or fails
// the case.
func (w *qpWorld) step(q verbs.QP, from, to verbs.QPState) {
	w.t.Helper()
	w.stepWith(q, from, to, nil)
}

// stepWith is step with the attributes qpAttr gives edited by set (when not
// nil). A move from RTS to SQD also takes the SQ_DRAINED event it raises on
// a device that raises it unasked (sqDrained).
func (w *qpWorld) stepWith(q verbs.QP, from, to verbs.QPState, set func(*verbs.QPAttr)) {
	w.t.Helper()
	a := qpAttr(w.lim, from, to)
	if set != nil {
		set(&a)
	}
	mask := w.minimal(q, from, to)
	if err := q.Modify(&a, mask); err != nil {
		w.t.Fatalf("%v QP: %v→%v with %v: %v, want success", w.types[q], from, to, mask, err)
	}
	if from == verbs.QPStateRTS && to == verbs.QPStateSQD {
		w.sqDrained(q)
	}
}

// sqDrained reads and acks the IBV_EVENT_SQ_DRAINED that q's move from RTS
// to SQD, without en_sqd_async_notify, raises on a device that raises it
// whether or not it was asked for (ASYNC-13, rxe reading), so that the
// cases that watch the async events of what follows (FLUSH-14, CQ-25) see
// only those. The cases move a QP to SQD only while its send queue is
// empty, so the drain is over at once and the event due. An SQ_DRAINED of
// another QP, which a case may have moved to SQD with a modify of its own,
// is acked and skipped; any other event fails the case. Under the other
// reading nothing is raised, which ASYNC-13 and FLUSH-14 check.
func (w *qpWorld) sqDrained(q verbs.QP) {
	w.t.Helper()
	if !w.e.Profile.AlwaysSQDrained {
		return
	}
	what := fmt.Sprintf("%v QP moved from RTS to SQD without en_sqd_async_notify, on a device that raises SQ_DRAINED regardless (ASYNC-13)", w.types[q])
	for {
		ev := cqWaitAsync(w.t, w.e, what)
		typ, obj := ev.EventType(), ev.QP()
		w.e.WantOK("ibv_ack_async_event", ev.Ack())
		if typ != verbs.EventSQDrained {
			w.t.Fatalf("%s: async event %v naming %v, want SQ_DRAINED naming the QP", what, typ, named(ev))
		}
		if obj == nil {
			w.t.Fatalf("%s: SQ_DRAINED naming %v, which is not a QP", what, named(ev))
		}
		if obj == q {
			return
		}
	}
}

// hold takes q, a new QP in RESET, to a state in which the send requests
// posted next stay outstanding on any implementation until the QP leaves
// that state, and returns the state. A device executes what is posted in
// RTS: UD and UC sends complete at once with SUCCESS whoever receives them
// (XFER-22, XFER-26). So:
//
//   - RC: RTS, with dest_qp_num noQPN, which no QP has, and timeout
//     0, which disables the local ACK timeout (QP-22): the sends are
//     transmitted and wait for an acknowledgement that never comes.
//   - UC and UD: SQD, entered while the send queue is empty, so the drain is
//     over at once; sends posted in SQD do not start before SQD→RTS (QP-39),
//     which never comes.
//
// Receives wait for a message in either state; nothing is sent to them.
func (w *qpWorld) hold(q verbs.QP) verbs.QPState {
	w.t.Helper()
	silent := func(a *verbs.QPAttr) { a.DestQPNum, a.Timeout = noQPN, 0 }
	path := []verbs.QPState{verbs.QPStateInit, verbs.QPStateRTR, verbs.QPStateRTS}
	if w.types[q] != verbs.QPTypeRC {
		path = append(path, verbs.QPStateSQD)
	}
	cur := verbs.QPStateReset
	for _, next := range path {
		w.stepWith(q, cur, next, silent)
		cur = next
	}
	return cur
}

// held returns a new QP of type typ taken to hold's state, and the state.
func (w *qpWorld) held(typ verbs.QPType) (verbs.QP, verbs.QPState) {
	w.t.Helper()
	q := w.create(typ)
	return q, w.hold(q)
}

// walk takes q, which is in RESET, to state s along qpPath.
func (w *qpWorld) walk(q verbs.QP, s verbs.QPState) {
	w.t.Helper()
	cur := verbs.QPStateReset
	for _, next := range qpPath[s] {
		w.step(q, cur, next)
		cur = next
	}
}

// at returns a new QP of type typ in state s.
func (w *qpWorld) at(typ verbs.QPType, s verbs.QPState) verbs.QP {
	w.t.Helper()
	q := w.create(typ)
	w.walk(q, s)
	return q
}

// query returns q's attributes or fails the case.
func (w *qpWorld) query(q verbs.QP) verbs.QPAttr {
	w.t.Helper()
	a, err := queryQP(q)
	if err != nil {
		w.t.Fatalf("ibv_query_qp: %v", err)
	}
	return a
}

// refused checks that modify(a, mask) fails with EINVAL and that the QP's
// attributes, state included, are what they were (QP-13).
func (w *qpWorld) refused(what string, q verbs.QP, a verbs.QPAttr, mask verbs.QPAttrMask) bool {
	w.t.Helper()
	before := w.query(q)
	err := q.Modify(&a, mask)
	after := w.query(q)
	ok := true
	if !errors.Is(err, syscall.EINVAL) {
		w.t.Errorf("%s: %v QP in %v, modify(%v) = %v, want EINVAL", what, w.types[q], before.QPState, mask, err)
		ok = false
	}
	if after != before {
		w.t.Errorf("%s: a modify(%v) that should fail changed the QP (-before +after):\n%s", what, mask, cmp.Diff(before, after))
		ok = false
	}
	return ok
}

// accepted checks that modify(a, mask) succeeds and leaves q in state to.
func (w *qpWorld) accepted(what string, q verbs.QP, a verbs.QPAttr, mask verbs.QPAttrMask, to verbs.QPState) bool {
	w.t.Helper()
	from := w.query(q).QPState
	if err := q.Modify(&a, mask); err != nil {
		w.t.Errorf("%s: %v QP, %v→%v with %v: %v, want success", what, w.types[q], from, to, mask, err)
		return false
	}
	if got := w.query(q).QPState; got != to {
		w.t.Errorf("%s: %v QP, %v→%v with %v succeeded, but the QP is in %v", what, w.types[q], from, to, mask, got)
		return false
	}
	return true
}

// qpSmallEnv returns an environment on a device like e's with small queue
// limits, or nil when e's device is not a LimitedDevice.
func qpSmallEnv(t *tester, e *env) *env {
	t.Helper()
	want := Limits{MaxQPWR: 64, MaxSGE: 4, MaxInline: 48, MaxSRQWR: 64, MaxSRQSGE: 4}
	s := cqLimitedEnv(t, e, want)
	if s == nil {
		return nil
	}
	if got := s.Limits(); got.MaxQPWR != want.MaxQPWR || got.MaxSGE != want.MaxSGE || got.MaxInline != want.MaxInline ||
		got.MaxSRQWR != want.MaxSRQWR || got.MaxSRQSGE != want.MaxSRQSGE {
		t.Fatalf("a device made WithLimits(%+v) reports %+v", want, got)
	}
	return s
}

// qpCapProperty creates QPs with random capacities within w's limits, and at
// each limit, and checks the capacities they report (QP-02).
func qpCapProperty(t *tester, w *qpWorld) {
	t.Helper()
	l := w.lim
	rng := rand.New(rand.NewPCG(2, 0x9902))
	// Work-request counts stay moderate: a queue's memory grows with them.
	wrs := func() uint32 { return uint32(rng.IntN(min(l.MaxQPWR, 256) + 1)) }
	req := []verbs.QPCap{
		{MaxSendWR: uint32(l.MaxQPWR), MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1},
		{MaxSendWR: 1, MaxRecvWR: uint32(l.MaxQPWR), MaxSendSGE: 1, MaxRecvSGE: 1},
		{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: uint32(l.MaxSGE), MaxRecvSGE: uint32(l.MaxSGE), MaxInlineData: uint32(l.MaxInline)},
	}
	for range 24 {
		req = append(req, verbs.QPCap{
			MaxSendWR: wrs(), MaxRecvWR: wrs(),
			MaxSendSGE: uint32(rng.IntN(l.MaxSGE + 1)), MaxRecvSGE: uint32(rng.IntN(l.MaxSGE + 1)),
			MaxInlineData: uint32(rng.IntN(l.MaxInline + 1)),
		})
	}
	for i, c := range req {
		typ := qpTypes[i%3]
		q, err := w.tryCreate(verbs.QPInitAttr{Type: typ, Cap: c, SendCQ: w.cq, RecvCQ: w.cq})
		if err != nil {
			t.Errorf("ibv_create_qp(%v, cap %+v) within the device limits: %v", typ, c, err)
			continue
		}
		got := w.query(q).Cap
		if got.MaxSendWR < c.MaxSendWR || got.MaxRecvWR < c.MaxRecvWR || got.MaxSendSGE < c.MaxSendSGE ||
			got.MaxRecvSGE < c.MaxRecvSGE || got.MaxInlineData < c.MaxInlineData {
			t.Errorf("ibv_create_qp(%v, cap %+v) reports cap %+v, below the request", typ, c, got)
		}
		ctx, cancel := patient()
		w.e.WantOK("ibv_destroy_qp", q.DestroyContext(ctx))
		cancel()
	}
}

// qpCapOverLimit checks that a request above one of w's limits is EINVAL
// with no QP (QP-02).
func qpCapOverLimit(t *tester, w *qpWorld) {
	t.Helper()
	l := w.lim
	over := []struct {
		name string
		set  func(*verbs.QPCap)
	}{
		{"max_send_wr > max_qp_wr", func(c *verbs.QPCap) { c.MaxSendWR = uint32(l.MaxQPWR) + 1 }},
		{"max_recv_wr > max_qp_wr", func(c *verbs.QPCap) { c.MaxRecvWR = uint32(l.MaxQPWR) + 1 }},
		{"max_send_sge > max_sge", func(c *verbs.QPCap) { c.MaxSendSGE = uint32(l.MaxSGE) + 1 }},
		{"max_recv_sge > max_sge", func(c *verbs.QPCap) { c.MaxRecvSGE = uint32(l.MaxSGE) + 1 }},
		{"max_inline_data above the device's", func(c *verbs.QPCap) { c.MaxInlineData = uint32(l.MaxInline) + 1 }},
	}
	for i, o := range over {
		c := w.qpCap()
		o.set(&c)
		typ := qpTypes[i%3]
		q, err := w.tryCreate(verbs.QPInitAttr{Type: typ, Cap: c, SendCQ: w.cq, RecvCQ: w.cq})
		if q != nil {
			t.Errorf("ibv_create_qp(%v) with %s (max_qp_wr %d) returned a QP", typ, o.name, l.MaxQPWR)
		}
		w.e.WantErrno(fmt.Sprintf("ibv_create_qp(%v) with %s (max_qp_wr %d)", typ, o.name, l.MaxQPWR), err, syscall.EINVAL)
	}
}

// qpStateValues is enum ibv_qp_state of rdma-core 44 (QP-06). qp_test.go
// checks it against the golden file printed from libibverbs.
var qpStateValues = [...]struct {
	s    verbs.QPState
	val  uint32
	name string
}{
	{verbs.QPStateReset, 0, "IBV_QPS_RESET"}, {verbs.QPStateInit, 1, "IBV_QPS_INIT"}, {verbs.QPStateRTR, 2, "IBV_QPS_RTR"},
	{verbs.QPStateRTS, 3, "IBV_QPS_RTS"}, {verbs.QPStateSQD, 4, "IBV_QPS_SQD"}, {verbs.QPStateSQE, 5, "IBV_QPS_SQE"},
	{verbs.QPStateErr, 6, "IBV_QPS_ERR"}, {verbs.QPStateUnknown, 7, "IBV_QPS_UNKNOWN"},
}

// qpCases are the cases of the QP family in qp.go.
var qpCases = []Case{
	{"QP-01", "a new QP is in RESET with a unique qp_num; a failed create returns none", newQPInReset},
	{"QP-02", "the caps written back are at least the request; over a device limit is EINVAL", qpCapsWrittenBack},
	{"QP-03", "send_cq and recv_cq are both required; they may be one CQ", sendAndRecvCQ},
	{"QP-04", "UC cannot use an SRQ; RC and UD with one ignore the receive caps", ucCannotUseSRQ},
	{"QP-06", "state values are those of verbs.h; UNKNOWN is never a target", stateValues},
	{"QP-24", "query reports the current state after every modify", queryCurrentState},
}

func newQPInReset(t *tester, e *env) {
	w := qpSetup(t, e)
	nums := map[uint32]int{}
	var live []verbs.QP
	for i := range 12 {
		q := w.create(qpTypes[i%3])
		if s := w.query(q).QPState; s != verbs.QPStateReset {
			t.Errorf("QP %d (%v) starts in %v, want RESET", i, qpTypes[i%3], s)
		}
		if j, dup := nums[q.Num()]; dup {
			t.Errorf("QP %d has qp_num %#x, the number of live QP %d", i, q.Num(), j)
		}
		nums[q.Num()] = i
		live = append(live, q)
		if i%4 == 3 { // numbers of destroyed QPs may come back; live ones never repeat
			ctx, cancel := patient()
			e.WantOK("ibv_destroy_qp", live[0].DestroyContext(ctx))
			cancel()
			delete(nums, live[0].Num())
			live = live[1:]
		}
	}
	c := w.qpCap()
	c.MaxSendWR = uint32(w.lim.MaxQPWR) + 1
	q, err := w.tryCreate(verbs.QPInitAttr{Type: verbs.QPTypeRC, Cap: c, SendCQ: w.cq, RecvCQ: w.cq})
	if q != nil || err == nil {
		t.Errorf("ibv_create_qp above max_qp_wr: qp=%v err=%v, want no QP and an errno", q, err)
	}
	if q, err := w.tryCreate(verbs.QPInitAttr{Type: verbs.QPType(99), Cap: w.qpCap(), SendCQ: w.cq, RecvCQ: w.cq}); q != nil || err == nil {
		t.Errorf("ibv_create_qp(qp_type=99): qp=%v err=%v, want no QP and an errno", q, err)
	}
}

func qpCapsWrittenBack(t *tester, e *env) {
	// The property runs where the limits are small, so that requests at
	// the limits stay cheap; the refusals run on both devices.
	w := qpSetup(t, e)
	small := w
	if s := qpSmallEnv(t, e); s != nil {
		small = qpSetup(t, s)
	}
	qpCapProperty(t, small)
	qpCapOverLimit(t, w)
	if small != w {
		qpCapOverLimit(t, small)
	}
}

func sendAndRecvCQ(t *tester, e *env) {
	w := qpSetup(t, e)
	other := e.CQ(16, nil, nil)
	for _, typ := range qpTypes {
		for _, c := range []struct {
			name       string
			send, recv verbs.CQ
		}{{"no send_cq", nil, w.cq}, {"no recv_cq", w.cq, nil}, {"no CQ at all", nil, nil}} {
			q, err := w.tryCreate(verbs.QPInitAttr{Type: typ, Cap: w.qpCap(), SendCQ: c.send, RecvCQ: c.recv})
			if q != nil {
				t.Errorf("ibv_create_qp(%v) with %s returned a QP", typ, c.name)
			}
			e.WantErrno(fmt.Sprintf("ibv_create_qp(%v) with %s", typ, c.name), err, syscall.EINVAL)
		}
		w.createWith(verbs.QPInitAttr{Type: typ, Cap: w.qpCap(), SendCQ: w.cq, RecvCQ: w.cq})
		w.createWith(verbs.QPInitAttr{Type: typ, Cap: w.qpCap(), SendCQ: w.cq, RecvCQ: other})
	}
}

func ucCannotUseSRQ(t *tester, e *env) {
	w := qpSetup(t, e)
	s := w.srq(16, 1)
	q, err := w.tryCreate(verbs.QPInitAttr{Type: verbs.QPTypeUC, Cap: w.qpCap(), SendCQ: w.cq, RecvCQ: w.cq, SRQ: s})
	if q != nil {
		t.Errorf("ibv_create_qp(UC, srq) returned a QP")
	}
	e.WantErrno("ibv_create_qp(UC, srq)", err, syscall.EINVAL)
	for _, typ := range []verbs.QPType{verbs.QPTypeRC, verbs.QPTypeUD} {
		c := w.qpCap()
		c.MaxRecvWR, c.MaxRecvSGE = uint32(w.lim.MaxQPWR)+1, uint32(w.lim.MaxSGE)+1
		q, err := w.tryCreate(verbs.QPInitAttr{Type: typ, Cap: c, SendCQ: w.cq, RecvCQ: w.cq, SRQ: s})
		if err != nil {
			t.Errorf("ibv_create_qp(%v, srq) with receive caps above the device's, which an SRQ makes irrelevant: %v", typ, err)
		} else if q == nil {
			t.Errorf("ibv_create_qp(%v, srq) returned neither a QP nor an error", typ)
		}
	}
}

func stateValues(t *tester, e *env) {
	for _, r := range qpStateValues {
		if uint32(r.s) != r.val {
			t.Errorf("%s is %d, want %d", r.name, uint32(r.s), r.val)
		}
	}
	w := qpSetup(t, e)
	for _, typ := range qpTypes {
		for _, s := range qpReachable {
			q := w.at(typ, s)
			a := w.query(q)
			if a.QPState != s {
				t.Errorf("%v QP taken to %s: query says %d", typ, s.Name(), uint32(a.QPState))
			}
			for _, bad := range []verbs.QPState{verbs.QPStateUnknown, 8, 1 << 31} {
				w.refused(fmt.Sprintf("qp_state=%d from %v", uint32(bad), s), q, qpAttr(w.lim, s, bad), bState)
			}
		}
	}
}

func queryCurrentState(t *tester, e *env) {
	w := qpSetup(t, e)
	tour := []verbs.QPState{verbs.QPStateInit, verbs.QPStateInit, verbs.QPStateRTR, verbs.QPStateRTS, verbs.QPStateRTS, verbs.QPStateSQD, verbs.QPStateSQD, verbs.QPStateRTS, verbs.QPStateErr, verbs.QPStateErr, verbs.QPStateReset, verbs.QPStateInit, verbs.QPStateErr}
	for _, typ := range qpTypes {
		q := w.create(typ)
		cur := verbs.QPStateReset
		for _, next := range tour {
			w.step(q, cur, next)
			if got := w.query(q).QPState; got != next {
				t.Errorf("%v QP: after %v→%v, query says %v", typ, cur, next, got)
			}
			cur = next
		}
	}
}
