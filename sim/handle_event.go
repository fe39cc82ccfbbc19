package sim

import (
	"github.com/verbsim/verbsim/sim/internal/cq"
	"github.com/verbsim/verbsim/sim/internal/notify"
	"github.com/verbsim/verbsim/sim/internal/qp"
	"github.com/verbsim/verbsim/verbs"
)

// AsyncEvent is one asynchronous event (struct ibv_async_event), as
// Context.GetAsyncEvent returns it.
//
// Its element, chosen by its type (ASYNC-03), is one of a CQ, a QP, an SRQ
// or a port: the accessor of that element returns it, the others nil or 0.
// Every event returned by GetAsyncEvent or TryGetAsyncEvent must be
// acknowledged with Ack (ibv_ack_async_event): destroying the object it
// names waits for that (ASYNC-05). The zero AsyncEvent names nothing and
// cannot be acknowledged.
type AsyncEvent struct {
	ev notify.AsyncEvent // ev.Object holds the handle (*CQ, *QP or *SRQ)
	// engine is the object as the engine raised it (*cq.CQ, *qp.QP or
	// *qp.SRQ): Ack hands it back, because the ack wakes a destroy that
	// waits for it by that object, not by its handle (ASYNC-05).
	engine any
}

// asyncEvent makes the event the engine returned name its object by
// handle.
func asyncEvent(ev notify.AsyncEvent) AsyncEvent {
	engine := ev.Object
	switch o := ev.Object.(type) {
	case *cq.CQ:
		ev.Object = cqHandle(o)
	case *qp.QP:
		ev.Object = qpHandle(o)
	case *qp.SRQ:
		ev.Object = srqHandle(o)
	}
	return AsyncEvent{ev: ev, engine: engine}
}

// Type returns the event type (event_type).
func (e AsyncEvent) Type() verbs.EventType { return e.ev.Type }

// Element returns the kind of element the event names: a CQ, QP, SRQ, WQ
// or port (ASYNC-03).
func (e AsyncEvent) Element() verbs.EventElement { return e.ev.Type.Element() }

// CQ returns the CQ the event names (element.cq), or nil when it names
// something else.
func (e AsyncEvent) CQ() *CQ {
	c, _ := e.ev.Object.(*CQ)
	return c
}

// QP returns the QP the event names (element.qp), or nil when it names
// something else.
func (e AsyncEvent) QP() *QP {
	q, _ := e.ev.Object.(*QP)
	return q
}

// SRQ returns the SRQ the event names (element.srq), or nil when it names
// something else.
func (e AsyncEvent) SRQ() *SRQ {
	s, _ := e.ev.Object.(*SRQ)
	return s
}

// Port returns the port number the event names (element.port_num), for
// port events and IBV_EVENT_DEVICE_FATAL; 0 for the others.
func (e AsyncEvent) Port() uint8 { return e.ev.Port }

// Ack acknowledges the event (ibv_ack_async_event). Acknowledging more
// events of an object than were read returns EINVAL and counts nothing:
// libibverbs would silently corrupt its counters instead (CHAN-08). An
// event that was not returned by GetAsyncEvent or TryGetAsyncEvent (the
// zero AsyncEvent, one of PendingAsyncEvents) returns EINVAL.
func (e AsyncEvent) Ack() error {
	ev := e.ev
	ev.Object = e.engine
	return ev.Ack()
}

// String renders the event as its type and element, e.g.
// "IBV_EVENT_CQ_ERR (cq)" or "IBV_EVENT_PORT_ACTIVE (port 1)".
func (e AsyncEvent) String() string { return e.ev.String() }
