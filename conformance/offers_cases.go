package conformance

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/verbsim/verbsim/verbs"
)

// The cases of what a device offers (offers.go): each checks, under the
// profile's reading, either the refusal with its errno and nothing made,
// or that the capability works. Together with QP-25 and QP-26 (a post
// before RTS) they are where the provider profiles differ most.

// wantRefused checks that a create refused with EOPNOTSUPP returned no
// object, or, when the profile offers it, that it succeeded.
func wantRefused(t *tester, what string, made bool, err error, refused bool) {
	t.Helper()
	switch {
	case refused && (made || !errors.Is(err, syscall.EOPNOTSUPP)):
		t.Errorf("%s: made %v, error %v; want none and EOPNOTSUPP", what, made, err)
	case !refused && (!made || err != nil):
		t.Errorf("%s: made %v, error %v; want it made", what, made, err)
	}
}

// offersPost posts one request of opcode op on a new RC QP in RTS of w and
// checks the outcome: refused with EINVAL when the device does not offer
// op, else posted; the posted one is flushed as the case ends.
func offersPost(w *qpWorld, op verbs.WROpcode, refused bool, rule string) {
	w.t.Helper()
	q := w.at(verbs.QPTypeRC, verbs.QPStateRTS)
	wr := verbs.SendWR{WRID: 1, Opcode: op, RemoteAddr: 0x1000, RKey: 0x1234, Flags: verbs.SendSignaled}
	switch op {
	case verbs.WRAtomicCmpAndSwp, verbs.WRAtomicFetchAndAdd, verbs.WRAtomicWrite:
		wr.SGList = []verbs.SGE{w.sge(0, 8)}
	}
	n, err := q.PostSend([]verbs.SendWR{wr})
	what := fmt.Sprintf("%v on an RC QP in RTS (%s)", op, rule)
	if refused {
		w.wantPost(what, n, err, 0, syscall.EINVAL)
		return
	}
	w.wantPost(what, n, err, 1, 0)
	w.toErr(q, verbs.QPStateRTS)
	w.collect(w.cq, 1, what)
}

// offersCases are the cases of what a device offers.
var offersCases = []Case{
	{"QP-41", "[IMPL] the QP types a device offers: the others are EOPNOTSUPP at ibv_create_qp, and no UD means no AHs", offeredQPTypes},
	{"QP-42", "[IMPL] atomic_cap NONE: the atomic operations are refused with EINVAL at post", offeredAtomics},
	{"QP-43", "[IMPL] no immediate data (iWARP): SEND_WITH_IMM and RDMA_WRITE_WITH_IMM are refused with EINVAL at post", offeredImmData},
	{"MW-08", "[IMPL] no memory windows: max_mw 0, ibv_alloc_mw EOPNOTSUPP, BIND_MW and LOCAL_INV refused with EINVAL", offeredMW},
	{"SRQ-13", "[IMPL] no shared receive queues: max_srq 0 and ibv_create_srq EOPNOTSUPP", offeredSRQ},
	{"CQX-11", "[IMPL] a provider without ibv_create_cq_ex: EOPNOTSUPP whatever it asks, while ibv_create_cq works", offeredCQEx},
	{"QPX-06", "[IMPL] a provider without ibv_create_qp_ex: comp_mask beyond IBV_QP_INIT_ATTR_PD is EOPNOTSUPP; the PD alone works", offeredQPEx},
	{"MR-18", "[IMPL] a provider without ibv_rereg_mr: EOPNOTSUPP and IBV_REREG_MR_ERR_INPUT, the MR as it was", offeredRereg},
	{"QP-26", "[IMPL] under PostAnyState (irdma) sends posted before RTS wait for a post in RTS, then run first, in order", postBeforeRTSWaitsForDoorbell},
}

func offeredQPTypes(t *tester, e *env) {
	w := qpSetup(t, e)
	for _, typ := range qpTypes {
		q, err := w.pd.CreateQP(verbs.QPInitAttr{Type: typ, Cap: w.qpCap(), SendCQ: w.cq, RecvCQ: w.cq})
		if q != nil {
			w.t.Cleanup(func() { c, cancel := graceful(); defer cancel(); _ = q.DestroyContext(c) })
		}
		wantRefused(t, fmt.Sprintf("ibv_create_qp(%v)", typ), q != nil, err, !e.Profile.OffersQP(typ))
	}
	ah, err := w.pd.CreateAH(pdAHAttr)
	if ah != nil {
		t.Cleanup(func() { _ = ah.Destroy() })
	}
	wantRefused(t, "ibv_create_ah", ah != nil, err, e.Profile.NoUD)
	if a, err := e.Ctx.QueryDevice(); err == nil && e.Profile.NoUD && a.MaxAH != 0 {
		t.Errorf("max_ah %d on a device without UD; want 0", a.MaxAH)
	}
}

func offeredAtomics(t *tester, e *env) {
	a, err := e.Ctx.QueryDevice()
	if err != nil {
		t.Fatalf("ibv_query_device: %v", err)
	}
	if none := a.AtomicCap == verbs.AtomicNone; none != e.Profile.NoAtomics {
		t.Errorf("atomic_cap %v under NoAtomics=%v", a.AtomicCap, e.Profile.NoAtomics)
	}
	w := qpSetup(t, e)
	for _, op := range []verbs.WROpcode{verbs.WRAtomicCmpAndSwp, verbs.WRAtomicFetchAndAdd, verbs.WRAtomicWrite} {
		offersPost(w, op, e.Profile.NoAtomics, "QP-42")
	}
}

func offeredImmData(t *tester, e *env) {
	w := qpSetup(t, e)
	for _, op := range []verbs.WROpcode{verbs.WRSendWithImm, verbs.WRRDMAWriteWithImm} {
		offersPost(w, op, e.Profile.NoImmData, "QP-43")
	}
}

func offeredMW(t *tester, e *env) {
	a, err := e.Ctx.QueryDevice()
	if err != nil {
		t.Fatalf("ibv_query_device: %v", err)
	}
	w := qpSetup(t, e)
	if e.Profile.NoMW {
		if a.MaxMW != 0 || a.DeviceCapFlags&(verbs.DeviceMemWindow|verbs.DeviceMemWindow2A|verbs.DeviceMemWindow2B) != 0 {
			t.Errorf("max_mw %d, device_cap_flags %#x on a device without windows; want 0 and no window flag", a.MaxMW, uint32(a.DeviceCapFlags))
		}
		for _, typ := range []verbs.MWType{verbs.MWType1, verbs.MWType2} {
			mw, err := w.pd.AllocMW(typ)
			wantRefused(t, fmt.Sprintf("ibv_alloc_mw(%v)", typ), mw != nil, err, true)
		}
		offersPost(w, verbs.WRBindMW, true, "MW-08")
		offersPost(w, verbs.WRLocalInv, true, "MW-08")
		return
	}
	if a.DeviceCapFlags&verbs.DeviceMemWindow == 0 {
		t.Logf("not checked: the device reports no IBV_DEVICE_MEM_WINDOW")
		return
	}
	mw, err := w.pd.AllocMW(verbs.MWType1)
	wantRefused(t, "ibv_alloc_mw(type 1)", mw != nil, err, false)
	if mw != nil {
		w.e.WantOK("ibv_dealloc_mw", mw.Dealloc())
	}
}

func offeredSRQ(t *tester, e *env) {
	w := qpSetup(t, e)
	s, err := w.pd.CreateSRQ(verbs.SRQInitAttr{Attr: verbs.SRQAttr{MaxWR: 4, MaxSGE: 1}})
	if s != nil {
		t.Cleanup(func() { c, cancel := graceful(); defer cancel(); _ = s.DestroyContext(c) })
	}
	wantRefused(t, "ibv_create_srq", s != nil, err, e.Profile.NoSRQ)
	if e.Profile.NoSRQ && (w.lim.MaxSRQWR != 0 || w.lim.MaxSRQSGE != 0) {
		t.Errorf("max_srq_wr %d, max_srq_sge %d on a device without SRQs; want 0", w.lim.MaxSRQWR, w.lim.MaxSRQSGE)
	}
}

func offeredCQEx(t *tester, e *env) {
	cr, ok := e.Ctx.(verbs.ExCQCreator)
	if !ok {
		t.Logf("not checked: the context has no ibv_create_cq_ex (verbs.ExCQCreator)")
		return
	}
	q, err := cr.CreateCQEx(verbs.CQInitAttrEx{CQE: 4, WCFlags: verbs.WCStandardFlags})
	if q != nil {
		e.Track(q)
	}
	wantRefused(t, "ibv_create_cq_ex(cqe 4, IBV_WC_STANDARD_FLAGS)", q != nil, err, e.Profile.NoCQEx)
	e.CQ(4, nil, nil) // the classic verb works either way
}

func offeredQPEx(t *tester, e *env) {
	w := qpSetup(t, e)
	c, ok := w.pd.(verbs.QPExCreator)
	if !ok {
		t.Logf("not checked: the PD has no ibv_create_qp_ex (verbs.QPExCreator)")
		return
	}
	base := verbs.QPInitAttr{Type: verbs.QPTypeRC, Cap: w.qpCap(), SendCQ: w.cq, RecvCQ: w.cq}
	for _, k := range []struct {
		mask    verbs.QPInitAttrMask
		refused bool
	}{
		{verbs.QPInitAttrPD, false},
		{verbs.QPInitAttrPD | verbs.QPInitAttrSendOpsFlags, e.Profile.NoQPEx},
	} {
		q, err := c.CreateQPEx(verbs.QPInitAttrEx{QPInitAttr: base, CompMask: k.mask, SendOpsFlags: verbs.QPExWithSend})
		if q != nil {
			w.t.Cleanup(func() { c, cancel := graceful(); defer cancel(); _ = q.DestroyContext(c) })
		}
		wantRefused(t, fmt.Sprintf("ibv_create_qp_ex(RC, comp_mask %#x)", uint32(k.mask)), q != nil, err, k.refused)
	}
}

func offeredRereg(t *tester, e *env) {
	pd := e.pdAlloc()
	mr := e.mrReg(pd, make([]byte, 256), accessLocalWrite)
	r, ok := mr.(verbs.MRReregisterer)
	if !ok {
		t.Logf("not checked: the MR has no ibv_rereg_mr (verbs.MRReregisterer)")
		return
	}
	lkey, rkey := mr.LKey(), mr.RKey()
	err := r.Rereg(verbs.ReregChangeAccess, nil, nil, verbs.AccessLocalWrite|verbs.AccessRemoteRead)
	if !e.Profile.NoRereg {
		if err != nil {
			t.Errorf("ibv_rereg_mr(CHANGE_ACCESS): %v, want success", err)
		}
		return
	}
	if !errors.Is(err, syscall.EOPNOTSUPP) || verbs.ReregFailureOf(err) != verbs.ReregErrInput {
		t.Errorf("ibv_rereg_mr(CHANGE_ACCESS): %v (%v), want EOPNOTSUPP and IBV_REREG_MR_ERR_INPUT", err, verbs.ReregFailureOf(err))
	}
	if mr.LKey() != lkey || mr.RKey() != rkey {
		t.Errorf("keys %#x/%#x after the refused ibv_rereg_mr; want %#x/%#x", mr.LKey(), mr.RKey(), lkey, rkey)
	}
}

func postBeforeRTSWaitsForDoorbell(t *tester, e *env) {
	if !e.Profile.PostAnyState {
		t.Logf("not checked: the profile refuses posts before RTS (the other QP-26 case checks that)")
		return
	}
	w := newWire(t, e)
	oa := w.opts()
	oa.upTo = verbs.QPStateReset
	a, b := w.connect2(verbs.QPTypeRC, oa, w.opts())
	b.recvAt("two receives", 1, 0, 64)
	b.recvAt("two receives", 2, 64, 64)
	a.post("a SEND posted in RESET", sendWR(11, verbs.WRSend, a.s.sge(0, 16)))
	w.bring(a, b, verbs.QPStateRTS)
	w.settle()
	if got, _ := w.pollNow(a.scq); len(got) != 0 {
		t.Errorf("%d completions after RESET→RTS with no post in RTS; want none: the request waits for a doorbell (QP-26 B)", len(got))
	}
	a.post("a SEND posted in RTS", sendWR(12, verbs.WRSend, a.s.sge(16, 16)))
	got := w.await(a.scq, 2, "the two SENDs")
	if len(got) == 2 && (got[0].WRID != 11 || got[1].WRID != 12 || got[0].Status != verbs.WCSuccess || got[1].Status != verbs.WCSuccess) {
		t.Errorf("send completions %d (%v), %d (%v); want 11 then 12, both SUCCESS", got[0].WRID, got[0].Status, got[1].WRID, got[1].Status)
	}
	if r := w.await(b.rcq, 2, "the two receives"); len(r) == 2 && (r[0].WRID != 1 || r[1].WRID != 2) {
		t.Errorf("receives %d, %d; want 1 then 2", r[0].WRID, r[1].WRID)
	}
}
