// Package notify implements how an HCA tells software that something
// happened: the arm state of a completion queue, completion channels with
// their event accounting, and the asynchronous event queue of a device
// context.
//
// This package is the engine behind sim.CompChannel and sim.AsyncEvent, not
// a public API: it sits under sim/internal, so only package sim and its
// tests import it, and users reach channels and events through sim's
// handles. Its exported names (the ...Locked hooks, Tally, AsyncQueue,
// Domain) are for package sim.
//
// # Arming (ibv_req_notify_cq)
//
// Arm is the pending notification request of one CQ, as pure state. A request
// is one-shot (NOTIFY-01), only completions added after it can satisfy it
// (NOTIFY-02), "next" beats "solicited" whatever the call order (NOTIFY-07),
// and repeated requests collapse (NOTIFY-08). SolicitedPolicy selects which
// unsuccessful completions wake a solicited-only request (NOTIFY-05).
//
// # Completion channels (ibv_create_comp_channel, ibv_get_cq_event)
//
// Channel is a FIFO of completion events, each naming a CQ and its context.
// GetEvent blocks (honouring a context.Context), TryGetEvent returns EAGAIN
// like a non-blocking descriptor. A Tally counts per object the events read
// and acknowledged: an object may be destroyed only once every event read for
// it has been acknowledged (CQ-13), and an over-ack is reported as EINVAL
// rather than corrupting the counters (CHAN-08).
//
// # Async events (ibv_get_async_event)
//
// AsyncQueue carries EventType events; each names a CQ, QP, SRQ, WQ or port as
// its type dictates (ASYNC-03) and must be acknowledged (ASYNC-05).
//
// # Locking
//
// All objects that can reach each other (CQs, their channels, the async queue
// of their context) share one lock, the domain lock, handed to their
// constructors. Methods named ...Locked expect the caller to hold it; the
// others take it. Blocking reads wait outside the lock.
//
// # Nil handles
//
// Methods of a nil *Channel, *AsyncQueue or *Tally never panic: those that
// return an error return EINVAL, the others the zero value of each result.
// A nil context.Context given to a blocking read or a wait is EINVAL too,
// whether or not an event is queued. Package sim's doc states the
// convention for the whole API.
package notify
