package sim_test

import (
	"context"
	"errors"
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// vEnd is one side of a connection through the verbs interfaces.
type vEnd struct {
	ctx verbs.Context
	pd  verbs.PD
	ch  verbs.CompChannel
	cq  verbs.CQ
	buf []byte
	mr  verbs.MR
	q   verbs.QP
}

func newVEnd(t testing.TB, d *sim.Device, typ verbs.QPType) *vEnd {
	t.Helper()
	e := &vEnd{buf: make([]byte, 1<<16)}
	var err error
	check := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	e.ctx, err = d.Verbs().Open()
	check(err)
	e.pd, err = e.ctx.AllocPD()
	check(err)
	e.ch, err = e.ctx.CreateCompChannel()
	check(err)
	e.cq, err = e.ctx.CreateCQ(1024, "cq of "+d.Name(), e.ch, 0)
	check(err)
	e.mr, err = e.pd.RegMR(e.buf, verbs.AccessLocalWrite|verbs.AccessRemoteWrite|verbs.AccessRemoteRead)
	check(err)
	e.q, err = e.pd.CreateQP(verbs.QPInitAttr{Context: "qp of " + d.Name(), SendCQ: e.cq, RecvCQ: e.cq, Type: typ,
		Cap: verbs.QPCap{MaxSendWR: 64, MaxRecvWR: 64, MaxSendSGE: 4, MaxRecvSGE: 4, MaxInlineData: 64}})
	check(err)
	return e
}

// vPair connects two RC QPs through the verbs interfaces (sim.Connect
// takes the handles behind them).
func vPair(t testing.TB) (*sim.Fabric, *vEnd, *vEnd) {
	t.Helper()
	f, da, db := twoDevices(t, sim.Config{})
	a, b := newVEnd(t, da, verbs.QPTypeRC), newVEnd(t, db, verbs.QPTypeRC)
	qa, ok1 := sim.QPOf(a.q)
	qb, ok2 := sim.QPOf(b.q)
	if !ok1 || !ok2 {
		t.Fatal("QPOf refused a QP of sim's verbs")
	}
	if err := sim.Connect(qa, qb, sim.ConnectOptions{}); err != nil {
		t.Fatal(err)
	}
	return f, a, b
}

func TestVerbsAccessors(t *testing.T) {
	_, a, _ := vPair(t)
	if a.q.PD() != a.pd || a.q.SendCQ() != a.cq || a.q.RecvCQ() != a.cq || a.q.SRQ() != nil {
		t.Errorf("QP accessors: pd %v send %v recv %v srq %v", a.q.PD(), a.q.SendCQ(), a.q.RecvCQ(), a.q.SRQ())
	}
	if a.q.Context() != a.ctx || a.pd.Context() != a.ctx || a.cq.Context() != a.ctx || a.ch.Context() != a.ctx {
		t.Error("Context accessors do not return the context")
	}
	if a.cq.Channel() != a.ch || a.cq.CQContext() != "cq of a" || a.q.QPContext() != "qp of a" {
		t.Errorf("CQ.Channel %v, CQContext %v, QPContext %v", a.cq.Channel(), a.cq.CQContext(), a.q.QPContext())
	}
	if a.q.Type() != verbs.QPTypeRC || a.q.State() != verbs.QPStateRTS {
		t.Errorf("type %v state %v", a.q.Type(), a.q.State())
	}
	attr, init, err := a.q.Query(verbs.QPAttrState | verbs.QPAttrCap)
	if err != nil || attr.QPState != verbs.QPStateRTS || init.SendCQ != a.cq || init.Cap.MaxSendWR < 64 {
		t.Errorf("Query: %v %+v %v", attr.QPState, init, err)
	}
	if d, ok := sim.DeviceOf(a.ctx.Device()); !ok || d.Name() != "a" {
		t.Errorf("DeviceOf: %v %v", d, ok)
	}
}

// TestVerbsDestroy: the verbs interfaces destroy CQs, QPs and SRQs as sim's
// handles do, with Destroy (no deadline) and DestroyContext; a second
// destroy is EINVAL, and a CQ a live QP uses is EBUSY.
func TestVerbsDestroy(t *testing.T) {
	_, a, _ := vPair(t)
	srq, err := a.pd.CreateSRQ(verbs.SRQInitAttr{Attr: verbs.SRQAttr{MaxWR: 4, MaxSGE: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.cq.Destroy(); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("destroying the CQ of a live QP: %v, want EBUSY", err)
	}
	for _, d := range []struct {
		what string
		f    func() error
	}{
		{"QP", a.q.Destroy}, {"SRQ", srq.Destroy}, {"CQ", a.cq.Destroy},
	} {
		if err := d.f(); err != nil {
			t.Errorf("%s.Destroy: %v", d.what, err)
		}
		if err := d.f(); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("a second %s.Destroy: %v, want EINVAL", d.what, err)
		}
	}
	for _, err := range []error{a.q.DestroyContext(context.Background()), srq.DestroyContext(context.Background()), a.cq.DestroyContext(context.Background())} {
		if !errors.Is(err, syscall.EINVAL) {
			t.Errorf("DestroyContext after Destroy: %v, want EINVAL", err)
		}
	}
}

func TestVerbsSendEvent(t *testing.T) {
	_, a, b := vPair(t)
	copy(a.buf, "hello")
	if err := b.cq.ReqNotify(false); err != nil {
		t.Fatal(err)
	}
	if _, err := b.q.PostRecv([]verbs.RecvWR{{WRID: 1, SGList: []verbs.SGE{{Addr: b.mr.Addr(), Length: 64, LKey: b.mr.LKey()}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.q.PostSend([]verbs.SendWR{{WRID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
		SGList: []verbs.SGE{{Addr: a.mr.Addr(), Length: 5, LKey: a.mr.LKey()}}}}); err != nil {
		t.Fatal(err)
	}
	cq, cqContext, err := b.ch.GetEvent(context.Background())
	if err != nil || cq != b.cq || cqContext != "cq of b" {
		t.Fatalf("GetEvent: %v %v %v", cq, cqContext, err)
	}
	if err := cq.AckEvents(1); err != nil {
		t.Fatal(err)
	}
	wcs := make([]verbs.WC, 2)
	if n, err := b.cq.Poll(wcs); n != 1 || err != nil || wcs[0].Status != verbs.WCSuccess || string(b.buf[:5]) != "hello" {
		t.Fatalf("poll: %d %v %v %q", n, err, wcs[0], b.buf[:5])
	}
}

// foreignAH is an address handle of another implementation.
type foreignAH struct{}

func (foreignAH) Destroy() error { return nil }

// foreignMW is a memory window of another implementation.
type foreignMW struct{}

func (foreignMW) RKey() uint32       { return 0 }
func (foreignMW) Type() verbs.MWType { return verbs.MWType1 }
func (foreignMW) Dealloc() error     { return nil }

func TestVerbsForeignObjects(t *testing.T) {
	_, a, _ := vPair(t)
	_, err := a.q.PostSend([]verbs.SendWR{{Opcode: verbs.WRSend, AH: foreignAH{}}})
	if !errors.Is(err, syscall.EINVAL) {
		t.Errorf("foreign AH: %v, want EINVAL", err)
	}
	if err := a.q.BindMW(foreignMW{}, 1, verbs.SendSignaled, verbs.MWBindInfo{}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("foreign MW: %v, want EINVAL", err)
	}
	var other verbs.CQ = struct{ verbs.CQ }{a.cq}
	_, err = a.pd.CreateQP(verbs.QPInitAttr{SendCQ: other, RecvCQ: a.cq, Type: verbs.QPTypeRC})
	if !errors.Is(err, syscall.EINVAL) {
		t.Errorf("foreign CQ: %v, want EINVAL", err)
	}
	if _, ok := sim.QPOf(nil); ok {
		t.Error("QPOf(nil) is ok")
	}
}

// benchSend64 is BenchmarkRCSend64's exchange (post a receive, post a
// 64-byte SEND, poll both completions) on the verbs interfaces or, with
// direct, on the sim handles behind them.
func benchSend64(b *testing.B, direct bool) {
	_, x, y := vPair(b)
	recv := []verbs.RecvWR{{WRID: 1, SGList: []verbs.SGE{{Addr: y.mr.Addr(), Length: 64, LKey: y.mr.LKey()}}}}
	send := []verbs.SendWR{{WRID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
		SGList: []verbs.SGE{{Addr: x.mr.Addr(), Length: 64, LKey: x.mr.LKey()}}}}
	w := make([]verbs.WC, 1)
	type poster interface {
		PostSend([]verbs.SendWR) (int, error)
		PostRecv([]verbs.RecvWR) (int, error)
	}
	type poller interface{ Poll([]verbs.WC) (int, error) }
	var xq, yq poster = x.q, y.q
	var xc, yc poller = x.cq, y.cq
	if direct {
		sx, _ := sim.QPOf(x.q)
		sy, _ := sim.QPOf(y.q)
		cx, _ := sim.CQOf(x.cq)
		cy, _ := sim.CQOf(y.cq)
		xq, yq, xc, yc = sx, sy, cx, cy
	}
	b.ReportAllocs()
	b.SetBytes(64)
	for b.Loop() {
		if _, err := yq.PostRecv(recv); err != nil {
			b.Fatal(err)
		}
		if _, err := xq.PostSend(send); err != nil {
			b.Fatal(err)
		}
		for _, c := range [2]poller{xc, yc} {
			if n, err := c.Poll(w); n != 1 || err != nil || w[0].Status != verbs.WCSuccess {
				b.Fatalf("poll: %d %v %v", n, err, w[0])
			}
		}
	}
}

// BenchmarkVerbsRCSend64 compares the RC SEND 64 B exchange through the
// verbs interfaces with the same exchange on sim's handles.
func BenchmarkVerbsRCSend64(b *testing.B) {
	b.Run("direct", func(b *testing.B) { benchSend64(b, true) })
	b.Run("verbs", func(b *testing.B) { benchSend64(b, false) })
}

// BenchmarkVerbsEvent is one completion event in one goroutine: arm, post
// a receive and a SEND, take the event, acknowledge it, poll both CQs;
// through the verbs interfaces.
func BenchmarkVerbsEvent(b *testing.B) {
	_, x, y := vPair(b)
	recv := []verbs.RecvWR{{WRID: 1, SGList: []verbs.SGE{{Addr: y.mr.Addr(), Length: 64, LKey: y.mr.LKey()}}}}
	send := []verbs.SendWR{{WRID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
		SGList: []verbs.SGE{{Addr: x.mr.Addr(), Length: 64, LKey: x.mr.LKey()}}}}
	w := make([]verbs.WC, 1)
	b.ReportAllocs()
	for b.Loop() {
		if err := y.cq.ReqNotify(false); err != nil {
			b.Fatal(err)
		}
		if _, err := y.q.PostRecv(recv); err != nil {
			b.Fatal(err)
		}
		if _, err := x.q.PostSend(send); err != nil {
			b.Fatal(err)
		}
		cq, _, err := y.ch.TryGetEvent()
		if err != nil {
			b.Fatal(err)
		}
		if err := cq.AckEvents(1); err != nil {
			b.Fatal(err)
		}
		for _, c := range [2]verbs.CQ{x.cq, y.cq} {
			if n, err := c.Poll(w); n != 1 || err != nil {
				b.Fatalf("poll: %d %v", n, err)
			}
		}
	}
}

// foreignXRCD is an XRC domain of another implementation.
type foreignXRCD struct{}

func (foreignXRCD) Close() error { return nil }
func (foreignXRCD) CreateQP(verbs.QPInitAttrEx) (verbs.QP, error) {
	return nil, nil
}

// TestVerbsXRCD: the XRC target QP through verbs.XRCD.CreateQP (XRC-06),
// the domain view's identity, and foreign objects refused.
func TestVerbsXRCD(t *testing.T) {
	_, a, _ := vPair(t)
	x := a.ctx.(verbs.XRCOpener)
	d, err := x.OpenXRCD(verbs.XRCDInitAttr{CompMask: verbs.XRCDInitFD | verbs.XRCDInitOFlags, FD: -1})
	if err != nil {
		t.Fatal(err)
	}
	if sx, ok := sim.XRCDOf(d); !ok || sim.VerbsXRCD(sx) != d {
		t.Error("XRCDOf and VerbsXRCD do not round-trip")
	}
	if _, ok := sim.XRCDOf(foreignXRCD{}); ok {
		t.Error("XRCDOf accepted a foreign domain")
	}
	_, err = x.CreateSRQEx(verbs.SRQInitAttrEx{Attr: verbs.SRQAttr{MaxWR: 1, MaxSGE: 1}, CompMask: verbs.SRQInitType | verbs.SRQInitPD | verbs.SRQInitXRCD | verbs.SRQInitCQ,
		Type: verbs.SRQTXRC, PD: a.pd, XRCD: foreignXRCD{}, CQ: a.cq})
	if !errors.Is(err, syscall.EINVAL) {
		t.Errorf("an XRC SRQ in a foreign domain: %v, want EINVAL", err)
	}
	var other verbs.CQ = struct{ verbs.CQ }{a.cq}
	_, err = d.CreateQP(verbs.QPInitAttrEx{QPInitAttr: verbs.QPInitAttr{Type: verbs.QPTypeXRCRecv, SendCQ: other}, CompMask: verbs.QPInitAttrXRCD})
	if !errors.Is(err, syscall.EINVAL) {
		t.Errorf("a target QP given a foreign CQ: %v, want EINVAL", err)
	}
	q, err := d.CreateQP(verbs.QPInitAttrEx{QPInitAttr: verbs.QPInitAttr{Type: verbs.QPTypeXRCRecv}, CompMask: verbs.QPInitAttrXRCD})
	if err != nil {
		t.Fatal(err)
	}
	if q.Type() != verbs.QPTypeXRCRecv || q.PD() != nil || q.SendCQ() != nil || q.Context() != a.ctx {
		t.Errorf("target QP: type %v, PD %v, send CQ %v", q.Type(), q.PD(), q.SendCQ())
	}
	if sq, ok := sim.QPOf(q); !ok || sim.VerbsXRCD(sq.XRCD()) != d {
		t.Error("the target QP's domain is not the one it was created in")
	}
	if err := d.Close(); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("close_xrcd with a target QP: %v, want EBUSY", err)
	}
	if err := q.DestroyContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Errorf("close_xrcd: %v", err)
	}
}
