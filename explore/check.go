package explore

import (
	"fmt"
	"testing"
	"time"
)

// Options configure an exploration.
type Options struct {
	// Strategy picks at each choice point: Auto (the default: exhaustive
	// search deepened one preemption at a time, with PCT and the random
	// walk between, within the budget), Random, PCT or Exhaustive.
	Strategy Strategy
	// Seed seeds Random and PCT; the same seed explores the same
	// schedules.
	Seed uint64
	// Schedules bounds the schedules run: the budget (default 10,000 for
	// Auto, 200 for the others). Exhaustive stops there too, and its
	// Result then says it was not complete.
	Schedules int
	// Time, if set, bounds the wall time of the exploration too: it stops
	// after the first schedule that ends past it (Result.TimedOut). The
	// command line sets it; a test should not, since how far a search
	// gets in a given time depends on the machine.
	Time time.Duration
	// Depth is PCT's bug depth d: the number of ordering constraints the
	// bug needs (default 2).
	Depth int
	// Preemptions bounds Exhaustive's preemptions per schedule (default 2;
	// negative: none allowed; Unbounded: no bound, every schedule).
	Preemptions int
	// MaxSteps bounds the steps of one schedule (default 2000); a schedule
	// that reaches it fails with StepBound.
	MaxSteps int
	// NoReduction turns off Exhaustive's partial-order reduction (dynamic
	// partial-order reduction with sleep sets, dpor.go): every schedule
	// within the bound is run, equivalent ones too.
	NoReduction bool
	// AllowOverrun lets CQs overrun: no Overrun failure.
	AllowOverrun bool
	// NoShrink reports a failure with the schedule that found it, as it
	// was: no shrinking (see Failure.Size).
	NoShrink bool
	// AllowUnconsumed leaves completions in the CQs at the end alone: no
	// Unconsumed failure.
	AllowUnconsumed bool
	// MaxFaults bounds the packet faults one schedule may draw when the
	// world's fabric has fault probabilities (sim.Config.Faults,
	// Fabric.SetFaults): past it every packet is delivered. 0 takes the
	// default, 1 for Exhaustive (so that its search stays finite) and no
	// bound for Random and PCT; negative: no faults at all.
	MaxFaults int
	// Name, if set, names the world in the replay tokens of its failures
	// (TokenName reads it back), so that a tool can find the world a
	// token belongs to: verbsim explore names its built-in patterns.
	Name string

	budget int       // the fault budget fill computed: -1 for no bound
	start  time.Time // when the exploration began, with Time
	// sleepSetsOnly reduces Exhaustive with sleep sets alone, as it did
	// before DPOR: for measurements and the soundness test.
	sleepSetsOnly bool
}

// deadline is when the exploration must stop (zero: no Time).
func (o *Options) deadline() time.Time {
	if o.Time <= 0 {
		return time.Time{}
	}
	return o.start.Add(o.Time)
}

// Unbounded, as Options.Preemptions, lets Exhaustive preempt as often as
// it likes: the search covers every schedule (up to equivalence).
const Unbounded = 1 << 20

func (o Options) fill() Options {
	if o.Schedules <= 0 {
		o.Schedules = 200
		if o.Strategy == Auto {
			o.Schedules = 10000
		}
	}
	if o.Time > 0 && o.start.IsZero() {
		o.start = time.Now()
	}
	if o.Depth <= 0 {
		o.Depth = 2
	}
	switch {
	case o.Preemptions == 0 && o.Strategy == Auto:
		o.Preemptions = Unbounded // Auto deepens as far as the budget goes
	case o.Preemptions == 0:
		o.Preemptions = 2
	case o.Preemptions < 0:
		o.Preemptions = 0
	}
	if o.MaxSteps <= 0 {
		o.MaxSteps = 2000
	}
	switch {
	case o.MaxFaults < 0:
		o.budget = 0
	case o.MaxFaults > 0:
		o.budget = o.MaxFaults
	case o.Strategy == Exhaustive:
		o.budget = 1
	default:
		o.budget = -1
	}
	return o
}

// Result is what an exploration found.
type Result struct {
	Strategy  Strategy
	Schedules int // schedules run
	Steps     int // steps taken over all of them
	// Pruned counts the schedules (included in Schedules) that Exhaustive's
	// partial-order reduction stopped early as equivalent to one already
	// run.
	Pruned int
	// Complete reports that Exhaustive ran every schedule within its
	// bound: Schedules is then the number of distinct schedules. For
	// Auto it reports that the search covered every schedule there is
	// (up to equivalence), whatever the bound.
	Complete bool
	// Bound is, for Auto, the largest preemption bound up to which the
	// exhaustive search completed (-1: not even 0); Coverage says in
	// words what the exploration covered.
	Bound    int
	Coverage string
	// TimedOut reports that Options.Time ended the exploration.
	TimedOut bool
	// Failure is the first failing schedule, nil when every one passed.
	Failure *Failure
}

// String summarises the result in one line.
func (r Result) String() string {
	s := fmt.Sprintf("%v: %d schedule(s), %d step(s)", r.Strategy, r.Schedules, r.Steps)
	if r.Pruned > 0 {
		s += fmt.Sprintf(" (%d pruned as equivalent)", r.Pruned)
	}
	if r.Complete {
		s += ", complete"
	}
	if r.Coverage != "" {
		s += " [" + r.Coverage + "]"
	}
	if r.Failure != nil {
		s += fmt.Sprintf("; %v found in schedule %d", r.Failure.Kind, r.Failure.Schedule)
	} else {
		s += "; no failure"
	}
	return s
}

// Explore runs schedules of world with opts until one fails or the
// strategy is done, and reports what it found. A failure carries its
// replay token and its annotated timeline (the failing schedule is run
// once more, with the fabric tracing, to write it).
func Explore(world func(*World), opts Options) Result {
	o := opts.fill()
	if o.Strategy == Auto {
		return exploreAuto(world, &o)
	}
	res := Result{Strategy: o.Strategy}
	st := newStrategy(&o)
	res.Complete = runStrategy(world, &o, st, o.Schedules, &res)
	return res
}

// runStrategy runs up to n schedules of st, adding them to res, and
// reports whether st ran out of schedules (an exhaustive search that is
// complete). A failure ends it: shrunk, replayed with its timeline, in
// res.Failure.
func runStrategy(world func(*World), o *Options, st strategy, n int, res *Result) bool {
	deadline := o.deadline()
	for i := 0; i < n; i++ {
		if !deadline.IsZero() && i > 0 && time.Now().After(deadline) {
			res.TimedOut = true
			return false
		}
		p := st.next(i)
		if p == nil {
			return true
		}
		r := runOnce(world, p, o.MaxSteps, false, o)
		res.Schedules++
		res.Steps += r.steps
		if r.pruned {
			res.Pruned++
		}
		st.done(r)
		if r.failure != nil {
			res.Failure = report(world, o, r, res.Schedules)
			return false
		}
	}
	return st.next(n) == nil && isExhaustive(st)
}

func isExhaustive(st strategy) bool {
	switch st.(type) {
	case *dfs, *dpor:
		return true
	}
	return false
}

// report turns r, a failed run and the schedule-th of the exploration,
// into the failure Explore returns: shrunk (unless NoShrink), with its
// token, replayed once more to write its timeline.
func report(world func(*World), o *Options, r *runner, schedule int) *Failure {
	choices, size, runs := r.choices, sizeOf(r), 0
	unshrunk := size
	if !o.NoShrink {
		choices, size, runs = shrink(world, r, o)
	}
	tk := token{strategy: o.Strategy, seed: o.Seed, schedule: uint64(schedule - 1), maxSteps: uint64(o.MaxSteps),
		allow: o.AllowUnconsumed, name: o.Name, budget: o.budget, choices: choices}
	f, err := replayToken(world, &tk, false)
	if err != nil { // the world is not deterministic: report what the first run saw
		f = r.failure
		f.Timeline = "(no timeline: " + err.Error() + ")"
	}
	f.Schedule, f.Token = schedule, encodeToken(tk)
	f.Size, f.Unshrunk, f.ShrinkRuns = size, unshrunk, runs
	return f
}

// Check explores world with opts inside a test: a failure fails t with its
// kind, message, replay token and annotated timeline. It returns the
// result, which t.Log summarises.
func Check(t testing.TB, world func(*World), opts Options) Result {
	t.Helper()
	res := Explore(world, opts)
	t.Log(res.String())
	if f := res.Failure; f != nil {
		t.Errorf("%v\ntimeline:\n%s\nreplay: explore.Replay(t, world, %q)", f.Error(), f.Timeline, f.Token)
	}
	return res
}

// Replay runs the schedule of token (from a failure of Check, Explore or
// verbsim explore) once, with the same choices, and fails t the same way
// when it fails again: the same kind, message and timeline. It returns
// the failure, nil when the schedule passed (t then fails too: the world
// changed since the token was made).
func Replay(t testing.TB, world func(*World), token string) *Failure {
	t.Helper()
	f, err := RunToken(world, token)
	switch {
	case err != nil:
		t.Errorf("explore.Replay: %v", err)
	case f == nil:
		t.Errorf("explore.Replay: the schedule of the token passed; the world is not the one it was made with")
	default:
		t.Errorf("%v\ntimeline:\n%s", f.Error(), f.Timeline)
	}
	return f
}

// RunToken runs the schedule of token once and returns its failure with
// the timeline (nil when it passes), or an error when the token is
// malformed, was recorded on another world (the token carries the
// world's identity: what its function set up, and the steps of the
// schedule), or the world does not follow it.
func RunToken(world func(*World), tok string) (*Failure, error) {
	return replay(world, tok)
}
