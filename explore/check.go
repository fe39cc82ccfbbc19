package explore

import (
	"bytes"
	"compress/flate"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// Options configure an exploration.
type Options struct {
	// Strategy picks at each choice point: Random (the default), PCT or
	// Exhaustive.
	Strategy Strategy
	// Seed seeds Random and PCT; the same seed explores the same
	// schedules.
	Seed uint64
	// Schedules bounds the schedules run (default 200). Exhaustive stops
	// there too, and its Result then says it was not complete.
	Schedules int
	// Depth is PCT's bug depth d: the number of ordering constraints the
	// bug needs (default 2).
	Depth int
	// Preemptions bounds Exhaustive's preemptions per schedule (default 2;
	// negative: none allowed).
	Preemptions int
	// MaxSteps bounds the steps of one schedule (default 2000); a schedule
	// that reaches it fails with StepBound.
	MaxSteps int
	// NoReduction turns off Exhaustive's partial-order reduction (sleep
	// sets): every schedule within the bound is run, equivalent ones too.
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
	// Check turns the verbs sanitizer (package sim/check) on in the
	// world's fabric, every check but the leak check: a misuse it finds
	// ends the schedule as a Misuse failure, with its finding and replay
	// token, as it happens. A world whose fabric configuration sets
	// sim.Config.Check gets its findings as failures too, with its own
	// checks.
	Check bool

	budget int // the fault budget fill computed: -1 for no bound
}

func (o Options) fill() Options {
	if o.Schedules <= 0 {
		o.Schedules = 200
	}
	if o.Depth <= 0 {
		o.Depth = 2
	}
	if o.Preemptions == 0 {
		o.Preemptions = 2
	} else if o.Preemptions < 0 {
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
	// bound: Schedules is then the number of distinct schedules.
	Complete bool
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
	st := newStrategy(&o)
	res := Result{Strategy: o.Strategy}
	for i := 0; i < o.Schedules; i++ {
		p := st.next(i)
		if p == nil {
			res.Complete = true
			return res
		}
		r := runOnce(world, p, o.MaxSteps, false, &o)
		res.Schedules++
		res.Steps += r.steps
		if r.pruned {
			res.Pruned++
		}
		st.done(r)
		if r.failure != nil {
			choices, size, runs := r.choices, sizeOf(r), 0
			unshrunk := size
			if !o.NoShrink {
				choices, size, runs = shrink(world, r, &o)
			}
			tok := encodeToken(token{strategy: o.Strategy, seed: o.Seed, schedule: uint64(i), maxSteps: uint64(o.MaxSteps),
				allow: o.AllowUnconsumed, name: o.Name, budget: o.budget, check: o.Check, choices: choices})
			f, err := replay(world, tok)
			if err != nil { // the world is not deterministic: report what the first run saw
				f = r.failure
				f.Timeline = "(no timeline: " + err.Error() + ")"
			}
			f.Schedule, f.Token = i+1, tok
			f.Size, f.Unshrunk, f.ShrinkRuns = size, unshrunk, runs
			res.Failure = f
			return res
		}
	}
	if _, ok := st.(*dfs); ok && st.next(o.Schedules) == nil {
		res.Complete = true
	}
	return res
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
// malformed or the world does not follow it.
func RunToken(world func(*World), tok string) (*Failure, error) {
	return replay(world, tok)
}

func replay(world func(*World), tok string) (*Failure, error) {
	tk, err := decodeToken(tok)
	if err != nil {
		return nil, err
	}
	o := Options{MaxSteps: int(tk.maxSteps), AllowUnconsumed: tk.allow, Check: tk.check}.fill()
	o.budget = tk.budget
	p := &replayPicker{choices: tk.choices}
	r := runOnce(world, p, o.MaxSteps, true, &o)
	if p.diverged || p.n != len(tk.choices) {
		return nil, errors.New("explore: the world did not follow the token's schedule (a different world, or one that is not deterministic)")
	}
	if r.failure == nil {
		return nil, nil
	}
	f := *r.failure
	f.Size = sizeOf(r)
	f.Unshrunk = f.Size
	f.Schedule = int(tk.schedule) + 1
	f.Token = tok
	f.Timeline = r.timeline.String()
	return &f, nil
}

// token is what a replay token carries.
type token struct {
	strategy Strategy
	seed     uint64
	schedule uint64
	maxSteps uint64
	allow    bool
	name     string
	budget   int  // the fault budget (Options.MaxFaults): -1 for no bound
	check    bool // Options.Check
	choices  []int
}

// TokenName returns the world's name a replay token carries (Options.Name;
// "" when none was set).
func TokenName(tok string) (string, error) {
	t, err := decodeToken(tok)
	return t.name, err
}

const tokenPrefix = "vx1."

// encodeToken packs t as varints, deflates them and writes them in
// URL-safe base64 behind a version prefix.
func encodeToken(t token) string {
	var raw []byte
	flags := uint64(t.strategy)
	if t.allow {
		flags |= 0x80
	}
	if t.name != "" {
		flags |= 0x40
	}
	if t.budget >= 0 {
		flags |= 0x20
	}
	if t.check {
		flags |= 0x100
	}
	for _, v := range []uint64{flags, t.seed, t.schedule, t.maxSteps, uint64(len(t.choices))} {
		raw = binary.AppendUvarint(raw, v)
	}
	if t.name != "" {
		raw = binary.AppendUvarint(raw, uint64(len(t.name)))
		raw = append(raw, t.name...)
	}
	if t.budget >= 0 {
		raw = binary.AppendUvarint(raw, uint64(t.budget))
	}
	for _, c := range t.choices {
		raw = binary.AppendUvarint(raw, uint64(c))
	}
	var b bytes.Buffer
	zw, _ := flate.NewWriter(&b, flate.BestCompression)
	zw.Write(raw)
	zw.Close()
	return tokenPrefix + base64.RawURLEncoding.EncodeToString(b.Bytes())
}

func decodeToken(s string) (token, error) {
	var t token
	bad := func(why string) (token, error) { return token{}, fmt.Errorf("explore: bad replay token: %s", why) }
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, tokenPrefix) {
		return bad("it does not start with " + tokenPrefix)
	}
	z, err := base64.RawURLEncoding.DecodeString(s[len(tokenPrefix):])
	if err != nil {
		return bad(err.Error())
	}
	raw, err := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(z)), 1<<24))
	if err != nil {
		return bad(err.Error())
	}
	rd := bytes.NewReader(raw)
	var v [5]uint64
	for i := range v {
		if v[i], err = binary.ReadUvarint(rd); err != nil {
			return bad("truncated")
		}
	}
	t.strategy, t.allow, t.seed, t.schedule, t.maxSteps = Strategy(v[0]&0x1f), v[0]&0x80 != 0, v[1], v[2], v[3]
	t.check = v[0]&0x100 != 0
	if v[4] > uint64(len(raw)) {
		return bad("truncated")
	}
	if v[0]&0x40 != 0 {
		n, err := binary.ReadUvarint(rd)
		if err != nil || n > uint64(rd.Len()) {
			return bad("truncated")
		}
		name := make([]byte, n)
		rd.Read(name)
		t.name = string(name)
	}
	t.budget = -1 // a token made before fault draws were choice points: none were drawn
	if v[0]&0x20 != 0 {
		b, err := binary.ReadUvarint(rd)
		if err != nil || b > 1<<20 {
			return bad("truncated")
		}
		t.budget = int(b)
	}
	t.choices = make([]int, v[4])
	for i := range t.choices {
		c, err := binary.ReadUvarint(rd)
		if err != nil || c > 1<<20 {
			return bad("truncated")
		}
		t.choices[i] = int(c)
	}
	return t, nil
}
