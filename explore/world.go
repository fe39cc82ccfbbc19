package explore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/internal/simhook"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/check"
	"github.com/verbsim/verbsim/sim/trace"
)

// World is one run of a world: the fabric, the goroutines and the
// assertions of one schedule. The world function passed to Check, Replay
// or Explore receives a fresh World for every schedule; it builds the
// fabric (NewFabric or Fabric), creates what the goroutines share, and
// starts them with Go and Daemon. The world function itself runs before
// any goroutine moves and is not explored.
type World struct {
	r *runner
}

// NewFabric makes the world's fabric from cfg. The explorer drives it: the
// fabric runs in Manual mode (cfg.Mode is ignored) and the explorer picks
// the engine's ready events (cfg.Chooser and cfg.Schedule are ignored), so
// every packet delivery and completion is a choice point. When cfg.Faults
// has fault probabilities, the fate of every packet (deliver, drop,
// duplicate, delay) is a choice point too, within Options.MaxFaults, and
// the fabric's seeded source no longer decides it. A world has one
// fabric; a second call returns an error.
func (w *World) NewFabric(cfg sim.Config) (*sim.Fabric, error) {
	r := w.r
	if r.fabric != nil {
		return nil, errors.New("explore: the world already has a fabric")
	}
	if r.plain != nil { // an unexplored run, for the benchmark: Auto mode, no scheduler
		cfg.Mode = sim.Auto
		f, err := sim.NewFabric(cfg)
		r.fabric = f
		return f, err
	}
	cfg.Mode = sim.Manual
	cfg.Schedule = sim.FIFO
	cfg.Chooser = r.choose
	if r.log != nil {
		cfg.Trace = r.log
	}
	if r.check || cfg.Check != nil {
		cfg.Check = r.checkConfig(cfg.Check)
	}
	f, err := sim.NewFabric(cfg)
	if err != nil {
		return nil, err
	}
	d := simhook.DomainOf(f)
	if d == nil {
		f.Close()
		return nil, errors.New("explore: the fabric has no domain")
	}
	r.fabric, r.d = f, d
	d.SetScheduler(r)
	simhook.SetFaultChooser(f, r.chooseFault)
	return f, nil
}

// Fabric returns the world's fabric, making it with two devices named "a"
// and "b" when NewFabric has not been called. It panics if the fabric
// cannot be made, which does not happen with that configuration.
func (w *World) Fabric() *sim.Fabric {
	if w.r.fabric == nil {
		if _, err := w.NewFabric(sim.Config{Devices: []sim.DeviceConfig{{Name: "a"}, {Name: "b"}}}); err != nil {
			panic(err)
		}
	}
	return w.r.fabric
}

// Go starts a goroutine of the world. It runs only when the explorer gives
// it the turn, and must return when its work is done or when ctx ends (the
// explorer cancels ctx when the schedule ends, and reports a goroutine
// still blocked at quiescence as a deadlock). It must reach the other
// goroutines only through verbs of the world's fabric and the explorer's
// synchronisation types (Mutex, Chan, WaitGroup...), and must not start
// goroutines of its own with the go statement: use Go. Only one goroutine
// moves at a time, so a Go variable they share is never raced on, but
// guard it with a Mutex all the same: the reduction assumes that the code
// between two verbs touches nothing another goroutine reads or writes, and
// may leave out the interleavings of an unguarded variable (or set
// Options.NoReduction).
func (w *World) Go(name string, fn func(ctx context.Context)) { w.r.spawn(name, fn, false) }

// Daemon starts a goroutine like Go that may still be blocked when
// everything else has finished: a server's event loop waiting for the
// next request. It is not a deadlock for a daemon to wait there (a lost
// wake-up still is: blocked in ibv_get_cq_event while its CQ holds
// completions); the explorer cancels its ctx when the schedule ends.
func (w *World) Daemon(name string, fn func(ctx context.Context)) { w.r.spawn(name, fn, true) }

// Errorf records a failure of the world's own assertions, as t.Errorf
// does; the schedule stops at the next choice point and is reported with
// its token and timeline.
func (w *World) Errorf(format string, args ...any) {
	w.r.fail(Assertion, fmt.Sprintf(format, args...))
}

// Fatalf is Errorf followed by the end of the calling goroutine
// (runtime.Goexit, as t.FailNow); in the world function it ends the
// schedule.
func (w *World) Fatalf(format string, args ...any) {
	w.r.fail(Assertion, fmt.Sprintf(format, args...))
	runtime.Goexit()
}

// Finally registers a check to run when the schedule ends with every
// goroutine started by Go finished (daemons may still wait): assertions
// about the final state, which report through Errorf.
func (w *World) Finally(fn func()) { w.r.finally = append(w.r.finally, fn) }

// Name returns the name of the goroutine that calls it ("" in the world
// function).
func (w *World) Name() string {
	if g := w.r.cur; g != nil {
		return g.name
	}
	return ""
}

// gstate is where a goroutine of the world is.
type gstate uint8

const (
	gNew     gstate = iota // started, not yet run
	gYield                 // paused before a verb
	gBlocked               // in a blocking wait
	gDone                  // returned
	gLost                  // blocked where the explorer cannot see (Unseen)
)

type gor struct {
	id     int
	name   string
	fn     func(context.Context)
	daemon bool
	state  gstate
	op     domain.Op // the verb it is paused before (gYield)
	waiter *domain.Waiter
	bctx   context.Context
	woken  bool
	abort  bool // Block returns errAborted: the schedule is being torn down
	kill   bool // Yield ends the goroutine: it did not return after cancel
	turn   chan struct{}
	// sop is the operation on a synchronisation object it is paused
	// before (gYield), sw the one it is blocked in (gBlocked); nil for a
	// verb or a wait of the domain.
	sop *syncOp
	sw  *syncWait
	// goid is the goroutine's number (goid.go); creator the step that
	// started it (-1: the world function).
	goid    atomic.Uint64
	creator int
	// lost: blocked where the explorer cannot see (Unseen); it is left
	// alone and its end is not waited for.
	lost atomic.Bool
}

var errAborted = errors.New("explore: the schedule ended while this wait was blocked")

func (g *gor) enabled() bool {
	switch g.state {
	case gNew, gYield:
		return true
	case gBlocked:
		if g.sw != nil {
			return g.abort || g.sw.ready()
		}
		return g.woken || g.abort || g.bctx.Err() != nil
	}
	return false
}

// Kind classifies a failure.
type Kind uint8

// The kinds of failure the explorer detects.
const (
	// LostWakeup: a goroutine waits in ibv_get_cq_event for ever while a
	// CQ of its channel holds completions and nothing can run.
	LostWakeup Kind = iota + 1
	// DestroyBlocked: a destroy waits for acks of events that were read
	// and never acknowledged, and nothing can run.
	DestroyBlocked
	// Deadlock: a goroutine started with Go is blocked and nothing can run.
	Deadlock
	// Unconsumed: every goroutine started with Go finished and a CQ still
	// holds completions nobody polled.
	Unconsumed
	// Panic: a goroutine of the world panicked.
	Panic
	// Assertion: the world's own check failed (World.Errorf, Fatalf).
	Assertion
	// StepBound: the schedule took more steps than Options.MaxSteps: a
	// livelock, or a world that needs a larger bound.
	StepBound
	// NoExit: a goroutine kept running after its context ended.
	NoExit
	// Overrun: a CQ overran during the schedule (more completions than
	// its capacity: IBV_EVENT_CQ_ERR raised, completions dropped);
	// reported at quiescence before any other finding, as their likely
	// cause. Options.AllowOverrun turns it off.
	Overrun
	// Uncompleted: nothing can move any more (no goroutine, no engine
	// event, no timer) and a QP still has send work requests posted and
	// never completed.
	Uncompleted
	// Unseen: a goroutine of the world blocked where the explorer cannot
	// see: on a Go channel, a sync.Mutex, a sync.WaitGroup or another of
	// Go's own primitives instead of the explorer's (Mutex, Chan, ...).
	// Nothing else can move while it holds the turn; the message names
	// what it waits in and where. The goroutine is left blocked.
	Unseen
	// Misuse: the verbs sanitizer (Options.Check, package sim/check)
	// found a misuse as it happened: the message is its finding, with the
	// rule it breaks. A world that hangs is then reported with why (a
	// wait that can never end, a lost wake-up in the making) at the verb
	// that made it so, not only once nothing can move.
	Misuse
)

var kindNames = [...]string{"", "lost wake-up", "destroy blocked on unacked events", "deadlock",
	"completions never consumed", "panic", "assertion", "step bound", "goroutine does not exit",
	"CQ overrun", "work requests never completed", "blocked outside the explorer", "verbs misuse"}

// String names the kind.
func (k Kind) String() string {
	if int(k) < len(kindNames) && k > 0 {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// action is one thing the explorer may let happen next: a goroutine's
// next step, an engine event (by its sequence number), or the clock; or,
// at a draw inside a step, one outcome: for a packet-fault draw the
// packet's fate, for a select with several cases ready the case taken.
type action struct {
	g     *gor // nil for the engine or the clock
	seq   uint64
	clock bool
	ev    sim.ReadyEvent
	fault bool // an outcome of a fault draw: out
	out   simhook.FaultOutcome
	sel   bool // an outcome of a select draw: case alt
	alt   int
}

// draw reports whether the action is the outcome of a draw inside a step.
func (a action) draw() bool { return a.fault || a.sel }

// thread is the identity a strategy gives the action: the goroutine's
// index, -1 for the engine, -2 for the clock, for the outcome of a fault
// draw -10 (deliver), -11 (drop), -12 (duplicate), -13 (a delay of 1
// tick), -14 (a longer delay), and for a select's case k -20-k.
func (a action) thread() int {
	switch {
	case a.g != nil:
		return a.g.id
	case a.clock:
		return -2
	case a.fault:
		t := -10 - int(a.out.Kind)
		if a.out.Kind == simhook.FaultDelay && a.out.Delay > 1 {
			t--
		}
		return t
	case a.sel:
		return -20 - a.alt
	}
	return -1
}

// runner runs one schedule of a world. Its state is touched only by the
// thread that has the turn (the controller, or the one goroutine it let
// run), and the turn passes through channels, so it needs no lock.
type runner struct {
	check   bool // Options.Check
	fabric  *sim.Fabric
	d       *domain.Domain
	gs      []*gor
	cur     *gor
	back    chan struct{}
	ctx     context.Context
	cancel  context.CancelFunc
	objs    []any
	finally []func()
	picker  picker
	choices []int // the index picked at every decision with more than one option
	threads []int // the thread (action.thread) picked at each of them
	steps   int
	max     int
	failure *Failure
	tearing bool
	chosen  uint64 // the Seq of the engine event Step runs
	last    int    // the thread of the last action (action.thread)
	// preempts counts the decisions that switched away from the thread
	// that moved last while it could have gone on.
	preempts int
	// budget bounds the faults a schedule draws (-1: no bound); faults
	// counts those drawn (every outcome but deliver).
	budget, faults int
	fbuf           []action
	// pruned: the strategy stopped the schedule early because every
	// schedule through it is equivalent to one already run (sleep sets).
	pruned bool

	log      *trace.Log // the timeline's trace, nil when no timeline is wanted
	timeline *strings.Builder
	lastView map[string]string // the last state line written, by object

	// An unexplored run (RunPlain): plain is set, daemons counts its
	// daemons apart, and failMu guards failure (its goroutines run at once).
	plain   *sync.WaitGroup
	daemons sync.WaitGroup
	failMu  sync.Mutex

	// syncs are the synchronisation objects the world used, in the order
	// of first use (sync.go); ended marks the schedule over, so that an
	// object kept from it binds to the next one.
	syncs []*syncObj
	ended atomic.Bool
	// hist is the history of the world's CQs, labels the names the world
	// gave its objects (cause.go).
	hist   map[*sim.CQ]*cqHist
	labels map[any]string
	// Look-ups of footprint.go.
	objIdx  map[any]int
	qpByNum map[qpKey]*sim.QP

	// The watchdog's view (watchdog.go): the goroutine that holds the
	// turn (its goid; the world function's while it runs), the number of
	// turns handed back, and the report of a goroutine blocked where the
	// explorer cannot see.
	holding  atomic.Uint64
	progress atomic.Uint64
	stuck    chan stuckReport
	hasLost  atomic.Bool
	// The world function's goroutine, and whether it was given up.
	setupGoid atomic.Uint64
	setupLost atomic.Bool

	// track keeps what the partial-order reduction needs (dpor.go): every
	// step's actor and footprint, and the actors of the engine's events.
	track     bool
	infos     []stepInfo
	evActor   map[uint64]actor // by the event's Seq
	evCreator map[uint64]int   // the step that created each event, by Seq
	keyN      map[uint64]int   // events seen per key, for their actors
	pending   []stepInfo       // the steps still enabled when the schedule stopped
	// path hashes the steps taken, for the world identity of a token;
	// setupVerbs the verbs the world function called (inSetup: while it
	// runs).
	path       uint64
	setupVerbs uint64
	inSetup    bool
}

// holder returns the goid of the goroutine holding the turn, 0 when the
// controller has it.
func (r *runner) holder() uint64 { return r.holding.Load() }

func (r *runner) spawn(name string, fn func(context.Context), daemon bool) {
	if r.plain != nil {
		wg := r.plain
		if daemon {
			wg = &r.daemons
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if rec := recover(); rec != nil {
					r.fail(Panic, fmt.Sprintf("%s panicked: %v\n%s", name, rec, trimStack(debug.Stack())))
				}
			}()
			fn(r.ctx)
		}()
		return
	}
	g := &gor{id: len(r.gs), name: name, fn: fn, daemon: daemon, turn: make(chan struct{}, 1), creator: r.steps - 1}
	r.gs = append(r.gs, g)
	go func() {
		defer func() {
			if g.lost.Load() { // the schedule gave it up (Unseen): nobody waits
				return
			}
			if rec := recover(); rec != nil {
				r.fail(Panic, fmt.Sprintf("%s panicked: %v\n%s", g.name, rec, trimStack(debug.Stack())))
			}
			g.state = gDone
			r.back <- struct{}{}
		}()
		<-g.turn
		if g.kill {
			return
		}
		id := goid()
		g.goid.Store(id)
		r.holding.Store(id)
		enroll(id, member{r, g})
		defer unenroll(id)
		g.fn(r.ctx)
	}()
}

// trimStack keeps the frames of a panic's stack from the world's code on.
func trimStack(b []byte) string {
	s := string(b)
	if i := strings.Index(s, "panic("); i >= 0 {
		if j := strings.Index(s[i:], "\n"); j >= 0 {
			s = s[i+j+1:]
		}
	}
	lines := strings.Split(s, "\n")
	if len(lines) > 16 {
		lines = lines[:16]
	}
	return strings.Join(lines, "\n")
}

func (r *runner) fail(k Kind, msg string) {
	if r.plain != nil {
		r.failMu.Lock()
		defer r.failMu.Unlock()
	}
	if r.failure == nil && !r.tearing {
		r.failure = &Failure{Kind: k, Message: msg, Step: r.steps}
	}
}

// Yield is the scheduler's hook before every verb: the running goroutine
// hands the turn back to the controller and waits to be picked.
func (r *runner) Yield(op domain.Op) {
	g := r.cur
	if r.hasLost.Load() {
		r.exitIfLost()
	}
	if g == nil { // the controller's own calls: the world function, Step, views
		if r.inSetup {
			r.setupVerbs = mixString(r.setupVerbs, op.Verb)
			r.noteVerb(op, "the world function")
		}
		return
	}
	if g.kill {
		runtime.Goexit()
	}
	g.state, g.op = gYield, op
	r.back <- struct{}{}
	<-g.turn
	if g.kill {
		runtime.Goexit()
	}
}

// Block is the scheduler's hook for a blocking wait.
func (r *runner) Block(ctx context.Context, w *domain.Waiter) error {
	g := r.cur
	if r.hasLost.Load() {
		r.exitIfLost()
	}
	if g == nil {
		return errors.New("explore: a blocking wait in the world function, where nothing else can run")
	}
	g.state, g.waiter, g.bctx, g.woken = gBlocked, w, ctx, false
	r.back <- struct{}{}
	<-g.turn
	g.waiter = nil
	switch {
	case g.woken:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return errAborted
}

// Unblock marks the goroutine blocked in w runnable.
func (r *runner) Unblock(w *domain.Waiter) {
	for _, g := range r.gs {
		if g.state == gBlocked && g.waiter == w {
			g.woken = true
		}
	}
}

// Created lists the objects of the world (domain.Observer).
func (r *runner) Created(obj any) { r.objs = append(r.objs, obj) }

// choose is the fabric's Chooser: the event the explorer picked.
func (r *runner) choose(ready []sim.ReadyEvent) int {
	for i, e := range ready {
		if e.Seq == r.chosen {
			return i
		}
	}
	return 0
}

// chooseFault is the fabric's packet-fault chooser: a draw is a decision
// of the strategy among the outcomes the configured faults allow (no
// fault first), unless the schedule has drawn its budget of faults, or the
// schedule is being torn down: then the packet is delivered.
func (r *runner) chooseFault(d *simhook.FaultDraw) int {
	deliver := d.Outcomes[0].Kind == simhook.FaultDeliver
	if deliver && (r.tearing || r.picker == nil || (r.budget >= 0 && r.faults >= r.budget)) {
		return 0
	}
	en := r.fbuf[:0]
	for _, o := range d.Outcomes {
		en = append(en, action{fault: true, out: o})
	}
	r.fbuf = en
	i := 0
	if len(en) > 1 && !r.tearing && r.picker != nil {
		i = r.picker.pick(r, en)
		if i < 0 || i >= len(en) {
			i = 0
		}
		r.choices = append(r.choices, i)
		r.threads = append(r.threads, en[i].thread())
	}
	if d.Outcomes[i].Kind != simhook.FaultDeliver {
		r.faults++
	}
	return i
}

// chooseCase is a select's draw among n ready cases: a decision of the
// strategy, as a fault draw is.
func (r *runner) chooseCase(n int) int {
	if r.tearing || r.picker == nil {
		return 0
	}
	en := r.fbuf[:0]
	for i := range n {
		en = append(en, action{sel: true, alt: i})
	}
	r.fbuf = en
	i := r.picker.pick(r, en)
	if i < 0 || i >= n {
		i = 0
	}
	r.choices = append(r.choices, i)
	r.threads = append(r.threads, en[i].thread())
	return i
}

// give runs g until its next choice point.
func (r *runner) give(g *gor) {
	r.cur = g
	r.holding.Store(g.goid.Load()) // 0 before its first turn: it stores its own
	g.turn <- struct{}{}
	for waiting := true; waiting; {
		select {
		case <-r.back:
			waiting = false
		case rep := <-r.stuck:
			if r.lose(g, rep) {
				waiting = false
			}
		}
	}
	r.holding.Store(0)
	r.progress.Add(1)
	r.cur = nil
}

// lose gives up g, which the watchdog saw blocked where the explorer
// cannot see, if it still is (the report may be late): the schedule fails
// with Unseen and g is left alone.
func (r *runner) lose(g *gor, rep stuckReport) bool {
	if rep.goid == 0 || rep.goid != r.holder() {
		return false
	}
	if what, _ := parked(allStacks(), rep.goid); what == "" {
		return false
	}
	g.lost.Store(true)
	r.hasLost.Store(true)
	g.state = gLost
	r.fail(Unseen, fmt.Sprintf("%s is blocked in %s%s, which the explorer cannot see: nothing else can move while it holds the turn. "+
		"Use the explorer's types (explore.Mutex, explore.Chan, explore.WaitGroup, ...) or verbs for what the goroutines of a world wait on; the goroutine is left blocked",
		g.name, rep.what, rep.where))
	return true
}

// exitIfLost ends the calling goroutine if the schedule gave it up: it
// was blocked where the explorer could not see and something woke it
// since.
func (r *runner) exitIfLost() {
	id := goid()
	if r.setupLost.Load() && r.setupGoid.Load() == id {
		runtime.Goexit()
	}
	for _, g := range r.gs {
		if g.lost.Load() && g.goid.Load() == id {
			runtime.Goexit()
		}
	}
}

// startNew runs every goroutine that has not started up to its first
// choice point, in the order they were started.
func (r *runner) startNew() {
	for i := 0; i < len(r.gs); i++ {
		if g := r.gs[i]; g.state == gNew {
			r.give(g)
		}
	}
}

// enabled lists what may happen next: goroutines in creation order, then
// the engine's ready events in the order they were created, but for the
// packets behind an earlier packet of their path, which cannot arrive
// before it (XFER-32).
func (r *runner) enabled(buf []action) []action {
	buf = buf[:0]
	for _, g := range r.gs {
		if g.enabled() {
			buf = append(buf, action{g: g})
		}
	}
	if r.fabric != nil {
		ready := r.fabric.Ready()
		if r.track {
			r.labelEvents(ready)
		}
		for _, e := range ready {
			if !e.Behind {
				buf = append(buf, action{seq: e.Seq, ev: e})
			}
		}
	}
	return buf
}

// do carries out a.
func (r *runner) do(a action) {
	r.last = a.thread()
	switch {
	case a.g != nil:
		r.give(a.g)
		r.startNew()
	case a.clock:
		r.fabric.AdvanceToNext()
	default:
		r.chosen = a.seq
		r.fabric.Step()
	}
}

// named is a CQ or channel handle of the world and its trace name.
type named[H any] struct {
	h    H
	name string
}

// cqs returns the world's CQs and channels that are not destroyed, in the
// order they were created.
func (r *runner) cqs() (cqs []named[*sim.CQ], chans []named[*sim.CompChannel]) {
	for _, o := range r.objs {
		n := ""
		if t, ok := o.(domain.Object); ok {
			n = t.TraceName()
		}
		switch h := simhook.HandleOf(o).(type) {
		case *sim.CQ:
			if !h.Snapshot().Destroyed { // a CQ whose destroy waits for acks is listed
				cqs = append(cqs, named[*sim.CQ]{h, n})
			}
		case *sim.CompChannel:
			if !h.Destroyed() {
				chans = append(chans, named[*sim.CompChannel]{h, n})
			}
		}
	}
	return cqs, chans
}

// nameOf returns the trace name of handle h of the world.
func (r *runner) nameOf(h any) string {
	for _, o := range r.objs {
		if simhook.HandleOf(o) == h {
			if t, ok := o.(domain.Object); ok {
				return t.TraceName()
			}
		}
	}
	return fmt.Sprint(h)
}

// checkConfig is the sanitizer of a world's fabric: the world's own
// configuration (nil: every check but the leak check, since a world's
// objects live until the schedule ends), each finding a Misuse failure.
func (r *runner) checkConfig(own *check.Config) *check.Config {
	c := check.Config{Checks: check.All.Without(check.Leak), Output: io.Discard}
	if own != nil {
		c = *own
	}
	report := c.Report
	c.Report = func(f check.Finding) {
		if report != nil {
			report(f)
		}
		r.fail(Misuse, f.String())
	}
	return &c
}
