//go:build linux

package nicd

import (
	"context"
	"fmt"
	"sync"
	"syscall"

	"github.com/verbsim/verbsim/internal/evfeed"
	"github.com/verbsim/verbsim/sim"
)

// signal is the descriptor a program polls for a completion channel or a
// context's async events: the program's end r of a stream socket pair,
// which polls readable exactly while events wait (one byte sits in it),
// and hung up once the daemon, which holds the other end w, is gone. The
// daemon holds a duplicate of r as well, to take the byte back
// (MSG_DONTWAIT, whatever O_NONBLOCK the program set on its end). Both
// methods run under the owner's lock.
type signal struct {
	r, w int
	up   bool
}

// newSignal takes the pair that came with a request (fds[0] the
// program's end, fds[1] the other), marking them kept.
func newSignal(fds []int) (signal, error) {
	if len(fds) != 2 {
		return signal{}, fmt.Errorf("want the two ends of a socket pair, got %d descriptors: %w", len(fds), syscall.EINVAL)
	}
	for _, fd := range fds {
		typ, err := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_TYPE)
		if err != nil || typ != syscall.SOCK_STREAM {
			return signal{}, fmt.Errorf("descriptor %d is not a stream socket: %w", fd, syscall.EINVAL)
		}
	}
	if err := syscall.SetNonblock(fds[1], true); err != nil {
		return signal{}, err
	}
	g := signal{r: fds[0], w: fds[1]}
	fds[0], fds[1] = -1, -1
	return g, nil
}

// raise makes the program's end readable.
func (g *signal) raise() {
	if g.up || g.w < 0 {
		return
	}
	b := [1]byte{1}
	for {
		_, err := syscall.Write(g.w, b[:])
		if err != syscall.EINTR {
			break
		}
	}
	g.up = true
}

// clear takes the byte back.
func (g *signal) clear() {
	if !g.up || g.r < 0 {
		return
	}
	var b [16]byte
	for {
		_, _, err := syscall.Recvfrom(g.r, b[:], syscall.MSG_DONTWAIT)
		if err != syscall.EINTR {
			break
		}
	}
	g.up = false
}

func (g *signal) close() {
	for _, fd := range []*int{&g.r, &g.w} {
		if *fd >= 0 {
			syscall.Close(*fd)
			*fd = -1
		}
	}
}

// ctxObj is an open device context and its async events: read from the
// engine by a pump (evfeed), queued for the program (queue), handed to it
// and not yet acknowledged (out).
type ctxObj struct {
	c      *sim.Context
	se     *session
	mu     sync.Mutex
	sig    signal
	queue  []sim.AsyncEvent
	out    []sim.AsyncEvent
	dying  map[any]bool // objects being destroyed
	feed   *evfeed.Feed[sim.AsyncEvent]
	cancel context.CancelFunc
	done   chan struct{}
}

func (r *ctxObj) start() {
	r.dying = map[any]bool{}
	r.done = make(chan struct{})
	r.feed = evfeed.New(&r.mu, r.c.GetAsyncEvent, r.c.TryGetAsyncEvent, r.take)
	var ctx context.Context
	ctx, r.cancel = context.WithCancel(context.Background())
	go func() {
		defer close(r.done)
		r.feed.Run(ctx)
	}()
}

// stop ends the pump and closes the descriptors.
func (r *ctxObj) stop() {
	r.cancel()
	<-r.done
	r.mu.Lock()
	r.sig.close()
	r.mu.Unlock()
}

// take queues an async event for the program, or acknowledges it at once
// when it names an object being destroyed. r.mu is held.
func (r *ctxObj) take(ev sim.AsyncEvent) {
	if o := evfeed.Object(ev); o != nil && r.dying[o] {
		ev.Ack()
		return
	}
	r.queue = append(r.queue, ev)
	r.sig.raise()
}

// forget drops the unread async events of obj, acknowledging them to the
// engine as the kernel forgets a destroyed object's queued events, and
// marks obj dying so the pump does the same with any in flight; it also
// acknowledges those the program read and will never acknowledge when
// acked is set (the program is gone). It returns a function that clears
// the mark.
func (r *ctxObj) forget(obj any, acked bool) func() {
	r.mu.Lock()
	r.dying[obj] = true
	kept := r.queue[:0]
	for _, ev := range r.queue {
		if evfeed.Object(ev) == obj {
			ev.Ack()
			continue
		}
		kept = append(kept, ev)
	}
	r.queue = kept
	if len(kept) == 0 {
		r.sig.clear()
	}
	if acked {
		out := r.out[:0]
		for _, ev := range r.out {
			if evfeed.Object(ev) == obj {
				ev.Ack()
				continue
			}
			out = append(out, ev)
		}
		r.out = out
	}
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		delete(r.dying, obj)
		r.mu.Unlock()
	}
}

// chObj is a completion channel and its events: the cq_context of each
// (its CQ's record), read by a pump and queued for the program.
type chObj struct {
	ch     *sim.CompChannel
	mu     sync.Mutex
	sig    signal
	queue  []*cqObj
	dying  map[*cqObj]bool
	feed   *evfeed.Feed[any]
	cancel context.CancelFunc
	done   chan struct{}
}

func (r *chObj) start() {
	r.dying = map[*cqObj]bool{}
	r.done = make(chan struct{})
	ch := r.ch
	r.feed = evfeed.New(&r.mu, func(ctx context.Context) (any, error) {
		_, cqc, err := ch.GetEvent(ctx)
		return cqc, err
	}, func() (any, error) {
		_, cqc, err := ch.TryGetEvent()
		return cqc, err
	}, r.take)
	var ctx context.Context
	ctx, r.cancel = context.WithCancel(context.Background())
	go func() {
		defer close(r.done)
		r.feed.Run(ctx)
	}()
}

func (r *chObj) stop() {
	r.cancel()
	<-r.done
	r.mu.Lock()
	r.sig.close()
	r.mu.Unlock()
}

// take queues a completion event for the program, or acknowledges it at
// once when its CQ is being destroyed. r.mu is held.
func (r *chObj) take(cqc any) {
	c, _ := cqc.(*cqObj)
	if c == nil {
		return
	}
	if r.dying[c] {
		c.cq.AckEvents(1)
		return
	}
	r.queue = append(r.queue, c)
	r.sig.raise()
}

// purge drops c's events queued for the program, as the kernel drops a
// destroyed CQ's queued events (the engine counts them read, so they are
// acknowledged for it), and marks c dying until the returned function
// runs.
func (r *chObj) purge(c *cqObj) func() {
	r.mu.Lock()
	r.dying[c] = true
	kept, n := r.queue[:0], 0
	for _, q := range r.queue {
		if q == c {
			n++
			continue
		}
		kept = append(kept, q)
	}
	r.queue = kept
	if len(kept) == 0 {
		r.sig.clear()
	}
	r.mu.Unlock()
	if n > 0 {
		c.cq.AckEvents(n)
	}
	return func() {
		r.mu.Lock()
		delete(r.dying, c)
		r.mu.Unlock()
	}
}
