package conformance

import (
	"bytes"
	"context"
	"fmt"
	"syscall"

	"github.com/verbsim/verbsim/verbs"
)

// xrcdFDOFlags is IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS.
const xrcdFDOFlags = verbs.XRCDInitFD | verbs.XRCDInitOFlags

// openXRCD is ibv_open_xrcd with struct ibv_xrcd_init_attr's comp_mask, fd
// and oflags.
func openXRCD(x verbs.XRCOpener, mask verbs.XRCDInitMask, fd, oflags int) (XRCD, error) {
	return x.OpenXRCD(verbs.XRCDInitAttr{CompMask: mask, FD: fd, OFlags: oflags})
}

// xrcWorld is what the XRC cases work with: the context's XRCOpener, a PD
// and a CQ.
type xrcWorld struct {
	e  *Env
	x  verbs.XRCOpener
	pd PD
	cq CQ
}

// xrcSetup returns the world, or nil (having logged why) when the device
// has no XRC verbs or its profile says it refuses them (XRC-03 checks that).
func xrcSetup(t *T, e *Env) *xrcWorld {
	t.Helper()
	x := xrcUsable(t, e)
	if x == nil {
		return nil
	}
	return &xrcWorld{e: e, x: x, pd: e.pdAlloc(), cq: e.CQ(4, nil, nil)}
}

// xrcUsable returns the context's XRC verbs, or nil (having logged why)
// when the device has none, its profile says it refuses them, or it has no
// SRQs.
func xrcUsable(t *T, e *Env) verbs.XRCOpener {
	t.Helper()
	x, ok := e.Ctx.(verbs.XRCOpener)
	switch {
	case !ok:
		t.Logf("not checked: the context has no XRC verbs (verbs.XRCOpener)")
		return nil
	case e.Profile.NoXRC:
		t.Logf("not checked: the profile has no XRC (XRC-03)")
		return nil
	case e.Limits().MaxSRQWR == 0:
		t.Logf("not checked: the device has no SRQs")
		return nil
	}
	return x
}

// open opens a domain with fd -1 or fails the case; it is closed when the
// case ends unless the case closed it.
func (w *xrcWorld) open() XRCD {
	w.e.T.Helper()
	d, err := openXRCD(w.x, xrcdFDOFlags, -1, 0)
	if err != nil || d == nil {
		w.e.T.Fatalf("ibv_open_xrcd(fd -1): %v", err)
	}
	w.e.T.Cleanup(func() { _ = d.Close() })
	return d
}

// xrcAttr returns the arguments of a good XRC SRQ in d.
func (w *xrcWorld) xrcAttr(d XRCD) verbs.SRQInitAttrEx {
	return verbs.SRQInitAttrEx{Attr: verbs.SRQAttr{MaxWR: 4, MaxSGE: 1}, CompMask: verbs.SRQInitType | verbs.SRQInitPD | verbs.SRQInitXRCD | verbs.SRQInitCQ,
		Type: verbs.SRQTXRC, PD: w.pd, XRCD: d, CQ: w.cq}
}

// srq creates an SRQ or fails the case; it is destroyed when the case ends
// unless the case destroyed it.
func (w *xrcWorld) srq(a verbs.SRQInitAttrEx) SRQ {
	w.e.T.Helper()
	s, err := w.x.CreateSRQEx(a)
	if err != nil || s == nil {
		w.e.T.Fatalf("ibv_create_srq_ex(%+v): %v", a, err)
	}
	w.e.T.Cleanup(func() { _ = s.DestroyContext(context.Background()) })
	return s
}

// xrcCases are the cases of the XRC family in xrc.go.
var xrcCases = []Case{
	{"XRC-01", "ibv_open_xrcd checks comp_mask and fd; fd -1 opens a new domain", openXRCDArgs},
	{"XRC-02", "ibv_close_xrcd is EBUSY while an XRC SRQ is in the domain; twice is EINVAL", closeXRCD},
	{"XRC-03", "without XRC, open_xrcd and an XRC SRQ are EOPNOTSUPP; a basic create_srq_ex works", noXRC},
	{"XRC-04", "ibv_create_srq_ex checks comp_mask, srq_type and the objects named", createSRQEx},
	{"XRC-05", "an XRC SRQ has a number, receives, and holds its PD, XRCD and CQ", xrcSRQHoldsObjects},
}

func openXRCDArgs(t *T, e *Env) {
	w := xrcSetup(t, e)
	if w == nil {
		return
	}
	for _, c := range []struct {
		what   string
		mask   verbs.XRCDInitMask
		fd     int
		oflags int
		want   syscall.Errno
	}{
		{"comp_mask 0", 0, -1, 0, syscall.EINVAL},
		{"comp_mask FD alone", 1 << 0, -1, 0, syscall.EINVAL},
		{"comp_mask OFLAGS alone", 1 << 1, -1, 0, syscall.EINVAL},
		{"comp_mask with the reserved bit", xrcdFDOFlags | 1<<2, -1, 0, syscall.EOPNOTSUPP},
		{"comp_mask bit 31 alone", 1 << 31, -1, 0, syscall.EOPNOTSUPP},
		// A descriptor no process has open: EBADF from the kernel
		// (fdget fails) and from the simulator, which has no files.
		{"a closed fd with O_CREAT", xrcdFDOFlags, 1 << 30, syscall.O_CREAT, syscall.EBADF},
		{"fd -2", xrcdFDOFlags, -2, 0, syscall.EBADF},
	} {
		d, err := openXRCD(w.x, c.mask, c.fd, c.oflags)
		e.WantErrno("ibv_open_xrcd with "+c.what, err, c.want)
		if d != nil {
			t.Errorf("ibv_open_xrcd with %s returned a domain", c.what)
			_ = d.Close()
		}
	}
	d1, err := openXRCD(w.x, xrcdFDOFlags, -1, syscall.O_CREAT)
	e.WantOK("ibv_open_xrcd(fd -1, O_CREAT)", err)
	d2, err := openXRCD(w.x, xrcdFDOFlags, -1, syscall.O_CREAT|syscall.O_EXCL)
	e.WantOK("a second ibv_open_xrcd(fd -1, O_CREAT|O_EXCL)", err)
	if d1 == nil || d2 == nil {
		return
	}
	if d1 == d2 {
		t.Errorf("two opens with fd -1 returned the same domain")
	}
	e.WantOK("ibv_close_xrcd", d1.Close())
	e.WantOK("ibv_close_xrcd of the second", d2.Close())
}

func closeXRCD(t *T, e *Env) {
	w := xrcSetup(t, e)
	if w == nil {
		return
	}
	d := w.open()
	s := w.srq(w.xrcAttr(d))
	e.WantErrno("ibv_close_xrcd with an XRC SRQ", d.Close(), syscall.EBUSY)
	// The domain still works after the refused close.
	s2 := w.srq(w.xrcAttr(d))
	e.WantOK("ibv_destroy_srq", s.DestroyContext(context.Background()))
	e.WantErrno("ibv_close_xrcd with one XRC SRQ left", d.Close(), syscall.EBUSY)
	e.WantOK("ibv_destroy_srq of the second", s2.DestroyContext(context.Background()))
	e.WantOK("ibv_close_xrcd after its SRQs", d.Close())
	e.WantErrno("ibv_close_xrcd twice", d.Close(), syscall.EINVAL)
	_, err := w.x.CreateSRQEx(w.xrcAttr(d))
	e.WantErrno("an XRC SRQ in a closed domain", err, syscall.EINVAL)
}

func noXRC(t *T, e *Env) {
	x, ok := e.Ctx.(verbs.XRCOpener)
	if !ok {
		t.Logf("not checked: the context has no XRC verbs (verbs.XRCOpener)")
		return
	}
	if e.Limits().MaxSRQWR == 0 {
		t.Logf("not checked: the device has no SRQs")
		return
	}
	pd, cq := e.pdAlloc(), e.CQ(4, nil, nil)
	d, err := openXRCD(x, xrcdFDOFlags, -1, 0)
	if d != nil {
		defer func() { _ = d.Close() }()
	}
	basic, berr := x.CreateSRQEx(verbs.SRQInitAttrEx{Attr: verbs.SRQAttr{MaxWR: 1}, CompMask: verbs.SRQInitPD | verbs.SRQInitType, Type: verbs.SRQTBasic, PD: pd})
	e.WantOK("a basic SRQ through ibv_create_srq_ex", berr)
	if basic != nil {
		defer func() { _ = basic.DestroyContext(context.Background()) }()
	}
	if !e.Profile.NoXRC {
		e.WantOK("ibv_open_xrcd on a device with XRC", err)
		return
	}
	e.WantErrno("ibv_open_xrcd without XRC", err, syscall.EOPNOTSUPP)
	s, err := x.CreateSRQEx(verbs.SRQInitAttrEx{Attr: verbs.SRQAttr{MaxWR: 1}, CompMask: verbs.SRQInitPD | verbs.SRQInitType | verbs.SRQInitXRCD | verbs.SRQInitCQ, Type: verbs.SRQTXRC, PD: pd, CQ: cq})
	e.WantErrno("an XRC SRQ without XRC", err, syscall.EOPNOTSUPP)
	if s != nil {
		_ = s.DestroyContext(context.Background())
	}
	s, err = x.CreateSRQEx(verbs.SRQInitAttrEx{Attr: verbs.SRQAttr{MaxWR: 1}, CompMask: verbs.SRQInitPD | verbs.SRQInitCQ, PD: pd, CQ: cq})
	e.WantErrno("a basic SRQ with the CQ bit without XRC", err, syscall.EOPNOTSUPP)
	if s != nil {
		_ = s.DestroyContext(context.Background())
	}
}

func createSRQEx(t *T, e *Env) {
	w := xrcSetup(t, e)
	if w == nil {
		return
	}
	d := w.open()
	closed, err := openXRCD(w.x, xrcdFDOFlags, -1, 0)
	e.WantOK("ibv_open_xrcd", err)
	if closed != nil {
		e.WantOK("ibv_close_xrcd", closed.Close())
	}
	deadCQ := e.CQ(4, nil, nil)
	e.WantOK("ibv_destroy_cq", deadCQ.DestroyContext(context.Background()))
	for _, c := range []struct {
		what string
		edit func(a *verbs.SRQInitAttrEx)
		want syscall.Errno
	}{
		{"the reserved comp_mask bit", func(a *verbs.SRQInitAttrEx) { a.CompMask |= 1 << 5 }, syscall.EOPNOTSUPP},
		{"IBV_SRQ_INIT_ATTR_TM", func(a *verbs.SRQInitAttrEx) { a.CompMask |= verbs.SRQInitTM }, syscall.EOPNOTSUPP},
		{"srq_type TM", func(a *verbs.SRQInitAttrEx) { a.Type = verbs.SRQTTM }, syscall.EOPNOTSUPP},
		{"srq_type 3", func(a *verbs.SRQInitAttrEx) { a.Type = 3 }, syscall.EINVAL},
		{"no PD bit", func(a *verbs.SRQInitAttrEx) { a.CompMask &^= verbs.SRQInitPD }, syscall.EINVAL},
		{"no XRCD bit", func(a *verbs.SRQInitAttrEx) { a.CompMask &^= verbs.SRQInitXRCD }, syscall.EINVAL},
		{"no CQ bit", func(a *verbs.SRQInitAttrEx) { a.CompMask &^= verbs.SRQInitCQ }, syscall.EINVAL},
		{"a nil PD", func(a *verbs.SRQInitAttrEx) { a.PD = nil }, syscall.EINVAL},
		{"a nil XRCD", func(a *verbs.SRQInitAttrEx) { a.XRCD = nil }, syscall.EINVAL},
		{"a nil CQ", func(a *verbs.SRQInitAttrEx) { a.CQ = nil }, syscall.EINVAL},
		{"a closed XRCD", func(a *verbs.SRQInitAttrEx) { a.XRCD = closed }, syscall.EINVAL},
		{"a destroyed CQ", func(a *verbs.SRQInitAttrEx) { a.CQ = deadCQ }, syscall.EINVAL},
		{"max_wr 0", func(a *verbs.SRQInitAttrEx) { a.Attr.MaxWR = 0 }, syscall.EINVAL},
		{"max_wr above max_srq_wr", func(a *verbs.SRQInitAttrEx) { a.Attr.MaxWR = uint32(e.Limits().MaxSRQWR) + 1 }, syscall.EINVAL},
	} {
		a := w.xrcAttr(d)
		c.edit(&a)
		s, err := w.x.CreateSRQEx(a)
		e.WantErrno("ibv_create_srq_ex with "+c.what, err, c.want)
		if s != nil {
			t.Errorf("ibv_create_srq_ex with %s returned an SRQ", c.what)
			_ = s.DestroyContext(context.Background())
		}
	}
	// A basic SRQ: xrcd and cq are not read.
	basic := w.srq(verbs.SRQInitAttrEx{Attr: verbs.SRQAttr{MaxWR: 2, MaxSGE: 1}, CompMask: verbs.SRQInitPD | verbs.SRQInitType | verbs.SRQInitXRCD | verbs.SRQInitCQ, Type: verbs.SRQTBasic, PD: w.pd})
	if g, ok := basic.(verbs.SRQNumGetter); ok {
		_, err := g.GetSRQNum()
		e.WantErrno("ibv_get_srq_num on a basic SRQ made by ibv_create_srq_ex", err, syscall.EOPNOTSUPP)
	}
	e.WantOK("ibv_close_xrcd with only a basic SRQ made beside it", d.Close())
}

func xrcSRQHoldsObjects(t *T, e *Env) {
	w := xrcSetup(t, e)
	if w == nil {
		return
	}
	d := w.open()
	s1, s2 := w.srq(w.xrcAttr(d)), w.srq(w.xrcAttr(d))
	g1, ok1 := s1.(verbs.SRQNumGetter)
	g2, ok2 := s2.(verbs.SRQNumGetter)
	if !ok1 || !ok2 {
		t.Errorf("an XRC SRQ has no ibv_get_srq_num (conformance.SRQNumGetter)")
		return
	}
	n1, err1 := g1.GetSRQNum()
	n2, err2 := g2.GetSRQNum()
	again, err3 := g1.GetSRQNum()
	e.WantOK("ibv_get_srq_num", err1)
	e.WantOK("ibv_get_srq_num of the second", err2)
	e.WantOK("ibv_get_srq_num again", err3)
	if n1 == 0 || n2 == 0 || n1 == n2 || again != n1 || n1 > 0xffffff || n2 > 0xffffff {
		t.Errorf("XRC SRQ numbers %#x and %#x (then %#x): want distinct, non-zero, 24-bit and stable", n1, n2, again)
	}
	if n, err := s1.PostRecv(nil); n != 0 || err != nil {
		t.Errorf("an empty post: %d, %v", n, err)
	}
	a, err := s1.Query()
	e.WantOK("ibv_query_srq of an XRC SRQ", err)
	if a.MaxWR < 4 {
		t.Errorf("XRC SRQ max_wr %d, asked for 4", a.MaxWR)
	}
	q, err := w.pd.CreateQP(QPInitAttr{SendCQ: w.cq, RecvCQ: w.cq, SRQ: s1, Type: verbs.QPTypeRC,
		Cap: verbs.QPCap{MaxSendWR: 1, MaxSendSGE: 1}})
	e.WantErrno("ibv_create_qp with an XRC SRQ as its srq", err, syscall.EINVAL)
	if q != nil {
		_ = q.DestroyContext(context.Background())
	}
	e.WantErrno("ibv_destroy_cq of an XRC SRQ's CQ", w.cq.DestroyContext(context.Background()), syscall.EBUSY)
	e.WantErrno("ibv_dealloc_pd of an XRC SRQ's PD", w.pd.Dealloc(), syscall.EBUSY)
	e.WantOK("ibv_destroy_srq", s1.DestroyContext(context.Background()))
	e.WantOK("ibv_destroy_srq of the second", s2.DestroyContext(context.Background()))
	e.WantOK("ibv_destroy_cq after its XRC SRQs", w.cq.DestroyContext(context.Background()))
}

// The XRC QPs (XRC-06..10). The transport cases put the initiators
// (XRC_SEND) on side A of a transport world (xfer_util.go) and the domain,
// its XRC SRQs and the targets (XRC_RECV) on side B.

// xrcXfer is a transport world with an XRC domain on side B.
type xrcXfer struct {
	*xWorld
	x verbs.XRCOpener // side B's context
	d XRCD
}

// xrcSRQ is an XRC SRQ of side B with its own CQ and its number.
type xrcSRQ struct {
	s  SRQ
	cq CQ
	n  uint32
}

// xrcXferSetup returns the world, or nil (having logged why) when the
// device has no XRC (xrcUsable).
func xrcXferSetup(t *T, e *Env) *xrcXfer {
	t.Helper()
	if xrcUsable(t, e) == nil {
		return nil
	}
	w := xSetup(t, e)
	x, ok := w.b.ctx.(verbs.XRCOpener)
	if !ok {
		t.Logf("not checked: the peer context has no XRC verbs (verbs.XRCOpener)")
		return nil
	}
	p := &xrcXfer{xWorld: w, x: x}
	p.d = p.domain()
	return p
}

// domain opens a domain on side B, closed at the end.
func (p *xrcXfer) domain() XRCD {
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
func (p *xrcXfer) ini(o xOpts) *xEnd {
	p.t.Helper()
	x := &xEnd{s: p.a, typ: verbs.QPTypeXRCSend, o: o, scq: o.sendCQ}
	if x.scq == nil {
		x.scq = p.a.cq(o.scqe, o.sendCh)
	}
	attr := QPInitAttr{Type: verbs.QPTypeXRCSend, Cap: o.cap, SendCQ: x.scq, SQSigAll: o.sigAll}
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
	p.queues[xQueueKey{x.scq, x.q.Num()}] = xQueues{send: true}
	return x
}

// tgt creates an XRC_RECV QP in the domain d of side B, in RESET.
func (p *xrcXfer) tgt(d XRCD, o xOpts) *xEnd {
	p.t.Helper()
	q, err := d.CreateQP(verbs.QPInitAttrEx{QPInitAttr: QPInitAttr{Type: verbs.QPTypeXRCRecv}, CompMask: verbs.QPInitAttrXRCD})
	if err != nil || q == nil {
		p.t.Fatalf("side B: ibv_create_qp_ex(XRC_RECV): qp=%v err=%v", q, err)
	}
	p.destroyLater(q)
	return &xEnd{s: p.b, q: q, typ: verbs.QPTypeXRCRecv, o: o}
}

// destroyLater destroys q when the case ends.
func (p *xrcXfer) destroyLater(q QP) {
	p.t.Cleanup(func() {
		c, cancel := graceful()
		defer cancel()
		_ = q.DestroyContext(c)
	})
}

// connect creates an initiator on A and a target in p.d on B and brings
// both as far as their options say (RTS by default), each connected to the
// other.
func (p *xrcXfer) connect(oi, ot xOpts) (ini, tgt *xEnd) {
	p.t.Helper()
	ot.sqpsn = oi.sqpsn + 1000
	ini, tgt = p.ini(oi), p.tgt(p.d, ot)
	p.bring(ini, tgt, oi.upTo)
	p.bring(tgt, ini, ot.upTo)
	return ini, tgt
}

// srq creates an XRC SRQ of 16 WRs in domain d, in side B's PD, with a CQ
// of its own; the completions it gives tgt's messages are receives.
func (p *xrcXfer) srq(d XRCD, tgt *xEnd) xrcSRQ {
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
		p.queues[xQueueKey{r.cq, tgt.q.Num()}] = xQueues{recv: true}
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
func (p *xrcXfer) wantXRCRecv(what string, c verbs.WC, id uint64, n int, ini, tgt *xEnd) {
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
func (p *xrcXfer) walkMasks(x *xEnd, steps []xrcMaskStep) {
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

// xrcQPCases are the cases of the XRC family about XRC QPs in xrc.go.
var xrcQPCases = []Case{
	{"XRC-06", "XRC QPs: an initiator in a PD without a receive side, a target in a domain with nothing of its own", xrcQPs},
	{"XRC-07", "post_recv on either XRC QP and post_send on a target are EINVAL", xrcPostRules},
	{"XRC-08", "XRC transitions: the initiator takes RC's requester attributes, the target RC's responder's", xrcTransitions},
	{"XRC-09", "an XRC initiator sends as RC does, each request naming its XRC SRQ (remote_srqn or ibv_wr_set_xrc_srqn)", xrcInitiatorSends},
	{"XRC-10", "a target delivers each message into the XRC SRQ its number names; a bad number is a remote access error", xrcTargetDelivers},
}

func xrcQPs(t *T, e *Env) {
	if _, ok := e.Ctx.(verbs.XRCOpener); !ok {
		t.Logf("not checked: the context has no XRC verbs (verbs.XRCOpener)")
		return
	}
	if e.Profile.NoXRC {
		pd, cq := e.pdAlloc(), e.CQ(4, nil, nil)
		for _, typ := range []verbs.QPType{verbs.QPTypeXRCSend, verbs.QPTypeXRCRecv} {
			q, err := pd.CreateQP(QPInitAttr{SendCQ: cq, RecvCQ: cq, Type: typ, Cap: verbs.QPCap{MaxSendWR: 1, MaxSendSGE: 1}})
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
	q, err := w.pd.CreateQP(QPInitAttr{RecvCQ: w.cq, Type: verbs.QPTypeXRCSend, Cap: verbs.QPCap{MaxSendWR: 1, MaxSendSGE: 1}})
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
	ini, err := w.pd.CreateQP(QPInitAttr{SendCQ: w.cq, RecvCQ: rcq, SRQ: basic, Type: verbs.QPTypeXRCSend,
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
		{"without IBV_QP_INIT_ATTR_XRCD", verbs.QPInitAttrEx{QPInitAttr: QPInitAttr{Type: verbs.QPTypeXRCRecv}}, syscall.EINVAL},
		{"of type RC", verbs.QPInitAttrEx{QPInitAttr: QPInitAttr{Type: verbs.QPTypeRC, SendCQ: w.cq, RecvCQ: w.cq, Cap: verbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}},
			CompMask: verbs.QPInitAttrXRCD}, syscall.EINVAL},
		{"of type XRC_SEND", verbs.QPInitAttrEx{QPInitAttr: QPInitAttr{Type: verbs.QPTypeXRCSend, SendCQ: w.cq, Cap: verbs.QPCap{MaxSendWR: 1, MaxSendSGE: 1}},
			CompMask: verbs.QPInitAttrXRCD}, syscall.EINVAL},
		{"with send_ops_flags", verbs.QPInitAttrEx{QPInitAttr: QPInitAttr{Type: verbs.QPTypeXRCRecv},
			CompMask: verbs.QPInitAttrXRCD | verbs.QPInitAttrSendOpsFlags, SendOpsFlags: verbs.QPExWithSend}, syscall.EOPNOTSUPP},
	} {
		q, err := d.CreateQP(c.attr)
		e.WantErrno("a QP in an XRC domain "+c.what, err, c.want)
		if q != nil {
			t.Errorf("a QP in an XRC domain %s was created", c.what)
			_ = q.DestroyContext(bg)
		}
	}
	q, err = w.pd.CreateQP(QPInitAttr{SendCQ: w.cq, RecvCQ: w.cq, Type: verbs.QPTypeXRCRecv, Cap: verbs.QPCap{MaxSendWR: 1, MaxSendSGE: 1}})
	e.WantErrno("ibv_create_qp(XRC_RECV) in a PD", err, syscall.EINVAL)
	if q != nil {
		_ = q.DestroyContext(bg)
	}
	// CQs and capacities are not read; the target reports none and has
	// no PD.
	cq2 := e.CQ(4, nil, nil)
	tgt, err := d.CreateQP(verbs.QPInitAttrEx{QPInitAttr: QPInitAttr{Type: verbs.QPTypeXRCRecv, SendCQ: cq2, RecvCQ: cq2,
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

func xrcPostRules(t *T, e *Env) {
	p := xrcXferSetup(t, e)
	if p == nil {
		return
	}
	ini, tgt := p.connect(p.opts(), p.opts())
	rw := []verbs.RecvWR{{WRID: 1, SGList: []verbs.SGE{p.b.sge(0, 8)}}}
	for _, x := range []*xEnd{ini, tgt} {
		n, err := x.q.PostRecv(rw)
		e.WantErrno(fmt.Sprintf("ibv_post_recv on %v in RTS", x.typ), err, syscall.EINVAL)
		if n != 0 {
			t.Errorf("ibv_post_recv on %v: %d posted, want 0", x.typ, n)
		}
	}
	n, err := tgt.q.PostSend([]verbs.SendWR{xSend(2, verbs.WRSend, p.b.sge(0, 8))})
	e.WantErrno("ibv_post_send on XRC_RECV in RTS", err, syscall.EINVAL)
	if n != 0 {
		t.Errorf("ibv_post_send on XRC_RECV: %d posted, want 0", n)
	}
	for _, x := range []*xEnd{ini, tgt} {
		if o, ok := x.q.(Outstander); ok {
			if s, r := o.Outstanding(); s != 0 || r != 0 {
				t.Errorf("%v after the refused posts: %d send and %d receive requests outstanding, want none", x.typ, s, r)
			}
		}
	}
	p.quiet(ini.scq, "the initiator after the refused posts")
}

func xrcTransitions(t *T, e *Env) {
	p := xrcXferSetup(t, e)
	if p == nil {
		return
	}
	o := p.opts()
	ini, tgt := p.ini(o), p.tgt(p.d, o)
	access := verbs.AccessRemoteWrite | verbs.AccessRemoteRead | verbs.AccessRemoteAtomic
	init := verbs.QPAttr{QPState: verbs.QPStateInit, PortNum: 1, QPAccessFlags: access}
	initMask := verbs.QPAttrState | verbs.QPAttrPKeyIndex | verbs.QPAttrPort | verbs.QPAttrAccessFlags
	rtr := func(peer *xEnd) verbs.QPAttr {
		return verbs.QPAttr{QPState: verbs.QPStateRTR, AHAttr: xAV(peer.s, false),
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

func xrcInitiatorSends(t *T, e *Env) {
	p := xrcXferSetup(t, e)
	if p == nil {
		return
	}
	ini, tgt := p.connect(p.opts(), p.opts())
	r := p.srq(p.d, tgt)
	// SEND.
	msg := xMessage(ini.s, 0, 100, 1)
	r.recvAt(p, 11, 0, 256)
	ini.post("an XRC SEND", xrcTo(xSend(1, verbs.WRSend, ini.s.sge(0, 100)), r.n))
	ini.want("an XRC SEND", p.await(ini.scq, 1, "an XRC SEND")[0], 1, verbs.WCSuccess)
	p.wantXRCRecv("an XRC SEND", p.await(r.cq, 1, "an XRC SEND: the SRQ's CQ")[0], 11, 100, ini, tgt)
	if !bytes.Equal(p.b.buf[:100], msg) {
		t.Errorf("an XRC SEND: the bytes placed differ from the message")
	}
	// RDMA WRITE and READ (the target is checked against the SRQ's PD).
	msg = xMessage(ini.s, 1024, 64, 2)
	ini.post("an XRC RDMA WRITE", xrcTo(xRDMA(2, verbs.WRRDMAWrite, p.b, 4096, ini.s.sge(1024, 64)), r.n))
	ini.want("an XRC RDMA WRITE", p.await(ini.scq, 1, "an XRC RDMA WRITE")[0], 2, verbs.WCSuccess)
	if !bytes.Equal(p.b.buf[4096:4096+64], msg) {
		t.Errorf("an XRC RDMA WRITE: the bytes written differ from the message")
	}
	xFill(p.b.buf[8192:8192+64], 9)
	ini.post("an XRC RDMA READ", xrcTo(xRDMA(3, verbs.WRRDMARead, p.b, 8192, ini.s.sge(2048, 64)), r.n))
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
	p.queues[xQueueKey{r.cq, bt.q.Num()}] = xQueues{recv: true}
	msg = xMessage(bi.s, 3072, 40, 3)
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

func xrcTargetDelivers(t *T, e *Env) {
	p := xrcXferSetup(t, e)
	if p == nil {
		return
	}
	ini, tgt := p.connect(p.opts(), p.opts())
	r1, r2 := p.srq(p.d, tgt), p.srq(p.d, tgt)
	// Two SRQs, two SENDs: each lands on its own SRQ and CQ.
	r1.recvAt(p, 11, 0, 256)
	r2.recvAt(p, 21, 1024, 256)
	m2 := xMessage(ini.s, 0, 30, 4)
	m1 := xMessage(ini.s, 512, 50, 5)
	ini.post("SENDs to two SRQs", xrcTo(xSend(1, verbs.WRSend, ini.s.sge(0, 30)), r2.n), xrcTo(xSend(2, verbs.WRSend, ini.s.sge(512, 50)), r1.n))
	got := p.await(ini.scq, 2, "SENDs to two SRQs")
	ini.want("the SEND to the second SRQ", got[0], 1, verbs.WCSuccess)
	ini.want("the SEND to the first SRQ", got[1], 2, verbs.WCSuccess)
	p.wantXRCRecv("the second SRQ", p.await(r2.cq, 1, "the second SRQ's CQ")[0], 21, 30, ini, tgt)
	p.wantXRCRecv("the first SRQ", p.await(r1.cq, 1, "the first SRQ's CQ")[0], 11, 50, ini, tgt)
	if !bytes.Equal(p.b.buf[1024:1024+30], m2) || !bytes.Equal(p.b.buf[:50], m1) {
		t.Errorf("SENDs to two SRQs: the bytes placed differ from the messages")
	}
	// An empty SRQ: RNR NAKs until a receive comes.
	m1 = xMessage(ini.s, 0, 20, 6)
	ini.post("a SEND to an empty XRC SRQ", xrcTo(xSend(3, verbs.WRSend, ini.s.sge(0, 20)), r1.n))
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
		ini.post(c.what, xrcTo(xSend(5, verbs.WRSend, ini.s.sge(0, 8)), bad))
		ini.want(c.what, p.await(ini.scq, 1, c.what)[0], 5, verbs.WCRemAccessErr)
		ini.wantState(c.what, verbs.QPStateErr)
		tgt.wantState(c.what, verbs.QPStateErr)
		if n := xAbout(p.b.events(), verbs.EventQPAccessErr, tgt.q); n != 1 {
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
