package explore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/verbsim/verbsim/explore"
	"github.com/verbsim/verbsim/explore/patterns"
	"github.com/verbsim/verbsim/internal/leakcheck"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

func schedules(full, short int) int {
	if testing.Short() {
		return short
	}
	return full
}

// TestRecipePasses: the documented recipe passes the random walk and PCT.
func TestRecipePasses(t *testing.T) {
	for _, s := range []explore.Strategy{explore.Random, explore.PCT} {
		explore.Check(t, patterns.Recipe(3), explore.Options{Strategy: s, Seed: 7, Schedules: schedules(2000, 200)})
		explore.Check(t, patterns.Recipe2CQ(2), explore.Options{Strategy: s, Seed: 7, Schedules: schedules(2000, 200)})
	}
}

// TestReplayIsExact: a failure's token runs the same schedule again, with
// the same message and the same timeline, and is short and printable.
func TestReplayIsExact(t *testing.T) {
	for _, s := range []explore.Strategy{explore.Random, explore.PCT, explore.Exhaustive} {
		res := explore.Explore(patterns.DrainThenArm(3), explore.Options{Strategy: s, Seed: 3})
		f := res.Failure
		if f == nil || f.Kind != explore.LostWakeup {
			t.Fatalf("%v: %v", s, res)
		}
		if len(f.Token) > 80 || strings.ContainsAny(f.Token, " \n\t") {
			t.Errorf("token %q: want short and printable", f.Token)
		}
		for range 3 {
			g, err := explore.RunToken(patterns.DrainThenArm(3), f.Token)
			if err != nil || g == nil {
				t.Fatalf("replay: %v, %v", g, err)
			}
			if g.Message != f.Message || g.Timeline != f.Timeline || g.Kind != f.Kind || g.Step != f.Step {
				t.Fatalf("replay differs:\n%s\n%s\nvs\n%s\n%s", f.Message, f.Timeline, g.Message, g.Timeline)
			}
		}
		for _, want := range []string{"req_notify_cq", "blocked: ibv_get_cq_event", "arm next", "events read"} {
			if !strings.Contains(f.Timeline, want) {
				t.Errorf("timeline lacks %q:\n%s", want, f.Timeline)
			}
		}
	}
	if _, err := explore.RunToken(patterns.DrainThenArm(3), "vx1.garbage!"); err == nil {
		t.Error("a malformed token was accepted")
	}
}

// fakeT records what Check and Replay report.
type fakeT struct {
	testing.TB
	errs []string
}

func (f *fakeT) Helper()                        {}
func (f *fakeT) Log(...any)                     {}
func (f *fakeT) Errorf(format string, a ...any) { f.errs = append(f.errs, fmt.Sprintf(format, a...)) }

func TestCheckAndReplayReport(t *testing.T) {
	ft := &fakeT{}
	res := explore.Check(ft, patterns.OnePollPerEvent(3), explore.Options{Seed: 1})
	if len(ft.errs) != 1 || !strings.Contains(ft.errs[0], res.Failure.Token) || !strings.Contains(ft.errs[0], "timeline:") {
		t.Fatalf("Check reported %q", ft.errs)
	}
	ft2 := &fakeT{}
	explore.Replay(ft2, patterns.OnePollPerEvent(3), res.Failure.Token)
	if len(ft2.errs) != 1 || !strings.Contains(ft2.errs[0], res.Failure.Timeline) {
		t.Fatalf("Replay reported %q", ft2.errs)
	}
}

func oneCQ(w *explore.World) (*sim.CompChannel, *sim.CQ) {
	ctx, err := w.Fabric().Devices()[0].Open()
	if err != nil {
		w.Fatalf("%v", err)
	}
	ch, _ := ctx.CreateCompChannel()
	q, _ := ctx.CreateCQ(4, nil, ch, 0)
	return ch, q
}

func TestDetectors(t *testing.T) {
	push := func(q *sim.CQ) { q.Push(verbs.WC{Status: verbs.WCSuccess, Opcode: verbs.WCRecv}, false) }
	cases := []struct {
		name  string
		want  explore.Kind
		text  string
		world func(w *explore.World)
	}{
		{"panic", explore.Panic, "boom", func(w *explore.World) {
			_, q := oneCQ(w)
			w.Go("p", func(context.Context) { q.Len(); panic("boom") })
		}},
		{"errorf", explore.Assertion, "want 7", func(w *explore.World) {
			_, q := oneCQ(w)
			w.Go("p", func(context.Context) {
				if n := q.Len(); n != 7 {
					w.Errorf("len %d, want 7", n)
				}
			})
		}},
		{"deadlock", explore.Deadlock, "b blocked: ibv_get_cq_event", func(w *explore.World) {
			ch, _ := oneCQ(w)
			w.Go("b", func(ctx context.Context) { ch.GetEvent(ctx) })
		}},
		{"daemon-waits", 0, "", func(w *explore.World) {
			ch, q := oneCQ(w)
			q.ReqNotify(false)
			w.Daemon("server", func(ctx context.Context) {
				for {
					q, _, err := ch.GetEvent(ctx)
					if err != nil {
						return
					}
					q.AckEvents(1)
					q.ReqNotify(false)
					for n, _ := q.Poll(make([]verbs.WC, 4)); n > 0; n, _ = q.Poll(make([]verbs.WC, 4)) {
					}
				}
			})
			w.Go("client", func(context.Context) { push(q) })
		}},
		{"overrun", explore.Overrun, "overran: 2 completion(s) dropped", func(w *explore.World) {
			_, q := oneCQ(w)
			w.Go("p", func(context.Context) {
				for range q.CQE() + 2 {
					push(q)
				}
			})
			w.Go("c", func(context.Context) {
				for q.Len() > 0 {
					q.Poll(make([]verbs.WC, 4))
				}
			})
		}},
		{"unconsumed", explore.Unconsumed, "holds 1 completion", func(w *explore.World) {
			_, q := oneCQ(w)
			w.Go("p", func(context.Context) { push(q) })
		}},
		{"finally", explore.Assertion, "final", func(w *explore.World) {
			_, q := oneCQ(w)
			w.Go("p", func(context.Context) { q.Len() })
			w.Finally(func() { w.Errorf("final check") })
		}},
		{"livelock", explore.StepBound, "MaxSteps", func(w *explore.World) {
			_, q := oneCQ(w)
			w.Go("spin", func(ctx context.Context) {
				for q.Len() == 0 { // nobody pushes, and ctx is never looked at
				}
			})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := explore.Explore(c.world, explore.Options{Seed: 1, Schedules: 20, MaxSteps: 200})
			f := res.Failure
			switch {
			case c.want == 0 && f != nil:
				t.Fatalf("%v\n%s", f, f.Timeline)
			case c.want == 0:
			case f == nil:
				t.Fatalf("nothing found: %v", res)
			case f.Kind != c.want || !strings.Contains(f.Message, c.text):
				t.Fatalf("found %v %q; want %v %q", f.Kind, f.Message, c.want, c.text)
			}
		})
	}
}

// TestExhaustive: the recipe with 2 goroutines and 3 completions passes
// the bounded exhaustive search, which says how many schedules there were;
// the same search finds the drain-then-arm lost wake-up.
func TestExhaustive(t *testing.T) {
	bound := 2
	if testing.Short() {
		bound = 1
	}
	res := explore.Check(t, patterns.Recipe(3), explore.Options{Strategy: explore.Exhaustive, Preemptions: bound, Schedules: 1 << 20})
	if !res.Complete || res.Schedules < 2 {
		t.Errorf("exhaustive search: %v", res)
	}
	again := explore.Explore(patterns.Recipe(3), explore.Options{Strategy: explore.Exhaustive, Preemptions: bound, Schedules: 1 << 20})
	if again.Schedules != res.Schedules {
		t.Errorf("two searches counted %d and %d schedules", res.Schedules, again.Schedules)
	}
	if f := explore.Explore(patterns.DrainThenArm(3), explore.Options{Strategy: explore.Exhaustive, Preemptions: 1}).Failure; f == nil || f.Kind != explore.LostWakeup {
		t.Errorf("drain-then-arm: %v", f)
	}
	// With no preemption at all the lost wake-up cannot happen: the
	// consumer is only switched away from when it blocks.
	if r := explore.Explore(patterns.DrainThenArm(3), explore.Options{Strategy: explore.Exhaustive, Preemptions: -1}); r.Failure != nil || !r.Complete {
		t.Errorf("drain-then-arm with no preemption: %v", r)
	}
}

// TestShrink: every buggy pattern's failure is shrunk to a schedule no
// larger than the one the strategy found, with the same kind, and its
// token replays that shrunk schedule exactly. (A bug deeper than PCT's
// depth 2 is found by Auto.)
func TestShrink(t *testing.T) {
	for _, p := range patterns.All() {
		if p.Want == 0 {
			continue
		}
		strategies := []explore.Strategy{explore.Random, explore.PCT}
		if p.Deep > 2 {
			strategies = []explore.Strategy{explore.Auto}
		}
		for _, s := range strategies {
			budget := 300
			if s == explore.Auto {
				budget = 0
			}
			res := explore.Explore(p.World, explore.Options{Strategy: s, Seed: 5, Schedules: budget})
			f := res.Failure
			if f == nil {
				t.Errorf("%s %v: nothing found", p.Name, s)
				continue
			}
			raw := explore.Explore(p.World, explore.Options{Strategy: s, Seed: 5, Schedules: budget, NoShrink: true}).Failure
			if raw == nil || raw.Kind != f.Kind || raw.Size != f.Unshrunk || raw.Size != raw.Unshrunk {
				t.Errorf("%s %v: unshrunk %+v, shrunk failure says %+v", p.Name, s, raw, f.Unshrunk)
			}
			u, z := f.Unshrunk, f.Size
			if u.Preemptions < z.Preemptions || (u.Preemptions == z.Preemptions && (u.Faults < z.Faults || (u.Faults == z.Faults && u.Steps < z.Steps))) {
				t.Errorf("%s %v: shrunk %+v is larger than %+v", p.Name, s, f.Size, f.Unshrunk)
			}
			g, err := explore.RunToken(p.World, f.Token)
			if err != nil || g == nil || g.Kind != f.Kind || g.Size != f.Size || g.Timeline != f.Timeline {
				t.Errorf("%s %v: replay of the shrunk token: %v %v", p.Name, s, g, err)
			}
			t.Logf("%s %v: %+v -> %+v in %d runs", p.Name, s, f.Unshrunk, f.Size, f.ShrinkRuns)
		}
	}
}

// TestTokenOfAnotherWorld: RunToken refuses a token recorded on another
// world, whether the other world set up other things or only runs other
// code in the same goroutines; and a token of the earlier format, which
// carries no identity.
func TestTokenOfAnotherWorld(t *testing.T) {
	f := explore.Explore(patterns.DrainThenArm(3), explore.Options{Strategy: explore.PCT, Seed: 1}).Failure
	if f == nil {
		t.Fatal("drain-then-arm: nothing found")
	}
	for name, other := range map[string]func(*explore.World){
		"recipe (armed in setup)":                patterns.Recipe(3),
		"one-poll-per-event (the same setup)":    patterns.OnePollPerEvent(3),
		"drain-then-arm with 4 completions":      patterns.DrainThenArm(4),
		"never-acked (another goroutine's code)": patterns.NeverAcked(3),
	} {
		if g, err := explore.RunToken(other, f.Token); err == nil {
			t.Errorf("%s: the token of drain-then-arm replayed: %v", name, g)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
	if g, err := explore.RunToken(patterns.DrainThenArm(3), f.Token); err != nil || g == nil || g.Message != f.Message {
		t.Errorf("its own world: %v, %v", g, err)
	}
	if _, err := explore.RunToken(patterns.DrainThenArm(3), "vx1.Y2BkYGBk"); err == nil || !strings.Contains(err.Error(), "earlier") {
		t.Errorf("a vx1 token: %v", err)
	}
}
