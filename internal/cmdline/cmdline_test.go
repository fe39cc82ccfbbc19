package cmdline

import (
	"strings"
	"testing"
)

// TestSplit covers each shape of argument and each malformed line.
func TestSplit(t *testing.T) {
	for _, c := range []struct {
		line, verb string
		args       []Arg
		err        string
	}{
		{line: "poll_cq cq=A n=4 ex", verb: "poll_cq", args: []Arg{{Key: "cq", Vals: []string{"A"}}, {Key: "n", Vals: []string{"4"}}, {Key: "ex", Bare: true}}},
		{line: "post_send qp=q wr_id=(1,2) signaled=(2) signaled", verb: "post_send",
			args: []Arg{{Key: "qp", Vals: []string{"q"}}, {Key: "wr_id", Vals: []string{"1", "2"}}, {Key: "signaled", Vals: []string{"2"}}, {Key: "signaled", Bare: true}}},
		{line: "ack_cq_events cq=A n=-1", verb: "ack_cq_events", args: []Arg{{Key: "cq", Vals: []string{"A"}}, {Key: "n", Vals: []string{"-1"}}}},
		{line: "", err: "empty line"},
		{line: "#x", err: "command name"},
		{line: "a b=(1,2", err: "a list is"},
		{line: "a b=()", err: "expected a value"},
		{line: "a b=1 b=2", err: "given twice"},
		{line: "a =1", err: "word as key"},
		{line: "a b!", err: "key=value or a word"},
	} {
		verb, args, err := Split(c.line)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("Split(%q) = %v, want an error with %q", c.line, err, c.err)
			}
			continue
		}
		if err != nil || verb != c.verb || len(args) != len(c.args) {
			t.Errorf("Split(%q) = %q, %+v, %v", c.line, verb, args, err)
			continue
		}
		for i, a := range args {
			if a.Key != c.args[i].Key || a.Bare != c.args[i].Bare || strings.Join(a.Vals, ",") != strings.Join(c.args[i].Vals, ",") {
				t.Errorf("Split(%q) argument %d = %+v, want %+v", c.line, i, a, c.args[i])
			}
		}
	}
}

// join writes a split line back.
func join(verb string, args []Arg) string {
	parts := []string{verb}
	for _, a := range args {
		switch {
		case a.Bare:
			parts = append(parts, a.Key)
		case len(a.Vals) == 1:
			parts = append(parts, a.Key+"="+a.Vals[0])
		default:
			parts = append(parts, a.Key+"=("+strings.Join(a.Vals, ",")+")")
		}
	}
	return strings.Join(parts, " ")
}

// FuzzSplit: Split never panics, and a line it accepts, written back,
// splits the same.
func FuzzSplit(f *testing.F) {
	for _, s := range []string{"poll_cq cq=A n=4 ex", "post_send qp=q wr_id=(1,2) signaled", "fabric devices=(a) readings=(ExactCQE,-NoXRC)", "x =", "a b=(,)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		verb, args, err := Split(line)
		if err != nil {
			return
		}
		again := join(verb, args)
		v2, a2, err := Split(again)
		if err != nil || v2 != verb || join(v2, a2) != again {
			t.Fatalf("%q splits to %q, which splits to %q, %v", line, again, join(v2, a2), err)
		}
	})
}
