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

// cmMutant is a mutant of the connection manager.
func cmMutant(name string, rules []string, h cmHooks) mutant {
	return mutant{name: name, rules: rules, h: hooks{cm: &h}}
}

// Mutants of the CM and MCAST families.
func init() {
	mutants = append(mutants,
		cmMutant("rdma_create_id makes every ID RC", []string{"CM-01"}, cmHooks{
			createID: func(cm rdmacm.CM, ch rdmacm.EventChannel, ctx any, ps rdmacm.PortSpace) (rdmacm.ID, error) {
				return cm.CreateID(ch, ctx, rdmacm.PSTCP)
			}}),
		cmMutant("a non-blocking read of an idle channel blocks", []string{"CM-02"}, cmHooks{
			tryGet: func(ch rdmacm.EventChannel) (rdmacm.Event, error) {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
				defer cancel()
				ev, err := ch.GetEvent(ctx)
				if err != nil {
					return nil, syscall.EINTR
				}
				return ev, nil
			}}),
		cmMutant("rdma_destroy_id does not wait for acks", []string{"CM-03"}, cmHooks{
			destroy: func(id rdmacm.ID, ctx context.Context) error {
				err := id.Destroy(ctx)
				if err != nil && errors.Is(err, syscall.EINTR) {
					return nil
				}
				return err
			}}),
		cmMutant("a synchronous connect hides a rejection", []string{"CM-04"}, cmHooks{
			call: swallow("rdma_connect", syscall.ECONNREFUSED)}),
		cmMutant("the route names no source GID", []string{"CM-05"}, cmHooks{
			route: func(id rdmacm.ID) rdmacm.Route {
				r := id.Route()
				r.SGID = verbs.GID{}
				return r
			}}),
		cmMutant("rdma_bind_addr lets two IDs share an address", []string{"CM-06"}, cmHooks{
			call: swallow("rdma_bind_addr", syscall.EADDRINUSE)}),
		cmMutant("a second rdma_listen succeeds", []string{"CM-07"}, cmHooks{
			call: swallow("rdma_listen", syscall.EINVAL)}),
		cmMutant("the backlog is ignored", []string{"CM-08"}, cmHooks{
			listen: func(id rdmacm.ID, backlog int) error { return id.Listen(0) }}),
		cmMutant("an address nobody has resolves", []string{"CM-09"}, cmHooks{
			event: func(e *mEvent) bool {
				if e.typ == rdmacm.EventAddrError {
					e.typ, e.status = rdmacm.EventAddrResolved, 0
				}
				return false
			}}),
		cmMutant("rdma_resolve_route before rdma_resolve_addr succeeds", []string{"CM-10"}, cmHooks{
			call: swallow("rdma_resolve_route", syscall.EINVAL)}),
		cmMutant("rdma_getaddrinfo ignores RAI_PASSIVE", []string{"CM-11"}, cmHooks{
			getAddr: func(cm rdmacm.CM, node, service string, hints *rdmacm.AddrInfo) ([]rdmacm.AddrInfo, error) {
				if hints != nil {
					h := *hints
					h.Flags &^= rdmacm.AIPassive
					hints = &h
				}
				return cm.GetAddrInfo(node, service, hints)
			}}),
		cmMutant("rdma_create_qp leaves the QP in RESET", []string{"CM-12"}, cmHooks{
			createQP: func(id rdmacm.ID, pd verbs.PD, attr *verbs.QPInitAttr) error {
				if err := id.CreateQP(pd, attr); err != nil {
					return err
				}
				return id.QP().Modify(&verbs.QPAttr{QPState: verbs.QPStateReset}, verbs.QPAttrState)
			}}),
		cmMutant("rdma_connect cuts private data to 56 bytes", []string{"CM-13"}, cmHooks{
			connect: func(id rdmacm.ID, p *rdmacm.ConnParam) error {
				if p != nil && len(p.PrivateData) > 56 {
					q := *p
					q.PrivateData = q.PrivateData[:56]
					p = &q
				}
				return id.Connect(p)
			}}),
		cmMutant("CONNECT_REQUEST reports the requester's depths unturned", []string{"CM-14"}, cmHooks{
			event: func(e *mEvent) bool {
				if e.typ == rdmacm.EventConnectRequest {
					e.conn.ResponderResources, e.conn.InitiatorDepth = e.conn.InitiatorDepth, e.conn.ResponderResources
				}
				return false
			}}),
		cmMutant("a REQ nobody listens for is rejected as consumer-defined", []string{"CM-15"}, cmHooks{
			event: func(e *mEvent) bool {
				if e.typ == rdmacm.EventRejected {
					e.status = int(rdmacm.RejConsumerDefined)
				}
				return false
			}}),
		cmMutant("rdma_accept cuts private data to 196 bytes", []string{"CM-16"}, cmHooks{
			accept: func(id rdmacm.ID, p *rdmacm.ConnParam) error {
				if p != nil && len(p.PrivateData) > 196 {
					q := *p
					q.PrivateData = q.PrivateData[:196]
					p = &q
				}
				return id.Accept(p)
			}}),
		cmMutant("rdma_establish is refused", []string{"CM-17"}, cmHooks{
			call: func(verb string, id rdmacm.ID, err error) error {
				if verb == "rdma_establish" && err == nil {
					return syscall.EINVAL
				}
				return err
			}}),
		cmMutant("rdma_notify on an established ID succeeds", []string{"CM-18"}, cmHooks{
			call: swallow("rdma_notify", syscall.EISCONN)}),
		cmMutant("rdma_reject drops its private data", []string{"CM-19"}, cmHooks{
			reject: func(id rdmacm.ID, data []byte) error {
				if len(data) > 148 {
					return id.Reject(data)
				}
				return id.Reject(nil)
			}}),
		cmMutant("an unanswered REQ reports status 0", []string{"CM-20"}, cmHooks{
			event: func(e *mEvent) bool {
				if e.typ == rdmacm.EventUnreachable {
					e.status = 0
				}
				return false
			}}),
		cmMutant("TIMEWAIT_EXIT is never reported", []string{"CM-21"}, cmHooks{
			event: func(e *mEvent) bool { return e.typ == rdmacm.EventTimewaitExit }}),
		cmMutant("rdma_destroy_id destroys the QP itself", []string{"CM-22"}, cmHooks{
			destroy: func(id rdmacm.ID, ctx context.Context) error {
				if id.QP() != nil {
					_ = id.DestroyQP()
				}
				return id.Destroy(ctx)
			}}),
		cmMutant("a DREQ nobody answers reports status 0", []string{"CM-23"}, cmHooks{
			event: func(e *mEvent) bool {
				if e.typ == rdmacm.EventDisconnected {
					e.status = 0
				}
				return false
			}}),
		cmMutant("DEVICE_REMOVAL is never reported", []string{"CM-24"}, cmHooks{
			event: func(e *mEvent) bool { return e.typ == rdmacm.EventDeviceRemoval }}),
		cmMutant("a UD answer reports the wrong Q_Key", []string{"CM-25"}, cmHooks{
			event: func(e *mEvent) bool {
				if e.typ == rdmacm.EventEstablished && e.ud.QPNum != 0 {
					e.ud.QKey++
				}
				return false
			}}),
		cmMutant("MULTICAST_JOIN loses the join's context", []string{"CM-26"}, cmHooks{
			event: func(e *mEvent) bool {
				if e.typ == rdmacm.EventMulticastJoin {
					e.mcCtx = nil
				}
				return false
			}}),
		cmMutant("rdma_migrate_id moves nothing", []string{"CM-27"}, cmHooks{
			migrate: func(id rdmacm.ID, ch rdmacm.EventChannel) error { return nil }}),
		cmMutant("rdma_set_option ignores the option's size", []string{"CM-28"}, cmHooks{
			setOption: func(id rdmacm.ID, level rdmacm.OptionLevel, name rdmacm.OptionName, v []byte) error {
				if len(v) == 1 && name == rdmacm.OptionReuseAddr {
					return nil
				}
				return id.SetOption(level, name, v)
			}}),
		cmMutant("rdma_init_qp_attr names no attribute", []string{"CM-29"}, cmHooks{
			initQPAttr: func(id rdmacm.ID, st verbs.QPState) (verbs.QPAttr, verbs.QPAttrMask, error) {
				a, _, err := id.InitQPAttr(st)
				return a, verbs.QPAttrState, err
			}}),
		cmMutant("a passive rdma_create_ep forgets the QP attributes", []string{"CM-30"}, cmHooks{
			createEP: func(cm rdmacm.CM, res *rdmacm.AddrInfo, pd verbs.PD, attr *verbs.QPInitAttr) (rdmacm.ID, error) {
				if res != nil && res.Flags&rdmacm.AIPassive != 0 {
					attr = nil
				}
				return cm.CreateEP(res, pd, attr)
			}}),
		cmMutant("DISCONNECTED is reported as REJECTED", []string{"CM-32"}, cmHooks{
			event: func(e *mEvent) bool {
				if e.typ == rdmacm.EventDisconnected && e.status == 0 {
					e.typ = rdmacm.EventRejected
				}
				return false
			}}),
		cmMutant("events report only the sender's private data", []string{"CM-33"}, cmHooks{
			event: func(e *mEvent) bool {
				e.conn.PrivateData = trimZeros(e.conn.PrivateData)
				e.ud.PrivateData = trimZeros(e.ud.PrivateData)
				return false
			}}),
		cmMutant("rdma_accept ignores the RNR retry count", []string{"CM-34"}, cmHooks{
			accept: func(id rdmacm.ID, p *rdmacm.ConnParam) error {
				if p != nil {
					q := *p
					q.RNRRetryCount = 7
					p = &q
				}
				return id.Accept(p)
			}}),
		cmMutant("ibv_attach_mcast takes any GID", []string{"MCAST-01"}, cmHooks{
			attach: func(a verbs.MulticastAttacher, gid verbs.GID, lid uint16, on bool) error {
				gid[0] = 0xff
				if on {
					return a.AttachMcast(gid, 0xc001)
				}
				return a.DetachMcast(gid, 0xc001)
			}}),
		cmMutant("ibv_detach_mcast of a QP not attached succeeds", []string{"MCAST-02"}, cmHooks{
			attach: func(a verbs.MulticastAttacher, gid verbs.GID, lid uint16, on bool) error {
				if on {
					return a.AttachMcast(gid, lid)
				}
				_ = a.DetachMcast(gid, lid)
				return nil
			}}),
		cmMutant("ibv_detach_mcast detaches nothing", []string{"MCAST-03"}, cmHooks{
			attach: func(a verbs.MulticastAttacher, gid verbs.GID, lid uint16, on bool) error {
				if on {
					return a.AttachMcast(gid, lid)
				}
				return nil
			}}),
	)
}

func trimZeros(b []byte) []byte {
	n := len(b)
	for n > 0 && b[n-1] == 0 {
		n--
	}
	return b[:n]
}
