package notify

import (
	"context"
	"sync"
	"syscall"

	"github.com/verbsim/verbsim/internal/fifo"
	"github.com/verbsim/verbsim/sim/verr"
)

// queue is the event FIFO shared by completion channels and async event
// queues: pushes happen under the domain lock, and readers may block outside
// it. A one-slot token channel wakes readers: a push leaves a token, a reader
// that takes an event while more remain passes the token on, so every event
// reaches exactly one reader (CHAN-11, ASYNC-06) and no wake-up is lost.
type queue[T any] struct {
	mu     *sync.Mutex
	items  fifo.FIFO[T]
	ready  chan struct{} // token: "the queue may be non-empty"
	closed chan struct{} // closed when the queue is destroyed
	dead   bool
	verb   string // verb named in errors from get
	again  error  // preallocated EAGAIN, so a busy non-blocking loop allocates nothing
	gone   error  // preallocated EBADF for a destroyed queue
}

func (q *queue[T]) init(mu *sync.Mutex, verb string) {
	if mu == nil {
		mu = new(sync.Mutex)
	}
	q.mu = mu
	q.ready = make(chan struct{}, 1)
	q.closed = make(chan struct{})
	q.verb = verb
	q.again = verr.New(verb, syscall.EAGAIN, "no event is queued")
	q.gone = verr.New(verb, syscall.EBADF, "the event source has been destroyed")
}

// pushLocked appends v and wakes one reader.
func (q *queue[T]) pushLocked(v T) {
	q.items.Push(v)
	q.signal()
}

func (q *queue[T]) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// popLocked removes the oldest item, calling took on it under the lock.
func (q *queue[T]) popLocked(took func(T)) (T, bool) {
	v, ok := q.items.Pop()
	if !ok {
		return v, false
	}
	took(v)
	if q.items.Len() > 0 {
		q.signal() // another reader may take the next one
	}
	return v, true
}

// get blocks until an item is available, the queue is destroyed or ctx is
// done. A nil ctx is EINVAL, whether or not an item is queued.
func (q *queue[T]) get(ctx context.Context, took func(T)) (T, error) {
	var zero T
	if ctx == nil {
		return zero, verr.New(q.verb, syscall.EINVAL, "nil context.Context")
	}
	q.mu.Lock()
	for {
		if q.dead {
			q.mu.Unlock()
			return zero, q.gone
		}
		if v, ok := q.popLocked(took); ok {
			q.mu.Unlock()
			return v, nil
		}
		q.mu.Unlock()
		select {
		case <-q.ready:
		case <-q.closed:
		case <-ctx.Done():
			return zero, verr.Wrap(q.verb, syscall.EINTR, "wait abandoned", ctx.Err())
		}
		q.mu.Lock()
	}
}

// tryGet returns an item if one is queued, or EAGAIN.
func (q *queue[T]) tryGet(took func(T)) (T, error) {
	var zero T
	q.mu.Lock()
	defer q.mu.Unlock()
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
	close(q.closed)
}
