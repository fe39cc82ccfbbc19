package sim_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/internal/notify"
	"github.com/verbsim/verbsim/sim/trace"
	"github.com/verbsim/verbsim/verbs"
)

// badWorld is the set of objects the bad-input tests call verbs on and
// pass as arguments: live objects of one context, objects of a second
// context of the same device, of a second PD of the first context, of
// another fabric, and destroyed objects of every kind. Each case gets a
// fresh world, so a case that wrongly changes something cannot hide
// another's failure.
type badWorld struct {
	f, of *sim.Fabric // of is the other fabric
	log   *trace.Log
	dev   *sim.Device
	ctx   *sim.Context
	pd    *sim.PD
	ch    *sim.CompChannel
	cq    *sim.CQ // used by qp and peer, so its destroy is EBUSY
	free  *sim.CQ // used by nothing, with one completion and one event read but not acked
	srq   *sim.SRQ
	qp    *sim.QP // RC, connected to peer, in RTS
	peer  *sim.QP
	ud    *sim.QP // UD, in RTS
	sq    *sim.QP // RC on srq, in RESET
	mr    *sim.MR
	mwr   *sim.MR // with MW_BIND
	mw    *sim.MW // type 1, unbound
	mw2   *sim.MW // type 2, unbound
	ah    *sim.AH
	ev    sim.AsyncEvent // an async event read from ctx, not acked
	xrcd  *sim.XRCD      // an XRC domain of ctx, with xsrq in it
	xsrq  *sim.SRQ       // an XRC SRQ in xrcd, completing on cq
	dm    *sim.DM        // device memory of ctx, 256 bytes
	dmmr  *sim.MR        // an MR of pd on all of dm, so dm's Free is EBUSY

	pdB  *sim.PD // a second PD of ctx
	srqB *sim.SRQ
	mrB  *sim.MR
	ahB  *sim.AH

	ctx2  *sim.Context // a second context of dev
	pd2   *sim.PD
	ch2   *sim.CompChannel
	cq2   *sim.CQ
	srq2  *sim.SRQ
	qp2   *sim.QP // RC in RESET
	xrcd2 *sim.XRCD
	dm2   *sim.DM

	octx  *sim.Context // on the other fabric
	opd   *sim.PD
	och   *sim.CompChannel
	ocq   *sim.CQ
	osrq  *sim.SRQ
	oqp   *sim.QP // RC in RESET
	omr   *sim.MR
	omw   *sim.MW
	oah   *sim.AH
	oxrcd *sim.XRCD

	deadCtx  *sim.Context // closed
	deadPD   *sim.PD      // deallocated
	deadCh   *sim.CompChannel
	deadCQ   *sim.CQ
	deadSRQ  *sim.SRQ
	deadQP   *sim.QP
	deadMR   *sim.MR
	deadMW   *sim.MW
	deadAH   *sim.AH
	deadXRCD *sim.XRCD      // closed
	deadDM   *sim.DM        // freed
	deadEv   sim.AsyncEvent // read and acked

	fault     *sim.Fault // armed; it matches no packet
	deadFault *sim.Fault // removed

	problems []string // found by a case's call; see failf
}

// badMust returns v, or panics on err: building the world is not under
// test, and a failure there is a bug of the test.
func badMust[T any](v T, err error) T {
	badNoErr(err)
	return v
}

func badNoErr(err error) {
	if err != nil {
		panic("bad-input world: " + err.Error())
	}
}

func newBadWorld(t testing.TB) *badWorld {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Fatal(p)
		}
	}()
	w := &badWorld{log: &trace.Log{}}
	w.f = badMust(sim.NewFabric(sim.Config{Trace: w.log}))
	w.of = badMust(sim.NewFabric(sim.Config{Devices: []sim.DeviceConfig{{Name: "other0"}}}))
	w.dev = w.f.Devices()[0]
	w.ctx = badMust(w.dev.Open())
	w.pd = badMust(w.ctx.AllocPD())
	w.ch = badMust(w.ctx.CreateCompChannel())
	w.cq = badMust(w.ctx.CreateCQ(16, "cq", w.ch, 0))
	w.free = badMust(w.ctx.CreateCQ(4, "free", w.ch, 1))
	w.srq = badMust(w.pd.CreateSRQ(sim.SRQInitAttr{Attr: verbs.SRQAttr{MaxWR: 8, MaxSGE: 2}}))
	rc := sim.QPInitAttr{SendCQ: w.cq, RecvCQ: w.cq, Type: verbs.QPTypeRC,
		Cap: verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 2, MaxRecvSGE: 2, MaxInlineData: 16}}
	w.qp = badMust(w.pd.CreateQP(rc))
	w.peer = badMust(w.pd.CreateQP(rc))
	badNoErr(sim.Connect(w.qp, w.peer, sim.ConnectOptions{}))
	ud := rc
	ud.Type = verbs.QPTypeUD
	w.ud = badMust(w.pd.CreateQP(ud))
	badNoErr(sim.ReadyUD(w.ud, 0x11111111))
	withSRQ := rc
	withSRQ.SRQ, withSRQ.Cap.MaxRecvWR, withSRQ.Cap.MaxRecvSGE = w.srq, 0, 0
	w.sq = badMust(w.pd.CreateQP(withSRQ))
	buf := make([]byte, 64)
	w.mr = badMust(w.pd.RegMR(buf, verbs.AccessLocalWrite|verbs.AccessRemoteWrite))
	w.mwr = badMust(w.pd.RegMR(make([]byte, 64), verbs.AccessLocalWrite|verbs.AccessMWBind))
	w.mw = badMust(w.pd.AllocMW(verbs.MWType1))
	w.mw2 = badMust(w.pd.AllocMW(verbs.MWType2))
	port := badMust(w.ctx.QueryPort(1))
	w.ah = badMust(w.pd.CreateAH(verbs.AHAttr{DLID: port.LID, PortNum: 1}))
	w.xrcd = badMust(w.ctx.OpenXRCD(badXRCDAttr))
	w.xsrq = badMust(w.ctx.CreateSRQEx(w.xrcAttr()))
	w.dm = badMust(w.ctx.AllocDM(verbs.AllocDMAttr{Length: 256}))
	w.dmmr = badMust(w.pd.RegDMMR(w.dm, 0, 256, verbs.AccessZeroBased|verbs.AccessLocalWrite|verbs.AccessRemoteWrite))

	// One completion in free and one of its events read but not acked.
	badNoErr(w.free.ReqNotify(false))
	badMust(w.free.Push(verbs.WC{WRID: 7, Status: verbs.WCSuccess, Opcode: verbs.WCRecv}, false))
	if c, _, err := w.ch.TryGetEvent(); err != nil || c != w.free {
		t.Fatalf("event of free: %v, %v", c, err)
	}
	// Two async events of ctx: one read and acked, one read and held.
	badNoErr(w.dev.SetPortState(1, false))
	badNoErr(w.dev.SetPortState(1, true))
	w.deadEv = badMust(w.ctx.TryGetAsyncEvent())
	badNoErr(w.deadEv.Ack())
	w.ev = badMust(w.ctx.TryGetAsyncEvent())

	w.pdB = badMust(w.ctx.AllocPD())
	w.srqB = badMust(w.pdB.CreateSRQ(sim.SRQInitAttr{Attr: verbs.SRQAttr{MaxWR: 8, MaxSGE: 2}}))
	w.mrB = badMust(w.pdB.RegMR(make([]byte, 64), verbs.AccessLocalWrite))
	w.ahB = badMust(w.pdB.CreateAH(verbs.AHAttr{DLID: port.LID, PortNum: 1}))

	w.ctx2 = badMust(w.dev.Open())
	w.pd2 = badMust(w.ctx2.AllocPD())
	w.ch2 = badMust(w.ctx2.CreateCompChannel())
	w.cq2 = badMust(w.ctx2.CreateCQ(16, nil, w.ch2, 0))
	w.srq2 = badMust(w.pd2.CreateSRQ(sim.SRQInitAttr{Attr: verbs.SRQAttr{MaxWR: 8, MaxSGE: 2}}))
	rc2 := rc
	rc2.SendCQ, rc2.RecvCQ = w.cq2, w.cq2
	w.qp2 = badMust(w.pd2.CreateQP(rc2))
	w.xrcd2 = badMust(w.ctx2.OpenXRCD(badXRCDAttr))
	w.dm2 = badMust(w.ctx2.AllocDM(verbs.AllocDMAttr{Length: 64}))

	w.octx = badMust(w.of.Devices()[0].Open())
	w.opd = badMust(w.octx.AllocPD())
	w.och = badMust(w.octx.CreateCompChannel())
	w.ocq = badMust(w.octx.CreateCQ(16, nil, w.och, 0))
	w.osrq = badMust(w.opd.CreateSRQ(sim.SRQInitAttr{Attr: verbs.SRQAttr{MaxWR: 8, MaxSGE: 2}}))
	orc := rc
	orc.SendCQ, orc.RecvCQ = w.ocq, w.ocq
	w.oqp = badMust(w.opd.CreateQP(orc))
	w.omr = badMust(w.opd.RegMR(make([]byte, 64), verbs.AccessLocalWrite))
	w.omw = badMust(w.opd.AllocMW(verbs.MWType1))
	oport := badMust(w.octx.QueryPort(1))
	w.oah = badMust(w.opd.CreateAH(verbs.AHAttr{DLID: oport.LID, PortNum: 1}))
	w.oxrcd = badMust(w.octx.OpenXRCD(badXRCDAttr))

	w.deadCtx = badMust(w.dev.Open())
	badNoErr(w.deadCtx.Close())
	w.deadPD = badMust(w.ctx.AllocPD())
	badNoErr(w.deadPD.Dealloc())
	w.deadCh = badMust(w.ctx.CreateCompChannel())
	badNoErr(w.deadCh.Destroy())
	w.deadCQ = badMust(w.ctx.CreateCQ(4, nil, nil, 0))
	badNoErr(w.deadCQ.Destroy())
	w.deadSRQ = badMust(w.pd.CreateSRQ(sim.SRQInitAttr{Attr: verbs.SRQAttr{MaxWR: 8, MaxSGE: 2}}))
	badNoErr(w.deadSRQ.Destroy())
	w.deadQP = badMust(w.pd.CreateQP(rc))
	badNoErr(w.deadQP.Destroy())
	w.deadMR = badMust(w.pd.RegMR(make([]byte, 64), verbs.AccessLocalWrite))
	badNoErr(w.deadMR.Dereg())
	w.deadMW = badMust(w.pd.AllocMW(verbs.MWType1))
	badNoErr(w.deadMW.Dealloc())
	w.deadAH = badMust(w.pd.CreateAH(verbs.AHAttr{DLID: port.LID, PortNum: 1}))
	badNoErr(w.deadAH.Destroy())
	w.deadXRCD = badMust(w.ctx.OpenXRCD(badXRCDAttr))
	badNoErr(w.deadXRCD.Close())
	w.deadDM = badMust(w.ctx.AllocDM(verbs.AllocDMAttr{Length: 64}))
	badNoErr(w.deadDM.Free())
	never := func(sim.Packet) bool { return false }
	w.fault = badMust(w.f.InjectPacketFault(sim.PacketFault{Match: never, Action: sim.FaultDrop}))
	w.deadFault = badMust(w.f.InjectPacketFault(sim.PacketFault{Match: never, Action: sim.FaultDrop}))
	w.deadFault.Remove()
	return w
}

// badXRCDAttr opens an XRC domain of one's own (fd -1).
var badXRCDAttr = verbs.XRCDInitAttr{CompMask: verbs.XRCDInitFD | verbs.XRCDInitOFlags, FD: -1}

// xrcAttr returns the arguments of a good XRC SRQ in w.xrcd, on w.cq.
func (w *badWorld) xrcAttr() sim.SRQInitAttrEx {
	return sim.SRQInitAttrEx{Attr: verbs.SRQAttr{MaxWR: 4, MaxSGE: 1}, Type: verbs.SRQTXRC,
		CompMask: verbs.SRQInitType | verbs.SRQInitPD | verbs.SRQInitXRCD | verbs.SRQInitCQ, PD: w.pd, XRCD: w.xrcd, CQ: w.cq}
}

// sge returns a scatter/gather entry inside w.mr.
func (w *badWorld) sge() verbs.SGE {
	return verbs.SGE{Addr: w.mr.Addr(), Length: 8, LKey: w.mr.LKey()}
}

// snapshot describes everything a rejected verb must leave unchanged:
// each object's state and counters, the device's and contexts' object
// counts, the clock and the engine. It leaves out the trace, which
// checkTrace compares.
func (w *badWorld) snapshot() string {
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	for _, f := range []*sim.Fabric{w.f, w.of} {
		ready, future := f.Pending()
		line("fabric: now=%d pending=%d/%d stats=%+v", f.Now(), ready, future, f.Stats())
	}
	line("%s", sim.DeviceCounts(w.dev))
	line("%s", sim.DeviceCounts(w.of.Devices()[0]))
	for name, c := range map[string]*sim.Context{"ctx": w.ctx, "ctx2": w.ctx2, "deadCtx": w.deadCtx, "octx": w.octx} {
		r, a := sim.EngineAsyncQueue(c).Counts()
		line("%s: %s async: len=%d read=%d acked=%d", name, sim.ContextCounts(c), sim.EngineAsyncQueue(c).Len(), r, a)
	}
	for name, pd := range map[string]*sim.PD{"pd": w.pd, "pdB": w.pdB, "pd2": w.pd2, "opd": w.opd, "deadPD": w.deadPD} {
		line("%s: %s", name, sim.PDCounts(pd))
	}
	for name, c := range map[string]*sim.CQ{"cq": w.cq, "free": w.free, "cq2": w.cq2, "ocq": w.ocq, "deadCQ": w.deadCQ} {
		line("%s: %+v cqe=%d armed=%v", name, c.Snapshot(), c.CQE(), c.Armed())
	}
	for name, ch := range map[string]*sim.CompChannel{"ch": w.ch, "ch2": w.ch2, "och": w.och, "deadCh": w.deadCh} {
		line("%s: len=%d refs=%d destroyed=%v", name, ch.Len(), ch.Refs(), ch.Destroyed())
	}
	for name, q := range map[string]*sim.QP{"qp": w.qp, "peer": w.peer, "ud": w.ud, "sq": w.sq, "qp2": w.qp2, "oqp": w.oqp, "deadQP": w.deadQP} {
		s, r := q.Outstanding()
		line("%s: num=%#x state=%v destroyed=%v out=%d/%d stats=%+v %s", name, q.Num(), q.State(), q.Destroyed(), s, r, q.Stats(), tallyString(sim.EngineQP(q).Tally()))
		a, ia, err := q.Query(verbs.QueryableQPAttrs)
		line("  query: %+v %+v %v", a, ia.Cap, err)
	}
	for name, s := range map[string]*sim.SRQ{"srq": w.srq, "srqB": w.srqB, "srq2": w.srq2, "osrq": w.osrq, "deadSRQ": w.deadSRQ, "xsrq": w.xsrq} {
		a, err := s.Query()
		n, nerr := s.GetSRQNum()
		line("%s: len=%d attr=%+v err=%v %s srqn=%#x/%v", name, s.Len(), a, err, tallyString(sim.EngineSRQ(s).Tally()), n, nerr)
	}
	for name, x := range map[string]*sim.XRCD{"xrcd": w.xrcd, "xrcd2": w.xrcd2, "oxrcd": w.oxrcd, "deadXRCD": w.deadXRCD} {
		line("%s: %s", name, sim.XRCDState(x))
	}
	for name, d := range map[string]*sim.DM{"dm": w.dm, "dm2": w.dm2, "deadDM": w.deadDM} {
		head := make([]byte, 8)
		err := d.MemcpyFrom(head, 0)
		line("%s: len=%d head=%x %v", name, d.Length(), head, err)
	}
	for name, m := range map[string]*sim.MR{"mr": w.mr, "mrB": w.mrB, "omr": w.omr, "deadMR": w.deadMR, "dmmr": w.dmmr} {
		line("%s: addr=%#x len=%d lkey=%#x rkey=%#x access=%v usable=%v", name, m.Addr(), m.Length(), m.LKey(), m.RKey(), m.Access(), sim.MRUsable(m))
	}
	for name, m := range map[string]*sim.MW{"mw": w.mw, "mw2": w.mw2, "omw": w.omw, "deadMW": w.deadMW} {
		line("%s: %s", name, sim.MWState(m))
	}
	for name, a := range map[string]*sim.AH{"ah": w.ah, "ahB": w.ahB, "oah": w.oah, "deadAH": w.deadAH} {
		line("%s: %+v", name, a.Attr())
	}
	for _, n := range []uint8{1} {
		p, err := w.ctx.QueryPort(n)
		line("port %d: %+v %v", n, p, err)
	}
	return b.String()
}

func tallyString(t *notify.Tally) string {
	a, b, c, d := t.Counts()
	return fmt.Sprintf("tally=%d/%d/%d/%d", a, b, c, d)
}

// snapshotLines sorts the lines of a snapshot, which iterates maps.
func snapshotLines(s string) []string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	// Continuation lines ("  ...") stay after the line they belong to.
	var groups []string
	for _, x := range l {
		if strings.HasPrefix(x, "  ") && len(groups) > 0 {
			groups[len(groups)-1] += "\n" + x
			continue
		}
		groups = append(groups, x)
	}
	slices.Sort(groups)
	return groups
}

// diffSnapshots returns the groups that differ between two snapshots, or
// "" when they are equal.
func diffSnapshots(before, after string) string {
	a, b := snapshotLines(before), snapshotLines(after)
	seen := map[string]bool{}
	for _, x := range a {
		seen[x] = true
	}
	var out []string
	for _, x := range b {
		if !seen[x] {
			out = append(out, "+ "+x)
		}
	}
	seen = map[string]bool{}
	for _, x := range b {
		seen[x] = true
	}
	for _, x := range a {
		if !seen[x] {
			out = append(out, "- "+x)
		}
	}
	return strings.Join(out, "\n")
}

// checkTrace reports trace records added since n that describe something
// other than a refusal: a rejected verb may log that it failed (a record
// with a reason), nothing else.
func (w *badWorld) checkTrace(n int) string {
	recs := w.f.TraceRecords()
	var bad []string
	for _, r := range recs[min(n, len(recs)):] {
		if r.Why == "" {
			bad = append(bad, r.String())
		}
	}
	return strings.Join(bad, "\n")
}
