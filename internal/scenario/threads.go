package scenario

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/verbsim/verbsim/explore"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// Threads: a script may declare blocks of commands that run as goroutines
// of a world of the schedule explorer (package explore):
//
//	thread consumer
//	  loop
//	    drain_cq cq=A
//	    exit_if polled=2
//	    req_notify_cq cq=A next
//	    get_cq_event channel=ch wait
//	    ack_cq_events cq=A
//	  end
//	end
//
// Each schedule runs the script's other commands up to the explore step
// (its setup) on a fresh fabric of the explorer's, then every thread (and
// daemon) as a goroutine; the explorer decides at every verb what moves
// next. A thread takes the CQ-side commands (complete, poll_cq, drain_cq,
// req_notify_cq, get_cq_event with wait to block, ack_cq_events,
// destroy_cq), loop ... end and exit_if. A verb that fails in a thread is
// a failure of the schedule (an assertion), with its line. The explore
// step prints what the exploration found; verbsim explore FILE runs the
// same exploration from the command line, and -replay its tokens.

// maxLoops bounds the turns of one loop of a thread, so that a loop that
// never exits ends with a failure rather than at the step bound only.
const maxLoops = 10000

// World returns the world of s's threads, as the explorer runs it under
// the named profile: the commands of s before step upTo that are not
// threads (or explore steps) set it up, and the threads since the last
// explore step before upTo are its goroutines (so that a script can
// explore a loop, then its fix). It is an error for s to have no thread
// there.
func World(s *Script, profile string, upTo int) (func(*explore.World), error) {
	p, ok := lookupProfile(profile)
	if !ok {
		return nil, fmt.Errorf("unknown profile %q (want %s)", profile, strings.Join(Profiles(), " or "))
	}
	upTo = min(upTo, len(s.Steps))
	var setup, threads []*Step
	names := map[string]bool{}
	for i := range s.Steps[:upTo] {
		st := &s.Steps[i]
		switch st.Verb {
		case "explore":
			threads, names = nil, map[string]bool{}
		case "thread", "daemon":
			n := (&args{st: st}).name()
			if names[n] {
				return nil, fmt.Errorf("%s:%d: a second thread named %s", s.Name, st.Line, n)
			}
			names[n] = true
			threads = append(threads, st)
		default:
			setup = append(setup, st)
		}
	}
	if len(threads) == 0 {
		return nil, fmt.Errorf("%s: no thread to explore (thread NAME ... end)", s.Name)
	}
	return func(w *explore.World) {
		in := newInterp(s.Name, p)
		in.mkFabric = w.NewFabric
		for _, st := range setup {
			if err := in.exec(st); err != nil {
				w.Fatalf("%v", err)
			}
		}
		for n, q := range in.obj.cq {
			w.Label(q, n)
		}
		for n, c := range in.obj.ch {
			w.Label(c, n)
		}
		for _, st := range threads {
			t := &thread{w: w, in: in, name: (&args{st: st}).name(), file: s.Name}
			body, err := t.compile(st.Body)
			if err != nil {
				w.Fatalf("%v", err)
			}
			if st.Verb == "daemon" {
				w.Daemon(t.name, func(ctx context.Context) { t.run(ctx, body) })
			} else {
				w.Go(t.name, func(ctx context.Context) { t.run(ctx, body) })
			}
		}
	}, nil
}

// thread is one thread of a script in one schedule.
type thread struct {
	w      *explore.World
	in     *interp // the setup's, for the objects' names; read only
	name   string
	file   string
	polled int
}

// tcmd is a compiled command of a thread: its step and the objects it
// names, or the body of a loop.
type tcmd struct {
	st   *Step
	a    *args
	cq   *sim.CQ
	ch   *sim.CompChannel
	loop []tcmd
}

// compile resolves the names body uses, before any goroutine runs: a
// name the setup did not create is the script's mistake.
func (t *thread) compile(body []Step) ([]tcmd, error) {
	var stack [][]tcmd
	cur := []tcmd{}
	for i := range body {
		st := &body[i]
		switch st.Verb {
		case "loop":
			stack = append(stack, cur)
			cur = []tcmd{}
			continue
		case "end":
			outer := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			cur = append(outer, tcmd{st: st, loop: cur})
			continue
		}
		c := tcmd{st: st, a: &args{st: st, in: t.in}}
		if n := c.a.ref("cq", "cq"); n != "" {
			c.cq = t.in.obj.cq[n]
		}
		if n := c.a.ref("channel", "channel"); n != "" {
			c.ch = t.in.obj.ch[n]
		}
		if c.a.err != nil {
			return nil, c.a.err
		}
		cur = append(cur, c)
	}
	return cur, nil
}

func (t *thread) run(ctx context.Context, body []tcmd) { t.exec(ctx, body) }

// exec runs cmds and reports whether the thread is to end.
func (t *thread) exec(ctx context.Context, cmds []tcmd) bool {
	for _, c := range cmds {
		if c.loop != nil {
			for turns := 0; ; turns++ {
				if turns == maxLoops {
					t.fail(c.st, fmt.Errorf("the loop ran %d times without an exit_if ending the thread", maxLoops))
					return true
				}
				if t.exec(ctx, c.loop) {
					return true
				}
			}
		}
		if t.do(ctx, c) {
			return true
		}
	}
	return false
}

func (t *thread) fail(st *Step, err error) {
	t.w.Errorf("%s:%d: %s: %s: %s", filepath.Base(t.file), st.Line, t.name, st.Text, describeErr(err))
}

// do runs one command and reports whether the thread is to end.
func (t *thread) do(ctx context.Context, c tcmd) bool {
	a := c.a
	var err error
	switch c.st.Verb {
	case "exit_if":
		return uint64(t.polled) >= a.num("polled", 0)
	case "complete":
		// The script's own complete, on the setup's interpreter (this
		// schedule's; one goroutine moves at a time): what it says is
		// dropped, an error it meets fails the thread.
		t.in.lines, t.in.err = nil, nil
		if err = t.in.doComplete(c.st, a); err == nil {
			err = t.in.err
		}
	case "poll_cq", "drain_cq":
		buf := make([]verbs.WC, min(a.num("n", 16), 1024))
		for {
			var n int
			n, err = c.cq.Poll(buf)
			t.polled += n
			if err != nil || n == 0 || c.st.Verb == "poll_cq" {
				break
			}
		}
	case "req_notify_cq":
		err = c.cq.ReqNotify(a.has("solicited"))
	case "get_cq_event":
		if a.has("wait") {
			_, _, err = c.ch.GetEvent(ctx)
			if err != nil && ctx.Err() != nil {
				return true // the schedule is over
			}
		} else if _, _, err = c.ch.TryGetEvent(); errors.Is(err, syscall.EAGAIN) {
			err = nil
		}
	case "ack_cq_events":
		err = c.cq.AckEvents(int(max(min(a.int("n", 1), 1<<20), -1<<20)))
	case "destroy_cq":
		err = c.cq.Destroy()
	}
	if err != nil {
		t.fail(c.st, err)
		return true
	}
	return false
}

// threadHandlers run the thread commands in a script's run (exec): a
// thread block says what it is, the explore step explores, and the
// commands that belong inside a thread (which Parse refuses elsewhere)
// are an error. Set in init: exploreStep runs the interpreter again.
var threadHandlers map[string]func(*interp, *Step, *args) error

func init() {
	inside := func(in *interp, st *Step, _ *args) error {
		return &scriptError{fmt.Sprintf("%s:%d: %s belongs inside a thread block", in.file, st.Line, st.Verb)}
	}
	threadHandlers = map[string]func(*interp, *Step, *args) error{
		"thread": (*interp).threadStep, "daemon": (*interp).threadStep, "explore": (*interp).exploreStep,
		"loop": inside, "end": inside, "exit_if": inside, "drain_cq": inside,
	}
}

// threadStep is a thread block in a run that does not explore it: it
// says what it is.
func (in *interp) threadStep(st *Step, a *args) error {
	n := 0
	for _, c := range st.Body {
		if c.Verb != "end" {
			n++
		}
	}
	in.say("%s %s: %d command(s), run as a goroutine of the world the explore step explores (or verbsim explore %s)",
		st.Verb, a.name(), n, filepath.Base(in.file))
	return nil
}

// exploreStep runs the explore step st of the script: the threads above
// it, explored, and what was found.
func (in *interp) exploreStep(st *Step, a *args) error {
	index := len(in.script.Steps)
	for i := range in.script.Steps {
		if &in.script.Steps[i] == st {
			index = i
		}
	}
	world, err := World(in.script, in.profile.Name, index)
	if err != nil {
		return &scriptError{fmt.Sprintf("%s:%d: %v", in.file, st.Line, err)}
	}
	strategy, _ := explore.ParseStrategy(a.str("strategy", "auto"))
	o := explore.Options{Strategy: strategy, Seed: a.num("seed", 1), Schedules: int(a.num("schedules", 0)),
		Preemptions: int(a.num("preemptions", 0)), Name: filepath.Base(in.file)}
	res := explore.Explore(world, o)
	in.say("%v", res)
	f := res.Failure
	if f == nil {
		return nil
	}
	in.say("%s", f.Message)
	in.say("the schedule, shrunk to %d step(s) and %d preemption(s), replays with: verbsim explore -replay %s %s",
		f.Size.Steps, f.Size.Preemptions, f.Token, filepath.Base(in.file))
	in.say("its timeline:")
	for _, l := range strings.Split(strings.TrimRight(f.Timeline, "\n"), "\n") {
		in.say("  %s", l)
	}
	return nil
}
