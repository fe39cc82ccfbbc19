package model

import (
	"fmt"
	"syscall"

	"github.com/verbsim/verbsim/verbs"
)

// OK is the Errno of a call that succeeded.
const OK syscall.Errno = 0

// Limits are the device limits the model enforces.
type Limits struct {
	MaxCQE         int // ibv_device_attr.max_cqe
	NumCompVectors int // ibv_context.num_comp_vectors
	MaxQPWR        int // ibv_device_attr.max_qp_wr: work requests per queue
}

// Arm is the notification request pending on a CQ.
type Arm uint8

// The arm states.
const (
	Disarmed  Arm = iota // nothing pending
	Solicited            // ibv_req_notify_cq(cq, 1) pending
	Next                 // ibv_req_notify_cq(cq, 0) pending
)

// String names the arm state.
func (a Arm) String() string {
	switch a {
	case Disarmed:
		return "disarmed"
	case Solicited:
		return "solicited"
	case Next:
		return "next"
	}
	return fmt.Sprintf("Arm(%d)", uint8(a))
}

// State is where a CQ is in its life.
type State uint8

// The CQ states.
const (
	Live       State = iota // usable
	Destroying              // destroy called, waiting for acks (CQ-13)
	Destroyed               // gone
)

// String names the state.
func (s State) String() string {
	switch s {
	case Live:
		return "live"
	case Destroying:
		return "destroying"
	case Destroyed:
		return "destroyed"
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// The async events the model raises, with their verbs values (ASYNC-04):
// IBV_EVENT_CQ_ERR on an overrun (ASYNC-07), and IBV_EVENT_SQ_DRAINED when a
// QP's drain is over under Readings.AlwaysSQDrained (ASYNC-13).
const (
	EventCQErr     = int(verbs.EventCQErr)
	EventSQDrained = int(verbs.EventSQDrained)
)

// CQ is the model of one completion queue. Read it through Model.CQ; the
// model alone changes it.
type CQ struct {
	State   State
	CQE     int  // capacity accepted from the implementation
	Asked   int  // the request the next AcceptCQE checks against
	Context any  // cq_context (CQ-04)
	Channel int  // channel index, or -1 for none
	Arm     Arm  // pending request
	InError bool // overran under the default reading (CQ-23 A)
	Refs    int  // holders that make destroy EBUSY (CQ-11)
	QPs     int  // queues of live QPs completing here (CQ-11); one QP may count twice

	WCs []verbs.WC // unpolled completions, oldest first
	src []source   // where each of WCs came from, in step with WCs

	CompRead, CompAcked   int // completion events read and acked
	AsyncRead, AsyncAcked int // CQ_ERR events read and acked
}

// Unacked returns how many events read for the CQ still await an ack.
func (q CQ) Unacked() int { return q.CompRead - q.CompAcked + q.AsyncRead - q.AsyncAcked }

// Event is a completion event: the CQ it names and that CQ's context.
type Event struct {
	CQ      int
	Context any
}

// Channel is the model of one completion channel.
type Channel struct {
	Destroyed bool
	Users     int     // CQs holding the channel, destroying ones included
	Events    []Event // unread events, oldest first
}

// AsyncEvent is an async event: its type and the CQ or the QP it names
// (the other is -1).
type AsyncEvent struct {
	Type int
	CQ   int
	QP   int
}

// Model is the reference model of one device context. CQs and channels are
// named by the index at which they were created; indices are never reused.
type Model struct {
	readings verbs.Readings
	limits   Limits
	cqs      []*CQ
	channels []*Channel
	async    []AsyncEvent
	qps      []*QP
}

// New returns an empty model of a device with limits lim following readings
// r. The model reads the readings from package verbs, the one declaration
// the simulator and the suite share, and imports nothing of the engine.
func New(r verbs.Readings, lim Limits) *Model {
	return &Model{readings: r, limits: lim}
}

// Readings returns the readings the model follows.
func (m *Model) Readings() verbs.Readings { return m.readings }

// NumCQs returns how many CQs have been created (destroyed ones included).
func (m *Model) NumCQs() int { return len(m.cqs) }

// NumChannels returns how many channels have been created.
func (m *Model) NumChannels() int { return len(m.channels) }

// CQ returns a copy of CQ id.
func (m *Model) CQ(id int) CQ {
	q := *m.cqs[id]
	q.WCs = append([]verbs.WC(nil), q.WCs...)
	q.src = append([]source(nil), q.src...)
	return q
}

// State returns the state of CQ id.
func (m *Model) State(id int) State { return m.cqs[id].State }

// CQE returns the capacity of CQ id last accepted by AcceptCQE.
func (m *Model) CQE(id int) int { return m.cqs[id].CQE }

// Unread returns how many events are queued unread on channel ch, and
// whether the channel still exists.
func (m *Model) Unread(ch int) (n int, live bool) {
	c := m.channels[ch]
	return len(c.Events), !c.Destroyed
}

// Channel returns a copy of channel id.
func (m *Model) Channel(id int) Channel {
	ch := *m.channels[id]
	ch.Events = append([]Event(nil), ch.Events...)
	return ch
}

// AsyncQueued returns the unread async events, oldest first.
func (m *Model) AsyncQueued() []AsyncEvent { return append([]AsyncEvent(nil), m.async...) }

// CreateChannel creates a completion channel and returns its index. It
// cannot fail.
func (m *Model) CreateChannel() int {
	m.channels = append(m.channels, &Channel{})
	return len(m.channels) - 1
}

// CreateCQ creates a CQ asking for cqe entries, with context cqContext, on
// channel ch (-1 for none) and completion vector vec. On success it returns
// the new CQ's index; the caller must then report the capacity the
// implementation chose with AcceptCQE.
func (m *Model) CreateCQ(cqe int, cqContext any, ch int, vec int) (int, syscall.Errno) {
	if cqe < 1 || cqe > m.limits.MaxCQE { // CQ-01
		return -1, syscall.EINVAL
	}
	if vec < 0 || vec >= m.limits.NumCompVectors { // CQ-03
		return -1, syscall.EINVAL
	}
	if ch >= 0 {
		if m.channels[ch].Destroyed {
			return -1, syscall.EINVAL
		}
		m.channels[ch].Users++ // CQ-05
	}
	m.cqs = append(m.cqs, &CQ{Asked: cqe, Context: cqContext, Channel: ch})
	return len(m.cqs) - 1, OK
}

// AcceptCQE checks the capacity an implementation reports for CQ id after a
// successful CreateCQ or Resize and adopts it. The capacity must lie in
// [request, max_cqe] (CQ-02, CQ-09), equal the request under ExactCQE, and
// hold every unpolled completion (CQ-08).
func (m *Model) AcceptCQE(id int, got int) error {
	q := m.cqs[id]
	switch {
	case got < q.Asked:
		return fmt.Errorf("capacity %d is below the request %d (CQ-02, CQ-09)", got, q.Asked)
	case got > m.limits.MaxCQE:
		return fmt.Errorf("capacity %d is above max_cqe %d", got, m.limits.MaxCQE)
	case m.readings.ExactCQE && got != q.Asked:
		return fmt.Errorf("capacity %d differs from the request %d under the exact reading", got, q.Asked)
	case got < len(q.WCs):
		return fmt.Errorf("capacity %d cannot hold the %d unpolled completions (CQ-08)", got, len(q.WCs))
	}
	q.CQE = got
	return nil
}

// Arm is ibv_req_notify_cq on CQ id.
func (m *Model) Arm(id int, solicitedOnly bool) syscall.Errno {
	q := m.cqs[id]
	if q.State != Live {
		return syscall.EINVAL // NOTIFY-10
	}
	if solicitedOnly && q.Arm != Next { // NOTIFY-07: next wins in either order
		q.Arm = Solicited
	} else {
		q.Arm = Next
	}
	return OK
}

// fires says whether a completion w, whose message carried the
// solicited-event bit when solicited is set, satisfies the arm a.
func (m *Model) fires(a Arm, w verbs.WC, solicited bool) bool {
	switch a {
	case Next:
		return true // NOTIFY-03
	case Solicited:
		if w.Status == verbs.WCSuccess {
			// NOTIFY-04: a successful receive of a solicited message; a
			// successful send never, whatever the bit says (NOTIFY-16).
			return solicited && (w.Opcode == verbs.WCRecv || w.Opcode == verbs.WCRecvRDMAWithImm)
		}
		if m.readings.SolicitedBitOnly {
			return solicited // NOTIFY-05 B
		}
		return true // NOTIFY-05 A
	}
	return false
}

// Push adds completion w to CQ id as the adapter would, and reports whether
// the CQ overran.
func (m *Model) Push(id int, w verbs.WC, solicited bool) (overrun bool, errno syscall.Errno) {
	return m.push(id, w, solicited, source{qp: -1})
}

// push is Push for a completion that came from src: a work request of a
// QP's queue, or (src.qp < 0) the Injector.
func (m *Model) push(id int, w verbs.WC, solicited bool, src source) (overrun bool, errno syscall.Errno) {
	q := m.cqs[id]
	if q.State != Live {
		return false, syscall.EINVAL
	}
	if q.InError || len(q.WCs) >= q.CQE { // CQ-22, CQ-23
		if !m.readings.OverrunDrops {
			q.InError = true
		}
		m.async = append(m.async, AsyncEvent{Type: EventCQErr, CQ: id, QP: -1}) // ASYNC-07
		return true, OK
	}
	q.WCs = append(q.WCs, w)
	q.src = append(q.src, src)
	if m.fires(q.Arm, w, solicited) {
		q.Arm = Disarmed // NOTIFY-01
		if q.Channel >= 0 {
			ch := m.channels[q.Channel]
			ch.Events = append(ch.Events, Event{CQ: id, Context: q.Context})
		}
	}
	return false, OK
}

// Poll is ibv_poll_cq on CQ id with num_entries n (n >= 0). It returns the
// completions polled.
func (m *Model) Poll(id int, n int) ([]verbs.WC, syscall.Errno) {
	ps, errno := m.PollFrom(id, n)
	var out []verbs.WC
	for _, p := range ps {
		out = append(out, p.WC)
	}
	return out, errno
}

// Polled is a completion returned by PollFrom, with its origin.
type Polled struct {
	WC verbs.WC
	// QP is the QP whose work request it completes, or -1 for a completion
	// added with Push. Of a QP's completions only wr_id, status, qp_num and
	// vendor_err are meaningful (FLUSH-06), and the model leaves vendor_err 0.
	QP int
}

// PollFrom is Poll that also says where each completion came from. Polling a
// QP's completion frees the slot of its work request and of every earlier one
// of the same queue (QP-29 A, QP-31; CQ-20).
func (m *Model) PollFrom(id int, n int) ([]Polled, syscall.Errno) {
	q := m.cqs[id]
	if q.State != Live {
		return nil, syscall.EINVAL
	}
	k := min(n, len(q.WCs))
	var out []Polled
	for i := range k {
		out = append(out, Polled{WC: q.WCs[i], QP: q.src[i].qp})
		m.retire(q.src[i])
	}
	q.WCs = append([]verbs.WC(nil), q.WCs[k:]...)
	q.src = append([]source(nil), q.src[k:]...)
	if q.InError {
		return out, syscall.EIO // CQ-23 A
	}
	return out, OK
}

// GetEvent is ibv_get_cq_event on channel ch in non-blocking mode.
func (m *Model) GetEvent(ch int) (Event, syscall.Errno) {
	c := m.channels[ch]
	if c.Destroyed {
		return Event{}, syscall.EBADF
	}
	if len(c.Events) == 0 {
		return Event{}, syscall.EAGAIN // CHAN-04
	}
	ev := c.Events[0]
	c.Events = c.Events[1:]
	m.cqs[ev.CQ].CompRead++
	return ev, OK
}

// Ack is ibv_ack_cq_events(cq id, n).
func (m *Model) Ack(id int, n int) syscall.Errno {
	q := m.cqs[id]
	if q.State == Destroyed {
		return syscall.EINVAL
	}
	if n < 0 || n > q.CompRead-q.CompAcked { // CHAN-08
		return syscall.EINVAL
	}
	q.CompAcked += n
	return OK
}

// Resize is ibv_resize_cq on CQ id. On success the caller reports the new
// capacity with AcceptCQE.
func (m *Model) Resize(id int, cqe int) syscall.Errno {
	q := m.cqs[id]
	if q.State != Live {
		return syscall.EINVAL
	}
	if cqe < 1 || cqe > m.limits.MaxCQE || cqe < len(q.WCs) { // CQ-08
		return syscall.EINVAL
	}
	q.Asked = cqe
	return OK
}

// DestroyCQ is ibv_destroy_cq on CQ id. blocked reports that the call would
// wait for acks of events already read (CQ-13): the CQ is then destroying,
// and a later DestroyCQ finishes the job once the acks are in.
func (m *Model) DestroyCQ(id int) (blocked bool, errno syscall.Errno) {
	q := m.cqs[id]
	switch q.State {
	case Destroyed:
		return false, syscall.EINVAL
	case Live:
		if q.Refs > 0 || q.QPs > 0 {
			return false, syscall.EBUSY // CQ-11
		}
		if m.readings.DestroyBusyOnUnacked && q.Unacked() > 0 {
			return false, syscall.EBUSY
		}
		q.State = Destroying
		q.WCs, q.src = nil, nil // CQ-12
		q.Arm = Disarmed
		if q.Channel >= 0 { // unread events need no ack (CQ-13)
			ch := m.channels[q.Channel]
			var keep []Event
			for _, ev := range ch.Events {
				if ev.CQ != id {
					keep = append(keep, ev)
				}
			}
			ch.Events = keep
		}
		m.dropAsync(func(ev AsyncEvent) bool { return ev.CQ == id })
	}
	if q.Unacked() > 0 {
		return true, OK
	}
	q.State = Destroyed
	if q.Channel >= 0 {
		m.channels[q.Channel].Users--
	}
	return false, OK
}

// DestroyChannel is ibv_destroy_comp_channel on channel ch.
func (m *Model) DestroyChannel(ch int) syscall.Errno {
	c := m.channels[ch]
	if c.Destroyed {
		return syscall.EINVAL
	}
	if c.Users > 0 {
		return syscall.EBUSY // CHAN-09
	}
	c.Destroyed = true
	c.Events = nil
	return OK
}

// GetAsync is ibv_get_async_event in non-blocking mode.
func (m *Model) GetAsync() (AsyncEvent, syscall.Errno) {
	if len(m.async) == 0 {
		return AsyncEvent{}, syscall.EAGAIN // ASYNC-02
	}
	ev := m.async[0]
	m.async = m.async[1:]
	if ev.QP >= 0 {
		m.qps[ev.QP].AsyncRead++
	} else {
		m.cqs[ev.CQ].AsyncRead++
	}
	return ev, OK
}

// AckAsync is ibv_ack_async_event on ev, an event GetAsync returned. Acks
// are counted per CQ and per QP, as libibverbs counts them: acking more
// than were read is EINVAL.
func (m *Model) AckAsync(ev AsyncEvent) syscall.Errno {
	read, acked := &m.cqs[max(ev.CQ, 0)].AsyncRead, &m.cqs[max(ev.CQ, 0)].AsyncAcked
	if ev.QP >= 0 {
		read, acked = &m.qps[ev.QP].AsyncRead, &m.qps[ev.QP].AsyncAcked
	}
	if *acked >= *read {
		return syscall.EINVAL
	}
	*acked++
	return OK
}

// dropAsync removes the unread async events for which drop holds: a
// destroyed object's events are discarded (CQ-13).
func (m *Model) dropAsync(drop func(AsyncEvent) bool) {
	var keep []AsyncEvent
	for _, ev := range m.async {
		if !drop(ev) {
			keep = append(keep, ev)
		}
	}
	m.async = keep
}

// Ref records a QP-like holder of CQ id.
func (m *Model) Ref(id int) syscall.Errno {
	q := m.cqs[id]
	if q.State != Live {
		return syscall.EINVAL
	}
	q.Refs++
	return OK
}

// Unref drops a holder of CQ id, if there is one.
func (m *Model) Unref(id int) {
	if q := m.cqs[id]; q.Refs > 0 {
		q.Refs--
	}
}
