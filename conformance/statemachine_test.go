package conformance_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/conformance"
	"github.com/verbsim/verbsim/conformance/simdev"
	"github.com/verbsim/verbsim/internal/testprofiles"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
	"pgregory.net/rapid"
)

// smProfiles are the profiles the state machine runs under: every built-in
// one, plus one that takes the other reading of the rules the built-in
// profiles agree on (destroy with unacked events, CQ rounding, RESET→ERR).
func smProfiles(t *testing.T) []sim.Profile {
	return append(testprofiles.Profiles(t), sim.Profile{
		Name: "busy-exact-ibta",
		Readings: verbs.Readings{
			DestroyBusyOnUnacked: true,
			ExactCQE:             true,
			ResetToErr:           true,
		},
	})
}

// TestStateMachine checks verbsim against the reference model
// (conformance/model) with random operation sequences, under every profile.
// Replay a failure with the -rapid.failfile or -rapid.seed flag it prints.
func TestStateMachine(t *testing.T) {
	for _, p := range smProfiles(t) {
		t.Run(p.Name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				conformance.StateMachine(t, simdev.Factory(p))
			})
		})
	}
}

// smMutants are broken devices the state machine must catch. The rule IDs
// say which behaviour each one breaks. The QP ones come from the suite's
// mutants (smQPMutants).
func smMutants() []mutant {
	base := sim.DefaultProfile()
	sticky := map[conformance.CQ]bool{} // CQs whose arm the one-shot mutant re-arms
	return append([]mutant{
		{name: "over-ack accepted", rules: []string{"CHAN-08"}, base: base, h: hooks{
			ack: func(q conformance.CQ, n int) error {
				if err := q.AckEvents(n); n < 0 {
					return err
				}
				return nil
			},
		}},
		{name: "ex: next_poll skips a completion", rules: []string{"CQX-05", "CQX-10"}, base: base, h: hooks{
			cqx: &cqxHooks{iter: func(x conformance.ExCQ) conformance.ExCQ { return skipNext{x} }},
		}},
		{name: "ex: overrun reported as ENOENT", rules: []string{"CQX-05", "CQ-23"}, base: base, h: hooks{
			cqx: &cqxHooks{iter: func(x conformance.ExCQ) conformance.ExCQ { return hideEIO{x} }},
		}},
		{name: "resize below the unpolled count accepted", rules: []string{"CQ-08"}, base: base, h: hooks{
			resize: func(q conformance.CQ, n int) error {
				if err := q.Resize(n); n < 1 {
					return err
				}
				return nil
			},
		}},
		{name: "destroy does not wait for acks", rules: []string{"CQ-13"}, base: base, h: hooks{
			destroyCQ: func(q conformance.CQ, ctx context.Context) error {
				if err := q.DestroyContext(ctx); !errors.Is(err, syscall.EINTR) {
					return err
				}
				return nil
			},
		}},
		{name: "solicited arm fires like next", rules: []string{"NOTIFY-04"}, base: base, h: hooks{
			reqNotify: func(q conformance.CQ, _ bool) error { return q.ReqNotify(false) },
		}},
		{name: "arm is not one-shot", rules: []string{"NOTIFY-01"}, base: base, h: hooks{
			reqNotify: func(q conformance.CQ, so bool) error {
				err := q.ReqNotify(so)
				if err == nil && !so {
					sticky[q] = true
				}
				return err
			},
			push: func(q conformance.CQ, w verbs.WC, so bool) (bool, error) {
				over, err := q.(conformance.Injector).Push(w, so)
				if sticky[q] {
					_ = q.ReqNotify(false)
				}
				return over, err
			},
		}},
		{name: "overrun not reported", rules: []string{"CQ-22"}, base: base, h: hooks{
			push: func(q conformance.CQ, w verbs.WC, so bool) (bool, error) {
				_, err := q.(conformance.Injector).Push(w, so)
				return false, err
			},
		}},
		{name: "CQ_ERR never delivered", rules: []string{"ASYNC-07"}, base: base, h: hooks{
			tryAsync: func(c conformance.Context) (conformance.AsyncEvent, error) {
				for {
					ev, err := c.TryGetAsyncEvent()
					if err != nil || ev.EventType() != verbs.EventCQErr {
						return ev, err
					}
					_ = ev.Ack()
				}
			},
		}},
		{name: "poll returns newest first", rules: []string{"CQ-17"}, base: base, h: hooks{
			poll: func(q conformance.CQ, wcs []verbs.WC) (int, error) {
				n, err := q.Poll(wcs)
				slices.Reverse(wcs[:n])
				return n, err
			},
		}},
		{name: "busy channel destroyed", rules: []string{"CHAN-09"}, base: base, h: hooks{
			destroyCh: func(ch conformance.CompChannel) error {
				if err := ch.Destroy(); !errors.Is(err, syscall.EBUSY) {
					return err
				}
				return nil
			},
		}},
		{name: "cqe under-reported", rules: []string{"CQ-02"}, base: base, h: hooks{
			cqe: func(q conformance.CQ) int { return max(q.CQE()-1, 1) },
		}},
		{name: "rxe overrun reading under the default profile", rules: []string{"CQ-23"},
			base: sim.RXEProfile(), h: hooks{
				profile: func(p conformance.Profile) conformance.Profile { p.OverrunDrops = false; return p },
			}},
	}, smQPMutants()...)
}

// recorder is a rapid.TB that records a failure instead of failing the
// test, so that a test can require rapid.Check to fail.
type recorder struct {
	name   string
	failed bool
	msg    strings.Builder
}

type recorderStop struct{}

func (r *recorder) Helper()                   {}
func (r *recorder) Name() string              { return r.name }
func (r *recorder) Logf(string, ...any)       {}
func (r *recorder) Log(...any)                {}
func (r *recorder) Skipf(f string, a ...any)  { r.Fatalf("skipped: "+f, a...) }
func (r *recorder) Skip(a ...any)             { r.Fatal(a...) }
func (r *recorder) SkipNow()                  { r.FailNow() }
func (r *recorder) Errorf(f string, a ...any) { r.failed = true; fmt.Fprintf(&r.msg, f+"\n", a...) }
func (r *recorder) Error(a ...any)            { r.failed = true; fmt.Fprintln(&r.msg, a...) }
func (r *recorder) Fatalf(f string, a ...any) { r.Errorf(f, a...); panic(recorderStop{}) }
func (r *recorder) Fatal(a ...any)            { r.Error(a...); panic(recorderStop{}) }
func (r *recorder) FailNow()                  { r.failed = true; panic(recorderStop{}) }
func (r *recorder) Fail()                     { r.failed = true }
func (r *recorder) Failed() bool              { return r.failed }

// check runs rapid.Check against r, stopping at the first failure.
func (r *recorder) check(prop func(*rapid.T)) {
	defer func() {
		if p := recover(); p != nil {
			if _, ok := p.(recorderStop); !ok {
				panic(p)
			}
		}
	}()
	rapid.Check(r, prop)
}

// setFlag sets a flag for the rest of the test.
func setFlag(t *testing.T, name, value string) {
	f := flag.Lookup(name)
	if f == nil {
		t.Fatalf("no flag %s", name)
	}
	old := f.Value.String()
	if err := f.Value.Set(value); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Value.Set(old) })
}

// TestStateMachineCatchesMutants requires the state machine to fail on
// every broken device of smMutants, and to pass on the transparent wrapper.
func TestStateMachineCatchesMutants(t *testing.T) {
	if testing.Short() {
		t.Skip("a mutant sweep: runs without -short (rapid makes fewer checks under -short, too few to meet every mutant)")
	}
	setFlag(t, "rapid.nofailfile", "true") // failures are expected: leave no fail files
	setFlag(t, "rapid.shrinktime", "1ms")  // detection is all that matters here
	// A fixed seed and more runs: whether a random walk meets a mutant's
	// bug must not change from one CI run to the next.
	setFlag(t, "rapid.seed", "20261122")
	setFlag(t, "rapid.checks", "300")
	for _, p := range testprofiles.Profiles(t) {
		r := &recorder{name: "identity-" + p.Name}
		r.check(func(rt *rapid.T) { conformance.StateMachine(rt, mutant{base: p}.factory()) })
		if r.failed {
			t.Fatalf("profile %s: the state machine fails the transparent wrapper:\n%s", p.Name, r.msg.String())
		}
	}
	for _, m := range smMutants() {
		t.Run(m.name, func(t *testing.T) {
			r := &recorder{name: m.name}
			r.check(func(rt *rapid.T) { conformance.StateMachine(rt, m.factory()) })
			if !r.failed {
				t.Errorf("the state machine passes a device that breaks %v", m.rules)
			}
		})
	}
}
