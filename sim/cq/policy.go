package cq

import icq "github.com/verbsim/verbsim/sim/internal/cq"

// OverrunPolicy selects what an overrun leaves behind (CQ-23); see
// sim.Profile.CQOverrun.
type OverrunPolicy = icq.OverrunPolicy

// DestroyPolicy selects what destroying a CQ with read but unacknowledged
// events does; see sim.Profile.CQDestroy.
type DestroyPolicy = icq.DestroyPolicy

// Rounding selects how a requested cqe becomes the real capacity (CQ-02);
// see sim.Profile.CQRounding.
type Rounding = icq.Rounding

// The policy values.
const (
	OverrunError = icq.OverrunError
	OverrunDrop  = icq.OverrunDrop
	DestroyWaits = icq.DestroyWaits
	DestroyBusy  = icq.DestroyBusy
	RoundPow2    = icq.RoundPow2
	RoundExact   = icq.RoundExact
)
