// Package model is a deliberately simple reference model of completion
// queues, completion channels and the async event queue, written from the
// rule catalogue (shared/spec/RULES.md) and nothing else.
//
// It exists to be compared with a real implementation step by step: the
// state-machine test in package conformance and the fuzz targets in package
// fuzz apply every operation to both and require identical outcomes. It is
// therefore written to be obviously right rather than fast: plain slices, no
// ring buffers, no locks, no goroutines, and every failure is a
// syscall.Errno value (0 meaning success) so that comparing outcomes is a
// comparison of numbers.
//
// # What the model covers
//
//   - CreateCQ: cqe in [1, max_cqe] and comp_vector in [0, num_comp_vectors),
//     else EINVAL (CQ-01, CQ-03); a destroyed channel is EINVAL too. The model
//     does not decide the capacity: the caller hands it the capacity the
//     implementation reports (AcceptCQE), and the model checks it lies in
//     [request, max_cqe], or equals the request under Readings.ExactCQE
//     (CQ-02, CQ-09).
//   - Arm: disarmed, solicited or next; next beats solicited in either order
//     and repeated arms collapse (NOTIFY-07, NOTIFY-08); one-shot (NOTIFY-01).
//   - Push (the producer side): stores the completion, or overruns when the CQ
//     is full (CQ-22) or, in the default reading, already in its error state
//     (CQ-23 A); each overrun queues one CQ_ERR async event (ASYNC-07). A stored
//     completion fires the arm per NOTIFY-03..05 and queues one event on the
//     CQ's channel, if any (NOTIFY-17); completions present at arm time never
//     fire it (NOTIFY-02), because only a push consults the arm.
//   - Poll: a FIFO batch of min(n, stored) (CQ-15, CQ-16, CQ-17); in the
//     default reading, after an overrun every poll also fails with EIO.
//   - GetEvent: FIFO across every CQ sharing the channel (CHAN-06), EAGAIN when
//     empty (CHAN-04), EBADF on a destroyed channel; each event read counts
//     towards the CQ's acks owed (CHAN-07).
//   - Ack: n < 0 or more than read and not yet acked is EINVAL (CHAN-08).
//   - Resize: cqe in [1, max_cqe] and not below the unpolled count, else
//     EINVAL (CQ-08); contents and order kept (CQ-10).
//   - DestroyCQ: EBUSY while referenced (CQ-11); otherwise unread events of
//     the CQ are discarded from its channel and the async queue, and the
//     destroy completes only when every event already read has been acked
//     (CQ-13, ASYNC-05). "Would block" is an outcome of its own: the CQ is
//     then destroying (every verb but Ack is EINVAL, it still holds its
//     channel) until a later DestroyCQ finds the acks complete. Under
//     Readings.DestroyBusy unacked events make it EBUSY instead.
//   - DestroyChannel: EBUSY while a CQ, destroying ones included, uses it
//     (CHAN-09); EINVAL the second time.
//   - Async events: GetAsync (EAGAIN when empty), AckAsync per CQ (over-ack
//     EINVAL).
//   - Ref and Unref: a QP-like holder of a CQ (CQ-11).
//
// # What it leaves out, on purpose
//
//   - max_cq (CQ-06, ENOMEM): which CQs count against it during a blocked
//     destroy is not stated by the rules, and the tests never come near it.
//   - Blocking reads (GetEvent with a context): the model has no time; a
//     blocking read that would find an event behaves as the non-blocking one.
//   - Closing the device context, QPs, IGNORE_OVERRUN (cq_ex), and the
//     capacity an implementation picks within the allowed range.
//   - The capacity of a CQ that is destroying or destroyed.
//
// History, in history.go, is not part of the model: it records what an
// implementation was seen to do and checks the invariants any correct
// implementation satisfies whatever the model says.
package model
