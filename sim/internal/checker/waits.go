package checker

import (
	"fmt"
	"strings"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/sim/check"
	"github.com/verbsim/verbsim/sim/internal/cq"
	"github.com/verbsim/verbsim/sim/internal/notify"
)

// channelWaitLocked looks at a blocking ibv_get_cq_event on the channel of
// r as it starts, with readers the program's threads blocked on it (this
// one included): whether anything can ever queue an event (CHAN-13),
// whether completions wait unannounced in an armed CQ (NOTIFY-15), and
// whether two threads read a channel of one CQ (CHAN-11).
//
// bound is the virtual time the wait gives up after (sim.Config.WaitBound),
// 0 for none.
func (c *Checker) channelWaitLocked(r *record, verb string, at site, readers int, bound uint64) {
	ch, _ := r.obj.(*cq.Channel)
	if ch == nil || ch.LenLocked() > 0 {
		return // an event is queued: the read does not block
	}
	ctx := c.env.Context(r.obj)
	var users, armed, orphans []*record
	views := map[*record]cq.View{}
	for _, o := range c.order {
		if o.kind != "cq" || o.gone != nil {
			continue
		}
		q, _ := o.obj.(*cq.CQ)
		v := q.ViewLocked()
		if !v.Live {
			continue
		}
		views[o] = v
		switch {
		case v.Channel == ch:
			users = append(users, o)
			if v.Arm != notify.Disarmed {
				armed = append(armed, o)
			}
		case v.Channel == nil && c.env.Context(o.obj) == ctx:
			orphans = append(orphans, o)
		}
	}
	if readers > 1 && len(users) == 1 && c.on.Has(check.Thread) {
		c.finding(check.Finding{Check: check.Thread, Rule: "CHAN-11", Verb: verb,
			Objects: []check.Object{c.object(r), c.object(users[0])},
			What: fmt.Sprintf("%d threads wait on the channel at once, and only %s uses it: each event wakes one of them, which one cannot be known (CHAN-11)",
				readers, c.env.Name(users[0].obj)),
			Then: "the threads take turns at one CQ's events without an order: acks, re-arms and polls of the CQ race (USE-02)"}, at)
	}
	if !c.on.Has(check.Wait) && !c.on.Has(check.LostWakeup) {
		return
	}
	if len(users) == 0 {
		if !c.on.Has(check.Wait) {
			return
		}
		f := check.Finding{Check: check.Wait, Rule: "CHAN-13", Verb: verb, Objects: []check.Object{c.object(r)},
			What: "no CQ uses the channel, so nothing can queue an event on it (CQ-05)",
			Then: neverEnds("this wait", bound, "unless another thread creates a CQ on the channel and arms it")}
		if len(orphans) > 0 {
			names := make([]string, len(orphans))
			for i, o := range orphans {
				names[i] = c.objectOf(o.obj).String()
				f.Objects = append(f.Objects, c.objectOf(o.obj))
			}
			f.What += fmt.Sprintf("; %s of the same context %s created with no channel: its events go nowhere (NOTIFY-17)",
				strings.Join(names, ", "), plural(len(orphans), "was", "were"))
		}
		for _, o := range orphans {
			f.Related = append(f.Related, c.related(c.env.Name(o.obj)+" created", o.created))
		}
		f.Related = append(f.Related, c.related("channel created", r.created))
		c.finding(f, at)
		return
	}
	lost := false
	if c.on.Has(check.LostWakeup) {
		for _, o := range armed {
			v := views[o]
			if v.Len == 0 || (v.Arm != notify.ArmNext && !v.Failed) {
				continue
			}
			lost = true
			c.finding(check.Finding{Check: check.LostWakeup, Rule: "NOTIFY-15", Verb: verb,
				Objects: []check.Object{c.object(r), c.object(o)},
				What: fmt.Sprintf("%s is armed and holds %d completion%s that arrived before the arm, which never fire it (NOTIFY-02): it was armed after a poll that left them, or without a poll after the arm",
					c.env.Name(o.obj), v.Len, plural(v.Len, "", "s")),
				Then: "the wait ends only when another completion arrives, and may never end; poll once more after arming (NOTIFY-14)"}, at)
		}
	}
	if len(armed) == 0 && c.on.Has(check.Wait) && !lost {
		objs := []check.Object{c.object(r)}
		names := make([]string, len(users))
		held := 0
		for i, o := range users {
			objs = append(objs, c.object(o))
			names[i] = c.env.Name(o.obj)
			held += views[o].Len
		}
		what := fmt.Sprintf("no CQ of the channel is armed (%s), so nothing can queue an event on it (NOTIFY-01)", strings.Join(names, ", "))
		if held > 0 {
			what += fmt.Sprintf("; %d completion%s wait%s unpolled", held, plural(held, "", "s"), plural(held, "s", ""))
		}
		c.finding(check.Finding{Check: check.Wait, Rule: "CHAN-13", Verb: verb, Objects: objs, What: what,
			Then: neverEnds("this wait", bound, "unless another thread arms one of them: call ibv_req_notify_cq before the wait")}, at)
	}
}

// orphanedWaitLocked looks at the destroy of r, a CQ, while threads wait
// on its channel: once it is gone, can anything still queue an event for
// them (CHAN-13)?
func (c *Checker) orphanedWaitLocked(r *record) {
	if !c.on.Has(check.Wait) {
		return
	}
	q, _ := r.obj.(*cq.CQ)
	ch := q.ViewLocked().Channel
	cr := c.recordLocked(ch)
	if ch == nil || cr == nil || ch.LenLocked() > 0 {
		return
	}
	waiting := cr.frontWaits
	bound := uint64(0)
	if !cr.front {
		for _, w := range c.d.Waiters() {
			if w.Obj == domain.Object(ch) {
				waiting++
				bound = c.d.BoundOf(&w)
			}
		}
	}
	if waiting == 0 {
		return
	}
	for _, o := range c.order {
		if o == r || o.kind != "cq" || o.gone != nil {
			continue
		}
		if oq, _ := o.obj.(*cq.CQ); oq != nil {
			if v := oq.ViewLocked(); v.Live && v.Channel == ch && v.Arm != notify.Disarmed {
				return // another armed CQ can still wake them
			}
		}
	}
	c.finding(check.Finding{Check: check.Wait, Rule: "CHAN-13", Verb: "ibv_destroy_cq", Objects: []check.Object{c.object(r), c.object(cr)},
		What: fmt.Sprintf("%s is destroyed while %d thread%s wait%s on its channel %s, and no armed CQ is left on the channel",
			c.env.Name(r.obj), waiting, plural(waiting, "", "s"), plural(waiting, "s", ""), c.env.Name(ch)),
		Then: neverEnds("the waiting ibv_get_cq_event", bound, "unless another thread creates a CQ on the channel and arms it")}, c.hereLocked())
}

// asyncWaitLocked looks at a blocking ibv_get_async_event on the async
// queue of r as it starts: whether anything of its context can raise an
// event (ASYNC-18).
func (c *Checker) asyncWaitLocked(r *record, verb string, at site, bound uint64) {
	q, _ := r.obj.(*notify.AsyncQueue)
	if q == nil || q.LenLocked() > 0 || !c.on.Has(check.Wait) {
		return
	}
	ctx := c.env.Context(r.obj)
	for _, o := range c.order {
		switch o.kind {
		case "cq", "qp", "srq":
			if o.gone == nil && c.env.Context(o.obj) == ctx {
				return
			}
		}
	}
	c.finding(check.Finding{Check: check.Wait, Rule: "ASYNC-18", Verb: verb, Objects: []check.Object{c.objectOf(ctx)},
		What: "the context has no CQ, QP or SRQ, so only a port event can be raised on it (ASYNC-03)",
		Then: "this wait ends only if a port changes state (IBV_EVENT_PORT_ERR, PORT_ACTIVE) or another thread creates an object that raises one" + boundSuffix(bound)}, at)
}

// neverEnds says that wait can never end, unless what unless says
// happens; with a bound, that no event can end it, only the bound.
func neverEnds(wait string, bound uint64, unless string) string {
	if bound == 0 {
		return wait + " can never end, " + unless
	}
	return "no event can end " + wait + ", " + unless + boundSuffix(bound)
}

// boundSuffix says how a wait with a bound ends: "" with none. The bound
// ends it only if something moves the clock (a timer, a retry, Background
// mode): with nothing pending, time stands still and it waits for ever.
func boundSuffix(bound uint64) string {
	if bound == 0 {
		return ""
	}
	return fmt.Sprintf("; only its bound can end it (sim.Config.WaitBound, %d ticks): with EINTR, once virtual time passes it, if anything moves the clock", bound)
}

// plural returns one when n is 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
