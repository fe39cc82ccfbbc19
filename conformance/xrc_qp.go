package conformance

import (
	"bytes"
	"context"
	"fmt"
	"syscall"

	"github.com/verbsim/verbsim/verbs"
)

// The XRC QPs (XRC-06..10): an initiator (XRC_SEND) on side A, a target
// (XRC_RECV) in an XRC domain on side B, and the XRC SRQs the target
// delivers into.

// xrcXfer is a transport world with an XRC domain on side B.
type xrcXfer struct {
	*wire
	x verbs.XRCOpener // side B's context
	d verbs.XRCD
}

// xrcSRQ is an XRC SRQ of side B with its own CQ and its number.
type xrcSRQ struct {
	s  verbs.SRQ
	cq verbs.CQ
	n  uint32
}

// xrcXferSetup returns the world, or nil (having logged why) when the
// device has no XRC (xrcUsable).
func xrcXferSetup(t *tester, e *env) *xrcXfer {
	t.Helper()
	if xrcUsable(t, e) == nil {
		return nil
	}
	w := newWire(t, e)
	x, ok := w.b.ctx.(verbs.XRCOpener)
	if !ok {
		t.Logf("not checked: the peer context has no XRC verbs (verbs.XRCOpener)")
		return nil
	}
	p := &xrcXfer{wire: w, x: x}
	p.d = p.domain()
	return p
}

// domain opens a domain on side B, closed at the end.
func (p *xrcXfer) domain() verbs.XRCD {
	p.t.Helper()
	d, err := openXRCD(p.x, xrcdFDOFlags, -1, 0)
	if err != nil || d == nil {
		p.t.Fatalf("side B: ibv_open_xrcd(fd -1): %v", err)
	}
	p.t.Cleanup(func() { _ = d.Close() })
	return d
}

// ini creates an XRC_SEND QP on side A, with a send CQ and no receive side,
// in RESET; with o.sendOps through ibv_create_qp_ex.
func (p *xrcXfer) ini(o endOpts) *end {
	p.t.Helper()
	x := &end{s: p.a, typ: verbs.QPTypeXRCSend, o: o, scq: o.sendCQ}
	if x.scq == nil {
		x.scq = p.a.cq(o.scqe, o.sendCh)
	}
	attr := verbs.QPInitAttr{Type: verbs.QPTypeXRCSend, Cap: o.cap, SendCQ: x.scq, SQSigAll: o.sigAll}
	attr.Cap.MaxRecvWR, attr.Cap.MaxRecvSGE = 0, 0
	var err error
	if c, ok := p.a.pd.(verbs.QPExCreator); ok && o.sendOps != 0 {
		x.q, err = c.CreateQPEx(verbs.QPInitAttrEx{QPInitAttr: attr,
			CompMask: verbs.QPInitAttrPD | verbs.QPInitAttrSendOpsFlags, SendOpsFlags: o.sendOps})
	} else {
		x.q, err = p.a.pd.CreateQP(attr)
	}
	if err != nil || x.q == nil {
		p.t.Fatalf("side A: ibv_create_qp(XRC_SEND): qp=%v err=%v", x.q, err)
	}
	p.destroyLater(x.q)
	p.queues[queueKey{x.scq, x.q.Num()}] = queueKinds{send: true}
	return x
}

// tgt creates an XRC_RECV QP in the domain d of side B, in RESET.
func (p *xrcXfer) tgt(d verbs.XRCD, o endOpts) *end {
	p.t.Helper()
	q, err := d.CreateQP(verbs.QPInitAttrEx{QPInitAttr: verbs.QPInitAttr{Type: verbs.QPTypeXRCRecv}, CompMask: verbs.QPInitAttrXRCD})
	if err != nil || q == nil {
		p.t.Fatalf("side B: ibv_create_qp_ex(XRC_RECV): qp=%v err=%v", q, err)
	}
	p.destroyLater(q)
	return &end{s: p.b, q: q, typ: verbs.QPTypeXRCRecv, o: o}
}

// destroyLater destroys q when the case ends.
func (p *xrcXfer) destroyLater(q verbs.QP) {
	p.t.Cleanup(func() {
		c, cancel := graceful()
		defer cancel()
		_ = q.DestroyContext(c)
	})
}

// connect creates an initiator on A and a target in p.d on B and brings
// both as far as their options say (RTS by default), each connected to the
// other.
func (p *xrcXfer) connect(oi, ot endOpts) (ini, tgt *end) {
	p.t.Helper()
	ot.sqpsn = oi.sqpsn + 1000
	ini, tgt = p.ini(oi), p.tgt(p.d, ot)
	p.bring(ini, tgt, oi.upTo)
	p.bring(tgt, ini, ot.upTo)
	return ini, tgt
}

// srq creates an XRC SRQ of 16 WRs in domain d, in side B's PD, with a CQ
// of its own; the completions it gives tgt's messages are receives.
func (p *xrcXfer) srq(d verbs.XRCD, tgt *end) xrcSRQ {
	p.t.Helper()
	r := xrcSRQ{cq: p.b.cq(64, nil)}
	var err error
	r.s, err = p.x.CreateSRQEx(verbs.SRQInitAttrEx{Attr: verbs.SRQAttr{MaxWR: uint32(min(16, p.lim.MaxSRQWR)), MaxSGE: 1},
		CompMask: verbs.SRQInitType | verbs.SRQInitPD | verbs.SRQInitXRCD | verbs.SRQInitCQ,
		Type:     verbs.SRQTXRC, PD: p.b.pd, XRCD: d, CQ: r.cq})
	if err != nil || r.s == nil {
		p.t.Fatalf("side B: ibv_create_srq_ex(XRC): %v", err)
	}
	p.t.Cleanup(func() {
		c, cancel := graceful()
		defer cancel()
		_ = r.s.DestroyContext(c)
	})
	g, ok := r.s.(verbs.SRQNumGetter)
	if !ok {
		p.t.Fatalf("an XRC SRQ has no ibv_get_srq_num (verbs.SRQNumGetter)")
	}
	if r.n, err = g.GetSRQNum(); err != nil {
		p.t.Fatalf("ibv_get_srq_num: %v", err)
	}
	if tgt != nil {
		p.queues[queueKey{r.cq, tgt.q.Num()}] = queueKinds{recv: true}
	}
	return r
}

// recvAt posts one receive of n bytes at offset off of side B's buffer to
// the SRQ.
func (r xrcSRQ) recvAt(p *xrcXfer, id uint64, off, n int) {
	p.t.Helper()
	if k, err := r.s.PostRecv([]verbs.RecvWR{{WRID: id, SGList: []verbs.SGE{p.b.sge(off, n)}}}); k != 1 || err != nil {
		p.t.Fatalf("ibv_post_srq_recv on an XRC SRQ: %d posted, %v", k, err)
	}
}

// xrcTo makes r a request for the XRC SRQ numbered srqn.
func xrcTo(r verbs.SendWR, srqn uint32) verbs.SendWR {
	r.RemoteSRQN = srqn
	return r
}

// wantXRCRecv checks an XRC SRQ's completion: wr_id id, success, n bytes,
// qp_num the target's and src_qp the initiator's (XRC-10).
func (p *xrcXfer) wantXRCRecv(what string, c verbs.WC, id uint64, n int, ini, tgt *end) {
	p.t.Helper()
	if c.WRID != id || c.Status != verbs.WCSuccess || c.ByteLen != uint32(n) || c.QPNum != tgt.q.Num() || c.SrcQP != ini.q.Num() {
		p.t.Errorf("%s: XRC SRQ completion {wr_id %d, %v, byte_len %d, qp_num %#x, src_qp %#x}, want {wr_id %d, success, byte_len %d, qp_num %#x (the target), src_qp %#x (the initiator)}",
			what, c.WRID, c.Status, c.ByteLen, c.QPNum, c.SrcQP, id, n, tgt.q.Num(), ini.q.Num())
	}
}

// xrcMaskStep is one transition of XRC-08: the attributes (every field
// valid), the mask it needs, and the bits it must refuse.
type xrcMaskStep struct {
	what   string
	a      verbs.QPAttr
	need   verbs.QPAttrMask
	forbid []verbs.QPAttrMask
}

// walkMasks takes x through steps: at each, the mask without one of its
// bits and the mask with a forbidden bit are EINVAL and leave the state,
// and the mask itself succeeds.
func (p *xrcXfer) walkMasks(x *end, steps []xrcMaskStep) {
	p.t.Helper()
	for _, st := range steps {
		before := x.state()
		what := fmt.Sprintf("%v %s", x.typ, st.what)
		for b := verbs.QPAttrMask(1); b != 0 && b <= st.need; b <<= 1 {
			if st.need&b == 0 || b == verbs.QPAttrState {
				continue
			}
			a := st.a
			p.e.WantErrno(fmt.Sprintf("%s without %v", what, b), x.q.Modify(&a, st.need&^b), syscall.EINVAL)
		}
		for _, f := range st.forbid {
			a := st.a
			p.e.WantErrno(fmt.Sprintf("%s with %v", what, f), x.q.Modify(&a, st.need|f), syscall.EINVAL)
		}
		if got := x.state(); got != before {
			p.t.Errorf("%s: refused modifies moved the QP from %v to %v", what, before, got)
		}
		a := st.a
		if err := x.q.Modify(&a, st.need); err != nil {
			p.t.Fatalf("%s with %v: %v", what, st.need, err)
		}
	}
}

// xrcQPCases are the cases of the XRC family about XRC QPs.
var xrcQPCases = []Case{
	{"XRC-06", "XRC QPs: an initiator in a PD without a receive side, a target in a domain with nothing of its own", xrcQPs},
	{"XRC-07", "post_recv on either XRC QP and post_send on a target are EINVAL", xrcPostRules},
	{"XRC-08", "XRC transitions: the initiator takes RC's requester attributes, the target RC's responder's", xrcTransitions},
	{"XRC-09", "an XRC initiator sends as RC does, each request naming its XRC SRQ (remote_srqn or ibv_wr_set_xrc_srqn)", xrcInitiatorSends},
	{"XRC-10", "a target delivers each message into the XRC SRQ its number names; a bad number is a remote access error", xrcTargetDelivers},
}

func xrcQPs(t *tester, e *env) {
	if _, ok := e.Ctx.(verbs.XRCOpener); !ok {
		t.Logf("not checked: the context has no XRC verbs (verbs.XRCOpener)")
		return
	}
	if e.Profile.NoXRC {
		pd, cq := e.pdAlloc(), e.CQ(4, nil, nil)
		for _, typ := range []verbs.QPType{verbs.QPTypeXRCSend, verbs.QPTypeXRCRecv} {
			q, err := pd.CreateQP(verbs.QPInitAttr{SendCQ: cq, RecvCQ: cq, Type: typ, Cap: verbs.QPCap{MaxSendWR: 1, MaxSendSGE: 1}})
			e.WantErrno(fmt.Sprintf("ibv_create_qp(%v) without XRC", typ), err, syscall.EOPNOTSUPP)
			if q != nil {
				_ = q.DestroyContext(context.Background())
			}
		}
		return
	}
	w := xrcSetup(t, e)
	if w == nil {
		return
	}
	bg := context.Background()
	// The initiator needs a send CQ.
	q, err := w.pd.CreateQP(verbs.QPInitAttr{RecvCQ: w.cq, Type: verbs.QPTypeXRCSend, Cap: verbs.QPCap{MaxSendWR: 1, MaxSendSGE: 1}})
	e.WantErrno("ibv_create_qp(XRC_SEND) without a send CQ", err, syscall.EINVAL)
	if q != nil {
		_ = q.DestroyContext(bg)
	}
	// Its receive side is ignored: no capacity, and the receive CQ and
	// SRQ it was given are not held.
	rcq := e.CQ(4, nil, nil)
	basic, err := w.pd.CreateSRQ(verbs.SRQInitAttr{Attr: verbs.SRQAttr{MaxWR: 1, MaxSGE: 1}})
	if err != nil {
		t.Fatalf("ibv_create_srq: %v", err)
	}
	ini, err := w.pd.CreateQP(verbs.QPInitAttr{SendCQ: w.cq, RecvCQ: rcq, SRQ: basic, Type: verbs.QPTypeXRCSend,
		Cap: verbs.QPCap{MaxSendWR: 2, MaxSendSGE: 1, MaxRecvWR: 8, MaxRecvSGE: 1}})
	if err != nil || ini == nil {
		t.Fatalf("ibv_create_qp(XRC_SEND) asking for 8 receive WRs: %v", err)
	}
	defer func() { _ = ini.DestroyContext(bg) }()
	if _, ia, err := ini.Query(queryAll); err != nil {
		t.Errorf("ibv_query_qp(XRC_SEND): %v", err)
	} else if ia.Cap.MaxRecvWR != 0 || ia.Cap.MaxRecvSGE != 0 || ia.Cap.MaxSendWR < 2 || ia.Type != verbs.QPTypeXRCSend {
		t.Errorf("XRC_SEND asked for 8 receive WRs reports %v with %+v: want no receive capacity and at least 2 send WRs", ia.Type, ia.Cap)
	}
	e.WantOK("ibv_destroy_cq of the receive CQ given to an XRC_SEND QP", rcq.DestroyContext(bg))
	e.WantOK("ibv_destroy_srq of the SRQ given to an XRC_SEND QP", basic.DestroyContext(bg))

	// The target is made in a domain, and only there.
	d := w.open()
	for _, c := range []struct {
		what string
		attr verbs.QPInitAttrEx
		want syscall.Errno
	}{
		{"without IBV_QP_INIT_ATTR_XRCD", verbs.QPInitAttrEx{QPInitAttr: verbs.QPInitAttr{Type: verbs.QPTypeXRCRecv}}, syscall.EINVAL},
		{"of type RC", verbs.QPInitAttrEx{QPInitAttr: verbs.QPInitAttr{Type: verbs.QPTypeRC, SendCQ: w.cq, RecvCQ: w.cq, Cap: verbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}},
			CompMask: verbs.QPInitAttrXRCD}, syscall.EINVAL},
		{"of type XRC_SEND", verbs.QPInitAttrEx{QPInitAttr: verbs.QPInitAttr{Type: verbs.QPTypeXRCSend, SendCQ: w.cq, Cap: verbs.QPCap{MaxSendWR: 1, MaxSendSGE: 1}},
			CompMask: verbs.QPInitAttrXRCD}, syscall.EINVAL},
		{"with send_ops_flags", verbs.QPInitAttrEx{QPInitAttr: verbs.QPInitAttr{Type: verbs.QPTypeXRCRecv},
			CompMask: verbs.QPInitAttrXRCD | verbs.QPInitAttrSendOpsFlags, SendOpsFlags: verbs.QPExWithSend}, syscall.EOPNOTSUPP},
	} {
		q, err := d.CreateQP(c.attr)
		e.WantErrno("a QP in an XRC domain "+c.what, err, c.want)
		if q != nil {
			t.Errorf("a QP in an XRC domain %s was created", c.what)
			_ = q.DestroyContext(bg)
		}
	}
	q, err = w.pd.CreateQP(verbs.QPInitAttr{SendCQ: w.cq, RecvCQ: w.cq, Type: verbs.QPTypeXRCRecv, Cap: verbs.QPCap{MaxSendWR: 1, MaxSendSGE: 1}})
	e.WantErrno("ibv_create_qp(XRC_RECV) in a PD", err, syscall.EINVAL)
	if q != nil {
		_ = q.DestroyContext(bg)
	}
	// CQs and capacities are not read; the target reports none and has
	// no PD.
	cq2 := e.CQ(4, nil, nil)
	tgt, err := d.CreateQP(verbs.QPInitAttrEx{QPInitAttr: verbs.QPInitAttr{Type: verbs.QPTypeXRCRecv, SendCQ: cq2, RecvCQ: cq2,
		Cap: verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}}, CompMask: verbs.QPInitAttrXRCD})
	if err != nil || tgt == nil {
		t.Fatalf("ibv_create_qp_ex(XRC_RECV) in a domain: %v", err)
	}
	if tgt.Type() != verbs.QPTypeXRCRecv || tgt.PD() != nil {
		t.Errorf("the XRC_RECV QP: type %v, PD %v; want XRC_RECV and no PD", tgt.Type(), tgt.PD())
	}
	if _, ia, err := tgt.Query(queryAll); err != nil {
		t.Errorf("ibv_query_qp(XRC_RECV): %v", err)
	} else if ia.Cap != (verbs.QPCap{}) {
		t.Errorf("the XRC_RECV QP reports capacities %+v, want none", ia.Cap)
	}
	e.WantOK("ibv_destroy_cq of a CQ given to an XRC_RECV QP", cq2.DestroyContext(bg))
	// The target holds its domain.
	e.WantErrno("ibv_close_xrcd with a target QP", d.Close(), syscall.EBUSY)
	e.WantOK("ibv_destroy_qp(XRC_RECV)", tgt.DestroyContext(bg))
	e.WantOK("ibv_close_xrcd after its target QP", d.Close())
}

func xrcPostRules(t *tester, e *env) {
	p := xrcXferSetup(t, e)
	if p == nil {
		return
	}
	ini, tgt := p.connect(p.opts(), p.opts())
	rw := []verbs.RecvWR{{WRID: 1, SGList: []verbs.SGE{p.b.sge(0, 8)}}}
	for _, x := range []*end{ini, tgt} {
		n, err := x.q.PostRecv(rw)
		e.WantErrno(fmt.Sprintf("ibv_post_recv on %v in RTS", x.typ), err, syscall.EINVAL)
		if n != 0 {
			t.Errorf("ibv_post_recv on %v: %d posted, want 0", x.typ, n)
		}
	}
	n, err := tgt.q.PostSend([]verbs.SendWR{sendWR(2, verbs.WRSend, p.b.sge(0, 8))})
	e.WantErrno("ibv_post_send on XRC_RECV in RTS", err, syscall.EINVAL)
	if n != 0 {
		t.Errorf("ibv_post_send on XRC_RECV: %d posted, want 0", n)
	}
	for _, x := range []*end{ini, tgt} {
		if o, ok := x.q.(Outstander); ok {
			if s, r := o.Outstanding(); s != 0 || r != 0 {
				t.Errorf("%v after the refused posts: %d send and %d receive requests outstanding, want none", x.typ, s, r)
			}
		}
	}
	p.quiet(ini.scq, "the initiator after the refused posts")
}

func xrcTransitions(t *tester, e *env) {
	p := xrcXferSetup(t, e)
	if p == nil {
		return
	}
	o := p.opts()
	ini, tgt := p.ini(o), p.tgt(p.d, o)
	access := verbs.AccessRemoteWrite | verbs.AccessRemoteRead | verbs.AccessRemoteAtomic
	init := verbs.QPAttr{QPState: verbs.QPStateInit, PortNum: 1, QPAccessFlags: access}
	initMask := verbs.QPAttrState | verbs.QPAttrPKeyIndex | verbs.QPAttrPort | verbs.QPAttrAccessFlags
	rtr := func(peer *end) verbs.QPAttr {
		return verbs.QPAttr{QPState: verbs.QPStateRTR, AHAttr: avTo(peer.s, false),
			PathMTU: min(verbs.MTU1024, p.a.port.ActiveMTU, p.b.port.ActiveMTU), DestQPNum: peer.q.Num(), RQPSN: 0x100,
			MaxDestRDAtomic: o.destRdAtomic, MinRNRTimer: o.minRNR}
	}
	rts := verbs.QPAttr{QPState: verbs.QPStateRTS, SQPSN: 0x100, Timeout: o.timeout, RetryCnt: o.retry, RNRRetry: o.rnrRetry, MaxRDAtomic: o.rdAtomic}
	connect := verbs.QPAttrState | verbs.QPAttrAV | verbs.QPAttrPathMTU | verbs.QPAttrDestQPN | verbs.QPAttrRQPSN
	responder := verbs.QPAttrMaxDestRDAtomic | verbs.QPAttrMinRNRTimer
	requester := verbs.QPAttrTimeout | verbs.QPAttrRetryCnt | verbs.QPAttrRNRRetry | verbs.QPAttrMaxQPRDAtomic
	p.walkMasks(ini, []xrcMaskStep{
		{"RESET→INIT", init, initMask, nil},
		{"INIT→RTR", rtr(tgt), connect, []verbs.QPAttrMask{verbs.QPAttrMinRNRTimer, verbs.QPAttrMaxDestRDAtomic}},
		{"RTR→RTS", rts, verbs.QPAttrState | verbs.QPAttrSQPSN | requester, []verbs.QPAttrMask{verbs.QPAttrMinRNRTimer, verbs.QPAttrMaxDestRDAtomic}},
	})
	p.walkMasks(tgt, []xrcMaskStep{
		{"RESET→INIT", init, initMask, nil},
		{"INIT→RTR", rtr(ini), connect | responder, []verbs.QPAttrMask{verbs.QPAttrRetryCnt, verbs.QPAttrRNRRetry, verbs.QPAttrMaxQPRDAtomic}},
		{"RTR→RTS", rts, verbs.QPAttrState | verbs.QPAttrSQPSN | verbs.QPAttrTimeout, []verbs.QPAttrMask{verbs.QPAttrRetryCnt, verbs.QPAttrRNRRetry, verbs.QPAttrMaxQPRDAtomic}},
	})
	ini.wantState("after the walk", verbs.QPStateRTS)
	tgt.wantState("after the walk", verbs.QPStateRTS)
}

func xrcInitiatorSends(t *tester, e *env) {
	p := xrcXferSetup(t, e)
	if p == nil {
		return
	}
	ini, tgt := p.connect(p.opts(), p.opts())
	r := p.srq(p.d, tgt)
	// SEND.
	msg := message(ini.s, 0, 100, 1)
	r.recvAt(p, 11, 0, 256)
	ini.post("an XRC SEND", xrcTo(sendWR(1, verbs.WRSend, ini.s.sge(0, 100)), r.n))
	ini.want("an XRC SEND", p.await(ini.scq, 1, "an XRC SEND")[0], 1, verbs.WCSuccess)
	p.wantXRCRecv("an XRC SEND", p.await(r.cq, 1, "an XRC SEND: the SRQ's CQ")[0], 11, 100, ini, tgt)
	if !bytes.Equal(p.b.buf[:100], msg) {
		t.Errorf("an XRC SEND: the bytes placed differ from the message")
	}
	// RDMA WRITE and READ (the target is checked against the SRQ's PD).
	msg = message(ini.s, 1024, 64, 2)
	ini.post("an XRC RDMA WRITE", xrcTo(rdmaWR(2, verbs.WRRDMAWrite, p.b, 4096, ini.s.sge(1024, 64)), r.n))
	ini.want("an XRC RDMA WRITE", p.await(ini.scq, 1, "an XRC RDMA WRITE")[0], 2, verbs.WCSuccess)
	if !bytes.Equal(p.b.buf[4096:4096+64], msg) {
		t.Errorf("an XRC RDMA WRITE: the bytes written differ from the message")
	}
	fill(p.b.buf[8192:8192+64], 9)
	ini.post("an XRC RDMA READ", xrcTo(rdmaWR(3, verbs.WRRDMARead, p.b, 8192, ini.s.sge(2048, 64)), r.n))
	ini.want("an XRC RDMA READ", p.await(ini.scq, 1, "an XRC RDMA READ")[0], 3, verbs.WCSuccess)
	if !bytes.Equal(ini.s.buf[2048:2048+64], p.b.buf[8192:8192+64]) {
		t.Errorf("an XRC RDMA READ: the bytes read differ from the remote buffer")
	}
	p.quiet(r.cq, "the SRQ's CQ after an RDMA WRITE and READ")

	// The builder: ibv_wr_set_xrc_srqn names the SRQ.
	if _, ok := p.a.pd.(verbs.QPExCreator); !ok {
		t.Logf("builder not checked: the PD has no ibv_create_qp_ex (verbs.QPExCreator)")
		return
	}
	ob := p.opts()
	ob.sendOps = verbs.QPExWithSend | verbs.QPExWithRDMAWrite
	bi, bt := p.connect(ob, p.opts())
	wb, ok := bi.q.(verbs.WRBuilder)
	if !ok {
		t.Errorf("an XRC_SEND QP created with send_ops_flags has no builder (verbs.WRBuilder)")
		return
	}
	p.queues[queueKey{r.cq, bt.q.Num()}] = queueKinds{recv: true}
	msg = message(bi.s, 3072, 40, 3)
	r.recvAt(p, 12, 512, 64)
	wb.WRStart()
	wb.SetWRID(4)
	wb.SetWRFlags(verbs.SendSignaled)
	wb.WRSend()
	wb.WRSetXRCSRQN(r.n)
	wb.WRSetSGE(bi.s.mr.LKey(), bi.s.addr(3072), 40)
	e.WantOK("ibv_wr_complete of a SEND with ibv_wr_set_xrc_srqn", wb.WRComplete())
	bi.want("a builder XRC SEND", p.await(bi.scq, 1, "a builder XRC SEND")[0], 4, verbs.WCSuccess)
	p.wantXRCRecv("a builder XRC SEND", p.await(r.cq, 1, "a builder XRC SEND: the SRQ's CQ")[0], 12, 40, bi, bt)
	if !bytes.Equal(p.b.buf[512:512+40], msg) {
		t.Errorf("a builder XRC SEND: the bytes placed differ from the message")
	}
}

func xrcTargetDelivers(t *tester, e *env) {
	p := xrcXferSetup(t, e)
	if p == nil {
		return
	}
	ini, tgt := p.connect(p.opts(), p.opts())
	r1, r2 := p.srq(p.d, tgt), p.srq(p.d, tgt)
	// Two SRQs, two SENDs: each lands on its own SRQ and CQ.
	r1.recvAt(p, 11, 0, 256)
	r2.recvAt(p, 21, 1024, 256)
	m2 := message(ini.s, 0, 30, 4)
	m1 := message(ini.s, 512, 50, 5)
	ini.post("SENDs to two SRQs", xrcTo(sendWR(1, verbs.WRSend, ini.s.sge(0, 30)), r2.n), xrcTo(sendWR(2, verbs.WRSend, ini.s.sge(512, 50)), r1.n))
	got := p.await(ini.scq, 2, "SENDs to two SRQs")
	ini.want("the SEND to the second SRQ", got[0], 1, verbs.WCSuccess)
	ini.want("the SEND to the first SRQ", got[1], 2, verbs.WCSuccess)
	p.wantXRCRecv("the second SRQ", p.await(r2.cq, 1, "the second SRQ's CQ")[0], 21, 30, ini, tgt)
	p.wantXRCRecv("the first SRQ", p.await(r1.cq, 1, "the first SRQ's CQ")[0], 11, 50, ini, tgt)
	if !bytes.Equal(p.b.buf[1024:1024+30], m2) || !bytes.Equal(p.b.buf[:50], m1) {
		t.Errorf("SENDs to two SRQs: the bytes placed differ from the messages")
	}
	// An empty SRQ: RNR NAKs until a receive comes.
	m1 = message(ini.s, 0, 20, 6)
	ini.post("a SEND to an empty XRC SRQ", xrcTo(sendWR(3, verbs.WRSend, ini.s.sge(0, 20)), r1.n))
	p.pause(5_000_000)
	p.noneYet(ini.scq, "a SEND to an empty XRC SRQ, before the receive")
	r1.recvAt(p, 12, 2048, 256)
	ini.want("a SEND to an empty XRC SRQ", p.await(ini.scq, 1, "a SEND to an empty XRC SRQ")[0], 3, verbs.WCSuccess)
	p.wantXRCRecv("the late receive", p.await(r1.cq, 1, "the late receive")[0], 12, 20, ini, tgt)
	if !bytes.Equal(p.b.buf[2048:2048+20], m1) {
		t.Errorf("a SEND after RNR: the bytes placed differ from the message")
	}
	p.quiet(r2.cq, "the second SRQ's CQ")

	// A number naming no XRC SRQ, and one of another domain.
	other := p.domain()
	var keep []xrcSRQ // SRQs that must keep their receives
	for _, c := range []struct {
		what string
		srqn func(good xrcSRQ) uint32
	}{
		{"a number naming no XRC SRQ", func(good xrcSRQ) uint32 {
			n := uint32(0xfffffe)
			for n == good.n || n == r1.n || n == r2.n {
				n--
			}
			return n
		}},
		{"an XRC SRQ of another domain", func(xrcSRQ) uint32 {
			s := p.srq(other, nil)
			s.recvAt(p, 99, 0, 64)
			keep = append(keep, s)
			return s.n
		}},
	} {
		ini, tgt := p.connect(p.opts(), p.opts())
		good := p.srq(p.d, tgt)
		good.recvAt(p, 7, 0, 64)
		bad := c.srqn(good)
		ini.post(c.what, xrcTo(sendWR(5, verbs.WRSend, ini.s.sge(0, 8)), bad))
		ini.want(c.what, p.await(ini.scq, 1, c.what)[0], 5, verbs.WCRemAccessErr)
		ini.wantState(c.what, verbs.QPStateErr)
		tgt.wantState(c.what, verbs.QPStateErr)
		if n := eventsAbout(p.b.events(), verbs.EventQPAccessErr, tgt.q); n != 1 {
			t.Errorf("%s: %d IBV_EVENT_QP_ACCESS_ERR for the target, want 1", c.what, n)
		}
		for _, s := range append(keep, good) {
			p.quiet(s.cq, c.what+": an SRQ's CQ")
			if d, ok := s.s.(Depth); ok && d.Len() != 1 {
				t.Errorf("%s: an XRC SRQ holds %d receives, want its 1", c.what, d.Len())
			}
		}
		keep = nil
	}
}
