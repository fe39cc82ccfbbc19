package cq

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/verbs"

	"github.com/verbsim/verbsim/sim/internal/notify"
	"github.com/verbsim/verbsim/sim/trace"
	"github.com/verbsim/verbsim/sim/verr"
)

// sameRetirer reports whether a and b hold the same type and data word:
// the same pointer, for the work queues that retire. It reads the two words
// of each interface instead of comparing them with ==, which calls the
// runtime (~20 instructions) for every entry a poll returns. A false
// "different" (a value type boxed twice) only splits a run: the retirer
// is told once more.
func sameRetirer(a, b Retirer) bool {
	x := (*[2]unsafe.Pointer)(unsafe.Pointer(&a))
	y := (*[2]unsafe.Pointer)(unsafe.Pointer(&b))
	return x[0] == y[0] && x[1] == y[1]
}

// retireRun tells retirers of polled entries: a retirer frees its slots up
// to the seq it is told (Retirer), so a run of one retirer's entries is
// told once, with its highest seq.
type retireRun struct {
	r   Retirer
	seq uint64
}

// take copies the completions of seg into out (as long as seg), notes
// their retirers, and drops the entries' references to them.
func (t *retireRun) take(out []verbs.WC, seg []entry) {
	out = out[:len(seg)]
	for i := range seg {
		e := &seg[i]
		out[i] = e.w
		if r := e.r; r != nil {
			switch {
			case !sameRetirer(r, t.r):
				t.flush()
				t.r, t.seq = r, e.seq
			case e.seq > t.seq:
				t.seq = e.seq
			}
			e.r = nil // the stale rest of the entry holds no pointer
		}
	}
}

// flush tells the current run's retirer.
func (t *retireRun) flush() {
	if t.r != nil {
		t.r.RetireLocked(t.seq)
	}
}

// Channel is the completion channel type CQs deliver events to: a
// notify.Channel whose events name a *CQ.
type Channel = notify.Channel[*CQ]

// NewChannel returns a completion channel in domain d
// (ibv_create_comp_channel); nil: a domain of its own. Pass the same domain
// to the CQs that will use it.
func NewChannel(d *domain.Domain) *Channel { return notify.NewChannel[*CQ](d) }

// lifecycle of a CQ.
type lifecycle uint8

const (
	live       lifecycle = iota
	destroying           // destroyed as far as the verbs go; waiting for acks (CQ-13)
	destroyed
)

// CQ is a completion queue (struct ibv_cq): a ring of work completions, the
// notification request armed on it, and its event accounting.
//
// A CQ is safe for concurrent use; every method takes the domain lock, except
// those named ...Locked, which expect the caller (the HCA engine) to hold it,
// and the Read methods of the poll iterator, which read a copy of the
// current completion that belongs to the goroutine running the batch.
//
// On a nil handle a method never panics: one that returns an error returns
// EINVAL (a syscall.Errno, through verr), one that does not returns the zero
// value of each result (Destroyed reports false). Package sim's doc states
// the convention for the whole API.
type CQ struct {
	// WRID and Status are the wr_id and status of the completion the poll
	// iterator points at, the two fields struct ibv_cq_ex carries: StartPoll
	// and NextPoll set them when they succeed, EndPoll zeroes them. Only
	// the goroutine running the batch may read them, between those calls;
	// nothing else writes them.
	WRID   uint64
	Status verbs.WCStatus

	// Handle is the public handle of the CQ (a *sim.CQ), set once by its
	// creator before the CQ is shared; the engine only hands it back.
	Handle any

	d *domain.Domain

	// ring holds the unpolled completions from head on. It starts small
	// and grows (doubling, copying in order) up to cqe, so a CQ created
	// with millions of entries costs memory only for what it holds.
	ring []entry
	// stamp: completions record the virtual time they were stored at,
	// which only a CQ whose wc_flags ask for a timestamp can read (CQX-09).
	stamp bool
	cqe   int // the capacity reported to the application
	head  int // oldest entry
	n     int // unpolled entries

	arm     notify.Arm
	overrun bool // in the error state after an overrun (OverrunError policy)

	ch     *Channel
	async  *notify.AsyncQueue
	tally  notify.Tally
	refs   int
	state  lifecycle
	cfg    Config
	stats  Stats
	errEIO error // preallocated: Poll on an overrun CQ allocates nothing
	// quiet: the last thing traced was a poll that found the CQ empty, so
	// further empty polls are not traced.
	quiet bool

	// The poll iterator (ex.go): batch is open between a successful
	// StartPoll and EndPoll; cur is the current completion's offset from
	// head; end says NextPoll has gone past the last one.
	batch bool
	end   bool
	cur   int
	// The current completion, copied by the iterator under the lock for
	// the Read methods, which do not take it: readable says the batch is
	// open and points at a completion (set by the batch's goroutine,
	// cleared by it or by Destroy); only the batch's goroutine writes
	// curWC and curNS.
	readable atomic.Bool
	curWC    verbs.WC
	curNS    uint64

	// shadow mirrors the completions for a consumer outside the engine
	// (shadow.go); nil for every CQ of a Go program.
	shadow Shadow
}

// enter and leave bracket every verb on c: they take and release the
// domain lock through the domain (domain.Domain.Enter and Leave), which
// settles the engine in Auto mode. The records of c's verbs are made
// during the call (traceLocked), as they read c's state. enter names the
// verb, which a scheduler sees (domain.Scheduler.Yield): a schedule
// explorer tells the verbs on one CQ apart by it.
//
// The hot verbs (Poll, ReqNotify, AckEvents, Push) inline the domain's
// fast paths instead, which neither helper can (a helper that calls Enter
// is over the inliner's budget):
//
//	if !c.d.TryEnter() {
//		c.enter(verb)
//	}
//	...
//	if c.d.FastLeave() {
//		c.d.Unlock()
//	} else {
//		c.leave()
//	}
func (c *CQ) enter(verb string) {
	if !c.d.TryEnter() {
		c.d.Enter(domain.Op{Verb: verb, Obj: c})
	}
}

func (c *CQ) leave() {
	if c.d.FastLeave() {
		c.d.Unlock()
		return
	}
	c.d.Leave(domain.Op{Obj: c}, nil)
}

// TraceName returns c's name in the trace: Config.Name, or "cq".
func (c *CQ) TraceName() string {
	if c == nil {
		return ""
	}
	if c.cfg.Name == "" {
		return "cq"
	}
	return c.cfg.Name
}

// emitLocked records r, a call or an event on c, through the domain. The
// domain must be tracing.
func (c *CQ) emitLocked(r trace.Record) {
	c.quiet = false
	c.d.Emit(c, r)
}

// traceVerbLocked traces a call of verb with detail that failed with err,
// or that succeeded when err is nil, if the CQ is traced.
func (c *CQ) traceVerbLocked(verb, detail string, err error) {
	if !c.d.Tracing() {
		return
	}
	r := trace.Record{Kind: trace.KindVerb, Name: verb, Detail: detail}
	domain.Failed(&r, err)
	c.emitLocked(r)
}

// entry is one stored completion and who to tell when it is polled.
type entry struct {
	w   verbs.WC
	r   Retirer
	seq uint64
	ns  uint64 // Config.Clock when stored, for completion timestamps (CQX-09)
}

// Stats counts what happened to a CQ over its life.
type Stats struct {
	Added        uint64 // completions stored
	Polled       uint64 // completions returned by Poll
	Dropped      uint64 // completions lost to overrun
	EventsRaised uint64 // completion events queued on the channel
	ArmsFired    uint64 // requests consumed, with or without a channel
	Overruns     uint64 // CQ_ERR events raised
}

// Snapshot is an instant view of a CQ, for tests, tools and teaching.
type Snapshot struct {
	CQE        int        // capacity
	Len        int        // unpolled completions
	Arm        notify.Arm // pending request
	Overrun    bool       // in the error state after an overrun
	Refs       int        // QPs, SRQs or WQs holding the CQ
	CompRead   uint64     // completion events read by ibv_get_cq_event
	CompAcked  uint64     // ... and acknowledged
	AsyncRead  uint64     // async events naming the CQ read
	AsyncAcked uint64     // ... and acknowledged
	Destroying bool       // destroyed, still waiting for acks
	Destroyed  bool       // fully destroyed
	// Batch is the number of completions an open ibv_start_poll batch has
	// pointed at so far, which EndPoll will consume; 0 with no batch open.
	Batch       int
	Stats       Stats
	Completions []verbs.WC // the unpolled completions, oldest first
}

// New creates a CQ (ibv_create_cq). See Config for the checks it makes.
func New(cfg Config) (*CQ, error) {
	d := cfg.Domain
	if d == nil {
		switch {
		case cfg.Channel != nil:
			d = cfg.Channel.Domain()
		case cfg.Async != nil:
			d = cfg.Async.Domain()
		default:
			d = domain.New()
		}
		cfg.Domain = d
	}
	d.Enter(domain.Op{})
	defer d.Leave(domain.Op{}, nil)
	return NewLocked(cfg)
}

// NewLocked is New for a caller that holds cfg.Domain's lock; cfg.Domain
// must not be nil.
func NewLocked(cfg Config) (*CQ, error) {
	if cfg.Domain == nil {
		return nil, verr.New(verbCreate, syscall.EINVAL, "no domain given")
	}
	capacity, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	if cfg.Channel != nil {
		if err := cfg.Channel.RefLocked(); err != nil {
			return nil, err
		}
	}
	c := &CQ{
		d:     cfg.Domain,
		ring:  make([]entry, min(capacity, initialRing)),
		cqe:   capacity,
		ch:    cfg.Channel,
		async: cfg.Async,
		cfg:   cfg,
		stamp: cfg.Clock != nil && cfg.WCFlags&(verbs.WCExCompletionTimestamp|verbs.WCExCompletionTimestampWallclock) != 0,
	}
	c.errEIO = verr.New(verbPoll, syscall.EIO, "the CQ overran and is in its error state (CQ-23)")
	return c, nil
}

// CQE returns the capacity of c: the cqe field of struct ibv_cq, never smaller
// than requested (CQ-02) and updated by Resize (CQ-09).
func (c *CQ) CQE() int {
	if c == nil {
		return 0
	}
	c.enter(verbRead)
	defer c.leave()
	return c.cqe
}

// Context returns the cq_context given at creation (CQ-04).
func (c *CQ) Context() any {
	if c == nil {
		return nil
	}
	return c.cfg.Context
}

// Channel returns the completion channel c delivers events to, or nil.
func (c *CQ) Channel() *Channel {
	if c == nil {
		return nil
	}
	return c.ch
}

// Owner returns Config.Owner as given at creation: who created the CQ. It
// never changes, so reading it takes no lock.
func (c *CQ) Owner() any {
	if c == nil {
		return nil
	}
	return c.cfg.Owner
}

// CompVector returns the completion vector given at creation.
func (c *CQ) CompVector() int {
	if c == nil {
		return 0
	}
	return c.cfg.CompVector
}

// Domain returns the domain that serializes c.
func (c *CQ) Domain() *domain.Domain {
	if c == nil {
		return nil
	}
	return c.d
}

// Len returns the number of unpolled completions.
func (c *CQ) Len() int {
	if c == nil {
		return 0
	}
	c.enter(verbRead)
	defer c.leave()
	c.syncLocked()
	return c.n
}

// Armed returns the pending notification request.
func (c *CQ) Armed() notify.Arm {
	if c == nil {
		return notify.Disarmed
	}
	c.enter(verbRead)
	defer c.leave()
	return c.arm
}

// Snapshot returns an instant view of c.
func (c *CQ) Snapshot() Snapshot {
	if c == nil {
		return Snapshot{}
	}
	c.enter(verbRead)
	defer c.leave()
	c.syncLocked()
	cr, ca, ar, aa := c.tally.Counts()
	s := Snapshot{
		CQE: c.cqe, Len: c.n, Arm: c.arm, Overrun: c.overrun, Refs: c.refs,
		CompRead: cr, CompAcked: ca, AsyncRead: ar, AsyncAcked: aa,
		Destroying: c.state == destroying, Destroyed: c.state == destroyed,
		Stats: c.stats,
	}
	if c.batch {
		s.Batch = c.cur
		if !c.end {
			s.Batch++
		}
	}
	for i := 0; i < c.n; i++ {
		s.Completions = append(s.Completions, c.ring[(c.head+i)%len(c.ring)].w)
	}
	return s
}

// Poll removes up to len(wcs) completions, oldest first, copies them into
// wcs and returns how many it copied (ibv_poll_cq). It never blocks (CQ-14),
// writes nothing past wcs[n-1] (CQ-15), and a polled completion is gone for
// good (CQ-17). An empty or nil wcs returns 0 and removes nothing (CQ-16).
// Poll allocates nothing.
//
// After an overrun under the OverrunError policy the CQ is in its error state
// (CQ-23): Poll still returns the completions stored before the overrun, and
// with them an error matching syscall.EIO, on every call. As with io.Reader,
// process the n completions before looking at the error.
//
// While an ibv_start_poll batch is open on c, Poll returns 0 and EBUSY
// (CQX-06). On a destroyed CQ Poll returns 0 and EINVAL.
func (c *CQ) Poll(wcs []verbs.WC) (int, error) {
	if c == nil {
		return 0, errNil(verbPoll)
	}
	if !c.d.TryEnter() {
		c.enter(verbPoll)
	}
	if c.state != live || c.batch {
		err := c.pollErrLocked()
		c.leave()
		return 0, err
	}
	if c.shadow != nil {
		c.syncLocked()
	}
	n := min(len(wcs), c.n)
	// The unpolled entries are ring[head:] then ring[:head]: copy from at
	// most two contiguous runs.
	if n == 1 { // the common poll of one, without the run bookkeeping
		e := &c.ring[c.head]
		wcs[0] = e.w
		if e.r != nil {
			e.r.RetireLocked(e.seq)
			e.r = nil
		}
	} else if n > 1 {
		r := retireRun{}
		first := min(n, len(c.ring)-c.head)
		r.take(wcs[:first], c.ring[c.head:c.head+first])
		r.take(wcs[first:n], c.ring[:n-first])
		r.flush()
	}
	head := c.head + n
	if head >= len(c.ring) {
		head -= len(c.ring)
	}
	c.head, c.n = head, c.n-n
	c.stats.Polled += uint64(n)
	if c.d.Watched() {
		c.watchPollLocked(wcs, n)
	}
	var err error
	if c.overrun {
		err = c.errEIO
	}
	// The lock is released without a defer: an empty poll in a busy loop
	// pays for every instruction, and nothing above panics.
	if c.d.FastLeave() {
		c.d.Unlock()
	} else {
		c.leave()
	}
	return n, err
}

// pollErrLocked is the error of Poll on a destroyed CQ or one with an open
// batch, traced; apart so that Poll keeps a small frame.
//
//go:noinline
func (c *CQ) pollErrLocked() error {
	var err error = errBatchOpenP
	if c.state != live {
		err = errDestroyed(verbPoll)
	}
	c.traceVerbLocked("poll_cq", "", err)
	if c.d.Checking() {
		c.d.Note(&domain.Note{Kind: domain.NotePolled, Obj: c})
	}
	return err
}

// watchPollLocked traces a poll that returned n completions into wcs and
// notes it for a checker.
//
//go:noinline
func (c *CQ) watchPollLocked(wcs []verbs.WC, n int) {
	if c.d.Checking() {
		c.d.Note(&domain.Note{Kind: domain.NotePolled, Obj: c, WCs: wcs[:n]})
	}
	if !c.d.Tracing() {
		return
	}
	switch {
	case n > 0:
		c.traceVerbLocked("poll_cq", fmt.Sprintf("%d completion(s), first wr_id %d %s, %d left", n, wcs[0].WRID, wcs[0].Status.Name(), c.n), nil)
	case !c.quiet:
		c.traceVerbLocked("poll_cq", fmt.Sprintf("empty (num_entries %d)", len(wcs)), nil)
		c.quiet = true
	}
}

// ReqNotify arms c (ibv_req_notify_cq). With solicitedOnly false the next
// completion added raises an event; with true only a solicited receive
// completion or an unsuccessful one does (NOTIFY-03, NOTIFY-04). Completions
// already in the CQ never fire it (NOTIFY-02), it fires at most once
// (NOTIFY-01), and requests combine as notify.Arm.Request says (NOTIFY-07,
// NOTIFY-08). Arming a CQ without a channel succeeds and delivers nothing
// (NOTIFY-17). On a destroyed CQ it returns EINVAL (NOTIFY-10).
func (c *CQ) ReqNotify(solicitedOnly bool) error {
	if c == nil {
		return errNil(verbReqNotify)
	}
	if !c.d.TryEnter() {
		c.enter(verbReqNotify)
	}
	if c.state != live || c.d.Tracing() {
		err := c.reqNotifySlowLocked(solicitedOnly)
		c.leave()
		return err
	}
	c.arm = c.arm.Request(solicitedOnly)
	// No defer: the event path calls ReqNotify once per event.
	if c.d.FastLeave() {
		c.d.Unlock()
	} else {
		c.leave()
	}
	return nil
}

// reqNotifySlowLocked is ReqNotify on a destroyed or traced CQ, apart so
// that the common call keeps a small frame.
//
//go:noinline
func (c *CQ) reqNotifySlowLocked(solicitedOnly bool) error {
	if c.state != live {
		err := errDestroyed(verbReqNotify)
		c.traceVerbLocked("req_notify_cq", fmt.Sprintf("solicited_only=%v", solicitedOnly), err)
		return err
	}
	c.arm = c.arm.Request(solicitedOnly)
	c.traceVerbLocked("req_notify_cq", fmt.Sprintf("solicited_only=%v, arm %v", solicitedOnly, c.arm), nil)
	return nil
}

// AckEvents acknowledges n completion events read from c's channel
// (ibv_ack_cq_events); n may batch several (CHAN-07, CHAN-12). Acking more than
// were read is EINVAL and counts nothing (CHAN-08). Acks are accepted while a
// destroy waits for them (CQ-13); on a fully destroyed CQ they are EINVAL.
func (c *CQ) AckEvents(n int) error {
	if c == nil {
		return errNil(verbAck)
	}
	if !c.d.TryEnter() {
		c.enter(verbAck)
	}
	var err error
	if c.state == destroyed {
		err = errDestroyed(verbAck)
	} else {
		err = c.tally.AckComp(n)
		c.d.Wake(c) // a destroy may wait for these acks (CQ-13)
	}
	if c.d.Watched() {
		c.watchAckLocked(n, err)
	}
	// No defer: the event path calls AckEvents once per event.
	if c.d.FastLeave() {
		c.d.Unlock()
	} else {
		c.leave()
	}
	return err
}

// watchAckLocked traces an ack and notes it for a checker, apart so that
// AckEvents keeps a small frame.
//
//go:noinline
func (c *CQ) watchAckLocked(n int, err error) {
	if c.d.Checking() && c.state != destroyed {
		c.d.Note(&domain.Note{Kind: domain.NoteAcked, Obj: c, N: n, Err: err})
	}
	c.traceVerbLocked("ack_cq_events", strconv.Itoa(n), err)
}

// Resize changes the capacity of c to at least cqe (ibv_resize_cq). cqe must
// lie in [1, MaxCQE] and must not be below the number of unpolled completions
// (CQ-08); otherwise Resize returns EINVAL and changes nothing. The new capacity
// is cqe rounded as at creation, so a smaller request may leave more room than
// asked (CQ-09). Unpolled completions keep their order (CQ-10). While an
// ibv_start_poll batch is open it returns EBUSY (CQX-06).
func (c *CQ) Resize(cqe int) (err error) {
	if c == nil {
		return errNil(verbResize)
	}
	c.enter(verbResize)
	defer c.leave()
	if c.d.Tracing() {
		defer func() { c.traceVerbLocked("resize_cq", fmt.Sprintf("cqe=%d, capacity %d", cqe, c.cqe), err) }()
	}
	if c.state != live {
		return errDestroyed(verbResize)
	}
	if c.batch {
		return errBatchOpenR
	}
	if cqe < 1 || cqe > c.cfg.Limits.MaxCQE {
		return verr.Errorf(verbResize, syscall.EINVAL, "cqe %d is outside [1, max_cqe=%d] (CQ-08)", cqe, c.cfg.Limits.MaxCQE)
	}
	if c.shadow != nil {
		if c.shadow.BatchLocked() {
			return errBatchOpenR
		}
		c.syncLocked()
	}
	if cqe < c.n {
		return verr.Errorf(verbResize, syscall.EINVAL,
			"%d completions are unpolled; a CQ of %d cannot hold them (CQ-08)", c.n, cqe)
	}
	capacity := c.cfg.Rounding.round(cqe, c.cfg.Limits.MaxCQE)
	if RoundPow2.round(cqe, c.cfg.Limits.MaxCQE) != cqe {
		c.cfg.Consulted.Add(verbs.ReadingExactCQE)
	}
	c.regrowLocked(min(capacity, max(c.n, initialRing)))
	c.cqe = capacity
	if c.d.Checking() {
		c.d.Note(&domain.Note{Kind: domain.NoteResized, Obj: c, N: capacity})
	}
	if c.shadow != nil {
		c.shadow.ResetLocked(c.entries)
	}
	return nil
}

// initialRing is the ring size a new CQ starts with (or its capacity, if
// smaller).
const initialRing = 64

// regrowLocked moves the unpolled completions, in order, into a ring of
// size n >= c.n.
func (c *CQ) regrowLocked(n int) {
	ring := make([]entry, n)
	for i := 0; i < c.n; i++ {
		ring[i] = c.ring[(c.head+i)%len(c.ring)]
	}
	c.ring, c.head = ring, 0
}

// Destroy destroys c (ibv_destroy_cq) and waits, without a deadline, for the
// acknowledgement of every event already read for it. Prefer DestroyContext in
// tests: a forgotten ack then fails the test instead of hanging it.
func (c *CQ) Destroy() error { return c.DestroyContext(context.Background()) }

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
//   - Under the DestroyBusy policy, unacked events make it return EBUSY at once
//     and change nothing instead.
//   - An open ibv_start_poll batch does not stop it either: the batch ends
//     with the CQ, and EndPoll then returns EINVAL (CQX-06).
//   - On a CQ already destroyed it returns EINVAL.
func (c *CQ) DestroyContext(ctx context.Context) (err error) {
	if c == nil {
		return errNil(verbDestroy)
	}
	if ctx == nil {
		return verr.New(verbDestroy, syscall.EINVAL, "nil context.Context")
	}
	c.enter(verbDestroy)
	defer c.leave()
	if c.d.Tracing() {
		defer func() { c.traceVerbLocked("destroy_cq", "", err) }()
	}
	switch c.state {
	case destroyed:
		return errDestroyed(verbDestroy)
	case live:
		if c.refs > 0 {
			return verr.Errorf(verbDestroy, syscall.EBUSY, "%d QP/SRQ/WQ reference(s) still use the CQ (CQ-11)", c.refs)
		}
		if !c.tally.Settled() {
			c.cfg.Consulted.Add(verbs.ReadingDestroyBusyOnUnacked)
		}
		if c.cfg.Destroy == DestroyBusy && !c.tally.Settled() {
			return verr.Errorf(verbDestroy, syscall.EBUSY, "%d event(s) read but not acked", c.tally.Unacked())
		}
		c.state = destroying
		c.arm = notify.Disarmed
		c.batch, c.cur, c.end = false, 0, false
		c.readable.Store(false)
		c.WRID, c.Status = 0, 0
		c.ring, c.head, c.n, c.cqe = nil, 0, 0, 0
		if c.ch != nil {
			c.ch.DiscardLocked(c)
		}
		if c.async != nil {
			c.async.DiscardLocked(c)
		}
		if c.cfg.OnDestroy != nil {
			c.cfg.OnDestroy()
		}
	}
	if c.d.Checking() && c.state == destroying {
		c.d.Note(&domain.Note{Kind: domain.NoteDestroying, Obj: c})
	}
	w := &domain.Waiter{Verb: verbDestroy, Obj: c, For: "the acks of events already read (CQ-13)"}
	if err := c.tally.WaitSettled(ctx, c.d, w); err != nil {
		return verr.Wrap(verbDestroy, syscall.EINTR,
			"still waiting for acks of events already read (CQ-13); call again to finish", err)
	}
	if c.state == destroying { // another waiter may have finished already
		c.state = destroyed
		if c.ch != nil {
			c.ch.UnrefLocked()
		}
		if c.d.Checking() {
			c.d.Note(&domain.Note{Kind: domain.NoteDestroyed, Obj: c})
		}
	}
	return nil
}

// RefLocked records that a QP, SRQ or WQ uses c, which makes DestroyContext
// return EBUSY until the matching UnrefLocked (CQ-11). It fails with EINVAL on
// a destroyed CQ.
//
// Precondition: the domain lock is held.
func (c *CQ) RefLocked() error {
	if c == nil {
		return errNil(verbRef)
	}
	if c.state != live {
		return errDestroyed(verbRef)
	}
	c.refs++
	return nil
}

// UnrefLocked drops a reference taken with RefLocked.
//
// Precondition: the domain lock is held.
func (c *CQ) UnrefLocked() {
	if c == nil {
		return
	}
	if c.refs > 0 {
		c.refs--
	}
}

// Ref is RefLocked for a caller that does not hold the domain lock.
func (c *CQ) Ref() error {
	if c == nil {
		return errNil(verbRef)
	}
	c.enter(verbRef)
	defer c.leave()
	return c.RefLocked()
}

// Unref is UnrefLocked for a caller that does not hold the domain lock.
func (c *CQ) Unref() {
	if c == nil {
		return
	}
	c.enter(verbUnref)
	defer c.leave()
	c.UnrefLocked()
}

func errNil(verb string) error {
	return verr.New(verb, syscall.EINVAL, "nil CQ")
}

func errDestroyed(verb string) error {
	return verr.New(verb, syscall.EINVAL, "the CQ has been destroyed")
}
