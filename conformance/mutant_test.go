package conformance_test

// This file builds deliberately broken devices ("mutants") by wrapping the
// simulator and overriding single verbs. A mutant names the rule IDs whose
// cases must catch it; TestMutantsAreCaught fails if Check passes a mutant or
// misses one of its rules. Each family's mutants live in <family>_mutants_test.go.

import (
	"context"
	"errors"
	"flag"
	"runtime/debug"
	"slices"
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
	profile     func(verbs.Readings) verbs.Readings
	deviceAttr  func(verbs.DeviceAttr) verbs.DeviceAttr // what ibv_query_device reports (and so the limits)
	createCQ    func(c verbs.Context, cqe int, cqContext any, ch verbs.CompChannel, vec int) (verbs.CQ, error)
	cqe         func(q verbs.CQ) int
	poll        func(q verbs.CQ, wcs []verbs.WC) (int, error)
	reqNotify   func(q verbs.CQ, solicitedOnly bool) error
	ack         func(q verbs.CQ, n int) error
	resize      func(q verbs.CQ, n int) error
	destroyCQ   func(q verbs.CQ, ctx context.Context) error
	push        func(q verbs.CQ, w verbs.WC, solicited bool) (bool, error)
	getEvent    func(ch verbs.CompChannel, ctx context.Context) (verbs.CQ, any, error)
	tryGetEvent func(ch verbs.CompChannel) (verbs.CQ, any, error)
	destroyCh   func(ch verbs.CompChannel) error
	getAsync    func(c verbs.Context, ctx context.Context) (verbs.AsyncEvent, error)
	tryAsync    func(c verbs.Context) (verbs.AsyncEvent, error)
	injectFatal func(q verbs.QP) error
	forceStatus func(q verbs.QP, wrID uint64, recv bool, st verbs.WCStatus) error
	allocPD     func(c verbs.Context) (verbs.PD, error)
	deallocPD   func(pd verbs.PD) error
	regMR       func(pd verbs.PD, buf []byte, access verbs.AccessFlags) (verbs.MR, error)
	deregMR     func(mr verbs.MR) error
	// rereg replaces ibv_rereg_mr; it gets the inner MR and PD.
	rereg     func(mr verbs.MR, flags verbs.ReregFlags, pd verbs.PD, buf []byte, access verbs.AccessFlags) error
	createAH  func(pd verbs.PD, attr verbs.AHAttr) (verbs.AH, error)
	destroyAH func(ah verbs.AH) error

	// QP and SRQ verbs. createQP gets attr with the inner CQs and SRQ, and
	// postSend requests whose AH is the inner one.
	createQP   func(pd verbs.PD, attr verbs.QPInitAttr) (verbs.QP, error)
	qpNum      func(q verbs.QP) uint32
	modifyQP   func(q verbs.QP, attr *verbs.QPAttr, mask verbs.QPAttrMask) error
	queryQP    func(q verbs.QP, mask verbs.QPAttrMask) (verbs.QPAttr, verbs.QPInitAttr, error)
	postSend   func(q verbs.QP, wrs []verbs.SendWR) (int, error)
	postRecv   func(q verbs.QP, wrs []verbs.RecvWR) (int, error)
	destroyQP  func(q verbs.QP, ctx context.Context) error
	createSRQ  func(pd verbs.PD, attr verbs.SRQInitAttr) (verbs.SRQ, error)
	postSRQ    func(s verbs.SRQ, wrs []verbs.RecvWR) (int, error)
	modifySRQ  func(s verbs.SRQ, attr *verbs.SRQAttr, mask verbs.SRQAttrMask) error
	querySRQ   func(s verbs.SRQ) (verbs.SRQAttr, error)
	destroySRQ func(s verbs.SRQ, ctx context.Context) error
	takeSRQ    func(s verbs.SRQ) (uint64, []verbs.SGE, bool)
	injectSRQ  func(s verbs.SRQ) error // SRQErrorInjector

	// Memory windows (PD.AllocMW, QP.BindMW). bindMW gets info with the
	// inner MR.
	allocMW func(pd verbs.PD, typ verbs.MWType) (verbs.MW, error)
	bindMW  func(q verbs.QP, mw verbs.MW, wrID uint64, flags verbs.SendFlags, info verbs.MWBindInfo) error

	// The extended post API (verbs.QPExCreator, WRBuilder; forwarded in
	// qpx_mutants_test.go). createQPEx gets attr with the inner CQs.
	createQPEx func(pd verbs.PD, attr verbs.QPInitAttrEx) (verbs.QP, error)
	setWRID    func(b verbs.WRBuilder, id uint64)
	wrStart    func(b verbs.WRBuilder)
	wrComplete func(b verbs.WRBuilder) error
	wrAbort    func(b verbs.WRBuilder)

	// outstanding overrides conformance.Outstander on QPs.
	outstanding func(q verbs.QP) (send, recv int)

	// The transport capabilities (verbs_xfer.go, forwarded in
	// xfer_mutant_hooks_test.go): its clock. The transport readings the device
	// states are part of its Profile (hook profile).
	tick    func(c conformance.Clock, n uint64)
	runIdle func(c conformance.Clock, limit uint64) bool
	// forge replaces conformance.Forger's Forge (mutants_hostile_test.go).
	forge func(f conformance.Forger, p conformance.ForgedPacket) error

	// The queries (forwarded in query_mutants_test.go).
	queryPort     func(c verbs.Context, port uint8) (verbs.PortAttr, error)
	queryDevEx    func(c verbs.Context, compMask uint32) (verbs.DeviceAttrEx, error)
	queryGIDEx    func(c verbs.Context, port, index, flags uint32) (verbs.GIDEntry, error)
	queryGIDTable func(c verbs.Context, maxEntries int, flags uint32) ([]verbs.GIDEntry, error)
	getSRQNum     func(s verbs.SRQ) (uint32, error)
	// adviseMR replaces ibv_advise_mr (odp_mutants_test.go); it gets the
	// inner PD.
	adviseMR func(pd verbs.PD, advice verbs.AdviseMRAdvice, flags verbs.AdviseMRFlags, sgl []verbs.SGE) error
	// cqx breaks extended CQs (cqex_mutants_test.go).
	cqx *cqxHooks
	// xrc breaks the XRC verbs (xrc_mutants_test.go).
	xrc *xrcHooks
	// dm breaks device memory (dm_mutants_test.go).
	dm *dmHooks
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

func (d *mDevice) Name() string { return d.inner.Name() }
func (d *mDevice) GUID() uint64 { return d.inner.GUID() }

func (d *mDevice) Open() (verbs.Context, error) {
	c, err := d.inner.Open()
	if err != nil {
		return nil, err
	}
	return &mContext{inner: c, dev: d, h: d.h, outer: map[verbs.CQ]*mCQ{}, qps: map[verbs.QP]*mQP{}}, nil
}

func (d *mDevice) Profile() verbs.Readings {
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
	inner verbs.Context
	dev   *mDevice
	h     *hooks
	outer map[verbs.CQ]*mCQ

	mu   sync.Mutex // guards qps and srqs, which async readers consult
	qps  map[verbs.QP]*mQP
	srqs map[verbs.SRQ]*mSRQ
}

func (c *mContext) wrapCQ(q verbs.CQ) verbs.CQ {
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

func (c *mContext) Device() verbs.Device { return c.dev }
func (c *mContext) NumCompVectors() int  { return c.inner.NumCompVectors() }

func (c *mContext) QueryDevice() (verbs.DeviceAttr, error) {
	a, err := c.inner.QueryDevice()
	if err == nil && c.h.deviceAttr != nil {
		a = c.h.deviceAttr(a)
	}
	return a, err
}

func (c *mContext) QueryPort(port uint8) (verbs.PortAttr, error) {
	if c.h.queryPort != nil {
		return c.h.queryPort(c.inner, port)
	}
	return c.inner.QueryPort(port)
}

func (c *mContext) QueryGID(port uint8, index int) (verbs.GID, error) {
	return c.inner.QueryGID(port, index)
}

func (c *mContext) QueryPKey(port uint8, index int) (uint16, error) {
	return c.inner.QueryPKey(port, index)
}

func (c *mContext) CreateCompChannel() (verbs.CompChannel, error) {
	ch, err := c.inner.CreateCompChannel()
	if err != nil {
		return nil, err
	}
	return &mChannel{inner: ch, c: c}, nil
}

func (c *mContext) CreateCQ(cqe int, cqContext any, ch verbs.CompChannel, vec int) (verbs.CQ, error) {
	var ich verbs.CompChannel
	if ch != nil {
		ich = ch.(*mChannel).inner
	}
	var q verbs.CQ
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

func (c *mContext) wrapAsync(ev verbs.AsyncEvent, err error) (verbs.AsyncEvent, error) {
	if err != nil || ev == nil {
		return ev, err
	}
	return mAsync{AsyncEvent: ev, c: c}, nil
}

func (c *mContext) GetAsyncEvent(ctx context.Context) (verbs.AsyncEvent, error) {
	if c.h.getAsync != nil {
		return c.wrapAsync(c.h.getAsync(c.inner, ctx))
	}
	return c.wrapAsync(c.inner.GetAsyncEvent(ctx))
}

func (c *mContext) TryGetAsyncEvent() (verbs.AsyncEvent, error) {
	if c.h.tryAsync != nil {
		return c.wrapAsync(c.h.tryAsync(c.inner))
	}
	return c.wrapAsync(c.inner.TryGetAsyncEvent())
}

func (c *mContext) Close() error { return c.inner.Close() }

func (c *mContext) AllocPD() (verbs.PD, error) {
	var pd verbs.PD
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
	inner verbs.PD
	h     *hooks
	c     *mContext
}

func (p *mPD) Context() verbs.Context { return p.c }
func (p *mPD) Handle() uint32         { return p.inner.Handle() }

func (p *mPD) RegMR(buf []byte, access verbs.AccessFlags) (verbs.MR, error) {
	var mr verbs.MR
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

func (p *mPD) CreateAH(attr verbs.AHAttr) (verbs.AH, error) {
	var ah verbs.AH
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

// AllocMW is ibv_alloc_mw. Windows are not wrapped.
func (p *mPD) AllocMW(typ verbs.MWType) (verbs.MW, error) {
	if p.h.allocMW != nil {
		return p.h.allocMW(p.inner, typ)
	}
	return p.inner.AllocMW(typ)
}

func (p *mPD) Dealloc() error {
	if p.h.deallocPD != nil {
		return p.h.deallocPD(p.inner)
	}
	return p.inner.Dealloc()
}

// mMR forwards the MR's fields; hooks that lie about them return their own
// verbs.MR from regMR.
type mMR struct {
	verbs.MR
	h *hooks
}

func (m *mMR) Dereg() error {
	if m.h.deregMR != nil {
		return m.h.deregMR(m.MR)
	}
	return m.MR.Dereg()
}

func (m *mMR) Rereg(flags verbs.ReregFlags, pd verbs.PD, buf []byte, access verbs.AccessFlags) error {
	if p, ok := pd.(*mPD); ok {
		pd = p.inner
	}
	if m.h.rereg != nil {
		return m.h.rereg(m.MR, flags, pd, buf, access)
	}
	if r, ok := m.MR.(verbs.MRReregisterer); ok {
		return r.Rereg(flags, pd, buf, access)
	}
	return errors.ErrUnsupported
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
	inner verbs.AH
	h     *hooks
}

func (a *mAH) Destroy() error {
	if a.h.destroyAH != nil {
		return a.h.destroyAH(a.inner)
	}
	return a.inner.Destroy()
}

// innerQPAttr returns attr with the inner CQs and SRQ.
func innerQPAttr(attr verbs.QPInitAttr) verbs.QPInitAttr {
	if attr.SendCQ != nil {
		attr.SendCQ = attr.SendCQ.(*mCQ).inner
	}
	if attr.RecvCQ != nil {
		attr.RecvCQ = attr.RecvCQ.(*mCQ).inner
	}
	if attr.SRQ != nil {
		attr.SRQ = attr.SRQ.(*mSRQ).inner
	}
	return attr
}

func (p *mPD) CreateQP(attr verbs.QPInitAttr) (verbs.QP, error) {
	attr = innerQPAttr(attr)
	var q verbs.QP
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

func (p *mPD) CreateSRQ(attr verbs.SRQInitAttr) (verbs.SRQ, error) {
	var s verbs.SRQ
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
func (c *mContext) outerQP(q verbs.QP) *mQP {
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
func (c *mContext) outerSRQ(s verbs.SRQ) *mSRQ {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.srqs == nil {
		c.srqs = map[verbs.SRQ]*mSRQ{}
	}
	w, ok := c.srqs[s]
	if !ok {
		w = &mSRQ{inner: s, h: c.h}
		c.srqs[s] = w
	}
	return w
}

type mQP struct {
	inner verbs.QP
	h     *hooks
}

// The accessors of verbs.QP forward to the inner QP (the suite does not
// compare what they return with its own objects).
func (q *mQP) Type() verbs.QPType     { return q.inner.Type() }
func (q *mQP) State() verbs.QPState   { return q.inner.State() }
func (q *mQP) Context() verbs.Context { return q.inner.Context() }
func (q *mQP) QPContext() any         { return q.inner.QPContext() }
func (q *mQP) PD() verbs.PD           { return q.inner.PD() }
func (q *mQP) SendCQ() verbs.CQ       { return q.inner.SendCQ() }
func (q *mQP) RecvCQ() verbs.CQ       { return q.inner.RecvCQ() }
func (q *mQP) SRQ() verbs.SRQ         { return q.inner.SRQ() }

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

func (q *mQP) Query(mask verbs.QPAttrMask) (verbs.QPAttr, verbs.QPInitAttr, error) {
	if q.h.queryQP != nil {
		return q.h.queryQP(q.inner, mask)
	}
	return q.inner.Query(mask)
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

// BindMW is ibv_bind_mw.
func (q *mQP) BindMW(mw verbs.MW, wrID uint64, flags verbs.SendFlags, info verbs.MWBindInfo) error {
	if mr, ok := info.MR.(*mMR); ok {
		info.MR = mr.MR
	}
	if q.h.bindMW != nil {
		return q.h.bindMW(q.inner, mw, wrID, flags, info)
	}
	return q.inner.BindMW(mw, wrID, flags, info)
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

func (q *mQP) Destroy() error { return q.DestroyContext(context.Background()) }

func (q *mQP) DestroyContext(ctx context.Context) error {
	if q.h.destroyQP != nil {
		return q.h.destroyQP(q.inner, ctx)
	}
	return q.inner.DestroyContext(ctx)
}

type mSRQ struct {
	inner verbs.SRQ
	h     *hooks
}

// The accessors of verbs.SRQ forward to the inner SRQ.
func (s *mSRQ) Context() verbs.Context { return s.inner.Context() }
func (s *mSRQ) SRQContext() any        { return s.inner.SRQContext() }

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

func (s *mSRQ) Destroy() error { return s.DestroyContext(context.Background()) }

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

// mAsync names the wrappers of the objects the inner event names.
type mAsync struct {
	verbs.AsyncEvent
	c *mContext
}

func (e mAsync) CQ() verbs.CQ {
	if q := e.AsyncEvent.CQ(); q != nil {
		return e.c.wrapCQ(q)
	}
	return nil
}

func (e mAsync) QP() verbs.QP {
	if q := e.AsyncEvent.QP(); q != nil {
		return e.c.outerQP(q)
	}
	return nil
}

func (e mAsync) SRQ() verbs.SRQ {
	if s := e.AsyncEvent.SRQ(); s != nil {
		return e.c.outerSRQ(s)
	}
	return nil
}

type mCQ struct {
	inner verbs.CQ
	h     *hooks
	ex    verbs.ExCQ // the poll iterator, once asked for (cqex_mutants_test.go)
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

func (q *mCQ) Destroy() error { return q.DestroyContext(context.Background()) }

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
	inner verbs.CompChannel
	c     *mContext
}

// Context forwards to the inner channel.
func (ch *mChannel) Context() verbs.Context { return ch.inner.Context() }

func (ch *mChannel) GetEvent(ctx context.Context) (verbs.CQ, any, error) {
	var q verbs.CQ
	var cctx any
	var err error
	if ch.c.h.getEvent != nil {
		q, cctx, err = ch.c.h.getEvent(ch.inner, ctx)
	} else {
		q, cctx, err = ch.inner.GetEvent(ctx)
	}
	return ch.c.wrapCQ(q), cctx, err
}

func (ch *mChannel) TryGetEvent() (verbs.CQ, any, error) {
	var q verbs.CQ
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

// mutants are every family's mutants. Each <family>_mutants_test.go file has a
// function returning its family's; to add a family, list its function here.
var mutants = slices.Concat(
	asyncMutants(), avMutants(), chanMutants(), cqMutants(), cqexMutants(),
	dmMutants(), mrMutants(), mwMutants(), notifyMutants(), odpMutants(),
	pdMutants(), qpMutants(), qpcqMutants(), qpxMutants(), queryMutants(),
	reregMutants(), flushMutants(), sqDrainedMutants(), srqMutants(),
	srqerrMutants(), readingMutants(), statusMutants(), fieldMutants(),
	memoryMutants(), verbMutants(), forcedMutants(), elementMutants(),
	xrcMutants(), hostileMutants(),
)

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

// evObject is what ev names: its CQ, QP or SRQ, or nil.
func evObject(ev verbs.AsyncEvent) any {
	if q := ev.CQ(); q != nil {
		return q
	}
	if q := ev.QP(); q != nil {
		return q
	}
	if s := ev.SRQ(); s != nil {
		return s
	}
	return nil
}

// objEvent is an async event that names obj (a CQ, QP or SRQ, or nil for
// none) instead of what its AsyncEvent names.
type objEvent struct {
	verbs.AsyncEvent
	obj any
}

func (e objEvent) CQ() verbs.CQ   { q, _ := e.obj.(verbs.CQ); return q }
func (e objEvent) QP() verbs.QP   { q, _ := e.obj.(verbs.QP); return q }
func (e objEvent) SRQ() verbs.SRQ { s, _ := e.obj.(verbs.SRQ); return s }

// qAttr is ibv_query_qp of every attribute of the inner QP q.
func qAttr(q verbs.QP) (verbs.QPAttr, error) {
	a, _, err := q.Query(verbs.KnownQPAttrs &^ verbs.QPAttrRateLimit)
	return a, err
}

// limits returns the limits of the inner context c (zero on error).
func limits(c verbs.Context) conformance.Limits {
	l, _ := conformance.LimitsOf(c)
	return l
}
