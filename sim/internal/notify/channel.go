package notify

import (
	"context"
	"syscall"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/sim/verr"
)

// Channel is a completion channel (struct ibv_comp_channel): the queue on
// which armed CQs deliver their completion events and from which the
// application reads them with GetEvent (ibv_get_cq_event).
//
// C is the type of the CQ handle an event names; package cq instantiates it as
// Channel[*cq.CQ], so this package never needs to know what a CQ is.
//
// One channel may serve many CQs (CHAN-02). Events are handed out in the
// order they were raised, one per call (CHAN-06), each to exactly one reader
// however many block at once (CHAN-11). An event carries no completion, only
// the CQ and its context (CHAN-10): the completions must still be polled.
//
// A Channel is safe for concurrent use. Its lock is the domain lock it was
// made with, shared with the CQs that use it.
//
// On a nil handle a method never panics: one that returns an error returns
// EINVAL (a syscall.Errno, through verr), one that does not returns the zero
// value of each result (Destroyed reports false). Package sim's doc states
// the convention for the whole API.
type Channel[C comparable] struct {
	q     queue[compEvent[C]]
	refs  int    // CQs using the channel (CHAN-09)
	name  string // the trace name; see SetTraceName
	owner any    // who created the channel; see SetOwner

	// Handle is the public handle of the channel (a *sim.CompChannel), set
	// once by its creator before the channel is shared.
	Handle any
}

var errNilChannel = verr.New("ibv_get_cq_event", syscall.EINVAL, "nil completion channel")

type compEvent[C comparable] struct {
	cq      C
	context any
	tally   *Tally
}

// NewChannel returns an empty completion channel (ibv_create_comp_channel)
// in domain d, the domain of the objects that will use it. A nil d gives the
// channel a domain of its own, which only CQs created in that same domain
// may share.
func NewChannel[C comparable](d *domain.Domain) *Channel[C] {
	ch := &Channel[C]{name: "chan"}
	ch.q.init(d, ch, "ibv_get_cq_event")
	return ch
}

// Domain returns the domain that serializes the channel and its CQs.
func (ch *Channel[C]) Domain() *domain.Domain {
	if ch == nil {
		return nil
	}
	return ch.q.d
}

// SetTraceName names the channel in the trace ("dev0/chan#1"). Call it
// before the channel is shared.
func (ch *Channel[C]) SetTraceName(name string) {
	if ch != nil {
		ch.name = name
	}
}

// TraceName returns the channel's name in the trace.
func (ch *Channel[C]) TraceName() string {
	if ch == nil {
		return ""
	}
	return ch.name
}

// PushLocked queues an event for cq, whose user context is cqContext and whose
// event accounting is t. The CQ calls it when an armed request fires, after the
// completion that fired it has been stored (NOTIFY-12).
//
// Precondition: the domain lock is held.
func (ch *Channel[C]) PushLocked(cq C, cqContext any, t *Tally) {
	var none C
	if ch == nil || cq == none {
		return
	}
	if ch.q.dead {
		return
	}
	ch.q.pushLocked(compEvent[C]{cq: cq, context: cqContext, tally: t})
}

func (ch *Channel[C]) took(ev compEvent[C]) {
	ev.tally.compRead++
}

// SetOwner records who created the channel (package sim records the device
// context), for Owner. Call it before the channel is shared: the owner is
// then read without the lock.
func (ch *Channel[C]) SetOwner(o any) {
	if ch != nil {
		ch.owner = o
	}
}

// Owner returns what SetOwner recorded, or nil.
func (ch *Channel[C]) Owner() any {
	if ch == nil {
		return nil
	}
	return ch.owner
}

// readOp is the trace record of a read: an event read is recorded on the CQ
// it names, a failed read on the channel, and EAGAIN, which a busy loop
// would repeat without end, not at all.
func (ch *Channel[C]) readOp(cq C, err error) domain.Op {
	switch {
	case err == nil:
		if o, ok := any(cq).(domain.Object); ok {
			return domain.Op{Verb: "get_cq_event", Obj: o}
		}
	case err == ch.q.again: // errors.Is would allocate in a busy loop
		return domain.Op{}
	}
	return domain.Op{Verb: "get_cq_event", Obj: ch}
}

// GetEvent waits for the next completion event and returns the CQ it names and
// that CQ's context (ibv_get_cq_event, CHAN-03). Every event returned must be
// acknowledged on that CQ (CHAN-07). When ctx is done first, GetEvent returns
// an error that matches both syscall.EINTR and ctx's error, and takes no
// event. On a destroyed channel it returns EBADF.
func (ch *Channel[C]) GetEvent(ctx context.Context) (cq C, cqContext any, err error) {
	if ch == nil {
		return cq, nil, errNilChannel
	}
	d := ch.q.d
	if !d.TryEnter() { // the domain's fast path, inlined (domain.Domain.TryEnter)
		d.Enter(domain.Op{Verb: "get_cq_event", Obj: ch})
	}
	ev, err := ch.q.getLocked(ctx, ch.took)
	if d.FastLeave() {
		d.Unlock()
	} else {
		ch.leave(ev.cq, err)
	}
	return ev.cq, ev.context, err
}

// leave is GetEvent's and TryGetEvent's Leave when it has more to do than
// an unlock; the record is only built for a sink.
func (ch *Channel[C]) leave(cq C, err error) {
	d := ch.q.d
	var op domain.Op
	if d.Tracing() {
		op = ch.readOp(cq, err)
	}
	if err == nil && d.Checking() {
		d.Note(&domain.Note{Kind: domain.NoteEventRead, Obj: ch, With: cq})
	}
	d.Leave(op, err)
}

// TryGetEvent is GetEvent on a channel whose descriptor is in non-blocking
// mode: with no event queued it returns EAGAIN at once (CHAN-04).
func (ch *Channel[C]) TryGetEvent() (cq C, cqContext any, err error) {
	if ch == nil {
		return cq, nil, errNilChannel
	}
	d := ch.q.d
	d.Enter(domain.Op{Verb: "get_cq_event", Obj: ch})
	ev, err := ch.q.tryGetLocked(ch.took)
	ch.leave(ev.cq, err)
	return ev.cq, ev.context, err
}

// Len returns the number of queued, unread events. A channel's descriptor
// polls readable exactly when Len is positive (CHAN-05).
func (ch *Channel[C]) Len() int {
	if ch == nil {
		return 0
	}
	ch.q.d.Enter(domain.Op{})
	defer ch.q.d.Leave(domain.Op{}, nil)
	return ch.q.items.Len()
}

// Pending returns the CQs that the queued, unread events name, oldest
// first, without reading them: the channel, its counts and its readers are
// left as they were. It is a read-only view for tools and teaching (verbsim
// run shows it after every step); it takes the domain lock. Nil when no
// event is queued or ch is nil.
func (ch *Channel[C]) Pending() []C {
	if ch == nil {
		return nil
	}
	ch.q.d.Lock()
	defer ch.q.d.Unlock()
	n := ch.q.items.Len()
	if n == 0 {
		return nil
	}
	out := make([]C, n)
	for i := range out {
		out[i] = ch.q.items.At(i).cq
	}
	return out
}

// LenLocked is Len for a caller that holds the domain lock.
func (ch *Channel[C]) LenLocked() int {
	if ch == nil {
		return 0
	}
	return ch.q.items.Len()
}

// RefLocked records that one more CQ uses the channel. It fails with EINVAL
// when the channel has been destroyed.
//
// Precondition: the domain lock is held.
func (ch *Channel[C]) RefLocked() error {
	if ch == nil {
		return errNilChannel
	}
	if ch.q.dead {
		return verr.New("ibv_create_cq", syscall.EINVAL, "the completion channel has been destroyed")
	}
	ch.refs++
	return nil
}

// UnrefLocked records that a CQ no longer uses the channel.
//
// Precondition: the domain lock is held.
func (ch *Channel[C]) UnrefLocked() {
	if ch == nil {
		return
	}
	if ch.refs > 0 {
		ch.refs--
	}
}

// DiscardLocked removes every queued, unread event of cq and returns how many
// it removed. Destroying a CQ does this: unread events need no ack (CQ-13).
//
// Precondition: the domain lock is held.
func (ch *Channel[C]) DiscardLocked(cq C) int {
	if ch == nil {
		return 0
	}
	return ch.q.items.RemoveIf(func(ev compEvent[C]) bool { return ev.cq == cq })
}

// Destroy destroys the channel (ibv_destroy_comp_channel). It fails with
// EBUSY while any CQ still uses it (CHAN-09) and with EINVAL when the channel
// is already destroyed. Readers blocked in GetEvent return EBADF.
func (ch *Channel[C]) Destroy() error {
	if ch == nil {
		return verr.New("ibv_destroy_comp_channel", syscall.EINVAL, "nil completion channel")
	}
	op := domain.Op{Verb: "destroy_comp_channel", Obj: ch}
	ch.q.d.Enter(op)
	var err error
	defer func() { ch.q.d.Leave(op, err) }()
	switch {
	case ch.q.dead:
		err = verr.New("ibv_destroy_comp_channel", syscall.EINVAL, "the completion channel is already destroyed")
	case ch.refs > 0:
		err = verr.Errorf("ibv_destroy_comp_channel", syscall.EBUSY, "%d CQ(s) still use the channel (CHAN-09)", ch.refs)
	default:
		ch.q.closeLocked()
		if ch.q.d.Checking() {
			ch.q.d.Note(&domain.Note{Kind: domain.NoteDestroyed, Obj: ch})
		}
	}
	return err
}

// RefsLocked is Refs for a caller that holds the domain lock.
func (ch *Channel[C]) RefsLocked() int {
	if ch == nil {
		return 0
	}
	return ch.refs
}

// Refs returns the number of CQs using the channel.
func (ch *Channel[C]) Refs() int {
	if ch == nil {
		return 0
	}
	ch.q.d.Enter(domain.Op{})
	defer ch.q.d.Leave(domain.Op{}, nil)
	return ch.refs
}

// Destroyed reports whether Destroy has succeeded.
func (ch *Channel[C]) Destroyed() bool {
	if ch == nil {
		return false
	}
	ch.q.d.Enter(domain.Op{})
	defer ch.q.d.Leave(domain.Op{}, nil)
	return ch.q.dead
}
