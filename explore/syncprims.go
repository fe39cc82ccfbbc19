package explore

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// Mutex is a mutual exclusion lock that the explorer sees: Lock and
// Unlock are choice points, a goroutine that waits in Lock is a wait the
// explorer knows, with the goroutine that holds the lock, so that a
// deadlock names both. The zero value is an unlocked mutex. Outside a
// world (and in RunPlain) it is a sync.Mutex. It implements sync.Locker.
type Mutex struct {
	o      syncObj
	mu     sync.Mutex
	locked bool
}

var _ sync.Locker = (*Mutex)(nil)

func (m *Mutex) runner() *runner { return m.o.runnerOf("mutex", func() { m.locked = false }) }

// Lock locks m, waiting while another goroutine holds it.
func (m *Mutex) Lock() {
	r := m.runner()
	if r == nil {
		m.mu.Lock()
		return
	}
	r.syncDo(syncOp{obj: &m.o, verb: "Lock"}, func() bool { return !m.locked },
		func() string { return "held by " + m.o.holderName() },
		func() { m.locked = true; m.o.hold(r, r.cur) })
}

// TryLock locks m if it is free and reports whether it did.
func (m *Mutex) TryLock() bool {
	r := m.runner()
	if r == nil {
		return m.mu.TryLock()
	}
	ok := false
	r.syncDo(syncOp{obj: &m.o, verb: "TryLock"}, nil, nil, func() {
		if !m.locked {
			m.locked, ok = true, true
			m.o.hold(r, r.cur)
		}
	})
	return ok
}

// Unlock unlocks m. Unlocking a mutex that is not locked panics, as
// sync.Mutex does.
func (m *Mutex) Unlock() {
	r := m.runner()
	if r == nil {
		m.mu.Unlock()
		return
	}
	r.syncDo(syncOp{obj: &m.o, verb: "Unlock"}, nil, nil, func() {
		if !m.locked {
			panic("sync: unlock of unlocked mutex")
		}
		m.locked, m.o.holder = false, nil
	})
}

// RWMutex is a reader/writer lock that the explorer sees, as Mutex is; a
// writer waiting in Lock keeps new readers out, as sync.RWMutex does. The
// zero value is unlocked; outside a world it is a sync.RWMutex.
type RWMutex struct {
	o       syncObj
	mu      sync.RWMutex
	writer  bool
	readers []*gor // the goroutines holding a read lock (nil for the world function)
}

func (m *RWMutex) runner() *runner {
	return m.o.runnerOf("rwmutex", func() { m.writer, m.readers = false, nil })
}

// writerWaits reports whether a goroutine of r waits in m's Lock.
func (m *RWMutex) writerWaits(r *runner) bool {
	for _, g := range r.gs {
		if w := g.sw; g.state == gBlocked && w != nil && w.obj == &m.o && w.verb == "Lock" {
			return true
		}
	}
	return false
}

func (m *RWMutex) holders() string {
	if m.writer {
		return "held by " + m.o.holderName()
	}
	var names []string
	for _, g := range m.readers {
		if g == nil {
			names = append(names, "the world function")
		} else {
			names = append(names, g.name)
		}
	}
	return fmt.Sprintf("read-locked by %v", names)
}

// Lock locks m for writing, waiting for the writer and every reader.
func (m *RWMutex) Lock() {
	r := m.runner()
	if r == nil {
		m.mu.Lock()
		return
	}
	r.syncDo(syncOp{obj: &m.o, verb: "Lock"}, func() bool { return !m.writer && len(m.readers) == 0 }, m.holders,
		func() { m.writer = true; m.o.hold(r, r.cur) })
}

// Unlock unlocks m for writing; it panics if m is not write-locked.
func (m *RWMutex) Unlock() {
	r := m.runner()
	if r == nil {
		m.mu.Unlock()
		return
	}
	r.syncDo(syncOp{obj: &m.o, verb: "Unlock"}, nil, nil, func() {
		if !m.writer {
			panic("sync: Unlock of unlocked RWMutex")
		}
		m.writer, m.o.holder = false, nil
	})
}

// RLock locks m for reading; it waits while a writer holds m or waits
// for it.
func (m *RWMutex) RLock() {
	r := m.runner()
	if r == nil {
		m.mu.RLock()
		return
	}
	r.syncDo(syncOp{obj: &m.o, verb: "RLock"}, func() bool { return !m.writer && !m.writerWaits(r) },
		func() string {
			if m.writer {
				return m.holders()
			}
			return "a writer waits in Lock"
		},
		func() { m.readers = append(m.readers, r.cur) })
}

// RUnlock undoes one RLock; it panics if m is not read-locked.
func (m *RWMutex) RUnlock() {
	r := m.runner()
	if r == nil {
		m.mu.RUnlock()
		return
	}
	r.syncDo(syncOp{obj: &m.o, verb: "RUnlock"}, nil, nil, func() {
		for i, g := range m.readers {
			if g == r.cur {
				m.readers = append(m.readers[:i], m.readers[i+1:]...)
				return
			}
		}
		if len(m.readers) == 0 {
			panic("sync: RUnlock of unlocked RWMutex")
		}
		m.readers = m.readers[1:] // a read lock taken by another goroutine
	})
}

// WaitGroup waits for a collection of goroutines to finish, as
// sync.WaitGroup does, and the explorer sees it: Add, Done and Wait are
// choice points, and a goroutine waiting in Wait is a wait it knows. The
// zero value is ready; outside a world it is a sync.WaitGroup.
type WaitGroup struct {
	o  syncObj
	wg sync.WaitGroup
	n  int
}

func (wg *WaitGroup) runner() *runner { return wg.o.runnerOf("waitgroup", func() { wg.n = 0 }) }

// Add adds delta to the counter; a negative counter panics.
func (wg *WaitGroup) Add(delta int) {
	r := wg.runner()
	if r == nil {
		wg.wg.Add(delta)
		return
	}
	r.syncDo(syncOp{obj: &wg.o, verb: "Add"}, nil, nil, func() {
		if wg.n += delta; wg.n < 0 {
			panic("sync: negative WaitGroup counter")
		}
	})
}

// Done decrements the counter by one.
func (wg *WaitGroup) Done() { wg.Add(-1) }

// Wait waits until the counter is zero.
func (wg *WaitGroup) Wait() {
	r := wg.runner()
	if r == nil {
		wg.wg.Wait()
		return
	}
	r.syncDo(syncOp{obj: &wg.o, verb: "Wait"}, func() bool { return wg.n == 0 },
		func() string { return fmt.Sprintf("the counter is %d: %d Done call(s) to come", wg.n, wg.n) }, func() {})
}

// Cond is a condition variable that the explorer sees, as sync.Cond is
// one: Wait unlocks L, waits for Signal or Broadcast and locks L again.
// Under the explorer L must be a *Mutex of this package. Use NewCond.
type Cond struct {
	// L is held while the condition is checked or changed.
	L sync.Locker

	o       syncObj
	once    sync.Once
	cond    *sync.Cond
	waiters []*gor        // in the order they waited
	woken   map[*gor]bool // signalled, not yet back
}

// NewCond returns a Cond with lock l.
func NewCond(l sync.Locker) *Cond { return &Cond{L: l} }

func (c *Cond) runner() *runner {
	return c.o.runnerOf("cond", func() { c.waiters, c.woken = nil, map[*gor]bool{} })
}

func (c *Cond) mutex() *Mutex {
	m, ok := c.L.(*Mutex)
	if !ok {
		panic(fmt.Sprintf("explore: a Cond in a world needs an *explore.Mutex as L, not %T", c.L))
	}
	return m
}

func (c *Cond) plain() *sync.Cond {
	c.once.Do(func() { c.cond = sync.NewCond(c.L) })
	return c.cond
}

// Wait unlocks c.L, waits to be signalled, and locks c.L again before it
// returns.
func (c *Cond) Wait() {
	r := c.runner()
	if r == nil {
		c.plain().Wait()
		return
	}
	m := c.mutex()
	m.runner()
	op := syncOp{obj: &c.o, verb: "Wait", extra: []*syncObj{&m.o}}
	g := r.cur
	r.syncDo(op, nil, nil, func() {
		if !m.locked {
			panic("sync: unlock of unlocked mutex")
		}
		m.locked, m.o.holder = false, nil
		c.waiters = append(c.waiters, g)
	})
	if g == nil {
		r.fail(Deadlock, "the world function waits on "+c.o.TraceName()+" while no goroutine runs yet")
		return
	}
	r.syncBlock(g, &syncWait{obj: &c.o, verb: "Wait", extra: []*syncObj{&m.o},
		ready: func() bool { return c.woken[g] && !m.locked },
		why: func() string {
			if c.woken[g] {
				return "signalled; its lock " + m.o.TraceName() + " is held by " + m.o.holderName()
			}
			return "no Signal or Broadcast to come"
		}})
	delete(c.woken, g)
	m.locked = true
	m.o.hold(r, g)
}

// Signal wakes the goroutine that has waited longest, if any.
func (c *Cond) Signal() {
	r := c.runner()
	if r == nil {
		c.plain().Signal()
		return
	}
	r.syncDo(syncOp{obj: &c.o, verb: "Signal"}, nil, nil, func() {
		if len(c.waiters) > 0 {
			c.woken[c.waiters[0]] = true
			c.waiters = c.waiters[1:]
		}
	})
}

// Broadcast wakes every waiting goroutine.
func (c *Cond) Broadcast() {
	r := c.runner()
	if r == nil {
		c.plain().Broadcast()
		return
	}
	r.syncDo(syncOp{obj: &c.o, verb: "Broadcast"}, nil, nil, func() {
		for _, g := range c.waiters {
			c.woken[g] = true
		}
		c.waiters = nil
	})
}

// Once runs a function once, as sync.Once does, and the explorer sees it:
// a goroutine calling Do while the function runs in another waits, and
// the explorer knows for whom.
type Once struct {
	o     syncObj
	once  sync.Once
	state uint8 // 0: not run, 1: running, 2: done
}

func (o *Once) runner() *runner { return o.o.runnerOf("once", func() { o.state = 0 }) }

// Do calls f if no call of Do has called it yet, and returns when f has
// returned, in whichever goroutine it ran.
func (o *Once) Do(f func()) {
	r := o.runner()
	if r == nil {
		o.once.Do(f)
		return
	}
	run := false
	r.syncDo(syncOp{obj: &o.o, verb: "Do"}, func() bool { return o.state != 1 },
		func() string { return "its function runs in " + o.o.holderName() },
		func() {
			if o.state == 0 {
				o.state, run = 1, true
				o.o.hold(r, r.cur)
			}
		})
	if !run {
		return
	}
	defer func() {
		// The end of f is a step of its own: waiters may go on.
		r.syncDo(syncOp{obj: &o.o, verb: "Do returns"}, nil, nil, func() { o.state, o.o.holder = 2, nil })
	}()
	f()
}

// Int64 is an atomic integer whose operations are choice points: a
// goroutine that spins on Load lets the others move. Outside a world it
// is an atomic.Int64.
type Int64 struct {
	o syncObj
	v atomic.Int64
}

func (v *Int64) runner() *runner { return v.o.runnerOf("int64", nil) }

func (v *Int64) step(verb string, fn func()) {
	if r := v.runner(); r != nil {
		r.syncDo(syncOp{obj: &v.o, verb: verb}, nil, nil, fn)
		return
	}
	fn()
}

// Load returns the value.
func (v *Int64) Load() (x int64) { v.step("Load", func() { x = v.v.Load() }); return x }

// Store sets the value.
func (v *Int64) Store(x int64) { v.step("Store", func() { v.v.Store(x) }) }

// Add adds delta and returns the new value.
func (v *Int64) Add(delta int64) (x int64) { v.step("Add", func() { x = v.v.Add(delta) }); return x }

// CompareAndSwap sets the value to new if it is old, and reports whether
// it did.
func (v *Int64) CompareAndSwap(old, new int64) (ok bool) {
	v.step("CompareAndSwap", func() { ok = v.v.CompareAndSwap(old, new) })
	return ok
}

// Bool is an atomic boolean whose operations are choice points, as Int64.
type Bool struct {
	o syncObj
	v atomic.Bool
}

func (v *Bool) runner() *runner { return v.o.runnerOf("bool", nil) }

func (v *Bool) step(verb string, fn func()) {
	if r := v.runner(); r != nil {
		r.syncDo(syncOp{obj: &v.o, verb: verb}, nil, nil, fn)
		return
	}
	fn()
}

// Load returns the value.
func (v *Bool) Load() (x bool) { v.step("Load", func() { x = v.v.Load() }); return x }

// Store sets the value.
func (v *Bool) Store(x bool) { v.step("Store", func() { v.v.Store(x) }) }

// CompareAndSwap sets the value to new if it is old, and reports whether
// it did.
func (v *Bool) CompareAndSwap(old, new bool) (ok bool) {
	v.step("CompareAndSwap", func() { ok = v.v.CompareAndSwap(old, new) })
	return ok
}
