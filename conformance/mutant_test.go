package conformance_test

// This file builds deliberately broken devices ("mutants") by wrapping the
// simulator and overriding single verbs. A mutant names the rule IDs whose
// cases must catch it; TestMutantsAreCaught fails if Check passes a mutant or
// misses one of its rules. Each family's mutants live in mutants_*_test.go.

import (
	"context"
	"errors"
	"flag"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/verbsim/verbsim/conformance"
	"github.com/verbsim/verbsim/conformance/simdev"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// hooks override verbs of the wrapped device. A nil hook forwards. Hooks
// receive the real (inner) objects.
type hooks struct {
	profile     func(conformance.Profile) conformance.Profile
	limits      func(conformance.Limits) conformance.Limits
	createCQ    func(c conformance.Context, cqe int, cqContext any, ch conformance.CompChannel, vec int) (conformance.CQ, error)
	cqe         func(q conformance.CQ) int
	poll        func(q conformance.CQ, wcs []verbs.WC) (int, error)
	reqNotify   func(q conformance.CQ, solicitedOnly bool) error
	ack         func(q conformance.CQ, n int) error
	resize      func(q conformance.CQ, n int) error
	destroyCQ   func(q conformance.CQ, ctx context.Context) error
	push        func(q conformance.CQ, w verbs.WC, solicited bool) (bool, error)
	getEvent    func(ch conformance.CompChannel, ctx context.Context) (conformance.CQ, any, error)
	tryGetEvent func(ch conformance.CompChannel) (conformance.CQ, any, error)
	destroyCh   func(ch conformance.CompChannel) error
	getAsync    func(c conformance.Context, ctx context.Context) (conformance.AsyncEvent, error)
	tryAsync    func(c conformance.Context) (conformance.AsyncEvent, error)
	injectFatal func(q conformance.QP) error
	forceStatus func(q conformance.QP, wrID uint64, recv bool, st verbs.WCStatus) error
	allocPD     func(c conformance.Context) (conformance.PD, error)
	deallocPD   func(pd conformance.PD) error
	regMR       func(pd conformance.PD, buf []byte, access uint32) (conformance.MR, error)
	deregMR     func(mr conformance.MR) error
	// rereg replaces ibv_rereg_mr; it gets the inner MR and PD.
	rereg     func(mr conformance.MR, flags uint32, pd conformance.PD, buf []byte, access uint32) (int, error)
	createAH  func(pd conformance.PD, attr conformance.AHAttr) (conformance.AH, error)
	destroyAH func(ah conformance.AH) error

	// QP and SRQ verbs. createQP gets attr with the inner CQs and SRQ, and
	// postSend requests whose AH is the inner one.
	createQP   func(pd conformance.PD, attr conformance.QPInitAttr) (conformance.QP, error)
	qpNum      func(q conformance.QP) uint32
	modifyQP   func(q conformance.QP, attr *verbs.QPAttr, mask verbs.QPAttrMask) error
	queryQP    func(q conformance.QP) (verbs.QPAttr, error)
	postSend   func(q conformance.QP, wrs []verbs.SendWR) (int, error)
	postRecv   func(q conformance.QP, wrs []verbs.RecvWR) (int, error)
	destroyQP  func(q conformance.QP, ctx context.Context) error
	createSRQ  func(pd conformance.PD, attr conformance.SRQInitAttr) (conformance.SRQ, error)
	postSRQ    func(s conformance.SRQ, wrs []verbs.RecvWR) (int, error)
	modifySRQ  func(s conformance.SRQ, attr *verbs.SRQAttr, mask verbs.SRQAttrMask) error
	querySRQ   func(s conformance.SRQ) (verbs.SRQAttr, error)
	destroySRQ func(s conformance.SRQ, ctx context.Context) error
	takeSRQ    func(s conformance.SRQ) (uint64, []verbs.SGE, bool)
	injectSRQ  func(s conformance.SRQ) error // SRQErrorInjector

	// Memory windows (conformance.MWAllocator, MWBinder). bindMW gets info
	// with the inner MR.
	allocMW func(pd conformance.PD, typ uint32) (conformance.MW, error)
	bindMW  func(q conformance.QP, mw conformance.MW, wrID uint64, flags verbs.SendFlags, info verbs.MWBindInfo) error

	// The extended post API (conformance.QPExCreator, WRBuilder; forwarded
	// in mutants_qpx_test.go). createQPEx gets attr with the inner CQs.
	createQPEx func(pd conformance.PD, attr conformance.QPInitAttr, mask uint32, ops verbs.QPSendOps) (conformance.QP, error)
	setWRID    func(b conformance.WRBuilder, id uint64)
	wrStart    func(b conformance.WRBuilder)
	wrComplete func(b conformance.WRBuilder) error
	wrAbort    func(b conformance.WRBuilder)

	// outstanding overrides conformance.Outstander on QPs.
	outstanding func(q conformance.QP) (send, recv int)

	// The transport capabilities (verbs_xfer.go, forwarded in
	// mutants_xfer_test.go): its clock and its port queries. The transport
	// readings the device states are part of its Profile (hook profile).
	tick      func(c conformance.Clock, n uint64)
	runIdle   func(c conformance.Clock, limit uint64) bool
	queryPort func(c conformance.Context, port uint8) (conformance.PortInfo, error)

	// The query capabilities (verbs_query.go, forwarded in
	// mutants_query_test.go).
	queryMask     func(q conformance.QP, mask verbs.QPAttrMask) (verbs.QPAttr, conformance.QPQueryInit, error)
	queryDevEx    func(c conformance.Context, compMask uint32) (conformance.DeviceAttrEx, error)
	queryPortEx   func(c conformance.Context, port uint8) (conformance.PortAttrEx, error)
	queryGIDEx    func(c conformance.Context, port, index, flags uint32) (conformance.GIDEntry, error)
	queryGIDTable func(c conformance.Context, maxEntries int, flags uint32) ([]conformance.GIDEntry, error)
	getSRQNum     func(s conformance.SRQ) (uint32, error)
	// cqx breaks extended CQs (mutants_cqex_test.go).
	cqx *cqxHooks
	// xrc breaks the XRC verbs (mutants_xrc_test.go).
	xrc *xrcHooks
}

// mutant is a broken device and the rules that must catch it.
type mutant struct {
	name  string
	rules []string // rule IDs whose cases must fail
	base  sim.Profile
	h     hooks
}

func (m mutant) factory() conformance.NewDevice {
	return func() (conformance.Device, error) {
		d, err := simdev.New(sim.Config{Profile: m.base})
		if err != nil {
			return nil, err
		}
		return &mDevice{inner: d, h: &m.h}, nil
	}
}

type mDevice struct {
	inner conformance.Device
	h     *hooks
}

func (d *mDevice) Open() (conformance.Context, error) {
	c, err := d.inner.Open()
	if err != nil {
		return nil, err
	}
	return &mContext{inner: c, h: d.h, outer: map[conformance.CQ]*mCQ{}, qps: map[conformance.QP]*mQP{}}, nil
}

func (d *mDevice) Profile() conformance.Profile {
	p := d.inner.Profile()
	if d.h.profile != nil {
		p = d.h.profile(p)
	}
	return p
}

// WithLimits wraps the limited device with the same hooks, so a mutant stays
// broken on the small-limit devices some cases ask for (CQ-06).
func (d *mDevice) WithLimits(l conformance.Limits) (conformance.Device, error) {
	ld, ok := d.inner.(conformance.LimitedDevice)
	if !ok {
		return nil, errors.ErrUnsupported
	}
	inner, err := ld.WithLimits(l)
	if err != nil {
		return nil, err
	}
	return &mDevice{inner: inner, h: d.h}, nil
}

type mContext struct {
	inner conformance.Context
	h     *hooks
	outer map[conformance.CQ]*mCQ

	mu   sync.Mutex // guards qps and srqs, which async readers consult
	qps  map[conformance.QP]*mQP
	srqs map[conformance.SRQ]*mSRQ
}

func (c *mContext) wrapCQ(q conformance.CQ) conformance.CQ {
	if q == nil {
		return nil
	}
	if w, ok := c.outer[q]; ok {
		return w
	}
	w := &mCQ{inner: q, h: c.h}
	c.outer[q] = w
	return w
}

func (c *mContext) Limits() conformance.Limits {
	l := c.inner.Limits()
	if c.h.limits != nil {
		l = c.h.limits(l)
	}
	return l
}

func (c *mContext) CreateCompChannel() (conformance.CompChannel, error) {
	ch, err := c.inner.CreateCompChannel()
	if err != nil {
		return nil, err
	}
	return &mChannel{inner: ch, c: c}, nil
}

func (c *mContext) CreateCQ(cqe int, cqContext any, ch conformance.CompChannel, vec int) (conformance.CQ, error) {
	var ich conformance.CompChannel
	if ch != nil {
		ich = ch.(*mChannel).inner
	}
	var q conformance.CQ
	var err error
	if c.h.createCQ != nil {
		q, err = c.h.createCQ(c.inner, cqe, cqContext, ich, vec)
	} else {
		q, err = c.inner.CreateCQ(cqe, cqContext, ich, vec)
	}
	if err != nil {
		return nil, err
	}
	return c.wrapCQ(q), nil
}

func (c *mContext) wrapAsync(ev conformance.AsyncEvent, err error) (conformance.AsyncEvent, error) {
	if err != nil || ev == nil {
		return ev, err
	}
	return mAsync{AsyncEvent: ev, c: c}, nil
}

func (c *mContext) GetAsyncEvent(ctx context.Context) (conformance.AsyncEvent, error) {
	if c.h.getAsync != nil {
		return c.wrapAsync(c.h.getAsync(c.inner, ctx))
	}
	return c.wrapAsync(c.inner.GetAsyncEvent(ctx))
}

func (c *mContext) TryGetAsyncEvent() (conformance.AsyncEvent, error) {
	if c.h.tryAsync != nil {
		return c.wrapAsync(c.h.tryAsync(c.inner))
	}
	return c.wrapAsync(c.inner.TryGetAsyncEvent())
}

func (c *mContext) Close() error { return c.inner.Close() }

func (c *mContext) AllocPD() (conformance.PD, error) {
	var pd conformance.PD
	var err error
	if c.h.allocPD != nil {
		pd, err = c.h.allocPD(c.inner)
	} else {
		pd, err = c.inner.AllocPD()
	}
	if pd == nil {
		return nil, err
	}
	return &mPD{inner: pd, h: c.h, c: c}, err
}

type mPD struct {
	inner conformance.PD
	h     *hooks
	c     *mContext
}

func (p *mPD) RegMR(buf []byte, access uint32) (conformance.MR, error) {
	var mr conformance.MR
	var err error
	if p.h.regMR != nil {
		mr, err = p.h.regMR(p.inner, buf, access)
	} else {
		mr, err = p.inner.RegMR(buf, access)
	}
	if mr == nil {
		return nil, err
	}
	return &mMR{MR: mr, h: p.h}, err
}

func (p *mPD) CreateAH(attr conformance.AHAttr) (conformance.AH, error) {
	var ah conformance.AH
	var err error
	if p.h.createAH != nil {
		ah, err = p.h.createAH(p.inner, attr)
	} else {
		ah, err = p.inner.CreateAH(attr)
	}
	if ah == nil {
		return nil, err
	}
	return &mAH{inner: ah, h: p.h}, err
}

// AllocMW implements conformance.MWAllocator. Windows are not wrapped.
func (p *mPD) AllocMW(typ uint32) (conformance.MW, error) {
	if p.h.allocMW != nil {
		return p.h.allocMW(p.inner, typ)
	}
	a, ok := p.inner.(conformance.MWAllocator)
	if !ok {
		return nil, errors.ErrUnsupported
	}
	return a.AllocMW(typ)
}

func (p *mPD) Dealloc() error {
	if p.h.deallocPD != nil {
		return p.h.deallocPD(p.inner)
	}
	return p.inner.Dealloc()
}

// mMR forwards the MR's fields; hooks that lie about them return their own
// conformance.MR from regMR.
type mMR struct {
	conformance.MR
	h *hooks
}

func (m *mMR) Dereg() error {
	if m.h.deregMR != nil {
		return m.h.deregMR(m.MR)
	}
	return m.MR.Dereg()
}

func (m *mMR) Rereg(flags uint32, pd conformance.PD, buf []byte, access uint32) (int, error) {
	if p, ok := pd.(*mPD); ok {
		pd = p.inner
	}
	if m.h.rereg != nil {
		return m.h.rereg(m.MR, flags, pd, buf, access)
	}
	if r, ok := m.MR.(conformance.MRRereg); ok {
		return r.Rereg(flags, pd, buf, access)
	}
	return -1, errors.ErrUnsupported
}

func (m *mMR) Ref() error {
	if r, ok := m.MR.(conformance.Referencer); ok {
		return r.Ref()
	}
	return errors.ErrUnsupported
}

func (m *mMR) Unref() {
	if r, ok := m.MR.(conformance.Referencer); ok {
		r.Unref()
	}
}

type mAH struct {
	inner conformance.AH
	h     *hooks
}

func (a *mAH) Destroy() error {
	if a.h.destroyAH != nil {
		return a.h.destroyAH(a.inner)
	}
	return a.inner.Destroy()
}

func (p *mPD) CreateQP(attr conformance.QPInitAttr) (conformance.QP, error) {
	if attr.SendCQ != nil {
		attr.SendCQ = attr.SendCQ.(*mCQ).inner
	}
	if attr.RecvCQ != nil {
		attr.RecvCQ = attr.RecvCQ.(*mCQ).inner
	}
	if attr.SRQ != nil {
		attr.SRQ = attr.SRQ.(*mSRQ).inner
	}
	var q conformance.QP
	var err error
	if p.h.createQP != nil {
		q, err = p.h.createQP(p.inner, attr)
	} else {
		q, err = p.inner.CreateQP(attr)
	}
	if q == nil {
		return nil, err
	}
	return p.c.outerQP(q), err
}

func (p *mPD) CreateSRQ(attr conformance.SRQInitAttr) (conformance.SRQ, error) {
	var s conformance.SRQ
	var err error
	if p.h.createSRQ != nil {
		s, err = p.h.createSRQ(p.inner, attr)
	} else {
		s, err = p.inner.CreateSRQ(attr)
	}
	if s == nil {
		return nil, err
	}
	return p.c.outerSRQ(s), err
}

// outerQP returns the one wrapper of the inner QP q.
func (c *mContext) outerQP(q conformance.QP) *mQP {
	c.mu.Lock()
	defer c.mu.Unlock()
	w, ok := c.qps[q]
	if !ok {
		w = &mQP{inner: q, h: c.h}
		c.qps[q] = w
	}
	return w
}

// outerSRQ returns the one wrapper of the inner SRQ s.
func (c *mContext) outerSRQ(s conformance.SRQ) *mSRQ {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.srqs == nil {
		c.srqs = map[conformance.SRQ]*mSRQ{}
	}
	w, ok := c.srqs[s]
	if !ok {
		w = &mSRQ{inner: s, h: c.h}
		c.srqs[s] = w
	}
	return w
}

type mQP struct {
	inner conformance.QP
	h     *hooks
}

func (q *mQP) Num() uint32 {
	if q.h.qpNum != nil {
		return q.h.qpNum(q.inner)
	}
	return q.inner.Num()
}

func (q *mQP) Modify(attr *verbs.QPAttr, mask verbs.QPAttrMask) error {
	if q.h.modifyQP != nil {
		return q.h.modifyQP(q.inner, attr, mask)
	}
	return q.inner.Modify(attr, mask)
}

func (q *mQP) Query() (verbs.QPAttr, error) {
	if q.h.queryQP != nil {
		return q.h.queryQP(q.inner)
	}
	return q.inner.Query()
}

func (q *mQP) PostSend(wrs []verbs.SendWR) (int, error) {
	copied := false
	for i := range wrs {
		ah, isAH := wrs[i].AH.(*mAH)
		mr, isMR := wrs[i].Bind.MR.(*mMR)
		if !isAH && !isMR {
			continue
		}
		if !copied { // never change the caller's list
			wrs, copied = append([]verbs.SendWR(nil), wrs...), true
		}
		if isAH {
			wrs[i].AH = ah.inner
		}
		if isMR {
			wrs[i].Bind.MR = mr.MR
		}
	}
	if q.h.postSend != nil {
		return q.h.postSend(q.inner, wrs)
	}
	return q.inner.PostSend(wrs)
}

// BindMW implements conformance.MWBinder.
func (q *mQP) BindMW(mw conformance.MW, wrID uint64, flags verbs.SendFlags, info verbs.MWBindInfo) error {
	if mr, ok := info.MR.(*mMR); ok {
		info.MR = mr.MR
	}
	if q.h.bindMW != nil {
		return q.h.bindMW(q.inner, mw, wrID, flags, info)
	}
	b, ok := q.inner.(conformance.MWBinder)
	if !ok {
		return errors.ErrUnsupported
	}
	return b.BindMW(mw, wrID, flags, info)
}

func (q *mQP) PostRecv(wrs []verbs.RecvWR) (int, error) {
	if q.h.postRecv != nil {
		return q.h.postRecv(q.inner, wrs)
	}
	return q.inner.PostRecv(wrs)
}

func (q *mQP) InjectFatal() error {
	if q.h.injectFatal != nil {
		return q.h.injectFatal(q.inner)
	}
	return q.inner.(conformance.FatalInjector).InjectFatal()
}

func (q *mQP) ForceStatus(wrID uint64, recv bool, st verbs.WCStatus) error {
	if q.h.forceStatus != nil {
		return q.h.forceStatus(q.inner, wrID, recv, st)
	}
	return q.inner.(conformance.StatusForcer).ForceStatus(wrID, recv, st)
}

func (q *mQP) Outstanding() (send, recv int) {
	if q.h.outstanding != nil {
		return q.h.outstanding(q.inner)
	}
	return q.inner.(conformance.Outstander).Outstanding()
}

func (q *mQP) DestroyContext(ctx context.Context) error {
	if q.h.destroyQP != nil {
		return q.h.destroyQP(q.inner, ctx)
	}
	return q.inner.DestroyContext(ctx)
}

type mSRQ struct {
	inner conformance.SRQ
	h     *hooks
}

func (s *mSRQ) PostRecv(wrs []verbs.RecvWR) (int, error) {
	if s.h.postSRQ != nil {
		return s.h.postSRQ(s.inner, wrs)
	}
	return s.inner.PostRecv(wrs)
}

func (s *mSRQ) Modify(attr *verbs.SRQAttr, mask verbs.SRQAttrMask) error {
	if s.h.modifySRQ != nil {
		return s.h.modifySRQ(s.inner, attr, mask)
	}
	return s.inner.Modify(attr, mask)
}

func (s *mSRQ) Query() (verbs.SRQAttr, error) {
	if s.h.querySRQ != nil {
		return s.h.querySRQ(s.inner)
	}
	return s.inner.Query()
}

func (s *mSRQ) DestroyContext(ctx context.Context) error {
	if s.h.destroySRQ != nil {
		return s.h.destroySRQ(s.inner, ctx)
	}
	return s.inner.DestroyContext(ctx)
}

func (s *mSRQ) Len() int { return s.inner.(conformance.Depth).Len() }

func (s *mSRQ) Take() (uint64, []verbs.SGE, bool) {
	if s.h.takeSRQ != nil {
		return s.h.takeSRQ(s.inner)
	}
	return s.inner.(conformance.Consumer).Take()
}

type mAsync struct {
	conformance.AsyncEvent
	c *mContext
}

func (e mAsync) Object() any {
	o := e.AsyncEvent.Object()
	if q, ok := o.(conformance.CQ); ok {
		return e.c.wrapCQ(q)
	}
	if q, ok := o.(conformance.QP); ok {
		return e.c.outerQP(q)
	}
	if s, ok := o.(conformance.SRQ); ok {
		return e.c.outerSRQ(s)
	}
	return o
}

type mCQ struct {
	inner conformance.CQ
	h     *hooks
	ex    conformance.ExCQ // the poll iterator, once asked for (mutants_cqex_test.go)
}

// The accessors of verbs.CQ forward to the inner CQ (the suite does not
// compare what they return with its own objects).
func (q *mCQ) Context() verbs.Context     { return q.inner.Context() }
func (q *mCQ) CQContext() any             { return q.inner.CQContext() }
func (q *mCQ) Channel() verbs.CompChannel { return q.inner.Channel() }

func (q *mCQ) CQE() int {
	if q.h.cqe != nil {
		return q.h.cqe(q.inner)
	}
	return q.inner.CQE()
}

func (q *mCQ) Poll(wcs []verbs.WC) (int, error) {
	if q.h.poll != nil {
		return q.h.poll(q.inner, wcs)
	}
	return q.inner.Poll(wcs)
}

func (q *mCQ) ReqNotify(so bool) error {
	if q.h.reqNotify != nil {
		return q.h.reqNotify(q.inner, so)
	}
	return q.inner.ReqNotify(so)
}

func (q *mCQ) AckEvents(n int) error {
	if q.h.ack != nil {
		return q.h.ack(q.inner, n)
	}
	return q.inner.AckEvents(n)
}

func (q *mCQ) Resize(n int) error {
	if q.h.resize != nil {
		return q.h.resize(q.inner, n)
	}
	return q.inner.Resize(n)
}

func (q *mCQ) DestroyContext(ctx context.Context) error {
	if q.h.destroyCQ != nil {
		return q.h.destroyCQ(q.inner, ctx)
	}
	return q.inner.DestroyContext(ctx)
}

func (q *mCQ) Push(w verbs.WC, solicited bool) (bool, error) {
	if q.h.push != nil {
		return q.h.push(q.inner, w, solicited)
	}
	return q.inner.(conformance.Injector).Push(w, solicited)
}

func (q *mCQ) Ref() error { return q.inner.(conformance.Referencer).Ref() }
func (q *mCQ) Unref()     { q.inner.(conformance.Referencer).Unref() }

type mChannel struct {
	inner conformance.CompChannel
	c     *mContext
}

// Context forwards to the inner channel.
func (ch *mChannel) Context() verbs.Context { return ch.inner.Context() }

func (ch *mChannel) GetEvent(ctx context.Context) (conformance.CQ, any, error) {
	var q conformance.CQ
	var cctx any
	var err error
	if ch.c.h.getEvent != nil {
		q, cctx, err = ch.c.h.getEvent(ch.inner, ctx)
	} else {
		q, cctx, err = ch.inner.GetEvent(ctx)
	}
	return ch.c.wrapCQ(q), cctx, err
}

func (ch *mChannel) TryGetEvent() (conformance.CQ, any, error) {
	var q conformance.CQ
	var cctx any
	var err error
	if ch.c.h.tryGetEvent != nil {
		q, cctx, err = ch.c.h.tryGetEvent(ch.inner)
	} else {
		q, cctx, err = ch.inner.TryGetEvent()
	}
	return ch.c.wrapCQ(q), cctx, err
}

func (ch *mChannel) Destroy() error {
	if ch.c.h.destroyCh != nil {
		return ch.c.h.destroyCh(ch.inner)
	}
	return ch.inner.Destroy()
}

func (ch *mChannel) Len() int { return ch.inner.(conformance.Depth).Len() }

// mutants collects every family's mutants (appended by init functions in
// mutants_*_test.go).
var mutants []mutant

// TestWrapperIsTransparent: the wrapper with no hooks passes the whole suite,
// so any failure of a mutant comes from its hook.
func TestWrapperIsTransparent(t *testing.T) {
	for _, p := range sim.Profiles() {
		m := mutant{name: "identity", base: p}
		if err := conformance.Check(m.factory()); err != nil {
			t.Fatalf("profile %s: the transparent wrapper fails the suite:\n%v", p.Name, err)
		}
	}
}

// fullSweep runs the whole suite on every mutant instead of the cases of the
// rules it names. The verdict is the same (a case runs on a fresh device, so
// its result does not depend on the others); the full sweep takes about
// twenty times longer and shows which other cases a mutant also breaks.
var fullSweep = flag.Bool("mutants.full", false, "run every case of the suite on each mutant, not only the cases of the rules it names")

// TestMutantsAreCaught runs the cases of the rules each mutant names and
// requires a failure from each of those rules. -short leaves it out;
// -mutants.full runs the whole suite on each mutant.
func TestMutantsAreCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("the mutant sweep runs without -short")
	}
	// The simulator queues events synchronously, so a mutant that withholds
	// one is caught as surely after 1 s as after 10 s.
	old := conformance.Patience
	conformance.Patience = time.Second
	defer func() { conformance.Patience = old }()

	// Eight mutants at once allocate fast (QPs of max_qp_wr, the 36 MB
	// buffer of XFER-23) and the heap would triple before the collector
	// catches up; a soft limit keeps the run within a CI machine's memory.
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(1 << 30))

	// Most of a run is spent in Grace waits, so run several mutants at once,
	// more than there are cores, and report each in its own subtest.
	mutants := slowFirst(mutants)
	results := make([]error, len(mutants))
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i, m := range mutants {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if *fullSweep {
				results[i] = conformance.Check(m.factory())
			} else {
				results[i] = conformance.CheckRules(m.factory(), m.rules...)
			}
		})
	}
	wg.Wait()
	for i, m := range mutants {
		t.Run(m.name, func(t *testing.T) {
			err := results[i]
			if err == nil {
				t.Fatalf("the suite passes a device that is broken (%s)", m.name)
			}
			for _, id := range m.rules {
				if !strings.Contains(err.Error(), id+" (") {
					t.Errorf("no case of %s caught the mutant; failures were:\n%v", id, err)
				}
			}
		})
	}
}

// slowMutants make several cases wait out Patience for completions or
// events that never come (measured by timing each Check of a parallel run).
// They go to the front of the list, so that their waits overlap the rest of
// TestMutantsAreCaught instead of ending it.
var slowMutants = map[string]bool{
	"the profile says SQ_DRAINED comes unasked, the device raises it only when asked": true,
	"flush completions never come":                    true,
	"flushed receives vanish":                         true,
	"requests posted in ERR are accepted and dropped": true,
	"IBV_SRQ_LIMIT is accepted and ignored":           true,
	"LAST_WQE_REACHED is never delivered":             true,
	"RTS→SQD does nothing":                            true,
	"the profile says slots free on retire (QP-29 reading B), the device frees them on poll": true,
	"unsignaled sends are not flushed":                               true,
	"an SRQ error does nothing":                                      true,
	"receive slots free on poll under reading B":                     true,
	"SQ_DRAINED is never delivered":                                  true,
	"sends posted in SQE are accepted and dropped":                   true,
	"slots are free once flushed, before the poll (QP-29 reading B)": true,
}

// slowFirst returns ms with the slow mutants first, in their order, then
// the rest in theirs.
func slowFirst(ms []mutant) []mutant {
	var first, rest []mutant
	for _, m := range ms {
		if slowMutants[m.name] {
			first = append(first, m)
		} else {
			rest = append(rest, m)
		}
	}
	return append(first, rest...)
}

// TestSlowMutantsExist: every name in slowMutants names a mutant, so a
// renamed one does not silently drop back to the end of the run.
func TestSlowMutantsExist(t *testing.T) {
	names := map[string]bool{}
	for _, m := range mutants {
		names[m.name] = true
	}
	for name := range slowMutants {
		if !names[name] {
			t.Errorf("slowMutants names %q, which is no mutant", name)
		}
	}
}
