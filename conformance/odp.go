package conformance

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"syscall"

	"github.com/verbsim/verbsim/verbs"
)

// Cases of the ODP family: on-demand paging. Whether the device has it is
// the reading NoODP; ibv_advise_mr is the optional verbs.MRAdviser of a PD
// (without it the ODP-04..06 cases log and end); the caps need
// verbs.ExQuerier.

// The values of IBV_ACCESS_ON_DEMAND and of the ODP capability bits
// (verbs.h), spelled out because ODP-01 is about these numbers.
const (
	accessOnDemand uint32 = 1 << 6

	odpSupport         uint64 = 1 << 0 // IBV_ODP_SUPPORT
	odpSupportImplicit uint64 = 1 << 1 // IBV_ODP_SUPPORT_IMPLICIT
	odpSend            uint32 = 1 << 0
	odpRecv            uint32 = 1 << 1
	odpSRQRecv         uint32 = 1 << 5
	odpTransportBits   uint32 = 1<<6 - 1 // SEND to SRQ_RECV: the bits of rdma-core 44
)

// The advice values and the flag of ibv_advise_mr (verbs.h).
const (
	advisePrefetch        = verbs.AdviseMRAdvice(0)
	advisePrefetchWrite   = verbs.AdviseMRAdvice(1)
	advisePrefetchNoFault = verbs.AdviseMRAdvice(2)
	adviseFlush           = verbs.AdviseMRFlags(1)
)

// adviserOf returns pd's ibv_advise_mr, or nil after a log line when the
// PD does not offer it.
func (e *env) adviserOf(pd verbs.PD) verbs.MRAdviser {
	e.T.Helper()
	if a, ok := pd.(verbs.MRAdviser); ok {
		return a
	}
	e.T.Logf("the PD offers no ibv_advise_mr (verbs.MRAdviser); nothing to check")
	return nil
}

// odpMR registers a fresh buffer of n bytes in pd with ON_DEMAND and
// access; the case needs ODP.
func (e *env) odpMR(pd verbs.PD, n int, access uint32) verbs.MR {
	e.T.Helper()
	return e.mrReg(pd, make([]byte, n), access|accessOnDemand)
}

// advise calls ibv_advise_mr and checks its errno (0: success).
func (e *env) advise(what string, a verbs.MRAdviser, advice verbs.AdviseMRAdvice, flags verbs.AdviseMRFlags, sgl []verbs.SGE, want syscall.Errno) {
	e.T.Helper()
	err := a.AdviseMR(advice, flags, sgl)
	call := fmt.Sprintf("%s: ibv_advise_mr(advice=%d, flags=%#x, num_sge=%d)", what, advice, flags, len(sgl))
	if want == 0 {
		if err != nil {
			e.T.Errorf("%s: %v, want success", call, err)
		}
		return
	}
	e.WantErrno(call, err, want)
}

// odpSGE names n bytes at offset off of mr.
func odpSGE(mr verbs.MR, off uint64, n uint32) verbs.SGE {
	return verbs.SGE{Addr: mr.Addr() + off, Length: n, LKey: mr.LKey()}
}

// odpCases are the cases of the ODP family in odp.go.
var odpCases = []Case{
	{"ODP-01", "odp_caps and xrc_odp_caps: zero without ODP; IBV_ODP_SUPPORT and known transport bits with it", odpCaps},
	{"ODP-02", "ON_DEMAND registers with ODP, is EOPNOTSUPP without; MR-01 is checked first", odpRegister},
	{"ODP-03", "traffic through on-demand MRs: SEND, WRITE, READ and atomics land as through any MR", odpTraffic},
	{"ODP-04", "ibv_advise_mr: EOPNOTSUPP without ODP; empty list, bad flags (EINVAL), then bad advice (EOPNOTSUPP)", adviseMRArgs},
	{"ODP-05", "ibv_advise_mr keys: no on-demand MR ENOENT, a window EINVAL, another PD or unwritable MR for PREFETCH_WRITE EPERM", adviseMRKeys},
	{"ODP-06", "ibv_advise_mr ranges: with FLUSH, below the IOVA or past the last page is EFAULT; without FLUSH unchecked", adviseMRRanges},
}

func odpCaps(t *tester, e *env) {
	q, ok := e.Ctx.(verbs.ExQuerier)
	if !ok {
		t.Logf("the context offers no ibv_query_device_ex; nothing to check")
		return
	}
	a, err := q.QueryDeviceEx(0)
	e.WantOK("ibv_query_device_ex", err)
	c := a.ODPCaps
	if e.Profile.NoODP {
		if c != (verbs.ODPCaps{}) || a.XRCODPCaps != 0 {
			t.Errorf("a device without ODP reports odp_caps %+v, xrc_odp_caps %#x; want all 0", c, a.XRCODPCaps)
		}
		return
	}
	if c.GeneralCaps&odpSupport == 0 {
		t.Errorf("general_caps %#x lacks IBV_ODP_SUPPORT on a device with ODP", c.GeneralCaps)
	}
	for _, tc := range []struct {
		name string
		caps uint32
	}{{"rc", c.RCODPCaps}, {"uc", c.UCODPCaps}, {"ud", c.UDODPCaps}, {"xrc", a.XRCODPCaps}} {
		if tc.caps&^odpTransportBits != 0 {
			t.Errorf("%s_odp_caps %#x has bits rdma-core 44 does not define", tc.name, tc.caps)
		}
	}
	if c.RCODPCaps&(odpSend|odpRecv) != odpSend|odpRecv {
		t.Errorf("rc_odp_caps %#x: an RC QP cannot send and receive through on-demand MRs", c.RCODPCaps)
	}
	if c.UCODPCaps&odpSRQRecv != 0 {
		t.Errorf("uc_odp_caps %#x claims SRQ receives, which a UC QP has not (QP-04)", c.UCODPCaps)
	}
	if c.GeneralCaps&odpSupportImplicit != 0 {
		t.Logf("general_caps %#x offers implicit ODP", c.GeneralCaps)
	}
}

func odpRegister(t *tester, e *env) {
	pd := e.pdAlloc()
	var want syscall.Errno
	if e.Profile.NoODP {
		want = syscall.EOPNOTSUPP
	}
	for _, access := range []uint32{0, accessLocalWrite, accessAll, accessLocalWrite | accessZeroBased} {
		mr, err := pd.RegMR(make([]byte, 100), verbs.AccessFlags(access|accessOnDemand))
		what := fmt.Sprintf("ibv_reg_mr(access=%#x)", access|accessOnDemand)
		if want != 0 {
			e.WantErrno(what, err, want)
			if mr != nil {
				t.Errorf("%s returned an MR along with %v", what, err)
				_ = mr.Dereg()
			}
			continue
		}
		e.WantOK(what, err)
		e.WantOK("ibv_dereg_mr", mr.Dereg())
	}
	_, err := pd.RegMR(make([]byte, 8), verbs.AccessFlags(accessRemoteWrite|accessOnDemand))
	e.WantErrno("ibv_reg_mr(REMOTE_WRITE|ON_DEMAND)", err, syscall.EINVAL)
	// ibv_rereg_mr with CHANGE_ACCESS applies the same check (MR-13).
	mr, r := e.reregMR(pd, accessLocalWrite)
	if r == nil {
		return
	}
	code := 0
	if want != 0 {
		code = reregErrCmd
	}
	e.rereg("to ON_DEMAND", r, reregAccess, nil, nil, accessLocalWrite|accessOnDemand, code, want)
	_ = mr
}

func odpTraffic(t *tester, e *env) {
	if e.Profile.NoODP {
		t.Logf("the device has no ODP; nothing to check")
		return
	}
	w := newWire(t, e)
	// Both sides' buffers registered again, on demand; the cases' MRs
	// become these.
	for _, s := range []*side{w.a, w.b} {
		s.mr = e.mrReg(s.pd, s.buf, accessAll|accessOnDemand)
	}
	a, b := w.connect(verbs.QPTypeRC, w.opts())
	fill(a.s.buf[:3000], 0x31)
	b.recvAt("a receive", 1, 10000, 4096)
	a.post("a SEND", sendWR(2, verbs.WRSend, a.s.sge(0, 3000)))
	if c := w.await(a.scq, 1, "the SEND")[0]; a.want("the SEND", c, 2, verbs.WCSuccess) {
		if r := w.await(b.rcq, 1, "its receive")[0]; b.want("the receive", r, 1, verbs.WCSuccess) &&
			!bytes.Equal(b.s.buf[10000:13000], a.s.buf[:3000]) {
			t.Errorf("the SEND's bytes did not land in the on-demand receive buffer")
		}
	}
	fill(a.s.buf[4000:6000], 0x32)
	a.post("a WRITE", rdmaWR(3, verbs.WRRDMAWrite, b.s, 20000, a.s.sge(4000, 2000)))
	if c := w.await(a.scq, 1, "the WRITE")[0]; a.want("the WRITE", c, 3, verbs.WCSuccess) &&
		!bytes.Equal(b.s.buf[20000:22000], a.s.buf[4000:6000]) {
		t.Errorf("the WRITE's bytes did not land in the on-demand MR")
	}
	fill(b.s.buf[30000:31000], 0x33)
	a.post("a READ", rdmaWR(4, verbs.WRRDMARead, b.s, 30000, a.s.sge(7000, 1000)))
	if c := w.await(a.scq, 1, "the READ")[0]; a.want("the READ", c, 4, verbs.WCSuccess) &&
		!bytes.Equal(a.s.buf[7000:8000], b.s.buf[30000:31000]) {
		t.Errorf("the READ's bytes did not land in the on-demand MR")
	}
	binary.LittleEndian.PutUint64(b.s.buf[40000:], 5)
	faa := rdmaWR(5, verbs.WRAtomicFetchAndAdd, b.s, 40000, a.s.sge(9000, 8))
	faa.CompareAdd = 7
	a.post("a FETCH_AND_ADD", faa)
	if c := w.await(a.scq, 1, "the FETCH_AND_ADD")[0]; a.want("the FETCH_AND_ADD", c, 5, verbs.WCSuccess) {
		if got := binary.LittleEndian.Uint64(b.s.buf[40000:]); got != 12 {
			t.Errorf("the on-demand target holds %d after adding 7 to 5, want 12", got)
		}
		if got := binary.LittleEndian.Uint64(a.s.buf[9000:]); got != 5 {
			t.Errorf("the on-demand result buffer holds %d, want the original 5", got)
		}
	}
	// A range past the on-demand MR is refused as for any MR (MR-04).
	bad := a.s.sge(len(a.s.buf)-8, 16)
	a.post("a SEND past the MR", sendWR(6, verbs.WRSend, bad))
	a.want("a SEND past the on-demand MR", w.await(a.scq, 1, "the bad SEND")[0], 6, verbs.WCLocProtErr)
}

func adviseMRArgs(t *tester, e *env) {
	pd := e.pdAlloc()
	a := e.adviserOf(pd)
	if a == nil {
		return
	}
	if e.Profile.NoODP {
		e.advise("no ODP", a, advisePrefetch, 0, nil, syscall.EOPNOTSUPP)
		mr := e.mrReg(pd, make([]byte, 64), accessLocalWrite)
		e.advise("no ODP", a, advisePrefetch, adviseFlush, []verbs.SGE{odpSGE(mr, 0, 8)}, syscall.EOPNOTSUPP)
		return
	}
	mr := e.odpMR(pd, 4096, accessLocalWrite)
	good := []verbs.SGE{odpSGE(mr, 0, 4096)}
	bad := []verbs.SGE{{LKey: mr.LKey() ^ 0xffffff00}}
	for _, advice := range []verbs.AdviseMRAdvice{advisePrefetch, advisePrefetchWrite, advisePrefetchNoFault} {
		for _, flags := range []verbs.AdviseMRFlags{0, adviseFlush} {
			e.advise("a good call", a, advice, flags, good, 0)
		}
	}
	e.advise("an empty list", a, advisePrefetch, adviseFlush, nil, syscall.EINVAL)
	e.advise("an empty list, bad flags", a, advisePrefetch, 2, nil, syscall.EINVAL)
	e.advise("bad flags, bad advice", a, 3, 1<<31, good, syscall.EINVAL)
	e.advise("bad advice, bad lkey", a, 3, adviseFlush, bad, syscall.EOPNOTSUPP)
	e.advise("advice 1<<31", a, 1<<31, 0, good, syscall.EOPNOTSUPP)
}

func adviseMRKeys(t *tester, e *env) {
	pd, pd2 := e.pdAlloc(), e.pdAlloc()
	a := e.adviserOf(pd)
	if a == nil || e.Profile.NoODP {
		return
	}
	odp := e.odpMR(pd, 256, accessLocalWrite)
	good := odpSGE(odp, 0, 16)
	plain := e.mrReg(pd, make([]byte, 256), accessLocalWrite)
	other := e.odpMR(pd2, 256, accessLocalWrite)
	ro := e.odpMR(pd, 256, accessRemoteRead)
	bind := e.odpMR(pd, 256, accessMWBind)
	gone, err := pd.RegMR(make([]byte, 256), verbs.AccessFlags(accessLocalWrite|accessOnDemand))
	e.WantOK("ibv_reg_mr", err)
	goneSGE := odpSGE(gone, 0, 8)
	e.WantOK("ibv_dereg_mr", gone.Dereg())
	cases := []struct {
		what   string
		advice verbs.AdviseMRAdvice
		sge    verbs.SGE
		want   syscall.Errno
	}{
		{"an unknown lkey", advisePrefetch, verbs.SGE{Addr: 0x1000, Length: 8, LKey: odp.LKey() ^ 0x7fffff00}, syscall.ENOENT},
		{"the lkey of an MR without ON_DEMAND", advisePrefetch, odpSGE(plain, 0, 8), syscall.ENOENT},
		{"the lkey of a deregistered MR", advisePrefetch, goneSGE, syscall.ENOENT},
		{"an on-demand MR of another PD", advisePrefetch, odpSGE(other, 0, 8), syscall.EPERM},
		{"PREFETCH_WRITE on a REMOTE_READ MR", advisePrefetchWrite, odpSGE(ro, 0, 8), syscall.EPERM},
		{"PREFETCH on a REMOTE_READ MR", advisePrefetch, odpSGE(ro, 0, 8), 0},
		{"PREFETCH_WRITE on an MW_BIND MR (writable)", advisePrefetchWrite, odpSGE(bind, 0, 8), 0},
	}
	for _, c := range cases {
		for _, flags := range []verbs.AdviseMRFlags{0, adviseFlush} {
			e.advise(c.what, a, c.advice, flags, []verbs.SGE{c.sge}, c.want)
			e.advise(c.what+" after a good SGE", a, c.advice, flags, []verbs.SGE{good, c.sge}, c.want)
		}
	}
	// A memory window's key is not an MR's.
	mw, err := pd.AllocMW(verbs.MWType1)
	if err != nil {
		t.Logf("ibv_alloc_mw: %v; the window's key is not checked", err)
		return
	}
	defer func() { _ = mw.Dealloc() }()
	e.advise("a memory window's key", a, advisePrefetch, adviseFlush, []verbs.SGE{{Length: 8, LKey: mw.RKey()}}, syscall.EINVAL)
}

func adviseMRRanges(t *tester, e *env) {
	pd := e.pdAlloc()
	a := e.adviserOf(pd)
	if a == nil || e.Profile.NoODP {
		return
	}
	mr := e.odpMR(pd, 100, accessLocalWrite)
	// The end of the last page the buffer touches, from the MR's
	// address: its address rounded up past its length.
	end := (mr.Addr()+mr.Length()+4095)&^4095 - mr.Addr()
	for _, c := range []struct {
		what string
		sge  verbs.SGE
		want syscall.Errno // with FLUSH
	}{
		{"the whole MR", odpSGE(mr, 0, 100), 0},
		{"up to the page end", odpSGE(mr, 0, uint32(end)), 0},
		{"one byte past the page end", odpSGE(mr, 0, uint32(end)+1), syscall.EFAULT},
		{"one byte below the MR", verbs.SGE{Addr: mr.Addr() - 1, Length: 2, LKey: mr.LKey()}, syscall.EFAULT},
		{"starting at the page end", odpSGE(mr, end, 0), syscall.EFAULT},
	} {
		e.advise(c.what+", FLUSH", a, advisePrefetch, adviseFlush, []verbs.SGE{c.sge}, c.want)
		e.advise(c.what+", no FLUSH", a, advisePrefetch, 0, []verbs.SGE{c.sge}, 0)
	}
}
