package notify

import (
	"context"

	"github.com/verbsim/verbsim/internal/domain"
)

// Events is the event FIFO of completion channels and async event queues,
// offered to the engine's other event sources (the connection manager's
// event channels): pushes under the domain lock, blocking reads through the
// domain (domain.Wait), each event to exactly one reader, and EAGAIN and
// EBADF errors allocated once.
//
// took, given to the reads, runs under the lock on the event being taken,
// before the read returns it: the reader's side of the bookkeeping (counting
// the event as read, say) cannot be separated from the taking.
type Events[T any] struct{ q queue[T] }

// Init readies the queue: owner is the object its waiters wait on (the key
// PushLocked wakes), verb names the reading verb in errors.
func (e *Events[T]) Init(d *domain.Domain, owner domain.Object, verb string) {
	e.q.init(d, owner, verb)
}

// PushLocked appends v and wakes the readers.
//
// Precondition: the domain lock is held.
func (e *Events[T]) PushLocked(v T) { e.q.pushLocked(v) }

// GetLocked takes the oldest event, blocking until there is one, the queue
// is closed (EBADF) or ctx ends.
//
// Precondition: the domain lock is held.
func (e *Events[T]) GetLocked(ctx context.Context, took func(T)) (T, error) {
	return e.q.getLocked(ctx, took)
}

// TryGetLocked takes the oldest event, or fails with EAGAIN.
//
// Precondition: the domain lock is held.
func (e *Events[T]) TryGetLocked(took func(T)) (T, error) { return e.q.tryGetLocked(took) }

// IsAgain reports whether err is the queue's EAGAIN.
func (e *Events[T]) IsAgain(err error) bool { return err == e.q.again }

// LenLocked is the number of queued events.
//
// Precondition: the domain lock is held.
func (e *Events[T]) LenLocked() int { return e.q.items.Len() }

// AtLocked returns the i-th oldest queued event.
//
// Precondition: the domain lock is held; 0 <= i < LenLocked().
func (e *Events[T]) AtLocked(i int) T { return e.q.items.At(i) }

// RemoveIfLocked drops the queued events for which drop reports true,
// keeping the order of the others, and returns how many it dropped.
//
// Precondition: the domain lock is held.
func (e *Events[T]) RemoveIfLocked(drop func(T) bool) int { return e.q.items.RemoveIf(drop) }

// CloseLocked closes the queue: queued events are dropped and blocked
// readers return EBADF.
//
// Precondition: the domain lock is held.
func (e *Events[T]) CloseLocked() { e.q.closeLocked() }

// ClosedLocked reports whether the queue is closed.
//
// Precondition: the domain lock is held.
func (e *Events[T]) ClosedLocked() bool { return e.q.dead }
