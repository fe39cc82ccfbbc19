package policy_test

import (
	"testing"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/internal/cq"
	"github.com/verbsim/verbsim/sim/internal/notify"
	"github.com/verbsim/verbsim/sim/internal/policy"
	"github.com/verbsim/verbsim/sim/internal/qp"
	"github.com/verbsim/verbsim/verbs"
)

// TestOf pins the derivation: the zero readings give the engine's zero
// policies, rxe's give the policies the engine packages name as rxe's, and
// the two readings rxe does not take give the other CQ policies.
func TestOf(t *testing.T) {
	if got := policy.Of(verbs.Readings{}); got != (policy.Engine{}) {
		t.Errorf("Of(zero) = %+v, want the zero policies", got)
	}
	want := policy.Engine{Overrun: cq.OverrunDrop, Solicited: notify.SolicitedBitOnly,
		QP: qp.RXEPolicy(), Transport: qp.RXETransport()}
	if got := policy.Of(sim.RXEProfile().Readings); got != want {
		t.Errorf("Of(rxe) = %+v,\nwant %+v", got, want)
	}
	strict := policy.Of(verbs.Readings{DestroyBusyOnUnacked: true, ExactCQE: true, ResetToErr: true})
	if strict.Destroy != cq.DestroyBusy || strict.Rounding != cq.RoundExact || !strict.QP.ResetToErr {
		t.Errorf("Of(strict) = %+v", strict)
	}
}
