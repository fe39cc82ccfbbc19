package domain

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/verbsim/verbsim/sim/trace"
)

type obj string

func (o *obj) TraceName() string { return string(*o) }

func newObj(name string) *obj { o := obj(name); return &o }

func TestLeaveRecordsAndSettles(t *testing.T) {
	d := New()
	var got []string
	settles := 0
	d.Lock()
	d.SetSinkLocked(func(r trace.Record) { got = append(got, r.Line()+" "+r.Kind.String()) })
	d.SetHooksLocked(Hooks{Settle: func() { settles++ }}, true)
	d.Unlock()
	a := newObj("a/cq#1")
	d.Enter(Op{Verb: "poll_cq", Obj: a})
	d.Leave(Op{Verb: "poll_cq", Obj: a}, nil)
	d.Enter(Op{Verb: "destroy_cq", Obj: a})
	d.Leave(Op{Verb: "destroy_cq", Obj: a, Rec: &trace.Record{Detail: "busy"}}, errors.New("EBUSY"))
	d.Enter(Op{})
	d.Leave(Op{}, nil) // not recorded
	d.Lock()
	d.Emit(a, trace.Record{Kind: trace.KindEvent, Name: "arm fired", Rule: "TEST-01"})
	d.Emit(nil, trace.Record{Kind: trace.KindFault, Name: "faults", Object: "fabric"})
	d.Unlock()
	want := []string{"a/cq#1: poll_cq verb", "a/cq#1: destroy_cq: busy (EBUSY) verb", "a/cq#1: arm fired (TEST-01) event", "fabric: faults fault"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("records %q, want %q", got, want)
	}
	if settles != 3 {
		t.Fatalf("%d settles, want 3", settles)
	}
}

func TestLeaveSettlesOnlyAfterKick(t *testing.T) {
	d := New()
	settles := 0
	d.Lock()
	d.SetHooksLocked(Hooks{Settle: func() { settles++ }, OnKick: true}, true)
	d.Unlock()
	verb := func(kick bool) {
		d.Enter(Op{})
		if kick {
			d.Kick()
		}
		d.Leave(Op{}, nil)
	}
	verb(false) // the first Leave settles: work may predate the hooks
	verb(false)
	verb(true)
	verb(false)
	verb(true)
	if settles != 3 {
		t.Fatalf("%d settles, want 3 (the first Leave and one per Kick)", settles)
	}
	// A sink makes every Leave slow, but settles still wait for a Kick.
	d.Lock()
	d.SetSinkLocked(func(trace.Record) {})
	d.Unlock()
	verb(false)
	verb(true)
	if settles != 4 {
		t.Fatalf("%d settles with a sink, want 4", settles)
	}
}

func TestEnterLeaveAllocatesNothing(t *testing.T) {
	d := New()
	a := newObj("x")
	n := testing.AllocsPerRun(1000, func() {
		op := Op{Verb: "post_send", Obj: a}
		d.Enter(op)
		d.Wake(a)
		d.Leave(op, nil)
	})
	if n != 0 {
		t.Fatalf("%v allocs per Enter/Leave, want 0", n)
	}
}

func BenchmarkEnterLeave(b *testing.B) {
	d := New()
	a := newObj("x")
	for b.Loop() {
		op := Op{Verb: "post_send", Obj: a}
		d.Enter(op)
		d.Leave(op, nil)
	}
}

func TestWaitWokenByAnotherGoroutine(t *testing.T) {
	d := New()
	a := newObj("a/chan#1")
	ready := false
	done := make(chan error)
	go func() {
		d.Enter(Op{})
		err := d.Wait(context.Background(), &Waiter{Verb: "get", Obj: a, For: "an event"}, func() bool { return ready })
		d.Leave(Op{}, nil)
		done <- err
	}()
	awaitWaiters(d, 1)
	d.Enter(Op{})
	ready = true
	d.Wake(a)
	d.Leave(Op{}, nil)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	d.Lock()
	defer d.Unlock()
	if n := len(d.Waiters()); n != 0 {
		t.Fatalf("%d waiters left", n)
	}
}

// TestWaitNotReadyBlocksFirst: WaitNotReady does not evaluate ready before
// it blocks (its caller just did), re-checks after a Wake, and leaves the
// table empty; TryEnter and FastLeave bracket it as Enter and Leave would.
func TestWaitNotReadyBlocksFirst(t *testing.T) {
	d := New()
	a := newObj("a/chan#1")
	ready, checks := false, 0
	done := make(chan error)
	go func() {
		if !d.TryEnter() {
			d.Enter(Op{})
		}
		err := d.WaitNotReady(context.Background(), &Waiter{Verb: "get", Obj: a, For: "an event"}, func() bool {
			checks++
			return ready
		})
		if !d.FastLeave() {
			t.Error("FastLeave false with no sink and no hooks")
		}
		d.Unlock()
		done <- err
	}()
	awaitWaiters(d, 1)
	d.Enter(Op{})
	if checks != 0 {
		t.Errorf("ready evaluated %d time(s) before the wait blocked", checks)
	}
	d.Wake(newObj("a/chan#1")) // another object of the same name: no wake-up
	ready = true
	d.Wake(a)
	d.Leave(Op{}, nil)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	d.Lock()
	defer d.Unlock()
	if n := len(d.Waiters()); n != 0 || checks != 1 {
		t.Fatalf("%d waiters left, ready evaluated %d time(s); want 0 and 1", n, checks)
	}
}

func TestWaitErrorNamesWhatWasPending(t *testing.T) {
	d := New()
	d.Lock()
	d.SetHooksLocked(Hooks{
		Now:     func() uint64 { return 7 },
		Pending: func() string { return "the retry timer of a/qp 0x11 due at t=4096" },
	}, false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	err := d.Wait(ctx, &Waiter{Verb: "ibv_get_cq_event", Obj: newObj("a/chan#1"), For: "a completion event"}, func() bool { return false })
	d.Unlock()
	if !errors.Is(err, context.DeadlineExceeded) || !IsWaitError(err) {
		t.Fatalf("err %v", err)
	}
	for _, s := range []string{"a/chan#1", "a completion event", "t=7", "retry timer of a/qp 0x11 due at t=4096"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not say %q", err, s)
		}
	}
}

func TestAutoWaitAdvancesTime(t *testing.T) {
	d := New()
	now, due := uint64(0), []uint64{100, 200, 300}
	d.Lock()
	defer d.Unlock()
	d.SetHooksLocked(Hooks{
		Now: func() uint64 { return now },
		Advance: func() bool {
			if len(due) == 0 {
				return false
			}
			now, due = due[0], due[1:]
			return true
		},
	}, true)
	if err := d.Wait(context.Background(), &Waiter{Obj: newObj("c")}, func() bool { return now >= 200 }); err != nil {
		t.Fatal(err)
	}
	if now != 200 {
		t.Fatalf("clock at %d, want 200: the wait must stop advancing once satisfied", now)
	}
	// Nothing can satisfy it: time runs out, then the wait blocks until
	// its context ends.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	err := d.Wait(ctx, &Waiter{Obj: newObj("c"), For: "x"}, func() bool { return false })
	if err == nil || now != 300 || !strings.Contains(err.Error(), "nothing is pending") {
		t.Fatalf("err %v at t=%d", err, now)
	}
	// A timeless wait never moves the clock.
	due = []uint64{400}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel2()
	if err := d.Wait(ctx2, &Waiter{Obj: newObj("c"), Timeless: true}, func() bool { return false }); err == nil || now != 300 {
		t.Fatalf("timeless wait: err %v at t=%d", err, now)
	}
}

// lockstep is a test scheduler: it runs one worker at a time and, at every
// verb boundary (Yield) or blocked wait (Block), passes the turn to the
// next runnable worker in round-robin order. Workers are known by the
// object their verbs act on.
type lockstep struct {
	mu      sync.Mutex
	workers []*worker
	byObj   map[Object]*worker
	blocked map[*Waiter]*worker
	early   map[*Waiter]bool // unblocked before Block was called
	arrived int
	cur     int
	log     []string
}

type worker struct {
	name     string
	turn     chan struct{}
	runnable bool
	done     bool
}

func newLockstep(objs ...Object) *lockstep {
	s := &lockstep{byObj: map[Object]*worker{}, blocked: map[*Waiter]*worker{}, early: map[*Waiter]bool{}, cur: -1}
	for _, o := range objs {
		w := &worker{name: o.TraceName(), turn: make(chan struct{}, 1)}
		s.workers = append(s.workers, w)
		s.byObj[o] = w
	}
	return s
}

// dispatchLocked gives the turn to the next runnable worker after cur.
func (s *lockstep) dispatchLocked() {
	n := len(s.workers)
	for i := 1; i <= n; i++ {
		j := (s.cur + i) % n
		if w := s.workers[j]; w.runnable && !w.done {
			s.cur = j
			w.runnable = false
			w.turn <- struct{}{}
			return
		}
	}
}

func (s *lockstep) Yield(op Op) {
	w := s.byObj[op.Obj]
	s.mu.Lock()
	w.runnable = true
	if s.arrived < len(s.workers) { // the start barrier: everyone arrives first
		s.arrived++
		if s.arrived == len(s.workers) {
			s.dispatchLocked()
		}
	} else {
		s.dispatchLocked()
	}
	s.mu.Unlock()
	<-w.turn
	s.mu.Lock()
	s.log = append(s.log, w.name+":"+op.Verb)
	s.mu.Unlock()
}

func (s *lockstep) Block(ctx context.Context, wt *Waiter) error {
	s.mu.Lock()
	w := s.workers[s.cur]
	if s.early[wt] {
		delete(s.early, wt)
		w.runnable = true
	} else {
		s.blocked[wt] = w
	}
	s.log = append(s.log, w.name+":blocked")
	s.dispatchLocked()
	s.mu.Unlock()
	select {
	case <-w.turn:
		s.mu.Lock()
		s.log = append(s.log, w.name+":resumed")
		s.mu.Unlock()
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *lockstep) Unblock(wt *Waiter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w, ok := s.blocked[wt]; ok {
		delete(s.blocked, wt)
		w.runnable = true
		return
	}
	s.early[wt] = true
}

func (s *lockstep) exit(o Object) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byObj[o].done = true
	s.dispatchLocked()
}

// run runs one controlled schedule of two workers and returns its log.
func runControlled(t *testing.T) string {
	d := New()
	a, b, ch := newObj("A"), newObj("B"), newObj("chan")
	s := newLockstep(a, b)
	d.SetScheduler(s)
	ready := false
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // A: two verbs, then a wait for B's event, then one more
		defer wg.Done()
		defer s.exit(a)
		for range 2 {
			d.Enter(Op{Verb: "a", Obj: a})
			d.Leave(Op{Verb: "a", Obj: a}, nil)
		}
		d.Enter(Op{Verb: "get", Obj: a})
		err := d.Wait(context.Background(), &Waiter{Verb: "get", Obj: ch, For: "an event"}, func() bool { return ready })
		d.Leave(Op{Verb: "get", Obj: a}, err)
		if err != nil {
			t.Error(err)
		}
		d.Enter(Op{Verb: "a", Obj: a})
		d.Leave(Op{Verb: "a", Obj: a}, nil)
	}()
	go func() { // B: four verbs; the third makes the event A waits for
		defer wg.Done()
		defer s.exit(b)
		for i := range 4 {
			d.Enter(Op{Verb: "b", Obj: b})
			if i == 2 {
				ready = true
				d.Wake(ch)
			}
			d.Leave(Op{Verb: "b", Obj: b}, nil)
		}
	}()
	wg.Wait()
	return strings.Join(s.log, " ")
}

func TestSchedulerInterleavesDeterministically(t *testing.T) {
	first := runControlled(t)
	want := "A:a B:b A:a B:b A:get A:blocked B:b A:resumed B:b A:a"
	// A and B alternate at every verb. A waits for the event after its
	// two verbs; B's third verb (the 'b' after A blocked) makes it, and
	// B's next Yield hands the turn to A, which finishes its get and
	// yields before its last verb, so B's last verb comes first.
	if first != want {
		t.Fatalf("schedule\n %s\nwant\n %s", first, want)
	}
	for range 20 {
		if got := runControlled(t); got != first {
			t.Fatalf("schedule differs between runs:\n %s\n %s", first, got)
		}
	}
}

// awaitWaiters returns once d's wait table holds n waiters (a goroutine of
// the test has blocked in Wait).
func awaitWaiters(d *Domain, n int) {
	for {
		d.Lock()
		got := len(d.Waiters())
		d.Unlock()
		if got == n {
			return
		}
		time.Sleep(time.Millisecond)
	}
}
