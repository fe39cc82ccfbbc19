package explore

import "slices"

// Dynamic partial-order reduction for the exhaustive search: source-set
// DPOR with sleep sets (Abdulla, Aronis, Jonsson, Sagonas, "Optimal
// Dynamic Partial Order Reduction", POPL 2014, Algorithm 1; after
// Flanagan and Godefroid, "Dynamic Partial-Order Reduction for Model
// Checking Software", POPL 2005), under a preemption bound with the
// conservative backtracking points of Coons, Musuvathi and McKinley
// ("Bounded Partial-Order Reduction", OOPSLA 2013).
//
// The search runs one schedule at a time, each from the start (the world
// is built anew), and keeps a node per decision of the current schedule:
// for a step, the actors enabled there, the one taken, the backtrack set
// (the actors still to try there) and the sleep set; for a draw (a packet
// fault, a select's case), how many outcomes and the one taken, every one
// of which is tried. A schedule begins with no backtracking: at each new
// node it takes the actor that moved last when it can (no preemption), else
// the first enabled one, never one asleep.
//
// When a schedule ends, its steps are analysed: step i happens before
// step j when a chain of program order (an actor's steps), creation (the
// step that started a goroutine or created an engine event comes before
// the event) and dependence (footprint.go) leads from i to j. Two
// dependent steps of different actors with no other chain between them
// are a race, and the schedule that reverses it may end differently: the
// search adds to the backtrack set of the node before i an actor that can
// start that schedule (an initial of the steps after i that do not happen
// after it, followed by j), unless one is there already. The steps still
// enabled when a schedule stopped early (a failure) count too, as if they
// came last. The next schedule is the deepest node with an actor left to
// try (or an outcome of a draw); an actor asleep there, or one that would
// exceed the preemption bound, is not tried. The search is over when no
// node has any.
//
// With a preemption bound, reversing a race right before i may cost a
// preemption the bound does not allow while the same reversal from the
// start of the block of steps that i ends (where a switch happened anyway)
// would not: the actor is added there too.
type dpor struct {
	bound int
	nodes []*dnode
	depth int // decisions taken in the current schedule
	over  bool
	// cut: an option was left out for the bound, so the search is
	// complete up to the bound only.
	cut bool

	// The current schedule: the node of every step (in step order, the
	// clock's left out) and the sleep set of the current state.
	stepNodes []int
	sleep     []asleep
	prev      int // the node of the last step, -1 before the first
}

// dnode is one decision of the current schedule.
type dnode struct {
	draw   bool
	n, cur int // a draw: its outcomes and the one taken

	en      []actor // a step: the actors enabled, in the order of the options
	threads []int   // and their threads, for the preemption bound
	chosen  actor   // the actor taken now
	fp      footprint
	back    []actor  // the actors to try here (chosen and done included)
	done    []asleep // the actors tried here before chosen
	sleep   []asleep // the sleep set the node was reached with
	pre     int      // preemptions before the node
	last    int      // the thread that moved last before it
	lastOn  bool     // whether that thread is enabled here
}

func newDPOR(bound int) *dpor { return &dpor{bound: bound, prev: -1} }

func (s *dpor) next(int) picker {
	if s.over {
		return nil
	}
	s.depth, s.stepNodes, s.sleep, s.prev = 0, s.stepNodes[:0], nil, -1
	return s
}

// cost is 1 when taking option i at n preempts the thread that moved last.
func (n *dnode) cost(i int) int {
	if n.lastOn && n.threads[i] != n.last {
		return 1
	}
	return 0
}

func (n *dnode) tried(a actor) bool {
	if a == n.chosen {
		return true
	}
	for _, d := range n.done {
		if d.actor == a {
			return true
		}
	}
	return false
}

// sleepNow computes the sleep set of the state after the last step: the
// sleep set of the last step's node and the actors tried there before it,
// those independent of the step taken.
func (s *dpor) sleepNow(r *runner) []asleep {
	if s.prev < 0 || len(r.infos) == 0 {
		return nil
	}
	last := r.infos[len(r.infos)-1]
	if last.clock {
		return nil
	}
	pn := s.nodes[s.prev]
	set := make([]asleep, 0, len(pn.sleep)+len(pn.done))
	set = append(set, pn.sleep...)
	set = append(set, pn.done...)
	return wake(set, last.fp)
}

func (s *dpor) choose(r *runner, en []action) int {
	d := s.depth
	s.depth++
	if d < len(s.nodes) { // the prefix of the schedule: as before
		n := s.nodes[d]
		if n.draw {
			return -1 // the world is not deterministic
		}
		for i, a := range en {
			if r.actorOf(a) == n.chosen {
				s.stepNodes = append(s.stepNodes, d)
				s.prev = d
				return i
			}
		}
		return -1
	}
	n := &dnode{sleep: s.sleepNow(r), pre: r.preempts, last: r.last, lastOn: r.canContinue(en)}
	for _, a := range en {
		n.en = append(n.en, r.actorOf(a))
		n.threads = append(n.threads, a.thread())
	}
	pick := -1
	for i := range en { // the thread that moved last goes on: no preemption
		if n.threads[i] == n.last && !sleeping(n.sleep, n.en[i]) {
			pick = i
			break
		}
	}
	for i := range en {
		if pick >= 0 {
			break
		}
		if !sleeping(n.sleep, n.en[i]) {
			if n.pre+n.cost(i) <= s.bound {
				pick = i
			} else {
				s.cut = true
			}
		}
	}
	if pick < 0 { // every option asleep, or beyond the bound
		return -1
	}
	n.chosen = n.en[pick]
	n.back = []actor{n.chosen}
	s.nodes = append(s.nodes, n)
	s.stepNodes = append(s.stepNodes, d)
	s.prev = d
	return pick
}

// pick decides a draw: the outcome of this node, the first for a new one.
func (s *dpor) pick(_ *runner, en []action) int {
	d := s.depth
	s.depth++
	if d < len(s.nodes) {
		if n := s.nodes[d]; n.draw && n.cur < len(en) {
			return n.cur
		}
		return 0
	}
	s.nodes = append(s.nodes, &dnode{draw: true, n: len(en)})
	return 0
}

func (s *dpor) done(r *runner) {
	infos := r.infos
	nodeOf := make([]int, len(infos))
	k := 0
	for j, in := range infos {
		if in.clock || k >= len(s.stepNodes) {
			nodeOf[j] = -1
			continue
		}
		nodeOf[j] = s.stepNodes[k]
		k++
		n := s.nodes[nodeOf[j]]
		if n.fp.global || len(n.fp.acc) > 0 {
			n.fp = n.fp.merge(in.fp)
		} else {
			n.fp = in.fp
		}
	}
	s.races(infos, nodeOf, r.pending)
	s.backtrack()
}

// bits is a set of step indices.
type bits []uint64

func (b bits) has(i int) bool { return b[i>>6]&(1<<(i&63)) != 0 }
func (b bits) set(i int)      { b[i>>6] |= 1 << (i & 63) }
func (b bits) or(c bits) {
	for i := range b {
		b[i] |= c[i]
	}
}

// cellState is the last write of a cell and the reads since.
type cellState struct {
	write int
	reads []int
}

// races finds the races of the schedule's steps (and of the steps still
// pending when it stopped, after them) and adds their reversals to the
// backtrack sets.
func (s *dpor) races(infos []stepInfo, nodeOf []int, pending []stepInfo) {
	n := len(infos)
	all := append(slices.Clip(infos), pending...)
	words := (len(all) + 63) / 64
	hb := make([]bits, len(all))
	lastOf := map[actor]int{}
	cells := map[cell]*cellState{}
	lastGlobal := -1
	var direct, conflicts []int
	for j, in := range all {
		direct, conflicts = direct[:0], conflicts[:0]
		if p, ok := lastOf[in.actor]; ok {
			direct = append(direct, p)
		} else if in.creator >= 0 && in.creator < n {
			direct = append(direct, in.creator)
		}
		if in.fp.global || in.clock {
			for i := range min(j, n) {
				conflicts = append(conflicts, i)
			}
		} else {
			if lastGlobal >= 0 {
				conflicts = append(conflicts, lastGlobal)
			}
			for _, a := range in.fp.acc {
				c := cells[a.c]
				if c == nil {
					continue
				}
				if c.write >= 0 {
					conflicts = append(conflicts, c.write)
				}
				if a.write {
					conflicts = append(conflicts, c.reads...)
				}
			}
		}
		slices.Sort(conflicts)
		conflicts = slices.Compact(conflicts)
		h := make(bits, words)
		for _, k := range direct {
			h.set(k)
			h.or(hb[k])
		}
		for _, k := range conflicts {
			h.set(k)
			h.or(hb[k])
		}
		hb[j] = h
		if !in.clock {
			for _, i := range conflicts {
				if all[i].clock || all[i].actor == in.actor || nodeOf[i] < 0 {
					continue
				}
				if s.reachedOtherwise(i, direct, conflicts, hb) {
					continue
				}
				s.reverse(i, j, n, all, hb, nodeOf)
			}
		}
		if j >= n {
			continue // a pending step: it happens after nothing else
		}
		lastOf[in.actor] = j
		if in.fp.global || in.clock {
			lastGlobal = j
			clear(cells)
			continue
		}
		for _, a := range in.fp.acc {
			c := cells[a.c]
			if c == nil {
				c = &cellState{write: -1}
				cells[a.c] = c
			}
			if a.write {
				c.write, c.reads = j, c.reads[:0]
			} else {
				c.reads = append(c.reads, j)
			}
		}
	}
}

// reachedOtherwise reports whether step i happens before one of the other
// direct predecessors of a step: then the two are ordered through it, and
// not a race.
func (s *dpor) reachedOtherwise(i int, direct, conflicts []int, hb []bits) bool {
	for _, k := range direct {
		if k != i && hb[k].has(i) {
			return true
		}
	}
	for _, k := range conflicts {
		if k != i && hb[k].has(i) {
			return true
		}
	}
	return false
}

// reverse adds to the node before step i an actor that starts a schedule
// in which j comes before i: an initial of v, the steps after i (executed
// ones: index below n) that do not happen after i, followed by j.
func (s *dpor) reverse(i, j, n int, all []stepInfo, hb []bits, nodeOf []int) {
	v := []int{}
	for k := i + 1; k < min(j, n); k++ {
		if !hb[k].has(i) {
			v = append(v, k)
		}
	}
	v = append(v, j)
	var initials []actor
	for x, k := range v {
		first := true
		for _, k2 := range v[:x] {
			if hb[k].has(k2) {
				first = false
				break
			}
		}
		if first && !slices.Contains(initials, all[k].actor) {
			initials = append(initials, all[k].actor)
		}
	}
	s.addBacktrack(s.nodes[nodeOf[i]], initials, all[j].actor)
	if s.bound >= Unbounded {
		return
	}
	// The start of the block of steps of i's thread that i ends.
	k0 := i
	for k0 > 0 && nodeOf[k0-1] >= 0 && all[k0-1].thread == all[i].thread {
		k0--
	}
	if k0 != i {
		s.addBacktrack(s.nodes[nodeOf[k0]], initials, all[j].actor)
	}
}

// addBacktrack makes sure n will try one of initials (prefer, the actor of
// the later step of the race, first; one not asleep there before one
// asleep). When none of them is enabled at n (the dependence relation
// over-approximates, or an actor's name is not the same there), every
// actor enabled at n is to be tried.
func (s *dpor) addBacktrack(n *dnode, initials []actor, prefer actor) {
	for _, q := range initials {
		if slices.Contains(n.back, q) {
			return
		}
	}
	best := actor(0)
	for _, q := range initials {
		if !slices.Contains(n.en, q) {
			continue
		}
		switch {
		case best == 0:
			best = q
		case sleeping(n.sleep, best) && !sleeping(n.sleep, q):
			best = q
		case q == prefer && !sleeping(n.sleep, q):
			best = q
		}
	}
	if best != 0 {
		n.back = append(n.back, best)
		return
	}
	for _, q := range n.en {
		if !slices.Contains(n.back, q) {
			n.back = append(n.back, q)
		}
	}
}

// backtrack moves the search to its next schedule: the deepest node with
// an outcome or an actor left to try.
func (s *dpor) backtrack() {
	for len(s.nodes) > 0 {
		top := s.nodes[len(s.nodes)-1]
		if top.draw {
			if top.cur+1 < top.n {
				top.cur++
				return
			}
			s.nodes = s.nodes[:len(s.nodes)-1]
			continue
		}
		for _, q := range top.back {
			if top.tried(q) || sleeping(top.sleep, q) {
				continue
			}
			i := slices.Index(top.en, q)
			if i < 0 {
				continue
			}
			if top.pre+top.cost(i) > s.bound {
				s.cut = true
				continue
			}
			top.done = append(top.done, asleep{top.chosen, top.fp})
			top.chosen, top.fp = q, footprint{}
			return
		}
		s.nodes = s.nodes[:len(s.nodes)-1]
	}
	s.over = true
}
