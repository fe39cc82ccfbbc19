package checker

import (
	"fmt"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/sim/check"
	"github.com/verbsim/verbsim/sim/internal/cq"
)

// readLocked records that the program read an event about the object
// about from r, a channel or an async queue, at site at.
func (c *Checker) readLocked(r *record, about any, at site) {
	at.tick = c.env.Now()
	switch r.kind {
	case "chan":
		if q := c.recordLocked(about); q != nil {
			q.reads = append(q.reads, at)
		}
	case "async":
		o := c.recordLocked(about)
		if about == nil { // a port event: the context's own
			o = c.recordLocked(c.env.Context(r.obj))
		}
		if o != nil {
			o.asyncReads = append(o.asyncReads, at)
		}
	}
}

// ackedLocked follows an acknowledgement: of more events than the program
// read (CHAN-08), or on a CQ the events did not name (CHAN-07).
func (c *Checker) ackedLocked(n *domain.Note) {
	if n.N <= 0 {
		return
	}
	if n.Async {
		o := c.recordLocked(n.Obj)
		if n.Obj == nil {
			o = c.recordLocked(c.env.Context(n.With))
		}
		if o == nil {
			return
		}
		if o.asyncCredit > 0 && n.Err == nil {
			o.asyncCredit--
			return
		}
		if len(o.asyncReads) == 0 || n.Err != nil {
			if c.on.Has(check.Ack) {
				c.finding(check.Finding{Check: check.Ack, Rule: "CHAN-08", Verb: "ibv_ack_async_event", Objects: []check.Object{c.object(o)},
					What: "acknowledges an async event that was never read, or one already acknowledged",
					Then: "libibverbs counts the ack anyway: the counts no longer match, and the object's destroy waits for ever (CQ-13, ASYNC-05)"}, c.hereLocked())
			}
			return
		}
		o.asyncReads = o.asyncReads[1:]
		return
	}
	r := c.recordLocked(n.Obj)
	if r == nil {
		return
	}
	k := n.N
	if r.credit > 0 {
		d := min(r.credit, k)
		r.credit -= d
		k -= d
	}
	if k == 0 {
		return
	}
	if k <= len(r.reads) {
		r.reads = r.reads[k:]
		return
	}
	have := len(r.reads)
	if n.Err == nil { // the engine counted them all, as libibverbs does
		r.reads = nil
	}
	if !c.on.Has(check.Ack) {
		return
	}
	at := c.hereLocked()
	// An event of another CQ of the same channel, unacknowledged: the ack
	// names the wrong CQ (CHAN-07).
	if q, _ := r.obj.(*cq.CQ); q != nil {
		if ch := q.ViewLocked().Channel; ch != nil {
			for _, o := range c.order {
				if o == r || o.kind != "cq" || len(o.reads) == 0 {
					continue
				}
				if oq, _ := o.obj.(*cq.CQ); oq == nil || oq.ViewLocked().Channel != ch {
					continue
				}
				f := check.Finding{Check: check.Ack, Rule: "CHAN-07", Verb: "ibv_ack_cq_events",
					Objects: []check.Object{c.object(r), c.object(o)},
					What: fmt.Sprintf("acknowledges %d event%s of %s, of which %d %s read, while %d event%s of %s read from the same channel %s unacknowledged",
						k, plural(k, "", "s"), c.env.Name(r.obj), have, plural(have, "was", "were"),
						len(o.reads), plural(len(o.reads), "", "s"), c.env.Name(o.obj), plural(len(o.reads), "is", "are")),
					Then: fmt.Sprintf("an event must be acknowledged on the CQ it named: destroying %s will wait for ever (CQ-13)", c.env.Name(o.obj))}
				for _, s := range o.reads {
					f.Related = append(f.Related, c.related("event of "+c.env.Name(o.obj)+" read", s))
				}
				c.finding(f, at)
				return
			}
		}
	}
	c.finding(check.Finding{Check: check.Ack, Rule: "CHAN-08", Verb: "ibv_ack_cq_events", Objects: []check.Object{c.object(r)},
		What: fmt.Sprintf("acknowledges %d event%s of %s, but %d %s read and not yet acknowledged",
			k, plural(k, "", "s"), c.env.Name(r.obj), have, plural(have, "was", "were")),
		Then: "libibverbs counts the acks anyway: the counts no longer match, and ibv_destroy_cq waits for ever (verbsim refuses the ack with EINVAL)"}, at)
}

// destroyingLocked reports a destroy that is about to wait for the
// acknowledgement of events the program read (CQ-13, ASYNC-05).
func (c *Checker) destroyingLocked(r *record) {
	n := len(r.reads) + len(r.asyncReads)
	if n == 0 || !c.on.Has(check.Ack) {
		return
	}
	rule, verb := "ASYNC-05", "ibv_destroy_"+r.kind
	if len(r.reads) > 0 {
		rule = "CQ-13"
	}
	f := check.Finding{Check: check.Ack, Rule: rule, Verb: verb, Objects: []check.Object{c.object(r)},
		What: fmt.Sprintf("%d event%s read about %s %s not acknowledged; the destroy waits for %s",
			n, plural(n, "", "s"), c.env.Name(r.obj), plural(n, "was", "were"), plural(n, "its ack", "their acks")),
		Then: "the destroy blocks until they are acknowledged: for ever, unless another thread acknowledges them"}
	for _, s := range r.reads {
		f.Related = append(f.Related, c.related("completion event read", s))
	}
	for _, s := range r.asyncReads {
		f.Related = append(f.Related, c.related("async event read", s))
	}
	c.finding(f, c.hereLocked())
}

// useAfterDestroyLocked reports verb on r, which was destroyed (USE-01).
func (c *Checker) useAfterDestroyLocked(r *record, verb string, at site) {
	who := "this thread"
	if r.gone.thread != at.thread {
		who = fmt.Sprintf("another thread (%d)", r.gone.thread)
	}
	f := check.Finding{Check: check.Destroyed, Rule: "USE-01", Verb: verb, Objects: []check.Object{c.object(r)},
		What:    fmt.Sprintf("%s was destroyed by %s", c.env.Name(r.obj), who),
		Then:    "in libibverbs the handle is freed memory: the call reads another object's state or crashes; verbsim answers EINVAL",
		Related: []check.Related{c.related("destroyed", *r.gone), c.related("created", r.created)}}
	c.finding(f, at)
}

// concurrentPollLocked reports an ibv_poll_cq on r while another thread's
// is in flight (USE-02).
func (c *Checker) concurrentPollLocked(r *record, at site) {
	c.finding(check.Finding{Check: check.Thread, Rule: "USE-02", Verb: verbPoll, Objects: []check.Object{c.object(r)},
		What: "two threads poll the CQ at once, with nothing to order them",
		Then: "each takes a share of the completions and their order between the threads is lost (CQ-17, CQ-18); with IBV_CREATE_CQ_ATTR_SINGLE_THREADED the provider takes no lock and the CQ is corrupted"}, at)
}
