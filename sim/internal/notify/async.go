package notify

import (
	"context"
	"fmt"
	"syscall"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/sim/trace"
	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// AsyncEvent is one asynchronous event (struct ibv_async_event).
//
// Exactly one of Object and Port is meaningful, chosen by Type.Element()
// (ASYNC-03): Object holds the CQ, QP, SRQ or WQ the event names (a *cq.CQ for
// EventCQErr), Port the port number for port events and DEVICE_FATAL.
//
// Every event returned by GetAsyncEvent must be acknowledged with Ack
// (ibv_ack_async_event): destroying the object it names waits for that
// (ASYNC-05).
type AsyncEvent struct {
	Type   verbs.EventType
	Object any   // the CQ, QP, SRQ or WQ; nil for port events
	Port   uint8 // the port number, for port events and DEVICE_FATAL

	q     *AsyncQueue
	tally *Tally
}

// String renders the event as its type and element, e.g.
// "IBV_EVENT_CQ_ERR (cq)" or "IBV_EVENT_PORT_ACTIVE (port 1)".
func (e AsyncEvent) String() string {
	if e.Type.Element() == verbs.ElementPort {
		return e.Type.String() + " (port " + itoa(int(e.Port)) + ")"
	}
	return e.Type.String() + " (" + e.Type.Element().String() + ")"
}

// Ack acknowledges the event (ibv_ack_async_event). Acknowledging more events
// of an object than were read returns EINVAL and counts nothing: libibverbs
// would silently corrupt its counters instead (CHAN-08). An event that was not
// returned by GetAsyncEvent or TryGetAsyncEvent returns EINVAL.
func (e AsyncEvent) Ack() error {
	if e.q == nil {
		return verr.New("ibv_ack_async_event", syscall.EINVAL, "the event was not obtained from ibv_get_async_event")
	}
	return e.q.ack(e)
}

// AsyncQueue is a device context's async event queue: what
// ibv_get_async_event reads from context.async_fd. Events are handed out in
// the order raised, each to exactly one reader (ASYNC-06).
//
// An AsyncQueue is safe for concurrent use. Its lock is the domain lock it was
// made with.
//
// On a nil handle a method never panics: one that returns an error returns
// EINVAL (a syscall.Errno, through verr), one that does not returns the zero
// value of each result. Package sim's doc states the convention for the
// whole API.
type AsyncQueue struct {
	q            queue[asyncEntry]
	read, acked  uint64 // every event, including port events with no tally
	portUnacked  uint64 // port and device events read and not acked
	raisedByType [verbs.EventWQFatal + 1]uint64
	name         string // the trace name; see SetTraceName
}

// SetTraceName names the queue in the trace (package sim gives it its
// context's name, "dev0/ctx#1"). Every event raised, read and acked on the
// queue, every failed read other than EAGAIN and every failed ack is
// recorded under that name. Call it before the queue is shared.
func (q *AsyncQueue) SetTraceName(name string) {
	if q != nil {
		q.name = name
	}
}

// TraceName returns the queue's name in the trace.
func (q *AsyncQueue) TraceName() string {
	if q == nil {
		return ""
	}
	return q.name
}

// opLocked is the trace record of a call on the queue: what, with the
// event's type and element when there is one. It formats only when the
// domain traces.
func (q *AsyncQueue) opLocked(what string, typ verbs.EventType, obj any, port uint8, failed bool) domain.Op {
	op := domain.Op{Verb: what, Obj: q}
	if !q.q.d.Tracing() || (failed && what == "get_async_event") { // a failed read names no event
		return op
	}
	op.Rec = q.recordOf(trace.KindVerb, what, typ, obj, port)
	return op
}

// recordOf is the record of a call or an event on the queue (name) about
// an event of type typ, on element obj or port.
func (q *AsyncQueue) recordOf(kind trace.Kind, name string, typ verbs.EventType, obj any, port uint8) *trace.Record {
	r := &trace.Record{Kind: kind, Name: name, Async: &trace.Async{Type: typ, Port: port}}
	if obj != nil {
		r.Peer = fmt.Sprintf("%T", obj)
		if o, ok := obj.(domain.Object); ok {
			r.Peer = o.TraceName()
		}
	}
	return r
}

var errNilQueue = verr.New("ibv_get_async_event", syscall.EINVAL, "nil async event queue")

type asyncEntry struct {
	typ   verbs.EventType
	obj   any
	port  uint8
	tally *Tally
}

// NewAsyncQueue returns an empty async event queue in domain d, the domain
// of the objects that raise events on it (nil: a domain of its own).
func NewAsyncQueue(d *domain.Domain) *AsyncQueue {
	q := &AsyncQueue{name: "async"}
	q.q.init(d, q, "ibv_get_async_event")
	return q
}

// Domain returns the domain that serializes the queue.
func (q *AsyncQueue) Domain() *domain.Domain {
	if q == nil {
		return nil
	}
	return q.q.d
}

// RaiseLocked queues an event. For an event naming an object (see
// EventType.Element), obj is that object and t its event accounting, which
// GetAsyncEvent and Ack update; for a port event obj must be nil and port
// names the port, numbered from 1. A mismatch between typ and its element is
// EINVAL: an engine bug must not turn into an event no reader can interpret.
// Events raised on a closed queue are dropped.
//
// Precondition: the domain lock is held.
func (q *AsyncQueue) RaiseLocked(typ verbs.EventType, obj any, t *Tally, port uint8) error {
	if q == nil {
		return errNilQueue
	}
	switch typ.Element() {
	case 0:
		return verr.Errorf("async event", syscall.EINVAL, "unknown event type %d", uint32(typ))
	case verbs.ElementPort:
		if obj != nil || t != nil || port == 0 {
			return verr.Errorf("async event", syscall.EINVAL, "%s names a port (from 1), not an object", typ.Name())
		}
	default:
		if obj == nil || t == nil {
			return verr.Errorf("async event", syscall.EINVAL, "%s must name its %s", typ.Name(), typ.Element())
		}
	}
	if q.q.dead {
		return nil
	}
	q.raisedByType[typ]++
	q.q.pushLocked(asyncEntry{typ: typ, obj: obj, port: port, tally: t})
	if d := q.q.d; d.Tracing() {
		d.Emit(q, *q.recordOf(trace.KindEvent, "raise", typ, obj, port))
	}
	return nil
}

func (q *AsyncQueue) took(e asyncEntry) {
	q.read++
	if e.tally != nil {
		e.tally.asyncRead++
	} else {
		q.portUnacked++
	}
}

// get reads one event, blocking (ctx != nil) or not.
func (q *AsyncQueue) get(ctx context.Context, block bool) (AsyncEvent, error) {
	d := q.q.d
	d.Enter(domain.Op{Verb: "get_async_event", Obj: q})
	var e asyncEntry
	var err error
	if block {
		e, err = q.q.getLocked(ctx, q.took)
	} else {
		e, err = q.q.tryGetLocked(q.took)
	}
	switch {
	case err == nil:
		d.Leave(q.opLocked("get_async_event", e.typ, e.obj, e.port, false), nil)
		return q.event(e), nil
	case err == q.q.again: // errors.Is would allocate in a busy loop
		d.Leave(domain.Op{}, err)
	default:
		d.Leave(q.opLocked("get_async_event", 0, nil, 0, true), err)
	}
	return AsyncEvent{}, err
}

func (q *AsyncQueue) event(e asyncEntry) AsyncEvent {
	return AsyncEvent{Type: e.typ, Object: e.obj, Port: e.port, q: q, tally: e.tally}
}

// GetAsyncEvent waits for the next async event (ibv_get_async_event,
// ASYNC-01). When ctx is done first it returns an error matching
// syscall.EINTR and ctx's error; on a closed queue it returns EBADF.
func (q *AsyncQueue) GetAsyncEvent(ctx context.Context) (AsyncEvent, error) {
	if q == nil {
		return AsyncEvent{}, errNilQueue
	}
	return q.get(ctx, true)
}

// TryGetAsyncEvent returns the next async event, or EAGAIN at once when none
// is queued: ibv_get_async_event on a non-blocking async_fd (ASYNC-02).
func (q *AsyncQueue) TryGetAsyncEvent() (AsyncEvent, error) {
	if q == nil {
		return AsyncEvent{}, errNilQueue
	}
	return q.get(context.TODO(), false)
}

func (q *AsyncQueue) ack(e AsyncEvent) (err error) {
	d := q.q.d
	d.Enter(domain.Op{Verb: "ack_async_event", Obj: q})
	defer func() { d.Leave(q.opLocked("ack_async_event", e.Type, e.Object, e.Port, err != nil), err) }()
	if e.tally != nil {
		if err := e.tally.ackAsync(); err != nil {
			return err
		}
		if o, ok := e.Object.(domain.Object); ok {
			d.Wake(o) // a destroy may wait for this ack (ASYNC-05)
		}
	} else {
		if q.portUnacked == 0 {
			return verr.New("ibv_ack_async_event", syscall.EINVAL, "over-ack: no port event is waiting for an ack")
		}
		q.portUnacked--
	}
	q.acked++
	return nil
}

// Len returns the number of queued, unread events; the async descriptor polls
// readable exactly when it is positive.
func (q *AsyncQueue) Len() int {
	if q == nil {
		return 0
	}
	q.q.d.Enter(domain.Op{})
	defer q.q.d.Leave(domain.Op{}, nil)
	return q.q.items.Len()
}

// Pending returns the queued, unread events, oldest first, without reading
// them: the queue and its counts are left as they were. The copies carry
// Type, Object and Port only; having not been read, they cannot be
// acknowledged (their Ack is EINVAL). It is a read-only view for tools and
// teaching; it takes the domain lock. Nil when no event is queued or q is
// nil.
func (q *AsyncQueue) Pending() []AsyncEvent {
	if q == nil {
		return nil
	}
	q.q.d.Lock()
	defer q.q.d.Unlock()
	n := q.q.items.Len()
	if n == 0 {
		return nil
	}
	out := make([]AsyncEvent, n)
	for i := range out {
		e := q.q.items.At(i)
		out[i] = AsyncEvent{Type: e.typ, Object: e.obj, Port: e.port}
	}
	return out
}

// Counts returns how many events have been read and acked in total.
func (q *AsyncQueue) Counts() (read, acked uint64) {
	if q == nil {
		return 0, 0
	}
	q.q.d.Enter(domain.Op{})
	defer q.q.d.Leave(domain.Op{}, nil)
	return q.read, q.acked
}

// Raised returns how many events of type typ have been raised.
func (q *AsyncQueue) Raised(typ verbs.EventType) uint64 {
	if q == nil {
		return 0
	}
	q.q.d.Enter(domain.Op{})
	defer q.q.d.Leave(domain.Op{}, nil)
	if int(typ) < len(q.raisedByType) {
		return q.raisedByType[typ]
	}
	return 0
}

// DiscardLocked removes every queued, unread event naming obj and returns how
// many it removed: a destroyed object's unread events need no ack.
//
// Precondition: the domain lock is held.
func (q *AsyncQueue) DiscardLocked(obj any) int {
	if q == nil {
		return 0
	}
	return q.q.items.RemoveIf(func(e asyncEntry) bool { return e.obj == obj })
}

// Close closes the queue, as closing the device context does: unread events
// are dropped and blocked readers return EBADF. Closing twice is EINVAL.
func (q *AsyncQueue) Close() error {
	if q == nil {
		return errNilQueue
	}
	q.q.d.Enter(domain.Op{})
	defer q.q.d.Leave(domain.Op{}, nil)
	return q.CloseLocked()
}

// CloseLocked is Close for a caller that holds the domain lock.
func (q *AsyncQueue) CloseLocked() error {
	if q == nil {
		return errNilQueue
	}
	if q.q.dead {
		return verr.New("ibv_close_device", syscall.EINVAL, "the async event queue is already closed")
	}
	q.q.closeLocked()
	return nil
}
