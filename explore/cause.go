package explore

import (
	"fmt"
	"slices"
	"strings"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/internal/simhook"
	"github.com/verbsim/verbsim/sim"
)

// Causes, not symptoms: when a schedule ends in a lost wake-up, a destroy
// blocked on acks or a deadlock, the report says why, with the rule that
// makes it so. The runner keeps a short history per CQ for that (the last
// arm: when, by whom, what the CQ held then; its destroy; the acks called
// on it), noted as each verb's step is taken, and reads the rest from
// the CQs themselves when nothing can move.

// cqHist is what happened to one CQ.
type cqHist struct {
	armStep    int    // the step of the last ibv_req_notify_cq (0: in the world function), -1: never
	armBy      string // who armed it
	armHeld    int    // completions it held then
	armAdded   uint64 // completions added to it before then (CQStats.Added)
	destroyBy  string // who destroyed it ("" while it lives)
	destroyAt  int
	ackCalls   int // ibv_ack_cq_events calls on it
	ackLastBy  string
	ackLastAt  int
	firstAckAt int
}

// noteVerb records op, about to run as step r.steps (0: in the world
// function) by who.
func (r *runner) noteVerb(op domain.Op, who string) {
	if op.Obj == nil {
		return
	}
	switch op.Verb {
	case "ibv_req_notify_cq", "ibv_destroy_cq", "ibv_ack_cq_events":
	default:
		return
	}
	q, ok := simhook.HandleOf(op.Obj).(*sim.CQ)
	if !ok {
		return
	}
	if r.hist == nil {
		r.hist = map[*sim.CQ]*cqHist{}
	}
	h := r.hist[q]
	if h == nil {
		h = &cqHist{armStep: -1}
		r.hist[q] = h
	}
	switch op.Verb {
	case "ibv_req_notify_cq":
		s := q.Snapshot()
		h.armStep, h.armBy, h.armHeld, h.armAdded = r.steps, who, s.Len, s.Stats.Added
	case "ibv_destroy_cq":
		h.destroyBy, h.destroyAt = who, r.steps
	case "ibv_ack_cq_events":
		if h.ackCalls == 0 {
			h.firstAckAt = r.steps
		}
		h.ackCalls++
		h.ackLastBy, h.ackLastAt = who, r.steps
	}
}

// when renders a step of the history: "at step 4 by consumer", or "by the
// world function".
func when(step int, who string) string {
	if step == 0 {
		return "by the world function"
	}
	return fmt.Sprintf("at step %d by %s", step, who)
}

// label is the name the world gave h (World.Label, or a CQ's cq_context
// when it is a string or a fmt.Stringer), "" for none.
func (r *runner) label(h any) string {
	if l, ok := r.labels[h]; ok {
		return l
	}
	if q, ok := h.(*sim.CQ); ok {
		switch c := q.CQContext().(type) {
		case string:
			return c
		case fmt.Stringer:
			return c.String()
		}
	}
	return ""
}

// display names handle h of the world for a report: its trace name, and
// the world's name for it in quotes.
func (r *runner) display(h any) string {
	n := r.nameOf(h)
	if l := r.label(h); l != "" {
		n += fmt.Sprintf(" %q", l)
	}
	return n
}

// lostCause says why ch's waiter was not woken although q, on ch, holds
// completions.
func (r *runner) lostCause(q *sim.CQ) string {
	s := q.Snapshot()
	h := r.hist[q]
	switch {
	case s.Arm == sim.CQArmSolicited:
		return fmt.Sprintf("it is armed solicited-only (%s), and none of its completions is solicited or, under this profile, one that fires such an arm (NOTIFY-04, NOTIFY-05)",
			when(h.armStepOr(0), h.by()))
	case s.Arm != sim.CQDisarmed && h != nil && h.armStep >= 0:
		added := s.Stats.Added - h.armAdded
		return fmt.Sprintf("it was armed %s while it held %d completion(s), and %d were added after: an arm fires only for a completion added after it, never for those already there (NOTIFY-02; the cure is one more poll after arming, NOTIFY-15)",
			when(h.armStep, h.armBy), h.armHeld, added)
	case s.Arm != sim.CQDisarmed:
		return "it is armed, and no completion was added after the arm (NOTIFY-02)"
	case h == nil || h.armStep < 0:
		return "it was never armed: without an arm no completion raises an event (NOTIFY-01, NOTIFY-03)"
	case s.CompRead > 0:
		return fmt.Sprintf("its last arm (%s) was used up by an event, read since, and the CQ was not armed again: one arm gives at most one event (NOTIFY-01)", when(h.armStep, h.armBy))
	}
	return fmt.Sprintf("its last arm (%s) fired, and it was not armed again (NOTIFY-01)", when(h.armStep, h.armBy))
}

func (h *cqHist) armStepOr(d int) int {
	if h == nil || h.armStep < 0 {
		return d
	}
	return h.armStep
}

func (h *cqHist) by() string {
	if h == nil {
		return ""
	}
	return h.armBy
}

// channelCause says why nothing can wake a waiter on ch whose CQs are all
// empty (or gone): no CQ uses the channel, its CQs were destroyed, or
// nothing is left that adds completions.
func (r *runner) channelCause(ch *sim.CompChannel) string {
	var live, gone []string
	for _, o := range r.objs {
		q, ok := simhook.HandleOf(o).(*sim.CQ)
		if !ok || q.Channel() != ch {
			continue
		}
		if h := r.hist[q]; h != nil && h.destroyBy != "" {
			gone = append(gone, fmt.Sprintf("%s was destroyed %s", r.display(q), when(h.destroyAt, h.destroyBy)))
			continue
		}
		if q.Snapshot().Destroyed {
			gone = append(gone, r.display(q)+" was destroyed")
			continue
		}
		live = append(live, r.display(q))
	}
	switch {
	case len(live) == 0 && len(gone) > 0:
		return "no live CQ uses " + r.display(ch) + ": " + strings.Join(gone, ", ") +
			", and its unread events went with it: no event can come (CHAN-03, CQ-13)"
	case len(live) == 0:
		return "no CQ uses " + r.display(ch) + ": no event can ever be queued on it, and ibv_get_cq_event sleeps until one is (CHAN-03, CQ-05)"
	}
	return "every CQ on " + r.display(ch) + " (" + strings.Join(live, ", ") + ") is empty and no engine event is pending: a completion could only come from a goroutine, and none can move"
}

// ackCause says why q's destroy waits: events read and never
// acknowledged, or acknowledged on another CQ of the same channel.
func (r *runner) ackCause(q *sim.CQ) string {
	s := q.Snapshot()
	if s.CompRead == s.CompAcked {
		if s.AsyncRead != s.AsyncAcked {
			return fmt.Sprintf("%d async event(s) about it read and %d acknowledged (CQ-13)", s.AsyncRead, s.AsyncAcked)
		}
		return ""
	}
	msg := fmt.Sprintf("%s: %d completion event(s) read, %d acknowledged", r.display(q), s.CompRead, s.CompAcked)
	var elsewhere []string
	if ch := q.Channel(); ch != nil {
		for other, h := range r.hist {
			if other != q && other.Channel() == ch && h.ackCalls > 0 {
				o := other.Snapshot()
				elsewhere = append(elsewhere, fmt.Sprintf("%s (%d call(s), the last %s; %d of its events read, %d acknowledged)",
					r.display(other), h.ackCalls, when(h.ackLastAt, h.ackLastBy), o.CompRead, o.CompAcked))
			}
		}
	}
	if len(elsewhere) > 0 {
		slices.Sort(elsewhere)
		return msg + "; acks went to the other CQs of its channel: " + strings.Join(elsewhere, ", ") +
			": an event must be acknowledged on the CQ it named (CHAN-07), and destroy waits for every event read (CQ-13)"
	}
	if h := r.hist[q]; h != nil && h.ackCalls > 0 {
		return msg + fmt.Sprintf("; the last ack was %s: the events read after it were never acknowledged, and destroy waits for every event read (CHAN-07, CQ-13)", when(h.ackLastAt, h.ackLastBy))
	}
	return msg + ": none was ever acknowledged, and destroy waits for every event read (CHAN-07, CQ-13)"
}

// holds lists what g holds among the world's synchronisation objects.
func (r *runner) holds(g *gor) []string {
	var out []string
	for _, o := range r.syncs {
		if o.holder == g && g != nil {
			out = append(out, fmt.Sprintf("%s (since step %d)", o.TraceName(), o.since))
		}
	}
	return out
}

// waitDesc describes what blocked goroutine g waits for, and what it holds
// meanwhile.
func (r *runner) waitDesc(g *gor) string {
	var d string
	if w := g.sw; w != nil {
		d = fmt.Sprintf("%s waits in %s on %s: %s", g.name, w.verb, w.obj.TraceName(), w.why())
	} else {
		d = fmt.Sprintf("%s blocked: %v", g.name, g.waiter)
	}
	if h := r.holds(g); len(h) > 0 {
		d += ", holding " + strings.Join(h, " and ")
	}
	return d
}

// cycle finds a goroutine that waits, through the holders of the
// synchronisation objects the others wait for, on itself, and renders the
// chain ("consumer → producer → consumer"); "" when there is none.
func (r *runner) cycle() string {
	next := func(g *gor) *gor {
		if w := g.sw; w != nil && w.obj.holder != nil && w.obj.holder != g {
			return w.obj.holder
		}
		return nil
	}
	for _, start := range r.gs {
		if start.state != gBlocked {
			continue
		}
		chain := []string{start.name}
		g := start
		for range len(r.gs) {
			g = next(g)
			if g == nil || g.state != gBlocked {
				break
			}
			chain = append(chain, g.name)
			if g == start {
				return strings.Join(chain, " → ")
			}
		}
	}
	// A goroutine waits for an object held by one blocked elsewhere (in a
	// verb): the holder can only go on when its own wait ends.
	for _, g := range r.gs {
		if h := next(g); g.state == gBlocked && h != nil && h.state == gBlocked && h.sw == nil {
			return fmt.Sprintf("%s waits for %s, which %s holds while it waits in %s", g.name, g.sw.obj.TraceName(), h.name, h.waiter.Verb)
		}
	}
	return ""
}
