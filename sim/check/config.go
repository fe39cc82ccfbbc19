package check

import (
	"fmt"
	"io"
	"strings"
)

// ExitCode is the exit status of a program that HaltOnError stops: the
// status AddressSanitizer's halt_on_error gives is 1, which many programs
// use for their own failures, so the sanitizer takes one of its own.
const ExitCode = 66

// Config turns the sanitizer on for a fabric (sim.Config.Check) and says
// where its findings go. The zero Config has every check on, writes each
// finding as one line to standard error, keeps no log and never stops the
// program.
type Config struct {
	// Checks are the checks to run; the zero Set means All.
	Checks Set
	// HaltOnError stops the program after the first finding that is not
	// suppressed, as AddressSanitizer's halt_on_error does: the finding and
	// the summary are written, then Halt is called. Without it a finding
	// changes nothing: the verb goes on and returns what it would have.
	HaltOnError bool
	// Output receives one line per finding (Finding.String) and, when the
	// fabric closes with findings, the summary; nil: standard error.
	// io.Discard silences it.
	Output io.Writer
	// Log, if set, receives one JSON object per finding (Finding's JSON
	// shape, one per line), for tools: VERBSIM_CHECK_LOG of the drop-in
	// library.
	Log io.Writer
	// Report, if set, is called with every finding that is not
	// suppressed, after Output and Log. It is called with the fabric's
	// lock held: it must not call verbs of the fabric. simtest fails the
	// test through it.
	Report func(Finding)
	// Halt is what HaltOnError calls; nil: exit the process with ExitCode.
	Halt func()
	// Suppress silences findings; see Suppression.
	Suppress []Suppression
	// Callers, if set, returns the program counters of the calling
	// thread's stack, innermost first, as the sanitizer records where a
	// verb was called from: the drop-in library returns the C backtrace
	// its verb took. Nil: the Go stack of the calling goroutine.
	Callers func() []uintptr
	// Symbolize, if set, turns what Callers returned into frames; nil:
	// the Go runtime's symbols, with the frames inside verbsim left out.
	Symbolize func(pcs []uintptr) []Frame
	// Thread, if set, identifies the calling thread (the drop-in: its
	// kernel thread ID); nil: the goroutine's ID.
	Thread func() uint64
}

// Suppression silences the findings of one check or rule, anywhere or at
// one place. Parse reads them from "name@where" (see ParseSuppressions).
type Suppression struct {
	// Name is a check's name ("wait"), a rule ID ("CHAN-13") or "*" for
	// any finding.
	Name string
	// Where, if set, limits the suppression to findings with a frame
	// whose function or file:line contains it, or that name an object
	// whose name contains it.
	Where string
}

// Matches reports whether s silences f.
func (s Suppression) Matches(f Finding) bool {
	if s.Name != "*" && s.Name != f.Check.String() && s.Name != f.Rule {
		return false
	}
	if s.Where == "" {
		return true
	}
	for _, fr := range f.Stack {
		if strings.Contains(fr.Func, s.Where) || strings.Contains(fr.Site(), s.Where) {
			return true
		}
	}
	for _, o := range f.Objects {
		if strings.Contains(o.Name, s.Where) {
			return true
		}
	}
	return false
}

// ParseSuppressions reads a list of suppressions separated by semicolons
// or newlines, each "name" or "name@where" (Suppression), as
// VERBSIM_CHECK_SUPPRESS gives them: "wait@main.c:42;leak".
func ParseSuppressions(s string) ([]Suppression, error) {
	var out []Suppression
	for _, item := range strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == '\n' }) {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, where, _ := strings.Cut(item, "@")
		name = strings.TrimSpace(name)
		if _, ok := ParseCheck(name); !ok && name != "*" && !isRuleID(name) {
			return nil, fmt.Errorf("suppression %q: %q is no check name, rule ID or *", item, name)
		}
		out = append(out, Suppression{Name: name, Where: strings.TrimSpace(where)})
	}
	return out, nil
}

// isRuleID reports whether s looks like a catalogue ID: capitals, a dash,
// digits ("CHAN-13", "WC-S05").
func isRuleID(s string) bool {
	fam, num, ok := strings.Cut(s, "-")
	if !ok || fam == "" || num == "" {
		return false
	}
	for _, r := range fam {
		if r < 'A' || r > 'Z' {
			return false
		}
	}
	num = strings.TrimPrefix(num, "S")
	for _, r := range num {
		if r < '0' || r > '9' {
			return false
		}
	}
	return num != ""
}

// Parse reads the value of VERBSIM_CHECK: which checks to run and whether
// to halt. It reports on false when the value turns the sanitizer off.
//
//   - "", "0", "off" or "none": off;
//   - "1", "on" or "all": every check;
//   - a comma-separated list of check names (String), each adding its
//     check; a name with a "-" in front removes it instead, and a list
//     that begins with a removal starts from every check: "-leak" is every
//     check but leak, "wait,ack" only those two;
//   - "halt_on_error" anywhere in the list stops the program at the first
//     finding (Config.HaltOnError).
//
// An unknown name is an error that lists the known ones.
func Parse(s string) (checks Set, halt bool, on bool, err error) {
	s = strings.TrimSpace(s)
	switch strings.ToLower(s) {
	case "", "0", "off", "none", "false":
		return 0, false, false, nil
	}
	first := true
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		switch strings.ToLower(item) {
		case "":
			continue
		case "1", "on", "all", "true":
			checks = All
		case "halt_on_error", "halt":
			halt = true
			continue
		default:
			name, remove := strings.CutPrefix(item, "-")
			c, ok := ParseCheck(name)
			if !ok {
				return 0, false, false, fmt.Errorf("VERBSIM_CHECK: unknown check %q (the checks: %s; or 1, all, halt_on_error)", name, Set(All).names())
			}
			if remove {
				if first {
					checks = All
				}
				checks = checks.Without(c)
			} else {
				checks |= Of(c)
			}
		}
		first = false
	}
	if checks == 0 && !halt {
		return 0, false, false, nil
	}
	if checks == 0 { // "halt_on_error" alone: every check, halting
		checks = All
	}
	return checks, halt, true, nil
}

// names lists the names of s, comma-separated, never "all".
func (s Set) names() string {
	var names []string
	for c := Check(1); c < numChecks; c++ {
		if s.Has(c) {
			names = append(names, c.String())
		}
	}
	return strings.Join(names, ", ")
}
