package scenario

// engine_cq.go holds the commands and arguments that let a scenario say
// everything the conformance suite's Machine does (conformance/ops writes
// its operation logs as scenarios): device limits and readings on fabric,
// resize_cq, hold and release, polling with the iterator, and acking a
// chosen async event. Like engine.go and state.go, it calls package sim.

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// setReadings replaces the profile's readings with readings=(...), if given.
func (in *interp) setReadings(a *args) error {
	names := a.list("readings")
	if len(names) == 0 {
		return nil
	}
	var r verbs.Readings
	if err := r.Set(names...); err != nil {
		return err
	}
	in.profile.Readings = r
	return nil
}

// limits returns what fabric's max_cqe, comp_vectors and max_qp_wr make of
// each device, or nil when none is given.
func (in *interp) limits(a *args) func(*sim.DeviceConfig) {
	attr, set := sim.DefaultDeviceAttr(), false
	for k, p := range map[string]*int{"max_cqe": &attr.MaxCQE, "comp_vectors": &attr.NumCompVectors, "max_qp_wr": &attr.MaxQPWR} {
		if _, ok := a.get(k); ok {
			*p, set = int(min(a.num(k, 0), 1<<31-1)), true
		}
	}
	if !set {
		return nil
	}
	return func(c *sim.DeviceConfig) { c.Attr = attr }
}

// completeFields sets the completion fields complete names beyond wr_id,
// opcode and status.
func completeFields(w *verbs.WC, a *args) {
	if _, ok := a.get("byte_len"); ok {
		w.ByteLen = uint32(a.num("byte_len", 0))
	}
	w.QPNum = uint32(a.num("qp_num", 0))
	w.VendorErr = uint32(a.num("vendor_err", 0))
	if _, ok := a.get("imm"); ok {
		w.WCFlags |= verbs.WCWithImm
		w.ImmData = uint32(a.num("imm", 0))
	}
}

// vectorArg renders a comp_vector argument that is not 0.
func vectorArg(v int) string {
	if v == 0 {
		return ""
	}
	return fmt.Sprintf(", comp_vector=%d", v)
}

// pollEx reads up to len(wcs) completions of q with the poll iterator, as
// ibv_poll_cq would return them: the count, and the error ibv_poll_cq would
// give (ENOENT at the end is no error). With no room it is ibv_poll_cq, as
// conformance/ops polls.
func pollEx(q *sim.CQ, wcs []verbs.WC) (int, error) {
	if len(wcs) == 0 {
		return q.Poll(wcs)
	}
	n := 0
	err := q.StartPoll()
	for err == nil {
		w, rerr := verbs.ReadWC(q)
		if rerr != nil {
			return n, rerr
		}
		wcs[n] = w
		n++
		if n == len(wcs) {
			break
		}
		err = q.NextPoll()
	}
	if n > 0 {
		if e := q.EndPoll(); e != nil {
			return n, e
		}
	}
	if errors.Is(err, syscall.ENOENT) {
		err = nil
	}
	return n, err
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

// doCQ runs resize_cq, hold and release.
func (in *interp) doCQ(st *Step, a *args) error {
	c := a.ref("cq", "cq")
	if a.err != nil {
		return a.err
	}
	q := in.obj.cq[c]
	switch st.Verb {
	case "resize_cq":
		n := max(min(a.int("cqe", 0), 1<<31), -1<<31)
		err := q.Resize(int(n))
		in.verbResult(fmt.Sprintf("ibv_resize_cq(%s, %d)", c, n), err)
		if err == nil {
			in.say("cq->cqe = %d", q.CQE())
			in.note("CQ-09")
		}
	case "hold":
		in.verbResult("hold cq "+c+" as a QP would", q.Ref())
		in.note("CQ-11")
	case "release":
		q.Unref()
		in.say("released a hold on cq %s", c)
	}
	return nil
}
