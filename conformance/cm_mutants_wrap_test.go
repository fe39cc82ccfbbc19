package conformance_test

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"github.com/verbsim/verbsim/conformance"
	"github.com/verbsim/verbsim/rdmacm"
	"github.com/verbsim/verbsim/verbs"
)

// The connection manager of a mutant: the simulator's, wrapped so that
// hooks can break single calls. The wrappers keep identity: an event's ID
// is the wrapper CreateID returned, or one made once for a new
// connection's ID.

// cmHooks break the connection manager. A nil hook forwards. Hooks see
// the inner objects.
type cmHooks struct {
	// call filters the error of the ID verb named (by its rdma_ name)
	// after it ran.
	call func(verb string, id rdmacm.ID, err error) error
	// event rewrites an event as it is read; drop makes the read skip it.
	event func(e *mEvent) (drop bool)
	// The verbs whose arguments a mutant changes.
	createID   func(cm rdmacm.CM, ch rdmacm.EventChannel, ctx any, ps rdmacm.PortSpace) (rdmacm.ID, error)
	listen     func(id rdmacm.ID, backlog int) error
	connect    func(id rdmacm.ID, p *rdmacm.ConnParam) error
	accept     func(id rdmacm.ID, p *rdmacm.ConnParam) error
	reject     func(id rdmacm.ID, data []byte) error
	createQP   func(id rdmacm.ID, pd verbs.PD, attr *verbs.QPInitAttr) error
	destroy    func(id rdmacm.ID, ctx context.Context) error
	migrate    func(id rdmacm.ID, ch rdmacm.EventChannel) error
	setOption  func(id rdmacm.ID, level rdmacm.OptionLevel, name rdmacm.OptionName, v []byte) error
	initQPAttr func(id rdmacm.ID, st verbs.QPState) (verbs.QPAttr, verbs.QPAttrMask, error)
	route      func(id rdmacm.ID) rdmacm.Route
	getAddr    func(cm rdmacm.CM, node, service string, hints *rdmacm.AddrInfo) ([]rdmacm.AddrInfo, error)
	createEP   func(cm rdmacm.CM, res *rdmacm.AddrInfo, pd verbs.PD, attr *verbs.QPInitAttr) (rdmacm.ID, error)
	tryGet     func(ch rdmacm.EventChannel) (rdmacm.Event, error)
	// attach replaces ibv_attach_mcast and ibv_detach_mcast of QPs made
	// through the verbs (MCAST).
	attach func(a verbs.MulticastAttacher, gid verbs.GID, lid uint16, on bool) error
}

// CM implements conformance.CMDevice.
func (d *mDevice) CM() rdmacm.CM {
	if d.cm == nil {
		d.cm = &mCM{inner: d.inner.(conformance.CMDevice).CM(), h: d.h.cm, ids: map[rdmacm.ID]*mID{}, chs: map[rdmacm.EventChannel]*mChan{}}
	}
	return d.cm
}

// CMAddr implements conformance.CMDevice.
func (d *mDevice) CMAddr() netip.Addr {
	if c, ok := d.inner.(conformance.CMDevice); ok {
		return c.CMAddr()
	}
	return netip.Addr{}
}

// Now implements conformance.Nower.
func (d *mDevice) Now() uint64 { return d.inner.(conformance.Nower).Now() }

// RemoveDevice implements conformance.DeviceRemover.
func (d *mDevice) RemoveDevice() error { return d.inner.(conformance.DeviceRemover).RemoveDevice() }

type mCM struct {
	inner rdmacm.CM
	h     *cmHooks
	mu    sync.Mutex
	ids   map[rdmacm.ID]*mID
	chs   map[rdmacm.EventChannel]*mChan
}

func (m *mCM) hooks() *cmHooks {
	if m.h == nil {
		return &cmHooks{}
	}
	return m.h
}

func (m *mCM) wrapID(id rdmacm.ID) *mID {
	if id == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	w := m.ids[id]
	if w == nil {
		w = &mID{ID: id, m: m}
		m.ids[id] = w
	}
	return w
}

func (m *mCM) wrapCh(ch rdmacm.EventChannel) *mChan {
	if ch == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	w := m.chs[ch]
	if w == nil {
		w = &mChan{inner: ch, m: m}
		m.chs[ch] = w
	}
	return w
}

func innerCh(ch rdmacm.EventChannel) rdmacm.EventChannel {
	if w, ok := ch.(*mChan); ok && w != nil {
		return w.inner
	}
	return ch
}

func (m *mCM) CreateEventChannel() (rdmacm.EventChannel, error) {
	ch, err := m.inner.CreateEventChannel()
	if err != nil {
		return nil, err
	}
	return m.wrapCh(ch), nil
}

func (m *mCM) CreateID(ch rdmacm.EventChannel, ctx any, ps rdmacm.PortSpace) (rdmacm.ID, error) {
	var id rdmacm.ID
	var err error
	if h := m.hooks().createID; h != nil {
		id, err = h(m.inner, innerCh(ch), ctx, ps)
	} else {
		id, err = m.inner.CreateID(innerCh(ch), ctx, ps)
	}
	if err != nil {
		return nil, err
	}
	return m.wrapID(id), nil
}

func (m *mCM) CreateEP(res *rdmacm.AddrInfo, pd verbs.PD, attr *verbs.QPInitAttr) (rdmacm.ID, error) {
	var id rdmacm.ID
	var err error
	if h := m.hooks().createEP; h != nil {
		id, err = h(m.inner, res, pd, attr)
	} else {
		id, err = m.inner.CreateEP(res, pd, attr)
	}
	if err != nil {
		return nil, err
	}
	return m.wrapID(id), nil
}

func (m *mCM) GetAddrInfo(node, service string, hints *rdmacm.AddrInfo) ([]rdmacm.AddrInfo, error) {
	if h := m.hooks().getAddr; h != nil {
		return h(m.inner, node, service, hints)
	}
	return m.inner.GetAddrInfo(node, service, hints)
}

func (m *mCM) Devices() ([]verbs.Context, error) { return m.inner.Devices() }

type mChan struct {
	inner rdmacm.EventChannel
	m     *mCM
}

func (c *mChan) GetEvent(ctx context.Context) (rdmacm.Event, error) {
	for {
		ev, err := c.inner.GetEvent(ctx)
		if err != nil {
			return nil, err
		}
		if w := c.m.wrapEvent(ev); w != nil {
			return w, nil
		}
	}
}

func (c *mChan) TryGetEvent() (rdmacm.Event, error) {
	for {
		var ev rdmacm.Event
		var err error
		if h := c.m.hooks().tryGet; h != nil {
			ev, err = h(c.inner)
		} else {
			ev, err = c.inner.TryGetEvent()
		}
		if err != nil || ev == nil {
			return nil, err
		}
		if w := c.m.wrapEvent(ev); w != nil {
			return w, nil
		}
	}
}

func (c *mChan) Destroy() error { return c.inner.Destroy() }

// mEvent is an event as a mutant reports it.
type mEvent struct {
	inner  rdmacm.Event
	typ    rdmacm.EventType
	status int
	conn   rdmacm.ConnParam
	ud     rdmacm.UDParam
	mcCtx  any
	id     rdmacm.ID
	listen rdmacm.ID
}

// wrapEvent wraps ev, or acknowledges it and returns nil when the hook
// drops it.
func (m *mCM) wrapEvent(ev rdmacm.Event) *mEvent {
	w := &mEvent{inner: ev, typ: ev.Type(), status: ev.Status(), conn: ev.Conn(), ud: ev.UD(), mcCtx: ev.MulticastContext()}
	if id := ev.ID(); id != nil {
		w.id = m.wrapID(id)
	}
	if l := ev.ListenID(); l != nil {
		w.listen = m.wrapID(l)
	}
	if h := m.hooks().event; h != nil && h(w) {
		_ = ev.Ack()
		return nil
	}
	return w
}

func (e *mEvent) Type() rdmacm.EventType { return e.typ }
func (e *mEvent) ID() rdmacm.ID          { return e.id }
func (e *mEvent) ListenID() rdmacm.ID    { return e.listen }
func (e *mEvent) Status() int            { return e.status }
func (e *mEvent) Conn() rdmacm.ConnParam { return e.conn }
func (e *mEvent) UD() rdmacm.UDParam     { return e.ud }
func (e *mEvent) MulticastContext() any  { return e.mcCtx }
func (e *mEvent) Ack() error             { return e.inner.Ack() }

// mID is an ID of a mutant: the inner ID's methods, but for those below.
type mID struct {
	rdmacm.ID
	m *mCM
}

func (i *mID) filter(verb string, err error) error {
	if h := i.m.hooks().call; h != nil {
		return h(verb, i.ID, err)
	}
	return err
}

func (i *mID) Channel() rdmacm.EventChannel {
	if ch := i.ID.Channel(); ch != nil {
		return i.m.wrapCh(ch)
	}
	return nil
}

func (i *mID) Event() rdmacm.Event {
	if ev := i.ID.Event(); ev != nil {
		return i.m.wrapEvent(ev)
	}
	return nil
}

func (i *mID) Route() rdmacm.Route {
	if h := i.m.hooks().route; h != nil {
		return h(i.ID)
	}
	return i.ID.Route()
}

func (i *mID) BindAddr(a netip.AddrPort) error {
	return i.filter("rdma_bind_addr", i.ID.BindAddr(a))
}

func (i *mID) ResolveAddr(src, dst netip.AddrPort, timeout time.Duration) error {
	return i.filter("rdma_resolve_addr", i.ID.ResolveAddr(src, dst, timeout))
}

func (i *mID) ResolveRoute(timeout time.Duration) error {
	return i.filter("rdma_resolve_route", i.ID.ResolveRoute(timeout))
}

func (i *mID) Listen(backlog int) error {
	if h := i.m.hooks().listen; h != nil {
		return h(i.ID, backlog)
	}
	return i.filter("rdma_listen", i.ID.Listen(backlog))
}

func (i *mID) GetRequest(ctx context.Context) (rdmacm.ID, error) {
	id, err := i.ID.GetRequest(ctx)
	if id == nil {
		return nil, err
	}
	return i.m.wrapID(id), err
}

func (i *mID) Connect(p *rdmacm.ConnParam) error {
	if h := i.m.hooks().connect; h != nil {
		return h(i.ID, p)
	}
	return i.filter("rdma_connect", i.ID.Connect(p))
}

func (i *mID) Accept(p *rdmacm.ConnParam) error {
	if h := i.m.hooks().accept; h != nil {
		return h(i.ID, p)
	}
	return i.filter("rdma_accept", i.ID.Accept(p))
}

func (i *mID) Reject(data []byte) error {
	if h := i.m.hooks().reject; h != nil {
		return h(i.ID, data)
	}
	return i.filter("rdma_reject", i.ID.Reject(data))
}

func (i *mID) Establish() error { return i.filter("rdma_establish", i.ID.Establish()) }
func (i *mID) Disconnect() error {
	return i.filter("rdma_disconnect", i.ID.Disconnect())
}

func (i *mID) Notify(ev verbs.EventType) error {
	return i.filter("rdma_notify", i.ID.Notify(ev))
}

func (i *mID) Migrate(ch rdmacm.EventChannel) error {
	if h := i.m.hooks().migrate; h != nil {
		return h(i.ID, innerCh(ch))
	}
	return i.filter("rdma_migrate_id", i.ID.Migrate(innerCh(ch)))
}

func (i *mID) SetOption(level rdmacm.OptionLevel, name rdmacm.OptionName, v []byte) error {
	if h := i.m.hooks().setOption; h != nil {
		return h(i.ID, level, name, v)
	}
	return i.filter("rdma_set_option", i.ID.SetOption(level, name, v))
}

func (i *mID) InitQPAttr(st verbs.QPState) (verbs.QPAttr, verbs.QPAttrMask, error) {
	if h := i.m.hooks().initQPAttr; h != nil {
		return h(i.ID, st)
	}
	return i.ID.InitQPAttr(st)
}

func (i *mID) CreateQP(pd verbs.PD, attr *verbs.QPInitAttr) error {
	if h := i.m.hooks().createQP; h != nil {
		return h(i.ID, pd, attr)
	}
	return i.filter("rdma_create_qp", i.ID.CreateQP(pd, attr))
}

func (i *mID) JoinMulticast(addr netip.Addr, ctx any) error {
	return i.filter("rdma_join_multicast", i.ID.JoinMulticast(addr, ctx))
}

func (i *mID) LeaveMulticast(addr netip.Addr) error {
	return i.filter("rdma_leave_multicast", i.ID.LeaveMulticast(addr))
}

func (i *mID) Destroy(ctx context.Context) error {
	if h := i.m.hooks().destroy; h != nil {
		return h(i.ID, ctx)
	}
	return i.filter("rdma_destroy_id", i.ID.Destroy(ctx))
}

func (i *mID) DestroyEP(ctx context.Context) error {
	if i.ID.QP() != nil {
		if err := i.ID.DestroyQP(); err != nil {
			return err
		}
	}
	if i.ID.SRQ() != nil {
		if err := i.ID.DestroySRQ(); err != nil {
			return err
		}
	}
	return i.Destroy(ctx)
}

// AttachMcast implements verbs.MulticastAttacher for the mutant's QPs.
func (q *mQP) AttachMcast(gid verbs.GID, lid uint16) error { return q.mcast(gid, lid, true) }

// DetachMcast implements verbs.MulticastAttacher.
func (q *mQP) DetachMcast(gid verbs.GID, lid uint16) error { return q.mcast(gid, lid, false) }

func (q *mQP) mcast(gid verbs.GID, lid uint16, on bool) error {
	a, ok := q.inner.(verbs.MulticastAttacher)
	if !ok {
		return syscall.EOPNOTSUPP
	}
	if q.h.cm != nil && q.h.cm.attach != nil {
		return q.h.cm.attach(a, gid, lid, on)
	}
	if on {
		return a.AttachMcast(gid, lid)
	}
	return a.DetachMcast(gid, lid)
}

// swallow turns errno e of the verb named into success.
func swallow(verb string, e syscall.Errno) func(string, rdmacm.ID, error) error {
	return func(v string, _ rdmacm.ID, err error) error {
		if v == verb && errors.Is(err, e) {
			return nil
		}
		return err
	}
}
