// Package cmdline splits one command line of verbsim's scenario language
// into its verb and arguments: bare words (a new object's name, or a flag),
// key=value, and key=(v1,v2,...) with no spaces. Package scenario parses
// scenario files with it; conformance/ops reads its operation logs, which
// are scenarios, with it too.
package cmdline

import (
	"fmt"
	"strings"
)

// Arg is one argument of a command: a flag or name (a bare word: Key set,
// Vals nil, Bare true), or key=value, or key=(v1,v2,...).
type Arg struct {
	Key  string
	Vals []string
	Bare bool
}

// Split splits a command line into its verb and arguments. It never panics;
// a malformed line is an error saying what was expected.
func Split(line string) (string, []Arg, error) {
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return "", nil, fmt.Errorf("expected a command, got an empty line")
	}
	verb := fields[0]
	if !IsWord(verb) {
		return "", nil, fmt.Errorf("expected a command name (letters, digits, _), got %q", Clip(verb))
	}
	var args []Arg
	for _, f := range fields[1:] {
		key, val, ok := strings.Cut(f, "=")
		if !ok {
			if !IsWord(f) {
				return "", nil, fmt.Errorf("expected key=value or a word, got %q", Clip(f))
			}
			args = append(args, Arg{Key: f, Bare: true})
			continue
		}
		if !IsWord(key) {
			return "", nil, fmt.Errorf("expected key=value with a word as key, got %q", Clip(f))
		}
		var vals []string
		if strings.HasPrefix(val, "(") {
			if !strings.HasSuffix(val, ")") {
				return "", nil, fmt.Errorf("%s: a list is (a,b,c) with no spaces, got %q", key, Clip(val))
			}
			vals = strings.Split(val[1:len(val)-1], ",")
		} else {
			vals = []string{val}
		}
		for _, v := range vals {
			if v == "" || strings.ContainsAny(v, "()=,") {
				return "", nil, fmt.Errorf("%s: expected a value, got %q", key, Clip(val))
			}
		}
		for _, a := range args {
			if a.Key == key && !a.Bare {
				return "", nil, fmt.Errorf("%s is given twice", key)
			}
		}
		args = append(args, Arg{Key: key, Vals: vals})
	}
	return verb, args, nil
}

// IsWord reports whether s is a word of the language: letters, digits, _,
// - and . only.
func IsWord(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r == '-' || r == '.' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// Clip shortens s for an error message.
func Clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
