package conformance

import (
	"bytes"
	"errors"
	"fmt"
	"syscall"

	"github.com/verbsim/verbsim/conformance/model"
	"github.com/verbsim/verbsim/verbs"
	"pgregory.net/rapid"
)

// This file runs traffic between QPs as a rapid state machine
// (TrafficStateMachine) against the traffic model of conformance/model.

// TrafficProfile states the readings a fabric's devices follow and the
// properties of the fabric the state machine relies on. The properties are
// not readings of any rule: they say how the fabric is driven and what it
// may do to packets.
type TrafficProfile struct {
	// Readings are the readings the devices follow (Device.Profile),
	// embedded. The traffic model consults RecvTooSmallRemInvReq (XFER-05),
	// SendInvErrAcked (XFER-29), SendWCImm (WC-13), NoQPEvents (ASYNC-11)
	// and FreeSlotOnRetire (QP-29, QP-31).
	verbs.Readings
	// Settles: before a verb returns, the fabric has done everything that
	// needs no time to pass (verbsim's Auto mode; docs/time.md). False:
	// completions are only required once RunUntilIdle has run.
	Settles bool
	// SyncFlush: entering ERR flushes before the verb returns; false: by
	// the next RunUntilIdle (FLUSH-13).
	SyncFlush bool
	// UDReorder and UDDuplicate: with faults, a UD datagram may be
	// overtaken by a later one of the same sender, or arrive twice. The rules
	// promise neither order nor at-most-once delivery for UD.
	UDReorder, UDDuplicate bool
	// MTU is the active MTU of every port in bytes. The state machine sends
	// UD datagrams up to MTU+40 bytes (XFER-20) and RC and UC messages of up
	// to 640 bytes, so an MTU of 256 makes them span packets.
	MTU int
}

// TrafficFabric is a fabric of two or more adapters whose ports reach one
// another, and the clock the test moves. Port 1 of each device is used.
type TrafficFabric interface {
	// Devices returns the adapters.
	Devices() []Device
	// Address returns the address vector of port 1 of device dev, as an AH
	// or an INIT→RTR modify names it.
	Address(dev int) verbs.AHAttr
	// Tick lets n nanoseconds of fabric time pass.
	Tick(n uint64)
	// RunUntilIdle lets time pass until nothing is pending, or until limit
	// nanoseconds have passed, and reports whether the fabric is idle.
	RunUntilIdle(limit uint64) bool
	// TrafficProfile returns the readings the fabric follows.
	TrafficProfile() TrafficProfile
	// Close releases the fabric.
	Close() error
}

// NewTrafficFabric makes a fresh fabric for one run of
// TrafficStateMachine. seed seeds every choice the fabric makes; with
// faults it drops, duplicates and delays packets.
type NewTrafficFabric func(seed uint64, faults bool) (TrafficFabric, error)

// Limits of the traffic state machine's world.
const (
	tsMaxQPs     = 8
	tsRegion     = 768     // bytes of one buffer region
	tsSendRegs   = 16      // send regions per QP: at most this many sends held (QP-36)
	tsRecvRegs   = 16      // receive regions per QP: at most this many receives held
	tsTargets    = 12      // RDMA WRITE target regions per QP
	tsExposed    = 256     // bytes at the end of an RC QP's MR that only memory windows reach
	tsMaxMWs     = 3       // live windows per QP
	tsMaxLen     = 640     // the longest RC or UC message
	tsMaxDepth   = 6       // the deepest queue asked for
	tsInline     = 64      // max_inline_data asked for
	tsIdleLimit  = 1 << 26 // how long RunUntilIdle may run while an RNR wait lasts for ever
	tsFaultLimit = 1 << 36 // and under faults, where nothing waits for ever
	// A request held completes at most once, so a CQ never holds more than
	// this, under either reading of QP-29 (CQ-25).
	tsCQE = tsMaxQPs * (tsSendRegs + tsRecvRegs)
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
func TrafficStateMachine(t *rapid.T, newFabric NewTrafficFabric, faults bool) {
	f, err := newFabric(rapid.Uint64().Draw(t, "fabric seed"), faults)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := &tsRun{t: t, f: f, prof: f.TrafficProfile(), faults: faults,
		recvAt: map[uint64]tsBuf{}, targetAt: map[uint64]tsBuf{}, localAt: map[uint64]tsBuf{}}
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
	// Only the transports the device offers (QP-41).
	conns := []verbs.QPType{verbs.QPTypeRC, verbs.QPTypeUC}
	if !offersQP(r.prof.Readings, verbs.QPTypeUC) {
		conns = conns[:1]
	}
	r.createConn(t, conns[rapid.IntRange(0, len(conns)-1).Draw(t, "first connection")])
	for range rapid.IntRange(0, 2).Draw(t, "ud qps") {
		r.createUD(t)
	}
	repeatWeighted(t, r.checkStates, []smAction{
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
	})
}

// tsRun is one run of TrafficStateMachine.
type tsRun struct {
	t        *rapid.T
	f        TrafficFabric
	prof     TrafficProfile
	faults   bool
	m        *model.Traffic
	ctxs     []Context
	devCQs   [][]int // the CQs of each device
	cqs      []CQ
	qps      []*tsQP
	wrid     uint64
	recvAt   map[uint64]tsBuf // where each receive request's scatter list is
	targetAt map[uint64]tsBuf // where each RDMA WRITE's target is
	localAt  map[uint64]tsBuf // where each RDMA READ's or atomic's local scatter list is
	mws      []*tsMW          // memory windows (traffic_mw.go)
}

// tsQP is a QP with its own PD, and an MR over its buffer: send regions,
// receive regions and RDMA WRITE target regions.
type tsQP struct {
	dev        int
	typ        verbs.QPType
	q          QP
	pd         PD
	mr         MR
	buf        []byte
	ahs        map[int]AH // UD: an AH to each device
	qkey       uint32
	sends      uint64 // send requests posted: the next send region is sends % tsSendRegs
	recvFree   []int
	targetFree []int
	incoming   []int // lengths of the last messages sent to it, for capacities at the boundary
}

// tsBuf is where a buffer is: pieces of a QP's buffer, in scatter order.
type tsBuf struct {
	qp     int
	offs   []int
	lens   []int
	region int
}

func (r *tsRun) step(format string, args ...any) {
	r.t.Helper()
	r.t.Logf(format, args...)
}

func (r *tsRun) fatal(err error) {
	r.t.Helper()
	if err != nil {
		r.t.Fatal(err)
	}
}

// Recv implements model.Memory.
func (r *tsRun) Recv(wrID uint64) []byte { return r.read(r.recvAt[wrID]) }

// Target implements model.Memory.
func (r *tsRun) Target(wrID uint64) []byte { return r.read(r.targetAt[wrID]) }

// Local implements model.Memory.
func (r *tsRun) Local(wrID uint64) []byte { return r.read(r.localAt[wrID]) }

// Exposed implements model.Memory.
func (r *tsRun) Exposed(q int) []byte { return r.qps[q].buf[tsExposedOff:] }

func (r *tsRun) read(b tsBuf) []byte {
	var out []byte
	buf := r.qps[b.qp].buf
	for i, off := range b.offs {
		out = append(out, buf[off:off+b.lens[i]]...)
	}
	return out
}

// setup opens every device and creates two CQs on each.
func (r *tsRun) setup() {
	for d, dev := range r.f.Devices() {
		ctx, err := dev.Open()
		r.fatal(err)
		r.ctxs = append(r.ctxs, ctx)
		r.devCQs = append(r.devCQs, nil)
		for range 2 {
			q, err := ctx.CreateCQ(tsCQE, nil, nil, 0)
			r.fatal(err)
			r.cqs = append(r.cqs, q)
			r.devCQs[d] = append(r.devCQs[d], r.m.AddCQ())
		}
	}
}

// nextWRID returns a fresh wr_id; they spread over all 64 bits (WC-01).
func (r *tsRun) nextWRID() uint64 {
	r.wrid++
	return r.wrid * 0x9e3779b97f4a7c15
}

// pick draws one of the QPs for which ok holds.
func (r *tsRun) pick(t *rapid.T, ok func(i int) bool) (int, bool) {
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
func (r *tsRun) createQP(t *rapid.T, dev int, typ verbs.QPType) int {
	pd, err := r.ctxs[dev].AllocPD()
	r.fatal(err)
	buf := make([]byte, tsExposedOff+tsExposed)
	mr, err := pd.RegMR(buf, verbs.AccessLocalWrite|verbs.AccessRemoteWrite|verbs.AccessMWBind)
	r.fatal(err)
	cqs := r.devCQs[dev]
	scq := rapid.SampledFrom(cqs).Draw(t, "send cq")
	rcq := rapid.SampledFrom(cqs).Draw(t, "recv cq")
	sigAll := rapid.IntRange(0, 3).Draw(t, "sq_sig_all") == 3
	q, err := pd.CreateQP(QPInitAttr{SendCQ: r.cqs[scq], RecvCQ: r.cqs[rcq], Type: typ, SQSigAll: sigAll,
		Cap: verbs.QPCap{
			MaxSendWR:  uint32(rapid.IntRange(1, tsMaxDepth).Draw(t, "max_send_wr")),
			MaxRecvWR:  uint32(rapid.IntRange(1, tsMaxDepth).Draw(t, "max_recv_wr")),
			MaxSendSGE: 3, MaxRecvSGE: 3, MaxInlineData: tsInline,
		}})
	r.fatal(err)
	attr, err := queryQP(q)
	r.fatal(err)
	tq := &tsQP{dev: dev, typ: typ, q: q, pd: pd, mr: mr, buf: buf, ahs: map[int]AH{}}
	for i := range tsRecvRegs {
		tq.recvFree = append(tq.recvFree, i)
	}
	for i := range tsTargets {
		tq.targetFree = append(tq.targetFree, i)
	}
	r.qps = append(r.qps, tq)
	i := r.m.AddQP(model.QPSpec{
		Type: typ, Num: q.Num(), LID: r.f.Address(dev).DLID, SendCQ: scq, RecvCQ: rcq,
		SendDepth: int(attr.Cap.MaxSendWR), RecvDepth: int(attr.Cap.MaxRecvWR),
		SigAll: sigAll,
	})
	if typ == verbs.QPTypeRC {
		copy(buf[tsExposedOff:], model.Pattern(uint64(i)^0xe4b0, tsExposed))
		r.m.Expose(i, mr.Addr()+tsExposedOff, buf[tsExposedOff:])
	}
	r.step("qp %d: %v %#x on device %d, cqs %d/%d, depths %d/%d, sq_sig_all=%v", i, typ, q.Num(), dev, scq, rcq,
		attr.Cap.MaxSendWR, attr.Cap.MaxRecvWR, sigAll)
	return i
}

// offered returns the opcodes of ops the device runs (QP-42, QP-43,
// MW-08), in order.
func (r *tsRun) offered(ops []verbs.WROpcode) []verbs.WROpcode {
	out := ops[:0:0]
	for _, op := range ops {
		if offersOp(r.prof.Readings, op) {
			out = append(out, op)
		}
	}
	return out
}

func (r *tsRun) createConn(t *rapid.T, typ verbs.QPType) {
	if len(r.qps)+2 > tsMaxQPs || !offersQP(r.prof.Readings, typ) {
		return
	}
	n := len(r.f.Devices())
	a := r.createQP(t, rapid.IntRange(0, n-1).Draw(t, "device"), typ)
	b := r.createQP(t, rapid.IntRange(0, n-1).Draw(t, "device"), typ)
	r.connect(t, a, b)
}

func (r *tsRun) createUD(t *rapid.T) {
	if len(r.qps) >= tsMaxQPs || !offersQP(r.prof.Readings, verbs.QPTypeUD) {
		return
	}
	i := r.createQP(t, rapid.IntRange(0, len(r.f.Devices())-1).Draw(t, "device"), verbs.QPTypeUD)
	r.readyUD(t, i)
}

// av returns the address vector of device dev's port 1.
func (r *tsRun) av(dev int) verbs.AHAttr {
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
func (r *tsRun) connect(t *rapid.T, a, b int) {
	qa, qb := r.qps[a], r.qps[b]
	rc := qa.typ == verbs.QPTypeRC
	access := verbs.AccessRemoteWrite
	if rc {
		access |= verbs.AccessRemoteRead | verbs.AccessRemoteAtomic
	}
	psn := [2]uint32{drawPSN(t, "psn"), drawPSN(t, "psn")}
	var rnr [2]uint8
	for k, q := range []*tsQP{qa, qb} {
		r.fatal(q.q.Modify(&verbs.QPAttr{QPState: verbs.QPStateInit, PortNum: 1, QPAccessFlags: access},
			verbs.QPAttrState|verbs.QPAttrPKeyIndex|verbs.QPAttrPort|verbs.QPAttrAccessFlags))
		other := []*tsQP{qb, qa}[k]
		mask := verbs.QPAttrState | verbs.QPAttrAV | verbs.QPAttrPathMTU | verbs.QPAttrDestQPN | verbs.QPAttrRQPSN
		if rc {
			mask |= verbs.QPAttrMaxDestRDAtomic | verbs.QPAttrMinRNRTimer
		}
		r.fatal(q.q.Modify(&verbs.QPAttr{QPState: verbs.QPStateRTR, PathMTU: verbs.MTU256, DestQPNum: other.q.Num(), RQPSN: psn[1-k],
			MaxDestRDAtomic: 1, MinRNRTimer: rapid.SampledFrom([]uint8{12, 14}).Draw(t, "min_rnr_timer"),
			AHAttr: r.av(other.dev)}, mask))
	}
	for k, q := range []*tsQP{qa, qb} {
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
func (r *tsRun) readyUD(t *rapid.T, i int) {
	q := r.qps[i]
	q.qkey = rapid.SampledFrom([]uint32{0x1111, 0x2222}).Draw(t, "qkey")
	r.fatal(q.q.Modify(&verbs.QPAttr{QPState: verbs.QPStateInit, PortNum: 1, QKey: q.qkey},
		verbs.QPAttrState|verbs.QPAttrPKeyIndex|verbs.QPAttrPort|verbs.QPAttrQKey))
	r.fatal(q.q.Modify(&verbs.QPAttr{QPState: verbs.QPStateRTR}, verbs.QPAttrState))
	r.fatal(q.q.Modify(&verbs.QPAttr{QPState: verbs.QPStateRTS, SQPSN: drawPSN(t, "psn")}, verbs.QPAttrState|verbs.QPAttrSQPSN))
	r.fatal(r.m.ReadyUD(i, q.qkey))
	r.step("qp %d: UD ready, qkey %#x", i, q.qkey)
}

// layout cuts n bytes at offset base of QP q's buffer into a scatter or
// gather list of 0..3 elements (0 only for n = 0), laid out in memory in
// the reverse of their list order.
func (r *tsRun) layout(t *rapid.T, q *tsQP, base, n int) ([]verbs.SGE, tsBuf) {
	k := 0
	if n > 0 || rapid.Bool().Draw(t, "one empty sge") {
		k = rapid.IntRange(1, max(1, min(3, n))).Draw(t, "sges")
	}
	lens := make([]int, k)
	rest := n
	for i := range k - 1 {
		lens[i] = rapid.IntRange(1, rest-(k-1-i)).Draw(t, "sge length")
		rest -= lens[i]
	}
	if k > 0 {
		lens[k-1] = rest
	}
	b := tsBuf{offs: make([]int, k), lens: lens}
	var sges []verbs.SGE
	off := base
	for i := k - 1; i >= 0; i-- {
		b.offs[i] = off
		off += lens[i]
	}
	for i := range k {
		sges = append(sges, verbs.SGE{Addr: q.mr.Addr() + uint64(b.offs[i]), Length: uint32(lens[i]), LKey: q.mr.LKey()})
	}
	return sges, b
}

// write copies data into the pieces of b.
func (r *tsRun) write(b tsBuf, data []byte) {
	buf := r.qps[b.qp].buf
	for i, off := range b.offs {
		copy(buf[off:off+b.lens[i]], data[:b.lens[i]])
		data = data[b.lens[i]:]
	}
}

func (r *tsRun) postRecv(t *rapid.T) {
	i, ok := r.pick(t, func(i int) bool { return r.m.State(i) != verbs.QPStateReset })
	if !ok {
		return
	}
	q := r.qps[i]
	_, room := r.m.Room(i)
	count := drawCount(t, room, len(q.recvFree), "receives")
	if count == 0 {
		return
	}
	maxCap := tsMaxLen + 64
	if q.typ == verbs.QPTypeUD {
		maxCap = r.prof.MTU + 2*model.GRHLen
	}
	capacity := []*rapid.Generator[int]{rapid.IntRange(0, 16), rapid.IntRange(0, maxCap)}
	if len(q.incoming) > 0 {
		// Exactly the size of a message sent to the QP, or a byte short
		// (XFER-05, XFER-06, XFER-21).
		grh := 0
		if q.typ == verbs.QPTypeUD {
			grh = model.GRHLen
		}
		near := rapid.Custom(func(t *rapid.T) int {
			return max(0, rapid.SampledFrom(q.incoming).Draw(t, "message length")+grh-rapid.IntRange(0, 1).Draw(t, "short"))
		})
		capacity = append(capacity, near)
	}
	var wrs []verbs.RecvWR
	var rs []model.Recv
	for range count {
		id := r.nextWRID()
		c := rapid.OneOf(capacity...).Draw(t, "capacity")
		region := q.recvFree[0]
		q.recvFree = q.recvFree[1:]
		sges, b := r.layout(t, q, (tsSendRegs+region)*tsRegion, c)
		b.qp, b.region = i, region
		fill := id ^ 0xf111
		r.write(b, model.Pattern(fill, c))
		r.recvAt[id] = b
		wrs = append(wrs, verbs.RecvWR{WRID: id, SGList: sges})
		rs = append(rs, model.Recv{WRID: id, Cap: c, Fill: fill})
	}
	if r.m.SettleBeforeRecv(i) {
		r.settle()
	}
	k := r.postable(t, i, true, len(wrs))
	r.unpostRecvs(wrs[k:])
	wrs, rs = wrs[:k], rs[:k]
	if k == 0 {
		return
	}
	n, err := q.q.PostRecv(wrs)
	r.checkPost(i, true, len(wrs), n, err)
	r.unpostRecvs(wrs[n:])
	r.step("qp %d: post %d receives %v: %d accepted", i, len(rs), rs, n)
	r.fatal(r.m.PostRecv(i, rs[:n]))
	r.settleIfNeeded()
}

// drawCount draws how many requests to post on a queue with room room, at
// most limit (what the state machine's buffers allow) and 3: within the
// room, and now and then past it, where the post must stop with ENOMEM
// (QP-27, QP-29, QP-31). Past Min it may be more than the model knows the
// queue takes; postable sorts that out before the post.
func drawCount(t *rapid.T, room model.Span, limit int, label string) int {
	limit = min(3, limit)
	if rapid.IntRange(0, 7).Draw(t, "past the room") > 0 {
		limit = min(limit, room.Max)
	}
	if limit <= 0 {
		return 0
	}
	return rapid.IntRange(1, limit).Draw(t, label)
}

// postable returns how many of the n requests about to be posted on QP i's
// send or receive queue to post, all of them if the model knows how many
// the queue takes. Under QP-29 B it may not: a request may have retired or
// not (model.Traffic.Room). Then it runs the fabric until idle, and for a
// receive queue that still does not say, also polls every CQ empty (a
// lossy UC or UD receive request is seen to retire only in its
// completion); or it posts only what the queue certainly takes.
func (r *tsRun) postable(t *rapid.T, i int, recv bool, n int) int {
	room := func() model.Span {
		send, rcv := r.m.Room(i)
		if recv {
			return rcv
		}
		return send
	}
	x := room()
	if x.Exact() || n <= x.Min {
		return n
	}
	if rapid.Bool().Draw(t, "settle to know the room") {
		r.settle()
		if x = room(); !x.Exact() && n > x.Min {
			r.drain()
			x = room()
		}
		if x.Exact() || n <= x.Min {
			return n
		}
		r.t.Fatalf("qp %d: the model does not know the room of a queue on a quiet fabric: %+v", i, x)
	}
	return max(0, min(n, x.Min))
}

// checkPost checks what a post of asked requests on QP i returned: as many
// as the queue had room for (model.Traffic.CheckPost), and ENOMEM exactly
// when it stopped short (QP-27).
func (r *tsRun) checkPost(i int, recv bool, asked, n int, err error) {
	r.t.Helper()
	verb, rule := "ibv_post_send", "QP-29"
	if recv {
		verb, rule = "ibv_post_recv", "QP-31"
	}
	if e := r.m.CheckPost(i, recv, asked, n); e != nil {
		r.t.Fatalf("%v (the call returned %v)", e, err)
	}
	switch {
	case n == asked && err != nil:
		r.t.Fatalf("qp %d: %s posted all %d requests, and returned %v (QP-27)", i, verb, asked, err)
	case n < asked && !errors.Is(err, syscall.ENOMEM):
		r.t.Fatalf("qp %d: %s posted %d of %d requests on a full queue, and returned %v, want ENOMEM (QP-27, %s)", i, verb, n, asked, err, rule)
	}
}

// unpostRecvs gives back the buffers of receive requests that were not
// posted.
func (r *tsRun) unpostRecvs(wrs []verbs.RecvWR) {
	for _, w := range wrs {
		b := r.recvAt[w.WRID]
		r.qps[b.qp].recvFree = append(r.qps[b.qp].recvFree, b.region)
		delete(r.recvAt, w.WRID)
	}
}

// unpostSends gives back the buffers of send requests of QP i that were not
// posted, the last ones of a list: their send regions and WRITE targets.
func (r *tsRun) unpostSends(i int, wrs []verbs.SendWR) {
	r.qps[i].sends -= uint64(len(wrs))
	for _, w := range wrs {
		if b, ok := r.targetAt[w.WRID]; ok {
			r.qps[b.qp].targetFree = append(r.qps[b.qp].targetFree, b.region)
			delete(r.targetAt, w.WRID)
		}
	}
}

func (r *tsRun) postSend(t *rapid.T) {
	i, ok := r.pick(t, func(i int) bool {
		st := r.m.State(i)
		return (st == verbs.QPStateRTS || st == verbs.QPStateErr) && (r.qps[i].typ == verbs.QPTypeUD || r.m.Peer(i) >= 0)
	})
	if !ok {
		return
	}
	q := r.qps[i]
	room, _ := r.m.Room(i)
	held, _ := r.m.Held(i)
	count := drawCount(t, room, tsSendRegs-held, "sends")
	if count == 0 {
		return
	}
	var uds []int
	for j, o := range r.qps {
		if j != i && o.typ == verbs.QPTypeUD && r.m.State(j) != verbs.QPStateReset {
			uds = append(uds, j)
		}
	}
	if q.typ == verbs.QPTypeUD && len(uds) == 0 {
		return
	}
	peer := r.m.Peer(i)
	credit := 0
	if q.typ == verbs.QPTypeRC && r.faults {
		credit = r.m.Credit(i)
	}
	var wrs []verbs.SendWR
	var ss []model.Send
	var inline []tsBuf
	for range count {
		id := r.nextWRID()
		s := model.Send{WRID: id, Seed: id ^ 0x5eed, Dest: -1,
			Signaled: rapid.IntRange(0, 3).Draw(t, "signaled") > 0,
			Imm:      rapid.Uint32().Draw(t, "imm")}
		ops := []verbs.WROpcode{verbs.WRSend, verbs.WRSendWithImm, verbs.WRRDMAWrite, verbs.WRRDMAWriteWithImm}
		if q.typ == verbs.QPTypeUD {
			ops = ops[:2]
		}
		ops = r.offered(ops)
		s.Op = rapid.SampledFrom(ops).Draw(t, "opcode")
		var win *tsWinAccess
		if q.typ == verbs.QPTypeRC {
			win = r.drawWinAccess(t, peer, &s)
		}
		if win == nil && s.Op == verbs.WRRDMAWrite && rapid.IntRange(0, 11).Draw(t, "bad rkey") == 0 {
			s.BadRKey = true
		}
		writes := (s.Op == verbs.WRRDMAWrite || s.Op == verbs.WRRDMAWriteWithImm) && win == nil
		if writes && !s.BadRKey && len(r.qps[peer].targetFree) == 0 {
			s.Op, writes = verbs.WRSend, false
		}
		if q.typ == verbs.QPTypeRC && r.faults && (s.Op == verbs.WRSend || s.Op == verbs.WRSendWithImm || s.Op == verbs.WRRDMAWriteWithImm || s.Op == verbs.WRSendWithInv) {
			if credit == 0 {
				break // under faults the model does not predict RNR
			}
			credit--
		}
		mtu := r.prof.MTU
		if win != nil && win.n >= 0 {
			s.Len = win.n
		} else if q.typ == verbs.QPTypeUD {
			// Up to the MTU and a little past it (XFER-20).
			s.Len = rapid.OneOf(rapid.IntRange(0, mtu+model.GRHLen), rapid.SampledFrom([]int{mtu - 1, mtu, mtu + 1})).Draw(t, "length")
		} else {
			// Any, small ones and packet boundaries likelier.
			s.Len = rapid.OneOf(rapid.IntRange(0, 16), rapid.IntRange(0, tsMaxLen),
				rapid.SampledFrom([]int{mtu - 1, mtu, mtu + 1, 2 * mtu, 2*mtu + 1})).Draw(t, "length")
		}
		if win != nil {
			win.place(t, &s)
			r.compareNow(t, peer, &s, win.w)
		}
		wr := verbs.SendWR{WRID: id, Opcode: s.Op, Imm: s.Imm}
		if s.Op == verbs.WRSendWithInv {
			wr.Imm = s.RKey
		}
		if s.Signaled {
			wr.Flags = verbs.SendSignaled
		}
		base := int(q.sends%tsSendRegs) * tsRegion
		q.sends++
		sges, b := r.layout(t, q, base, s.Len)
		if s.Op == verbs.WRAtomicCmpAndSwp || s.Op == verbs.WRAtomicFetchAndAdd {
			// One 8-byte SGE (XFER-17).
			b = tsBuf{offs: []int{base}, lens: []int{8}}
			sges = []verbs.SGE{{Addr: q.mr.Addr() + uint64(base), Length: 8, LKey: q.mr.LKey()}}
		}
		b.qp = i
		r.write(b, model.Payload(s.Seed, s.Len))
		wr.SGList = sges
		fetches := s.Op == verbs.WRRDMARead || s.Op == verbs.WRAtomicCmpAndSwp || s.Op == verbs.WRAtomicFetchAndAdd
		if fetches {
			r.localAt[id] = b
		}
		if s.Window {
			wr.RKey, wr.RemoteAddr = s.RKey, s.RAddr
			wr.CompareAdd, wr.Swap = s.SwapAdd, 0
			if s.Op == verbs.WRAtomicCmpAndSwp {
				wr.CompareAdd, wr.Swap = s.Compare, s.SwapAdd
			}
		}
		if !fetches && s.Len <= tsInline && rapid.IntRange(0, 3).Draw(t, "inline") == 0 {
			// QP-35: the payload is copied during the post and the lkeys
			// are not checked; the buffer is scribbled over once the post
			// returns.
			wr.Flags |= verbs.SendInline
			for k := range wr.SGList {
				wr.SGList[k].LKey = 0
			}
			inline = append(inline, b)
		}
		if writes {
			p := r.qps[peer]
			wr.RKey = p.mr.RKey()
			if s.BadRKey {
				wr.RKey ^= 0x80
				wr.RemoteAddr = p.mr.Addr()
			} else {
				region := p.targetFree[0]
				p.targetFree = p.targetFree[1:]
				off := (tsSendRegs + tsRecvRegs + region) * tsRegion
				tb := tsBuf{qp: peer, offs: []int{off}, lens: []int{s.Len}, region: region}
				s.Fill = id ^ 0x7a26
				r.write(tb, model.Pattern(s.Fill, s.Len))
				r.targetAt[id] = tb
				wr.RemoteAddr = p.mr.Addr() + uint64(off)
			}
		}
		if q.typ == verbs.QPTypeUD {
			s.Dest = rapid.SampledFrom(uds).Draw(t, "destination")
			dq := r.qps[s.Dest]
			wr.RemoteQPN, s.QKey = dq.q.Num(), dq.qkey
			if rapid.IntRange(0, 7).Draw(t, "wrong qkey") == 0 {
				s.QKey ^= 0x3000
			}
			if rapid.IntRange(0, 15).Draw(t, "no such qp") == 0 {
				s.Dest, wr.RemoteQPN = -1, 0xabcde // XFER-22: no QP has this number
			}
			wr.RemoteQKey = s.QKey
			ah, err := r.ah(i, dq.dev)
			r.fatal(err)
			wr.AH = ah
			x := r.f.Address(dq.dev)
			s.Global, s.SL = x.IsGlobal, x.SL
		}
		to := peer
		if q.typ == verbs.QPTypeUD {
			to = s.Dest
		}
		if to >= 0 {
			in := &r.qps[to].incoming
			*in = append(*in, s.Len)
			if len(*in) > 4 {
				*in = (*in)[1:]
			}
		}
		wrs = append(wrs, wr)
		ss = append(ss, s)
		if s.Op == verbs.WRRDMARead && r.faults {
			// A READ retried under faults reads again, perhaps after
			// later WRITEs of the same stream: post it last, and settle
			// once it is posted, so that it reads what it read the first
			// time.
			break
		}
	}
	if len(wrs) == 0 {
		return
	}
	if r.m.PredictFatal(i, ss) {
		// Let nothing else be in flight when a QP fails (see Unsettled).
		r.settle()
	}
	k := r.postable(t, i, false, len(wrs))
	r.unpostSends(i, wrs[k:])
	wrs, ss = wrs[:k], ss[:k]
	if k == 0 {
		return
	}
	n, err := q.q.PostSend(wrs)
	r.checkPost(i, false, len(wrs), n, err)
	r.unpostSends(i, wrs[n:])
	for _, b := range inline {
		r.write(b, bytes.Repeat([]byte{0xee}, tsRegion))
	}
	r.step("qp %d: post %d sends %+v: %d accepted", i, len(ss), ss, n)
	r.fatal(r.m.PostSend(i, ss[:n]))
	if r.faults && n > 0 && ss[n-1].Op == verbs.WRRDMARead {
		r.settle()
	}
	r.settleIfNeeded()
}

// ah returns an AH of QP i's PD to device dev.
func (r *tsRun) ah(i, dev int) (AH, error) {
	q := r.qps[i]
	if ah, ok := q.ahs[dev]; ok {
		return ah, nil
	}
	ah, err := q.pd.CreateAH(r.f.Address(dev))
	if err == nil {
		q.ahs[dev] = ah
	}
	return ah, err
}

func (r *tsRun) poll(t *rapid.T) {
	r.pollCQ(rapid.IntRange(0, len(r.cqs)-1).Draw(t, "cq"), rapid.IntRange(1, 8).Draw(t, "n"))
}

// pollCQ polls CQ c for n completions, checks them with the model and
// frees the receive regions of those it returned. It reports whether the
// CQ was emptied.
func (r *tsRun) pollCQ(c, n int) bool {
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
// ones, xNeverProduced) never comes; and a successful
// completion has a classic opcode whose IBV_WC_RECV bit is set exactly when
// it completes a receive request (WC-06). An error completion's opcode is
// undefined (WC-03) and is not looked at.
func (r *tsRun) vocabulary(w *verbs.WC) error {
	if id, never := xNeverProduced[w.Status]; never {
		return fmt.Errorf("wr_id %#x of QP %#x completed with %v, which no RC, UC or UD traffic produces (%s)", w.WRID, w.QPNum, w.Status.Name(), id)
	}
	if w.Status != verbs.WCSuccess {
		return nil
	}
	_, recv := r.recvAt[w.WRID]
	if !xClassicOpcode(w.Opcode) || w.Opcode.IsRecv() != recv {
		return fmt.Errorf("wr_id %#x of QP %#x (a receive request: %v) completed with opcode %v; want a classic opcode whose IBV_WC_RECV bit says whether a receive completed (WC-06)",
			w.WRID, w.QPNum, recv, w.Opcode)
	}
	return nil
}

func (r *tsRun) tick(t *rapid.T) {
	n := rapid.SampledFrom([]uint64{1, 1000, 100_000, 2_000_000}).Draw(t, "ticks")
	r.step("tick %d", n)
	r.f.Tick(n)
	r.m.Tick()
	r.settleIfNeeded()
}

// settleIfNeeded runs the fabric until idle when the model cannot tell in
// which order pending timers fire (model.Traffic.Unsettled).
func (r *tsRun) settleIfNeeded() {
	if r.m.Unsettled() {
		r.settle()
	}
}

// settle runs the fabric until idle, or until the only work left is an RC
// requester retrying an RNR NAK for ever.
func (r *tsRun) settle() {
	r.t.Helper()
	limit := uint64(tsIdleLimit)
	if r.faults {
		limit = tsFaultLimit
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
func (r *tsRun) drain() {
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
		if o, ok := q.q.(Outstander); ok {
			send, recv := o.Outstanding()
			if ws, wr := r.m.Outstanding(i); send != ws || recv != wr {
				r.t.Fatalf("qp %d: %d send and %d receive requests outstanding, want %d and %d", i, send, recv, ws, wr)
			}
		}
	}
}

func (r *tsRun) settleAndDrain(*rapid.T) {
	r.settle()
	r.drain()
}

func (r *tsRun) toErr(t *rapid.T) {
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
func (r *tsRun) reconnect(t *rapid.T) {
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
func (r *tsRun) checkStates(*rapid.T) {
	for i, q := range r.qps {
		attr, err := queryQP(q.q)
		r.fatal(err)
		r.fatal(r.m.CheckState(i, attr.QPState))
	}
}
