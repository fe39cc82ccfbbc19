package sim

import (
	"fmt"

	"github.com/verbsim/verbsim/sim/internal/cq"
	"github.com/verbsim/verbsim/sim/internal/notify"
	"github.com/verbsim/verbsim/sim/internal/qp"
)

// Naming objects in the trace. A QP is named by its device and qp_num
// ("dev0/qp 0x11"); every other object by its device, its kind and its rank
// among the objects of that kind created on the device ("dev0/cq#2"). Names
// never involve addresses, so the same calls give the same trace. Names are
// kept, destroyed objects' too, only while the fabric traces.

// nameLocked gives obj, just created on d, its trace name and returns it;
// "" when the fabric does not trace.
func (e *engine) nameLocked(d *Device, kind string, obj any) string {
	if e.log == nil {
		return ""
	}
	if d.seq == nil {
		d.seq = map[string]int{}
	}
	d.seq[kind]++
	name := fmt.Sprintf("%s/%s#%d", d.name, kind, d.seq[kind])
	if e.names == nil {
		e.names = map[any]string{}
	}
	e.names[obj] = name
	return name
}

// nameOf returns the trace name of obj.
func (e *engine) nameOf(obj any) string {
	if q, ok := obj.(*qp.QP); ok {
		name := "?"
		if d := e.f.deviceOf(q); d != nil {
			name = d.name
		}
		return fmt.Sprintf("%s/qp %#x", name, q.Num())
	}
	if name, ok := e.names[obj]; ok {
		return name
	}
	return fmt.Sprintf("%T", obj)
}

// callLocked records a verb call on object; a failed call (err != nil)
// carries the error's text as its why.
func (e *engine) callLocked(object, what string, err error) {
	if e.log == nil {
		return
	}
	why := ""
	if err != nil {
		why = err.Error()
	}
	e.record(object, what, why)
}

// cqTrace is the trace hook of the CQs, or nil when the fabric does not
// trace.
func (e *engine) cqTrace() func(*cq.CQ, string, string) {
	if e.log == nil {
		return nil
	}
	return func(c *cq.CQ, what, why string) { e.record(e.nameOf(c), what, why) }
}

// srqTrace is the trace hook of the SRQs, or nil.
func (e *engine) srqTrace() func(*qp.SRQ, string, string) {
	if e.log == nil {
		return nil
	}
	return func(s *qp.SRQ, what, why string) { e.record(e.nameOf(s), what, why) }
}

// traceChannelLocked names a new completion channel and hooks it to the
// trace: an event read is recorded on the CQ it names.
func (e *engine) traceChannelLocked(d *Device, ch *cq.Channel) {
	name := e.nameLocked(d, "chan", ch)
	if name == "" {
		return
	}
	e.record(name, "create_comp_channel", "")
	ch.SetTrace(func(c *cq.CQ, what, why string) {
		object := name
		if c != nil {
			object = e.nameOf(c)
		}
		e.record(object, what, why)
	})
}

// traceAsyncLocked names a new context and hooks its async event queue to
// the trace.
func (e *engine) traceAsyncLocked(c *Context) {
	name := e.nameLocked(c.dev, "ctx", c)
	if name == "" {
		return
	}
	e.record(name, "open_device", "")
	c.async.SetTrace(func(what string, typ notify.EventType, obj any, port uint8, why string) {
		switch {
		case what == "get_async_event" && why != "": // a failed read names no event
		case obj == nil:
			what = fmt.Sprintf("%s %s port %d", what, typ.Name(), port)
		default:
			what = fmt.Sprintf("%s %s %s", what, typ.Name(), e.nameOf(obj))
		}
		e.record(name, what, why)
	})
}
