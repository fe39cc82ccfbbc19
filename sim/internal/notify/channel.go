package notify

import (
	"context"
	"errors"
	"sync"
	"syscall"

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
	refs  int // CQs using the channel (CHAN-09)
	trace func(cq C, what, why string)
	owner any // who created the channel; see SetOwner

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
// whose lock is mu, the domain lock of the objects that will use it. A nil mu
// gives the channel a lock of its own, which only CQs created with that same
// lock may share.
func NewChannel[C comparable](mu *sync.Mutex) *Channel[C] {
	ch := new(Channel[C])
	ch.q.init(mu, "ibv_get_cq_event")
	return ch
}

// Domain returns the lock that serializes the channel and its CQs.
func (ch *Channel[C]) Domain() *sync.Mutex {
	if ch == nil {
		return nil
	}
	return ch.q.mu
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
	if ch.trace != nil {
		ch.trace(ev.cq, "get_cq_event", "")
	}
}

// SetTrace makes fn hear, under the domain lock, about every event read from
// the channel (naming its CQ), every failed read other than EAGAIN and every
// destroy (with the zero C). why is the error's text when the call failed.
// Call it before the channel is shared.
func (ch *Channel[C]) SetTrace(fn func(cq C, what, why string)) {
	if ch != nil {
		ch.trace = fn
	}
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

// traceFailed reports a failed read, except EAGAIN, which a busy loop would
// repeat without end.
func (ch *Channel[C]) traceFailed(err error) {
	if ch.trace == nil || err == nil || errors.Is(err, syscall.EAGAIN) {
		return
	}
	var zero C
	ch.q.mu.Lock()
	defer ch.q.mu.Unlock()
	ch.trace(zero, "get_cq_event", err.Error())
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
	ev, err := ch.q.get(ctx, ch.took)
	ch.traceFailed(err)
	return ev.cq, ev.context, err
}

// TryGetEvent is GetEvent on a channel whose descriptor is in non-blocking
// mode: with no event queued it returns EAGAIN at once (CHAN-04).
func (ch *Channel[C]) TryGetEvent() (cq C, cqContext any, err error) {
	if ch == nil {
		return cq, nil, errNilChannel
	}
	ev, err := ch.q.tryGet(ch.took)
	ch.traceFailed(err)
	return ev.cq, ev.context, err
}

// Len returns the number of queued, unread events. A channel's descriptor
// polls readable exactly when Len is positive (CHAN-05).
func (ch *Channel[C]) Len() int {
	if ch == nil {
		return 0
	}
	ch.q.mu.Lock()
	defer ch.q.mu.Unlock()
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
	ch.q.mu.Lock()
	defer ch.q.mu.Unlock()
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
	ch.q.mu.Lock()
	defer ch.q.mu.Unlock()
	var err error
	switch {
	case ch.q.dead:
		err = verr.New("ibv_destroy_comp_channel", syscall.EINVAL, "the completion channel is already destroyed")
	case ch.refs > 0:
		err = verr.Errorf("ibv_destroy_comp_channel", syscall.EBUSY, "%d CQ(s) still use the channel (CHAN-09)", ch.refs)
	default:
		ch.q.closeLocked()
	}
	if ch.trace != nil {
		var zero C
		ch.trace(zero, "destroy_comp_channel", errText(err))
	}
	return err
}

// errText is err's text, or "" for nil.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Refs returns the number of CQs using the channel.
func (ch *Channel[C]) Refs() int {
	if ch == nil {
		return 0
	}
	ch.q.mu.Lock()
	defer ch.q.mu.Unlock()
	return ch.refs
}

// Destroyed reports whether Destroy has succeeded.
func (ch *Channel[C]) Destroyed() bool {
	if ch == nil {
		return false
	}
	ch.q.mu.Lock()
	defer ch.q.mu.Unlock()
	return ch.q.dead
}
