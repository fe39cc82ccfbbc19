package check

import (
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Finding is one misuse the sanitizer found: which rule it breaks, the
// objects it involves, what will happen, and where the program did it.
// Its JSON shape (encoding/json) is what VERBSIM_CHECK_LOG holds, one
// finding per line, with the check by name.
type Finding struct {
	Check Check  `json:"check"`
	Rule  string `json:"rule"` // the catalogue ID the misuse breaks ("CHAN-13")
	// Verb is the verb during which the misuse was found
	// ("ibv_get_cq_event"), or "exit" for what a program leaves behind.
	Verb string `json:"verb"`
	// Objects are the objects involved, the one the verb acted on first,
	// by their trace names and the user's cookies.
	Objects []Object `json:"objects,omitempty"`
	// What says what is wrong, naming the objects.
	What string `json:"what"`
	// Then says what will happen ("this wait can never end").
	Then string `json:"then"`
	// Tick is the virtual time of the finding.
	Tick uint64 `json:"tick"`
	// Thread is the calling thread: the goroutine in Go, the kernel
	// thread ID in a C program.
	Thread uint64 `json:"thread,omitempty"`
	// Stack is where the program was, innermost frame first: the Go stack
	// without verbsim's own frames, or the C backtrace of the calling
	// thread.
	Stack []Frame `json:"stack,omitempty"`
	// Related are the earlier calls the finding refers to: where an
	// object was created or destroyed, where an event was read, where a
	// work request was posted.
	Related []Related `json:"related,omitempty"`
}

// Object is an object of a finding: its name in the trace ("sim0/cq#1",
// "sim0/qp 0x11") and the cookie the program gave it (cq_context,
// qp_context, srq_context; a work request's wr_id), rendered as text, ""
// when it has none.
type Object struct {
	Name   string `json:"name"`
	Cookie string `json:"cookie,omitempty"`
}

// String renders the object as "name (cookie)" or "name".
func (o Object) String() string {
	if o.Cookie == "" {
		return o.Name
	}
	return o.Name + " (" + o.Cookie + ")"
}

// Frame is one frame of a stack.
type Frame struct {
	Func string `json:"func,omitempty"` // function, "" when unknown
	File string `json:"file,omitempty"` // source file, or the object file when there is no line information
	Line int    `json:"line,omitempty"` // 0 when unknown
	// PC is the program counter, for frames without symbols.
	PC uint64 `json:"pc,omitempty"`
}

// Site renders where the frame is: "file:line", the file alone, or the
// program counter.
func (f Frame) Site() string {
	switch {
	case f.File != "" && f.Line > 0:
		return f.File + ":" + strconv.Itoa(f.Line)
	case f.File != "":
		return f.File
	case f.PC != 0:
		return fmt.Sprintf("%#x", f.PC)
	}
	return "?"
}

// String renders the frame briefly, as a finding's line shows it: the
// function without its package path and the file without its directory,
// "main.sendLoop (main.go:42)".
func (f Frame) String() string {
	s := f.Site()
	if f.File != "" {
		s = path.Base(f.File)
		if f.Line > 0 {
			s += ":" + strconv.Itoa(f.Line)
		}
	}
	if f.Func == "" {
		return s
	}
	return path.Base(f.Func) + " (" + s + ")"
}

// Related is an earlier call a finding refers to.
type Related struct {
	What   string  `json:"what"` // "created", "event read", "destroyed", "posted"
	Tick   uint64  `json:"tick"`
	Thread uint64  `json:"thread,omitempty"`
	Stack  []Frame `json:"stack,omitempty"`
}

// String renders the related call on one line: what, and its innermost
// frame.
func (r Related) String() string {
	if len(r.Stack) == 0 {
		return r.What
	}
	return r.What + " at " + r.Stack[0].String()
}

// String renders the finding on one line, the form standard error gets:
//
//	verbsim check: CHAN-13 wait: ibv_get_cq_event on sim0/chan#1: no CQ uses the channel ...; this wait can never end; at main (pp.c:42)
func (f Finding) String() string {
	var b strings.Builder
	b.WriteString("verbsim check: ")
	b.WriteString(f.Rule)
	b.WriteString(" ")
	b.WriteString(f.Check.String())
	b.WriteString(": ")
	if f.Verb == "exit" {
		b.WriteString("at exit")
	} else {
		b.WriteString(f.Verb)
		if len(f.Objects) > 0 {
			b.WriteString(" on ")
			b.WriteString(f.Objects[0].String())
		}
	}
	b.WriteString(": ")
	b.WriteString(f.What)
	if f.Then != "" {
		b.WriteString("; ")
		b.WriteString(f.Then)
	}
	if len(f.Stack) > 0 {
		b.WriteString("; at ")
		b.WriteString(f.Stack[0].String())
	}
	if len(f.Related) > 0 {
		b.WriteString(" (")
		for i, r := range f.Related {
			if i > 0 {
				b.WriteString("; ")
			}
			if i == 3 {
				fmt.Fprintf(&b, "and %d more", len(f.Related)-3)
				break
			}
			b.WriteString(r.String())
		}
		b.WriteString(")")
	}
	return b.String()
}

// MarshalText renders the check by name, for the JSON log.
func (c Check) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText reads a check by name.
func (c *Check) UnmarshalText(b []byte) error {
	v, ok := ParseCheck(string(b))
	if !ok {
		return fmt.Errorf("unknown check %q", b)
	}
	*c = v
	return nil
}

// Summary counts the findings of a run.
type Summary struct {
	Checks     Set            // the checks that ran
	Findings   int            // findings reported
	Suppressed int            // findings that matched a suppression
	ByRule     map[string]int `json:",omitempty"` // findings reported, by rule ID
}

// String renders the summary on one line:
//
//	verbsim check: 2 findings (CHAN-13: 1, CQ-13: 1); checks: all
func (s Summary) String() string {
	var b strings.Builder
	b.WriteString("verbsim check: ")
	switch s.Findings {
	case 0:
		b.WriteString("no findings")
	case 1:
		b.WriteString("1 finding")
	default:
		fmt.Fprintf(&b, "%d findings", s.Findings)
	}
	if len(s.ByRule) > 0 {
		rules := make([]string, 0, len(s.ByRule))
		for r := range s.ByRule {
			rules = append(rules, r)
		}
		sort.Strings(rules)
		b.WriteString(" (")
		for i, r := range rules {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s: %d", r, s.ByRule[r])
		}
		b.WriteString(")")
	}
	if s.Suppressed > 0 {
		fmt.Fprintf(&b, ", %d suppressed", s.Suppressed)
	}
	b.WriteString("; checks: ")
	b.WriteString(s.Checks.String())
	return b.String()
}
