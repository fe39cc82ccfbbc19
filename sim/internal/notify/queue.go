package notify

import (
	"context"
	"syscall"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/internal/fifo"
	"github.com/verbsim/verbsim/sim/verr"
)

// queue is the event FIFO shared by completion channels and async event
// queues: pushes happen under the domain lock, and readers block through the
// domain (domain.Wait), which lists them as waiters on the queue's owner. A
// push wakes the waiters on the owner; each re-checks under the lock, so
// every event reaches exactly one reader (CHAN-11, ASYNC-06) and no wake-up
// is lost.
type queue[T any] struct {
	d     *domain.Domain
	owner domain.Object // the channel or async queue: the waiters' key
	items fifo.FIFO[T]
	dead  bool
	// free recycles the waiters of blocked reads, and the wake-up channel
	// each keeps, so that a blocking read allocates nothing in the steady
	// state. Kept per queue, under the domain lock: a channel made inside
	// a testing/synctest bubble must stay there.
	free  []*domain.Waiter
	verb  string // verb named in errors from get
	again error  // preallocated EAGAIN, so a busy non-blocking loop allocates nothing
	gone  error  // preallocated EBADF for a destroyed queue
}

func (q *queue[T]) init(d *domain.Domain, owner domain.Object, verb string) {
	if d == nil {
		d = domain.New()
	}
	q.d, q.owner = d, owner
	q.verb = verb
	q.again = verr.New(verb, syscall.EAGAIN, "no event is queued")
	q.gone = verr.New(verb, syscall.EBADF, "the event source has been destroyed")
}

// pushLocked appends v and wakes the readers.
func (q *queue[T]) pushLocked(v T) {
	q.items.Push(v)
	q.d.Wake(q.owner)
}

// popLocked removes the oldest item, calling took on it under the lock.
func (q *queue[T]) popLocked(took func(T)) (T, bool) {
	v, ok := q.items.Pop()
	if !ok {
		return v, false
	}
	took(v)
	return v, true
}

// getLocked blocks, through the domain, until an item is available, the
// queue is destroyed or ctx is done. A nil ctx is EINVAL, whether or not an
// item is queued.
//
// Precondition: the domain lock is held (the verb has entered the domain).
func (q *queue[T]) getLocked(ctx context.Context, took func(T)) (T, error) {
	var zero T
	if ctx == nil {
		return zero, verr.New(q.verb, syscall.EINVAL, "nil context.Context")
	}
	if q.dead {
		return zero, q.gone
	}
	if q.items.Len() == 0 {
		return q.waitLocked(ctx, took)
	}
	v, _ := q.popLocked(took)
	return v, nil
}

// waitLocked is the blocking part of getLocked, apart so that the fast path
// allocates nothing.
func (q *queue[T]) waitLocked(ctx context.Context, took func(T)) (T, error) {
	var v T
	var ok bool
	var w *domain.Waiter
	if n := len(q.free); n > 0 {
		w, q.free = q.free[n-1], q.free[:n-1]
	} else {
		w = &domain.Waiter{Verb: q.verb, Obj: q.owner, For: "an event"}
	}
	// getLocked has just found the queue empty and live.
	err := q.d.WaitNotReady(ctx, w, func() bool {
		if q.dead {
			return true
		}
		v, ok = q.popLocked(took)
		return ok
	})
	q.free = append(q.free, w) // Wait returns with the lock held
	switch {
	case err != nil:
		var zero T
		return zero, verr.Wrap(q.verb, syscall.EINTR, "wait abandoned", err)
	case !ok:
		return v, q.gone
	}
	return v, nil
}

// tryGetLocked returns an item if one is queued, or EAGAIN.
//
// Precondition: the domain lock is held.
func (q *queue[T]) tryGetLocked(took func(T)) (T, error) {
	var zero T
	if q.dead {
		return zero, q.gone
	}
	if v, ok := q.popLocked(took); ok {
		return v, nil
	}
	return zero, q.again
}

// closeLocked destroys the queue: pending items are dropped and blocked
// readers return EBADF.
func (q *queue[T]) closeLocked() {
	if q.dead {
		return
	}
	q.dead = true
	q.items = fifo.FIFO[T]{}
	q.d.Wake(q.owner)
}
