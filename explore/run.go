package explore

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/verbsim/verbsim/internal/simhook"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/trace"
)

// Failure is what a schedule that failed reports.
type Failure struct {
	Kind    Kind
	Message string // what went wrong, and who waits for what
	Step    int    // the step at which it was detected
	// Schedule is the number of schedules run when it was found, this one
	// included (1: the first).
	Schedule int
	// Token replays the schedule (Replay, verbsim explore -replay).
	Token string
	// Timeline is the annotated timeline of the schedule: every step, who
	// moved, the verbs and engine events with their results, and the CQs
	// and channels whenever they changed.
	Timeline string
	// Size is the size of the schedule the token replays: the shrunk one
	// unless Options.NoShrink was set. Unshrunk is the size of the
	// schedule as the strategy found it, and ShrinkRuns the schedules the
	// shrinker ran to get from one to the other.
	Size, Unshrunk Size
	ShrinkRuns     int
}

// Error renders the failure in one paragraph: kind, message, token.
func (f *Failure) Error() string {
	return fmt.Sprintf("explore: %v at step %d of schedule %d: %s\nreplay token: %s", f.Kind, f.Step, f.Schedule, f.Message, f.Token)
}

// picker is a strategy's decision for one choice point: the index of the
// action to take among en (at least two).
type picker interface {
	pick(r *runner, en []action) int
}

// drainLimit bounds the steps of tearing a schedule down after its
// context was cancelled.
const drainLimit = 10000

// runOnce runs one schedule of world with p making the choices. With
// timeline set it also records the annotated timeline.
func runOnce(world func(*World), p picker, maxSteps int, timeline bool, opts *Options) *runner {
	r := &runner{back: make(chan struct{}), picker: p, max: maxSteps, last: -3, budget: opts.budget, stuck: make(chan stuckReport, 1)}
	_, r.track = p.(stepper)
	r.ctx, r.cancel = context.WithCancel(context.Background())
	if timeline {
		r.log = &trace.Log{}
		r.timeline = &strings.Builder{}
	}
	exploring.Add(1)
	watchStart(r)
	defer func() {
		r.ended.Store(true)
		watchStop(r)
		exploring.Add(-1)
	}()
	w := &World{r: r}
	setupDone := make(chan struct{})
	r.inSetup = true
	go func() { // the world function, in a goroutine of its own so that Fatalf ends only it
		defer close(setupDone)
		id := goid()
		r.setupGoid.Store(id)
		r.holding.Store(id)
		enroll(id, member{r: r})
		defer unenroll(id)
		defer func() {
			if rec := recover(); rec != nil {
				r.fail(Panic, fmt.Sprintf("the world function panicked: %v", rec))
			}
		}()
		world(w)
	}()
	r.waitSetup(setupDone)
	r.inSetup = false
	r.path = r.setupHash()
	if r.timeline != nil {
		r.note("setup", "the world function")
	}
	if r.failure == nil {
		r.startNew()
	}
	if r.timeline != nil {
		r.note("start", "each goroutine runs to its first verb")
	}
	var buf []action
	for r.failure == nil {
		if r.steps >= r.max {
			r.fail(StepBound, fmt.Sprintf("the schedule passed %d steps (Options.MaxSteps): a livelock, or a world that needs more", r.max))
			break
		}
		en := r.enabled(buf)
		buf = en
		if len(en) == 0 {
			if r.fabric != nil {
				if _, future := r.fabric.Pending(); future > 0 {
					r.take(action{clock: true}, 1)
					continue
				}
			}
			r.quiescent(opts)
			break
		}
		i := 0
		if sp, ok := r.picker.(stepper); ok {
			if i = sp.choose(r, en); i < 0 {
				r.pruned = true
				break
			}
		} else if len(en) > 1 {
			if i = r.picker.pick(r, en); i < 0 { // the strategy has seen every schedule through here
				r.pruned = true
				break
			}
		} else if f, ok := r.picker.(forcedObserver); ok && !f.forced(r, en[0]) {
			r.pruned = true
			break
		}
		if len(en) > 1 {
			r.choices = append(r.choices, i)
			r.threads = append(r.threads, en[i].thread())
			if t := en[i].thread(); t != r.last && r.canContinue(en) {
				r.preempts++
			}
		}
		r.take(en[i], len(en))
	}
	if r.track && !r.pruned && r.failure != nil {
		r.pendingSteps()
	}
	// An overrun is the likely cause of whatever failed after it (a poll
	// that returned EIO, a lost wake-up): report it first.
	if f := r.failure; f != nil && f.Kind != Overrun && !opts.AllowOverrun {
		if over := r.overruns(); len(over) > 0 {
			r.failure = &Failure{Kind: Overrun, Step: f.Step, Message: strings.Join(over, "; ") + "; then " + f.Kind.String() + ": " + f.Message}
		}
	}
	r.teardown()
	return r
}

// take carries out action a, taken among n options, as the next step.
func (r *runner) take(a action, n int) {
	r.steps++
	if r.track {
		r.infos = append(r.infos, r.stepInfo(a))
	}
	if g := a.g; g != nil && g.state == gYield {
		r.noteVerb(g.op, g.name)
	}
	r.hashStep(a)
	verb := ""
	if r.timeline != nil && !a.clock {
		verb = r.nextVerb(a)
	}
	r.do(a)
	if r.timeline != nil {
		r.noteAction(a, n, verb)
	}
}

// waitSetup waits for the world function to return, or for the watchdog
// to see it blocked where the explorer cannot see.
func (r *runner) waitSetup(done chan struct{}) {
	for {
		select {
		case <-done:
			r.holding.Store(0)
			return
		case rep := <-r.stuck:
			if rep.goid != r.setupGoid.Load() {
				continue
			}
			if what, _ := parked(allStacks(), rep.goid); what == "" {
				continue
			}
			r.setupLost.Store(true)
			r.hasLost.Store(true)
			r.holding.Store(0)
			r.fail(Unseen, fmt.Sprintf("the world function is blocked in %s%s, which the explorer cannot see: no goroutine of the world runs before it returns", rep.what, rep.where))
			return
		}
	}
}

// forcedObserver is a picker that is also told of the steps that had one
// option (the exhaustive search's sleep sets follow every step); false
// stops the schedule as redundant.
type forcedObserver interface {
	forced(r *runner, a action) bool
}

// canContinue reports whether the thread that moved last is among en.
func (r *runner) canContinue(en []action) bool {
	for _, a := range en {
		if a.thread() == r.last {
			return true
		}
	}
	return false
}

// quiescent runs the detectors when nothing can move.
func (r *runner) quiescent(opts *Options) {
	var lost, destroy, dead []string
	allDone := true
	for _, g := range r.gs {
		if g.state != gBlocked {
			continue
		}
		if w := g.waiter; w != nil {
			desc := fmt.Sprintf("%s blocked: %v", g.name, w)
			if hs := r.holds(g); len(hs) > 0 {
				desc += ", holding " + strings.Join(hs, " and ")
			}
			switch h := simhook.HandleOf(w.Obj).(type) {
			case *sim.CompChannel:
				cqs, _ := r.cqs()
				full := false
				for _, q := range cqs {
					if q.h.Channel() == h && q.h.Len() > 0 {
						full = true
						lost = append(lost, fmt.Sprintf("%s, while %s holds %d completion(s) and no event is queued for it: %s",
							desc, r.display(q.h), q.h.Len(), r.lostCause(q.h)))
					}
				}
				if !full {
					desc += "; " + r.channelCause(h)
				}
			case *sim.CQ:
				if strings.Contains(w.For, "ack") {
					destroy = append(destroy, desc+"; "+r.ackCause(h))
				}
			}
			if strings.Contains(w.For, "ack") && simhook.HandleOf(w.Obj) != nil {
				if _, ok := simhook.HandleOf(w.Obj).(*sim.CQ); !ok {
					destroy = append(destroy, desc+"; "+r.ackState())
				}
			}
			if !g.daemon {
				allDone = false
				dead = append(dead, desc)
			}
			continue
		}
		if !g.daemon {
			allDone = false
			dead = append(dead, r.waitDesc(g))
		}
	}
	if over := r.overruns(); len(over) > 0 && !opts.AllowOverrun {
		r.fail(Overrun, strings.Join(over, "; "))
		return
	}
	switch {
	case len(lost) > 0:
		r.fail(LostWakeup, strings.Join(lost, "; "))
	case len(destroy) > 0:
		r.fail(DestroyBlocked, strings.Join(destroy, "; "))
	case len(dead) > 0:
		msg := strings.Join(dead, "; ")
		if c := r.cycle(); c != "" {
			msg += "; a cycle: " + c
		}
		r.fail(Deadlock, msg)
	}
	if r.failure != nil {
		return
	}
	if un := r.uncompleted(); len(un) > 0 {
		r.fail(Uncompleted, "nothing can move and "+strings.Join(un, "; "))
		return
	}
	if !allDone {
		return
	}
	for _, fn := range r.finally {
		fn()
	}
	if r.failure != nil || opts.AllowUnconsumed {
		return
	}
	cqs, _ := r.cqs()
	var left []string
	for _, q := range cqs {
		if n := q.h.Len(); n > 0 {
			left = append(left, fmt.Sprintf("%s holds %d completion(s)", r.display(q.h), n))
		}
	}
	if len(left) > 0 {
		r.fail(Unconsumed, "every goroutine finished and "+strings.Join(left, ", "))
	}
}

// overruns describes every CQ of the world that overran.
func (r *runner) overruns() []string {
	var out []string
	for _, o := range r.objs {
		q, ok := simhook.HandleOf(o).(*sim.CQ)
		if !ok {
			continue
		}
		s := q.Snapshot()
		if s.Stats.Overruns > 0 || s.Stats.Dropped > 0 || s.Overrun {
			out = append(out, fmt.Sprintf("%s (capacity %d) overran: %d completion(s) dropped, %d CQ_ERR event(s) raised",
				r.nameOf(q), s.CQE, s.Stats.Dropped, s.Stats.Overruns))
		}
	}
	return out
}

// uncompleted describes every QP of the world with send work requests
// posted and not completed. Receives waiting for a message are not
// listed: a server posts them ahead.
func (r *runner) uncompleted() []string {
	var out []string
	for _, o := range r.objs {
		q, ok := o.(*sim.QP)
		if !ok {
			continue
		}
		if send, recv := q.Outstanding(); send > 0 {
			out = append(out, fmt.Sprintf("QP %#x has %d send work request(s) posted and never completed (%d receive(s) posted)", q.Num(), send, recv))
		}
	}
	return out
}

// ackState describes the events read and acked on every CQ that has some
// unacknowledged.
func (r *runner) ackState() string {
	cqs, _ := r.cqs()
	var parts []string
	for _, q := range cqs {
		s := q.h.Snapshot()
		if s.CompRead != s.CompAcked || s.AsyncRead != s.AsyncAcked {
			parts = append(parts, fmt.Sprintf("%s: %d completion event(s) read, %d acked", q.name, s.CompRead, s.CompAcked))
		}
	}
	if len(parts) == 0 {
		return "no CQ has unacknowledged events"
	}
	return strings.Join(parts, "; ")
}

// teardown ends the schedule: cancel the goroutines' context, let them
// return (one at a time, in order), abort waits that no context ends, end
// goroutines that keep going, and close the fabric.
func (r *runner) teardown() {
	r.tearing = true
	r.cancel()
	steps := 0
	for {
		var next *gor
		for _, g := range r.gs {
			if g.state != gDone && g.enabled() {
				next = g
				break
			}
		}
		if next == nil {
			if r.fabric != nil && len(r.fabric.Ready()) > 0 {
				r.fabric.Step()
				continue
			}
			stuck := false
			for _, g := range r.gs {
				if g.state == gBlocked {
					g.abort, stuck = true, true
				}
			}
			if !stuck {
				break
			}
			continue
		}
		steps++
		if steps > drainLimit && !next.kill {
			for _, g := range r.gs {
				if g.state != gDone && !g.kill {
					g.kill = true
					if r.failure == nil {
						r.tearing = false
						r.fail(NoExit, fmt.Sprintf("%s kept calling verbs after its context ended; it was stopped", g.name))
						r.tearing = true
					}
				}
			}
		}
		r.give(next)
		r.startNew()
	}
	if r.d != nil {
		r.d.SetScheduler(nil)
	}
	if r.fabric != nil {
		r.fabric.Close()
	}
	runtime.Gosched()
}

// RunPlain runs world once without the explorer, as an ordinary test
// would: its fabric in Auto mode, its goroutines started at once and
// scheduled by Go. It returns when every goroutine started with Go has
// returned (it waits for ever if one never does: nothing here detects a
// deadlock or a lost wake-up); daemons then see their context end and are
// waited for, the Finally checks run, and the fabric is closed. It returns
// the first failure a goroutine reported through Errorf or Fatalf, or a
// panic, with Step 0 and no token; nil otherwise.
//
// A plain run is one interleaving Go happened to choose, so passing tells
// little; its cost is the floor the explorer's cost per schedule is
// measured against (`verbsim bench`).
func RunPlain(world func(*World)) *Failure {
	r := &runner{plain: &sync.WaitGroup{}}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	r.plain.Add(1)
	go func() { // its own goroutine, so that Fatalf in world ends only it
		defer r.plain.Done()
		defer func() {
			if rec := recover(); rec != nil {
				r.fail(Panic, fmt.Sprintf("the world function panicked: %v\n%s", rec, trimStack(debug.Stack())))
			}
		}()
		world(&World{r: r})
	}()
	r.plain.Wait()
	r.cancel()
	r.daemons.Wait()
	for _, fn := range r.finally {
		fn()
	}
	if r.fabric != nil {
		r.fabric.Close()
	}
	return r.failure
}
