package scenario

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
)

// TestParseErrors: a malformed script is one line naming file:line and what
// was expected there.
func TestParseErrors(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"", "x.scen:1: the script has no command"},
		{"#only narration\n", "x.scen:1: a comment starts with \"# \""},
		{"fabric\n----\nok\n\nfly cq=A\n", "x.scen:5: unknown command \"fly\""},
		{"poll_cq\n", "x.scen:1: poll_cq: missing cq="},
		{"poll_cq cq=A n=lots\n", "x.scen:1: poll_cq: n=lots: expected a number"},
		{"req_notify_cq cq=A\n", "x.scen:1: req_notify_cq: expected exactly one of next, solicited"},
		{"create_cq ctx=c cqe=4\n", "x.scen:1: create_cq: expected a name for the new object"},
		{"modify_qp qp=q state=flying\n", "x.scen:1: modify_qp: state=flying: expected one of reset, init"},
		{"poll_cq cq=A cq=B\n", "x.scen:1: cq is given twice"},
		{"poll_cq cq=(A\n", "x.scen:1: cq: a list is (a,b,c)"},
		{"----\n", "x.scen:1: \"----\" with no command above it"},
		{"poll_cq cq=A\npoll_cq cq=A\n", "x.scen:2: expected a blank line, a comment or \"----\""},
		{"faults drop=2\n", "x.scen:1: faults: drop=2: expected a probability"},
		{"thread t\n  poll_cq cq=A\n", "x.scen:1: the thread block has no end"},
		{"thread t\n  open_device c\nend\n", "x.scen:2: open_device cannot run in a thread"},
		{"thread t\n  thread u\n  end\nend\n", "x.scen:2: thread cannot run in a thread"},
		{"thread t\n  loop\n    exit_if polled=1\n  end\nend\n", "x.scen:4: a loop with no verb in it"},
		{"thread t\n  poll_cq cq=A\n----\nend\n", "x.scen:3: \"----\" inside a thread block"},
		{"get_cq_event channel=ch wait\n", "x.scen:1: get_cq_event wait blocks"},
		{"end\n", "x.scen:1: end belongs inside a thread block"},
		{"thread\n  poll_cq cq=A\nend\n", "x.scen:1: thread: expected a name for the block"},
		{"drain_cq cq=A\n", "x.scen:1: drain_cq belongs inside a thread block"},
	} {
		_, err := Parse("x.scen", []byte(c.src))
		var pe *ParseError
		if !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("Parse(%q) = %v, want one line starting %q", c.src, err, c.want)
		}
	}
}

// TestUnknownName: a name the script never created stops the run with
// file:line and the names of that kind it has.
func TestUnknownName(t *testing.T) {
	s, err := Parse("x.scen", []byte("open_device ctx\n\ncreate_cq A ctx=ctx cqe=2\n\npoll_cq cq=B\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(s, "default")
	if err == nil || err.Error() != "x.scen:5: cq=B: no cq of that name (the cqs so far: A)" {
		t.Errorf("Run: %v", err)
	}
}

// TestEngineErrorsArePrinted: a failed verb is part of the timeline, with
// its errno and message, and the run goes on.
func TestEngineErrorsArePrinted(t *testing.T) {
	s, err := Parse("x.scen", []byte("open_device ctx\n\ncreate_cq A ctx=ctx cqe=0\n\ncreate_cq B ctx=ctx cqe=2\n"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(s, "rxe")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Steps) != 3 || r.Steps[1].Errno != "EINVAL" || r.Steps[2].Errno != "" {
		t.Fatalf("steps %+v", r.Steps)
	}
	if b := r.Steps[1].Block(0); !strings.Contains(b, "failed: EINVAL: ") {
		t.Errorf("block %q", b)
	}
}

// TestFormatRoundTrip: formatting a parsed tour file with its own blocks
// gives the file back.
func TestFormatRoundTrip(t *testing.T) {
	files, _ := fs.Glob(Tour, "tour/*.scen")
	for _, f := range files {
		src, _ := fs.ReadFile(Tour, f)
		s, err := Parse(f, src)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, st := range s.Steps {
			out = append(out, st.Expected)
		}
		if got := Format(s, out); got != string(src) {
			t.Errorf("%s does not round-trip", f)
		}
	}
}

// FuzzParse: the parser never panics, and whatever it accepts formats and
// parses again to the same commands.
func FuzzParse(f *testing.F) {
	files, _ := fs.Glob(Tour, "tour/*.scen")
	for _, name := range files {
		src, _ := fs.ReadFile(Tour, name)
		f.Add(src)
	}
	f.Add([]byte("poll_cq cq=(A,B)\n----\nx\n\n# n\n"))
	f.Add([]byte("fault action=drop kind=(ack,send) skip=0x2\n"))
	f.Add([]byte("thread t\n  loop\n    drain_cq cq=A\n    exit_if polled=1\n  end\nend\n----\nx\n\nexplore seed=2\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		s, err := Parse("fuzz.scen", src)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Line < 1 {
				t.Fatalf("error %v is not a *ParseError with a line", err)
			}
			return
		}
		var out []string
		for _, st := range s.Steps {
			out = append(out, st.Expected)
		}
		s2, err := Parse("fuzz.scen", []byte(Format(s, out)))
		if err != nil {
			t.Fatalf("formatted script does not parse: %v", err)
		}
		if len(s2.Steps) != len(s.Steps) {
			t.Fatalf("%d steps, then %d", len(s.Steps), len(s2.Steps))
		}
		for i := range s.Steps {
			if s.Steps[i].Text != s2.Steps[i].Text || len(s.Steps[i].Body) != len(s2.Steps[i].Body) {
				t.Fatalf("step %d: %q then %q", i, s.Steps[i].Text, s2.Steps[i].Text)
			}
			for j, b := range s.Steps[i].Body {
				if b.Text != s2.Steps[i].Body[j].Text {
					t.Fatalf("step %d, line %d of its block: %q then %q", i, j, b.Text, s2.Steps[i].Body[j].Text)
				}
			}
		}
	})
}
