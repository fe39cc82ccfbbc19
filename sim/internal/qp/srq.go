package qp

import (
	"context"
	"fmt"
	"slices"
	"syscall"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/verbs"

	"github.com/verbsim/verbsim/sim/internal/notify"
	"github.com/verbsim/verbsim/sim/trace"
	"github.com/verbsim/verbsim/sim/verr"
)

// SRQLimits are the device attributes that bound an SRQ.
type SRQLimits struct {
	MaxSRQWR  uint32 // ibv_device_attr.max_srq_wr
	MaxSRQSGE uint32 // ibv_device_attr.max_srq_sge
	Resize    bool   // IBV_DEVICE_SRQ_RESIZE: ibv_modify_srq may change max_wr
}

// SRQConfig describes an SRQ to create (ibv_create_srq).
type SRQConfig struct {
	Attr    verbs.SRQAttr // requested; SRQLimit is ignored unless HonourLimitAtCreate
	Context any           // srq_context
	Device  SRQLimits
	// HonourLimitAtCreate arms the limit given at creation, as rxe does;
	// the man page says it is ignored, the default (SRQ-01).
	HonourLimitAtCreate bool
	// Domain is the domain the SRQ lives in, shared with its QPs and CQs.
	// Required.
	Domain *domain.Domain
	// Name is the SRQ's name in the trace ("dev0/srq#1"); "" reads "srq".
	// Every verb call on the SRQ (post, modify, destroy) is recorded under
	// it when the domain traces, with the error's text as why when the
	// call failed.
	Name      string
	Async     *notify.AsyncQueue
	PD        any // the protection domain, handed back by PD
	OnDestroy func()
	// XRC makes the SRQ an XRC SRQ (IBV_SRQT_XRC): GetSRQNum returns Num,
	// the number XRC senders name (XRC-05).
	XRC bool
	// Num is the XRC SRQ's number, unique among the device's SRQs.
	Num uint32
	// XRCD is an XRC SRQ's domain, compared with the XRCD of the XRC_RECV
	// QP a message arrives on (XRC-10).
	XRCD any
	// CQ is where an XRC SRQ's receive completions go (XRC-10); the
	// creator holds its reference.
	CQ CQ
}

// SRQ is a shared receive queue (struct ibv_srq): receive work requests that
// every QP attached to it consumes in FIFO order (SRQ-08). It is safe for
// concurrent use.
//
// On a nil handle a method never panics: one that returns an error returns
// EINVAL (a syscall.Errno, through verr), one that does not returns the zero
// value of each result (Destroyed reports false). Package sim's doc states
// the convention for the whole API.
type SRQ struct {
	// Handle is the public handle of the SRQ (a *sim.SRQ), set once by its
	// creator; the engine never reads it.
	Handle any

	d     *domain.Domain
	q     wq
	attr  verbs.SRQAttr
	cfg   SRQConfig
	qps   int   // attached QPs (SRQ-10)
	users []*QP // the attached QPs once created, in creation order
	tally notify.Tally
	life  lifecycle
	full  error
}

const (
	verbCreateSRQ  = "ibv_create_srq"
	verbModifySRQ  = "ibv_modify_srq"
	verbPostSRQ    = "ibv_post_srq_recv"
	verbDestroySRQ = "ibv_destroy_srq"
)

// NewSRQLocked creates an SRQ. Its capacities are the requested ones, which
// must not exceed the device's (SRQ-01: EINVAL); at least one WR and one SGE.
//
// Precondition: cfg.Lock is held.
func NewSRQLocked(cfg SRQConfig) (*SRQ, error) {
	a, lim := cfg.Attr, cfg.Device
	switch {
	case cfg.Domain == nil:
		return nil, verr.New(verbCreateSRQ, syscall.EINVAL, "no domain given")
	case a.MaxWR == 0 || a.MaxWR > lim.MaxSRQWR:
		return nil, verr.Errorf(verbCreateSRQ, syscall.EINVAL, "max_wr %d is outside [1, max_srq_wr=%d] (SRQ-01)", a.MaxWR, lim.MaxSRQWR)
	case a.MaxSGE > lim.MaxSRQSGE:
		return nil, verr.Errorf(verbCreateSRQ, syscall.EINVAL, "max_sge %d above max_srq_sge=%d (SRQ-01)", a.MaxSGE, lim.MaxSRQSGE)
	}
	// max_sge 0 is not an error: the man page sets no lower bound, rxe
	// (rxe_srq_chk_attr) raises it to its minimum of one SGE, and mlx5
	// sizes its WQEs for at least one. Every profile does the same.
	a.MaxSGE = max(a.MaxSGE, 1)
	if !cfg.HonourLimitAtCreate || a.SRQLimit > a.MaxWR {
		a.SRQLimit = 0
	}
	s := &SRQ{d: cfg.Domain, q: newRecvWQ(int(a.MaxWR), int(a.MaxSGE)), attr: a, cfg: cfg}
	s.full = verr.New(verbPostSRQ, syscall.ENOMEM, "the SRQ is full (SRQ-02)")
	return s, nil
}

// Context returns the srq_context given at creation.
func (s *SRQ) Context() any {
	if s == nil {
		return nil
	}
	return s.cfg.Context
}

// PD returns the protection domain the SRQ was created in (ibv_srq.pd), as
// the creator gave it in SRQConfig.PD. It never changes, so reading it
// takes no lock.
func (s *SRQ) PD() any {
	if s == nil {
		return nil
	}
	return s.cfg.PD
}

// Len returns the number of receive WRs waiting in the SRQ.
func (s *SRQ) Len() int {
	if s == nil {
		return 0
	}
	s.enter()
	defer s.leave()
	return s.q.outstanding()
}

// Tally returns the SRQ's async-event accounting.
func (s *SRQ) Tally() *notify.Tally {
	if s == nil {
		return nil
	}
	return &s.tally
}

// PostRecv posts receive WRs to the SRQ (ibv_post_srq_recv), with the rules
// of ibv_post_recv (SRQ-02): in order, stopping at the first bad one; EINVAL
// above max_sge, ENOMEM when full. It returns how many were posted.
func (s *SRQ) PostRecv(wrs []verbs.RecvWR) (n int, err error) {
	if s == nil {
		return 0, verr.New(verbPostSRQ, syscall.EINVAL, "nil SRQ")
	}
	s.enter()
	defer s.leave()
	if s.d.Tracing() {
		defer func() { s.traceLocked("post_srq_recv", fmt.Sprintf("%d of %d WR(s) posted", n, len(wrs)), err) }()
	}
	if s.life != live {
		return 0, verr.New(verbPostSRQ, syscall.EINVAL, "the SRQ has been destroyed")
	}
	for i := range wrs {
		w := &wrs[i]
		if len(w.SGList) > int(s.attr.MaxSGE) {
			return i, verr.Errorf(verbPostSRQ, syscall.EINVAL, "num_sge %d above max_sge %d (SRQ-02)", len(w.SGList), s.attr.MaxSGE)
		}
		if s.q.full() {
			return i, s.full
		}
		e := s.q.rpush()
		e.wrid = w.WRID
		e.setSGEs(w.SGList)
	}
	return len(wrs), nil
}

// TakeLocked hands the oldest receive WR to a consuming QP (SRQ-08): its
// wr_id, and its SGEs appended to into. The slot is free again at once. If
// the limit is armed and fewer WRs than the limit remain, one
// IBV_EVENT_SRQ_LIMIT_REACHED is raised and the limit disarms (SRQ-04); the
// check happens only here, on consumption (SRQ-11).
//
// Precondition: the domain lock is held.
func (s *SRQ) TakeLocked(into []verbs.SGE) (wrid uint64, sges []verbs.SGE, ok bool) {
	if s == nil {
		return 0, nil, false
	}
	if s.life != live || s.q.outstanding() == 0 {
		return 0, into, false
	}
	e := s.q.rslot(s.q.done)
	wrid, sges = e.wrid, append(into, e.sge...)
	s.q.done++
	s.q.retired = s.q.done
	if s.attr.SRQLimit > 0 && uint32(s.q.outstanding()) < s.attr.SRQLimit {
		s.attr.SRQLimit = 0
		if s.cfg.Async != nil {
			s.cfg.Async.RaiseLocked(verbs.EventSRQLimitReached, s, &s.tally, 0)
		}
	}
	return wrid, sges, true
}

// Take is TakeLocked for tests and tools, which do not hold the domain lock:
// it consumes the oldest WR as a QP receiving a message would, until the
// transport engine does that itself. It returns the WR's wr_id and SGEs.
func (s *SRQ) Take() (wrid uint64, sges []verbs.SGE, ok bool) {
	if s == nil {
		return 0, nil, false
	}
	s.enter()
	defer s.leave()
	return s.TakeLocked(nil)
}

// Modify changes the SRQ (ibv_modify_srq), all or nothing (SRQ-06):
//   - SRQLimit arms the limit event with attr.SRQLimit (0 disarms); a limit
//     above the capacity is EINVAL.
//   - SRQMaxWR resizes, only on a device with IBV_DEVICE_SRQ_RESIZE, never
//     below the WRs queued or the limit armed, never above max_srq_wr
//     (SRQ-07); EINVAL otherwise. The queued WRs keep their order.
//
// Unknown mask bits are EINVAL.
func (s *SRQ) Modify(attr *verbs.SRQAttr, mask verbs.SRQAttrMask) (err error) {
	if s == nil || attr == nil {
		return verr.New(verbModifySRQ, syscall.EINVAL, "nil SRQ or attr")
	}
	s.enter()
	defer s.leave()
	if s.d.Tracing() {
		defer func() {
			s.traceLocked("modify_srq", fmt.Sprintf("mask %#x max_wr %d srq_limit %d", uint32(mask), attr.MaxWR, attr.SRQLimit), err)
		}()
	}
	if s.life != live {
		return verr.New(verbModifySRQ, syscall.EINVAL, "the SRQ has been destroyed")
	}
	if mask&^(verbs.SRQMaxWR|verbs.SRQLimit) != 0 {
		return verr.Errorf(verbModifySRQ, syscall.EINVAL, "unknown attr_mask bits 0x%x", uint32(mask&^(verbs.SRQMaxWR|verbs.SRQLimit)))
	}
	capacity := s.attr.MaxWR
	limit := s.attr.SRQLimit
	if mask&verbs.SRQMaxWR != 0 {
		queued := uint32(s.q.outstanding())
		switch {
		case !s.cfg.Device.Resize:
			return verr.New(verbModifySRQ, syscall.EINVAL, "the device cannot resize SRQs (SRQ-07)")
		case attr.MaxWR == 0 || attr.MaxWR > s.cfg.Device.MaxSRQWR:
			return verr.Errorf(verbModifySRQ, syscall.EINVAL, "max_wr %d is outside [1, max_srq_wr=%d] (SRQ-07)", attr.MaxWR, s.cfg.Device.MaxSRQWR)
		case attr.MaxWR < queued:
			return verr.Errorf(verbModifySRQ, syscall.EINVAL, "max_wr %d below the %d WRs queued (SRQ-07)", attr.MaxWR, queued)
		case attr.MaxWR < limit && mask&verbs.SRQLimit == 0:
			return verr.Errorf(verbModifySRQ, syscall.EINVAL, "max_wr %d below the armed limit %d (SRQ-07)", attr.MaxWR, limit)
		}
		capacity = attr.MaxWR
	}
	if mask&verbs.SRQLimit != 0 {
		if attr.SRQLimit > capacity {
			return verr.Errorf(verbModifySRQ, syscall.EINVAL, "srq_limit %d above the capacity %d (SRQ-06)", attr.SRQLimit, capacity)
		}
		limit = attr.SRQLimit
	}
	if capacity != s.attr.MaxWR {
		s.resizeLocked(int(capacity))
	}
	s.attr.MaxWR, s.attr.SRQLimit = capacity, limit
	return nil
}

func (s *SRQ) resizeLocked(capacity int) {
	n := newRecvWQ(capacity, int(s.attr.MaxSGE))
	n.retired, n.done, n.tail = s.q.done, s.q.done, s.q.done
	for seq := s.q.done; seq < s.q.tail; seq++ {
		old := s.q.rslot(seq)
		e := n.rpush()
		e.wrid = old.wrid
		e.setSGEs(old.sge)
	}
	s.q = n
}

// Query returns the SRQ's attributes (ibv_query_srq). SRQLimit is 0
// whenever the limit is not armed: never armed, or already fired (SRQ-05).
func (s *SRQ) Query() (verbs.SRQAttr, error) {
	if s == nil {
		return verbs.SRQAttr{}, verr.New("ibv_query_srq", syscall.EINVAL, "nil SRQ")
	}
	s.enter()
	defer s.leave()
	if s.life != live {
		return verbs.SRQAttr{}, verr.New("ibv_query_srq", syscall.EINVAL, "the SRQ has been destroyed")
	}
	return s.attr, nil
}

// GetSRQNum is ibv_get_srq_num: the SRQ number of an XRC SRQ, which a
// remote XRC sender names (XRC-05). On a basic SRQ it returns EOPNOTSUPP,
// as rxe (libibverbs' default operation) and mlx4 do; mlx5 would return its
// number (QUERY-07). A destroyed SRQ is EINVAL.
func (s *SRQ) GetSRQNum() (uint32, error) {
	const verb = "ibv_get_srq_num"
	if s == nil {
		return 0, verr.New(verb, syscall.EINVAL, "nil SRQ")
	}
	s.enter()
	defer s.leave()
	if s.life != live {
		return 0, verr.New(verb, syscall.EINVAL, "the SRQ has been destroyed")
	}
	if s.cfg.XRC {
		return s.cfg.Num, nil
	}
	return 0, verr.New(verb, syscall.EOPNOTSUPP, "the SRQ is not an XRC SRQ (QUERY-07)")
}

// XRC reports whether the SRQ is an XRC SRQ (IBV_SRQT_XRC).
func (s *SRQ) XRC() bool {
	if s == nil {
		return false
	}
	return s.cfg.XRC
}

// attachLocked records a QP receiving through the SRQ.
func (s *SRQ) attachLocked() error {
	if s.life != live {
		return verr.New(verbCreate, syscall.EINVAL, "the SRQ has been destroyed")
	}
	s.qps++
	return nil
}

// detachOrNothing forgets an attached QP; a nil SRQ does nothing.
func (s *SRQ) detachOrNothing() {
	if s != nil && s.qps > 0 {
		s.qps--
	}
}

// detachUserLocked forgets q, which is being destroyed.
func (s *SRQ) detachUserLocked(q *QP) {
	s.detachOrNothing()
	if i := slices.Index(s.users, q); i >= 0 {
		s.users = slices.Delete(s.users, i, i+1)
	}
}

// Destroy destroys the SRQ, waiting without a deadline for the acks of its
// async events already read. See DestroyContext.
func (s *SRQ) Destroy() error { return s.DestroyContext(context.Background()) }

// DestroyContext destroys the SRQ (ibv_destroy_srq): EBUSY while a QP is
// attached (SRQ-10), then a wait, bounded by ctx, for the acks of the SRQ's
// async events already read (ASYNC-05). EINVAL on a destroyed SRQ.
func (s *SRQ) DestroyContext(ctx context.Context) (err error) {
	if s == nil || ctx == nil {
		return verr.New(verbDestroySRQ, syscall.EINVAL, "nil SRQ or context.Context")
	}
	s.enter()
	defer s.leave()
	if s.d.Tracing() {
		defer func() { s.traceLocked("destroy_srq", "", err) }()
	}
	switch s.life {
	case destroyed:
		return verr.New(verbDestroySRQ, syscall.EINVAL, "the SRQ has been destroyed")
	case live:
		if s.qps > 0 {
			return verr.Errorf(verbDestroySRQ, syscall.EBUSY, "%d QP(s) are attached (SRQ-10)", s.qps)
		}
		s.life = destroying
		s.q.reset()
		if s.cfg.Async != nil {
			s.cfg.Async.DiscardLocked(s)
		}
		if s.cfg.OnDestroy != nil {
			s.cfg.OnDestroy()
		}
	}
	if err := s.tally.WaitSettled(ctx, s.d, &domain.Waiter{Verb: verbDestroySRQ, Obj: s, For: "the acks of async events already read (ASYNC-05)"}); err != nil {
		return verr.Wrap(verbDestroySRQ, syscall.EINTR, "still waiting for acks of async events already read (ASYNC-05); call again to finish", err)
	}
	s.life = destroyed
	return nil
}

// Domain returns the domain that serializes the SRQ and the QPs that use it.
func (s *SRQ) Domain() *domain.Domain {
	if s == nil {
		return nil
	}
	return s.d
}

// InjectError is a catastrophic SRQ error, a fault no verb causes:
// IBV_EVENT_SRQ_ERR names the SRQ (ASYNC-15), and then every QP receiving
// through it takes the path of a fatal QP error (ASYNC-08): ERR, both
// queues flushed, IBV_EVENT_QP_FATAL (unless the profile raises no QP
// events, ASYNC-11). The SRQ's own receive WRs stay queued (FLUSH-07); what
// else a real adapter lets a failed SRQ do is not documented, and the
// manuals' advice is to destroy it. On a destroyed SRQ it returns EINVAL.
func (s *SRQ) InjectError() error {
	if s == nil {
		return verr.New("inject_srq_error", syscall.EINVAL, "nil SRQ")
	}
	s.enter()
	defer s.leave()
	if s.life != live {
		return verr.New("inject_srq_error", syscall.EINVAL, "the SRQ has been destroyed")
	}
	if s.d.Tracing() {
		s.d.Emit(s, trace.Record{Kind: trace.KindEvent, Name: "catastrophic error", Why: "fault: SRQ_ERR", Rule: "ASYNC-15"})
	}
	if s.cfg.Async != nil {
		s.cfg.Async.RaiseLocked(verbs.EventSRQErr, s, &s.tally, 0)
	}
	for _, q := range s.users {
		q.FatalLocked()
	}
	return nil
}

// traceLocked records a call of verb with detail, failed with err or
// successful when err is nil, through the domain, which must be tracing.
func (s *SRQ) traceLocked(verb, detail string, err error) {
	r := trace.Record{Kind: trace.KindVerb, Name: verb, Detail: detail}
	domain.Failed(&r, err)
	s.d.Emit(s, r)
}

// maxSGE is the number of SGEs a receive WR of the SRQ may have.
func (s *SRQ) maxSGE() int { return int(s.attr.MaxSGE) }

func (s *SRQ) enter() { s.d.Enter(domain.Op{Obj: s}) }
func (s *SRQ) leave() { s.d.Leave(domain.Op{Obj: s}, nil) }

// TraceName returns the SRQ's name in the trace: SRQConfig.Name, or "srq".
func (s *SRQ) TraceName() string {
	if s == nil {
		return ""
	}
	if s.cfg.Name == "" {
		return "srq"
	}
	return s.cfg.Name
}
