package ops

import (
	"fmt"

	"github.com/verbsim/verbsim/conformance"
	"github.com/verbsim/verbsim/conformance/model"
	"github.com/verbsim/verbsim/verbs"
	"pgregory.net/rapid"
)

// This file runs traffic between QPs as a rapid state machine
// (TrafficStateMachine) against the traffic model of conformance/model.

// Limits of the traffic state machine's world.
const (
	maxTrafficQPs = 8
	regionLen     = 768     // bytes of one buffer region
	sendRegions   = 16      // send regions per QP: at most this many sends held (QP-36)
	recvRegions   = 16      // receive regions per QP: at most this many receives held
	targetRegions = 12      // RDMA WRITE target regions per QP
	exposedLen    = 256     // bytes at the end of an RC QP's MR that only memory windows reach
	maxMWs        = 3       // live windows per QP
	maxMsgLen     = 640     // the longest RC or UC message
	maxDepth      = 6       // the deepest queue asked for
	inlineLen     = 64      // max_inline_data asked for
	idleLimit     = 1 << 26 // how long RunUntilIdle may run while an RNR wait lasts for ever
	faultLimit    = 1 << 36 // and under faults, where nothing waits for ever
	// A request held completes at most once, so a CQ never holds more than
	// this, under either reading of QP-29 (CQ-25).
	trafficCQE = maxTrafficQPs * (sendRegions + recvRegions)
)

// TrafficStateMachine runs random traffic between RC, UC and UD QPs on the
// devices of a fabric newFabric makes, and compares every completion, the
// bytes in every receive buffer and RDMA WRITE target and the state of every
// QP with the traffic model (model.Traffic). Its actions create RC and UC
// connections (on one device or two) and UD QPs, post receive requests of
// random sizes and scatter lists, post SENDs, SENDs with immediate, RDMA
// WRITEs (some with a bad rkey) and WRITEs with immediate of random sizes,
// signaling and gather lists, and UD datagrams to random QPs with right or
// wrong Q_Keys, poll CQs with random batch sizes, let time pass or run the
// fabric until idle, move QPs to ERR, and reset and reconnect them; they
// also allocate, bind, invalidate and deallocate memory windows and reach
// them with WRITEs, READs and atomics (traffic_mw.go). A post
// now and then asks for more than the queue takes: it must stop with ENOMEM
// where QP-29 and QP-31 say under the fabric's reading
// (TrafficProfile.FreeSlotOnRetire), and under reading B the posts use the
// room that requests retired but not polled give back. With faults the
// fabric drops, duplicates and delays packets, and the comparison uses the
// weaker guarantees the rules give then.
//
// Run it with rapid.Check, or as a fuzz target with rapid.MakeFuzz.
func TrafficStateMachine(t *rapid.T, newFabric conformance.NewTrafficFabric, faults bool) {
	f, err := newFabric(rapid.Uint64().Draw(t, "fabric seed"), faults)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := &trafficRun{t: t, f: f, prof: f.TrafficProfile(), faults: faults,
		recvAt: map[uint64]bufRef{}, targetAt: map[uint64]bufRef{}, localAt: map[uint64]bufRef{}}
	r.m = model.NewTraffic(r.prof.Readings, model.Fabric{
		Settles:     r.prof.Settles,
		SyncFlush:   r.prof.SyncFlush,
		Lossy:       faults,
		UDReorder:   r.prof.UDReorder,
		UDDuplicate: r.prof.UDDuplicate,
		MTU:         r.prof.MTU,
	})
	r.setup()
	// Start with a connection and a UD QP or two, so that the steps spend
	// their budget on traffic.
	r.createConn(t, []verbs.QPType{verbs.QPTypeRC, verbs.QPTypeUC}[rapid.IntRange(0, 1).Draw(t, "first connection")])
	for range rapid.IntRange(0, 2).Draw(t, "ud qps") {
		r.createUD(t)
	}
	repeatWeighted(t, r.checkStates, []action{
		{"create-rc", 1, func(t *rapid.T) { r.createConn(t, verbs.QPTypeRC) }},
		{"create-uc", 1, func(t *rapid.T) { r.createConn(t, verbs.QPTypeUC) }},
		{"create-ud", 1, r.createUD},
		{"post-recv", 4, r.postRecv},
		{"post-send", 6, r.postSend},
		{"poll", 4, r.poll},
		{"tick", 1, r.tick},
		{"settle", 1, r.settleAndDrain},
		{"qp-err", 1, r.toErr},
		{"reconnect", 1, r.reconnect},
		{"mw-alloc", 1, r.mwAlloc},
		{"mw-bind", 3, r.mwBind},
		{"mw-inv", 1, r.mwInv},
		{"mw-dealloc", 1, r.mwDealloc},
		{"ud-not-of-transport", 1, r.udNotOfTransport},
	})
}

// trafficRun is one run of TrafficStateMachine.
type trafficRun struct {
	t        *rapid.T
	f        conformance.TrafficFabric
	prof     conformance.TrafficProfile
	faults   bool
	m        *model.Traffic
	ctxs     []verbs.Context
	devCQs   [][]int // the CQs of each device
	cqs      []verbs.CQ
	qps      []*trafficQP
	wrid     uint64
	recvAt   map[uint64]bufRef // where each receive request's scatter list is
	targetAt map[uint64]bufRef // where each RDMA WRITE's target is
	localAt  map[uint64]bufRef // where each RDMA READ's or atomic's local scatter list is
	mws      []*window         // memory windows (traffic_mw.go)
}

// trafficQP is a QP with its own PD, and an MR over its buffer: send regions,
// receive regions and RDMA WRITE target regions.
type trafficQP struct {
	dev        int
	typ        verbs.QPType
	q          verbs.QP
	pd         verbs.PD
	mr         verbs.MR
	buf        []byte
	ahs        map[int]verbs.AH // UD: an AH to each device
	qkey       uint32
	sends      uint64 // send requests posted: the next send region is sends % sendRegions
	recvFree   []int
	targetFree []int
	incoming   []int // lengths of the last messages sent to it, for capacities at the boundary
}

// bufRef is where a buffer is: pieces of a QP's buffer, in scatter order.
type bufRef struct {
	qp     int
	offs   []int
	lens   []int
	region int
}

func (r *trafficRun) step(format string, args ...any) {
	r.t.Helper()
	r.t.Logf(format, args...)
}

func (r *trafficRun) fatal(err error) {
	r.t.Helper()
	if err != nil {
		r.t.Fatal(err)
	}
}

// Recv implements model.Memory.
func (r *trafficRun) Recv(wrID uint64) []byte { return r.read(r.recvAt[wrID]) }

// Target implements model.Memory.
func (r *trafficRun) Target(wrID uint64) []byte { return r.read(r.targetAt[wrID]) }

// Local implements model.Memory.
func (r *trafficRun) Local(wrID uint64) []byte { return r.read(r.localAt[wrID]) }

// Exposed implements model.Memory.
func (r *trafficRun) Exposed(q int) []byte { return r.qps[q].buf[exposedOff:] }

func (r *trafficRun) read(b bufRef) []byte {
	var out []byte
	buf := r.qps[b.qp].buf
	for i, off := range b.offs {
		out = append(out, buf[off:off+b.lens[i]]...)
	}
	return out
}

// setup opens every device and creates two CQs on each.
func (r *trafficRun) setup() {
	for d, dev := range r.f.Devices() {
		ctx, err := dev.Open()
		r.fatal(err)
		r.ctxs = append(r.ctxs, ctx)
		r.devCQs = append(r.devCQs, nil)
		for range 2 {
			q, err := ctx.CreateCQ(trafficCQE, nil, nil, 0)
			r.fatal(err)
			r.cqs = append(r.cqs, q)
			r.devCQs[d] = append(r.devCQs[d], r.m.AddCQ())
		}
	}
}

// nextWRID returns a fresh wr_id; they spread over all 64 bits (WC-01).
func (r *trafficRun) nextWRID() uint64 {
	r.wrid++
	return r.wrid * 0x9e3779b97f4a7c15
}

// pick draws one of the QPs for which ok holds.
func (r *trafficRun) pick(t *rapid.T, ok func(i int) bool) (int, bool) {
	var c []int
	for i := range r.qps {
		if ok(i) {
			c = append(c, i)
		}
	}
	if len(c) == 0 {
		return 0, false
	}
	return rapid.SampledFrom(c).Draw(t, "qp"), true
}

// createQP creates a QP of type typ on device dev, with its PD, buffer and
// MR, on CQs of the device.
func (r *trafficRun) createQP(t *rapid.T, dev int, typ verbs.QPType) int {
	pd, err := r.ctxs[dev].AllocPD()
	r.fatal(err)
	buf := make([]byte, exposedOff+exposedLen)
	mr, err := pd.RegMR(buf, verbs.AccessLocalWrite|verbs.AccessRemoteWrite|verbs.AccessMWBind)
	r.fatal(err)
	cqs := r.devCQs[dev]
	scq := rapid.SampledFrom(cqs).Draw(t, "send cq")
	rcq := rapid.SampledFrom(cqs).Draw(t, "recv cq")
	sigAll := rapid.IntRange(0, 3).Draw(t, "sq_sig_all") == 3
	q, err := pd.CreateQP(verbs.QPInitAttr{SendCQ: r.cqs[scq], RecvCQ: r.cqs[rcq], Type: typ, SQSigAll: sigAll,
		Cap: verbs.QPCap{
			MaxSendWR:  uint32(rapid.IntRange(1, maxDepth).Draw(t, "max_send_wr")),
			MaxRecvWR:  uint32(rapid.IntRange(1, maxDepth).Draw(t, "max_recv_wr")),
			MaxSendSGE: 3, MaxRecvSGE: 3, MaxInlineData: inlineLen,
		}})
	r.fatal(err)
	attr, err := queryQP(q)
	r.fatal(err)
	tq := &trafficQP{dev: dev, typ: typ, q: q, pd: pd, mr: mr, buf: buf, ahs: map[int]verbs.AH{}}
	for i := range recvRegions {
		tq.recvFree = append(tq.recvFree, i)
	}
	for i := range targetRegions {
		tq.targetFree = append(tq.targetFree, i)
	}
	r.qps = append(r.qps, tq)
	i := r.m.AddQP(model.QPSpec{
		Type: typ, Num: q.Num(), LID: r.f.Address(dev).DLID, SendCQ: scq, RecvCQ: rcq,
		SendDepth: int(attr.Cap.MaxSendWR), RecvDepth: int(attr.Cap.MaxRecvWR),
		SigAll: sigAll,
	})
	if typ == verbs.QPTypeRC {
		copy(buf[exposedOff:], model.Pattern(uint64(i)^0xe4b0, exposedLen))
		r.m.Expose(i, mr.Addr()+exposedOff, buf[exposedOff:])
	}
	r.step("qp %d: %v %#x on device %d, cqs %d/%d, depths %d/%d, sq_sig_all=%v", i, typ, q.Num(), dev, scq, rcq,
		attr.Cap.MaxSendWR, attr.Cap.MaxRecvWR, sigAll)
	return i
}

func (r *trafficRun) createConn(t *rapid.T, typ verbs.QPType) {
	if len(r.qps)+2 > maxTrafficQPs {
		return
	}
	n := len(r.f.Devices())
	a := r.createQP(t, rapid.IntRange(0, n-1).Draw(t, "device"), typ)
	b := r.createQP(t, rapid.IntRange(0, n-1).Draw(t, "device"), typ)
	r.connect(t, a, b)
}

func (r *trafficRun) createUD(t *rapid.T) {
	if len(r.qps) >= maxTrafficQPs {
		return
	}
	i := r.createQP(t, rapid.IntRange(0, len(r.f.Devices())-1).Draw(t, "device"), verbs.QPTypeUD)
	r.readyUD(t, i)
}

// av returns the address vector of device dev's port 1.
func (r *trafficRun) av(dev int) verbs.AHAttr {
	x := r.f.Address(dev)
	return verbs.AHAttr{DLID: x.DLID, SL: x.SL, IsGlobal: x.IsGlobal, PortNum: 1,
		GRH: verbs.GlobalRoute{DGID: x.GRH.DGID, SGIDIndex: x.GRH.SGIDIndex, HopLimit: x.GRH.HopLimit}}
}

// drawPSN draws a PSN, now and then just below the 24-bit wrap.
func drawPSN(t *rapid.T, label string) uint32 {
	if rapid.IntRange(0, 3).Draw(t, label+" near wrap") == 3 {
		return 1<<24 - uint32(rapid.IntRange(1, 4).Draw(t, label))
	}
	return uint32(rapid.IntRange(0, 1<<24-1).Draw(t, label))
}

// connect takes RC or UC QPs a and b from RESET to RTS, connected to each
// other, with ibv_modify_qp.
func (r *trafficRun) connect(t *rapid.T, a, b int) {
	qa, qb := r.qps[a], r.qps[b]
	rc := qa.typ == verbs.QPTypeRC
	access := verbs.AccessRemoteWrite
	if rc {
		access |= verbs.AccessRemoteRead | verbs.AccessRemoteAtomic
	}
	psn := [2]uint32{drawPSN(t, "psn"), drawPSN(t, "psn")}
	var rnr [2]uint8
	for k, q := range []*trafficQP{qa, qb} {
		r.fatal(q.q.Modify(&verbs.QPAttr{QPState: verbs.QPStateInit, PortNum: 1, QPAccessFlags: access},
			verbs.QPAttrState|verbs.QPAttrPKeyIndex|verbs.QPAttrPort|verbs.QPAttrAccessFlags))
		other := []*trafficQP{qb, qa}[k]
		mask := verbs.QPAttrState | verbs.QPAttrAV | verbs.QPAttrPathMTU | verbs.QPAttrDestQPN | verbs.QPAttrRQPSN
		if rc {
			mask |= verbs.QPAttrMaxDestRDAtomic | verbs.QPAttrMinRNRTimer
		}
		r.fatal(q.q.Modify(&verbs.QPAttr{QPState: verbs.QPStateRTR, PathMTU: verbs.MTU256, DestQPNum: other.q.Num(), RQPSN: psn[1-k],
			MaxDestRDAtomic: 1, MinRNRTimer: rapid.SampledFrom([]uint8{12, 14}).Draw(t, "min_rnr_timer"),
			AHAttr: r.av(other.dev)}, mask))
	}
	for k, q := range []*trafficQP{qa, qb} {
		mask := verbs.QPAttrState | verbs.QPAttrSQPSN
		attr := verbs.QPAttr{QPState: verbs.QPStateRTS, SQPSN: psn[k], MaxRDAtomic: 1}
		if rc {
			mask |= verbs.QPAttrTimeout | verbs.QPAttrRetryCnt | verbs.QPAttrRNRRetry | verbs.QPAttrMaxQPRDAtomic
			attr.Timeout = uint8(rapid.IntRange(4, 8).Draw(t, "timeout"))
			attr.RetryCnt, attr.RNRRetry = 6, 7
			if !r.faults {
				// Under faults the model does not predict RNR, and a
				// retry budget short enough to run out on lost packets
				// would fail connections at random.
				attr.RetryCnt = uint8(rapid.IntRange(1, 6).Draw(t, "retry_cnt"))
				attr.RNRRetry = rapid.SampledFrom([]uint8{7, 0}).Draw(t, "rnr_retry")
			}
			rnr[k] = attr.RNRRetry
		}
		r.fatal(q.q.Modify(&attr, mask))
	}
	r.fatal(r.m.Connect(a, b, rnr[0], rnr[1]))
	r.step("connect qp %d and %d: %v, psns %#x/%#x, rnr_retry %d/%d", a, b, qa.typ, psn[0], psn[1], rnr[0], rnr[1])
}

// readyUD takes UD QP i from RESET to RTS with a drawn Q_Key.
func (r *trafficRun) readyUD(t *rapid.T, i int) {
	q := r.qps[i]
	q.qkey = rapid.SampledFrom([]uint32{0x1111, 0x2222}).Draw(t, "qkey")
	r.fatal(q.q.Modify(&verbs.QPAttr{QPState: verbs.QPStateInit, PortNum: 1, QKey: q.qkey},
		verbs.QPAttrState|verbs.QPAttrPKeyIndex|verbs.QPAttrPort|verbs.QPAttrQKey))
	r.fatal(q.q.Modify(&verbs.QPAttr{QPState: verbs.QPStateRTR}, verbs.QPAttrState))
	r.fatal(q.q.Modify(&verbs.QPAttr{QPState: verbs.QPStateRTS, SQPSN: drawPSN(t, "psn")}, verbs.QPAttrState|verbs.QPAttrSQPSN))
	r.fatal(r.m.ReadyUD(i, q.qkey))
	r.step("qp %d: UD ready, qkey %#x", i, q.qkey)
}

func (r *trafficRun) poll(t *rapid.T) {
	r.pollCQ(rapid.IntRange(0, len(r.cqs)-1).Draw(t, "cq"), rapid.IntRange(1, 8).Draw(t, "n"))
}

// pollCQ polls CQ c for n completions, checks them with the model and
// frees the receive regions of those it returned. It reports whether the
// CQ was emptied.
func (r *trafficRun) pollCQ(c, n int) bool {
	r.t.Helper()
	wcs := make([]verbs.WC, n)
	got, err := r.cqs[c].Poll(wcs)
	if err != nil {
		r.t.Fatalf("cq %d: ibv_poll_cq: %v", c, err)
	}
	if got > 0 {
		r.step("cq %d: poll %d: %v", c, n, wcs[:got])
	}
	for i := range wcs[:got] {
		r.fatal(r.vocabulary(&wcs[i]))
	}
	r.fatal(r.m.Poll(c, n, wcs[:got], r))
	for _, w := range wcs[:got] {
		delete(r.localAt, w.WRID)
		if b, ok := r.recvAt[w.WRID]; ok {
			q := r.qps[b.qp]
			q.recvFree = append(q.recvFree, b.region)
			delete(r.recvAt, w.WRID)
		}
	}
	return got < n
}

// vocabulary checks what the model leaves to the suite: a status that no
// RC, UC or UD traffic produces (the reliable datagram and tag-matching
// ones, model.NeverProduced) never comes; and a successful
// completion has a classic opcode whose IBV_WC_RECV bit is set exactly when
// it completes a receive request (WC-06). An error completion's opcode is
// undefined (WC-03) and is not looked at.
func (r *trafficRun) vocabulary(w *verbs.WC) error {
	if id, never := model.NeverProduced(w.Status); never {
		return fmt.Errorf("wr_id %#x of QP %#x completed with %v, which no RC, UC or UD traffic produces (%s)", w.WRID, w.QPNum, w.Status.Name(), id)
	}
	if w.Status != verbs.WCSuccess {
		return nil
	}
	_, recv := r.recvAt[w.WRID]
	if !model.ClassicOpcode(w.Opcode) || w.Opcode.IsRecv() != recv {
		return fmt.Errorf("wr_id %#x of QP %#x (a receive request: %v) completed with opcode %v; want a classic opcode whose IBV_WC_RECV bit says whether a receive completed (WC-06)",
			w.WRID, w.QPNum, recv, w.Opcode)
	}
	return nil
}

func (r *trafficRun) tick(t *rapid.T) {
	n := rapid.SampledFrom([]uint64{1, 1000, 100_000, 2_000_000}).Draw(t, "ticks")
	r.step("tick %d", n)
	r.f.Tick(n)
	r.m.Tick()
	r.settleIfNeeded()
}

// settleIfNeeded runs the fabric until idle when the model cannot tell in
// which order pending timers fire (model.Traffic.Unsettled).
func (r *trafficRun) settleIfNeeded() {
	if r.m.Unsettled() {
		r.settle()
	}
}

// settle runs the fabric until idle, or until the only work left is an RC
// requester retrying an RNR NAK for ever.
func (r *trafficRun) settle() {
	r.t.Helper()
	limit := uint64(idleLimit)
	if r.faults {
		limit = faultLimit
	}
	idle := r.f.RunUntilIdle(limit)
	r.m.Settle()
	r.step("run until idle: idle=%v", idle)
	if stuck := r.m.Stuck(); idle == stuck {
		if stuck {
			r.t.Fatalf("the fabric went idle, but an RC requester with rnr_retry 7 waits for a receive request: it must retry for ever (XFER-07)")
		}
		r.t.Fatalf("the fabric is still busy after %d ns, with nothing left to do", limit)
	}
}

// drain polls every CQ empty and tells the model the fabric is quiet; then
// it compares the async events and, where the QPs can say, how many
// requests are outstanding.
func (r *trafficRun) drain() {
	for c := range r.cqs {
		for !r.pollCQ(c, 16) {
		}
	}
	released, err := r.m.Quiesced(r)
	r.fatal(err)
	for _, id := range released {
		b := r.targetAt[id]
		q := r.qps[b.qp]
		q.targetFree = append(q.targetFree, b.region)
		delete(r.targetAt, id)
	}
	var evs []model.QPEvent
	for d, ctx := range r.ctxs {
		for {
			ev, err := ctx.TryGetAsyncEvent()
			if err != nil {
				break
			}
			e := model.QPEvent{Type: int(ev.EventType()), QP: -1}
			if q := ev.QP(); q != nil {
				for i, o := range r.qps {
					if o.dev == d && o.q.Num() == q.Num() {
						e.QP = i
					}
				}
			}
			r.fatal(ev.Ack())
			evs = append(evs, e)
		}
	}
	r.fatal(r.m.CheckEvents(evs))
	for i, q := range r.qps {
		if o, ok := q.q.(conformance.Outstander); ok {
			send, recv := o.Outstanding()
			if ws, wr := r.m.Outstanding(i); send != ws || recv != wr {
				r.t.Fatalf("qp %d: %d send and %d receive requests outstanding, want %d and %d", i, send, recv, ws, wr)
			}
		}
	}
}

func (r *trafficRun) settleAndDrain(*rapid.T) {
	r.settle()
	r.drain()
}

func (r *trafficRun) toErr(t *rapid.T) {
	i, ok := r.pick(t, func(i int) bool { return r.m.State(i) == verbs.QPStateRTS })
	if !ok {
		return
	}
	r.settle()
	r.step("qp %d: modify to ERR", i)
	r.fatal(r.qps[i].q.Modify(&verbs.QPAttr{QPState: verbs.QPStateErr}, verbs.QPAttrState))
	r.fatal(r.m.ToErr(i))
	r.settleIfNeeded()
}

// reconnect moves a QP, and its peer, to ERR, drains every CQ, resets them
// and brings them back: connected again, or ready with a new Q_Key.
func (r *trafficRun) reconnect(t *rapid.T) {
	i, ok := r.pick(t, func(i int) bool { return r.m.State(i) != verbs.QPStateReset })
	if !ok {
		return
	}
	pair := []int{i}
	if p := r.m.Peer(i); p >= 0 {
		pair = append(pair, p)
	}
	r.settle()
	for _, j := range pair {
		if r.m.State(j) != verbs.QPStateErr {
			r.fatal(r.qps[j].q.Modify(&verbs.QPAttr{QPState: verbs.QPStateErr}, verbs.QPAttrState))
			r.fatal(r.m.ToErr(j))
		}
	}
	r.settle() // FLUSH-13: flushes may take time
	r.drain()
	for _, j := range pair {
		r.step("qp %d: modify to RESET", j)
		r.fatal(r.qps[j].q.Modify(&verbs.QPAttr{QPState: verbs.QPStateReset}, verbs.QPAttrState))
		r.fatal(r.m.Reset(j))
	}
	if len(pair) == 2 {
		r.connect(t, pair[0], pair[1])
	} else {
		r.readyUD(t, i)
	}
}

// checkStates compares the state of every QP with the model's (QP-24).
func (r *trafficRun) checkStates(*rapid.T) {
	for i, q := range r.qps {
		attr, err := queryQP(q.q)
		r.fatal(err)
		r.fatal(r.m.CheckState(i, attr.QPState))
	}
}
