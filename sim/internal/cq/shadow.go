package cq

import "github.com/verbsim/verbsim/verbs"

// Shadow mirrors a CQ's completions where its consumer polls them outside
// the engine: the per-host daemon's CQs, whose completions a C program
// polls from a ring in memory it shares with the daemon (internal/nicd),
// as a program polls an adapter's CQ buffer. The engine stays the CQ:
// its capacity, overrun, poll iterator and the work-queue slots a poll
// frees are what they are for any CQ; the consumer's progress reaches it
// through TakenLocked, which the CQ asks for before anything that depends
// on what is left in it (a push's room, a resize, a snapshot, a purge,
// SyncLocked). Every method is called with the domain lock held.
type Shadow interface {
	// PushedLocked is told each completion stored, after it is stored and
	// before any event for it (NOTIFY-12): ns is Config.Clock at the store
	// (0 without timestamps).
	PushedLocked(w *verbs.WC, ns uint64)
	// TakenLocked returns, since its last call, how many of the oldest
	// completions the consumer polled (popped), and how many more past
	// them its poll iterator has reached (seen), whose work-queue slots
	// are freed (QP-29 reading A) while they stay in the CQ (CQX-08).
	TakenLocked() (popped, seen int)
	// ResetLocked is told that the completions changed other than by a
	// push or a poll (a purge, a resize): it mirrors them again from
	// entries, the unpolled completions oldest first, with their ns.
	ResetLocked(entries func(yield func(w *verbs.WC, ns uint64) bool))
	// OverrunLocked is told that the CQ entered its error state (CQ-23 A).
	OverrunLocked()
	// BatchLocked reports whether the consumer has a poll batch open
	// (ibv_start_poll without ibv_end_poll), during which a purge leaves
	// the CQ alone, as it does for the engine's own batch.
	BatchLocked() bool
}

// SetShadowLocked makes s c's shadow (nil: none) and mirrors the
// completions c holds to it at once.
//
// Precondition: the domain lock is held.
func (c *CQ) SetShadowLocked(s Shadow) {
	if c == nil {
		return
	}
	c.syncLocked()
	c.shadow = s
	if s != nil {
		s.ResetLocked(c.entries)
		if c.overrun {
			s.OverrunLocked()
		}
	}
}

// SyncLocked brings c up to date with its shadow's consumer: what it polled
// is gone, and the slots of what its iterator reached are free. Without a
// shadow it does nothing.
//
// Precondition: the domain lock is held.
func (c *CQ) SyncLocked() {
	if c != nil {
		c.syncLocked()
	}
}

func (c *CQ) syncLocked() {
	if c.shadow == nil || c.state != live {
		return
	}
	popped, seen := c.shadow.TakenLocked()
	for range min(popped, c.n) {
		c.popLocked()
	}
	for i := range min(seen, c.n) {
		e := &c.ring[c.slot(i)]
		if e.r != nil {
			e.r.RetireLocked(e.seq)
			e.r = nil
		}
	}
}

// entries yields c's unpolled completions, oldest first, with their ns.
func (c *CQ) entries(yield func(w *verbs.WC, ns uint64) bool) {
	for i := range c.n {
		e := &c.ring[c.slot(i)]
		if !yield(&e.w, e.ns) {
			return
		}
	}
}
