package sim

import (
	"context"

	"github.com/verbsim/verbsim/sim/internal/cq"
)

// CompChannel is a completion channel (struct ibv_comp_channel): where an
// armed CQ reports that a completion arrived. Context.CreateCompChannel
// makes one and Context.CreateCQ attaches CQs to it; CQ.ReqNotify arms a
// CQ, GetEvent (blocking, with a context.Context) or TryGetEvent
// (non-blocking, EAGAIN) is ibv_get_cq_event, and CQ.AckEvents
// acknowledges what they returned. The loop that never misses a wake-up
// is: wait, ack, re-arm, then poll until the CQ is empty (the package
// Example; docs/notify.md). The cq_context GetEvent returns is whatever
// the application gave CreateCQ, hence any. It is a handle on the engine's
// channel; every method is safe to call from any goroutine.
// On a nil *CompChannel every method returns EINVAL or zero values; see the
// package doc.
type CompChannel struct{ ch *cq.Channel }

// newChannel makes the handle of an engine channel and records it there.
func newChannel(ch *cq.Channel) *CompChannel {
	h := &CompChannel{ch: ch}
	ch.Handle = h
	return h
}

// eng returns the engine channel, nil for a nil handle.
func (ch *CompChannel) eng() *cq.Channel {
	if ch == nil {
		return nil
	}
	return ch.ch
}

// chanHandle maps an engine channel back to its handle; nil for nil.
func chanHandle(ch *cq.Channel) *CompChannel {
	if ch == nil {
		return nil
	}
	h, _ := ch.Handle.(*CompChannel)
	return h
}

// Context returns the device context the channel was created through
// (ibv_comp_channel.context).
func (ch *CompChannel) Context() *Context {
	o, _ := ch.eng().Owner().(*Context)
	return o
}

// GetEvent waits for the next completion event and returns the CQ it names
// and that CQ's cq_context (ibv_get_cq_event, CHAN-03). Every event returned
// must be acknowledged on that CQ (CHAN-07). When ctx is done first,
// GetEvent returns an error that matches both syscall.EINTR and ctx's
// error, and takes no event. On a destroyed channel it returns EBADF.
func (ch *CompChannel) GetEvent(ctx context.Context) (*CQ, any, error) {
	q, cctx, err := ch.eng().GetEvent(ctx)
	return cqHandle(q), cctx, err
}

// TryGetEvent is GetEvent on a channel whose descriptor is in non-blocking
// mode: with no event queued it returns EAGAIN at once (CHAN-04).
func (ch *CompChannel) TryGetEvent() (*CQ, any, error) {
	q, cctx, err := ch.eng().TryGetEvent()
	return cqHandle(q), cctx, err
}

// Len returns the number of queued, unread events. A channel's descriptor
// polls readable exactly when Len is positive (CHAN-05).
func (ch *CompChannel) Len() int { return ch.eng().Len() }

// Destroy destroys the channel (ibv_destroy_comp_channel). It fails with
// EBUSY while any CQ still uses it (CHAN-09) and with EINVAL when the
// channel is already destroyed. Readers blocked in GetEvent return EBADF.
func (ch *CompChannel) Destroy() error { return ch.eng().Destroy() }

// Pending returns the CQs the queued, unread events name, oldest first,
// without taking them: a read-only view for teaching and debugging tools.
// It is nil when nothing is queued.
func (ch *CompChannel) Pending() []*CQ {
	p := ch.eng().Pending()
	if len(p) == 0 {
		return nil
	}
	out := make([]*CQ, len(p))
	for i, q := range p {
		out[i] = cqHandle(q)
	}
	return out
}

// Refs returns the number of CQs using the channel.
func (ch *CompChannel) Refs() int { return ch.eng().Refs() }

// Destroyed reports whether Destroy has succeeded.
func (ch *CompChannel) Destroyed() bool { return ch.eng().Destroyed() }
