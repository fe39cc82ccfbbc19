package explore

import (
	"fmt"
	"strings"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// The annotated timeline: one entry per step, with who moved, the trace
// records the step produced (verbs with their results, engine events), the
// goroutine's state after the step, and the CQs and channels of the world
// when they changed.

// note writes a line that is not a step (setup, start) and what it left.
func (r *runner) note(label, text string) {
	fmt.Fprintf(r.timeline, "%5s  %s\n", label, text)
	r.records()
	r.viewIfChanged()
}

// nextVerb names what goroutine action a runs first when taken: the verb
// it is paused before (by name when the verb gives one, Op.Verb) and its
// object, or the wait it returns from.
func (r *runner) nextVerb(a action) string {
	g := a.g
	if g == nil {
		return ""
	}
	switch g.state {
	case gYield:
		obj := ""
		if g.op.Obj != nil {
			obj = g.op.Obj.TraceName()
		}
		switch {
		case g.op.Verb != "" && obj != "":
			return g.op.Verb + " on " + obj
		case g.op.Verb != "":
			return g.op.Verb
		case obj != "":
			return "a verb on " + obj
		}
	case gBlocked:
		if w := g.waiter; w != nil {
			return "returns from " + w.Verb
		}
	}
	return ""
}

// noteAction writes step r.steps: action a, taken among n; verb names
// what a goroutine ran first (nextVerb, before the step).
func (r *runner) noteAction(a action, n int, verb string) {
	if r.timeline == nil {
		return
	}
	who := ""
	switch {
	case a.g != nil:
		who = a.g.name
		if verb != "" {
			who += ": " + verb
		}
	case a.clock:
		who = fmt.Sprintf("clock -> t=%d", r.fabric.Now())
	default:
		who = "engine: " + describe(a.ev)
	}
	choice := ""
	if n > 1 {
		choice = fmt.Sprintf("  (%d options)", n)
	}
	fmt.Fprintf(r.timeline, "%5d  %s%s\n", r.steps, who, choice)
	r.records()
	if g := a.g; g != nil {
		switch g.state {
		case gBlocked:
			fmt.Fprintf(r.timeline, "         -> blocked: %v\n", g.waiter)
		case gDone:
			fmt.Fprintf(r.timeline, "         -> returned\n")
		}
	}
	r.viewIfChanged()
}

// records writes the trace records added since the last call.
func (r *runner) records() {
	if r.log == nil {
		return
	}
	for _, rec := range r.log.Records() {
		fmt.Fprintf(r.timeline, "         %s\n", rec.Line())
	}
	r.log.Reset()
}

// viewIfChanged writes the lines of the state of the CQs and channels
// that differ from the last ones written.
func (r *runner) viewIfChanged() {
	if r.lastView == nil {
		r.lastView = map[string]string{}
	}
	for _, line := range strings.Split(r.view(), "\n") {
		key, _, _ := strings.Cut(line, ":")
		if line == "" || r.lastView[key] == line {
			continue
		}
		r.lastView[key] = line
		fmt.Fprintf(r.timeline, "         | %s\n", line)
	}
}

// view describes every CQ (completions, arm, events read and acked) and
// every channel (events queued) of the world.
func (r *runner) view() string {
	cqs, chans := r.cqs()
	var lines []string
	for _, q := range cqs {
		s := q.h.Snapshot()
		var ids []string
		for _, w := range s.Completions {
			st := ""
			if w.Status != verbs.WCSuccess {
				st = " " + w.Status.String()
			}
			ids = append(ids, fmt.Sprintf("%d%s", w.WRID, st))
		}
		name := r.display(q.h)
		if ch := q.h.Channel(); ch != nil {
			name += " (on " + r.nameOf(ch) + ")"
		}
		line := fmt.Sprintf("%s: %d wc [%s], arm %v, events read %d acked %d", name, s.Len, strings.Join(ids, " "), s.Arm, s.CompRead, s.CompAcked)
		if s.Overrun {
			line += ", OVERRUN"
		}
		if s.Destroying {
			line += ", destroying"
		}
		lines = append(lines, line)
	}
	for _, c := range chans {
		var ids []string
		for _, q := range c.h.Pending() {
			ids = append(ids, r.nameOf(q))
		}
		lines = append(lines, fmt.Sprintf("%s: %d event(s) queued [%s]", r.display(c.h), len(ids), strings.Join(ids, " ")))
	}
	return strings.Join(lines, "\n")
}

// describe renders an engine event.
func describe(e sim.ReadyEvent) string {
	switch e.Kind {
	case sim.EventPacket:
		return fmt.Sprintf("deliver %v psn=%d to %s qp %#x", e.Packet, e.PSN, e.Device, e.QPN)
	}
	return fmt.Sprintf("%v on %s qp %#x", e.Kind, e.Device, e.QPN)
}
