package conformance

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/verbsim/verbsim/conformance/model"
	"github.com/verbsim/verbsim/verbs"
)

// This file holds Op and Machine, which apply the same operations to any
// Device and to the reference model (package model) and compare every
// outcome. statemachine.go drives them with rapid; package fuzz drives them
// from bytes.

// OpKind is one verb the Machine can apply.
type OpKind uint8

// The operations. Fields of Op that an operation does not mention are
// ignored.
const (
	_                OpKind = iota
	OpCreateChannel         // ibv_create_comp_channel
	OpCreateCQ              // ibv_create_cq: N (or AboveMax) cqe, Channel (<0: none), Vector
	OpArm                   // ibv_req_notify_cq: CQ, Solicited
	OpPush                  // Injector.Push: CQ, WC, Solicited
	OpPoll                  // ibv_poll_cq: CQ, N entries (negative: 0); Ex: through the poll iterator
	OpGetEvent              // non-blocking ibv_get_cq_event: Channel
	OpAck                   // ibv_ack_cq_events: CQ, N
	OpResize                // ibv_resize_cq: CQ, N (or AboveMax)
	OpDestroyCQ             // ibv_destroy_cq: CQ
	OpDestroyChannel        // ibv_destroy_comp_channel: Channel
	OpGetAsync              // non-blocking ibv_get_async_event
	OpAckAsync              // ibv_ack_async_event: N picks among the events read so far
	OpRef                   // Referencer.Ref: CQ
	OpUnref                 // Referencer.Unref: CQ (skipped when the model holds no reference)
	OpCreateQP              // ibv_create_qp: CQ (send), RecvCQ, QPType, SendWR (or AboveMax), RecvWR, SigAll
	OpModifyQP              // ibv_modify_qp: QP, Target (or Up), Illegal
	OpPostSend              // ibv_post_send: QP, N SENDs, Signaled
	OpPostRecv              // ibv_post_recv: QP, N receives
	OpDestroyQP             // ibv_destroy_qp: QP
	numOpKinds
)

var opNames = [numOpKinds]string{"?", "create-channel", "create-cq", "arm", "push", "poll",
	"get-event", "ack", "resize", "destroy-cq", "destroy-channel", "get-async", "ack-async", "ref", "unref",
	"create-qp", "modify-qp", "post-send", "post-recv", "destroy-qp"}

// String names the operation.
func (k OpKind) String() string {
	if k < numOpKinds {
		return opNames[k]
	}
	return fmt.Sprintf("OpKind(%d)", uint8(k))
}

// Op is one operation on CQs, channels and QPs. CQ, RecvCQ, Channel and QP
// index the CQs and QPs created successfully and the channels created so
// far, modulo their number, so that any value names an object once one
// exists; an operation that needs an object before any exists is skipped,
// and so are the QP operations machine_qp.go names.
type Op struct {
	Kind      OpKind
	CQ        int      // which CQ; for OpCreateQP, the send CQ
	Channel   int      // which channel; for OpCreateCQ, negative means none
	N         int      // cqe, num_entries, ack count, async event index, or requests posted
	AboveMax  bool     // N is replaced by the device's max_cqe+1; for OpCreateQP, SendWR by max_qp_wr+1
	Vector    int      // comp_vector for OpCreateCQ
	Solicited bool     // solicited-only arm, or the solicited bit of a push
	WC        verbs.WC // the completion OpPush injects

	QP       int           // which QP
	RecvCQ   int           // OpCreateQP: the receive CQ
	QPType   verbs.QPType  // OpCreateQP: qp_type
	SendWR   int           // OpCreateQP: max_send_wr
	RecvWR   int           // OpCreateQP: max_recv_wr
	SigAll   bool          // OpCreateQP: sq_sig_all
	Target   verbs.QPState // OpModifyQP: the state to move to
	Up       bool          // OpModifyQP: instead of Target, the next state on the way to RTS
	Illegal  bool          // OpModifyQP: spoil the minimal mask (drop a required bit or add CAP)
	Signaled uint8         // OpPostSend: bit i set: request i is IBV_SEND_SIGNALED

	// Ex makes OpPoll read up to N completions with ibv_start_poll,
	// ibv_next_poll and ibv_end_poll instead of ibv_poll_cq, when N > 0
	// and the CQ implements ExCQ (CQX-10): the model checks both APIs alike.
	Ex bool
}

// String renders the op in one line, as it appears in failure logs.
func (o Op) String() string {
	if o.Kind >= OpCreateQP && o.Kind < numOpKinds {
		return o.qpString()
	}
	n := fmt.Sprint(o.N)
	if o.AboveMax {
		n = "max_cqe+1"
	}
	switch o.Kind {
	case OpCreateChannel, OpGetAsync:
		return o.Kind.String()
	case OpCreateCQ:
		return fmt.Sprintf("create-cq cqe=%s channel=%d vector=%d", n, o.Channel, o.Vector)
	case OpArm:
		return fmt.Sprintf("arm cq=%d solicited=%t", o.CQ, o.Solicited)
	case OpPush:
		return fmt.Sprintf("push cq=%d solicited=%t wc={%v}", o.CQ, o.Solicited, o.WC.String())
	case OpPoll, OpAck, OpResize:
		if o.Kind == OpPoll && o.Ex {
			return fmt.Sprintf("%s-ex cq=%d n=%s", o.Kind, o.CQ, n)
		}
		return fmt.Sprintf("%s cq=%d n=%s", o.Kind, o.CQ, n)
	case OpGetEvent, OpDestroyChannel:
		return fmt.Sprintf("%s channel=%d", o.Kind, o.Channel)
	case OpAckAsync:
		return fmt.Sprintf("ack-async event=%d", o.N)
	}
	return fmt.Sprintf("%s cq=%d", o.Kind, o.CQ)
}

// WCKind is a kind of completion the state machine injects.
type WCKind uint8

// The completion kinds.
const (
	KindSend      WCKind = iota // successful send
	KindWrite                   // successful RDMA write, send side
	KindRecv                    // successful receive
	KindRecvImm                 // successful RECV_RDMA_WITH_IMM
	KindLocLen                  // LOC_LEN_ERR
	KindFlush                   // WR_FLUSH_ERR
	KindRemAccess               // REM_ACCESS_ERR
	KindLocProt                 // LOC_PROT_ERR
	NumWCKinds                  // number of kinds
)

// WC returns a completion of kind k with wr_id id.
func (k WCKind) WC(id uint64) verbs.WC {
	switch k {
	case KindWrite:
		w := SendWC(id)
		w.Opcode = verbs.WCRDMAWrite
		return w
	case KindRecv:
		return RecvWC(id)
	case KindRecvImm:
		w := RecvWC(id)
		w.Opcode, w.WCFlags, w.ImmData = verbs.WCRecvRDMAWithImm, verbs.WCWithImm, uint32(id)
		return w
	case KindLocLen:
		return ErrWC(id, verbs.WCLocLenErr)
	case KindFlush:
		return ErrWC(id, verbs.WCWRFlushErr)
	case KindRemAccess:
		return ErrWC(id, verbs.WCRemAccessErr)
	case KindLocProt:
		return ErrWC(id, verbs.WCLocProtErr)
	}
	return SendWC(id)
}

// Machine applies operations to a device and to the reference model at once
// and reports the first difference. Make one with NewMachine. A Machine is
// not safe for concurrent use: operations are compared one at a time.
type Machine struct {
	// CheckError, if set, sees every error the implementation returns and may
	// reject it (the fuzz targets require a *verr.Error carrying an errno).
	CheckError func(op Op, err error) error

	ctx  Context
	lim  Limits
	prof Profile
	m    *model.Model
	h    model.History

	cqs      []CQ
	channels []CompChannel
	async    []asyncRead
	tags     int // cq_context values handed out

	lastEventCQ int // the CQ the last successful OpGetEvent named, or -1

	machineQPs // the QP side, machine_qp.go
}

type asyncRead struct {
	ev AsyncEvent
	cq int
}

// cqTag is the cq_context the machine gives each CQ: comparable and unique.
type cqTag struct{ n int }

// smallMaxCQE is the max_cqe the machine asks of a device that can change its
// limits, so that both ends of the cqe range are cheap to reach.
const smallMaxCQE = 16

// NewMachine opens a fresh device from newDevice, reads its profile and
// limits, and returns a Machine driving it. A device that can change its
// limits (WithLimits) is asked for max_cqe 16 and two completion vectors.
func NewMachine(newDevice NewDevice) (*Machine, error) {
	dev, err := newDevice()
	if err != nil {
		return nil, fmt.Errorf("making a device: %w", err)
	}
	if ld, ok := dev.(interface {
		WithLimits(Limits) (Device, error)
	}); ok {
		if small, err := ld.WithLimits(Limits{MaxCQE: smallMaxCQE, NumCompVectors: 2}); err == nil {
			dev = small
		}
	}
	ctx, err := dev.Open()
	if err != nil {
		return nil, fmt.Errorf("opening the device: %w", err)
	}
	p := dev.Profile()
	lim, err := LimitsOf(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the limits: %w", err)
	}
	return &Machine{
		ctx: ctx, lim: lim, prof: p, lastEventCQ: -1,
		m: model.New(p, model.Limits{MaxCQE: lim.MaxCQE, NumCompVectors: lim.NumCompVectors, MaxQPWR: lim.MaxQPWR}),
	}, nil
}

// Model returns the reference model the machine compares against.
func (m *Machine) Model() *model.Model { return m.m }

// Limits returns the limits of the device under test.
func (m *Machine) Limits() Limits { return m.lim }

// Close closes the device context, ignoring the outcome: CQs may be left in
// any state.
func (m *Machine) Close() { _ = m.ctx.Close() }

// outcome names an errno the model predicts, "success" for none.
func outcome(n syscall.Errno) string {
	if n == 0 {
		return "success"
	}
	return errnoName(n)
}

// opRules names the rules that fix each operation's outcome, for messages.
var opRules = [numOpKinds]string{
	OpCreateChannel:  "CHAN-01",
	OpCreateCQ:       "CQ-01, CQ-03",
	OpArm:            "NOTIFY-10",
	OpPush:           "CQ-22, CQ-23",
	OpPoll:           "CQ-15, CQ-23",
	OpGetEvent:       "CHAN-04, CHAN-06",
	OpAck:            "CHAN-07, CHAN-08",
	OpResize:         "CQ-08",
	OpDestroyCQ:      "CQ-11, CQ-13",
	OpDestroyChannel: "CHAN-09",
	OpGetAsync:       "ASYNC-02, ASYNC-07",
	OpAckAsync:       "ASYNC-05, CHAN-08",
	OpRef:            "CQ-11",
	OpUnref:          "CQ-11",
	OpCreateQP:       "QP-01, QP-02, QP-03",
	OpModifyQP:       "QP-07, QP-10, QP-13, FLUSH-01, FLUSH-08",
	OpPostSend:       "QP-26, QP-27, QP-29, FLUSH-05",
	OpPostRecv:       "QP-25, QP-27, QP-31, FLUSH-05",
	OpDestroyQP:      "QP-37",
}

// same compares err with the model's errno.
func (m *Machine) same(op Op, what string, err error, want syscall.Errno) error {
	if op.Kind < numOpKinds && opRules[op.Kind] != "" {
		what += " (" + opRules[op.Kind] + ")"
	}
	if err != nil && m.CheckError != nil {
		if e := m.CheckError(op, err); e != nil {
			return fmt.Errorf("%v: %s: %w", op, what, e)
		}
	}
	switch {
	case want == 0 && err == nil:
		return nil
	case want == 0:
		return fmt.Errorf("%v: %s returned %v; the model expects success", op, what, err)
	case err == nil:
		return fmt.Errorf("%v: %s succeeded; the model expects %s", op, what, outcome(want))
	case !errors.Is(err, want):
		return fmt.Errorf("%v: %s returned %v; the model expects %s", op, what, err, outcome(want))
	}
	return nil
}

func (m *Machine) cqID(q CQ) int {
	for i, c := range m.cqs {
		if c == q {
			return i
		}
	}
	return -1
}

// Apply performs op on the device and on the model and returns a
// description of the first difference, or nil.
func (m *Machine) Apply(op Op) error {
	if op.Kind >= OpCreateQP && op.Kind < numOpKinds {
		return m.applyQP(op)
	}
	if op.Kind == OpCreateChannel {
		return m.createChannel(op)
	}
	if op.Kind == OpCreateCQ {
		return m.createCQ(op)
	}
	if op.Kind == OpGetAsync {
		return m.getAsync(op)
	}
	if op.Kind == OpAckAsync {
		if len(m.async) == 0 {
			return nil
		}
		r := m.async[mod(op.N, len(m.async))]
		err := r.ev.Ack()
		want := m.m.AckAsync(r.cq)
		if err == nil {
			m.h.AsyncAcked(r.cq)
		}
		return m.same(op, "ibv_ack_async_event", err, want)
	}
	if op.Kind == OpGetEvent || op.Kind == OpDestroyChannel {
		if len(m.channels) == 0 {
			return nil
		}
		i := mod(op.Channel, len(m.channels))
		if op.Kind == OpDestroyChannel {
			return m.same(op, "ibv_destroy_comp_channel", m.channels[i].Destroy(), m.m.DestroyChannel(i))
		}
		return m.getEvent(op, i)
	}
	if len(m.cqs) == 0 {
		return nil
	}
	i := mod(op.CQ, len(m.cqs))
	q := m.cqs[i]
	switch op.Kind {
	case OpArm:
		err := q.ReqNotify(op.Solicited)
		if err == nil {
			m.h.Armed(i)
		}
		return m.same(op, "ibv_req_notify_cq", err, m.m.Arm(i, op.Solicited))
	case OpPush:
		in, ok := q.(Injector)
		if !ok {
			return nil
		}
		over, err := in.Push(op.WC, op.Solicited)
		wantOver, want := m.m.Push(i, op.WC, op.Solicited)
		if err == nil && !over {
			m.h.Accepted(i, op.WC)
		}
		if e := m.same(op, "push", err, want); e != nil {
			return e
		}
		if over != wantOver {
			return fmt.Errorf("%v: push reported overrun=%t; the model expects %t (CQ-22)", op, over, wantOver)
		}
		return nil
	case OpPoll:
		return m.poll(op, i, q)
	case OpAck:
		err := q.AckEvents(op.N)
		if err == nil {
			m.h.Acked(i, op.N)
		}
		return m.same(op, "ibv_ack_cq_events", err, m.m.Ack(i, op.N))
	case OpResize:
		n := m.cqe(op)
		want := m.m.Resize(i, n)
		if e := m.same(op, "ibv_resize_cq", q.Resize(n), want); e != nil {
			return e
		}
		if want == 0 {
			if err := m.m.AcceptCQE(i, q.CQE()); err != nil {
				return fmt.Errorf("%v: %w", op, err)
			}
		}
		return nil
	case OpDestroyCQ:
		return m.destroyCQ(op, i, q)
	case OpRef, OpUnref:
		rf, ok := q.(Referencer)
		if !ok {
			return nil
		}
		if op.Kind == OpRef {
			return m.same(op, "ref", rf.Ref(), m.m.Ref(i))
		}
		if m.m.CQ(i).Refs > 0 {
			rf.Unref()
			m.m.Unref(i)
		}
		return nil
	}
	return fmt.Errorf("%v: unknown operation", op)
}

func mod(a, n int) int {
	a %= n
	if a < 0 {
		a += n
	}
	return a
}

func (m *Machine) cqe(op Op) int {
	if op.AboveMax {
		return m.lim.MaxCQE + 1
	}
	return op.N
}

func (m *Machine) createChannel(op Op) error {
	ch, err := m.ctx.CreateCompChannel()
	if e := m.same(op, "ibv_create_comp_channel", err, 0); e != nil {
		return e
	}
	m.channels = append(m.channels, ch)
	m.m.CreateChannel()
	return nil
}

func (m *Machine) createCQ(op Op) error {
	n := m.cqe(op)
	chID := -1
	var ch CompChannel
	if op.Channel >= 0 && len(m.channels) > 0 {
		chID = mod(op.Channel, len(m.channels))
		ch = m.channels[chID]
	}
	tag := cqTag{m.tags}
	m.tags++
	q, err := m.ctx.CreateCQ(n, tag, ch, op.Vector)
	id, want := m.m.CreateCQ(n, tag, chID, op.Vector)
	if e := m.same(op, "ibv_create_cq", err, want); e != nil {
		return e
	}
	if want != 0 {
		return nil
	}
	if q == nil {
		return fmt.Errorf("%v: ibv_create_cq returned no CQ and no error", op)
	}
	m.cqs = append(m.cqs, q)
	if err := m.m.AcceptCQE(id, q.CQE()); err != nil {
		return fmt.Errorf("%v: %w", op, err)
	}
	return nil
}

func (m *Machine) poll(op Op, i int, q CQ) error {
	n := max(op.N, 0)
	if x, ok := q.(ExCQ); ok && op.Ex && n > 0 {
		return m.pollEx(op, i, x, n)
	}
	canary := verbs.WC{WRID: 0xCA11A27, Status: verbs.WCGeneralErr, VendorErr: 0xCA11A27}
	buf := make([]verbs.WC, n)
	for j := range buf {
		buf[j] = canary
	}
	k, err := q.Poll(buf)
	ps, want := m.m.PollFrom(i, n)
	if k < 0 || k > n {
		return fmt.Errorf("%v: ibv_poll_cq returned %d for %d entries (CQ-15)", op, k, n)
	}
	got, dev := meaningful(ps, buf[:k])
	m.h.Polled(i, dev)
	if e := m.same(op, "ibv_poll_cq", err, want); e != nil {
		return e
	}
	if d := cmp.Diff(got, dev, cmpopts.EquateEmpty()); d != "" {
		return fmt.Errorf("%v: polled completions differ from the model's (%s) (-model +device):\n%s", op, pollRules(ps), d)
	}
	for j := k; j < n; j++ {
		if buf[j] != canary {
			return fmt.Errorf("%v: ibv_poll_cq returned %d but wrote entry %d (CQ-15)", op, k, j)
		}
	}
	return nil
}

func (m *Machine) getEvent(op Op, i int) error {
	q, cctx, err := m.channels[i].TryGetEvent()
	ev, want := m.m.GetEvent(i)
	m.lastEventCQ = -1
	if err == nil {
		if id := m.cqID(q); id >= 0 {
			m.h.EventRead(id)
			m.lastEventCQ = id
		}
	}
	if e := m.same(op, "ibv_get_cq_event", err, want); e != nil {
		return e
	}
	if want != 0 {
		return nil
	}
	if id := m.cqID(q); id != ev.CQ {
		return fmt.Errorf("%v: the event names cq %d; the model expects cq %d (CHAN-06)", op, id, ev.CQ)
	}
	if cctx != ev.Context {
		return fmt.Errorf("%v: the event carries context %v; the model expects %v (CQ-04)", op, cctx, ev.Context)
	}
	return nil
}

func (m *Machine) destroyCQ(op Op, i int, q CQ) error {
	blocked, want := m.m.DestroyCQ(i)
	var ctx context.Context
	var cancel context.CancelFunc
	if blocked {
		// The model says the call would wait for acks: give it a context that
		// is already done, so a correct device returns at once.
		ctx, cancel = context.WithCancel(context.Background())
		cancel()
	} else {
		ctx, cancel = patient()
		defer cancel()
	}
	err := q.DestroyContext(ctx)
	if !blocked {
		return m.same(op, "ibv_destroy_cq", err, want)
	}
	if err != nil && m.CheckError != nil {
		if e := m.CheckError(op, err); e != nil {
			return fmt.Errorf("%v: ibv_destroy_cq: %w", op, e)
		}
	}
	if err == nil || !(errors.Is(err, syscall.EINTR) || errors.Is(err, context.Canceled)) {
		return fmt.Errorf("%v: ibv_destroy_cq returned %v; the model expects it to wait for %d unacked event(s) (CQ-13), so with a context already cancelled it must return EINTR",
			op, err, m.m.CQ(i).Unacked())
	}
	return nil
}

func (m *Machine) getAsync(op Op) error {
	ev, err := m.ctx.TryGetAsyncEvent()
	for err == nil && ev != nil && m.skipDrained(ev) { // not the model's (machine_qp.go)
		if e := ev.Ack(); e != nil {
			return fmt.Errorf("%v: ibv_ack_async_event of SQ_DRAINED: %v", op, e)
		}
		ev, err = m.ctx.TryGetAsyncEvent()
	}
	mev, want := m.m.GetAsync()
	id := -1
	if err == nil && ev != nil {
		if q := ev.CQ(); q != nil {
			id = m.cqID(q)
		}
		if id >= 0 {
			m.h.AsyncRead(id)
			m.async = append(m.async, asyncRead{ev: ev, cq: id})
		}
	}
	if e := m.same(op, "ibv_get_async_event", err, want); e != nil {
		return e
	}
	if want != 0 {
		return nil
	}
	if ev == nil {
		return fmt.Errorf("%v: ibv_get_async_event returned no event and no error", op)
	}
	if ev.EventType() != verbs.EventType(model.EventCQErr) || id != mev.CQ {
		return fmt.Errorf("%v: got %v naming cq %d; the model expects CQ_ERR naming cq %d (ASYNC-03, ASYNC-07)",
			op, ev.EventType(), id, mev.CQ)
	}
	return nil
}

// Check compares the state the device lets one observe without changing it
// (the capacity of every live CQ, the depth of every channel that reports it,
// the state and depths of every live QP and, where the QP reports them, its
// outstanding requests) with the model, and checks the invariants of model.History on everything
// the device returned so far.
func (m *Machine) Check() error {
	var errs []error
	for i, q := range m.cqs {
		if m.m.State(i) != model.Live {
			continue
		}
		if got, want := q.CQE(), m.m.CQE(i); got != want {
			errs = append(errs, fmt.Errorf("cq %d reports cqe %d; it reported %d after its last create or resize (CQ-02, CQ-09)", i, got, want))
		}
	}
	for i, ch := range m.channels {
		want, live := m.m.Unread(i)
		if d, ok := ch.(Depth); ok && live {
			if got := d.Len(); got != want {
				errs = append(errs, fmt.Errorf("channel %d holds %d unread events; the model expects %d (CHAN-05)", i, got, want))
			}
		}
	}
	errs = append(errs, m.checkQPs()...)
	if err := m.h.Check(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// pollEx reads up to n completions of CQ i with the poll iterator and checks
// them, and each call's outcome, against the model as poll does (CQX-04,
// CQX-05, CQX-08, CQX-10). Where ibv_poll_cq would report an error with
// its completions (EIO after an overrun, CQ-23), the iterator reports it
// in place of ENOENT at the end.
func (m *Machine) pollEx(op Op, i int, q ExCQ, n int) error {
	ps, want := m.m.PollFrom(i, n)
	var dev []verbs.WC
	err := q.StartPoll()
	for err == nil {
		w, rerr := exRead(q)
		if rerr != nil {
			return fmt.Errorf("%v: reading completion %d through the iterator: %v (CQX-03)", op, len(dev), rerr)
		}
		dev = append(dev, w)
		if len(dev) == n {
			break
		}
		err = q.NextPoll()
	}
	started := len(dev) > 0
	if started {
		if e := m.same(op, "ibv_end_poll", q.EndPoll(), 0); e != nil {
			return e
		}
	}
	got, devm := meaningful(ps, dev)
	m.h.Polled(i, devm)
	// The call that ended the walk: start_poll on an empty CQ, or next_poll
	// past the last completion; none when n completions were read.
	if len(dev) < n {
		end := want
		if end == 0 {
			end = syscall.ENOENT
		}
		verb := "ibv_next_poll at the end"
		if !started {
			verb = "ibv_start_poll"
		}
		if e := m.same(op, verb, err, end); e != nil {
			return e
		}
	}
	if d := cmp.Diff(got, devm, cmpopts.EquateEmpty()); d != "" {
		return fmt.Errorf("%v: completions read through the poll iterator differ from the model's (%s, CQX-10) (-model +device):\n%s", op, pollRules(ps), d)
	}
	return nil
}

// exRead assembles the current completion from the iterator's fields, for
// a CQ created with IBV_WC_STANDARD_FLAGS.
func exRead(q ExCQ) (verbs.WC, error) {
	var w verbs.WC
	var errs [11]error
	w.WRID, w.Status, errs[0] = q.Current()
	w.Opcode, errs[1] = q.ReadOpcode()
	w.VendorErr, errs[2] = q.ReadVendorErr()
	w.WCFlags, errs[3] = q.ReadWCFlags()
	w.ByteLen, errs[4] = q.ReadByteLen()
	w.ImmData, errs[5] = q.ReadImmData()
	w.QPNum, errs[6] = q.ReadQPNum()
	w.SrcQP, errs[7] = q.ReadSrcQP()
	var slid uint32
	slid, errs[8] = q.ReadSLID()
	w.SLID = uint16(slid)
	w.SL, errs[9] = q.ReadSL()
	w.DLIDPathBits, errs[10] = q.ReadDLIDPathBits()
	return w, errors.Join(errs[:]...)
}
