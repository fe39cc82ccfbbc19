package scenario

import (
	"errors"
	"strings"
	"testing"

	"github.com/verbsim/verbsim/explore"
)

// setupCQ is the setup the thread tests share: a CQ A on a channel ch,
// armed.
const setupCQ = `fabric devices=(a)

open_device ctx dev=a

create_comp_channel ch ctx=ctx

create_cq A ctx=ctx cqe=8 channel=ch

req_notify_cq cq=A next

`

// recipeThreads is a producer of two completions and a consumer running
// the documented recipe on A.
const recipeThreads = `thread producer
  complete cq=A wr_id=1
  complete cq=A wr_id=2
end

thread consumer
  loop
    get_cq_event channel=ch wait
    ack_cq_events cq=A
    req_notify_cq cq=A next
    drain_cq cq=A
    exit_if polled=2
  end
end
`

// TestThreadWorlds: the threads of a script, explored: the recipe passes
// a complete search; a destroy that races the consumer fails, as a
// deadlock (the consumer waits on a channel whose only CQ is gone) or an
// assertion (its next verb fails, with the line of the script); a
// consumer that never acknowledges blocks the destroy; and the token of a
// failure replays on the same script only.
func TestThreadWorlds(t *testing.T) {
	cases := []struct {
		name, threads string
		want          []explore.Kind
		text          string
	}{
		{"recipe", recipeThreads, nil, ""},
		{"teardown-race", strings.Replace(recipeThreads, "  complete cq=A wr_id=2\n", "  complete cq=A wr_id=2\n  destroy_cq cq=A\n", 1),
			[]explore.Kind{explore.Deadlock, explore.Assertion}, ""},
		{"never-acked", `thread producer
  complete cq=A wr_id=1
end

thread consumer
  get_cq_event channel=ch wait
  drain_cq cq=A
  destroy_cq cq=A
end
`, []explore.Kind{explore.DestroyBlocked}, "none was ever acknowledged"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := Parse(c.name+".scen", []byte(setupCQ+c.threads))
			if err != nil {
				t.Fatal(err)
			}
			world, err := World(s, "default", len(s.Steps))
			if err != nil {
				t.Fatal(err)
			}
			res := explore.Explore(world, explore.Options{Schedules: 2000})
			t.Logf("%v", res)
			f := res.Failure
			switch {
			case c.want == nil && (f != nil || !res.Complete):
				t.Fatalf("%v: %v", res, f)
			case c.want == nil:
				return
			case f == nil:
				t.Fatalf("nothing found: %v", res)
			}
			ok := false
			for _, k := range c.want {
				ok = ok || f.Kind == k
			}
			if !ok || !strings.Contains(f.Message, c.text) {
				t.Fatalf("found %v: %s", f.Kind, f.Message)
			}
			if f.Kind == explore.Assertion && !strings.Contains(f.Message, c.name+".scen:") {
				t.Errorf("an assertion without the script's line: %s", f.Message)
			}
			if g, err := explore.RunToken(world, f.Token); err != nil || g == nil || g.Timeline != f.Timeline {
				t.Errorf("replay on the same script: %v, %v", g, err)
			}
			other, _ := Parse("other.scen", []byte(setupCQ+recipeThreads))
			ow, _ := World(other, "default", len(other.Steps))
			if _, err := explore.RunToken(ow, f.Token); err == nil {
				t.Errorf("the token replayed on another script")
			}
		})
	}
}

// TestThreadsNeedAWorld: a script with no thread has nothing to explore,
// and a thread naming what the setup never made stops the world with the
// line.
func TestThreadsNeedAWorld(t *testing.T) {
	s, _ := Parse("x.scen", []byte(setupCQ))
	if _, err := World(s, "default", len(s.Steps)); err == nil || !strings.Contains(err.Error(), "no thread") {
		t.Errorf("a script with no thread: %v", err)
	}
	s, err := Parse("y.scen", []byte(setupCQ+"thread t\n  poll_cq cq=B\nend\n"))
	if err != nil {
		t.Fatal(err)
	}
	world, _ := World(s, "default", len(s.Steps))
	f := explore.Explore(world, explore.Options{Schedules: 1}).Failure
	if f == nil || !strings.Contains(f.Message, "y.scen:") || !strings.Contains(f.Message, "cq=B") {
		t.Errorf("an unknown name in a thread: %v", f)
	}
}

// TestThreadsRoundTrip: a thread block prints with its commands indented
// by their depth and its end, whatever the indentation it was written
// with, and the printed script parses to the same blocks.
func TestThreadsRoundTrip(t *testing.T) {
	src := setupCQ + "thread t\nloop\n      drain_cq cq=A\n exit_if polled=1\n  get_cq_event channel=ch wait\n\n  # a comment is dropped\nend\nend\n----\nx\n\ndaemon d\n complete cq=A wr_id=7\nend\n"
	s, err := Parse("rt.scen", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	out := Format(s, nil)
	want := "thread t\n  loop\n    drain_cq cq=A\n    exit_if polled=1\n    get_cq_event channel=ch wait\n  end\nend\n----\n"
	if !strings.Contains(out, want) || !strings.Contains(out, "daemon d\n  complete cq=A wr_id=7\nend\n") {
		t.Fatalf("printed:\n%s", out)
	}
	s2, err := Parse("rt.scen", []byte(out))
	if err != nil {
		t.Fatalf("the printed script does not parse: %v\n%s", err, out)
	}
	if Format(s2, nil) != out {
		t.Errorf("printing is not stable:\n%s\nthen\n%s", out, Format(s2, nil))
	}
	if got := len(s2.Steps[len(s2.Steps)-2].Body); got != 5 {
		t.Errorf("thread t has %d commands after the round trip, want 5 (loop, 3 commands, end)", got)
	}
}

// FuzzThreads: any thread blocks after a fixed setup either are refused
// by the parser with a line, or make a world that the explorer runs to an
// outcome (a pass or a failure with a message and a token that replays),
// never a panic of the interpreter or a hang.
func FuzzThreads(f *testing.F) {
	f.Add([]byte(recipeThreads))
	f.Add([]byte("thread t\n  loop\n    poll_cq cq=A n=0\n    exit_if polled=0\n  end\nend\n"))
	f.Add([]byte("daemon d\n  loop\n    get_cq_event channel=ch wait\n    ack_cq_events cq=A n=-3\n  end\nend\nthread p\n  destroy_cq cq=A\n  complete cq=A\nend\n"))
	f.Add([]byte("thread t\n  req_notify_cq cq=A solicited\n  complete cq=A solicited status=loc_len_err\n  get_cq_event channel=ch\nend\n"))
	f.Fuzz(func(t *testing.T, threads []byte) {
		s, err := Parse("fuzz.scen", append([]byte(setupCQ), threads...))
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Line < 1 {
				t.Fatalf("not a ParseError with a line: %v", err)
			}
			return
		}
		world, err := World(s, "default", len(s.Steps))
		if err != nil {
			return // no thread, or two of one name: said plainly
		}
		res := explore.Explore(world, explore.Options{Strategy: explore.Random, Schedules: 3, MaxSteps: 300, NoShrink: true})
		if f := res.Failure; f != nil {
			if f.Kind == explore.Panic {
				t.Fatalf("the interpreter panicked: %s", f.Message)
			}
			if f.Message == "" || f.Token == "" {
				t.Fatalf("a failure without message or token: %+v", f)
			}
			if _, err := explore.RunToken(world, f.Token); err != nil {
				t.Fatalf("the token does not replay: %v", err)
			}
		}
	})
}
