// Package model is a deliberately simple reference model of completion
// queues, completion channels, the async event queue and queue pairs,
// written from the rule catalogue (spec/catalogue.md) and nothing else.
//
// It exists to be compared with a real implementation step by step: the
// state-machine test in package conformance and the fuzz targets in package
// fuzz apply every operation to both and require identical outcomes. It is
// therefore written to be obviously right rather than fast: plain slices, no
// ring buffers, no locks, no goroutines, and every failure is a
// syscall.Errno value (0 meaning success) so that comparing outcomes is a
// comparison of numbers.
//
// Where the rules leave the reading to the implementation, the model follows
// a verbs.Readings (the Readings named below), the one declaration of the
// readings that the simulator's profiles and the suite share. The model
// imports only package verbs, so that it stays independent of every
// implementation it judges.
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
//     Readings.DestroyBusyOnUnacked unacked events make it EBUSY instead.
//   - DestroyChannel: EBUSY while a CQ, destroying ones included, uses it
//     (CHAN-09); EINVAL the second time.
//   - Async events: GetAsync (EAGAIN when empty), AckAsync per CQ and per
//     QP (over-ack EINVAL). The CQ_ERR of an overrun (ASYNC-07), and under
//     Readings.AlwaysSQDrained the SQ_DRAINED of a QP that enters SQD with
//     nothing in flight (ASYNC-13); a destroyed object's unread events are
//     discarded.
//   - Ref and Unref: a QP-like holder of a CQ (CQ-11).
//
// And of queue pairs (qp.go), as far as one adapter decides alone:
//
//   - CreateQP on live CQs (the same CQ may serve both queues), RC, UC or UD,
//     each queue at most max_qp_wr, else EINVAL (QP-02, QP-03); the QP starts
//     in RESET (QP-01) and holds its CQs, so their destroy is EBUSY (CQ-11).
//     As with CQs, the caller hands the model the qp_num and depths the
//     implementation chose (AcceptQP), and the model checks them (QP-01,
//     QP-02).
//   - ModifyQP against verbs.Transition, the one transition table: the
//     legal pairs (QP-07, QP-08 per Readings.ResetToErr)
//     and the required and optional bits (QP-09..11, QP-14..21); anything
//     else is EINVAL and changes nothing (QP-13). Attribute values are not
//     modelled: callers pass valid ones.
//   - PostSend and PostRecv: the states that accept each (QP-25, QP-26),
//     the list stopping at a full queue with ENOMEM (QP-27, QP-29, QP-31).
//     A slot is freed only when the completion of its request, or of a later
//     request of the same queue, is polled (QP-29 A), or under
//     Readings.FreeSlotOnRetire as soon as the request is flushed, its
//     completion stored or lost (QP-29 B); a reset frees them all. A list
//     posted in ERR is flushed once all of it is queued, so it still stops
//     at the queue's depth.
//   - Entering ERR flushes every outstanding request, per queue in posting
//     order, unsignaled ones included, as WR_FLUSH_ERR carrying wr_id and
//     qp_num, on the queue's own CQ (FLUSH-01, 02, 04, 06); requests posted
//     in ERR are flushed at once (FLUSH-05). Flush completions go through
//     the same push as injected ones, so they overrun, fire arms and raise
//     events like any completion (CQ-22, CQ-23, NOTIFY); receive flushes
//     count as solicited, send flushes not (NOTIFY-05 B). The send queue is
//     flushed before the receive queue, an order the rules leave open.
//   - RESET empties both queues without completions (FLUSH-08); DestroyQP
//     drops the requests without completions and releases the CQs (QP-37).
//     Completions already in a CQ stay there in both cases (CQ-26, the
//     reading verbsim follows) and free no slot when polled.
//
// Traffic (traffic.go) executes what QPs post, and window.go adds memory
// windows on RC QPs: type 1 and 2 windows, binds and their MW_BIND_ERR
// checks, LOCAL_INV and SEND_WITH_INV, and RDMA WRITE, READ and atomics
// through window keys, with the bytes of the memory windows expose
// (MW-01..MW-07, XFER-13, XFER-17, XFER-29).
//
// In the QP model alone, nothing executes: a QP's only completions are
// flush completions, and SQE, whose only way in is a failing send, is never
// entered.
//
// # What it leaves out, on purpose
//
//   - max_cq (CQ-06, ENOMEM): which CQs count against it during a blocked
//     destroy is not stated by the rules, and the tests never come near it.
//   - Blocking reads (GetEvent with a context): the model has no time; a
//     blocking read that would find an event behaves as the non-blocking one.
//   - Closing the device context, IGNORE_OVERRUN (cq_ex), and the capacity
//     an implementation picks within the allowed range.
//   - Of QPs: attribute values (QP-22), CUR_STATE (QP-12), SRQs, QP async
//     events, max_qp, and everything traffic brings (issue #4).
//   - The capacity of a CQ that is destroying or destroyed.
//   - Device memory (DM-01..07). Its verbs are argument checks and a page
//     budget that the table cases cover, and an MR on it is, for traffic,
//     a zero-based MR whose bytes live elsewhere: the traffic model names
//     MRs by key and whether they exist, never by where their bytes are,
//     so it would predict nothing new.
//
// History, in history.go, is not part of the model: it records what an
// implementation was seen to do and checks the invariants any correct
// implementation satisfies whatever the model says.
package model
