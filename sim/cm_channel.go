package sim

import (
	"context"
	"syscall"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/rdmacm"
	"github.com/verbsim/verbsim/sim/internal/notify"
	"github.com/verbsim/verbsim/sim/trace"
	"github.com/verbsim/verbsim/sim/verr"
)

// CMChannel is an event channel of the connection manager (struct
// rdma_event_channel; CM-02). It implements rdmacm.EventChannel. Every
// event goes to one reader, in the order raised; a blocking read waits
// through the fabric's domain, so the schedule explorer and the timeline
// see who waits for what.
type CMChannel struct {
	a    *cmAgent
	name string
	q    notify.Events[*CMEvent]
	ids  int  // IDs reporting on the channel
	dead bool // destroyed
	sync bool // the private channel of a synchronous ID
}

var _ rdmacm.EventChannel = (*CMChannel)(nil)

func (a *cmAgent) newChannelLocked(sync bool) *CMChannel {
	ch := &CMChannel{a: a, name: a.nameLocked("chan"), sync: sync}
	ch.q.Init(a.f.d, ch, "rdma_get_cm_event")
	a.f.d.Created(ch)
	return ch
}

// TraceName implements domain.Object.
func (ch *CMChannel) TraceName() string {
	if ch == nil {
		return ""
	}
	return ch.name
}

// GetEvent implements rdmacm.EventChannel: rdma_get_cm_event on a blocking
// channel (CM-02). It waits for the next event or until ctx ends.
func (ch *CMChannel) GetEvent(ctx context.Context) (rdmacm.Event, error) {
	ev, err := ch.get(ctx, true)
	if err != nil {
		return nil, err
	}
	return ev, nil
}

// TryGetEvent implements rdmacm.EventChannel: rdma_get_cm_event on a
// non-blocking channel: EAGAIN when no event is queued (CM-02).
func (ch *CMChannel) TryGetEvent() (rdmacm.Event, error) {
	ev, err := ch.get(context.Background(), false)
	if err != nil {
		return nil, err
	}
	return ev, nil
}

func (ch *CMChannel) get(ctx context.Context, block bool) (ev *CMEvent, err error) {
	const verb = "rdma_get_cm_event"
	if ch == nil || ch.a == nil {
		return nil, verr.New(verb, syscall.EINVAL, "nil event channel")
	}
	if block && ctx == nil {
		return nil, verr.New(verb, syscall.EINVAL, "nil context.Context")
	}
	a := ch.a
	d := a.f.d
	op := domain.Op{Verb: "get_cm_event", Obj: ch}
	d.Enter(op)
	defer func() {
		if ev != nil && d.Tracing() {
			op.Rec = ev.record()
		}
		if err != nil && ch.q.IsAgain(err) {
			d.Leave(domain.Op{}, nil) // a non-blocking poll is not news
			return
		}
		d.Leave(op, err)
	}()
	if ch.dead {
		return nil, verr.New(verb, syscall.EBADF, "the event channel has been destroyed")
	}
	if block {
		return ch.q.GetLocked(ctx, a.tookLocked)
	}
	return ch.q.TryGetLocked(a.tookLocked)
}

// Len returns the number of events queued and not yet read: what makes
// the channel's descriptor readable (CM-02). A simulator view.
func (ch *CMChannel) Len() int {
	if ch == nil || ch.a == nil {
		return 0
	}
	d := ch.a.f.d
	d.Enter(domain.Op{})
	defer d.Leave(domain.Op{}, nil)
	return ch.q.LenLocked()
}

// Pending describes the events queued and not yet read, oldest first, as
// the trace names them ("RDMA_CM_EVENT_CONNECT_REQUEST id3"). A simulator
// view for timelines.
func (ch *CMChannel) Pending() []string {
	if ch == nil || ch.a == nil {
		return nil
	}
	d := ch.a.f.d
	d.Enter(domain.Op{})
	defer d.Leave(domain.Op{}, nil)
	out := make([]string, ch.q.LenLocked())
	for i := range out {
		out[i] = ch.q.AtLocked(i).describe()
	}
	return out
}

// Destroyed reports whether the channel has been destroyed. A simulator
// view.
func (ch *CMChannel) Destroyed() bool {
	if ch == nil || ch.a == nil {
		return false
	}
	d := ch.a.f.d
	d.Enter(domain.Op{})
	defer d.Leave(domain.Op{}, nil)
	return ch.dead
}

// Destroy implements rdmacm.EventChannel: rdma_destroy_event_channel.
// verbsim refuses it with EBUSY while an ID still reports on the channel,
// a misuse the C call cannot report (CM-02); a second destroy is EINVAL.
func (ch *CMChannel) Destroy() (err error) {
	const verb = "rdma_destroy_event_channel"
	if ch == nil || ch.a == nil {
		return verr.New(verb, syscall.EINVAL, "nil event channel")
	}
	d := ch.a.f.d
	op := domain.Op{Verb: "destroy_event_channel", Obj: ch}
	d.Enter(op)
	defer func() { d.Leave(op, err) }()
	switch {
	case ch.dead:
		return verr.New(verb, syscall.EINVAL, "the event channel has already been destroyed")
	case ch.sync:
		return verr.New(verb, syscall.EINVAL, "the channel is a synchronous rdma_cm_id's own")
	case ch.ids > 0:
		return verr.Errorf(verb, syscall.EBUSY, "%d rdma_cm_id(s) still report on the channel (CM-02)", ch.ids)
	}
	ch.dead = true
	ch.q.CloseLocked()
	return nil
}

// CMEvent is one event of the connection manager (struct rdma_cm_event).
// It implements rdmacm.Event. It must be acknowledged (Ack) once read.
type CMEvent struct {
	typ    rdmacm.EventType
	id     *CMID
	listen *CMID
	status int
	conn   rdmacm.ConnParam
	ud     rdmacm.UDParam
	mc     *cmMcast
	mcCtx  any
	// counted is the ID whose read and acknowledged events this one
	// counts: the listener for a CONNECT_REQUEST, the ID otherwise (CM-03).
	counted *CMID
	read    bool
	acked   bool
}

var _ rdmacm.Event = (*CMEvent)(nil)

// Type implements rdmacm.Event.
func (e *CMEvent) Type() rdmacm.EventType {
	if e == nil {
		return 0
	}
	return e.typ
}

// ID implements rdmacm.Event: the event's ID (a new one for
// EventConnectRequest).
func (e *CMEvent) ID() rdmacm.ID {
	if e == nil || e.id == nil {
		return nil
	}
	return e.id
}

// ListenID implements rdmacm.Event: the listener of an
// EventConnectRequest, nil otherwise.
func (e *CMEvent) ListenID() rdmacm.ID {
	if e == nil || e.listen == nil {
		return nil
	}
	return e.listen
}

// Status implements rdmacm.Event.
func (e *CMEvent) Status() int {
	if e == nil {
		return 0
	}
	return e.status
}

// Conn implements rdmacm.Event. The private data is the event's own copy.
func (e *CMEvent) Conn() rdmacm.ConnParam {
	if e == nil {
		return rdmacm.ConnParam{}
	}
	c := e.conn
	c.PrivateData = append([]byte(nil), c.PrivateData...)
	return c
}

// UD implements rdmacm.Event.
func (e *CMEvent) UD() rdmacm.UDParam {
	if e == nil {
		return rdmacm.UDParam{}
	}
	u := e.ud
	u.PrivateData = append([]byte(nil), u.PrivateData...)
	return u
}

// MulticastContext implements rdmacm.Event.
func (e *CMEvent) MulticastContext() any {
	if e == nil {
		return nil
	}
	return e.mcCtx
}

// Ack implements rdmacm.Event: rdma_ack_cm_event (CM-03). An event that
// was not read, or is acknowledged a second time, is EINVAL.
func (e *CMEvent) Ack() (err error) {
	const verb = "rdma_ack_cm_event"
	if e == nil || e.counted == nil {
		return verr.New(verb, syscall.EINVAL, "nil event")
	}
	a := e.counted.a
	d := a.f.d
	op := domain.Op{Verb: "ack_cm_event", Obj: e.counted}
	d.Enter(op)
	defer func() {
		if d.Tracing() {
			op.Rec = e.record()
		}
		d.Leave(op, err)
	}()
	return a.ackLocked(e)
}

func (a *cmAgent) ackLocked(e *CMEvent) error {
	const verb = "rdma_ack_cm_event"
	switch {
	case !e.read:
		return verr.New(verb, syscall.EINVAL, "the event was not returned by rdma_get_cm_event")
	case e.acked:
		return verr.New(verb, syscall.EINVAL, "the event has already been acknowledged (CM-03)")
	}
	e.acked = true
	e.counted.acked++
	if e.mc != nil {
		e.mc.acked++
	}
	a.f.d.Wake(e.counted)
	return nil
}

// describe renders the event as the timelines name it:
// "RDMA_CM_EVENT_CONNECT_REQUEST dev0/cm id#3", with its status if any.
func (e *CMEvent) describe() string {
	r := e.record()
	s := r.CM.String()
	if r.Peer != "" {
		s += " " + r.Peer
	}
	return s
}

// record is the trace's record about the event: its type and status, and
// the ID it reports on as the peer.
func (e *CMEvent) record() *trace.Record {
	r := &trace.Record{CM: &trace.CMEvent{Type: e.typ, Status: e.status}}
	if e.id != nil {
		r.Peer = e.id.name
	}
	return r
}

// raiseLocked queues ev on its ID's channel, as the kernel's ucma does
// (K:ucma.c ucma_event_handler): events of a destroyed ID, and those of a
// new connection ID the application has not accepted yet, are dropped; a
// CONNECT_REQUEST needs room in the listener's backlog (CM-08) and reports
// false when there is none.
func (a *cmAgent) raiseLocked(ev *CMEvent) bool {
	id := ev.id
	if ev.counted == nil {
		ev.counted = id
	}
	target := id
	if ev.typ == rdmacm.EventConnectRequest {
		target = ev.listen
		if target.backlog <= 0 {
			return false
		}
		target.backlog--
	} else if id.state == cmDestroying || (id.listen != nil && !id.owned) {
		return false
	}
	if id.connectError && (ev.typ == rdmacm.EventRejected || ev.typ == rdmacm.EventDisconnected) {
		return false
	}
	ch := target.ch
	if ch == nil || ch.dead {
		return false
	}
	ch.q.PushLocked(ev)
	if d := a.f.d; d.Tracing() {
		r := ev.record()
		r.Kind, r.Name = trace.KindEvent, "raise"
		d.Emit(ch, *r)
	}
	return true
}

// tookLocked is librdmacm's part of rdma_get_cm_event (cma:cma.c): it
// counts the event as read and does what the library does on reading it.
func (a *cmAgent) tookLocked(ev *CMEvent) {
	ev.read = true
	ev.counted.reported++
	if ev.mc != nil {
		ev.mc.reported++
	}
	switch ev.typ {
	case rdmacm.EventConnectRequest:
		ev.listen.backlog++
		ev.id.reqRead = true
		if ev.listen.sync {
			ev.id.setChannelLocked(nil)
		}
	case rdmacm.EventConnectResponse:
		a.connResponseLocked(ev)
	case rdmacm.EventRejected:
		ev.id.qpToErrLocked()
	case rdmacm.EventMulticastJoin:
		a.joinedLocked(ev)
	}
}

// completeLocked is librdmacm's ucma_complete for a synchronous ID: it
// acknowledges the ID's last event, waits for the next one on its private
// channel and returns its outcome (CM-04). An asynchronous ID returns nil.
func (a *cmAgent) completeLocked(verb string, id *CMID) error {
	if !id.sync {
		return nil
	}
	if id.event != nil {
		_ = a.ackLocked(id.event)
		id.event = nil
	}
	ev, err := id.ch.q.GetLocked(waitCtx, a.tookLocked)
	if err != nil {
		return verr.Wrap(verb, syscall.EINTR, "waiting for the event of a synchronous rdma_cm_id", err)
	}
	id.event = ev
	return syncErr(verb, ev)
}

// syncErr is the error a synchronous call returns for its event.
func syncErr(verb string, ev *CMEvent) error {
	switch {
	case ev.status == 0:
		return nil
	case ev.typ == rdmacm.EventRejected:
		return verr.Errorf(verb, syscall.ECONNREFUSED, "%v, status %d (CM-04)", ev.typ, ev.status)
	case ev.status < 0:
		return verr.Errorf(verb, syscall.Errno(-ev.status), "%v (CM-04)", ev.typ)
	}
	return verr.Errorf(verb, syscall.Errno(ev.status), "%v, status %d (CM-04)", ev.typ, ev.status)
}
