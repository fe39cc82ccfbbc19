package cq

import (
	"syscall"

	"github.com/verbsim/verbsim/sim/internal/notify"
	"github.com/verbsim/verbsim/sim/trace"
	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// Push adds a completion to c as the HCA does when a work request finishes,
// and reports whether c overran. It is the producer side of the CQ: the
// transport engine calls PushLocked; tests and tools may call Push to feed a
// CQ directly (to drive an event loop without any QP, say).
//
// solicited says that the message behind a successful receive completion
// carried the solicited-event bit (NOTIFY-04, NOTIFY-06); it is ignored for
// successful send completions.
//
// In order:
//   - If c is full, or already in its error state, the completion is not
//     stored and c overruns (CQ-22): under OverrunError (the default) c enters
//     its sticky error state and an IBV_EVENT_CQ_ERR naming c is raised on the
//     async queue, again at every later overrun (CQ-23 reading A); under
//     OverrunDrop only this completion is lost and the event raised (reading B,
//     rxe); with IgnoreOverrun the completion is dropped silently. Push returns
//     overrun true.
//   - Otherwise the completion is stored, and then, if the pending request
//     fires for it, c is disarmed and one event is queued on the channel
//     (NOTIFY-01..05): after the completion is pollable, never before
//     (NOTIFY-12).
//
// Pushing to a destroyed CQ returns EINVAL, and so does a completion whose
// status, opcode or flags are no value of enum ibv_wc_status, ibv_wc_opcode
// or ibv_wc_flags (see verbs.WCStatus.Valid and its siblings); nothing is stored
// then. Push allocates nothing.
func (c *CQ) Push(w verbs.WC, solicited bool) (overrun bool, err error) {
	if c == nil {
		return false, errNil(verbPush)
	}
	if !c.d.TryEnter() {
		c.enter(verbPush)
	}
	overrun, err = c.PushWQELocked(&w, solicited, nil, 0)
	// No defer: PushWQELocked does not panic, and a defer costs.
	if c.d.FastLeave() {
		c.d.Unlock()
	} else {
		c.leave()
	}
	return overrun, err
}

// PushLocked is Push for the engine, which holds the domain lock.
//
// Precondition: the domain lock is held.
func (c *CQ) PushLocked(w *verbs.WC, solicited bool) (overrun bool, err error) {
	return c.PushWQELocked(w, solicited, nil, 0)
}

// PushWQELocked is PushLocked for a completion that retires work-queue
// slots: when it is polled, r.RetireLocked(seq) is called under the domain
// lock. If the push overruns, r is never called.
//
// Precondition: the domain lock is held.
func (c *CQ) PushWQELocked(w *verbs.WC, solicited bool, r Retirer, seq uint64) (overrun bool, err error) {
	if c == nil || w == nil {
		return false, errNil(verbPush)
	}
	if c.state != live {
		return false, errDestroyed(verbPush)
	}
	if c.shadow != nil {
		c.syncLocked()
	}
	if !w.Status.Valid() || !w.Opcode.Valid() || !w.WCFlags.Valid() {
		return false, verr.Errorf(verbPush, syscall.EINVAL,
			"status %d, opcode %d or wc_flags %#x is outside enum ibv_wc_status, ibv_wc_opcode or ibv_wc_flags",
			uint32(w.Status), uint32(w.Opcode), uint32(w.WCFlags))
	}
	if c.n == c.cqe || c.overrun {
		c.stats.Dropped++
		if c.cfg.IgnoreOverrun {
			return true, nil
		}
		if !c.overrun {
			c.cfg.Consulted.Add(verbs.ReadingOverrunDrops)
		}
		if c.cfg.Overrun == OverrunError && !c.overrun {
			c.overrun = true
			if c.shadow != nil {
				c.shadow.OverrunLocked()
			}
		}
		c.stats.Overruns++
		if c.d.Tracing() {
			c.emitLocked(trace.Record{Kind: trace.KindCompletion, Name: "overrun", WC: wcOf(w), Detail: "lost", Rule: "CQ-22"})
		}
		if c.async != nil {
			if err := c.async.RaiseLocked(verbs.EventCQErr, c, &c.tally, 0); err != nil {
				return true, err
			}
		}
		return true, nil
	}
	if c.n == len(c.ring) {
		c.regrowLocked(min(2*len(c.ring), c.cqe))
	}
	tail := c.head + c.n
	if tail >= len(c.ring) {
		tail -= len(c.ring)
	}
	e := &c.ring[tail] // written field by field: no temporary entry
	e.w, e.r, e.seq = *w, r, seq
	if c.stamp {
		e.ns = c.cfg.Clock()
	}
	if c.shadow != nil {
		c.shadow.PushedLocked(&e.w, e.ns) // not w, which would escape
	}
	c.n++
	c.stats.Added++
	if c.d.Tracing() {
		c.emitLocked(trace.Record{Kind: trace.KindCompletion, Name: "completion", WC: wcOf(w)})
	}
	if c.arm == notify.ArmSolicited && w.Status != verbs.WCSuccess && !solicited {
		c.cfg.Consulted.Add(verbs.ReadingSolicitedBitOnly) // fires or not by the reading
	}
	if c.arm.Fires(w, solicited, c.cfg.Solicited) {
		c.arm = notify.Disarmed
		c.stats.ArmsFired++
		if c.ch != nil {
			c.ch.PushLocked(c, c.cfg.Context, &c.tally)
			c.stats.EventsRaised++
			if c.d.Tracing() {
				c.emitLocked(trace.Record{Kind: trace.KindEvent, Name: "arm fired", Detail: "event queued on the channel", Rule: "NOTIFY-01, NOTIFY-12"})
			}
		}
	}
	return false, nil
}

// RoomLocked is the number of completions c takes before it overruns: 0
// when it is full, in its error state or destroyed.
//
// Precondition: the domain lock is held.
func (c *CQ) RoomLocked() int {
	if c == nil || c.state != live || c.overrun {
		return 0
	}
	if c.shadow != nil {
		c.syncLocked()
	}
	return c.cqe - c.n
}

// Overrun reports whether c is in its error state after an overrun.
func (c *CQ) Overrun() bool {
	if c == nil {
		return false
	}
	c.enter(verbRead)
	defer c.leave()
	return c.overrun
}

// LiveLocked is !Destroyed for a caller that holds the domain lock.
func (c *CQ) LiveLocked() bool { return c != nil && c.state == live }

// Destroyed reports whether c has been destroyed (or is waiting for acks to
// finish being destroyed).
func (c *CQ) Destroyed() bool {
	if c == nil {
		return false
	}
	c.enter(verbRead)
	defer c.leave()
	return c.state != live
}

// wcOf is the trace's view of w.
func wcOf(w *verbs.WC) *trace.WC {
	return &trace.WC{QPNum: w.QPNum, WRID: w.WRID, Status: w.Status, Opcode: w.Opcode}
}
