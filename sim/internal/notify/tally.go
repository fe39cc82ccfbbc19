package notify

import (
	"context"
	"syscall"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/sim/verr"
)

// Tally counts, for one object (a CQ, and later QPs, SRQs and WQs), the events
// handed to the application and the acknowledgements it has given back.
//
// libibverbs keeps the same four counters in struct ibv_cq and refuses to
// finish destroying the object until every event it handed out has been
// acknowledged (CQ-13, ASYNC-05). Completion events are counted when
// ibv_get_cq_event returns them, async events when ibv_get_async_event does;
// events discarded unread are never counted.
//
// A Tally belongs to its owner's lock domain: every method requires the
// domain lock to be held. The zero value is ready to use. On a nil *Tally
// the accessors return zero values (Settled too: false) and AckComp and
// WaitSettled return EINVAL.
type Tally struct {
	compRead, compAcked   uint64
	asyncRead, asyncAcked uint64
}

// Counts returns the events read and acked, completion and async.
//
// Precondition: the domain lock is held.
func (t *Tally) Counts() (compRead, compAcked, asyncRead, asyncAcked uint64) {
	if t == nil {
		return 0, 0, 0, 0
	}
	return t.compRead, t.compAcked, t.asyncRead, t.asyncAcked
}

// Unacked returns how many read events still wait for an acknowledgement.
//
// Precondition: the domain lock is held.
func (t *Tally) Unacked() uint64 {
	if t == nil {
		return 0
	}
	return (t.compRead - t.compAcked) + (t.asyncRead - t.asyncAcked)
}

// Settled reports whether every read event has been acknowledged.
//
// Precondition: the domain lock is held.
func (t *Tally) Settled() bool { return t != nil && t.Unacked() == 0 }

// AckComp records n completion-event acknowledgements, as
// ibv_ack_cq_events(cq, n) does. Acknowledging more events than were read is a
// usage error that libibverbs cannot see and that makes ibv_destroy_cq hang
// for ever (CHAN-08); verbsim reports it as EINVAL and counts nothing. n may
// batch several events (CHAN-07, CHAN-12).
//
// Precondition: the domain lock is held.
func (t *Tally) AckComp(n int) error {
	if t == nil {
		return verr.New("ibv_ack_cq_events", syscall.EINVAL, "nil tally")
	}
	if n < 0 {
		return verr.Errorf("ibv_ack_cq_events", syscall.EINVAL, "negative event count %d", n)
	}
	if uint64(n) > t.compRead-t.compAcked {
		return verr.Errorf("ibv_ack_cq_events", syscall.EINVAL,
			"over-ack: acking %d events but only %d were read and not yet acked (CHAN-08)", n, t.compRead-t.compAcked)
	}
	if n == 0 {
		return nil
	}
	t.compAcked += uint64(n)
	return nil
}

func (t *Tally) ackAsync() error {
	if t.asyncAcked >= t.asyncRead {
		return verr.New("ibv_ack_async_event", syscall.EINVAL,
			"over-ack: every async event read for this object is already acked")
	}
	t.asyncAcked++
	return nil
}

// WaitSettled blocks until every read event has been acknowledged or ctx is
// done; in the second case it returns the domain's wait error, which wraps
// ctx's error and names what was waited for. It waits through d
// (domain.Wait) as w, which must name the tally's owner: whoever records an
// ack must then call d.Wake on that owner. Several goroutines may wait on
// one Tally. w is made Timeless: only the application's acks settle a
// tally, so an Auto-mode wait never moves the clock for it.
//
// A nil tally, ctx, d or w is EINVAL.
//
// Precondition: the domain lock is held.
func (t *Tally) WaitSettled(ctx context.Context, d *domain.Domain, w *domain.Waiter) error {
	if t == nil || ctx == nil || d == nil || w == nil {
		return verr.New("wait_settled", syscall.EINVAL, "nil tally, context.Context, domain or waiter")
	}
	if t.Settled() {
		return nil
	}
	w.Timeless = true
	return d.Wait(ctx, w, t.Settled)
}
