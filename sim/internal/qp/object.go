package qp

import (
	"context"
	"fmt"
	"reflect"
	"syscall"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/verbs"

	"github.com/verbsim/verbsim/sim/internal/notify"
	"github.com/verbsim/verbsim/sim/trace"
	"github.com/verbsim/verbsim/sim/verr"
)

// Retirer is told when a completion it was pushed with has been polled. It
// is the same type as cq.Retirer (an alias of one unnamed interface), which
// lets this package hand its work queues to a CQ without importing package
// cq.
type Retirer = interface{ RetireLocked(seq uint64) }

// CQ is what a QP needs of a completion queue. *cq.CQ implements it.
type CQ interface {
	// PushWQELocked adds a completion that retires r's slots up to seq when
	// polled; it reports whether the CQ overran.
	PushWQELocked(w *verbs.WC, solicited bool, r Retirer, seq uint64) (overrun bool, err error)
	// RefLocked and UnrefLocked hold the CQ so it cannot be destroyed (CQ-11).
	RefLocked() error
	UnrefLocked()
	// RoomLocked is the number of completions the CQ takes before it
	// overruns: 0 when it is full, in its error state or destroyed.
	RoomLocked() int
}

// Memory resolves simulated virtual addresses to the bytes of registered
// memory. PostSend uses it to capture inline payloads, whose keys are not
// checked (QP-35).
type Memory interface {
	// ReadLocked returns the n bytes at addr, or false if they are not all
	// inside one registered memory region.
	ReadLocked(addr uint64, n uint32) ([]byte, bool)
}

// InitAttr holds the arguments of ibv_create_qp that verbsim models (struct
// ibv_qp_init_attr).
type InitAttr struct {
	Context  any          // qp_context
	SendCQ   CQ           // required (QP-03)
	RecvCQ   CQ           // required (QP-03); may be the same CQ
	Cap      verbs.QPCap  // requested capacities; the QP's real ones are >= (QP-02)
	Type     verbs.QPType // RC, UC or UD
	SQSigAll bool         // every send WR is signaled (CQ-19, QP-05)
	// SRQ, if set, is where the QP takes its receive WRs; MaxRecvWR and
	// MaxRecvSGE are then ignored (QP-04). Only RC and UD QPs may use one.
	SRQ *SRQ
	// Ex says the QP is created as by ibv_create_qp_ex with
	// IBV_QP_INIT_ATTR_SEND_OPS_FLAGS in comp_mask: it then has the work
	// request builder (WRStart ... WRComplete) for the operations SendOps
	// names (QPX-01, QPX-02).
	Ex bool
	// SendOps is send_ops_flags, read only when Ex is set.
	SendOps verbs.QPSendOps
}

// DeviceLimits are the device attributes that bound a QP's capacities.
type DeviceLimits struct {
	MaxQPWR   uint32 // ibv_device_attr.max_qp_wr
	MaxSGE    uint32 // ibv_device_attr.max_sge
	MaxInline uint32 // largest max_inline_data the device grants
}

// Config describes a QP to create.
type Config struct {
	Init   InitAttr
	QPNum  uint32 // unique on the device (QP-01); chosen by the caller
	Device DeviceLimits
	Modify Limits // limits for attribute values (QP-22)
	Policy Policy // readings of the implementation-defined rules
	// Domain is the domain the QP lives in (its lock, trace sink and
	// engine hooks), shared with its CQs and SRQ. Required.
	Domain *domain.Domain
	// Name is the QP's name in the trace ("dev0/qp 0x11"); "": "qp 0x…".
	Name   string
	Memory Memory // for inline payloads; nil: inline sends fail with EFAULT
	// Host connects the QP to an adapter and a fabric; nil: work requests
	// stay queued until flushed (the local HCA without a transport).
	Host Host
	// Transport holds the readings of the transport rules.
	Transport TransportPolicy
	Async     *notify.AsyncQueue // receives the QP's async events
	PD        any                // the protection domain, for Query
	OnDestroy func()             // called under the lock when the QP is destroyed
	// XRCD is the XRC domain of an XRC_RECV QP: it delivers only into XRC
	// SRQs whose SRQConfig.XRCD is the same value (XRC-10).
	XRCD any
	// Consulted, if set, records the readings whose value changed what
	// the QP did (the portability report). Shared with the QP's owner.
	Consulted *verbs.ReadingSet
}

// consult records that reading r decided an outcome of the QP.
func (c *Config) consult(r verbs.Reading) { c.Consulted.Add(r) }

// consultSendOps records the readings that take operations out of
// send_ops_flags when ops asks for one of them (QPX-01, QP-42, QP-43,
// MW-08).
func (c *Config) consultSendOps(t verbs.QPType, ops verbs.QPSendOps) {
	if t == verbs.QPTypeUC && ops&verbs.QPExWithLocalInv != 0 {
		c.consult(verbs.ReadingSendOpsRXE)
	}
	if ops&(verbs.QPExWithSendImm|verbs.QPExWithRDMAWriteImm) != 0 {
		c.consult(verbs.ReadingNoImmData)
	}
	if ops&(verbs.QPExWithAtomicCmpSwp|verbs.QPExWithAtomicFetchAdd|verbs.QPExWithAtomicWrite) != 0 {
		c.consult(verbs.ReadingNoAtomics)
	}
	if ops&(verbs.QPExWithBindMW|verbs.QPExWithLocalInv) != 0 {
		c.consult(verbs.ReadingNoMW)
	}
}

// lifecycle of a QP object.
type lifecycle uint8

const (
	live lifecycle = iota
	destroying
	destroyed
)

// QP is a queue pair (struct ibv_qp): its state and attributes, its send and
// receive queues, and its event accounting. It is safe for concurrent use;
// every method takes the domain lock, except those named ...Locked.
//
// On a nil handle a method never panics: one that returns an error returns
// EINVAL (a syscall.Errno, through verr), one that does not returns the zero
// value of each result (Destroyed reports false). Package sim's doc states
// the convention for the whole API.
type QP struct {
	// Handle is the public handle of the QP (a *sim.QP), set once by its
	// creator; the engine never reads it.
	Handle any

	d     *domain.Domain
	num   uint32
	typ   verbs.QPType
	init  InitAttr
	cap   verbs.QPCap
	state verbs.QPState
	attr  verbs.QPAttr // attributes set by Modify; QPState and Cap are filled in by Query
	sq    wq
	rq    wq
	cfg   Config
	tally notify.Tally
	life  lifecycle
	stats Stats
	// lastWQE is set once QP_LAST_WQE_REACHED has been raised; reset clears it.
	lastWQE bool
	// The transport: requester and responder state, and the timers.
	tx     sendState
	rx     recvState
	timers [2]Timer
	forced []forcedStatus // faults: completions to fail
	wcbuf  verbs.WC       // the completion being pushed (keeps it off the heap)
	// attrGen counts the changes of attr (ModifyLocked), so that what a
	// host derives from them can be cached (DirectCache).
	attrGen uint64
	dcache  DirectCache
	// xmem holds the direct path's pieces (src, dst) as Mem when one lies
	// in another process's memory.
	xmem   [2][maxPieces]Mem
	bld    wrBatch    // the work request builder (ibv_wr_*, wrex.go)
	direct DirectHost // cfg.Host, when it offers the direct path (direct.go)
}

// Stats counts what happened to a QP. sim.QPStats, which is converted from
// it, documents each counter.
type Stats struct {
	SendPosted, RecvPosted   uint64
	SendFlushed, RecvFlushed uint64
	CQOverruns               uint64 // completions of this QP lost to a CQ overrun

	// As an RC requester.
	RNRNAKsReceived   uint64
	SeqNAKsReceived   uint64
	ErrorNAKsReceived uint64
	RNRRetries        uint64
	ACKTimeouts       uint64
	ImpliedNAKs       uint64
	RetryExceeded     uint64
	RNRRetryExceeded  uint64

	// As an RC responder.
	RNRNAKsSent       uint64
	SeqNAKsSent       uint64
	ErrorNAKsSent     uint64
	DuplicateRequests uint64
}

const (
	verbCreate   = "ibv_create_qp"
	verbModify   = "ibv_modify_qp"
	verbQuery    = "ibv_query_qp"
	verbDestroy  = "ibv_destroy_qp"
	verbSend     = "ibv_post_send"
	verbRecv     = "ibv_post_recv"
	verbCreateEx = "ibv_create_qp_ex"
	verbWR       = "ibv_wr_complete"
)

// NewLocked creates a QP in RESET (ibv_create_qp, QP-01). It checks the
// capacities against the device (QP-02: over-limit is EINVAL), requires both
// CQs (QP-03) and a supported type, and takes a reference on each CQ so
// neither can be destroyed while the QP lives (CQ-11).
//
// Precondition: cfg.Domain's lock is held.
func NewLocked(cfg Config) (*QP, error) {
	in := cfg.Init
	switch {
	case cfg.Domain == nil:
		return nil, verr.New(verbCreate, syscall.EINVAL, "no domain given")
	case !Supported(in.Type):
		return nil, verr.Errorf(verbCreate, syscall.EINVAL, "qp_type %v is not simulated (RC, UC and UD are)", in.Type)
	case in.Type == verbs.QPTypeXRCRecv && cfg.XRCD == nil:
		return nil, verr.New(verbCreateEx, syscall.EINVAL, "an XRC_RECV QP needs an XRC domain (XRC-06)")
	case in.Type == verbs.QPTypeXRCSend && isNil(in.SendCQ):
		return nil, verr.New(verbCreate, syscall.EINVAL, "an XRC_SEND QP needs a send_cq (XRC-06)")
	case in.Type != verbs.QPTypeXRCSend && in.Type != verbs.QPTypeXRCRecv && (isNil(in.SendCQ) || isNil(in.RecvCQ)):
		return nil, verr.New(verbCreate, syscall.EINVAL, "both send_cq and recv_cq are required (QP-03)")
	}
	switch in.Type {
	case verbs.QPTypeXRCSend:
		// The kernel ignores the receive side of an initiator: no
		// receive CQ, no SRQ, no receive queue (XRC-06).
		in.RecvCQ, in.SRQ = nil, nil
		in.Cap.MaxRecvWR, in.Cap.MaxRecvSGE = 0, 0
	case verbs.QPTypeXRCRecv:
		// A target has neither queue nor CQ: its messages go to XRC SRQs
		// and complete on their CQs (XRC-06, XRC-10).
		in.SendCQ, in.RecvCQ, in.SRQ = nil, nil, nil
		in.Cap = verbs.QPCap{}
		cfg.Init = in
	}
	if in.SRQ != nil && in.Type == verbs.QPTypeUC {
		return nil, verr.New(verbCreate, syscall.EINVAL, "only RC and UD QPs may be created with an SRQ (QP-04)")
	}
	if in.Ex {
		cfg.consultSendOps(in.Type, in.SendOps)
		if bad := in.SendOps &^ verbs.SupportedSendOps(in.Type, cfg.Policy.readings()); bad != 0 {
			return nil, verr.Errorf(verbCreateEx, syscall.EOPNOTSUPP, "send_ops_flags %v not supported on a %v QP (QPX-01)", bad, in.Type)
		}
	}
	cfg.Init = in
	lim := cfg.Device
	c := in.Cap
	if in.SRQ != nil {
		c.MaxRecvWR, c.MaxRecvSGE = 0, 0 // ignored with an SRQ (QP-04)
	}
	switch {
	case c.MaxSendWR > lim.MaxQPWR || c.MaxRecvWR > lim.MaxQPWR:
		return nil, verr.Errorf(verbCreate, syscall.EINVAL, "max_send_wr %d / max_recv_wr %d above max_qp_wr %d (QP-02)", c.MaxSendWR, c.MaxRecvWR, lim.MaxQPWR)
	case c.MaxSendSGE > lim.MaxSGE || c.MaxRecvSGE > lim.MaxSGE:
		return nil, verr.Errorf(verbCreate, syscall.EINVAL, "max_send_sge %d / max_recv_sge %d above max_sge %d (QP-02)", c.MaxSendSGE, c.MaxRecvSGE, lim.MaxSGE)
	case c.MaxInlineData > lim.MaxInline:
		return nil, verr.Errorf(verbCreate, syscall.EINVAL, "max_inline_data %d above the device's %d (QP-02)", c.MaxInlineData, lim.MaxInline)
	}
	// The real capacities: what was asked for, with at least one SGE per
	// queue (a zero-SGE request still gets room for one, as providers do).
	real := c
	if in.Type != verbs.QPTypeXRCRecv {
		real.MaxSendSGE = max(real.MaxSendSGE, 1)
	}
	if in.SRQ == nil && in.Type != verbs.QPTypeXRCSend && in.Type != verbs.QPTypeXRCRecv {
		real.MaxRecvSGE = max(real.MaxRecvSGE, 1)
	}
	if in.SRQ != nil {
		if err := in.SRQ.attachLocked(); err != nil {
			return nil, err
		}
	}
	if in.SendCQ != nil {
		if err := in.SendCQ.RefLocked(); err != nil {
			in.SRQ.detachOrNothing()
			return nil, verr.Wrap(verbCreate, syscall.EINVAL, "send_cq", err)
		}
	}
	if in.RecvCQ != nil {
		if err := in.RecvCQ.RefLocked(); err != nil {
			if in.SendCQ != nil {
				in.SendCQ.UnrefLocked()
			}
			in.SRQ.detachOrNothing()
			return nil, verr.Wrap(verbCreate, syscall.EINVAL, "recv_cq", err)
		}
	}
	q := &QP{
		d:     cfg.Domain,
		num:   cfg.QPNum,
		typ:   in.Type,
		init:  in,
		cap:   real,
		state: verbs.QPStateReset,
		sq:    newWQ(int(real.MaxSendWR), int(real.MaxSendSGE), int(real.MaxInlineData)),
		rq:    newRecvWQ(int(real.MaxRecvWR), int(real.MaxRecvSGE)),
		cfg:   cfg,
	}
	q.sq.freeOnRetire, q.rq.freeOnRetire = cfg.Policy.FreeSlotOnRetire, cfg.Policy.FreeSlotOnRetire
	for k := range q.timers {
		q.timers[k] = Timer{QP: q, Kind: TimerKind(k), Index: -1}
	}
	if in.SRQ != nil {
		q.rx.srqSGE = make([]verbs.SGE, 0, in.SRQ.maxSGE())
		in.SRQ.users = append(in.SRQ.users, q)
	}
	if in.Type == verbs.QPTypeXRCRecv {
		q.rx.srqSGE = make([]verbs.SGE, 0, lim.MaxSGE)
	}
	if cfg.Memory == nil && cfg.Host != nil {
		q.cfg.Memory = cfg.Host
	}
	q.direct, _ = cfg.Host.(DirectHost)
	return q, nil
}

// isNil reports whether c is nil or a typed nil pointer.
func isNil(c CQ) bool {
	if c == nil {
		return true
	}
	v := reflect.ValueOf(c)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// Num returns the QP number (qp_num).
func (q *QP) Num() uint32 {
	if q == nil {
		return 0
	}
	return q.num
}

// PortNumLocked returns the port the QP sends from (port_num).
//
// Precondition: the domain lock is held.
func (q *QP) PortNumLocked() uint8 { return q.attr.PortNum }

// AHAttrLocked returns q's path (ah_attr), for the direct path's address
// checks.
//
// Precondition: the domain lock is held.
func (q *QP) AHAttrLocked() verbs.AHAttr { return q.attr.AHAttr }

// Type returns the transport type.
func (q *QP) Type() verbs.QPType {
	if q == nil {
		return 0
	}
	return q.typ
}

// Context returns the qp_context given at creation.
func (q *QP) Context() any {
	if q == nil {
		return nil
	}
	return q.init.Context
}

// Cap returns the QP's real capacities (QP-02).
func (q *QP) Cap() verbs.QPCap {
	if q == nil {
		return verbs.QPCap{}
	}
	return q.cap
}

// State returns the current state, as ibv_query_qp reports it (QP-24).
func (q *QP) State() verbs.QPState {
	if q == nil {
		return verbs.QPStateReset
	}
	q.enter()
	defer q.leave()
	return q.state
}

// StateLocked is State for a caller that holds the domain lock.
func (q *QP) StateLocked() verbs.QPState {
	if q == nil {
		return verbs.QPStateReset
	}
	return q.state
}

// Stats returns the QP's counters.
func (q *QP) Stats() Stats {
	if q == nil {
		return Stats{}
	}
	q.enter()
	defer q.leave()
	return q.stats
}

// Tally returns the QP's async-event accounting, for raising events that
// name it.
//
// Precondition: the domain lock is held while the tally is used.
func (q *QP) Tally() *notify.Tally {
	if q == nil {
		return nil
	}
	return &q.tally
}

// Query returns the QP's attributes and its creation attributes
// (ibv_query_qp). Attr holds every attribute set so far, the current state in
// QPState and CurQPState, and the real capacities in Cap (QP-24). It is
// QueryMask with a mask that asks for everything.
func (q *QP) Query() (verbs.QPAttr, InitAttr, error) { return q.QueryMask(verbs.QueryableQPAttrs) }

// QueryMask is ibv_query_qp with attr_mask. The man page makes the mask a
// hint, the minimum to return; like rxe (rxe_qp_to_attr) and rdma-core's
// ibv_cmd_query_qp, which copy every field whatever the mask, verbsim
// returns every attribute for any accepted mask, 0 included (QUERY-01).
// The InitAttr holds qp_context, the CQs, the SRQ, the type, sq_sig_all
// and the real capacities; with an SRQ, MaxRecvWR and MaxRecvSGE are 0.
// A mask with a bit from IBV_QP_RATE_LIMIT up is EOPNOTSUPP, as
// libibverbs refuses it on this path (QUERY-02).
func (q *QP) QueryMask(mask verbs.QPAttrMask) (verbs.QPAttr, InitAttr, error) {
	if q == nil {
		return verbs.QPAttr{}, InitAttr{}, verr.New(verbQuery, syscall.EINVAL, "nil QP")
	}
	if mask&^verbs.QueryableQPAttrs != 0 {
		return verbs.QPAttr{}, InitAttr{}, verr.Errorf(verbQuery, syscall.EOPNOTSUPP,
			"attr_mask %#x has bits from IBV_QP_RATE_LIMIT up, which only the extended path takes (QUERY-02)", uint32(mask))
	}
	q.enter()
	defer q.leave()
	if q.life != live {
		return verbs.QPAttr{}, InitAttr{}, verr.New(verbQuery, syscall.EINVAL, "the QP has been destroyed")
	}
	a := q.attr
	a.QPState, a.CurQPState = q.state, q.state
	a.Cap = q.cap
	a.SQDraining = q.drainingLocked()
	init := q.init
	init.Cap = q.cap
	return a, init, nil
}

// Destroy destroys the QP (ibv_destroy_qp) and waits without a deadline for
// the acknowledgement of its async events already read. See DestroyContext.
func (q *QP) Destroy() error { return q.DestroyContext(context.Background()) }

// DestroyContext destroys the QP (ibv_destroy_qp). Outstanding work requests
// vanish without completions (QP-37); completions already in a CQ stay there
// (CQ-26, sim default); the references on the CQs are dropped, so they can be
// destroyed next (PD-05); unread async events naming the QP are discarded.
// It waits, bounded by ctx, for the acks of the QP's async events already
// read (ASYNC-05), like a CQ's destroy. On a destroyed QP it returns EINVAL.
func (q *QP) DestroyContext(ctx context.Context) error {
	if q == nil || ctx == nil {
		return verr.New(verbDestroy, syscall.EINVAL, "nil QP or context.Context")
	}
	q.enterVerb(verbDestroy)
	defer q.leave()
	switch q.life {
	case destroyed:
		err := verr.New(verbDestroy, syscall.EINVAL, "the QP has been destroyed")
		q.traceVerbLocked("destroy_qp", "", err)
		return err
	case live:
		q.traceLocked(trace.Record{Kind: trace.KindVerb, Name: "destroy_qp", Why: "outstanding WRs vanish", Rule: "QP-37"})
		q.life = destroying
		q.stopTimersLocked()
		q.sq.reset()
		q.rq.reset()
		q.purgeCQsLocked()
		if q.init.SendCQ != nil {
			q.init.SendCQ.UnrefLocked()
		}
		if q.init.RecvCQ != nil {
			q.init.RecvCQ.UnrefLocked()
		}
		if q.init.SRQ != nil {
			q.init.SRQ.detachUserLocked(q)
		}
		if q.cfg.Async != nil {
			q.cfg.Async.DiscardLocked(q)
		}
		if q.cfg.OnDestroy != nil {
			q.cfg.OnDestroy()
		}
		if q.d.Checking() {
			q.noteLocked(domain.Note{Kind: domain.NoteDestroying})
		}
	}
	if err := q.tally.WaitSettled(ctx, q.d, &domain.Waiter{Verb: verbDestroy, Obj: q, For: "the acks of async events already read (ASYNC-05)"}); err != nil {
		return verr.Wrap(verbDestroy, syscall.EINTR, "still waiting for acks of async events already read (ASYNC-05); call again to finish", err)
	}
	if q.life != destroyed && q.d.Checking() {
		q.noteLocked(domain.Note{Kind: domain.NoteDestroyed})
	}
	q.life = destroyed
	return nil
}

// Destroyed reports whether the QP has been destroyed (or is waiting for acks
// to finish being destroyed). A nil QP reports false, the zero value, like
// every accessor on a nil handle.
func (q *QP) Destroyed() bool {
	if q == nil {
		return false
	}
	q.enter()
	defer q.leave()
	return q.life != live
}

// DestroyedLocked is Destroyed for a caller that holds the domain lock.
func (q *QP) DestroyedLocked() bool { return q != nil && q.life != live }

// XRCD returns the XRC domain of an XRC_RECV QP (Config.XRCD), or nil.
func (q *QP) XRCD() any {
	if q == nil {
		return nil
	}
	return q.cfg.XRCD
}

// SendCQ returns the send CQ given at creation. It never changes.
func (q *QP) SendCQ() CQ {
	if q == nil {
		return nil
	}
	return q.init.SendCQ
}

// RecvCQ returns the receive CQ given at creation. It never changes.
func (q *QP) RecvCQ() CQ {
	if q == nil {
		return nil
	}
	return q.init.RecvCQ
}

// SRQ returns the SRQ given at creation, or nil. It never changes.
func (q *QP) SRQ() *SRQ {
	if q == nil {
		return nil
	}
	return q.init.SRQ
}

// PD returns the protection domain the QP was created in (ibv_qp.pd), as
// the creator gave it.
func (q *QP) PD() any {
	if q == nil {
		return nil
	}
	return q.cfg.PD
}

// enter and leave bracket every verb on q: they take and release the
// domain lock through the domain (domain.Domain.Enter and Leave), and
// Leave settles the engine in Auto mode, which is how the work a post or a
// modify gave the engine runs before the verb returns. The records of q's
// verbs are made during the call (traceLocked), as they read q's state.
func (q *QP) enter() { q.d.Enter(domain.Op{Obj: q}) }
func (q *QP) leave() {
	if q.d.FastLeave() {
		q.d.Unlock()
		return
	}
	q.d.Leave(domain.Op{Obj: q}, nil)
}

// enterVerb is enter naming the verb, which a scheduler sees
// (domain.Scheduler.Yield): the explorer's timeline shows it.
func (q *QP) enterVerb(verb string) {
	if !q.d.TryEnter() {
		q.d.Enter(domain.Op{Verb: verb, Obj: q})
	}
}

// TraceName returns q's name in the trace: Config.Name, or "qp 0x…".
func (q *QP) TraceName() string {
	if q == nil {
		return ""
	}
	if q.cfg.Name == "" {
		return fmt.Sprintf("qp %#x", q.num)
	}
	return q.cfg.Name
}
