package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// narrator writes the walkthrough: numbered steps, what the program does, and
// the state of the objects after it.
type narrator struct {
	w    io.Writer
	step int
	err  error
}

func (n *narrator) printf(format string, args ...any) {
	if n.err == nil {
		_, n.err = fmt.Fprintf(n.w, format, args...)
	}
}

// section starts a numbered step.
func (n *narrator) section(title string) {
	n.step++
	n.printf("\n== %d. %s ==\n", n.step, title)
}

// say prints narration, wrapped to the width of a terminal.
func (n *narrator) say(text string) {
	n.printf("%s\n", wrap(text, 78, "   "))
}

// do prints a verb call and its result.
func (n *narrator) do(call string, result any) {
	n.printf("   > %-44s -> %v\n", call, result)
}

// show prints the state of a CQ and its channel.
func (n *narrator) show(name string, q *sim.CQ, ch *sim.CompChannel) {
	s := q.Snapshot()
	var ring []string
	for _, w := range s.Completions {
		ring = append(ring, short(w))
	}
	state := ""
	switch {
	case s.Destroyed:
		state = " DESTROYED"
	case s.Destroying:
		state = " DESTROYING (waiting for acks)"
	case s.Overrun:
		state = " ERROR (overrun)"
	}
	n.printf("     %s%s: ring %d/%d [%s]  arm=%s  events read/acked=%d/%d",
		name, state, s.Len, s.CQE, strings.Join(ring, " "), s.Arm, s.CompRead, s.CompAcked)
	if ch != nil {
		n.printf("  channel queue=%d", ch.Len())
	}
	n.printf("\n")
}

func short(w verbs.WC) string {
	if w.Status != verbs.WCSuccess {
		return fmt.Sprintf("#%d:%s", w.WRID, w.Status)
	}
	return fmt.Sprintf("#%d:%v", w.WRID, w.Opcode)
}

func wrap(text string, width int, indent string) string {
	var b strings.Builder
	line := indent
	for _, word := range strings.Fields(text) {
		if len(line)+len(word)+1 > width && strings.TrimSpace(line) != "" {
			b.WriteString(strings.TrimRight(line, " ") + "\n")
			line = indent
		}
		line += word + " "
	}
	b.WriteString(strings.TrimRight(line, " "))
	return b.String()
}
