package evfeed

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
)

// fakeQueue is an engine queue for feed: get takes the oldest item, or
// waits for one until its context ends; after taking one it waits for
// hold (if set) before returning, as a pump preempted between the
// engine's read and its own queueing would.
type fakeQueue struct {
	mu    sync.Mutex
	items []int
	more  chan struct{}
	taken chan struct{}
	hold  chan struct{}
}

func (q *fakeQueue) try() (int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) == 0 {
		return 0, syscall.EAGAIN
	}
	v := q.items[0]
	q.items = q.items[1:]
	return v, nil
}

func (q *fakeQueue) get(ctx context.Context) (int, error) {
	for {
		if v, err := q.try(); err == nil {
			if q.hold != nil {
				q.taken <- struct{}{}
				<-q.hold
			}
			return v, nil
		}
		select {
		case <-q.more:
		case <-ctx.Done():
			return 0, syscall.EINTR
		}
	}
}

// TestFeedOrder: a reader that finds the descriptor's queue empty while the
// pump holds an event taken from the engine waits for the pump to queue it
// before it moves the later ones, so events keep the order they were
// raised in (the channel rule of FIFO order), and none the engine had queued is missed.
func TestFeedOrder(t *testing.T) {
	var mu sync.Mutex
	var out []int
	q := &fakeQueue{more: make(chan struct{}, 1), taken: make(chan struct{}), hold: make(chan struct{})}
	f := New(&mu, q.get, q.try, func(v int) { out = append(out, v) })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.Run(ctx); close(done) }()

	q.mu.Lock()
	q.items = []int{1, 2, 3}
	q.mu.Unlock()
	q.more <- struct{}{}
	<-q.taken // the pump holds 1; 2 and 3 are still in the engine

	synced := make(chan struct{})
	go func() {
		mu.Lock()
		f.SyncLocked()
		mu.Unlock()
		close(synced)
	}()
	for waiting := false; !waiting; { // until the reader waits for the pump (or, wrongly, is done)
		mu.Lock()
		waiting = f.syncing == 1
		mu.Unlock()
		select {
		case <-synced:
			waiting = true
		default:
			runtime.Gosched()
		}
	}
	q.hold <- struct{}{}
	<-synced
	mu.Lock()
	got := slices.Clone(out)
	mu.Unlock()
	if !slices.Equal(got, []int{1, 2, 3}) {
		t.Errorf("events queued in the order %v, want [1 2 3]", got)
	}

	// The pump carries on after the reader: a later event still comes.
	q.hold = nil
	q.mu.Lock()
	q.items = append(q.items, 4)
	q.mu.Unlock()
	select {
	case q.more <- struct{}{}:
	default:
	}
	mu.Lock()
	f.SyncLocked()
	got = slices.Clone(out)
	mu.Unlock()
	if !slices.Equal(got, []int{1, 2, 3, 4}) {
		t.Errorf("after a later event: %v, want [1 2 3 4]", got)
	}
	cancel()
	<-done
}
