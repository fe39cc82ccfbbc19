package explore

import (
	"context"
	"fmt"
	"reflect"
	"runtime"
)

// Chan is a channel that the explorer sees: a send, a receive, a close and
// a select are choice points, a goroutine that waits on one is a wait the
// explorer knows (a receive from an empty channel nobody will send on or
// close is reported as such), and when several cases of a Select are
// ready the explorer decides which one runs. Outside a world (and in
// RunPlain) it is a Go channel of the same capacity. Use NewChan.
type Chan[T any] struct {
	o      syncObj
	ch     chan T // outside a world
	cap    int
	buf    []T
	closed bool
	// senders wait to hand a value over an unbuffered channel (or a full
	// one), in order.
	senders []*pendingSend[T]
}

type pendingSend[T any] struct {
	g     *gor
	v     T
	taken bool
}

// NewChan returns a channel with room for capacity values (0: unbuffered).
func NewChan[T any](capacity int) *Chan[T] {
	if capacity < 0 {
		panic("explore: NewChan: negative capacity")
	}
	c := &Chan[T]{ch: make(chan T, capacity), cap: capacity}
	c.o.kind = "chan"
	return c
}

func (c *Chan[T]) syncObject() *syncObj { return &c.o }

func (c *Chan[T]) runner() *runner {
	return c.o.runnerOf("chan", func() { c.buf, c.closed, c.senders = nil, false, nil })
}

// receivers counts the goroutines of r waiting to receive from c.
func (c *Chan[T]) receivers(r *runner) int {
	n := 0
	for _, g := range r.gs {
		if w := g.sw; g.state == gBlocked && w != nil {
			for _, o := range w.recv {
				if o == &c.o {
					n++
					break
				}
			}
		}
	}
	return n
}

// canSend reports whether a send would not wait: room in the buffer, or
// a receiver waiting for an unbuffered channel's value.
func (c *Chan[T]) canSend(r *runner) bool {
	return c.closed || len(c.buf) < max(c.cap, c.receivers(r)-len(c.senders))
}

// canRecv reports whether a receive would not wait.
func (c *Chan[T]) canRecv() bool {
	for _, s := range c.senders {
		if !s.taken {
			return true
		}
	}
	return len(c.buf) > 0 || c.closed
}

// take receives a value; canRecv holds.
func (c *Chan[T]) take() (v T, ok bool) {
	if len(c.buf) > 0 {
		v, c.buf = c.buf[0], c.buf[1:]
		ok = true
	}
	for len(c.senders) > 0 {
		s := c.senders[0]
		c.senders = c.senders[1:]
		if s.taken {
			continue
		}
		s.taken = true
		if ok { // a buffered channel: the sender's value takes the freed slot
			c.buf = append(c.buf, s.v)
			return v, true
		}
		return s.v, true
	}
	return v, ok
}

func (c *Chan[T]) put(v T) {
	if c.closed {
		panic("send on closed channel")
	}
	c.buf = append(c.buf, v)
}

func (c *Chan[T]) state() string {
	switch {
	case c.closed:
		return "closed"
	case len(c.buf) == 0:
		return "empty, not closed, and no goroutine will send on it or close it"
	}
	return fmt.Sprintf("full (%d of %d), and no goroutine will receive from it", len(c.buf), c.cap)
}

// Send sends v, waiting for room (for a receiver, when unbuffered).
// Sending on a closed channel panics.
func (c *Chan[T]) Send(v T) {
	r := c.runner()
	if r == nil {
		c.ch <- v
		return
	}
	g := r.cur
	var s *pendingSend[T]
	r.syncDo(syncOp{obj: &c.o, verb: "send"}, nil, nil, func() {
		if c.canSend(r) {
			c.put(v)
			return
		}
		s = &pendingSend[T]{g: g, v: v}
		c.senders = append(c.senders, s)
	})
	if s == nil {
		return
	}
	if g == nil {
		r.fail(Deadlock, "the world function would wait to send on "+c.o.TraceName()+", while no goroutine runs yet")
		runtime.Goexit()
	}
	r.syncBlock(g, &syncWait{obj: &c.o, verb: "send", ready: func() bool { return s.taken || c.closed }, why: c.state})
	if !s.taken {
		panic("send on closed channel")
	}
}

// Recv receives a value, waiting for one; ok is false when the channel is
// closed and empty.
func (c *Chan[T]) Recv() (v T, ok bool) {
	r := c.runner()
	if r == nil {
		v, ok = <-c.ch
		return v, ok
	}
	r.syncDo(syncOp{obj: &c.o, verb: "receive", recv: true}, c.canRecv, c.state, func() { v, ok = c.take() })
	return v, ok
}

// TryRecv receives a value if one is ready: received reports whether it
// did, ok as Recv does.
func (c *Chan[T]) TryRecv() (v T, ok, received bool) {
	r := c.runner()
	if r == nil {
		select {
		case v, ok = <-c.ch:
			return v, ok, true
		default:
			return v, false, false
		}
	}
	r.syncDo(syncOp{obj: &c.o, verb: "receive (try)"}, nil, nil, func() {
		if c.canRecv() {
			v, ok = c.take()
			received = true
		}
	})
	return v, ok, received
}

// Close closes the channel; closing it twice panics.
func (c *Chan[T]) Close() {
	r := c.runner()
	if r == nil {
		close(c.ch)
		return
	}
	r.syncDo(syncOp{obj: &c.o, verb: "close"}, nil, nil, func() {
		if c.closed {
			panic("close of closed channel")
		}
		c.closed = true
	})
}

// Len returns the number of values in the buffer.
func (c *Chan[T]) Len() int {
	r := c.runner()
	if r == nil {
		return len(c.ch)
	}
	n := 0
	r.syncDo(syncOp{obj: &c.o, verb: "len"}, nil, nil, func() { n = len(c.buf) })
	return n
}

// Case is one case of a Select: made by Chan.RecvCase, Chan.SendCase or
// DoneCase.
type Case struct {
	obj   *syncObj // nil for DoneCase
	recv  bool
	ready func(r *runner) bool
	run   func()             // carries the case out under the explorer
	plain reflect.SelectCase // outside a world
	then  func(v reflect.Value, ok bool)
}

// RecvCase is a case of Select that receives from c and calls f with the
// value (ok as Recv reports it); f may be nil.
func (c *Chan[T]) RecvCase(f func(v T, ok bool)) Case {
	return Case{obj: &c.o, recv: true,
		ready: func(*runner) bool { return c.canRecv() },
		run: func() {
			v, ok := c.take()
			if f != nil {
				f(v, ok)
			}
		},
		plain: reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(c.ch)},
		then: func(v reflect.Value, ok bool) {
			if f != nil {
				var x T
				if ok {
					x = v.Interface().(T)
				}
				f(x, ok)
			}
		}}
}

// SendCase is a case of Select that sends v on c and then calls f (nil:
// nothing).
func (c *Chan[T]) SendCase(v T, f func()) Case {
	return Case{obj: &c.o,
		ready: func(r *runner) bool { return c.canSend(r) },
		run: func() {
			c.put(v)
			if f != nil {
				f()
			}
		},
		plain: reflect.SelectCase{Dir: reflect.SelectSend, Chan: reflect.ValueOf(c.ch), Send: reflect.ValueOf(v)},
		then: func(reflect.Value, bool) {
			if f != nil {
				f()
			}
		}}
}

// DoneCase is a case of Select that is ready when ctx ends, and calls f
// (nil: nothing). Under the explorer a world goroutine's context ends
// only when the schedule does.
func DoneCase(ctx context.Context, f func()) Case {
	return Case{
		ready: func(*runner) bool { return ctx.Err() != nil },
		run: func() {
			if f != nil {
				f()
			}
		},
		plain: reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())},
		then: func(reflect.Value, bool) {
			if f != nil {
				f()
			}
		}}
}

// Select waits until one of the cases is ready, carries it out and
// returns its index. When several are ready the explorer decides which
// (a choice point, as Go's random choice is); outside a world it is a Go
// select statement.
func Select(cases ...Case) int { return selectCases(cases, false) }

// SelectDefault is Select with a default: when no case is ready it
// returns -1 at once.
func SelectDefault(cases ...Case) int { return selectCases(cases, true) }

func selectCases(cases []Case, dflt bool) int {
	var r *runner
	for _, c := range cases {
		if c.obj != nil {
			if x := c.obj.bound.Load(); x != nil && x != notExplored && !x.ended.Load() {
				r = x
				break
			}
		}
	}
	if r == nil {
		if m, ok := memberOf(); ok {
			r = m.r
		}
	}
	if r == nil {
		return plainSelect(cases, dflt)
	}
	for _, c := range cases {
		if c.obj != nil {
			c.obj.runnerOfSelect(r)
		}
	}
	var objs, recv []*syncObj
	for _, c := range cases {
		if c.obj != nil {
			objs = append(objs, c.obj)
			if c.recv {
				recv = append(recv, c.obj)
			}
		}
	}
	var first *syncObj
	if len(objs) > 0 {
		first = objs[0]
	} else {
		first = &syncObj{kind: "select"}
	}
	readyIdx := func() []int {
		var out []int
		for i, c := range cases {
			if c.ready(r) {
				out = append(out, i)
			}
		}
		return out
	}
	chosen := -1
	op := syncOp{obj: first, verb: "select", extra: objs}
	g := r.cur
	r.syncDo(op, nil, nil, func() {})
	ready := readyIdx()
	if len(ready) == 0 && !dflt {
		if g == nil {
			r.fail(Deadlock, "the world function would wait in a select, while no goroutine runs yet")
			runtime.Goexit()
		}
		r.syncBlock(g, &syncWait{obj: first, verb: "select", extra: objs, recv: recv,
			ready: func() bool { return len(readyIdx()) > 0 },
			why: func() string {
				var parts []string
				for _, o := range objs {
					parts = append(parts, o.TraceName())
				}
				return fmt.Sprintf("no case is ready (%v)", parts)
			}})
		ready = readyIdx()
	}
	if len(ready) == 0 {
		return -1
	}
	chosen = ready[0]
	if len(ready) > 1 {
		chosen = ready[r.chooseCase(len(ready))]
	}
	cases[chosen].run()
	return chosen
}

// runnerOfSelect binds o to r if it is not bound to a live schedule (a
// channel a select uses first).
func (o *syncObj) runnerOfSelect(r *runner) {
	if x := o.bound.Load(); x == r {
		return
	}
	// Bind through the channel's own path: a zero-cost receive of nothing
	// is not possible generically, so the object is bound here with no
	// reset of a model it has not got yet.
	o.holder, o.since = nil, 0
	o.site = callerSite()
	o.idx = len(r.syncs)
	r.syncs = append(r.syncs, o)
	if o.reset != nil {
		o.reset()
	}
	o.bound.Store(r)
}

func plainSelect(cases []Case, dflt bool) int {
	sc := make([]reflect.SelectCase, 0, len(cases)+1)
	for _, c := range cases {
		sc = append(sc, c.plain)
	}
	if dflt {
		sc = append(sc, reflect.SelectCase{Dir: reflect.SelectDefault})
	}
	i, v, ok := reflect.Select(sc)
	if i == len(cases) {
		return -1
	}
	cases[i].then(v, ok)
	return i
}
