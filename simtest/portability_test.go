package simtest_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/simtest"
	"github.com/verbsim/verbsim/verbs"
)

// recorder is a testing.TB that keeps its errors instead of failing: the
// rig's cleanup is checked by running it on one.
type recorder struct {
	testing.TB
	errs     []string
	cleanups []func()
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recorder) Failed() bool     { return len(r.errs) > 0 }
func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recorder) Helper()          {}
func (r *recorder) run() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

// TestPortableFailsOnProviderBehaviour: under Options.Portable a test that
// posts to a QP before RTS fails at cleanup with the report naming the
// behaviour and the profiles on each side; a test that does only what
// every provider does passes.
func TestPortableFailsOnProviderBehaviour(t *testing.T) {
	r := &recorder{TB: t}
	f := simtest.New(r, simtest.Options{Portable: true, NoLeakCheck: true})
	a, _ := f.RC(simtest.PairOptions{Recvs: 1})
	a.Send(1, []byte("hello"))
	a.Await(1)
	q, err := a.PD.CreateQP(sim.QPInitAttr{SendCQ: a.SendCQ, RecvCQ: a.RecvCQ, Type: verbs.QPTypeRC, Cap: verbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.PostRecv([]verbs.RecvWR{{WRID: 9}}); err == nil {
		t.Fatal("post_recv in RESET succeeded under the default profile")
	}
	r.run()
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], "(PostAnyState)") || !strings.Contains(r.errs[0], "\n    irdma:") {
		t.Errorf("errors at cleanup: %q", r.errs)
	}

	r = &recorder{TB: t}
	f = simtest.New(r, simtest.Options{Portable: true, NoLeakCheck: true})
	a, b := f.RC(simtest.PairOptions{Recvs: 1})
	a.Send(1, []byte("hello"))
	a.Await(1)
	b.Await(1)
	r.run()
	if len(r.errs) != 0 {
		t.Errorf("a portable test failed at cleanup: %q", r.errs)
	}
}

// TestEveryProfile runs a send under each built-in profile.
func TestEveryProfile(t *testing.T) {
	var names []string
	simtest.EveryProfile(t, func(t *testing.T, p sim.Profile) {
		names = append(names, p.Name)
		a, b := simtest.RC(t, simtest.PairOptions{Recvs: 1, Fabric: simtest.Options{Profile: p}})
		a.Send(1, []byte("hi"))
		a.Await(1)
		if got := b.Received(b.Await(1)[0]); string(got) != "hi" {
			t.Errorf("received %q", got)
		}
	})
	if strings.Join(names, " ") != "default rxe mlx5 siw irdma" {
		t.Errorf("profiles run: %v", names)
	}
}
