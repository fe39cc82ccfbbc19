package model

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/verbsim/verbsim/verbs"
)

// This file models traffic: what posted work requests become once they
// execute, between connected RC and UC queue pairs and between UD queue
// pairs, written from spec/catalogue.md §6 (FLUSH), §7 (WC), §8 (XFER) and CQ-18..21,
// not from any implementation.
//
// # What the model predicts
//
// For every send and receive work request, the completion it produces (or
// that it produces none), on which CQ, in which order relative to the other
// requests of its queue, and every field the rules define for it; the bytes
// that land in receive buffers and RDMA WRITE targets; and the state of every
// QP:
//
//   - RC delivers every message exactly once and in order (XFER-25,
//     XFER-18), each SEND or RDMA_WRITE_WITH_IMM consuming the oldest
//     receive request (XFER-01). A SEND that does not fit its receive request
//     fails the requester's request with REM_INV_REQ_ERR and completes the
//     receive request with LOC_LEN_ERR, or REM_INV_REQ_ERR under the rxe
//     reading (XFER-05); a WRITE whose rkey names no MR fails with
//     REM_ACCESS_ERR unless it is zero-length (XFER-14, XFER-24). Either
//     moves both QPs to ERR and flushes everything else (FLUSH-03, FLUSH-12,
//     XFER-15). A consumer that finds no receive request gets an RNR NAK:
//     with rnr_retry 0 the request fails with RNR_RETRY_EXC_ERR, with 7 it
//     waits for ever (XFER-07). A peer that is not receiving never answers,
//     so the requester ends in RETRY_EXC_ERR (XFER-28, FLUSH-11).
//   - Send completions appear in posting order, for signaled requests and
//     for every failure only (CQ-18..21, FLUSH-04), with the send-side opcode
//     (WC-04) and, under the rxe reading, WITH_IMM (WC-13). Receive
//     completions carry the receive opcode, byte_len, imm and flags (WC-05,
//     WC-08..10); UD ones also src_qp, slid and sl (WC-12). Error
//     completions are checked on wr_id, status and qp_num only (WC-03).
//   - UC completes every send with SUCCESS once sent (XFER-26) and loses a
//     message that finds no receive request, does not fit or names a bad
//     rkey (XFER-09, XFER-06, XFER-14); it never duplicates or reorders.
//   - UD is the same with the 40-byte GRH in front (XFER-21): a datagram
//     longer than the MTU succeeds without being sent (XFER-20), one with
//     another Q_Key or to no QP is dropped (XFER-22).
//   - A QP moved to ERR flushes everything outstanding, and requests posted
//     there are flushed (FLUSH-01, FLUSH-05). Its peer's RC requests then
//     end in RETRY_EXC_ERR, its peer's UC messages vanish (XFER-28).
//   - How many requests a post accepts before ENOMEM (QP-27, QP-29, QP-31):
//     the depth less the requests whose slots are taken. Under QP-29 A a
//     slot is taken until the completion of its request, or of a later one
//     that covers it, is polled; under B (FreeSlotOnRetire) until the
//     device completes or flushes the request, as the QP model has it
//     (Readings.FreeSlotOnRetire). Under B the model knows that only for
//     what is due now, so Room gives bounds (see there).
//
// With Fabric.Lossy the fabric may drop, duplicate and delay
// packets. RC still delivers exactly once and in order; UC and UD deliver a
// subsequence of what was sent, each message intact, and the model finds
// out which one arrived from the completion and the bytes (UD may also
// reorder and duplicate, per Fabric).
//
// # Time
//
// The model has no clock. It knows, for each completion, whether it must
// already be pollable (the device settles work that needs no time before the
// verb returns: Fabric.Settles), may be (it waits for a timer or a
// delayed packet) or may not be yet. Settle says that every timer and packet
// has been processed; Tick says that some time has passed. A caller keeps
// the model deterministic by calling Settle whenever Unsettled reports that
// the order in which pending timers fire could change an outcome.

// GRHLen is the number of bytes at the start of every UD receive buffer
// reserved for the Global Routing Header; the payload follows (XFER-21).
const GRHLen = 40

// Fabric holds the properties of the fabric under test that the traffic
// model relies on. They are not readings of any rule (those are
// verbs.Readings): they say how the fabric is driven and what it may do to
// packets, which the rules leave open.
type Fabric struct {
	// Settles: before a verb returns, the device has done everything that
	// needs no time to pass: a SEND into a posted receive request, a WRITE,
	// a UD datagram, and their completions on both sides (verbsim's Auto
	// mode, docs/time.md). False: work completes by the next Settle.
	Settles bool
	// SyncFlush: flush completions exist when the verb that caused them
	// returns (verbsim). False: by the next Settle (FLUSH-13).
	SyncFlush bool
	// Lossy: the fabric may drop, duplicate and delay packets.
	Lossy bool
	// UDReorder: with Lossy, datagrams from one sender may arrive out of
	// order. UDDuplicate: with Lossy, a datagram may arrive more than once.
	// The rules promise neither ordering nor at-most-once delivery for UD.
	UDReorder, UDDuplicate bool
	// MTU is the active MTU of the ports in bytes: a longer UD datagram is
	// not sent (XFER-20).
	MTU int
}

// The async events the traffic model predicts, with their verbs values
// (ASYNC-04).
const (
	EventQPReqErr    = 2 // IBV_EVENT_QP_REQ_ERR
	EventQPAccessErr = 3 // IBV_EVENT_QP_ACCESS_ERR
)

// QPEvent is an async event that names a QP.
type QPEvent struct {
	Type int // EventQPReqErr or EventQPAccessErr
	QP   int
}

// QPSpec describes a QP as created.
type QPSpec struct {
	Type                 verbs.QPType // RC, UC or UD
	Num                  uint32       // qp_num
	LID                  uint16       // LID of its port: the slid of its UD datagrams (WC-12)
	SendCQ, RecvCQ       int          // CQ indices
	SendDepth, RecvDepth int          // the real max_send_wr and max_recv_wr (QP-29, QP-31)
	SigAll               bool         // sq_sig_all (CQ-19)
}

// Send is a send work request as the model sees it.
type Send struct {
	WRID     uint64
	Op       verbs.WROpcode // WRSend, WRSendWithImm, WRRDMAWrite or WRRDMAWriteWithImm
	Len      int            // the message: Payload(Seed, Len)
	Seed     uint64
	Imm      uint32
	Signaled bool   // IBV_SEND_SIGNALED
	BadRKey  bool   // an RDMA WRITE whose rkey names no MR of the responder's PD
	Fill     uint64 // an RDMA WRITE target held Pattern(Fill, Len) before the post
	Dest     int    // UD: the destination QP, -1 for a QPN that names no QP
	QKey     uint32 // UD: the Q_Key the request carries
	Global   bool   // UD: the address handle has a GRH
	SL       uint8  // UD: the address handle's service level

	// Memory windows (window.go). Window: an RDMA WRITE, an RDMA READ or an
	// atomic whose rkey, RKey, is a window's (or was: a stale key), at
	// remote address RAddr; READ and atomics are modelled through windows
	// only. RKey is also the key a LOCAL_INV or SEND_WITH_INV names.
	Window bool
	RKey   uint32
	RAddr  uint64
	// Compare and SwapAdd are the operands of an atomic (8 bytes long).
	Compare, SwapAdd uint64
	// MW and Bind describe a BIND_MW: the model's window index, and the
	// range and rights asked for; RKey is then the new key of a type 2
	// window (a type 1 window's comes from ibv_bind_mw, MW-04).
	MW   int
	Bind MWBind
}

// Recv is a receive work request: a scatter list of Cap bytes that held
// Pattern(Fill, Cap) before the post.
type Recv struct {
	WRID uint64
	Cap  int
	Fill uint64
}

// Memory reads what an implementation placed, for the model to compare.
type Memory interface {
	// Recv returns the bytes of receive request wrID's scatter list,
	// concatenated in list order (Cap bytes).
	Recv(wrID uint64) []byte
	// Target returns the bytes of the RDMA WRITE target of send request
	// wrID (Len bytes).
	Target(wrID uint64) []byte
	// Local returns the bytes of the local scatter list of RDMA READ or
	// atomic send request wrID, concatenated in list order (Len bytes).
	Local(wrID uint64) []byte
	// Exposed returns the bytes of QP q's exposed area (Traffic.Expose).
	Exposed(q int) []byte
}

// Pattern returns n bytes that depend on seed alone: the contents the
// suite writes into buffers before a request uses them.
func Pattern(seed uint64, n int) []byte {
	b := make([]byte, n)
	x := seed*0x9e3779b97f4a7c15 | 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x >> 29)
	}
	return b
}

// Payload returns the n bytes of a message with seed: Pattern with the seed
// in its first eight bytes, so that messages of eight bytes or more differ.
func Payload(seed uint64, n int) []byte {
	b := Pattern(seed, n)
	if n >= 8 {
		binary.LittleEndian.PutUint64(b, seed)
	}
	return b
}

// due says when a completion can, or must, be polled.
type due uint8

const (
	duePending due = iota // it cannot have happened yet
	dueChance             // it may happen, or never (a receive on a lossy UC or UD QP)
	dueLater              // it may have happened; it will have by the next Settle
	dueNow                // it has happened: a poll must return it
)

// fate is what became of a message at the responder.
type fate uint8

const (
	fatePending   fate = iota // not executed yet (RC behind an RNR wait)
	fateDelivered             // executed: data placed, receive request consumed
	fateFailed                // executed and failed, or failed at the requester
	fateFlushed               // never left the requester
	fateDropped               // lost (UC, UD): no completion at the responder
	fateUnknown               // lossy UC or UD: arrived or not, to be seen
)

// placement says whether an RDMA WRITE's data is in its target.
type placement uint8

const (
	placedNo placement = iota
	placedYes
	placedMaybe // partly, or wholly, or not at all
)

// twr is a work request the model tracks until its completion is polled.
type twr struct {
	id       uint64
	qp       int
	recv     bool
	signaled bool
	msg      *tmsg // send: its message; receive: the message it received, once known
	// receive requests
	cap      int
	fill     uint64
	dirty    bool // a dropped message may have written into the buffer (XFER-06)
	consumed bool // a message took it (RC and exact UC/UD)
	lossy    bool // the message it gets is known only when its completion is seen
	flushOK  bool // lossy: its QP entered ERR, so it may also be flushed
	// the completion
	allowed []verbs.WCStatus // the statuses it may have; nil while undecided
	due     due
}

// tmsg is a message: a send request once posted.
type tmsg struct {
	Send
	from, to int
	wr       *twr
	fate     fate
	placed   placement
	released bool   // its RDMA target has been checked for the last time
	got      []byte // a READ or atomic that executed: the bytes it must bring back
}

func (m *tmsg) needsRecv() bool { return m.isSend() || m.Op == verbs.WRRDMAWriteWithImm }
func (m *tmsg) isSend() bool {
	return m.Op == verbs.WRSend || m.Op == verbs.WRSendWithImm || m.Op == verbs.WRSendWithInv
}
func (m *tmsg) isWrite() bool   { return m.Op == verbs.WRRDMAWrite || m.Op == verbs.WRRDMAWriteWithImm }
func (m *tmsg) hasImm() bool    { return m.Op == verbs.WRSendWithImm || m.Op == verbs.WRRDMAWriteWithImm }
func (m *tmsg) hasTarget() bool { return m.isWrite() && !m.BadRKey && !m.Window }

// tdir is one direction of an RC or UC connection.
type tdir struct {
	from, to  int
	msgs      []*tmsg
	next      int  // RC, and exact UC: the first message not executed yet
	acked     int  // RC: every message before it is known acknowledged
	blocked   bool // RC: msgs[next] waits for a receive request (RNR, rnr_retry 7)
	uncertain bool // RC: some executions since the last Settle may not have happened yet
	matched   int  // lossy UC: the last message seen at the responder, -1 for none
}

// tqp is the model of one QP.
type tqp struct {
	QPSpec
	state     verbs.QPState
	before    verbs.QPState // with uncertain: the state it may still be in
	uncertain bool          // it enters state when pending work runs, which may not have happened yet
	peer      int
	qkey      uint32
	rnrRetry  uint8
	sq, rq    []*twr
	out, in   *tdir
	udIn      []*tmsg // lossy UD: datagrams that may still arrive
	flushedRQ bool    // lossy: a receive completed with WR_FLUSH_ERR, so the later ones do too
	// The exposed area (window.go): the last bytes of the QP's MR, which
	// windows are bound to, at exposedAt, and what they hold.
	exposedAt uint64
	exposed   []byte
}

// Traffic is the reference model of traffic between QPs of a fabric. QPs
// and CQs are named by the index at which they were added.
type Traffic struct {
	r        verbs.Readings
	f        Fabric
	ncq      int
	qps      []*tqp
	wrs      map[uint64]*twr
	writes   []*tmsg // RDMA WRITEs whose targets have not been released
	events   []QPEvent
	settling bool
	wins     []*twin // memory windows (window.go)
}

// NewTraffic returns a model of fabric f, whose devices follow readings r,
// with no QPs. Of the readings it consults RecvTooSmallRemInvReq (XFER-05),
// SendInvErrAcked (XFER-29), SendWCImm (WC-13), NoQPEvents (ASYNC-11) and
// FreeSlotOnRetire (QP-29, QP-31).
func NewTraffic(r verbs.Readings, f Fabric) *Traffic {
	return &Traffic{r: r, f: f, wrs: map[uint64]*twr{}}
}

// AddCQ adds a CQ and returns its index. The model assumes the CQs never
// overrun (CQ-25).
func (m *Traffic) AddCQ() int { m.ncq++; return m.ncq - 1 }

// AddQP adds a QP in RESET and returns its index.
func (m *Traffic) AddQP(s QPSpec) int {
	m.qps = append(m.qps, &tqp{QPSpec: s, state: verbs.QPStateReset, peer: -1})
	return len(m.qps) - 1
}

// Connect records that RC or UC QPs a and b, both in RESET, were connected
// to each other and brought to RTS, the requester of a retrying RNR NAKs
// rnrA times and that of b rnrB times (0 or 7).
func (m *Traffic) Connect(a, b int, rnrA, rnrB uint8) error {
	qa, qb := m.qps[a], m.qps[b]
	if qa.Type != qb.Type || qa.Type == verbs.QPTypeUD || qa.state != verbs.QPStateReset || qb.state != verbs.QPStateReset {
		return fmt.Errorf("connect qp %d and %d: two %v QPs in RESET needed", a, b, qa.Type)
	}
	qa.peer, qb.peer = b, a
	qa.rnrRetry, qb.rnrRetry = rnrA, rnrB
	qa.out = &tdir{from: a, to: b, matched: -1}
	qb.out = &tdir{from: b, to: a, matched: -1}
	qa.in, qb.in = qb.out, qa.out
	qa.state, qb.state = verbs.QPStateRTS, verbs.QPStateRTS
	return nil
}

// ReadyUD records that UD QP q, in RESET, was brought to RTS with Q_Key qkey.
func (m *Traffic) ReadyUD(q int, qkey uint32) error {
	t := m.qps[q]
	if t.Type != verbs.QPTypeUD || t.state != verbs.QPStateReset {
		return fmt.Errorf("ready qp %d: a UD QP in RESET needed", q)
	}
	t.qkey, t.state = qkey, verbs.QPStateRTS
	return nil
}

// State returns the state of QP q as far as the model knows it.
func (m *Traffic) State(q int) verbs.QPState { return m.qps[q].state }

// Peer returns the QP q is connected to, or -1.
func (m *Traffic) Peer(q int) int { return m.qps[q].peer }

// Span is how many more requests a work queue takes: at least Min, at most
// Max.
type Span struct{ Min, Max int }

// Exact reports whether the model knows the room: Min and Max agree.
func (s Span) Exact() bool { return s.Min == s.Max }

// Room returns how many more send and receive requests QP q takes in one
// post. Under QP-29 A a slot is taken until the completion of its request,
// or of a later request that covers it, has been polled (QP-29 A, QP-31):
// the model knows the room exactly. Under FreeSlotOnRetire a slot is free
// as soon as the device retires its request (QP-29 B), and the model knows
// when that happened only where the request's completion is due now: work
// that waits for a timer or for a packet of a lossy fabric may have retired
// or not, and a receive request of a lossy UC or UD QP retires when a
// message that may never come arrives. Min counts only what has certainly
// retired, Max everything that may have. Settle makes the send queues
// exact, and so does Quiesced the receive queues.
func (m *Traffic) Room(q int) (send, recv Span) {
	t := m.qps[q]
	return m.room(t, t.sq, t.SendDepth), m.room(t, t.rq, t.RecvDepth)
}

func (m *Traffic) room(t *tqp, ws []*twr, depth int) Span {
	r := Span{depth - len(ws), depth - len(ws)}
	if !m.r.FreeSlotOnRetire {
		return r
	}
	for _, w := range ws {
		sure, maybe := m.retired(t, w)
		if sure {
			r.Min++
		}
		if maybe {
			r.Max++
		}
	}
	return r
}

// retired reports whether the device has retired request w of QP t, that
// is completed or flushed it, its completion polled or not: for certain
// (sure), or perhaps (maybe). Under QP-29 B that frees its slot.
func (m *Traffic) retired(t *tqp, w *twr) (sure, maybe bool) {
	switch {
	case w.allowed != nil:
		// Its outcome is decided: done if due now, perhaps if it waits
		// for a timer or a packet.
		return w.due == dueNow, true
	case w.lossy && w.flushOK:
		// Its QP entered ERR: a message took it before, or the flush did.
		return w.due == dueNow, true
	case w.lossy:
		return false, m.mayArrive(t)
	}
	return false, false
}

// mayArrive reports whether a message may still reach a receive request of
// lossy UC or UD QP t.
func (m *Traffic) mayArrive(t *tqp) bool {
	if t.Type == verbs.QPTypeUD {
		return len(t.udIn) > 0
	}
	if t.in == nil {
		return false
	}
	for _, msg := range t.in.msgs[t.in.matched+1:] {
		if msg.fate == fateUnknown && msg.needsRecv() {
			return true
		}
	}
	return false
}

// Held returns how many send and receive requests of QP q have not had
// their completions polled, or been covered by a later one's: the requests
// whose buffers the caller must leave alone (QP-36) and whose completions
// may still be in a CQ. Under QP-29 A that is the queue's occupancy; under
// B it may exceed the depth.
func (m *Traffic) Held(q int) (send, recv int) {
	t := m.qps[q]
	return len(t.sq), len(t.rq)
}

// CheckPost compares how many of asked requests one ibv_post_send on QP q
// (or ibv_post_recv, with recv) accepted, the rest refused with ENOMEM
// (QP-27), with the room the queue had when the call began (Room): the
// list stops at a full queue (QP-29, QP-31). A slot that the list's own
// requests free as they execute is not free for the later requests of the
// same list: a device queues the whole list before it executes any of it
// (verbsim), as the QP model assumes for a list posted in ERR. Where Room is
// not exact any count between the two bounds is accepted; a caller that
// wants the count checked exactly settles first.
func (m *Traffic) CheckPost(q int, recv bool, asked, accepted int) error {
	send, rcv := m.Room(q)
	r, verb, rule := send, "ibv_post_send", "QP-29"
	if recv {
		r, verb, rule = rcv, "ibv_post_recv", "QP-31"
	}
	lo, hi := min(asked, max(r.Min, 0)), min(asked, max(r.Max, 0))
	if accepted >= lo && accepted <= hi {
		return nil
	}
	t := m.qps[q]
	held := len(t.sq)
	depth := t.SendDepth
	if recv {
		held, depth = len(t.rq), t.RecvDepth
	}
	reading := fmt.Sprintf("reading A: a slot is free once the completion covering it is polled; %d of %d held", held, depth)
	if m.r.FreeSlotOnRetire {
		reading = fmt.Sprintf("reading B: a slot is free once the device has completed or flushed its request; %d of %d not polled", held, depth)
	}
	want := fmt.Sprint(lo)
	if lo != hi {
		want = fmt.Sprintf("%d to %d", lo, hi)
	}
	return fmt.Errorf("qp %d (%#x): %s of %d accepted %d, want %s (%s, %s)", q, t.Num, verb, asked, accepted, want, rule, reading)
}

// Credit returns how many receive requests the peer of RC QP q has that no
// message of q has taken.
func (m *Traffic) Credit(q int) int {
	t := m.qps[q]
	if t.peer < 0 {
		return 0
	}
	n := 0
	for _, w := range m.qps[t.peer].rq {
		if w.free() {
			n++
		}
	}
	return n
}

// CheckState compares the state ibv_query_qp reported for QP q.
func (m *Traffic) CheckState(q int, got verbs.QPState) error {
	t := m.qps[q]
	if got == t.state || (t.uncertain && got == t.before) {
		return nil
	}
	if t.uncertain {
		return fmt.Errorf("qp %d (%#x): ibv_query_qp state %v, want %v or %v", q, t.Num, got, t.before, t.state)
	}
	return fmt.Errorf("qp %d (%#x): ibv_query_qp state %v, want %v (QP-24)", q, t.Num, got, t.state)
}

func receiving(s verbs.QPState) bool { return s == verbs.QPStateRTR || s == verbs.QPStateRTS }

// free reports whether receive request w is waiting for a message.
func (w *twr) free() bool { return w.recv && !w.consumed && w.allowed == nil && !w.lossy }

func (t *tqp) freeRecv() *twr {
	for _, w := range t.rq {
		if w.free() {
			return w
		}
	}
	return nil
}

// flushDue is when the flush of a verb's QP is pollable (FLUSH-13).
func (m *Traffic) flushDue() due {
	if m.f.SyncFlush || m.settling {
		return dueNow
	}
	return dueLater
}

// sendDue is when a request that needs no answer completes: UC and UD
// sends (XFER-26).
func (m *Traffic) sendDue() due {
	if m.f.Settles || m.settling {
		return dueNow
	}
	return dueLater
}

// runDue is when what an RC direction executes now is pollable.
func (m *Traffic) runDue(d *tdir) due {
	if m.settling || (m.f.Settles && !m.f.Lossy && !d.uncertain) {
		return dueNow
	}
	return dueLater
}

// deliverDue is when a UC or UD message delivered now is pollable.
func (m *Traffic) deliverDue() due {
	if m.settling || (m.f.Settles && !m.f.Lossy) {
		return dueNow
	}
	return dueLater
}

// timerDue is when what waits for a timer is pollable.
func (m *Traffic) timerDue() due {
	if m.settling {
		return dueNow
	}
	return dueLater
}

func complete(w *twr, d due, st ...verbs.WCStatus) {
	w.allowed, w.due = st, d
}

// PostRecv records receive requests posted on QP q, which the
// implementation accepted (CheckPost says how many it must).
func (m *Traffic) PostRecv(q int, rs []Recv) error {
	t := m.qps[q]
	if t.state == verbs.QPStateReset {
		return fmt.Errorf("qp %d: the model does not post receives in RESET", q)
	}
	if _, room := m.Room(q); len(rs) > room.Max {
		return fmt.Errorf("qp %d: receive queue full", q)
	}
	for _, r := range rs {
		if _, dup := m.wrs[r.WRID]; dup {
			return fmt.Errorf("wr_id %#x is already outstanding", r.WRID)
		}
	}
	for _, r := range rs {
		w := &twr{id: r.WRID, qp: q, recv: true, cap: r.Cap, fill: r.Fill}
		m.wrs[w.id] = w
		t.rq = append(t.rq, w)
		switch {
		case t.state == verbs.QPStateErr:
			complete(w, m.flushDue(), verbs.WCWRFlushErr) // FLUSH-05
		case m.f.Lossy && t.Type != verbs.QPTypeRC:
			w.lossy, w.due = true, dueChance
		}
		// An RC stream waiting after an RNR NAK takes it only when its RNR
		// timer fires (XFER-07): Tick or Settle.
	}
	return nil
}

// PostSend records send requests posted on QP q, which the implementation
// accepted (CheckPost says how many it must). When Lossy, the caller posts
// RC consumers (SEND, WRITE_WITH_IMM) only where Credit allows: under
// faults the model does not predict RNR.
func (m *Traffic) PostSend(q int, ss []Send) error {
	t := m.qps[q]
	if t.state != verbs.QPStateRTS && t.state != verbs.QPStateErr {
		return fmt.Errorf("qp %d: the model posts sends in RTS and ERR only, not %v", q, t.state)
	}
	if room, _ := m.Room(q); len(ss) > room.Max {
		return fmt.Errorf("qp %d: send queue full", q)
	}
	if t.Type != verbs.QPTypeUD && t.peer < 0 {
		return fmt.Errorf("qp %d: not connected", q)
	}
	if m.f.Lossy && t.Type == verbs.QPTypeRC && t.state == verbs.QPStateRTS && receiving(m.qps[t.peer].state) {
		need := 0
		for _, s := range ss {
			if (&tmsg{Send: s}).needsRecv() {
				need++
			}
		}
		if need > m.Credit(q) {
			return fmt.Errorf("qp %d: %d consumers for %d receive requests: RNR under faults is not modelled", q, need, m.Credit(q))
		}
	}
	for _, s := range ss {
		if t.Type == verbs.QPTypeUD && s.Op != verbs.WRSend && s.Op != verbs.WRSendWithImm {
			if err := m.checkNotOfUD(q, s, len(ss)); err != nil {
				return err
			}
			continue
		}
		switch s.Op {
		case verbs.WRSend, verbs.WRSendWithImm:
		case verbs.WRRDMAWrite, verbs.WRRDMAWriteWithImm:
		case verbs.WRRDMARead, verbs.WRAtomicCmpAndSwp, verbs.WRAtomicFetchAndAdd, verbs.WRAtomicWrite, verbs.WRSendWithInv, verbs.WRBindMW, verbs.WRLocalInv:
			if err := m.checkWindowOp(q, s, len(ss)); err != nil {
				return err
			}
		default:
			return fmt.Errorf("qp %d: opcode %v is not modelled", q, s.Op)
		}
		if s.Window && s.Op != verbs.WRRDMAWrite && s.Op != verbs.WRRDMARead && !isEight(s.Op) {
			return fmt.Errorf("qp %d: window keys are modelled on RDMA WRITE, READ, atomics and ATOMIC_WRITE only", q)
		}
		if s.BadRKey && s.Op != verbs.WRRDMAWrite {
			return fmt.Errorf("qp %d: bad rkeys are modelled on plain RDMA WRITEs only", q)
		}
		if _, dup := m.wrs[s.WRID]; dup {
			return fmt.Errorf("wr_id %#x is already outstanding", s.WRID)
		}
	}
	for _, s := range ss {
		w := &twr{id: s.WRID, qp: q, signaled: s.Signaled || t.SigAll}
		msg := &tmsg{Send: s, from: q, to: s.Dest, wr: w}
		w.msg = msg
		m.wrs[w.id] = w
		t.sq = append(t.sq, w)
		if t.Type == verbs.QPTypeUD && !msg.isSend() {
			m.notOfUD(t, msg)
			continue
		}
		if msg.hasTarget() {
			m.writes = append(m.writes, msg)
		}
		if s.Op == verbs.WRBindMW {
			m.bindPosted(msg)
		}
		if t.state == verbs.QPStateErr {
			msg.fate = fateFlushed // FLUSH-05: never sent
			complete(w, m.flushDue(), verbs.WCWRFlushErr)
			continue
		}
		switch {
		case isLocalOp(s.Op):
			m.localOp(q, t, msg)
		case t.Type == verbs.QPTypeRC:
			msg.to = t.peer
			t.out.msgs = append(t.out.msgs, msg)
			m.advanceRC(t.out)
		case t.Type == verbs.QPTypeUC:
			msg.to = t.peer
			t.out.msgs = append(t.out.msgs, msg)
			complete(w, m.sendDue(), verbs.WCSuccess) // XFER-26
			m.deliverUC(t.out, msg)
		case t.Type == verbs.QPTypeUD:
			complete(w, m.sendDue(), verbs.WCSuccess) // XFER-20, XFER-22: the sender succeeds whatever happens
			m.deliverUD(msg)
		}
	}
	return nil
}

// advanceRC executes the messages of RC direction d in order at the
// responder for as long as it can (XFER-25, XFER-18).
func (m *Traffic) advanceRC(d *tdir) {
	s, r := m.qps[d.from], m.qps[d.to]
	for d.next < len(d.msgs) && !d.blocked {
		if s.state == verbs.QPStateErr {
			return
		}
		msg := d.msgs[d.next]
		now := m.runDue(d)
		if !receiving(r.state) {
			// XFER-28, FLUSH-11: no answer; retry_cnt runs out.
			msg.fate = fateFailed
			d.next++
			m.failRequester(s, msg, m.timerDue(), verbs.WCRetryExcErr)
			return
		}
		var rv *twr
		if msg.needsRecv() {
			if rv = r.freeRecv(); rv == nil {
				if msg.Op == verbs.WRRDMAWriteWithImm {
					msg.placed = placedMaybe // the packets before the last one are placed (XFER-12)
				}
				if s.rnrRetry == 7 {
					d.blocked = true // XFER-07: retried for ever
					return
				}
				msg.fate = fateFailed
				d.next++
				m.failRequester(s, msg, now, verbs.WCRNRRetryExcErr) // XFER-07
				return
			}
		}
		switch {
		case msg.isSend() && msg.Len > rv.cap:
			// XFER-05
			rv.consumed, rv.msg = true, msg
			st := verbs.WCLocLenErr
			if m.r.RecvTooSmallRemInvReq {
				st = verbs.WCRemInvReqErr
			}
			complete(rv, now, st)
			m.responderError(d, msg, now, verbs.WCRemInvReqErr)
			return
		case msg.BadRKey && msg.Len > 0:
			// XFER-14 level 2; a zero-length WRITE is not checked (XFER-24).
			m.responderError(d, msg, now, verbs.WCRemAccessErr)
			return
		case msg.Window && !m.windowAccess(d.to, msg):
			// MW-06, XFER-14.
			m.responderError(d, msg, now, verbs.WCRemAccessErr)
			return
		case msg.Op == verbs.WRSendWithInv && !m.invalidate(d.to, msg.RKey):
			// XFER-29: the receive request was taken and fails too.
			rv.consumed, rv.msg = true, msg
			if m.r.SendInvErrAcked {
				// Reading B: acknowledged; the responder alone fails.
				m.sendInvAcked(d, msg, rv, now)
				return
			}
			complete(rv, now, verbs.WCLocQPOpErr)
			m.responderError(d, msg, now, verbs.WCRemInvReqErr)
			return
		}
		if rv != nil {
			rv.consumed, rv.msg = true, msg
			complete(rv, now, verbs.WCSuccess)
		}
		msg.fate = fateDelivered
		if msg.isWrite() {
			msg.placed = placedYes
		}
		complete(msg.wr, now, verbs.WCSuccess)
		d.next++
	}
}

// failRequester fails msg at its requester s with st and moves s to ERR
// (FLUSH-03, FLUSH-09).
func (m *Traffic) failRequester(s *tqp, msg *tmsg, d due, st verbs.WCStatus) {
	complete(msg.wr, d, st)
	m.kill(d, s)
}

// responderError fails msg at the responder: the requester's request gets
// st, both QPs go to ERR and everything else is flushed (FLUSH-03,
// FLUSH-12, XFER-15). Under faults the NAK may be lost along with the ACKs
// of the unacknowledged requests before it; the requester then runs out of
// retries on the oldest of them instead (XFER-10).
func (m *Traffic) responderError(d *tdir, msg *tmsg, now due, st verbs.WCStatus) {
	s, r := m.qps[d.from], m.qps[d.to]
	msg.fate = fateFailed
	allowed := []verbs.WCStatus{st}
	if m.f.Lossy {
		allowed = append(allowed, verbs.WCRetryExcErr)
		for _, e := range d.msgs[d.acked:d.next] {
			if m.wrs[e.wr.id] == e.wr && slices.Equal(e.wr.allowed, []verbs.WCStatus{verbs.WCSuccess}) {
				e.wr.allowed = []verbs.WCStatus{verbs.WCSuccess, verbs.WCRetryExcErr}
			}
		}
	}
	d.next++
	complete(msg.wr, now, allowed...)
	if !m.r.NoQPEvents {
		ev := QPEvent{Type: EventQPReqErr, QP: d.to}
		if st == verbs.WCRemAccessErr {
			ev.Type = EventQPAccessErr
		}
		m.events = append(m.events, ev)
	}
	m.kill(now, r, s)
}

// sendInvAcked is XFER-29 reading B (SendInvErrAcked, rxe): a SEND_WITH_INV
// whose rkey cannot be invalidated is acknowledged, so msg's send WR
// succeeds, its receive WR rv fails with REM_INV_REQ_ERR, and the responder
// alone goes to ERR. On a lossy fabric the ACK may be lost and the send WR
// run out of retries instead; the model then does not know whether the
// requester is in ERR, so the traffic state machine posts no SEND_WITH_INV
// under faults with this reading.
func (m *Traffic) sendInvAcked(d *tdir, msg *tmsg, rv *twr, now due) {
	r := m.qps[d.to]
	complete(rv, now, verbs.WCRemInvReqErr)
	msg.fate = fateFailed // executed; its receive request failed
	d.next++
	if m.f.Lossy {
		complete(msg.wr, now, verbs.WCSuccess, verbs.WCRetryExcErr)
	} else {
		complete(msg.wr, now, verbs.WCSuccess)
	}
	if !m.r.NoQPEvents {
		m.events = append(m.events, QPEvent{Type: EventQPReqErr, QP: d.to})
	}
	m.kill(now, r)
}

// kill moves the QPs ts to ERR together: every outstanding request is
// flushed, in order, on its own CQ (FLUSH-01, FLUSH-02, FLUSH-04), with due
// d. An RC peer sending to one of them now meets a QP that never answers
// (FLUSH-11).
func (m *Traffic) kill(d due, ts ...*tqp) {
	var dead []*tqp
	for _, t := range ts {
		if t.state == verbs.QPStateErr {
			continue
		}
		if d != dueNow && !t.uncertain {
			t.before, t.uncertain = t.state, true
		}
		t.state = verbs.QPStateErr
		dead = append(dead, t)
	}
	for _, t := range dead {
		for _, w := range t.sq {
			if w.allowed == nil {
				complete(w, d, verbs.WCWRFlushErr)
				if w.msg.fate == fatePending {
					w.msg.fate = fateFlushed
				}
			}
		}
		for _, w := range t.rq {
			switch {
			case w.lossy:
				w.flushOK, w.due = true, max(w.due, d)
			case w.allowed == nil:
				complete(w, d, verbs.WCWRFlushErr)
			}
		}
	}
	for _, t := range dead {
		if t.Type == verbs.QPTypeRC && t.in != nil {
			t.in.blocked = false
			m.advanceRC(t.in)
		}
	}
}

// deliverUC executes UC message msg of direction d at the responder.
func (m *Traffic) deliverUC(d *tdir, msg *tmsg) {
	r := m.qps[d.to]
	now := m.deliverDue()
	d.next++
	if !receiving(r.state) {
		msg.fate = fateDropped // XFER-28
		return
	}
	if m.f.Lossy {
		msg.fate = fateUnknown
		if msg.isWrite() {
			msg.placed = placedMaybe
		}
		return
	}
	if !msg.needsRecv() {
		if msg.BadRKey && msg.Len > 0 {
			msg.fate = fateDropped // XFER-14: UC drops it silently
			return
		}
		msg.fate, msg.placed = fateDelivered, placedYes
		return
	}
	rv := r.freeRecv()
	switch {
	case rv == nil:
		msg.fate = fateDropped // XFER-09, XFER-12
		if msg.isWrite() {
			msg.placed = placedMaybe
		}
		return
	case msg.isSend() && msg.Len > rv.cap:
		msg.fate, rv.dirty = fateDropped, true // XFER-06: the request stays posted
		return
	}
	rv.consumed, rv.msg = true, msg
	complete(rv, now, verbs.WCSuccess)
	msg.fate = fateDelivered
	if msg.isWrite() {
		msg.placed = placedYes
	}
}

// deliverUD delivers UD datagram msg.
func (m *Traffic) deliverUD(msg *tmsg) {
	switch {
	case msg.Len > m.f.MTU, msg.Dest < 0: // XFER-20; XFER-22 (no such QP)
		msg.fate = fateDropped
		return
	}
	r := m.qps[msg.Dest]
	if r.Type != verbs.QPTypeUD || !receiving(r.state) || msg.QKey != r.qkey {
		msg.fate = fateDropped // XFER-22, XFER-28
		return
	}
	if m.f.Lossy {
		msg.fate = fateUnknown
		r.udIn = append(r.udIn, msg)
		return
	}
	rv := r.freeRecv()
	switch {
	case rv == nil:
		msg.fate = fateDropped // XFER-09
		return
	case rv.cap < msg.Len+GRHLen:
		msg.fate, rv.dirty = fateDropped, true // XFER-06, XFER-21
		return
	}
	rv.consumed, rv.msg = true, msg
	complete(rv, m.deliverDue(), verbs.WCSuccess)
	msg.fate = fateDelivered
}

// ToErr records that QP q was moved to ERR with ibv_modify_qp.
func (m *Traffic) ToErr(q int) error {
	t := m.qps[q]
	if t.state == verbs.QPStateReset {
		return fmt.Errorf("qp %d: RESET→ERR is not modelled", q)
	}
	if t.uncertain {
		return fmt.Errorf("qp %d: its state is not settled", q)
	}
	m.kill(m.flushDue(), t)
	return nil
}

// Reset records that QP q, in ERR with every completion polled, was moved
// to RESET (FLUSH-08); Connect or ReadyUD brings it back.
func (m *Traffic) Reset(q int) error {
	t := m.qps[q]
	if t.state != verbs.QPStateErr || t.uncertain {
		return fmt.Errorf("qp %d: the model resets settled QPs in ERR only, not %v", q, t.state)
	}
	// Unsignaled requests that succeeded are held until a later
	// completion covers them (and hold their slots, under QP-29 A); the
	// reset frees them (FLUSH-08).
	// Everything else must have been polled: the model does not follow
	// completions that outlive a reset (CQ-26).
	for _, w := range append(slices.Clone(t.sq), t.rq...) {
		if w.recv || w.signaled || !slices.Equal(w.allowed, []verbs.WCStatus{verbs.WCSuccess}) {
			return fmt.Errorf("qp %d: request %#x not polled before the reset", q, w.id)
		}
		delete(m.wrs, w.id)
	}
	t.sq, t.rq = nil, nil
	t.state, t.peer, t.out, t.in, t.udIn, t.flushedRQ = verbs.QPStateReset, -1, nil, nil, nil, false
	return nil
}

// resumable reports whether RC direction d waits after an RNR NAK and its
// next retry would change something.
func (m *Traffic) resumable(d *tdir) bool {
	return d.blocked && (m.qps[d.to].freeRecv() != nil || !receiving(m.qps[d.to].state))
}

func (m *Traffic) rcDirs() []*tdir {
	var ds []*tdir
	for _, t := range m.qps {
		if t.Type == verbs.QPTypeRC && t.out != nil {
			ds = append(ds, t.out)
		}
	}
	return ds
}

// Tick records that time passed: a stream waiting after an RNR NAK whose
// responder now has a receive request may have been retried (XFER-07,
// XFER-08).
func (m *Traffic) Tick() {
	for _, d := range m.rcDirs() {
		if m.resumable(d) {
			d.blocked, d.uncertain = false, true
			m.advanceRC(d)
		}
	}
}

// Settle records that every timer and packet has run: everything that was
// going to happen has happened, except for RC streams waiting for ever
// after RNR NAKs (Stuck).
func (m *Traffic) Settle() {
	m.settling = true
	for _, d := range m.rcDirs() {
		if m.resumable(d) {
			d.blocked = false
			m.advanceRC(d)
		}
	}
	m.settling = false
	for _, w := range m.wrs {
		if w.due == dueLater {
			w.due = dueNow
		}
	}
	for _, t := range m.qps {
		t.uncertain = false
		if t.out != nil {
			t.out.uncertain, t.out.acked = false, t.out.next
		}
	}
}

// Stuck reports whether an RC requester retries an RNR NAK for ever, so that
// the fabric never goes idle (XFER-07, rnr_retry 7).
func (m *Traffic) Stuck() bool {
	for _, d := range m.rcDirs() {
		if d.blocked && m.qps[d.from].state == verbs.QPStateRTS && !m.resumable(d) {
			return true
		}
	}
	return false
}

// Unsettled reports whether the outcome of pending work depends on the
// order in which timers fire, which the model does not know: a QP whose
// state changes when pending work runs, or several RC streams in flux
// (waiting to be retried, or perhaps retried already), or one whose retry
// moves a QP to ERR. The caller then settles.
func (m *Traffic) Unsettled() bool {
	for _, t := range m.qps {
		if t.uncertain {
			return true
		}
	}
	n := 0
	for _, d := range m.rcDirs() {
		if m.inFlux(d) {
			n++
			if m.resumable(d) && m.fatal(d, nil) {
				return true
			}
		}
	}
	return n > 1
}

// inFlux reports whether RC direction d waits for an RNR retry that will
// change something, or may have been retried since the last Settle.
func (m *Traffic) inFlux(d *tdir) bool { return d.uncertain || m.resumable(d) }

// SettleBeforeRecv reports whether the caller must settle before posting
// receive requests on QP q: an RC stream into another QP is in flux, and
// the new requests may put the stream into q in flux too, after which the
// model could not tell which retry runs first.
func (m *Traffic) SettleBeforeRecv(q int) bool {
	for _, d := range m.rcDirs() {
		if d.to != q && m.inFlux(d) {
			return true
		}
	}
	return false
}

// PredictFatal reports whether posting ss on QP q would, once executed,
// move a QP to ERR. Under faults a caller settles before such a post, so
// that nothing else is in flight when it fails.
func (m *Traffic) PredictFatal(q int, ss []Send) bool {
	t := m.qps[q]
	if t.Type != verbs.QPTypeRC || t.state != verbs.QPStateRTS {
		return false
	}
	extra := make([]*tmsg, len(ss))
	for i := range ss {
		extra[i] = &tmsg{Send: ss[i]}
	}
	return m.fatal(t.out, extra)
}

// fatal runs RC direction d from its next message, followed by extra, over
// the responder's free receive requests, and reports whether a QP would go
// to ERR before the stream waits or ends.
func (m *Traffic) fatal(d *tdir, extra []*tmsg) bool {
	s, r := m.qps[d.from], m.qps[d.to]
	if !receiving(r.state) {
		return len(d.msgs)-d.next+len(extra) > 0
	}
	var free []*twr
	for _, w := range r.rq {
		if w.free() {
			free = append(free, w)
		}
	}
	for _, msg := range append(slices.Clone(d.msgs[d.next:]), extra...) {
		if msg.needsRecv() {
			if len(free) == 0 {
				return s.rnrRetry != 7
			}
			if msg.isSend() && msg.Len > free[0].cap {
				return true
			}
			free = free[1:]
		}
		if msg.Window || msg.Op == verbs.WRSendWithInv {
			return true // whether it fails depends on windows: settle first, to be safe
		}
		if msg.BadRKey && msg.Len > 0 {
			return true
		}
	}
	return false
}

// mustProduce reports whether w certainly produces a completion.
func (w *twr) mustProduce() bool {
	if w.recv {
		return w.due == dueNow && (w.allowed != nil || w.lossy)
	}
	return w.allowed != nil && (w.signaled || !slices.Contains(w.allowed, verbs.WCSuccess))
}

// Poll checks the completions a poll of CQ cq for asked entries returned,
// in order, and what they placed in memory.
func (m *Traffic) Poll(cq, asked int, got []verbs.WC, mem Memory) error {
	if len(got) > asked {
		return fmt.Errorf("poll of %d returned %d completions (CQ-15)", asked, len(got))
	}
	for i := range got {
		if err := m.observe(cq, &got[i], mem); err != nil {
			return fmt.Errorf("completion %d of %d from cq %d (%v): %w", i+1, len(got), cq, &got[i], err)
		}
	}
	if len(got) < asked {
		if err := m.missing(cq); err != nil {
			return fmt.Errorf("poll of %d on cq %d returned %d: %w", asked, cq, len(got), err)
		}
	}
	return nil
}

// missing returns an error if a completion that must be in CQ cq has not
// been polled: a poll that returned less than it asked for emptied the CQ
// (CQ-15).
func (m *Traffic) missing(cq int) error {
	for i, t := range m.qps {
		for _, q := range []struct {
			ws   []*twr
			cq   int
			kind string
		}{{t.sq, t.SendCQ, "send"}, {t.rq, t.RecvCQ, "receive"}} {
			if q.cq != cq {
				continue
			}
			for _, w := range q.ws {
				if w.due != dueNow {
					break
				}
				if w.mustProduce() {
					return fmt.Errorf("the completion of %s request %#x of qp %d (%#x) is missing; it must have completed with %v",
						q.kind, w.id, i, t.Num, statuses(w))
				}
			}
		}
	}
	return nil
}

func statuses(w *twr) string {
	if w.lossy && w.allowed == nil {
		if w.flushOK {
			return "a message or WR_FLUSH_ERR"
		}
		return "a message"
	}
	s := ""
	for i, st := range w.allowed {
		if i > 0 {
			s += " or "
		}
		s += st.Name()
	}
	return s
}

// observe checks one polled completion.
func (m *Traffic) observe(cq int, w *verbs.WC, mem Memory) error {
	x, ok := m.wrs[w.WRID]
	if !ok {
		return fmt.Errorf("wr_id %#x names no outstanding request: a duplicate, or invented (CQ-17, WC-01)", w.WRID)
	}
	t := m.qps[x.qp]
	if w.QPNum != t.Num {
		return fmt.Errorf("qp_num %#x, want %#x (WC-02)", w.QPNum, t.Num)
	}
	want := t.SendCQ
	if x.recv {
		want = t.RecvCQ
	}
	if want != cq {
		return fmt.Errorf("the request's queue completes on cq %d, not %d", want, cq)
	}
	if x.recv {
		return m.observeRecv(t, x, w, mem)
	}
	return m.observeSend(t, x, w, mem)
}

func (m *Traffic) retire(ws []*twr) {
	for _, w := range ws {
		delete(m.wrs, w.id)
	}
}

func (m *Traffic) observeSend(t *tqp, x *twr, w *verbs.WC, mem Memory) error {
	i := slices.Index(t.sq, x)
	for _, e := range t.sq[:i] {
		switch {
		case e.signaled:
			return fmt.Errorf("send request %#x completed before the earlier signaled request %#x (CQ-18)", x.id, e.id)
		case e.allowed == nil:
			return fmt.Errorf("send request %#x completed before the earlier request %#x could have (CQ-18)", x.id, e.id)
		case !slices.Contains(e.allowed, verbs.WCSuccess):
			return fmt.Errorf("the earlier unsignaled request %#x must complete with %v, which produces a completion (CQ-21)", e.id, statuses(e))
		}
		e.allowed = []verbs.WCStatus{verbs.WCSuccess}
	}
	if x.allowed == nil || x.due == duePending {
		return fmt.Errorf("send request %#x cannot have completed yet", x.id)
	}
	if !slices.Contains(x.allowed, w.Status) {
		return fmt.Errorf("status %v, want %v (%s)", w.Status.Name(), statuses(x), sendRule(t, x))
	}
	if w.Status == verbs.WCSuccess && !x.signaled {
		return fmt.Errorf("unsignaled request %#x completed with SUCCESS (CQ-19)", x.id)
	}
	if w.Status != verbs.WCSuccess {
		// FLUSH-03: after the first failure, only flushes.
		for _, e := range t.sq[i+1:] {
			if len(e.allowed) > 1 {
				e.allowed = []verbs.WCStatus{verbs.WCWRFlushErr}
			}
		}
	}
	x.allowed = []verbs.WCStatus{w.Status}
	// The completion covers every earlier request of the queue (CQ-20).
	m.retire(t.sq[:i+1])
	t.sq = slices.Delete(t.sq, 0, i+1)
	var errs []error
	if w.Status == verbs.WCSuccess {
		msg := x.msg
		op := sendOpcode(msg.Op)
		if w.Opcode != op {
			errs = append(errs, fmt.Errorf("opcode %v, want %v (WC-04)", w.Opcode, op))
		}
		var flags verbs.WCFlags
		if m.r.SendWCImm && msg.hasImm() {
			flags = verbs.WCWithImm
		}
		if w.WCFlags != flags {
			errs = append(errs, fmt.Errorf("wc_flags %v, want %v (WC-13)", w.WCFlags, flags))
		}
		if t.Type == verbs.QPTypeRC && msg.hasTarget() {
			// The ACK says the data is in place (XFER-11).
			errs = append(errs, m.checkTarget(msg, mem, "XFER-11"))
		}
		errs = append(errs, checkFetched(msg, w, mem))
	}
	return errors.Join(errs...)
}

func sendRule(t *tqp, x *twr) string {
	switch {
	case slices.Contains(x.allowed, verbs.WCWRFlushErr):
		return "FLUSH-01, FLUSH-03, FLUSH-05"
	case slices.Contains(x.allowed, verbs.WCRemInvReqErr) && x.msg.Op != verbs.WRSendWithInv:
		return "XFER-05"
	case slices.Contains(x.allowed, verbs.WCRemAccessErr):
		return "XFER-14, MW-06"
	case slices.Contains(x.allowed, verbs.WCMWBindErr):
		return "MW-05"
	case slices.Contains(x.allowed, verbs.WCLocQPOpErr):
		return "MW-07"
	case slices.Contains(x.allowed, verbs.WCRemInvReqErr) && x.msg.Op == verbs.WRSendWithInv:
		return "XFER-29, MW-07"
	case slices.Contains(x.allowed, verbs.WCRNRRetryExcErr):
		return "XFER-07"
	case slices.Contains(x.allowed, verbs.WCRetryExcErr):
		return "XFER-28, FLUSH-11"
	case x.msg != nil && x.msg.Window:
		return "MW-06, XFER-25"
	case x.msg != nil && isLocalOp(x.msg.Op):
		return "MW-04, MW-05, MW-07"
	case t.Type == verbs.QPTypeRC:
		return "XFER-25"
	}
	return "XFER-26"
}

func (m *Traffic) observeRecv(t *tqp, x *twr, w *verbs.WC, mem Memory) error {
	if t.rq[0] != x {
		return fmt.Errorf("receive request %#x completed before the older %#x (XFER-01, CQ-18)", x.id, t.rq[0].id)
	}
	var err error
	switch {
	case x.lossy && x.allowed == nil:
		err = m.observeLossy(t, x, w, mem)
	case x.allowed == nil || x.due == duePending:
		err = fmt.Errorf("receive request %#x completed, but no message can have reached it (XFER-01, XFER-07, XFER-09)", x.id)
	case !slices.Contains(x.allowed, w.Status):
		err = fmt.Errorf("status %v, want %v (%s)", w.Status.Name(), statuses(x), recvRule(x))
	case w.Status == verbs.WCSuccess:
		err = m.checkRecv(t, x, x.msg, w, mem)
	}
	if err != nil {
		return err
	}
	t.rq = t.rq[1:]
	m.retire([]*twr{x})
	return nil
}

func recvRule(x *twr) string {
	switch {
	case slices.Contains(x.allowed, verbs.WCWRFlushErr):
		return "FLUSH-01, FLUSH-12"
	case slices.Contains(x.allowed, verbs.WCSuccess):
		return "XFER-01, XFER-25"
	}
	return "XFER-05"
}

// observeLossy finds the message a receive on a lossy UC or UD QP got.
func (m *Traffic) observeLossy(t *tqp, x *twr, w *verbs.WC, mem Memory) error {
	if w.Status == verbs.WCWRFlushErr && x.flushOK {
		t.flushedRQ = true
		return nil
	}
	if w.Status != verbs.WCSuccess || t.flushedRQ {
		want := "SUCCESS"
		if t.flushedRQ {
			want = "WR_FLUSH_ERR: an older request was flushed (XFER-01, FLUSH-02)"
		} else if x.flushOK {
			want = "SUCCESS or WR_FLUSH_ERR"
		}
		return fmt.Errorf("status %v, want %s", w.Status.Name(), want)
	}
	cands := t.udIn
	if t.Type == verbs.QPTypeUC {
		cands = t.in.msgs[t.in.matched+1:]
	}
	var first error
	for _, msg := range cands {
		if msg.fate != fateUnknown && (t.Type == verbs.QPTypeUC || !m.f.UDDuplicate || msg.fate != fateDelivered) {
			continue
		}
		if !msg.needsRecv() || (msg.isSend() && msg.Len > x.cap) || (t.Type == verbs.QPTypeUD && msg.Len+GRHLen > x.cap) {
			continue
		}
		if err := m.checkRecv(t, x, msg, w, mem); err != nil {
			if first == nil {
				first = fmt.Errorf("the closest candidate, request %#x, differs: %w", msg.WRID, err)
			}
			continue
		}
		m.matched(t, msg)
		x.msg = msg
		return nil
	}
	if first == nil {
		first = errors.New("no message that could have arrived is left")
	}
	if t.Type == verbs.QPTypeUC {
		return fmt.Errorf("the receive matches no message sent on the connection after the last one seen, intact and in order (XFER-26): %w", first)
	}
	return fmt.Errorf("the receive matches no datagram sent to the QP (XFER-21, XFER-22): %w", first)
}

// matched records that lossy message msg arrived at QP t.
func (m *Traffic) matched(t *tqp, msg *tmsg) {
	msg.fate = fateDelivered
	if msg.isWrite() {
		msg.placed = placedYes
	}
	if t.Type == verbs.QPTypeUC {
		d := t.in
		j := slices.Index(d.msgs, msg)
		for _, e := range d.msgs[d.matched+1 : j] {
			if e.fate == fateUnknown && e.needsRecv() {
				e.fate = fateDropped // UC never reorders (XFER-26)
			}
		}
		d.matched = j
		return
	}
	j := slices.Index(t.udIn, msg)
	keep := t.udIn[:0]
	for i, e := range t.udIn {
		switch {
		case e == msg && !m.f.UDDuplicate:
		case !m.f.UDReorder && i < j && e.from == msg.from && e.fate == fateUnknown:
			e.fate = fateDropped // an earlier datagram of the sender can no longer arrive
		case e.fate == fateUnknown || (m.f.UDDuplicate && e.fate == fateDelivered):
			keep = append(keep, e)
		}
	}
	t.udIn = keep
}

// checkRecv compares a successful receive completion of request x on QP t
// with message msg, and the bytes it placed.
func (m *Traffic) checkRecv(t *tqp, x *twr, msg *tmsg, w *verbs.WC, mem Memory) error {
	var errs []error
	op := verbs.WCRecv
	if msg.Op == verbs.WRRDMAWriteWithImm {
		op = verbs.WCRecvRDMAWithImm
	}
	if w.Opcode != op {
		errs = append(errs, fmt.Errorf("opcode %v, want %v (WC-05)", w.Opcode, op))
	}
	n := msg.Len
	ud := t.Type == verbs.QPTypeUD
	if ud {
		n += GRHLen
	}
	if int(w.ByteLen) != n {
		errs = append(errs, fmt.Errorf("byte_len %d, want %d (WC-10)", w.ByteLen, n))
	}
	var flags verbs.WCFlags
	if msg.hasImm() {
		flags |= verbs.WCWithImm
	}
	if msg.Op == verbs.WRSendWithInv {
		flags |= verbs.WCWithInv
		if w.InvalidatedRkey() != msg.RKey {
			errs = append(errs, fmt.Errorf("invalidated_rkey %#x, want %#x (XFER-29)", w.InvalidatedRkey(), msg.RKey))
		}
	}
	if ud && msg.Global {
		flags |= verbs.WCGRH
	}
	if w.WCFlags != flags {
		errs = append(errs, fmt.Errorf("wc_flags %v, want %v (WC-08)", w.WCFlags, flags))
	}
	if msg.hasImm() && w.ImmData != msg.Imm {
		errs = append(errs, fmt.Errorf("imm_data %#x, want %#x (WC-09)", w.ImmData, msg.Imm))
	}
	if ud {
		src := m.qps[msg.from]
		if w.SrcQP != src.Num || w.SLID != src.LID || w.SL != msg.SL {
			errs = append(errs, fmt.Errorf("src_qp %#x slid %#x sl %d, want %#x %#x %d (WC-12)",
				w.SrcQP, w.SLID, w.SL, src.Num, src.LID, msg.SL))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	buf := mem.Recv(x.id)
	if len(buf) != x.cap {
		return fmt.Errorf("the receive buffer has %d bytes, want %d", len(buf), x.cap)
	}
	fill := Pattern(x.fill, x.cap)
	payload := Payload(msg.Seed, msg.Len)
	tailFrom := msg.Len
	switch {
	case msg.Op == verbs.WRRDMAWriteWithImm:
		tailFrom = 0 // its scatter list is not used (XFER-12)
	case ud:
		if err := diff(buf[GRHLen:GRHLen+msg.Len], payload, "the payload at byte 40 of the receive buffer (XFER-21)"); err != nil {
			return err
		}
		tailFrom = GRHLen + msg.Len
	default:
		if err := diff(buf[:msg.Len], payload, "the receive buffer (XFER-02, XFER-03)"); err != nil {
			return err
		}
	}
	if !x.dirty && !x.lossy {
		if err := diff(buf[tailFrom:], fill[tailFrom:], "the receive buffer past the message (XFER-02)"); err != nil {
			return err
		}
	}
	if msg.Op == verbs.WRRDMAWriteWithImm {
		if err := m.checkTarget(msg, mem, "XFER-12"); err != nil {
			return err
		}
	}
	if t.Type == verbs.QPTypeRC {
		// XFER-18: every earlier WRITE of the connection is in place.
		d := t.in
		for _, e := range d.msgs {
			if e == msg {
				break
			}
			if e.hasTarget() && e.placed == placedYes && !e.released {
				if err := m.checkTarget(e, mem, "XFER-18"); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// checkTarget checks that the RDMA WRITE target of msg holds its payload.
func (m *Traffic) checkTarget(msg *tmsg, mem Memory, rule string) error {
	if !msg.hasTarget() || msg.released {
		return nil
	}
	return diff(mem.Target(msg.WRID), Payload(msg.Seed, msg.Len), fmt.Sprintf("the target of RDMA WRITE %#x (%s)", msg.WRID, rule))
}

func diff(got, want []byte, what string) error {
	if len(got) != len(want) {
		return fmt.Errorf("%s: %d bytes, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			return fmt.Errorf("%s differs at byte %d: %#02x, want %#02x", what, i, got[i], want[i])
		}
	}
	return nil
}

// Quiesced records that the fabric has settled and every CQ has been
// polled empty since: a message that has not arrived never will. It checks
// that no completion is missing and that every RDMA WRITE target whose fate
// is final holds what it must: the payload if the WRITE executed, its old
// contents if it never reached the responder, and either, byte by byte, if
// it may have been partly placed. It returns the wr_ids of the WRITEs whose
// targets the model will not read again.
func (m *Traffic) Quiesced(mem Memory) (released []uint64, err error) {
	for i := range m.ncq {
		if err := m.missing(i); err != nil {
			return nil, err
		}
	}
	for _, t := range m.qps {
		if t.Type == verbs.QPTypeUC && t.out != nil {
			d := t.in
			for _, msg := range d.msgs[d.matched+1:] {
				if msg.fate == fateUnknown {
					msg.fate = fateDropped
				}
			}
			d.matched = len(d.msgs) - 1
		}
		for _, msg := range t.udIn {
			if msg.fate == fateUnknown {
				msg.fate = fateDropped
			}
		}
		t.udIn = nil
	}
	keep := m.writes[:0]
	var errs []error
	for i, t := range m.qps {
		if t.exposed != nil {
			errs = append(errs, diff(mem.Exposed(i), t.exposed, fmt.Sprintf("the exposed area of qp %d, which only windows reach (MW-06, XFER-13, XFER-17)", i)))
		}
	}
	for _, msg := range m.writes {
		if msg.fate == fatePending {
			keep = append(keep, msg)
			continue
		}
		got, old := mem.Target(msg.WRID), Pattern(msg.Fill, msg.Len)
		switch msg.placed {
		case placedYes:
			errs = append(errs, checkBytes(got, Payload(msg.Seed, msg.Len), nil, msg, "it executed (XFER-11)"))
		case placedNo:
			errs = append(errs, checkBytes(got, old, nil, msg, "it never reached the responder"))
		case placedMaybe:
			errs = append(errs, checkBytes(got, old, Payload(msg.Seed, msg.Len), msg, "each byte is old or new"))
		}
		msg.released = true
		released = append(released, msg.WRID)
	}
	m.writes = keep
	return released, errors.Join(errs...)
}

// CheckEvents compares the async events read since the last call, once the
// fabric has settled, with those the model expects: one QP_REQ_ERR or
// QP_ACCESS_ERR on the responder of each RC request that failed there, under
// the QPEvents reading, and nothing else: no COMM_EST (a QP receives in RTS
// only) and nothing for a modify to ERR (FLUSH-14).
func (m *Traffic) CheckEvents(got []QPEvent) error {
	want := m.events
	m.events = nil
	key := func(e QPEvent) int { return e.QP<<8 | e.Type }
	slices.SortFunc(want, func(a, b QPEvent) int { return key(a) - key(b) })
	slices.SortFunc(got, func(a, b QPEvent) int { return key(a) - key(b) })
	if !slices.Equal(got, want) {
		return fmt.Errorf("async events %v, want %v (XFER-15, ASYNC-09..12, FLUSH-14)", got, want)
	}
	return nil
}

// Outstanding returns how many send and receive requests of QP q have not
// completed: RC messages waiting for an RNR retry and the messages behind
// them, and receive requests no message has reached. It is exact once
// Quiesced has been called and nothing posted since.
func (m *Traffic) Outstanding(q int) (send, recv int) {
	t := m.qps[q]
	for _, w := range t.sq {
		if w.allowed == nil {
			send++
		}
	}
	for _, w := range t.rq {
		if w.allowed == nil {
			recv++
		}
	}
	return send, recv
}

// checkBytes checks that every byte of got is that of want or, when or is
// not nil, that of or.
func checkBytes(got, want, or []byte, msg *tmsg, why string) error {
	if len(got) != len(want) {
		return fmt.Errorf("the target of RDMA WRITE %#x has %d bytes, want %d", msg.WRID, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] && (or == nil || got[i] != or[i]) {
			return fmt.Errorf("the target of RDMA WRITE %#x (fate %d) differs at byte %d: %#02x, want %#02x (%s)",
				msg.WRID, msg.fate, i, got[i], want[i], why)
		}
	}
	return nil
}
