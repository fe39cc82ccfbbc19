package conformance

import (
	"github.com/verbsim/verbsim/verbs"
)

// Helpers of the transport cases (xfer_*.go): two sides, each with a context,
// a PD and a registered buffer, on two devices of one fabric when the device
// offers a PeerDevice and on one device (loopback) otherwise; QPs connected
// with ibv_modify_qp alone, from the addresses ibv_query_port reports, as a
// program on real hardware does; and requests. xfer_wait.go has the waits.

// bufLen is the size of each side's registered buffer.
const bufLen = 1 << 16

// accessAll grants every access an MR can give.
const accessAll = accessLocalWrite | accessRemoteWrite | accessRemoteRead | accessRemoteAtomic

// idleLimit bounds every RunUntilIdle: one virtual second, far beyond any
// timer the cases arm, and finite for an RNR loop that never ends.
const idleLimit = 1_000_000_000

// udQKey is the Q_Key of the cases' UD QPs (its top bit is clear: a Q_Key
// with the top bit set in a send request means the QP's own).
const udQKey = 0x11110000

// knownBugs lists engine behaviour that contradicts spec/catalogue.md and has been
// reported to the engine's owner. A check that names one of them logs its
// failure instead of failing the case, so that the suite stays green while
// the engine is fixed; removing the entry makes the check count again.
var knownBugs = map[string]string{}

// expect reports a failure of a check unless ok; a check tied to a known
// engine bug (knownBugs) only logs.
func (w *wire) expect(bug string, ok bool, format string, args ...any) {
	w.t.Helper()
	if ok {
		return
	}
	if why, known := knownBugs[bug]; known {
		w.t.Logf("KNOWN ENGINE BUG (%s): "+format, append([]any{why}, args...)...)
		return
	}
	w.t.Errorf(format, args...)
}

// side is one adapter's half of a transport case.
type side struct {
	name string
	w    *wire
	ctx  verbs.Context
	own  bool // ctx is the case's own context: its CQs are the env's
	pd   verbs.PD
	buf  []byte
	mr   verbs.MR
	port portInfo
	cqs  []verbs.CQ
	chs  []verbs.CompChannel
}

// wire is what a transport case works in.
type wire struct {
	t     *tester
	e     *env
	lim   Limits
	a, b  *side
	loop  bool  // both sides are on one device
	clock Clock // nil when the device has none
	tp    verbs.Readings
	// forcing says the case has forced a status (StatusForcer): the
	// statuses of model.NeverProduced may come.
	forcing bool
	// queues says, per CQ and qp_num, which queues of the QP complete on
	// the CQ (WC-06).
	queues map[queueKey]queueKinds
}

// queueKey names a QP's completions on one CQ.
type queueKey struct {
	cq  verbs.CQ
	qpn uint32
}

// queueKinds says which of a QP's queues complete on a CQ.
type queueKinds struct{ send, recv bool }

// newWire makes the two sides of a transport case.
func newWire(t *tester, e *env) *wire {
	t.Helper()
	w := &wire{t: t, e: e, lim: e.Limits(), queues: map[queueKey]queueKinds{}}
	w.clock, _ = e.Dev.(Clock)
	w.tp = e.Profile
	w.a = w.side("A", e.Ctx, true)
	ctx := e.Ctx
	w.loop = true
	if p, ok := e.Dev.(PeerDevice); ok {
		if peer, err := p.Peer(); err == nil && peer != nil {
			c, err := peer.Open()
			if err != nil {
				t.Fatalf("opening the peer device: %v", err)
			}
			ctx, w.loop = c, false
		}
	}
	w.b = w.side("B", ctx, w.loop)
	return w
}

// side sets up one side on ctx. A side that does not own its context
// destroys its CQs and channels and closes the context at the end, after
// the QPs, MRs and PD made later.
func (w *wire) side(name string, ctx verbs.Context, own bool) *side {
	w.t.Helper()
	s := &side{name: name, w: w, ctx: ctx, own: own}
	if !own {
		w.t.Cleanup(func() {
			for _, q := range s.cqs {
				c, cancel := graceful()
				_ = q.DestroyContext(c)
				cancel()
			}
			for _, ch := range s.chs {
				_ = ch.Destroy()
			}
			_ = ctx.Close()
		})
	}
	var err error
	if s.port, err = queryPortInfo(ctx, 1); err != nil {
		w.t.Fatalf("side %s: ibv_query_port(1): %v", name, err)
	}
	s.pd = w.pdOn(ctx)
	s.buf = make([]byte, bufLen)
	s.mr = w.e.mrReg(s.pd, s.buf, accessAll)
	return s
}

// pdOn allocates a PD on ctx, deallocated at the end.
func (w *wire) pdOn(ctx verbs.Context) verbs.PD {
	w.t.Helper()
	pd, err := ctx.AllocPD()
	if err != nil || pd == nil {
		w.t.Fatalf("ibv_alloc_pd: pd=%v err=%v", pd, err)
	}
	w.t.Cleanup(func() { _ = pd.Dealloc() })
	return pd
}

// cq creates a CQ of at least n entries on the side's context.
func (s *side) cq(n int, ch verbs.CompChannel) verbs.CQ {
	s.w.t.Helper()
	if s.own {
		return s.w.e.CQ(n, nil, ch)
	}
	q, err := s.ctx.CreateCQ(n, nil, ch, 0)
	if err != nil {
		s.w.t.Fatalf("side %s: ibv_create_cq(%d): %v", s.name, n, err)
	}
	s.cqs = append(s.cqs, q)
	return q
}

// channel creates a completion channel on the side's context.
func (s *side) channel() verbs.CompChannel {
	s.w.t.Helper()
	if s.own {
		return s.w.e.Channel()
	}
	ch, err := s.ctx.CreateCompChannel()
	if err != nil {
		s.w.t.Fatalf("side %s: ibv_create_comp_channel: %v", s.name, err)
	}
	s.chs = append(s.chs, ch)
	return ch
}

// sge names n bytes at offset off of the side's buffer.
func (s *side) sge(off, n int) verbs.SGE {
	return verbs.SGE{Addr: s.mr.Addr() + uint64(off), Length: uint32(n), LKey: s.mr.LKey()}
}

// addr is the address of byte off of the side's buffer, for remote requests.
func (s *side) addr(off int) uint64 { return s.mr.Addr() + uint64(off) }

// endOpts are the attributes the cases give their QPs; wire.opts returns the
// defaults.
type endOpts struct {
	cap          verbs.QPCap
	sigAll       bool
	scqe, rcqe   int
	mtu          verbs.MTU // path MTU; 0: 1024 or the smaller active MTU
	deny         verbs.AccessFlags
	timeout      uint8
	retry        uint8
	rnrRetry     uint8
	minRNR       uint8
	rdAtomic     uint8
	destRdAtomic uint8
	upTo         verbs.QPState // how far connect walks the QP
	srq          verbs.SRQ
	sqpsn        uint32
	sendCh       verbs.CompChannel // channels of the QP's CQs
	recvCh       verbs.CompChannel
	sendCQ       verbs.CQ // CQs to use instead of new ones
	recvCQ       verbs.CQ
	// sendOps, when not zero, creates the QP with ibv_create_qp_ex and
	// these send_ops_flags (QPExCreator).
	sendOps verbs.QPSendOps
}

// opts returns the default attributes: RC timers short enough for real
// hardware (4 ms ACK timeout), rnr_retry 7, every remote access allowed.
func (w *wire) opts() endOpts {
	return endOpts{
		cap: verbs.QPCap{
			MaxSendWR: uint32(min(64, w.lim.MaxQPWR)), MaxRecvWR: uint32(min(64, w.lim.MaxQPWR)),
			MaxSendSGE: uint32(min(4, w.lim.MaxSGE)), MaxRecvSGE: uint32(min(4, w.lim.MaxSGE)),
			MaxInlineData: uint32(min(64, w.lim.MaxInline)),
		},
		scqe: 64, rcqe: 64,
		timeout: 10, retry: 3, rnrRetry: 7, minRNR: 1,
		rdAtomic: uint8(min(4, w.lim.MaxQPInitRDAtom)), destRdAtomic: uint8(min(4, w.lim.MaxQPRDAtom)),
		upTo: verbs.QPStateRTS, sqpsn: 0x100,
	}
}

// end is a QP of a case with its CQs.
type end struct {
	s        *side
	q        verbs.QP
	typ      verbs.QPType
	scq, rcq verbs.CQ
	o        endOpts
}

// newEnd creates a QP of type typ on side s, in RESET.
func (w *wire) newEnd(s *side, typ verbs.QPType, o endOpts) *end {
	w.t.Helper()
	x := &end{s: s, typ: typ, o: o}
	x.scq, x.rcq = o.sendCQ, o.recvCQ
	if x.scq == nil {
		x.scq = s.cq(o.scqe, o.sendCh)
	}
	if x.rcq == nil {
		x.rcq = s.cq(o.rcqe, o.recvCh)
	}
	attr := verbs.QPInitAttr{Type: typ, Cap: o.cap, SendCQ: x.scq, RecvCQ: x.rcq, SQSigAll: o.sigAll, SRQ: o.srq}
	if o.srq != nil {
		attr.Cap.MaxRecvWR, attr.Cap.MaxRecvSGE = 0, 0
	}
	var q verbs.QP
	var err error
	if c, ok := s.pd.(verbs.QPExCreator); ok && o.sendOps != 0 {
		q, err = c.CreateQPEx(verbs.QPInitAttrEx{QPInitAttr: attr,
			CompMask: verbs.QPInitAttrPD | verbs.QPInitAttrSendOpsFlags, SendOpsFlags: o.sendOps})
	} else {
		q, err = s.pd.CreateQP(attr)
	}
	if err != nil || q == nil {
		w.t.Fatalf("side %s: ibv_create_qp(%v): qp=%v err=%v", s.name, typ, q, err)
	}
	x.q = q
	w.noteQueues(x)
	w.t.Cleanup(func() {
		c, cancel := graceful()
		defer cancel()
		_ = q.DestroyContext(c)
	})
	return x
}

// noteQueues records which of x's queues complete on which of its CQs
// (a QP on an SRQ completes its receives on its receive CQ too).
func (w *wire) noteQueues(x *end) {
	k := queueKey{x.scq, x.q.Num()}
	q := w.queues[k]
	q.send = true
	w.queues[k] = q
	k = queueKey{x.rcq, x.q.Num()}
	q = w.queues[k]
	q.recv = true
	w.queues[k] = q
}

// avTo is the path to side to, through port 1: by LID on an
// InfiniBand port, by GID when the port has no LID or is Ethernet.
func avTo(to *side, global bool) verbs.AHAttr {
	av := verbs.AHAttr{PortNum: 1, DLID: to.port.LID}
	if global || to.port.Ethernet || to.port.LID == 0 {
		av.IsGlobal = true
		av.GRH = verbs.GlobalRoute{DGID: to.port.GID, HopLimit: 64}
	}
	return av
}

// modify applies one modify or fails the case.
func (w *wire) modify(x *end, what string, a verbs.QPAttr, mask verbs.QPAttrMask) {
	w.t.Helper()
	if err := x.q.Modify(&a, mask); err != nil {
		w.t.Fatalf("side %s %v QP: %s (%v): %v", x.s.name, x.typ, what, mask, err)
	}
}

// bring takes x from RESET to state to (INIT, RTR or RTS), connected to
// peer (RC, UC, the XRC initiator and target) or with the Q_Key udQKey (UD).
func (w *wire) bring(x, peer *end, to verbs.QPState) {
	w.t.Helper()
	o := x.o
	if to == verbs.QPStateReset {
		return
	}
	access := (verbs.AccessRemoteWrite | verbs.AccessRemoteRead | verbs.AccessRemoteAtomic) &^ o.deny
	if x.typ == verbs.QPTypeUC {
		access &= verbs.AccessRemoteWrite
	}
	a := verbs.QPAttr{QPState: verbs.QPStateInit, PortNum: 1, QPAccessFlags: access, QKey: udQKey}
	if x.typ == verbs.QPTypeUD {
		w.modify(x, "RESET→INIT", a, verbs.QPAttrState|verbs.QPAttrPKeyIndex|verbs.QPAttrPort|verbs.QPAttrQKey)
	} else {
		w.modify(x, "RESET→INIT", a, verbs.QPAttrState|verbs.QPAttrPKeyIndex|verbs.QPAttrPort|verbs.QPAttrAccessFlags)
	}
	if to == verbs.QPStateInit {
		return
	}
	a = verbs.QPAttr{QPState: verbs.QPStateRTR}
	mask := verbs.QPAttrState
	if x.typ != verbs.QPTypeUD {
		mtu := o.mtu
		if mtu == 0 {
			mtu = min(verbs.MTU1024, x.s.port.ActiveMTU, peer.s.port.ActiveMTU)
		}
		a.AHAttr, a.PathMTU, a.DestQPNum, a.RQPSN = avTo(peer.s, false), mtu, peer.q.Num(), peer.o.sqpsn
		mask |= verbs.QPAttrAV | verbs.QPAttrPathMTU | verbs.QPAttrDestQPN | verbs.QPAttrRQPSN
	}
	if x.typ == verbs.QPTypeRC || x.typ == verbs.QPTypeXRCRecv { // a responder (XRC-08)
		a.MaxDestRDAtomic, a.MinRNRTimer = o.destRdAtomic, o.minRNR
		mask |= verbs.QPAttrMaxDestRDAtomic | verbs.QPAttrMinRNRTimer
	}
	w.modify(x, "INIT→RTR", a, mask)
	if to == verbs.QPStateRTR {
		return
	}
	a = verbs.QPAttr{QPState: verbs.QPStateRTS, SQPSN: o.sqpsn}
	mask = verbs.QPAttrState | verbs.QPAttrSQPSN
	switch x.typ {
	case verbs.QPTypeRC, verbs.QPTypeXRCSend: // a requester (XRC-08)
		a.Timeout, a.RetryCnt, a.RNRRetry, a.MaxRDAtomic = o.timeout, o.retry, o.rnrRetry, o.rdAtomic
		mask |= verbs.QPAttrTimeout | verbs.QPAttrRetryCnt | verbs.QPAttrRNRRetry | verbs.QPAttrMaxQPRDAtomic
	case verbs.QPTypeXRCRecv: // the XRC target: sq_psn and timeout only
		a.Timeout = o.timeout
		mask |= verbs.QPAttrTimeout
	}
	w.modify(x, "RTR→RTS", a, mask)
}

// connect2 creates a QP of type typ on each side and walks each as far as
// its options say (RTS by default), A connected to B and B to A; for UD the
// QPs only get the Q_Key.
func (w *wire) connect2(typ verbs.QPType, oa, ob endOpts) (a, b *end) {
	w.t.Helper()
	ob.sqpsn = oa.sqpsn + 1000
	a, b = w.newEnd(w.a, typ, oa), w.newEnd(w.b, typ, ob)
	w.bring(a, b, oa.upTo)
	w.bring(b, a, ob.upTo)
	return a, b
}

// connect is connect2 with the same options for both QPs, except the
// objects of one side (CQs, channels, SRQ), which connect2 alone takes.
func (w *wire) connect(typ verbs.QPType, o endOpts) (a, b *end) {
	w.t.Helper()
	o.sendCQ, o.recvCQ, o.sendCh, o.recvCh, o.srq = nil, nil, nil, nil, nil
	return w.connect2(typ, o, o)
}

// ah creates an address handle in the PD of side from, addressed to side
// to's port 1.
func (w *wire) ah(from, to *side, global bool) verbs.AH {
	w.t.Helper()
	av := avTo(to, global)
	ah, err := from.pd.CreateAH(verbs.AHAttr{PortNum: 1, DLID: av.DLID, IsGlobal: av.IsGlobal, GRH: verbs.GlobalRoute{DGID: av.GRH.DGID, HopLimit: av.GRH.HopLimit}})
	if err != nil || ah == nil {
		w.t.Fatalf("side %s: ibv_create_ah: ah=%v err=%v", from.name, ah, err)
	}
	w.t.Cleanup(func() { _ = ah.Destroy() })
	return ah
}

// datagram makes r a UD send request to the QP to through ah, with the
// right Q_Key.
func datagram(r verbs.SendWR, ah verbs.AH, to *end) verbs.SendWR {
	r.AH, r.RemoteQPN, r.RemoteQKey = ah, to.q.Num(), udQKey
	return r
}

// post posts wrs on x or fails the case.
func (x *end) post(what string, wrs ...verbs.SendWR) {
	x.s.w.t.Helper()
	if n, err := x.q.PostSend(wrs); n != len(wrs) || err != nil {
		x.s.w.t.Fatalf("%s: ibv_post_send of %d on side %s: %d posted, %v", what, len(wrs), x.s.name, n, err)
	}
}

// recv posts wrs on x or fails the case.
func (x *end) recv(what string, wrs ...verbs.RecvWR) {
	x.s.w.t.Helper()
	if n, err := x.q.PostRecv(wrs); n != len(wrs) || err != nil {
		x.s.w.t.Fatalf("%s: ibv_post_recv of %d on side %s: %d posted, %v", what, len(wrs), x.s.name, n, err)
	}
}

// recvAt posts one receive of n bytes at offset off with wr_id id.
func (x *end) recvAt(what string, id uint64, off, n int) {
	x.s.w.t.Helper()
	x.recv(what, verbs.RecvWR{WRID: id, SGList: []verbs.SGE{x.s.sge(off, n)}})
}

// state queries x's state.
func (x *end) state() verbs.QPState {
	x.s.w.t.Helper()
	a, err := queryQP(x.q)
	if err != nil {
		x.s.w.t.Fatalf("ibv_query_qp on side %s: %v", x.s.name, err)
	}
	return a.QPState
}

// wantState checks x's state.
func (x *end) wantState(what string, want verbs.QPState) {
	x.s.w.t.Helper()
	if got := x.state(); got != want {
		x.s.w.t.Errorf("%s: the %v QP of side %s is in %v, want %v", what, x.typ, x.s.name, got, want)
	}
}

// toState modifies x to ERR, RESET or SQD (mask STATE only), or back to RTS.
func (x *end) toState(s verbs.QPState) {
	x.s.w.t.Helper()
	x.s.w.modify(x, "→"+s.String(), verbs.QPAttr{QPState: s}, verbs.QPAttrState)
}

// fill writes a pattern derived from seed into b.
func fill(b []byte, seed byte) {
	for i := range b {
		b[i] = seed + byte(i*7+i>>8)
	}
}

// idsOf returns the wr_ids of wcs.
func idsOf(wcs []verbs.WC) []uint64 {
	out := make([]uint64, len(wcs))
	for i, c := range wcs {
		out[i] = c.WRID
	}
	return out
}

// sendWR returns a signaled request of opcode op over sges.
func sendWR(id uint64, op verbs.WROpcode, sges ...verbs.SGE) verbs.SendWR {
	return verbs.SendWR{WRID: id, Opcode: op, Flags: verbs.SendSignaled, SGList: sges}
}

// rdmaWR returns a signaled RDMA or atomic request to the remote buffer of
// side to at offset off.
func rdmaWR(id uint64, op verbs.WROpcode, to *side, off int, sges ...verbs.SGE) verbs.SendWR {
	r := sendWR(id, op, sges...)
	r.RemoteAddr, r.RKey = to.addr(off), to.mr.RKey()
	return r
}

// badRecvStatus is the status of a receive WR whose own buffer fails the
// protection check when a SEND lands in it (XFER-16): LOC_PROT_ERR, or
// LOC_QP_OP_ERR under the RecvProtQPOp reading (rxe).
func (w *wire) badRecvStatus() verbs.WCStatus {
	if w.tp.RecvProtQPOp {
		return verbs.WCLocQPOpErr
	}
	return verbs.WCLocProtErr
}
