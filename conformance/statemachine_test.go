package conformance_test

import (
	"context"
	"errors"
	"flag"
	"slices"
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/conformance"
	"github.com/verbsim/verbsim/conformance/ops"
	"github.com/verbsim/verbsim/internal/rapidtb"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
	"pgregory.net/rapid"
)

// smMutants are broken devices the state machine must catch. The rule IDs
// say which behaviour each one breaks. The QP ones come from the suite's
// mutants (smQPMutants).
func smMutants() []mutant {
	base := sim.DefaultProfile()
	sticky := map[verbs.CQ]bool{} // CQs whose arm the one-shot mutant re-arms
	return append([]mutant{
		{name: "over-ack accepted", rules: []string{"CHAN-08"}, base: base, h: hooks{
			ack: func(q verbs.CQ, n int) error {
				if err := q.AckEvents(n); n < 0 {
					return err
				}
				return nil
			},
		}},
		{name: "ex: next_poll skips a completion", rules: []string{"CQX-05", "CQX-10"}, base: base, h: hooks{
			cqx: &cqxHooks{iter: func(x verbs.ExCQ) verbs.ExCQ { return skipNext{x} }},
		}},
		{name: "ex: overrun reported as ENOENT", rules: []string{"CQX-05", "CQ-23"}, base: base, h: hooks{
			cqx: &cqxHooks{iter: func(x verbs.ExCQ) verbs.ExCQ { return hideEIO{x} }},
		}},
		{name: "resize below the unpolled count accepted", rules: []string{"CQ-08"}, base: base, h: hooks{
			resize: func(q verbs.CQ, n int) error {
				if err := q.Resize(n); n < 1 {
					return err
				}
				return nil
			},
		}},
		{name: "destroy does not wait for acks", rules: []string{"CQ-13"}, base: base, h: hooks{
			destroyCQ: func(q verbs.CQ, ctx context.Context) error {
				if err := q.DestroyContext(ctx); !errors.Is(err, syscall.EINTR) {
					return err
				}
				return nil
			},
		}},
		{name: "solicited arm fires like next", rules: []string{"NOTIFY-04"}, base: base, h: hooks{
			reqNotify: func(q verbs.CQ, _ bool) error { return q.ReqNotify(false) },
		}},
		{name: "arm is not one-shot", rules: []string{"NOTIFY-01"}, base: base, h: hooks{
			reqNotify: func(q verbs.CQ, so bool) error {
				err := q.ReqNotify(so)
				if err == nil && !so {
					sticky[q] = true
				}
				return err
			},
			push: func(q verbs.CQ, w verbs.WC, so bool) (bool, error) {
				over, err := q.(conformance.Injector).Push(w, so)
				if sticky[q] {
					_ = q.ReqNotify(false)
				}
				return over, err
			},
		}},
		{name: "overrun not reported", rules: []string{"CQ-22"}, base: base, h: hooks{
			push: func(q verbs.CQ, w verbs.WC, so bool) (bool, error) {
				_, err := q.(conformance.Injector).Push(w, so)
				return false, err
			},
		}},
		{name: "CQ_ERR never delivered", rules: []string{"ASYNC-07"}, base: base, h: hooks{
			tryAsync: func(c verbs.Context) (verbs.AsyncEvent, error) {
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
			poll: func(q verbs.CQ, wcs []verbs.WC) (int, error) {
				n, err := q.Poll(wcs)
				slices.Reverse(wcs[:n])
				return n, err
			},
		}},
		{name: "busy channel destroyed", rules: []string{"CHAN-09"}, base: base, h: hooks{
			destroyCh: func(ch verbs.CompChannel) error {
				if err := ch.Destroy(); !errors.Is(err, syscall.EBUSY) {
					return err
				}
				return nil
			},
		}},
		{name: "cqe under-reported", rules: []string{"CQ-02"}, base: base, h: hooks{
			cqe: func(q verbs.CQ) int { return max(q.CQE()-1, 1) },
		}},
		{name: "rxe overrun reading under the default profile", rules: []string{"CQ-23"},
			base: sim.RXEProfile(), h: hooks{
				profile: func(p verbs.Readings) verbs.Readings { p.OverrunDrops = false; return p },
			}},
	}, smQPMutants()...)
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
	for _, p := range sim.Profiles() {
		r := rapidtb.New("identity-" + p.Name)
		r.Check(func(rt *rapid.T) { ops.StateMachine(rt, mutant{base: p}.factory()) })
		if r.Failed() {
			t.Fatalf("profile %s: the state machine fails the transparent wrapper:\n%s", p.Name, r.Message())
		}
	}
	for _, m := range smMutants() {
		t.Run(m.name, func(t *testing.T) {
			r := rapidtb.New(m.name)
			r.Check(func(rt *rapid.T) { ops.StateMachine(rt, m.factory()) })
			if !r.Failed() {
				t.Errorf("the state machine passes a device that breaks %v", m.rules)
			}
		})
	}
}
