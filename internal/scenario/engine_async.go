package scenario

import (
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// engine_async.go holds the async event commands: get_async_event and
// ack_async_event.

// doGetAsyncEvent runs get_async_event (ibv_get_async_event, not blocking).
func (in *interp) doGetAsyncEvent(_ *Step, a *args) error {
	c := a.ref("ctx", "ctx")
	if a.err != nil {
		return a.err
	}
	ev, err := in.obj.ctx[c].TryGetAsyncEvent()
	if err != nil {
		in.verbResult("ibv_get_async_event("+c+")", err)
		return nil
	}
	in.asyncRd[c] = append(in.asyncRd[c], asyncRead{ev: ev})
	in.say("ibv_get_async_event(%s) = ok: %s", c, in.describeAsync(ev))
	in.note("ASYNC-05")
	switch ev.Type() {
	case verbs.EventCQErr:
		in.note("ASYNC-07")
	case verbs.EventQPFatal:
		in.note("ASYNC-08")
	case verbs.EventQPAccessErr, verbs.EventQPReqErr:
		in.note("ASYNC-11", "XFER-15")
	case verbs.EventSRQLimitReached:
		in.note("SRQ-04", "ASYNC-15")
	case verbs.EventQPLastWQEReached:
		in.note("ASYNC-14")
	}
	return nil
}

// doAckAsyncEvent runs ack_async_event (ibv_ack_async_event).
func (in *interp) doAckAsyncEvent(_ *Step, a *args) error {
	c := a.ref("ctx", "ctx")
	if a.err != nil {
		return a.err
	}
	return in.ackAsync(c, a)
}

// asyncRead is an async event a context's get_async_event read.
type asyncRead struct {
	ev    sim.AsyncEvent
	acked bool
}

// ackAsync acks the async event of context c that event= names (the n-th
// read, from 0), or the oldest read and not yet acked.
func (in *interp) ackAsync(c string, a *args) error {
	rd := in.asyncRd[c]
	i := -1
	if _, ok := a.get("event"); ok {
		if k := a.num("event", 0); k < uint64(len(rd)) {
			i = int(k)
		} else {
			in.say("nothing to acknowledge: %s has read %d async event(s)", c, len(rd))
			return nil
		}
	} else {
		for j := range rd {
			if !rd[j].acked {
				i = j
				break
			}
		}
		if i < 0 {
			in.say("nothing to acknowledge: no async event of %s was read and left unacknowledged", c)
			return nil
		}
	}
	rd[i].acked = true
	in.verbResult("ibv_ack_async_event("+in.describeAsync(rd[i].ev)+")", rd[i].ev.Ack())
	return nil
}
