package scenario

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/verbsim/verbsim/internal/catalogue"
	"github.com/verbsim/verbsim/sim/trace"
)

// Result is the timeline of one script under one profile.
type Result struct {
	File    string       `json:"file"`
	Profile string       `json:"profile"`
	Steps   []StepResult `json:"steps"`
	// Trace is the engine's whole trace of the run, verb calls included,
	// with the objects named as the script names them ("qp qa", "cq A").
	Trace []trace.Record `json:"-"`
}

// StepResult is one step of a timeline.
type StepResult struct {
	Line      int      `json:"line"`
	Narration []string `json:"narration,omitempty"`
	Command   string   `json:"command"`
	// Said is what the command returned, in words.
	Said []string `json:"said"`
	// Errno and Error are set when the verb failed: the errno's name and
	// the engine's message. A failed verb is part of the lesson, never
	// the end of the run.
	Errno string `json:"errno,omitempty"`
	Error string `json:"error,omitempty"`
	// Engine is what the engine did during the step (packets, completions,
	// timers, events), from its trace, with the objects named as the
	// script names them; the records of the command's own call are left
	// out.
	Engine []trace.Record `json:"engine,omitempty"`
	State  State          `json:"state"`
	// Changed is the text timeline's state panel: the lines of the
	// objects whose state changed in this step.
	Changed []string `json:"-"`
	Rules   []Rule   `json:"rules,omitempty"`
}

// Rule is a catalogue rule that explains a step.
type Rule struct {
	ID string `json:"id"`
	// Text is the rule's title: its first sentence, cut short (ending in
	// " …") past about 80 characters.
	Text string `json:"text"`
	// Full is the whole rule, when Text is not all of it.
	Full string `json:"full,omitempty"`
	// InFull says that the text timeline prints Full at this step: the
	// rule's first appearance in the run. Later ones print the title and
	// say that the whole rule is above.
	InFull bool `json:"-"`
}

// ruleText returns the title of a live catalogue rule and its whole text,
// or "" for both.
func ruleText(id string) (title, full string) {
	r, ok := catalogue.Lookup(id)
	if !ok || r.Retired {
		return "", ""
	}
	return catalogue.Title(r.Text), strings.Join(strings.Fields(strings.ReplaceAll(r.Text, "**", "")), " ")
}

var ruleRE = regexp.MustCompile(`\b[A-Z]+-S?[0-9]{2}\b`)

// Run runs a script under the named profile. A failed verb is printed into
// the timeline; a name the script never created stops the run with an error
// naming file:line.
func Run(s *Script, profile string) (*Result, error) {
	p, ok := lookupProfile(profile)
	if !ok {
		return nil, fmt.Errorf("unknown profile %q (want %s)", profile, strings.Join(Profiles(), " or "))
	}
	in := newInterp(s.Name, p)
	in.script = s
	defer in.close()
	res := &Result{File: s.Name, Profile: profile}
	prev := map[string]string{}
	shown := map[string]bool{} // the rules already printed in full
	for i := range s.Steps {
		st := &s.Steps[i]
		if err := in.exec(st); err != nil {
			return res, err
		}
		sr := StepResult{Line: st.Line, Narration: st.Narration, Command: st.Text, Said: in.lines}
		if in.err != nil {
			sr.Errno, sr.Error, _ = strings.Cut(describeErr(in.err), ": ")
		}
		ids := slices.Clone(in.notes)
		ids = append(ids, ruleRE.FindAllString(strings.Join(in.lines, "\n"), -1)...)
		recs := in.records()
		res.Trace = append(res.Trace, recs...)
		for _, r := range recs {
			ids = append(ids, r.Rules()...)
			if r.Errno != 0 {
				// A failed verb's error cites its rules in words, as the
				// step's own error does.
				ids = append(ids, ruleRE.FindAllString(r.Why, -1)...)
			}
			if ownRecord(st, &r) {
				continue
			}
			sr.Engine = append(sr.Engine, r)
		}
		sr.State = in.snapshot()
		keys, text := sr.State.lines()
		for j, k := range keys {
			if prev[k] == "" && strings.HasSuffix(text[j], ": nothing") {
				continue // an empty wire is news only after a busy one
			}
			if prev[k] != text[j] {
				sr.Changed = append(sr.Changed, text[j])
				prev[k] = text[j]
			}
		}
		seen := map[string]bool{}
		for _, id := range ids {
			if t, full := ruleText(id); t != "" && !seen[id] {
				seen[id] = true
				ru := Rule{ID: id, Text: t}
				if full != t {
					ru.Full, ru.InFull = full, !shown[id]
				}
				shown[id] = true
				sr.Rules = append(sr.Rules, ru)
			}
		}
		res.Steps = append(res.Steps, sr)
	}
	return res, nil
}

// ownRecord reports whether r is the record of the step's own call, which
// the step's result already says: a verb, a fault set or armed, or the
// completion that a complete command writes.
func ownRecord(st *Step, r *trace.Record) bool {
	switch r.Kind {
	case trace.KindVerb:
		return true
	case trace.KindFault:
		return r.Name == "faults" || r.Name == "arm fault"
	case trace.KindCompletion:
		return st.Verb == "complete" && r.Name == "completion"
	}
	return false
}

// Block renders one step as its expected-output block: what the command
// returned, what the engine did, the state that changed, the time and the
// rules. It never contains a blank line.
func (r StepResult) Block(prevTime uint64) string { return r.block(prevTime, true) }

// block is Block, with or without the rules (the HTML page shows them
// apart, each one unfolding to its whole text).
func (r StepResult) block(prevTime uint64, rules bool) string {
	var b strings.Builder
	for _, l := range r.Said {
		b.WriteString(l + "\n")
	}
	if len(r.Engine) > 0 {
		b.WriteString("engine:\n")
		for _, e := range r.Engine {
			fmt.Fprintf(&b, "  at %s  %s\n", fmtTime(e.Tick), e.Line())
		}
	}
	if r.State.TimeNS != prevTime {
		fmt.Fprintf(&b, "time: %s (virtual; it was %s)\n", fmtTime(r.State.TimeNS), fmtTime(prevTime))
	}
	if len(r.Changed) > 0 {
		b.WriteString("state:\n")
		for _, l := range r.Changed {
			b.WriteString("  " + l + "\n")
		}
	}
	if len(r.Rules) > 0 && rules {
		b.WriteString("rules:\n")
		for _, ru := range r.Rules {
			switch {
			case ru.InFull:
				b.WriteString(hang("  "+ru.ID+"  ", ru.Full, ruleWidth))
			case ru.Full != "":
				fmt.Fprintf(&b, "  %s  %s (whole rule above)\n", ru.ID, ru.Text)
			default:
				fmt.Fprintf(&b, "  %s  %s\n", ru.ID, ru.Text)
			}
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// ruleWidth is the width the text timeline wraps a whole rule to, its
// indent included (the timeline indents every block by four more).
const ruleWidth = 92

// hang wraps text to width columns after head, the lines after the first
// indented to line up under its start, and ends with a newline.
func hang(head, text string, width int) string {
	var b strings.Builder
	pad := strings.Repeat(" ", len([]rune(head)))
	line := head
	n := len([]rune(head))
	for i, w := range strings.Fields(text) {
		wl := len([]rune(w))
		if i > 0 && n+1+wl > width {
			b.WriteString(line + "\n")
			line, n = pad+w, len([]rune(pad))+wl
			continue
		}
		if i > 0 {
			line += " "
			n++
		}
		line += w
		n += wl
	}
	b.WriteString(line + "\n")
	return b.String()
}

// Blocks returns every step's block.
func (r *Result) Blocks() []string {
	out := make([]string, len(r.Steps))
	var t uint64
	for i, s := range r.Steps {
		out[i] = s.Block(t)
		t = s.State.TimeNS
	}
	return out
}

// WriteText writes the annotated timeline: each step's narration, its
// command and its block.
func (r *Result) WriteText(w io.Writer) error {
	if err := r.WriteHeader(w); err != nil {
		return err
	}
	for i := range r.Steps {
		if err := r.WriteStep(w, i); err != nil {
			return err
		}
	}
	return nil
}

// WriteHeader writes the first line of the text timeline: the file and
// the profile.
func (r *Result) WriteHeader(w io.Writer) error {
	_, err := fmt.Fprintf(w, "%s, profile %s (%s)\n", r.File, r.Profile, ProfileSummary(r.Profile))
	return err
}

// WriteStep writes step i of the text timeline (from 0): a blank line, its
// narration, its number and command, and its block.
func (r *Result) WriteStep(w io.Writer, i int) error {
	if i < 0 || i >= len(r.Steps) {
		return nil
	}
	var t uint64
	if i > 0 {
		t = r.Steps[i-1].State.TimeNS
	}
	s := r.Steps[i]
	var b strings.Builder
	b.WriteString("\n")
	for _, n := range s.Narration {
		b.WriteString(strings.TrimRight("  "+n, " ") + "\n")
	}
	fmt.Fprintf(&b, "[%d] %s\n", i+1, s.Command)
	for _, l := range strings.Split(s.Block(t), "\n") {
		b.WriteString("    " + l + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes the timeline as one JSON object.
func (r *Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// Merge combines the blocks of the same script run under several profiles
// into the expected blocks of the file: a step on which every profile
// agrees gets one block; one on which they differ gets a section per
// profile, each started by ProfileMark.
func Merge(results []*Result) []string {
	if len(results) == 0 {
		return nil
	}
	blocks := make([][]string, len(results))
	n := 0
	for i, r := range results {
		blocks[i] = r.Blocks()
		n = max(n, len(blocks[i]))
	}
	out := make([]string, n)
	for j := range n {
		same := true
		for i := range results {
			if j >= len(blocks[i]) || blocks[i][j] != blocks[0][j] {
				same = false
			}
		}
		if same {
			out[j] = blocks[0][j]
			continue
		}
		var parts []string
		for i, r := range results {
			b := "(the run stopped before this step)"
			if j < len(blocks[i]) {
				b = blocks[i][j]
			}
			parts = append(parts, ProfileMark+r.Profile+"\n"+b)
		}
		out[j] = strings.Join(parts, "\n")
	}
	return out
}

// fmtTime renders a virtual time in nanoseconds with its unit.
func fmtTime(ns uint64) string {
	if ns == 0 {
		return "0 ns"
	}
	return fmtDur(ns)
}

// fmtDur renders a duration in nanoseconds exactly, in the largest unit
// that keeps it readable: 640 ns, 4.096 µs, 67.108864 ms, 1.5 s.
func fmtDur(ns uint64) string {
	switch {
	case ns < 1000:
		return strconv.FormatUint(ns, 10) + " ns"
	case ns < 1000000:
		return strconv.FormatFloat(float64(ns)/1e3, 'f', -1, 64) + " µs"
	case ns < 1000000000:
		return strconv.FormatFloat(float64(ns)/1e6, 'f', -1, 64) + " ms"
	}
	return strconv.FormatFloat(float64(ns)/1e9, 'f', -1, 64) + " s"
}
