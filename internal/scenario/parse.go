package scenario

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/verbsim/verbsim/internal/cmdline"
)

// Script is a parsed scenario file.
type Script struct {
	Name  string // the file name, for errors
	Steps []Step
	// Trailer is the narration after the last step.
	Trailer []string
}

// Step is one command of a script with the narration above it and the
// expected output below it.
type Step struct {
	Line      int      // the line of the command, from 1
	Narration []string // the comment lines above it, without "# "
	Text      string   // the command line as written
	Verb      string
	Args      []Arg
	// Expected is the block after "----", lines joined by "\n"; HasExpected
	// says whether the step has one at all.
	Expected    string
	HasExpected bool
	// Body is the block of a thread or daemon command: the commands up
	// to its end, loop and its end included (threads.go).
	Body []Step
}

// Arg is one argument of a command: a flag or name (a bare word: Key set,
// Vals nil), or key=value, or key=(v1,v2,...).
type Arg = cmdline.Arg

// Separator starts a step's expected output.
const Separator = "----"

// ProfileMark starts the part of an expected block that holds under one
// profile only: ">> profile rxe".
const ProfileMark = ">> profile "

// ParseError is a malformed script: the file, the line and what was
// expected there.
type ParseError struct {
	File string
	Line int
	Msg  string
}

func (e *ParseError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// Parse reads a scenario. It checks every command against the command
// table (name, keys, flags, values that must be numbers or one of a list),
// so a script that parses only fails at run time on names it never
// created. It never panics; a malformed script is a *ParseError.
func Parse(name string, src []byte) (*Script, error) {
	s := &Script{Name: name}
	lines := strings.Split(strings.ReplaceAll(string(src), "\r\n", "\n"), "\n")
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	fail := func(line int, format string, args ...any) (*Script, error) {
		return nil, &ParseError{File: name, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	var narr []string
	for i := 0; i < len(lines); i++ {
		raw := lines[i]
		line := strings.TrimSpace(raw)
		switch {
		case line == "":
			continue
		case line == "#" || strings.HasPrefix(line, "# "):
			narr = append(narr, strings.TrimPrefix(strings.TrimPrefix(line, "#"), " "))
			continue
		case strings.HasPrefix(line, "#"):
			return fail(i+1, "a comment starts with \"# \" (a space after #), got %q", clip(line))
		case line == Separator:
			return fail(i+1, "%q with no command above it: a command line must come first", Separator)
		}
		st := Step{Line: i + 1, Narration: narr, Text: line}
		narr = nil
		verb, args, err := cmdline.Split(line)
		if err != nil {
			return fail(i+1, "%v", err)
		}
		st.Verb, st.Args = verb, args
		if err := check(verb, args); err != nil {
			return fail(i+1, "%v", err)
		}
		if inThreads[verb] && !topLevel[verb] {
			return fail(i+1, "%s belongs inside a thread block (thread NAME ... end)", verb)
		}
		if verb == "get_cq_event" && hasFlag(args, "wait") {
			return fail(i+1, "get_cq_event wait blocks: it belongs inside a thread block, which runs under the explorer")
		}
		if verb == "thread" || verb == "daemon" {
			body, end, err := parseBody(name, lines, i+1)
			if err != nil {
				return nil, err
			}
			st.Body, i = body, end
		}
		if i+1 < len(lines) && strings.TrimSpace(lines[i+1]) == Separator {
			i++
			st.HasExpected = true
			var out []string
			for i+1 < len(lines) && strings.TrimSpace(lines[i+1]) != "" {
				i++
				out = append(out, strings.TrimRight(lines[i], " \t"))
			}
			st.Expected = strings.Join(out, "\n")
		} else if i+1 < len(lines) && strings.TrimSpace(lines[i+1]) != "" && !strings.HasPrefix(strings.TrimSpace(lines[i+1]), "#") {
			return fail(i+2, "expected a blank line, a comment or %q after the command, got %q", Separator, clip(lines[i+1]))
		}
		s.Steps = append(s.Steps, st)
	}
	s.Trailer = narr
	if len(s.Steps) == 0 {
		return fail(max(len(lines), 1), "the script has no command")
	}
	return s, nil
}

func clip(s string) string { return cmdline.Clip(s) }

// parseBody reads the block of a thread that starts at lines[from], up to
// its end (the index of that line is returned): a command per line,
// comments and blank lines left out, loop ... end nested.
func parseBody(name string, lines []string, from int) ([]Step, int, error) {
	fail := func(line int, format string, args ...any) ([]Step, int, error) {
		return nil, 0, &ParseError{File: name, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	var body []Step
	depth := 1
	loops := []int{} // the body index of each open loop
	for j := from; j < len(lines); j++ {
		line := strings.TrimSpace(lines[j])
		switch {
		case line == "" || line == "#" || strings.HasPrefix(line, "# "):
			continue
		case line == Separator:
			return fail(j+1, "%q inside a thread block: a thread's commands have no expected output (its end may)", Separator)
		}
		verb, args, err := cmdline.Split(line)
		if err != nil {
			return fail(j+1, "%v", err)
		}
		if err := check(verb, args); err != nil {
			return fail(j+1, "%v", err)
		}
		if !inThreads[verb] {
			return fail(j+1, "%s cannot run in a thread: a thread takes %s", verb, threadCommands())
		}
		st := Step{Line: j + 1, Text: line, Verb: verb, Args: args}
		switch verb {
		case "loop":
			depth++
			loops = append(loops, len(body))
		case "end":
			depth--
			if depth == 0 {
				return body, j, nil
			}
			start := loops[len(loops)-1]
			loops = loops[:len(loops)-1]
			verbs := 0
			for _, b := range body[start+1:] {
				if b.Verb != "exit_if" && b.Verb != "loop" && b.Verb != "end" {
					verbs++
				}
			}
			if verbs == 0 {
				return fail(j+1, "a loop with no verb in it would spin for ever without a choice point")
			}
		}
		body = append(body, st)
	}
	return fail(from, "the thread block has no end")
}

func hasFlag(args []Arg, flag string) bool {
	for _, a := range args {
		if a.Bare && a.Key == flag {
			return true
		}
	}
	return false
}

// check validates a command against the table.
func check(verb string, args []Arg) error {
	c, ok := commandTable[verb]
	if !ok {
		return fmt.Errorf("unknown command %q (verbsim run -help lists the commands)", clip(verb))
	}
	named := false
	have := map[string]bool{}
	for _, a := range args {
		if a.Bare {
			switch {
			case slices.Contains(c.flags, a.Key):
				have[a.Key] = true
			case (c.name || c.block) && !named:
				named = true
			default:
				return fmt.Errorf("%s: unexpected word %q (%s)", verb, clip(a.Key), c.usage(verb))
			}
			continue
		}
		k, ok := c.keys[a.Key]
		if !ok {
			return fmt.Errorf("%s: unknown key %q (%s)", verb, clip(a.Key), c.usage(verb))
		}
		have[a.Key] = true
		if len(a.Vals) > 1 && !k.list {
			return fmt.Errorf("%s: %s takes one value, not a list", verb, a.Key)
		}
		for _, v := range a.Vals {
			switch {
			case k.num:
				if _, err := parseNum(v); err != nil {
					return fmt.Errorf("%s: %s=%s: expected a number", verb, a.Key, clip(v))
				}
			case k.prob:
				p, err := strconv.ParseFloat(v, 64)
				if err != nil || p < 0 || p > 1 {
					return fmt.Errorf("%s: %s=%s: expected a probability in [0, 1]", verb, a.Key, clip(v))
				}
			case k.int:
				if _, err := strconv.ParseInt(v, 0, 64); err != nil {
					return fmt.Errorf("%s: %s=%s: expected a number", verb, a.Key, clip(v))
				}
			case k.oneOf != nil && k.orNum:
				if _, err := parseNum(v); err != nil && !slices.Contains(k.oneOf, v) {
					return fmt.Errorf("%s: %s=%s: expected a number or one of %s", verb, a.Key, clip(v), strings.Join(k.oneOf, ", "))
				}
			case k.oneOf != nil:
				if !slices.Contains(k.oneOf, v) {
					return fmt.Errorf("%s: %s=%s: expected one of %s", verb, a.Key, clip(v), strings.Join(k.oneOf, ", "))
				}
			}
		}
	}
	if c.block && !named {
		return fmt.Errorf("%s: expected a name for the block (%s)", verb, c.usage(verb))
	}
	if c.name && !named {
		return fmt.Errorf("%s: expected a name for the new object (%s)", verb, c.usage(verb))
	}
	for _, r := range c.required {
		if !have[r] {
			return fmt.Errorf("%s: missing %s= (%s)", verb, r, c.usage(verb))
		}
	}
	if len(c.oneFlag) > 0 {
		n := 0
		for _, f := range c.oneFlag {
			if have[f] {
				n++
			}
		}
		if n != 1 {
			return fmt.Errorf("%s: expected exactly one of %s", verb, strings.Join(c.oneFlag, ", "))
		}
	}
	return nil
}

// parseNum reads a decimal or 0x-prefixed unsigned number.
func parseNum(s string) (uint64, error) {
	return strconv.ParseUint(s, 0, 64)
}

// Format renders s back as a scenario file whose expected blocks are out
// (one entry per step; a step whose entry is "" gets an empty block). It is
// how -rewrite regenerates a golden file.
func Format(s *Script, out []string) string {
	var b strings.Builder
	for i, st := range s.Steps {
		if i > 0 {
			b.WriteString("\n")
		}
		for _, n := range st.Narration {
			if n == "" {
				b.WriteString("#\n")
			} else {
				b.WriteString("# " + n + "\n")
			}
		}
		b.WriteString(st.Text + "\n")
		if st.Body != nil {
			depth := 1
			for _, c := range st.Body {
				if c.Verb == "end" {
					depth--
				}
				b.WriteString(strings.Repeat("  ", depth) + c.Text + "\n")
				if c.Verb == "loop" {
					depth++
				}
			}
			b.WriteString("end\n")
		}
		b.WriteString(Separator + "\n")
		if i < len(out) && out[i] != "" {
			b.WriteString(out[i] + "\n")
		}
	}
	if len(s.Trailer) > 0 {
		b.WriteString("\n")
		for _, n := range s.Trailer {
			if n == "" {
				b.WriteString("#\n")
			} else {
				b.WriteString("# " + n + "\n")
			}
		}
	}
	return b.String()
}
