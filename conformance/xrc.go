package conformance

import (
	"context"
	"syscall"

	"github.com/verbsim/verbsim/verbs"
)

// xrcdFDOFlags is IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS.
const xrcdFDOFlags = verbs.XRCDInitFD | verbs.XRCDInitOFlags

// openXRCD is ibv_open_xrcd with struct ibv_xrcd_init_attr's comp_mask, fd
// and oflags.
func openXRCD(x verbs.XRCOpener, mask verbs.XRCDInitMask, fd, oflags int) (verbs.XRCD, error) {
	return x.OpenXRCD(verbs.XRCDInitAttr{CompMask: mask, FD: fd, OFlags: oflags})
}

// xrcWorld is what the XRC cases work with: the context's XRCOpener, a PD
// and a CQ.
type xrcWorld struct {
	e  *env
	x  verbs.XRCOpener
	pd verbs.PD
	cq verbs.CQ
}

// xrcSetup returns the world, or nil (having logged why) when the device
// has no XRC verbs or its profile says it refuses them (XRC-03 checks that).
func xrcSetup(t *tester, e *env) *xrcWorld {
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
func xrcUsable(t *tester, e *env) verbs.XRCOpener {
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
func (w *xrcWorld) open() verbs.XRCD {
	w.e.T.Helper()
	d, err := openXRCD(w.x, xrcdFDOFlags, -1, 0)
	if err != nil || d == nil {
		w.e.T.Fatalf("ibv_open_xrcd(fd -1): %v", err)
	}
	w.e.T.Cleanup(func() { _ = d.Close() })
	return d
}

// xrcAttr returns the arguments of a good XRC SRQ in d.
func (w *xrcWorld) xrcAttr(d verbs.XRCD) verbs.SRQInitAttrEx {
	return verbs.SRQInitAttrEx{Attr: verbs.SRQAttr{MaxWR: 4, MaxSGE: 1}, CompMask: verbs.SRQInitType | verbs.SRQInitPD | verbs.SRQInitXRCD | verbs.SRQInitCQ,
		Type: verbs.SRQTXRC, PD: w.pd, XRCD: d, CQ: w.cq}
}

// srq creates an SRQ or fails the case; it is destroyed when the case ends
// unless the case destroyed it.
func (w *xrcWorld) srq(a verbs.SRQInitAttrEx) verbs.SRQ {
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

func openXRCDArgs(t *tester, e *env) {
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

func closeXRCD(t *tester, e *env) {
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

func noXRC(t *tester, e *env) {
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

func createSRQEx(t *tester, e *env) {
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

func xrcSRQHoldsObjects(t *tester, e *env) {
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
	q, err := w.pd.CreateQP(verbs.QPInitAttr{SendCQ: w.cq, RecvCQ: w.cq, SRQ: s1, Type: verbs.QPTypeRC,
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
