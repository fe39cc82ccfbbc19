package model

import (
	"errors"
	"fmt"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/verbsim/verbsim/verbs"
)

// History records what an implementation was seen to do, CQ by CQ, and
// checks the invariants every correct implementation satisfies, whatever
// the model predicts:
//
//   - FIFO (CQ-17): the completions polled from a CQ, concatenated, are a
//     prefix of the completions it accepted (pushes that did not overrun).
//   - Arm one-shot and events only for completions added after an arm
//     (NOTIFY-01, NOTIFY-02): the events read for a CQ never outnumber its
//     arm windows, where a window is an accepted completion that follows at
//     least one successful arm with no accepted completion in between. Every
//     event consumes an arm and needs a completion added after that arm, and
//     two events never share a window.
//   - Events never outnumber successful arms.
//   - Acks never outnumber reads (CHAN-08), for completion and async events.
//
// Record only what the implementation returned, never what the model says.
type History struct {
	cqs []*cqHistory
}

type cqHistory struct {
	accepted   []verbs.WC
	polled     []verbs.WC
	fifoOK     int  // polled[:fifoOK] is known to match accepted
	arms       int  // successful ReqNotify calls
	armPending bool // a successful arm since the last accepted completion
	windows    int
	eventsRead int
	acked      int
	asyncRead  int
	asyncAcked int
}

func (h *History) cq(id int) *cqHistory {
	for len(h.cqs) <= id {
		h.cqs = append(h.cqs, &cqHistory{})
	}
	return h.cqs[id]
}

// Armed records a successful ReqNotify on CQ id.
func (h *History) Armed(id int) {
	c := h.cq(id)
	c.arms++
	c.armPending = true
}

// Accepted records a push to CQ id that stored w (no overrun, no error).
func (h *History) Accepted(id int, w verbs.WC) {
	c := h.cq(id)
	c.accepted = append(c.accepted, w)
	if c.armPending {
		c.windows++
		c.armPending = false
	}
}

// Purged records that CQ id deleted its unpolled completions of qp_num
// qpn, as a reset or destroyed QP's are under Readings.ResetPurgesCQ
// (CQ-26 B): they are no longer among what the CQ will return.
func (h *History) Purged(id int, qpn uint32) {
	c := h.cq(id)
	if len(c.polled) > len(c.accepted) {
		return // broken already: Check says so
	}
	kept := c.accepted[:len(c.polled)]
	for _, w := range c.accepted[len(c.polled):] {
		if w.QPNum != qpn {
			kept = append(kept, w)
		}
	}
	c.accepted = kept
}

// Polled records completions a Poll of CQ id returned.
func (h *History) Polled(id int, ws []verbs.WC) {
	c := h.cq(id)
	c.polled = append(c.polled, ws...)
}

// EventRead records a completion event read that named CQ id.
func (h *History) EventRead(id int) { h.cq(id).eventsRead++ }

// Acked records a successful ibv_ack_cq_events(cq id, n).
func (h *History) Acked(id int, n int) { h.cq(id).acked += n }

// AsyncRead records an async event read that named CQ id.
func (h *History) AsyncRead(id int) { h.cq(id).asyncRead++ }

// AsyncAcked records a successful ack of an async event naming CQ id.
func (h *History) AsyncAcked(id int) { h.cq(id).asyncAcked++ }

// Check returns every broken invariant, joined, or nil.
func (h *History) Check() error {
	var errs []error
	for id, c := range h.cqs {
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("cq %d: "+format, append([]any{id}, args...)...))
		}
		if len(c.polled) > len(c.accepted) {
			bad("polled %d completions but only %d were accepted (CQ-17)", len(c.polled), len(c.accepted))
		} else {
			// Compare only what was polled since the last clean check; a
			// difference is reported with a diff of the whole sequence.
			for c.fifoOK < len(c.polled) && c.polled[c.fifoOK] == c.accepted[c.fifoOK] {
				c.fifoOK++
			}
			if c.fifoOK < len(c.polled) {
				d := cmp.Diff(c.accepted[:len(c.polled)], c.polled, cmpopts.EquateEmpty())
				bad("polled completions are not the accepted ones in order (CQ-17) (-accepted +polled):\n%s", d)
			}
		}
		if c.eventsRead > c.windows {
			bad("%d events read, but only %d completions were added to a freshly armed CQ (NOTIFY-01, NOTIFY-02)", c.eventsRead, c.windows)
		}
		if c.eventsRead > c.arms {
			bad("%d events read after only %d arms (NOTIFY-01)", c.eventsRead, c.arms)
		}
		if c.acked > c.eventsRead {
			bad("%d completion events acked but only %d read (CHAN-08)", c.acked, c.eventsRead)
		}
		if c.asyncAcked > c.asyncRead {
			bad("%d async events acked but only %d read (CHAN-08, ASYNC-05)", c.asyncAcked, c.asyncRead)
		}
	}
	return errors.Join(errs...)
}
