package cq

import (
	"github.com/verbsim/verbsim/sim/internal/notify"
	"github.com/verbsim/verbsim/verbs"
)

// View is what a checker (package sim/check's engine) reads of a CQ
// under the domain lock: enough to tell whether a wait on its channel can
// end and whether its capacity suits the queues that feed it.
type View struct {
	Live    bool       // neither destroyed nor waiting for acks to finish
	Arm     notify.Arm // the pending request
	Len     int        // unpolled completions
	CQE     int        // capacity
	Channel *Channel   // the channel its events go to, or nil
	// Failed says that an unpolled completion is unsuccessful: one that
	// would have fired a solicited-only arm (NOTIFY-04).
	Failed bool
}

// ViewLocked returns what a checker reads of c.
//
// Precondition: the domain lock is held.
func (c *CQ) ViewLocked() View {
	if c == nil {
		return View{}
	}
	v := View{Live: c.state == live, Arm: c.arm, Len: c.n, CQE: c.cqe, Channel: c.ch}
	for i := 0; i < c.n; i++ {
		if c.ring[(c.head+i)%len(c.ring)].w.Status != verbs.WCSuccess {
			v.Failed = true
			break
		}
	}
	return v
}
