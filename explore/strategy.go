package explore

import (
	"fmt"
	"math/rand/v2"
)

// Strategy says how the explorer picks at each choice point.
type Strategy uint8

// The strategies.
const (
	// Auto, the default, looks for deep bugs within a budget of schedules
	// (Options.Schedules) without being told how deep: it runs the
	// exhaustive search with 0 preemptions, then 1, 2, ... (each bound a
	// complete search of its own when the budget allows, with DPOR), and
	// between two bounds PCT with a depth one more than the bound and the
	// random walk; once a bound is not finished it spends the rest on PCT
	// at growing depths and the random walk. Result.Coverage says what
	// was covered: "complete up to 2 preemptions; 3 not finished".
	Auto Strategy = iota
	// Random is a seeded random walk: at every choice point one of the
	// enabled goroutines and engine events, uniformly.
	Random
	// PCT is probabilistic concurrency testing (Burckhardt, Kothari,
	// Musuvathi, Nagarakatte, ASPLOS 2010): every goroutine (and the
	// engine) gets a random priority, the highest enabled one runs, and at
	// Depth-1 random steps the running one drops below all others. A bug
	// that needs d ordering constraints is found with probability at least
	// 1/(n k^(d-1)) per schedule (n goroutines, k steps).
	PCT
	// Exhaustive enumerates every schedule with at most
	// Options.Preemptions preemptions (a switch away from a goroutine that
	// could have gone on), depth first, and reports how many there were.
	Exhaustive
	// replayStrategy follows a token's choices.
	replayStrategy
)

var strategyNames = [...]string{"auto", "random", "pct", "exhaustive", "replay"}

// String names the strategy as the command line spells it.
func (s Strategy) String() string {
	if int(s) < len(strategyNames) {
		return strategyNames[s]
	}
	return fmt.Sprintf("Strategy(%d)", uint8(s))
}

// ParseStrategy reads a strategy's name ("auto", "random", "pct",
// "exhaustive").
func ParseStrategy(s string) (Strategy, error) {
	for i, n := range strategyNames[:replayStrategy] {
		if n == s {
			return Strategy(i), nil
		}
	}
	return 0, fmt.Errorf("explore: unknown strategy %q (auto, random, pct, exhaustive)", s)
}

// strategy hands out the picker of each schedule in turn.
type strategy interface {
	// next returns the picker of schedule i (0-based), nil when the
	// strategy has nothing left to explore.
	next(i int) picker
	// done is told how the schedule went.
	done(r *runner)
}

func newStrategy(o *Options) strategy {
	switch o.Strategy {
	case PCT:
		return &pctStrategy{seed: o.Seed, depth: o.Depth, k: 20}
	case Exhaustive:
		switch {
		case o.NoReduction:
			return &dfs{bound: o.Preemptions}
		case o.sleepSetsOnly:
			return &dfs{bound: o.Preemptions, reduce: true}
		}
		return newDPOR(o.Preemptions)
	}
	return &randomStrategy{seed: o.Seed}
}

// randomStrategy is the seeded random walk.
type randomStrategy struct{ seed uint64 }

type randomPicker struct{ rng *rand.Rand }

func (s *randomStrategy) next(i int) picker {
	return &randomPicker{rand.New(rand.NewPCG(s.seed, uint64(i)))}
}
func (s *randomStrategy) done(*runner) {}

func (p *randomPicker) pick(_ *runner, en []action) int {
	if en[0].fault {
		return weighted(p.rng, en)
	}
	return p.rng.IntN(len(en))
}

// weighted picks one outcome of a fault draw with the probability the
// fabric's configured faults give it.
func weighted(rng *rand.Rand, en []action) int {
	total := 0.0
	for _, a := range en {
		total += a.out.P
	}
	x := rng.Float64() * total
	for i, a := range en {
		if x < a.out.P {
			return i
		}
		x -= a.out.P
	}
	return 0
}

// pctStrategy is PCT; k, the estimate of a schedule's length, grows to the
// longest schedule seen.
type pctStrategy struct {
	seed  uint64
	depth int
	k     int
}

type pctPicker struct {
	rng    *rand.Rand
	depth  int
	prio   map[int]int
	change map[int]int // step -> change point number (1..depth-1)
}

func (s *pctStrategy) next(i int) picker {
	p := &pctPicker{rng: rand.New(rand.NewPCG(s.seed, uint64(i))), depth: s.depth, prio: map[int]int{}, change: map[int]int{}}
	for j := 1; j < s.depth; j++ {
		p.change[1+p.rng.IntN(s.k)] = j
	}
	return p
}

func (s *pctStrategy) done(r *runner) { s.k = max(s.k, r.steps) }

func (p *pctPicker) priority(t int) int {
	v, ok := p.prio[t]
	if !ok {
		v = p.depth + p.rng.IntN(1<<30)
		p.prio[t] = v
	}
	return v
}

func (p *pctPicker) best(en []action) int {
	b := -1
	for i, a := range en {
		if b < 0 || p.priority(a.thread()) > p.priority(en[b].thread()) {
			b = i
		}
	}
	return b
}

func (p *pctPicker) pick(r *runner, en []action) int {
	switch {
	case en[0].fault: // a fault draw: by the configured probabilities
		return weighted(p.rng, en)
	case en[0].sel: // a select's cases: uniformly, as Go does
		return p.rng.IntN(len(en))
	}
	b := p.best(en)
	if j, ok := p.change[r.steps+1]; ok {
		p.prio[en[b].thread()] = p.depth - j
		b = p.best(en)
	}
	if en[b].thread() == -1 { // the engine: one of its ready events, at random
		var evs []int
		for i, a := range en {
			if a.thread() == -1 {
				evs = append(evs, i)
			}
		}
		b = evs[p.rng.IntN(len(evs))]
	}
	return b
}

// replayPicker follows a recorded list of choices.
type replayPicker struct {
	choices  []int
	n        int
	diverged bool
}

func (p *replayPicker) pick(_ *runner, en []action) int {
	if p.n >= len(p.choices) {
		p.diverged = true
		return 0
	}
	c := p.choices[p.n]
	p.n++
	if c >= len(en) {
		p.diverged = true
		return 0
	}
	return c
}

// dfs is the bounded exhaustive search: a depth-first walk of the tree of
// choices, each schedule run from the start (the world is rebuilt every
// time), with at most bound preemptions per schedule. At every choice
// point it tries the goroutine that ran last first (no preemption), then
// the others in order.
//
// With reduce set it prunes with sleep sets (por.go): at every node the
// options already explored there, and the sleep set the node was reached
// with, sleep in the subtree of the next option for as long as the steps
// taken are independent of them; an option asleep is not tried, and a
// schedule whose every option is asleep is stopped (runner.pruned).
type dfs struct {
	bound  int
	reduce bool
	stack  []*node
	depth  int // decisions taken in the current schedule
	over   bool
	sleep  []asleep // the sleep set of the current state
}

type node struct {
	order []int // the options to try, in order
	pos   int   // the one taken now
	pre   []int // preemptions after taking order[i]
	// With reduction: the sleep set the node was reached with, and the
	// threads and footprints of its options.
	sleep   []asleep
	threads []int
	fps     []footprint
}

func (s *dfs) next(int) picker {
	if s.over {
		return nil
	}
	s.depth = 0
	s.sleep = nil
	return s
}

// enter sets the sleep set of the subtree of n's current option.
func (s *dfs) enter(n *node) {
	if !s.reduce {
		return
	}
	set := append([]asleep(nil), n.sleep...)
	for _, j := range n.order[:n.pos] {
		if n.threads[j] >= 0 {
			set = append(set, asleep{actor(n.threads[j] + 1), n.fps[j]})
		}
	}
	s.sleep = wake(set, n.fps[n.order[n.pos]])
}

// forced follows a step that had one option: false when it is asleep.
func (s *dfs) forced(r *runner, a action) bool {
	if !s.reduce {
		return true
	}
	if sleeping(s.sleep, actor(a.thread()+1)) {
		return false
	}
	if len(s.sleep) > 0 {
		s.sleep = wake(s.sleep, r.footprint(a))
	}
	return true
}

func (s *dfs) pick(r *runner, en []action) int {
	d := s.depth
	s.depth++
	if d < len(s.stack) {
		n := s.stack[d]
		s.enter(n)
		return n.order[n.pos]
	}
	before := 0
	if d > 0 {
		p := s.stack[d-1]
		before = p.pre[p.pos]
	}
	last := r.last
	cont := -1
	for i, a := range en {
		if a.thread() == last {
			cont = i
			break
		}
	}
	n := &node{}
	if s.reduce {
		n.sleep = s.sleep
		for _, a := range en {
			n.threads = append(n.threads, a.thread())
			n.fps = append(n.fps, r.footprint(a))
		}
	}
	add := func(i, cost int) {
		if s.reduce && sleeping(n.sleep, actor(en[i].thread()+1)) {
			return
		}
		if before+cost <= s.bound {
			n.order = append(n.order, i)
			n.pre = append(n.pre, before+cost)
		}
	}
	if cont >= 0 {
		for i, a := range en {
			if a.thread() == last {
				add(i, 0)
			}
		}
		for i, a := range en {
			if a.thread() != last {
				add(i, 1)
			}
		}
	} else {
		for i := range en {
			add(i, 0)
		}
	}
	if len(n.order) == 0 { // every option is asleep
		return -1
	}
	s.stack = append(s.stack, n)
	s.enter(n)
	return n.order[0]
}

func (s *dfs) done(*runner) {
	s.stack = s.stack[:min(s.depth, len(s.stack))]
	for len(s.stack) > 0 {
		top := s.stack[len(s.stack)-1]
		top.pos++
		if top.pos < len(top.order) {
			return
		}
		s.stack = s.stack[:len(s.stack)-1]
	}
	s.over = true
}

// rngFor is the random source of schedule i of a run seeded 1.
func rngFor(i uint64) *rand.Rand { return rand.New(rand.NewPCG(1, i)) }
