package sim

import (
	"context"

	"github.com/verbsim/verbsim/sim/internal/cq"
	"github.com/verbsim/verbsim/sim/internal/notify"
	"github.com/verbsim/verbsim/sim/internal/qp"
	"github.com/verbsim/verbsim/verbs"
)

// CQ is a completion queue (struct ibv_cq, and struct ibv_cq_ex: every CQ
// may also be read with the poll iterator StartPoll, NextPoll, EndPoll and
// the Read methods). It is a handle on the engine's CQ; every method is a
// verb or a view of the CQ, safe to call from any goroutine, except that
// the Read methods read the iterator's copy of the current completion
// without the lock: call them from the goroutine running the batch, as
// ibv_wc_read_* in C (Current reads it under the lock).
// On a nil *CQ every method returns EINVAL or zero values; see the package
// doc.
type CQ struct{ c *cq.CQ }

// CQSnapshot is an instant view of a CQ (CQ.Snapshot), for tests, tools
// and teaching.
type CQSnapshot struct {
	CQE        int    // capacity
	Len        int    // unpolled completions
	Arm        CQArm  // pending request
	Overrun    bool   // in the error state after an overrun
	Refs       int    // QPs, SRQs or WQs holding the CQ
	CompRead   uint64 // completion events read by ibv_get_cq_event
	CompAcked  uint64 // ... and acknowledged
	AsyncRead  uint64 // async events naming the CQ read
	AsyncAcked uint64 // ... and acknowledged
	Destroying bool   // destroyed, still waiting for acks
	Destroyed  bool   // fully destroyed
	// Batch is the number of completions an open ibv_start_poll batch has
	// pointed at so far, which EndPoll will consume; 0 with no batch open.
	Batch       int
	Stats       CQStats
	Completions []verbs.WC // the unpolled completions, oldest first
}

// CQStats counts what happened to a CQ over its life.
type CQStats struct {
	Added        uint64 // completions stored
	Polled       uint64 // completions returned by Poll
	Dropped      uint64 // completions lost to overrun
	EventsRaised uint64 // completion events queued on the channel
	ArmsFired    uint64 // requests consumed, with or without a channel
	Overruns     uint64 // CQ_ERR events raised
}

// CQArm is the notification request pending on a CQ (CQ.Armed): what
// ibv_req_notify_cq left behind. The zero value is CQDisarmed.
type CQArm uint8

// The CQArm values.
const (
	// CQDisarmed: no request pending; new completions raise no event.
	CQDisarmed CQArm = iota
	// CQArmSolicited: ibv_req_notify_cq(cq, 1) is pending; only a solicited
	// receive completion or an unsuccessful one fires it (NOTIFY-04).
	CQArmSolicited
	// CQArmNext: ibv_req_notify_cq(cq, 0) is pending; the next completion
	// fires it.
	CQArmNext
)

// The values are the engine's, which Armed and Snapshot convert: these
// fail to compile when the two lists part.
var (
	_ = [1]int{}[CQDisarmed-CQArm(notify.Disarmed)]
	_ = [1]int{}[CQArmNext-CQArm(notify.ArmNext)]
)

// String returns "disarmed", "solicited" or "next".
func (a CQArm) String() string { return notify.Arm(a).String() }

// newCQ makes the handle of an engine CQ and records it there, so that the
// engine's returns (the CQ of a channel event, of an async event) map back
// to it without allocating.
func newCQ(q *cq.CQ) *CQ {
	h := &CQ{c: q}
	q.Handle = h
	return h
}

// eng returns the engine CQ, nil for a nil handle (whose engine methods
// then report EINVAL or zero values).
func (c *CQ) eng() *cq.CQ {
	if c == nil {
		return nil
	}
	return c.c
}

// engQP returns the engine CQ as the queue-pair engine takes it: a nil
// interface for a nil handle, so that the engine sees "no CQ".
func (c *CQ) engQP() qp.CQ {
	if c == nil {
		return nil
	}
	return c.c
}

// cqHandle maps an engine CQ back to its handle; nil for nil.
func cqHandle(q *cq.CQ) *CQ {
	if q == nil {
		return nil
	}
	h, _ := q.Handle.(*CQ)
	return h
}

// Context returns the device context the CQ was created through
// (ibv_cq.context), not the cq_context given at creation (CQContext).
//
// It returned the cq_context until the handles of issue #9; that is
// CQContext now. Code that asserts or compares the old result no longer
// compiles (TestOldContextIdiomsDoNotCompile), but code that only passes
// it on as an any (printing it, a map[any] key) still does: look for
// .Context() on CQs, QPs and SRQs when moving older code.
func (c *CQ) Context() *Context {
	o, _ := c.eng().Owner().(*Context)
	return o
}

// Channel returns the completion channel given at creation, or nil
// (ibv_cq.channel).
func (c *CQ) Channel() *CompChannel { return chanHandle(c.eng().Channel()) }

// WRID is wr_id of struct ibv_cq_ex: the wr_id of the completion the poll
// iterator points at, valid between a successful StartPoll or NextPoll and
// the next EndPoll.
func (c *CQ) WRID() uint64 {
	if c == nil {
		return 0
	}
	return c.c.WRID
}

// Status is status of struct ibv_cq_ex: the status of the completion the
// poll iterator points at, valid as WRID is.
func (c *CQ) Status() verbs.WCStatus {
	if c == nil {
		return 0
	}
	return c.c.Status
}

// CQE returns the capacity of c: the cqe field of struct ibv_cq, never smaller
// than requested (CQ-02) and updated by Resize (CQ-09).
func (c *CQ) CQE() int { return c.eng().CQE() }

// CQContext returns the cq_context given at creation (CQ-04).
func (c *CQ) CQContext() any { return c.eng().Context() }

// CompVector returns the completion vector given at creation.
func (c *CQ) CompVector() int { return c.eng().CompVector() }

// Len returns the number of unpolled completions.
func (c *CQ) Len() int { return c.eng().Len() }

// Armed returns the pending notification request.
func (c *CQ) Armed() CQArm { return CQArm(c.eng().Armed()) }

// Snapshot returns an instant view of c.
func (c *CQ) Snapshot() CQSnapshot {
	s := c.eng().Snapshot()
	return CQSnapshot{
		CQE: s.CQE, Len: s.Len, Arm: CQArm(s.Arm), Overrun: s.Overrun, Refs: s.Refs,
		CompRead: s.CompRead, CompAcked: s.CompAcked, AsyncRead: s.AsyncRead, AsyncAcked: s.AsyncAcked,
		Destroying: s.Destroying, Destroyed: s.Destroyed, Batch: s.Batch,
		Stats: CQStats(s.Stats), Completions: s.Completions,
	}
}

// Poll removes up to len(wcs) completions, oldest first, copies them into
// wcs and returns how many it copied (ibv_poll_cq). It never blocks (CQ-14),
// writes nothing past wcs[n-1] (CQ-15), and a polled completion is gone for
// good (CQ-17). An empty or nil wcs returns 0 and removes nothing (CQ-16).
// Poll allocates nothing.
//
// After an overrun under the default reading (OverrunDrops false) the CQ is
// in its error state (CQ-23): Poll still returns the completions stored before the overrun, and
// with them an error matching syscall.EIO, on every call. As with io.Reader,
// process the n completions before looking at the error.
//
// While an ibv_start_poll batch is open on c, Poll returns 0 and EBUSY
// (CQX-06). On a destroyed CQ Poll returns 0 and EINVAL.
func (c *CQ) Poll(wcs []verbs.WC) (int, error) { return c.eng().Poll(wcs) }

// ReqNotify arms c (ibv_req_notify_cq). With solicitedOnly false the next
// completion added raises an event; with true only a solicited receive
// completion or an unsuccessful one does (NOTIFY-03, NOTIFY-04). Completions
// already in the CQ never fire it (NOTIFY-02), it fires at most once
// (NOTIFY-01), and requests combine: next outranks solicited in either call
// order (NOTIFY-07) and repeated requests of one kind merge (NOTIFY-08). Arming a CQ without a channel succeeds and delivers nothing
// (NOTIFY-17). On a destroyed CQ it returns EINVAL (NOTIFY-10).
func (c *CQ) ReqNotify(solicitedOnly bool) error { return c.eng().ReqNotify(solicitedOnly) }

// AckEvents acknowledges n completion events read from c's channel
// (ibv_ack_cq_events); n may batch several (CHAN-07, CHAN-12). Acking more than
// were read is EINVAL and counts nothing (CHAN-08). Acks are accepted while a
// destroy waits for them (CQ-13); on a fully destroyed CQ they are EINVAL.
func (c *CQ) AckEvents(n int) error { return c.eng().AckEvents(n) }

// Resize changes the capacity of c to at least cqe (ibv_resize_cq). cqe must
// lie in [1, MaxCQE] and must not be below the number of unpolled completions
// (CQ-08); otherwise Resize returns EINVAL and changes nothing. The new capacity
// is cqe rounded as at creation, so a smaller request may leave more room than
// asked (CQ-09). Unpolled completions keep their order (CQ-10). While an
// ibv_start_poll batch is open it returns EBUSY (CQX-06).
func (c *CQ) Resize(cqe int) (err error) { return c.eng().Resize(cqe) }

// Destroy destroys c (ibv_destroy_cq) and waits, without a deadline, for the
// acknowledgement of every event already read for it. Prefer DestroyContext in
// tests: a forgotten ack then fails the test instead of hanging it.
func (c *CQ) Destroy() error { return c.eng().Destroy() }

// DestroyContext destroys c (ibv_destroy_cq).
//
//   - While a QP, SRQ or WQ still uses c it returns EBUSY and changes nothing
//     (CQ-11). Unpolled completions and a pending arm do not stop it (CQ-12).
//   - Unread events of c queued on its channel or on the async queue are
//     discarded: they need no ack (CQ-13).
//   - Events already read but not acknowledged make it wait, as libibverbs
//     does (CQ-13, ASYNC-05). If ctx ends the wait first, DestroyContext
//     returns an error matching syscall.EINTR and ctx's error. The CQ is then
//     already unusable (every verb but AckEvents returns EINVAL) and still holds
//     its channel; call DestroyContext again, after the acks, to finish.
//   - Under the DestroyBusyOnUnacked reading, unacked events make it return
//     EBUSY at once and change nothing instead.
//   - An open ibv_start_poll batch does not stop it either: the batch ends
//     with the CQ, and EndPoll then returns EINVAL (CQX-06).
//   - On a CQ already destroyed it returns EINVAL.
func (c *CQ) DestroyContext(ctx context.Context) (err error) { return c.eng().DestroyContext(ctx) }

// Ref takes a reference on c, as a QP, SRQ or WQ using it does: while one
// is held, Destroy returns EBUSY (CQ-11). It is a simulator control with no
// verbs counterpart, for tests that play such a user. On a destroyed CQ it
// returns EINVAL.
func (c *CQ) Ref() error { return c.eng().Ref() }

// Unref drops a reference taken by Ref; without one, or on a destroyed CQ,
// it does nothing. A simulator control, as Ref is.
func (c *CQ) Unref() { c.eng().Unref() }

// WCFlags returns the wc_flags the CQ was created with.
func (c *CQ) WCFlags() verbs.WCExFlags { return c.eng().WCFlags() }

// StartPoll opens a batch of completions (ibv_start_poll) and points the
// iterator at the oldest one, whose wr_id and status it stores in c.WRID
// and c.Status; the Read methods return its other fields. On an empty CQ it
// returns ENOENT and opens nothing (CQX-04): do not call EndPoll then.
//
// While the batch is open the completions it has passed stay in the CQ and
// count against its capacity; EndPoll consumes them all at once (CQX-08).
// Completions added during the batch are seen by NextPoll. Calling StartPoll
// again before EndPoll is EINVAL and changes nothing (CQX-06); so is any
// iterator call on a destroyed CQ.
//
// On a CQ in its error state after an overrun (CQ-23 A) the stored
// completions are still returned; where ENOENT would say the CQ is empty,
// EIO says it overran.
//
// StartPoll allocates nothing.
func (c *CQ) StartPoll() error { return c.eng().StartPoll() }

// NextPoll moves the iterator to the next completion (ibv_next_poll) and
// stores its wr_id and status in c.WRID and c.Status. When there is none it
// returns ENOENT (EIO on a CQ in its overrun error state) and the batch
// stays open: call EndPoll still (CQX-05). Without an open batch it is
// EINVAL (CQX-06). NextPoll allocates nothing.
func (c *CQ) NextPoll() error { return c.eng().NextPoll() }

// EndPoll closes the batch (ibv_end_poll): every completion the iterator
// has pointed at is consumed, as Poll would have consumed it, and the CQ may
// be polled again either way (CQX-08). Without an open batch (StartPoll
// failed or was not called) it is EINVAL (CQX-06); libibverbs' ibv_end_poll
// returns nothing, and providers would unlock a lock they do not hold.
// EndPoll allocates nothing.
func (c *CQ) EndPoll() error { return c.eng().EndPoll() }

// Current returns the wr_id and status of the completion the iterator
// points at, as c.WRID and c.Status do, but under the lock and with EINVAL
// when there is none (CQX-07). It allocates nothing.
func (c *CQ) Current() (wrID uint64, status verbs.WCStatus, err error) { return c.eng().Current() }

// ReadOpcode is ibv_wc_read_opcode; always available.
func (c *CQ) ReadOpcode() (verbs.WCOpcode, error) { return c.eng().ReadOpcode() }

// ReadVendorErr is ibv_wc_read_vendor_err; always available.
func (c *CQ) ReadVendorErr() (uint32, error) { return c.eng().ReadVendorErr() }

// ReadWCFlags is ibv_wc_read_wc_flags; always available.
func (c *CQ) ReadWCFlags() (verbs.WCFlags, error) { return c.eng().ReadWCFlags() }

// ReadByteLen is ibv_wc_read_byte_len; needs WCExByteLen.
func (c *CQ) ReadByteLen() (uint32, error) { return c.eng().ReadByteLen() }

// ReadImmData is ibv_wc_read_imm_data; needs WCExImm. The value is opaque
// (a __be32 in C), as verbs.WC.ImmData.
func (c *CQ) ReadImmData() (uint32, error) { return c.eng().ReadImmData() }

// ReadInvalidatedRkey is ibv_wc_read_invalidated_rkey; needs WCExImm, since
// invalidated_rkey shares its storage with imm_data (as in mlx5).
func (c *CQ) ReadInvalidatedRkey() (uint32, error) { return c.eng().ReadInvalidatedRkey() }

// ReadQPNum is ibv_wc_read_qp_num; needs WCExQPNum.
func (c *CQ) ReadQPNum() (uint32, error) { return c.eng().ReadQPNum() }

// ReadSrcQP is ibv_wc_read_src_qp; needs WCExSrcQP.
func (c *CQ) ReadSrcQP() (uint32, error) { return c.eng().ReadSrcQP() }

// ReadSLID is ibv_wc_read_slid; needs WCExSLID.
func (c *CQ) ReadSLID() (uint32, error) { return c.eng().ReadSLID() }

// ReadSL is ibv_wc_read_sl; needs WCExSL.
func (c *CQ) ReadSL() (uint8, error) { return c.eng().ReadSL() }

// ReadDLIDPathBits is ibv_wc_read_dlid_path_bits; needs WCExDLIDPathBits.
func (c *CQ) ReadDLIDPathBits() (uint8, error) { return c.eng().ReadDLIDPathBits() }

// ReadCompletionTS is ibv_wc_read_completion_ts; needs
// WCExCompletionTimestamp. It is the virtual time at which the completion
// was stored in the CQ, in HCA clock cycles: nanoseconds times
// Config.ClockKHz / 10^6 (CQX-09). With package sim's default clock of
// 1 GHz it is the tick itself.
func (c *CQ) ReadCompletionTS() (uint64, error) { return c.eng().ReadCompletionTS() }

// ReadCompletionWallclockNS is ibv_wc_read_completion_wallclock_ns; needs
// WCExCompletionTimestampWallclock. It is the virtual time at which the
// completion was stored, in nanoseconds (CQX-09).
func (c *CQ) ReadCompletionWallclockNS() (uint64, error) { return c.eng().ReadCompletionWallclockNS() }

// Push adds a completion to c as the HCA does when a work request finishes,
// and reports whether c overran. It is the producer side of the CQ: the
// transport engine feeds it the same way; tests and tools may call Push to feed a
// CQ directly (to drive an event loop without any QP, say).
//
// solicited says that the message behind a successful receive completion
// carried the solicited-event bit (NOTIFY-04, NOTIFY-06); it is ignored for
// successful send completions.
//
// In order:
//   - If c is full, or already in its error state, the completion is not
//     stored and c overruns (CQ-22): under the default reading c enters
//     its sticky error state and an IBV_EVENT_CQ_ERR naming c is raised on the
//     async queue, again at every later overrun (CQ-23 reading A); under
//     OverrunDrops only this completion is lost and the event raised (reading B,
//     rxe); with IgnoreOverrun the completion is dropped silently. Push returns
//     overrun true.
//   - Otherwise the completion is stored, and then, if the pending request
//     fires for it, c is disarmed and one event is queued on the channel
//     (NOTIFY-01..05): after the completion is pollable, never before
//     (NOTIFY-12).
//
// Pushing to a destroyed CQ returns EINVAL, and so does a completion whose
// status, opcode or flags are no value of enum ibv_wc_status, ibv_wc_opcode
// or ibv_wc_flags (see verbs.WCStatus.Valid and its siblings); nothing is stored
// then. Push allocates nothing.
func (c *CQ) Push(w verbs.WC, solicited bool) (overrun bool, err error) {
	return c.eng().Push(w, solicited)
}

// Overrun reports whether c is in its error state after an overrun.
func (c *CQ) Overrun() bool { return c.eng().Overrun() }

// Destroyed reports whether c has been destroyed (or is waiting for acks to
// finish being destroyed).
func (c *CQ) Destroyed() bool { return c.eng().Destroyed() }
