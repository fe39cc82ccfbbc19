package checker

import "github.com/verbsim/verbsim/internal/simhook"

// Front is told what the program behind a front end did (the drop-in
// library's pumps read the engine's channels and async queues, so the
// engine's reads are not the program's): obj is the engine's object. The
// domain lock is held.
func (c *Checker) Front(ev simhook.FrontEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.flushLocked()
	r := c.recordLocked(ev.Obj)
	if r == nil {
		return
	}
	switch ev.Kind {
	case simhook.FrontReader:
		r.front = true
	case simhook.FrontWait:
		r.frontWaits++
		at := c.hereLocked()
		switch r.kind {
		case "chan":
			c.channelWaitLocked(r, ev.Verb, at, r.frontWaits, 0)
		case "async":
			c.asyncWaitLocked(r, ev.Verb, at, 0)
		}
	case simhook.FrontWaitEnd:
		if r.frontWaits > 0 {
			r.frontWaits--
		}
	case simhook.FrontRead:
		c.readLocked(r, ev.About, c.here())
	case simhook.FrontDiscard:
		q := c.recordLocked(ev.About)
		if q == nil && r.kind == "async" {
			q = c.recordLocked(c.env.Context(r.obj))
		}
		if q == nil {
			return
		}
		if r.kind == "async" {
			q.asyncCredit += ev.N
		} else {
			q.credit += ev.N
		}
	}
}
