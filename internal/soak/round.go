package soak

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// connSpec is one connection of a round: its transport and the devices of
// its two ends.
type connSpec struct {
	typ  verbs.QPType
	devs [2]int
}

// conns are the connections of every round: three RC (one looped back on
// one device), two UC and a UD pair.
var conns = []connSpec{
	{verbs.QPTypeRC, [2]int{0, 1}},
	{verbs.QPTypeRC, [2]int{1, 0}},
	{verbs.QPTypeRC, [2]int{0, 0}},
	{verbs.QPTypeUC, [2]int{0, 1}},
	{verbs.QPTypeUC, [2]int{1, 0}},
	{verbs.QPTypeUD, [2]int{0, 1}},
}

// opKind is what a send WR does.
type opKind uint8

const (
	opSend opKind = iota
	opSendImm
	opWrite
	opWriteImm
	opRead
	opCAS
	opFAA
	opDummy // the signaled SEND posted in ERR at the end of a round
)

var wrOpcode = [...]verbs.WROpcode{
	opSend: verbs.WRSend, opSendImm: verbs.WRSendWithImm, opWrite: verbs.WRRDMAWrite,
	opWriteImm: verbs.WRRDMAWriteWithImm, opRead: verbs.WRRDMARead,
	opCAS: verbs.WRAtomicCmpAndSwp, opFAA: verbs.WRAtomicFetchAndAdd, opDummy: verbs.WRSend,
}

// consumesRecv reports whether the op takes a receive WR at the peer.
func (o opKind) consumesRecv() bool { return o == opSend || o == opSendImm || o == opWriteImm }

// wrRec is what the ledger remembers of one posted WR. The poster writes
// it before posting; consumers read it after polling the WR's completion,
// which the fabric's lock orders after the post.
type wrRec struct {
	seq      int64
	op       opKind
	signaled bool
	length   uint32
	msg      uint64 // recv-consuming ops: the message number in its direction
	wseq     uint64 // RC WRITEs: the write number, which picks the target slot
	aseq     uint64 // atomics: the atomic number, which is what it must return
	roff     uint32 // READ: the offset in the peer's read source
}

// queue is the ledger of one work queue. Completions of a queue all go to
// one CQ and are handled under that CQ's mutex in CQ order, so last only
// grows and everything at or below it is resolved: completed, or an
// unsignaled WR that succeeded silently.
type queue struct {
	cq      *cqState
	recs    [depth]wrRec
	posted  atomic.Int64 // WRs posted; raised before the post
	last    atomic.Int64 // the highest resolved WR, -1 for none
	errored bool         // an error completion was handled (under cq.mu)
}

// free returns how many WRs may be posted without exceeding the depth.
func (l *queue) free() int64 { return depth - (l.posted.Load() - (l.last.Load() + 1)) }

// qpState is one QP of a round, with its poster's state and its ledger.
type qpState struct {
	s      *soak
	idx    int    // global index, in the wr_id
	connID uint32 // the connection's number over the whole run
	side   int    // 0 or 1: which end of the connection
	typ    verbs.QPType
	dev    *devState
	q      *sim.QP
	num    uint32
	buf    []byte
	mr     *sim.MR
	ah     *sim.AH // UD: the path to the peer
	atomic int     // offset of the 8-byte-aligned atomic word in buf
	peer   *qpState
	sq, rq queue
	wake   chan struct{}

	finished  atomic.Bool // posts no more recv-consuming messages
	exited    atomic.Bool // the poster has returned
	broken    atomic.Bool // an error completion, or a fault injected
	destroyed atomic.Bool
	fatal     atomic.Bool
	forcedRV  atomic.Bool // a forced status may hit one of its receives
	msgPosted atomic.Uint64
	// recvReady counts the receives whose post has returned (rq.posted is
	// raised before the post), recvDead is set once a receive failed or
	// was flushed: no receive posted from then on will take a message.
	recvReady atomic.Int64
	recvDead  atomic.Bool

	// The poster's own state.
	rng          *rand.Rand
	sent         int
	msgSeq       uint64
	wseq, aseq   uint64
	lastSignaled bool
	pending      bool
	next         wrRec
	destroyAt    int
	fatalAt      int
	fatalTarget  *qpState

	// Receive-side state, under the receive CQ's mutex.
	rcNext uint64
	ucLast int64
	udSeen map[uint64]bool
	// Send-side state, under the send CQ's mutex.
	maxOKMsg  int64 // the highest recv-consuming message that succeeded
	atomicsOK uint64
}

// Layout of a QP's buffer.
const (
	recvBase    = 0
	sendBase    = recvBase + depth*slotLen
	writeBase   = sendBase + depth*slotLen
	ucBase      = writeBase + writeSlots*maxLen
	scratchBase = ucBase + UCWindow*maxLen
	readSrcBase = scratchBase + maxLen
	atomicBase  = readSrcBase + readSrcLen
	bufLen      = atomicBase + 16
)

func recvOff(seq int64) int { return recvBase + int(seq%depth)*slotLen }
func sendOff(seq int64) int { return sendBase + int(seq%depth)*slotLen }

// wr_id layout: QP index (24 bits), receive bit, sequence number (39 bits).
func wrid(idx int, recv bool, seq int64) uint64 {
	id := uint64(idx)<<40 | uint64(seq)&(1<<39-1)
	if recv {
		id |= 1 << 39
	}
	return id
}

func decodeWRID(id uint64) (idx int, recv bool, seq int64) {
	return int(id >> 40), id&(1<<39) != 0, int64(id & (1<<39 - 1))
}

// runRound creates the QPs of round r, runs their posters, tears the QPs
// down and checks the round. It returns the number of QPs.
func (s *soak) runRound(r int) int {
	dog, cancel := contextWithWatchdog(s.cfg.Watchdog)
	defer cancel()
	defer hardWatchdog(2*s.cfg.Watchdog, fmt.Sprintf("round %d", r))()
	s.dog = dog
	rng := rand.New(rand.NewPCG(s.cfg.Seed, uint64(r)+1))

	prev := s.round.Load()
	base := 0
	if prev != nil {
		base = prev.base + len(prev.qps)
	}
	rq := &roundQPs{base: base}
	for c, spec := range conns {
		connID := uint32(r*len(conns) + c)
		var ends [2]*qpState
		for side := range 2 {
			q, err := s.newQP(base+len(rq.qps), connID, side, spec.typ, s.devs[spec.devs[side]], rng)
			if err != nil {
				s.fail("round %d: create QP: %v", r, err)
				s.teardown(rq)
				return len(rq.qps)
			}
			ends[side] = q
			rq.qps = append(rq.qps, q)
		}
		ends[0].peer, ends[1].peer = ends[1], ends[0]
		if err := s.connect(ends[0], ends[1]); err != nil {
			s.fail("round %d: connect %v: %v", r, spec.typ, err)
			s.teardown(rq)
			return len(rq.qps)
		}
	}
	s.round.Store(rq)

	// The fault plan: one QP destroyed by its own poster, one QP made
	// fatal by another QP's poster, both part-way through their quota.
	n := len(rq.qps)
	victim := rq.qps[rng.IntN(n)]
	victim.destroyAt = s.cfg.WRs/4 + rng.IntN(s.cfg.WRs/2)
	injector := rq.qps[rng.IntN(n)]
	injector.fatalAt = s.cfg.WRs/4 + rng.IntN(s.cfg.WRs/2)
	injector.fatalTarget = rq.qps[rng.IntN(n)]

	var posters sync.WaitGroup
	for _, q := range rq.qps {
		posters.Go(q.post)
	}
	posters.Wait()
	s.teardown(rq)
	return n
}

// newQP creates one QP with its buffer and MR, its CQs chosen at random
// among its device's.
func (s *soak) newQP(idx int, connID uint32, side int, typ verbs.QPType, d *devState, rng *rand.Rand) (*qpState, error) {
	q := &qpState{
		s: s, idx: idx, connID: connID, side: side, typ: typ, dev: d,
		buf:       make([]byte, bufLen),
		wake:      make(chan struct{}, 1),
		rng:       rand.New(rand.NewPCG(s.cfg.Seed^0x5eed, uint64(idx))),
		destroyAt: -1, fatalAt: -1,
		ucLast: -1, maxOKMsg: -1,
	}
	q.sq.last.Store(-1)
	q.rq.last.Store(-1)
	q.sq.cq = d.cqs[rng.IntN(len(d.cqs))]
	q.rq.cq = d.cqs[rng.IntN(len(d.cqs))]
	if typ == verbs.QPTypeUD {
		q.udSeen = map[uint64]bool{}
	}
	fill(q.buf[readSrcBase:][:readSrcLen], mix(s.cfg.Seed, tagReadSrc, uint64(connID), uint64(side)))
	var err error
	q.mr, err = d.pd.RegMR(q.buf, verbs.AccessLocalWrite|verbs.AccessRemoteWrite|verbs.AccessRemoteRead|verbs.AccessRemoteAtomic)
	if err != nil {
		return nil, err
	}
	q.atomic = atomicBase + int((8-(q.mr.Addr()+atomicBase)%8)%8)
	q.q, err = d.pd.CreateQP(sim.QPInitAttr{
		Context: q, SendCQ: q.sq.cq.cq, RecvCQ: q.rq.cq.cq, Type: typ,
		Cap: verbs.QPCap{MaxSendWR: depth, MaxRecvWR: depth, MaxSendSGE: 1, MaxRecvSGE: 1, MaxInlineData: maxInline},
	})
	if err != nil {
		q.mr.Dereg()
		return nil, err
	}
	q.num = q.q.Num()
	return q, nil
}

// connect takes both ends to RTS: RC and UC connected to each other, UD
// with an address handle to the other's port.
func (s *soak) connect(a, b *qpState) error {
	if a.typ != verbs.QPTypeUD {
		return sim.Connect(a.q, b.q, sim.ConnectOptions{
			PathMTU: verbs.MTU256, Timeout: 4, RetryCnt: 6, RNRRetry: 6, MinRNRTimer: 1,
		})
	}
	for _, q := range []*qpState{a, b} {
		if err := sim.ReadyUD(q.q, qkey); err != nil {
			return err
		}
		av := verbs.AHAttr{DLID: q.peer.dev.lid, PortNum: 1}
		if q.peer.dev.eth {
			av.IsGlobal, av.GRH = true, verbs.GlobalRoute{DGID: q.peer.dev.gid, HopLimit: 64}
		}
		ah, err := q.dev.pd.CreateAH(av)
		if err != nil {
			return err
		}
		q.ah = ah
	}
	return nil
}

// post is a QP's poster: it keeps receives posted while the peer may
// still send, and posts its quota of send WRs within the queue depth,
// never sending a message the peer has no receive posted for (RC; UC and
// UD only wait for the peer to have some receive posted). Faults planned
// for this QP are injected here, between posts.
func (q *qpState) post() {
	s := q.s
	p := q.peer
	defer func() {
		q.finished.Store(true)
		q.exited.Store(true)
		poke(p.wake)
	}()
	quota := s.cfg.WRs
	forceRate := 3.0 / float64(len(conns)*2*s.cfg.WRs) // about three forced statuses a round
	for {
		if q.sent == q.destroyAt {
			q.destroy()
			return
		}
		progressed := false
		for !q.peerDone() && !q.recvDead.Load() && q.rq.free() > 0 {
			if !q.postRecv() {
				return
			}
			progressed = true
		}
		if progressed {
			poke(p.wake)
		}
		if q.broken.Load() && quota > q.sent+4 {
			quota = q.sent + 4 // a few posts into ERR or SQE, flushed at once (FLUSH-05)
		}
		for q.sent < quota && q.sq.free() > 0 && q.sent != q.destroyAt {
			if !q.pending {
				q.pick(q.sent == quota-1)
			}
			if q.next.op.consumesRecv() && !q.peerReady() {
				break
			}
			if q.sent == q.fatalAt {
				q.injectFatal(q.fatalTarget)
			}
			if q.rng.Float64() < forceRate {
				q.forceStatus()
			}
			if !q.postSend() {
				return
			}
			progressed = true
		}
		if q.sent >= quota && !q.finished.Load() {
			q.finished.Store(true)
			poke(p.wake)
		}
		if q.finished.Load() && q.peerDone() {
			return
		}
		if !progressed {
			select {
			case <-q.wake:
			case <-s.dog.Done():
				s.hang(fmt.Sprintf("poster of QP %#x (%v, conn %d side %d) waits: sent %d/%d, sq %d/%d, rq %d/%d, peer recv %d/%d",
					q.num, q.typ, q.connID, q.side, q.sent, quota, q.sq.last.Load()+1, q.sq.posted.Load(),
					q.rq.last.Load()+1, q.rq.posted.Load(), p.rq.last.Load()+1, p.rq.posted.Load()))
				return
			}
		}
	}
}

// peerDone reports whether the peer will post no more recv-consuming
// messages, so this QP needs no more receives.
func (q *qpState) peerDone() bool { return q.peer.finished.Load() }

// peerReady reports whether the next recv-consuming message may go: on RC
// only when the peer has posted the receive it will consume (so no RNR
// wait), on UC and UD when the peer has some receive posted. A broken QP
// need not wait: what it posts is flushed and consumes nothing.
func (q *qpState) peerReady() bool {
	p := q.peer
	if q.broken.Load() || p.exited.Load() || p.recvDead.Load() {
		return true // this QP's sends are flushed, or the peer takes nothing more
	}
	if q.typ == verbs.QPTypeRC {
		return uint64(p.recvReady.Load()) > q.msgSeq
	}
	return p.recvReady.Load() > p.rq.last.Load()+1
}

// pick chooses the next send WR. The last one of the quota is signaled, so
// every queue ends with a completion.
func (q *qpState) pick(last bool) {
	r := q.rng
	var op opKind
	x := r.IntN(100)
	switch q.typ {
	case verbs.QPTypeRC:
		op = [...]opKind{opSend, opSend, opSend, opSendImm, opWrite, opWrite, opWriteImm, opRead, opRead, opCAS, opFAA}[x%11]
	case verbs.QPTypeUC:
		op = [...]opKind{opSend, opSend, opSendImm, opWrite, opWriteImm}[x%5]
	default:
		op = [...]opKind{opSend, opSend, opSendImm}[x%3]
	}
	rec := wrRec{op: op, signaled: true}
	switch op {
	case opSend, opSendImm:
		rec.length = uint32(hdrLen + r.IntN(maxLen-hdrLen+1))
		rec.signaled = op != opSend || last || q.sent%8 == 7 || r.IntN(4) != 0
	case opWrite, opWriteImm:
		rec.length = uint32(1 + r.IntN(maxLen))
	case opRead:
		rec.length = uint32(1 + r.IntN(maxLen))
		rec.roff = uint32(r.IntN(readSrcLen - int(rec.length) + 1))
	case opCAS, opFAA:
		rec.length = 8
	}
	q.next = rec
	q.pending = true
}

// postRecv posts one receive into the next slot.
func (q *qpState) postRecv() bool {
	s := q.s
	seq := q.rq.posted.Load()
	q.rq.recs[seq%depth] = wrRec{seq: seq, signaled: true}
	q.rq.posted.Add(1)
	sge := []verbs.SGE{{Addr: q.mr.Addr() + uint64(recvOff(seq)), Length: slotLen, LKey: q.mr.LKey()}}
	if _, err := q.q.PostRecv([]verbs.RecvWR{{WRID: wrid(q.idx, true, seq), SGList: sge}}); err != nil {
		q.rq.posted.Add(-1)
		s.fail("QP %#x: post_recv %d: %v", q.num, seq, err)
		return false
	}
	q.recvReady.Add(1)
	s.st.recvWRs.Add(1)
	poke(s.kick)
	return true
}

// postSend builds and posts the chosen send WR.
func (q *qpState) postSend() bool {
	s := q.s
	p := q.peer
	seq := q.sq.posted.Load()
	rec := q.next
	rec.seq = seq
	q.pending = false
	dir := uint64(q.side)
	wr := verbs.SendWR{WRID: wrid(q.idx, false, seq), Opcode: wrOpcode[rec.op]}
	if rec.signaled {
		wr.Flags |= verbs.SendSignaled
	}
	src := q.buf[sendOff(seq):][:rec.length]
	sge := verbs.SGE{Addr: q.mr.Addr() + uint64(sendOff(seq)), Length: rec.length, LKey: q.mr.LKey()}
	remote := func(off int) { wr.RemoteAddr, wr.RKey = p.mr.Addr()+uint64(off), p.mr.RKey() }
	if rec.op.consumesRecv() {
		rec.msg = q.msgSeq
		q.msgSeq++
	}
	switch rec.op {
	case opSend, opSendImm:
		message(src, s.cfg.Seed, q.connID, q.side, rec.msg, rec.op)
		if rec.op == opSendImm {
			wr.Imm = immOf(q.connID, q.side, rec.msg)
		}
		if rec.length <= maxInline && q.rng.IntN(3) == 0 {
			wr.Flags |= verbs.SendInline
		}
	case opWrite, opWriteImm:
		switch {
		case q.typ == verbs.QPTypeRC:
			rec.wseq = q.wseq
			q.wseq++
			fill(src, mix(s.cfg.Seed, tagWrite, uint64(q.connID), dir, rec.wseq, uint64(rec.length)))
			remote(writeBase + int(rec.wseq%writeSlots)*maxLen)
		case rec.op == opWriteImm && rec.msg < UCWindow:
			fill(src, mix(s.cfg.Seed, tagUCWrite, uint64(q.connID), dir, rec.msg, uint64(rec.length)))
			remote(ucBase + int(rec.msg)*maxLen)
		default:
			fill(src, mix(s.cfg.Seed, tagWrite, uint64(q.connID), dir, uint64(seq), uint64(rec.length)))
			remote(scratchBase)
		}
		if rec.op == opWriteImm {
			wr.Imm = immOf(q.connID, q.side, rec.msg)
		}
	case opRead:
		clear(src)
		remote(readSrcBase + int(rec.roff))
	case opCAS, opFAA:
		rec.aseq = q.aseq
		q.aseq++
		clear(src)
		remote(p.atomic)
		if rec.op == opCAS {
			wr.CompareAdd, wr.Swap = rec.aseq, rec.aseq+1
		} else {
			wr.CompareAdd = 1
		}
	case opDummy:
		rec.length = 0
	}
	if rec.op != opDummy {
		wr.SGList = []verbs.SGE{sge}
	}
	if q.typ == verbs.QPTypeUD {
		wr.AH, wr.RemoteQPN, wr.RemoteQKey = q.ah, p.num, qkey
	}
	q.sq.recs[seq%depth] = rec
	q.sq.posted.Add(1)
	if rec.op.consumesRecv() {
		q.msgPosted.Store(q.msgSeq)
	}
	if _, err := q.q.PostSend([]verbs.SendWR{wr}); err != nil {
		q.sq.posted.Add(-1)
		s.fail("QP %#x: post_send %d (%v): %v", q.num, seq, wr.Opcode, err)
		return false
	}
	q.sent++
	q.lastSignaled = rec.signaled
	s.st.sendWRs.Add(1)
	poke(s.kick)
	return true
}

// destroy destroys the QP mid-traffic: its outstanding WRs vanish
// (QP-37).
func (q *qpState) destroy() {
	s := q.s
	q.destroyed.Store(true)
	q.broken.Store(true)
	s.st.destroyed.Add(1)
	if err := q.q.DestroyContext(s.dog); err != nil {
		s.fail("destroy QP %#x mid-traffic: %v", q.num, err)
	}
}

// injectFatal makes t hit a catastrophic error (ASYNC-08).
func (q *qpState) injectFatal(t *qpState) {
	s := q.s
	t.fatal.Store(true)
	if err := s.f.InjectFatal(t.q); err != nil {
		if !t.destroyed.Load() {
			s.fail("inject fatal into QP %#x: %v", t.num, err)
		}
		return
	}
	// Only now: a broken QP sends without waiting for the peer's receive,
	// which must not happen while it can still transmit (RNR).
	t.broken.Store(true)
	poke(t.wake)
	s.st.fatal.Add(1)
}

// forcedStatuses are statuses the traffic never produces by itself.
var forcedStatuses = []verbs.WCStatus{verbs.WCBadRespErr, verbs.WCGeneralErr, verbs.WCRemAbortErr, verbs.WCLocQPOpErr, verbs.WCFatalErr}

// forceStatus makes a WR about to be posted on a random QP of the round
// (send or receive) complete with a forced error status.
func (q *qpState) forceStatus() {
	s := q.s
	rq := s.round.Load()
	t := rq.qps[q.rng.IntN(len(rq.qps))]
	recv := q.rng.IntN(2) == 0
	l := &t.sq
	if recv {
		l = &t.rq
	}
	id := wrid(t.idx, recv, l.posted.Load()+1+int64(q.rng.IntN(4)))
	st := forcedStatuses[q.rng.IntN(len(forcedStatuses))]
	s.forcedMu.Lock()
	s.forced[id] = append(s.forced[id], st)
	s.forcedMu.Unlock()
	if recv {
		t.forcedRV.Store(true)
	}
	if err := s.f.ForceStatus(t.q, id, recv, st); err != nil {
		if !t.destroyed.Load() {
			s.fail("force %v on QP %#x: %v", st, t.num, err)
		}
		return
	}
	s.st.forced.Add(1)
}

func (s *soak) wasForced(id uint64, st verbs.WCStatus) bool {
	s.forcedMu.Lock()
	defer s.forcedMu.Unlock()
	for _, f := range s.forced[id] {
		if f == st {
			return true
		}
	}
	return false
}

// teardown ends a round: every QP still alive goes to ERR, which flushes
// everything outstanding inside the verb (verbsim flushes synchronously;
// real adapters need not, FLUSH-13). Once the QPs are in ERR no packet can
// complete anything, so after one drain of every CQ each queue must be
// resolved; a queue whose last send was unsignaled gets a signaled SEND
// posted in ERR, flushed at once (FLUSH-05), so that it too ends with a
// completion. Nothing here waits for another goroutine: a completion that
// is missing is reported, not waited for. Then the QPs are destroyed and
// the round checked.
func (s *soak) teardown(rq *roundQPs) {
	for _, q := range rq.qps {
		if q.q != nil && !q.destroyed.Load() {
			if err := q.q.Modify(&verbs.QPAttr{QPState: verbs.QPStateErr}, verbs.QPAttrState); err != nil {
				s.fail("QP %#x to ERR: %v", q.num, err)
			}
		}
	}
	s.drainAll()
	for _, q := range rq.qps {
		if q.q != nil && !q.destroyed.Load() && !q.lastSignaled && q.sent > 0 && q.sq.free() > 0 {
			q.next = wrRec{op: opDummy, signaled: true}
			q.postSend()
		}
	}
	s.drainAll()
	for _, q := range rq.qps {
		if q.q == nil {
			continue
		}
		if st := q.q.Stats(); st.CQOverruns != 0 {
			s.fail("QP %#x lost %d completions to CQ overruns", q.num, st.CQOverruns)
		}
		if !q.destroyed.Load() {
			if err := q.q.DestroyContext(s.dog); err != nil {
				s.fail("destroy QP %#x: %v", q.num, err)
			}
		}
	}
	s.drainAll()
	s.checkRound(rq)
	for _, q := range rq.qps {
		if q.ah != nil {
			if err := q.ah.Destroy(); err != nil {
				s.fail("destroy AH: %v", err)
			}
		}
		if q.mr != nil {
			if err := q.mr.Dereg(); err != nil {
				s.fail("dereg MR: %v", err)
			}
		}
	}
}

// checkRound checks what can only be checked once a round is over. Every
// CQ has been drained under its mutex, which orders the consumers' writes
// before these reads.
func (s *soak) checkRound(rq *roundQPs) {
	for _, q := range rq.qps {
		if q.q == nil {
			continue
		}
		for _, l := range []*queue{&q.sq, &q.rq} {
			left := l.posted.Load() - (l.last.Load() + 1)
			switch {
			case q.destroyed.Load():
				s.st.vanished.Add(uint64(left)) // QP-37
			case left != 0:
				s.fail("QP %#x: %d WRs never completed", q.num, left)
			}
		}
		p := q.peer
		if q.typ != verbs.QPTypeRC {
			continue
		}
		// XFER-25: what the sender saw succeed was received, unless the
		// receiver was destroyed (its completions may be gone, CQ-26) or
		// had a status forced on a receive (data placed, error reported).
		if !p.destroyed.Load() && !p.forcedRV.Load() && q.maxOKMsg >= int64(p.rcNext) {
			s.fail("RC conn %d: message %d succeeded at side %d, but side %d received only %d messages",
				q.connID, q.maxOKMsg, q.side, p.side, p.rcNext)
		}
		// Every atomic adds one to the peer's word, exactly once.
		if w := binary.NativeEndian.Uint64(p.buf[p.atomic:]); w < q.atomicsOK || w > q.aseq {
			s.fail("RC conn %d: the atomic word of side %d holds %d after %d atomics succeeded of %d posted",
				q.connID, p.side, w, q.atomicsOK, q.aseq)
		}
	}
}
