// Package policy derives the engine's policies from the readings a profile
// states (verbs.Readings). Of is the one place where a reading becomes the
// configuration of the CQ, notification and queue-pair engines; the readings
// the engine consults as they are (SRQLimitAtCreate, DeregBoundEINVAL, the
// rereg readings, ...) are read from the profile directly.
package policy

import (
	"github.com/verbsim/verbsim/sim/internal/cq"
	"github.com/verbsim/verbsim/sim/internal/notify"
	"github.com/verbsim/verbsim/sim/internal/qp"
	"github.com/verbsim/verbsim/verbs"
)

// Engine holds the policies of the engine packages for one set of readings.
type Engine struct {
	Overrun   cq.OverrunPolicy       // CQ-23
	Destroy   cq.DestroyPolicy       // CQ-13
	Rounding  cq.Rounding            // CQ-02
	Solicited notify.SolicitedPolicy // NOTIFY-05
	QP        qp.Policy              // QP-08, QP-12, QP-29, QP-31, QP-33, QPX-01, QPX-04
	Transport qp.TransportPolicy     // XFER-05, -10, -16, -29, -30, -31, ASYNC-11, -13, WC-13, FLUSH-10, CQ-24, SRQ-12
}

// Of returns the engine policies that follow r.
func Of(r verbs.Readings) Engine {
	e := Engine{
		QP: qp.Policy{
			ResetToErr:       r.ResetToErr,
			FreeSlotOnRetire: r.FreeSlotOnRetire,
			SendOpsRXE:       r.SendOpsRXE,
			TransportOpLate:  r.TransportOpLocQPOp,
		},
		Transport: qp.TransportPolicy{
			RecvTooSmallRemInvReq: r.RecvTooSmallRemInvReq,
			RecvProtQPOp:          r.RecvProtQPOp,
			InfiniteRetry7:        r.InfiniteRetry7,
			NoQPEvents:            r.NoQPEvents,
			AlwaysSQDrained:       r.AlwaysSQDrained,
			SendWCImm:             r.SendWCImm,
			NoSQE:                 r.NoSQE,
			OverrunSendIgnored:    r.OverrunSendIgnored,
			WriteImmRKeyRemAccess: r.WriteImmRKeyRemAccess,
			LateLocalCheck:        r.LateLocalCheck,
			SendInvErrAcked:       r.SendInvErrAcked,
			SRQRecvQPPD:           r.SRQRecvQPPD,
			ResetPurgesCQ:         r.ResetPurgesCQ,
			NoFlowLabel:           r.NoFlowLabel,
		},
	}
	if r.OverrunDrops {
		e.Overrun = cq.OverrunDrop
	}
	if r.DestroyBusyOnUnacked {
		e.Destroy = cq.DestroyBusy
	}
	if r.ExactCQE {
		e.Rounding = cq.RoundExact
	}
	if r.SolicitedBitOnly {
		e.Solicited = notify.SolicitedBitOnly
	}
	if r.CurStateTrusted {
		e.QP.CurState = qp.CurStateTrusted
	}
	return e
}
