// Package evfeed moves the events of an engine queue to a queue behind a
// file descriptor that a C program polls: the drop-in library's and the
// per-host daemon's completion channels and async event queues.
package evfeed

import (
	"context"
	"sync"

	"github.com/verbsim/verbsim/sim"
)

// Feed moves the events of an engine queue (a completion channel's, or a
// context's async events) to the queue behind the descriptor a C program
// reads, which a record's lock guards. A pump goroutine (Run) waits in the
// engine and moves each event as it comes, so that the descriptor becomes
// readable and a program blocked in poll(2) wakes. A non-blocking read
// that finds the record's queue empty first moves whatever the engine has
// already queued (SyncLocked), so that ibv_get_cq_event and
// ibv_get_async_event on a non-blocking descriptor say EAGAIN only when
// no event the engine made before the call is left, as the simulator in
// process does (its Push returns with the event queued) and as rxe does,
// which queues the event on the descriptor as it posts the completion. The
// pump is stopped while a reader does so: an event taken from the engine
// by the pump but not yet queued would otherwise be overtaken by a later
// one, and events must come out in the order they were raised (CHAN-06).
// A blocking read does not stop the pump: it waits for the descriptor,
// which the pump makes readable, and stopping the pump before each wait
// cost ibv_rc_pingpong -e about a fifth of its round trips' speed.
type Feed[E any] struct {
	mu   *sync.Mutex // the record's lock
	cond sync.Cond   // on mu: getting or syncing changed

	get  func(context.Context) (E, error) // the engine's blocking read
	try  func() (E, error)                // its non-blocking read
	take func(E)                          // queues an event, under mu

	getting bool               // the pump is in get, and may hold an event
	syncing int                // readers moving events themselves
	gctx    context.Context    // the context of the pump's get
	stop    context.CancelFunc // ends gctx
}

// New returns the feed of an engine queue read with get (blocking) and try
// (non-blocking), whose events take queues under mu, the lock of the
// record that owns the descriptor's queue.
func New[E any](mu *sync.Mutex, get func(context.Context) (E, error), try func() (E, error), take func(E)) *Feed[E] {
	f := &Feed[E]{mu: mu, get: get, try: try, take: take}
	f.cond.L = mu
	return f
}

// Run is the pump: it moves events until ctx ends or the engine's queue
// is gone (its channel or context destroyed).
func (f *Feed[E]) Run(ctx context.Context) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for {
		for f.syncing > 0 && ctx.Err() == nil {
			f.cond.Wait()
		}
		if ctx.Err() != nil {
			return
		}
		if f.gctx == nil || f.gctx.Err() != nil {
			f.gctx, f.stop = context.WithCancel(ctx)
		}
		gctx := f.gctx
		f.getting = true
		f.mu.Unlock()
		e, err := f.get(gctx)
		f.mu.Lock()
		f.getting = false
		if err == nil {
			f.take(e)
		}
		f.cond.Broadcast()
		if err != nil && (ctx.Err() != nil || gctx.Err() == nil) {
			return // not a reader's interruption: the queue is gone
		}
	}
}

// SyncLocked moves every event the engine has queued, in order, stopping
// the pump's read first. The caller holds mu, which is released while the
// pump finishes.
func (f *Feed[E]) SyncLocked() {
	f.syncing++
	if f.getting {
		f.stop()
		for f.getting {
			f.cond.Wait()
		}
	}
	for {
		e, err := f.try()
		if err != nil {
			break
		}
		f.take(e)
	}
	f.syncing--
	if f.syncing == 0 {
		f.cond.Broadcast()
	}
}

// Object returns the CQ, QP or SRQ handle an async event names, or nil
// (an untyped nil) for a port or device event: what the drop-in library
// and the daemon key an event's C object by.
func Object(ev sim.AsyncEvent) any {
	if q := ev.CQ(); q != nil {
		return q
	}
	if q := ev.QP(); q != nil {
		return q
	}
	if s := ev.SRQ(); s != nil {
		return s
	}
	return nil
}
