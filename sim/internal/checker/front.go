package checker

import "github.com/verbsim/verbsim/sim/check"

// FrontKind says what a front end tells the checker (Front).
type FrontKind uint8

// What a front end reports of the program it serves.
const (
	// FrontReader: Obj, a completion channel or an async queue, is read by
	// the front end, which moves its events to the program: the engine's
	// reads are the front end's, not the program's.
	FrontReader FrontKind = iota + 1
	// FrontWait: the program starts a blocking read of Obj (a channel or
	// an async queue) and nothing is queued for it; Verb names the call.
	FrontWait
	// FrontWaitEnd: that read ended.
	FrontWaitEnd
	// FrontRead: the program read an event about About from Obj.
	FrontRead
	// FrontDiscard: the front end acknowledges N events of About, a CQ,
	// that the program never read (its events dropped as it is
	// destroyed).
	FrontDiscard
	// FrontUse: the program called Verb on Obj, which was destroyed: the
	// front end found no live object behind the handle.
	FrontUse
)

// FrontEvent is one thing a front end tells the checker.
type FrontEvent struct {
	Kind  FrontKind
	Obj   any
	About any
	N     int
	Verb  string
}

// Front is told what the program behind a front end did. The domain lock
// is held.
func (c *Checker) Front(ev FrontEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.flushLocked()
	r := c.recordLocked(ev.Obj)
	if r == nil {
		return
	}
	switch ev.Kind {
	case FrontReader:
		r.front = true
	case FrontWait:
		r.frontWaits++
		at := c.hereLocked()
		switch r.kind {
		case "chan":
			c.channelWaitLocked(r, ev.Verb, at, r.frontWaits, 0)
		case "async":
			c.asyncWaitLocked(r, ev.Verb, at, 0)
		}
	case FrontWaitEnd:
		if r.frontWaits > 0 {
			r.frontWaits--
		}
	case FrontRead:
		c.readLocked(r, ev.About, c.here())
	case FrontDiscard:
		if q := c.recordLocked(ev.About); q != nil {
			q.credit += ev.N
		}
	case FrontUse:
		if r.gone != nil && c.on.Has(check.Destroyed) {
			c.useAfterDestroyLocked(r, ev.Verb, c.hereLocked())
		}
	}
}
