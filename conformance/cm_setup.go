package conformance

import (
	"context"
	"errors"
	"net/netip"
	"syscall"
	"time"

	"github.com/verbsim/verbsim/rdmacm"
	"github.com/verbsim/verbsim/verbs"
)

// Cases of the CM family, first part: IDs, channels, events and their
// acknowledgement, synchronous IDs, addressing, binding, listening,
// resolution, rdma_getaddrinfo and rdma_create_qp (CM-01 to CM-12).

// cmSetupCases are the cases of cm_setup.go.
var cmSetupCases = []Case{
	{"CM-01", "port spaces, QP types and dead IDs", cmPortSpaces},
	{"CM-02", "the event channel", cmChannel},
	{"CM-03", "acknowledgements hold rdma_destroy_id", cmAcks},
	{"CM-04", "synchronous IDs", cmSync},
	{"CM-05", "ports have IP addresses", cmAddresses},
	{"CM-06", "rdma_bind_addr", cmBind},
	{"CM-07", "rdma_listen", cmListen},
	{"CM-09", "rdma_resolve_addr", cmResolveAddr},
	{"CM-10", "rdma_resolve_route", cmResolveRoute},
	{"CM-11", "rdma_getaddrinfo", cmGetAddrInfo},
	{"CM-12", "rdma_create_qp", cmCreateQP},
}

func cmPortSpaces(t *tester, e *env) {
	c := cmEnvOf(t, e)
	if c == nil {
		return
	}
	ch := c.channel()
	for ps, want := range map[rdmacm.PortSpace]verbs.QPType{rdmacm.PSTCP: verbs.QPTypeRC, rdmacm.PSIB: verbs.QPTypeRC, rdmacm.PSUDP: verbs.QPTypeUD} {
		id, err := c.cm.CreateID(ch, "ctx", ps)
		c.WantOK("rdma_create_id", err)
		c.track(id)
		if id.QPType() != want || id.PortSpace() != ps || id.Context() != "ctx" || id.Verbs() != nil || id.Channel() != ch {
			t.Errorf("rdma_create_id(%v): qp_type %v, ps %v, context %v, verbs %v, channel ok %v", ps, id.QPType(), id.PortSpace(), id.Context(), id.Verbs(), id.Channel() == ch)
		}
	}
	_, err := c.cm.CreateID(ch, nil, 0x0107)
	c.WantErrno("rdma_create_id with port space 0x0107", err, syscall.EINVAL)
	_, err = c.cm.CreateID(ch, nil, rdmacm.PSIPoIB)
	c.WantErrno("rdma_create_id with RDMA_PS_IPOIB", err, syscall.EPROTONOSUPPORT)
	id := c.id(ch, rdmacm.PSTCP)
	c.WantOK("rdma_destroy_id", id.Destroy(context.Background()))
	c.WantErrno("rdma_bind_addr on a destroyed ID", id.BindAddr(c.dst()), syscall.ENOENT)
	c.WantErrno("rdma_listen on a destroyed ID", id.Listen(1), syscall.ENOENT)
	c.WantErrno("rdma_connect on a destroyed ID", id.Connect(nil), syscall.ENOENT)
}

func cmChannel(t *tester, e *env) {
	c := cmEnvOf(t, e)
	if c == nil {
		return
	}
	ch := c.channel()
	c.noEvent("a new channel", ch)
	a, b := c.id(ch, rdmacm.PSTCP), c.id(ch, rdmacm.PSTCP)
	got := make(chan rdmacm.Event, 1)
	go func() {
		ctx, cancel := patient()
		defer cancel()
		ev, _ := ch.GetEvent(ctx)
		got <- ev
	}()
	c.WantOK("rdma_resolve_addr", a.ResolveAddr(netip.AddrPort{}, c.dst(), time.Second))
	ev := <-got
	if ev == nil || ev.Type() != rdmacm.EventAddrResolved || ev.ID() != a {
		t.Fatalf("the blocked rdma_get_cm_event returned %v, want ADDR_RESOLVED of the ID", ev)
	}
	c.WantOK("rdma_ack_cm_event", ev.Ack())
	c.WantOK("rdma_resolve_addr", b.ResolveAddr(netip.AddrPort{}, c.dst(), time.Second))
	c.WantOK("rdma_resolve_addr", a.ResolveRoute(time.Second))
	if ev := c.ack("first of two events", ch, rdmacm.EventAddrResolved); ev.ID() != b {
		t.Errorf("the first event named another ID: events are not first in, first out")
	}
	if ev := c.ack("second of two events", ch, rdmacm.EventRouteResolved); ev.ID() != a {
		t.Errorf("the second event named another ID")
	}
	c.WantErrno("rdma_destroy_event_channel with IDs on it", ch.Destroy(), syscall.EBUSY)
	for _, id := range []rdmacm.ID{a, b} {
		ctx, cancel := patient()
		c.WantOK("rdma_destroy_id", id.Destroy(ctx))
		cancel()
	}
	c.WantOK("rdma_destroy_event_channel", ch.Destroy())
	c.WantErrno("a second rdma_destroy_event_channel", ch.Destroy(), syscall.EINVAL)
}

func cmAcks(t *tester, e *env) {
	c := cmEnvOf(t, e)
	if c == nil {
		return
	}
	ch := c.channel()
	id := c.id(ch, rdmacm.PSTCP)
	c.WantOK("rdma_resolve_addr", id.ResolveAddr(netip.AddrPort{}, c.dst(), time.Second))
	ev := c.event("ADDR_RESOLVED", ch, rdmacm.EventAddrResolved)
	c.destroyWaits("an ID with an ADDR_RESOLVED unacknowledged", id, func() { c.WantOK("rdma_ack_cm_event", ev.Ack()) })
	c.WantErrno("a second rdma_ack_cm_event", ev.Ack(), syscall.EINVAL)

	// A CONNECT_REQUEST is the listener's event: the new ID can go, the
	// listener waits.
	l, at := c.listen(ch, rdmacm.PSTCP)
	cl := c.id(c.channel(), rdmacm.PSTCP)
	cch := cl.Channel()
	c.resolve(cch, cl, at)
	c.qp(cl)
	c.WantOK("rdma_connect", cl.Connect(nil))
	req := c.event("the connection request", ch, rdmacm.EventConnectRequest)
	conn := req.ID()
	ctx, cancel := patient()
	c.WantOK("rdma_destroy_id of the request's new ID", conn.Destroy(ctx))
	cancel()
	c.destroyWaits("a listener with its CONNECT_REQUEST unacknowledged", l, func() { c.WantOK("rdma_ack_cm_event", req.Ack()) })
}

func cmSync(t *tester, e *env) {
	c := cmEnvOf(t, e)
	if c == nil {
		return
	}
	id := c.id(nil, rdmacm.PSTCP)
	if id.Channel() != nil {
		t.Errorf("a synchronous ID reports a channel")
	}
	c.WantOK("synchronous rdma_resolve_addr", id.ResolveAddr(netip.AddrPort{}, c.dst(), time.Second))
	if id.Verbs() == nil {
		t.Errorf("a synchronous rdma_resolve_addr returned before the ID was bound to a device")
	}
	c.WantOK("synchronous rdma_resolve_route", id.ResolveRoute(time.Second))
	c.qp(id)
	c.WantErrno("a synchronous rdma_connect to a port nobody listens on", id.Connect(nil), syscall.ECONNREFUSED)
	c.WantErrno("rdma_migrate_id of a synchronous ID to NULL", id.Migrate(nil), syscall.EINVAL)
	l := c.id(c.channel(), rdmacm.PSTCP)
	c.WantOK("rdma_listen", l.Listen(1))
	ctx, cancel := graceful()
	_, err := l.GetRequest(ctx)
	cancel()
	c.WantErrno("rdma_get_request on a listener with a channel", err, syscall.EINVAL)
}

func cmAddresses(t *tester, e *env) {
	c := cmEnvOf(t, e)
	if c == nil {
		return
	}
	ch := c.channel()
	id := c.id(ch, rdmacm.PSTCP)
	c.resolve(ch, id, c.dst())
	if id.Verbs() == nil || id.PortNum() != 1 {
		t.Fatalf("resolving the device's address bound the ID to %v port %d, want the device's port 1", id.Verbs(), id.PortNum())
	}
	attr, err := id.Verbs().QueryPort(1)
	c.WantOK("ibv_query_port", err)
	r := id.Route()
	if attr.LinkLayer == verbs.LinkLayerEthernet {
		g, err := id.Verbs().QueryGID(1, 1)
		c.WantOK("ibv_query_gid(1, 1)", err)
		if want := verbs.GID(c.addr.As16()); g != want || r.SGID != want {
			t.Errorf("a RoCE port's GID 1 is %v and the route's SGID %v, want the IPv4-mapped %v (CM-05)", g, r.SGID, want)
		}
		return
	}
	g, err := id.Verbs().QueryGID(1, 0)
	c.WantOK("ibv_query_gid(1, 0)", err)
	if r.SGID != g || r.DGID != g || r.DLID != attr.LID {
		t.Errorf("an InfiniBand port's address resolves to SGID %v DGID %v DLID %#x, want its GID %v and LID %#x", r.SGID, r.DGID, r.DLID, g, attr.LID)
	}
}

func cmBind(t *tester, e *env) {
	c := cmEnvOf(t, e)
	if c == nil {
		return
	}
	ch := c.channel()
	at := c.dst()
	a, b := c.id(ch, rdmacm.PSTCP), c.id(ch, rdmacm.PSTCP)
	c.WantOK("rdma_bind_addr", a.BindAddr(at))
	if a.Verbs() == nil || a.LocalAddr() != at {
		t.Errorf("binding to the device's address: verbs %v, local address %v", a.Verbs(), a.LocalAddr())
	}
	c.WantErrno("binding a second ID to the same address and port", b.BindAddr(at), syscall.EADDRINUSE)
	c.WantErrno("binding the wildcard to a port in use", b.BindAddr(netip.AddrPortFrom(netip.IPv4Unspecified(), at.Port())), syscall.EADDRNOTAVAIL)
	c.WantErrno("rdma_bind_addr on a bound ID", a.BindAddr(c.dst()), syscall.EINVAL)
	c.WantErrno("rdma_bind_addr to an address no port has", b.BindAddr(netip.MustParseAddrPort("10.254.254.254:1")), syscall.EADDRNOTAVAIL)
	c.WantErrno("rdma_bind_addr with no address", b.BindAddr(netip.AddrPort{}), syscall.EINVAL)
	u := c.id(ch, rdmacm.PSUDP)
	c.WantOK("the same port in another port space", u.BindAddr(at))
	c.WantOK("rdma_bind_addr to port 0", b.BindAddr(netip.AddrPortFrom(c.addr, 0)))
	if p := b.LocalAddr().Port(); p < 32768 || p > 60999 {
		t.Errorf("port 0 picked port %d, outside 32768..60999", p)
	}
	one := []byte{1, 0, 0, 0}
	r1, r2 := c.id(ch, rdmacm.PSTCP), c.id(ch, rdmacm.PSTCP)
	c.WantOK("RDMA_OPTION_ID_REUSEADDR", r1.SetOption(rdmacm.OptionLevelID, rdmacm.OptionReuseAddr, one))
	c.WantOK("RDMA_OPTION_ID_REUSEADDR", r2.SetOption(rdmacm.OptionLevelID, rdmacm.OptionReuseAddr, one))
	shared := c.dst()
	c.WantOK("rdma_bind_addr with REUSEADDR", r1.BindAddr(shared))
	c.WantOK("a second rdma_bind_addr with REUSEADDR", r2.BindAddr(shared))
}

func cmListen(t *tester, e *env) {
	c := cmEnvOf(t, e)
	if c == nil {
		return
	}
	ch := c.channel()
	l, _ := c.listen(ch, rdmacm.PSTCP)
	c.WantErrno("a second rdma_listen", l.Listen(8), syscall.EINVAL)
	idle := c.id(ch, rdmacm.PSTCP)
	c.WantOK("rdma_listen on an IDLE ID", idle.Listen(0))
	if a := idle.LocalAddr(); !a.Addr().IsUnspecified() || a.Port() < 32768 {
		t.Errorf("an IDLE ID listened at %v, want the wildcard and a free port", a)
	}
	res := c.id(ch, rdmacm.PSTCP)
	c.resolve(ch, res, c.dst())
	c.WantErrno("rdma_listen on a resolved ID", res.Listen(1), syscall.EINVAL)
}

func cmResolveAddr(t *tester, e *env) {
	c := cmEnvOf(t, e)
	if c == nil {
		return
	}
	ch := c.channel()
	id := c.id(ch, rdmacm.PSTCP)
	c.WantErrno("rdma_resolve_addr with no destination", id.ResolveAddr(netip.AddrPort{}, netip.AddrPort{}, time.Second), syscall.EINVAL)
	c.WantErrno("rdma_resolve_addr from IPv6 to IPv4", id.ResolveAddr(netip.MustParseAddrPort("[::]:0"), c.dst(), time.Second), syscall.EINVAL)
	if id.Verbs() != nil {
		t.Errorf("a refused rdma_resolve_addr bound the ID")
	}
	c.WantOK("rdma_resolve_addr", id.ResolveAddr(netip.AddrPort{}, c.dst(), time.Second))
	c.ack("ADDR_RESOLVED", ch, rdmacm.EventAddrResolved)
	if id.Verbs() == nil {
		t.Errorf("after ADDR_RESOLVED the ID is bound to no device")
	}
	c.WantErrno("a second rdma_resolve_addr", id.ResolveAddr(netip.AddrPort{}, c.dst(), time.Second), syscall.EINVAL)
	lost := c.id(ch, rdmacm.PSTCP)
	var t0 uint64
	n, timed := c.now()
	if timed {
		t0 = n.Now()
	}
	c.WantOK("rdma_resolve_addr of an address nobody has", lost.ResolveAddr(netip.AddrPort{}, netip.MustParseAddrPort("10.254.254.254:1"), 500*time.Millisecond))
	ev := c.ack("an address nobody has", ch, rdmacm.EventAddrError)
	if ev.Status() != errETIMEDOUT {
		t.Errorf("ADDR_ERROR status %d, want -ETIMEDOUT (%d)", ev.Status(), errETIMEDOUT)
	}
	if timed {
		if d := n.Now() - t0; d < uint64(500*time.Millisecond) {
			t.Errorf("ADDR_ERROR came after %v of virtual time, before the 500ms timeout", time.Duration(d))
		}
	}
}

func cmResolveRoute(t *tester, e *env) {
	c := cmEnvOf(t, e)
	if c == nil {
		return
	}
	ch := c.channel()
	id := c.id(ch, rdmacm.PSTCP)
	c.WantErrno("rdma_resolve_route before rdma_resolve_addr", id.ResolveRoute(time.Second), syscall.EINVAL)
	c.resolve(ch, id, c.dst())
	r := id.Route()
	if r.NumPaths != 1 || r.PKey != 0xffff || r.PacketLifeTime != 18 || r.MTU == 0 {
		t.Errorf("route %+v: want one path, P_Key 0xffff, packet lifetime 18 and an MTU", r)
	}
	c.WantErrno("a second rdma_resolve_route", id.ResolveRoute(time.Second), syscall.EINVAL)
}

func cmGetAddrInfo(t *tester, e *env) {
	c := cmEnvOf(t, e)
	if c == nil {
		return
	}
	res, err := c.cm.GetAddrInfo(c.addr.String(), "7471", nil)
	c.WantOK("rdma_getaddrinfo", err)
	if len(res) != 1 || res[0].Dst != netip.AddrPortFrom(c.addr, 7471) || res[0].QPType != verbs.QPTypeRC || res[0].PortSpace != rdmacm.PSTCP || res[0].Family != rdmacm.AFInet {
		t.Errorf("rdma_getaddrinfo(%v, 7471): %+v", c.addr, res)
	}
	res, err = c.cm.GetAddrInfo("", "7471", &rdmacm.AddrInfo{Flags: rdmacm.AIPassive, PortSpace: rdmacm.PSUDP})
	c.WantOK("passive rdma_getaddrinfo", err)
	if len(res) != 1 || res[0].Src.Port() != 7471 || !res[0].Src.Addr().IsUnspecified() || res[0].QPType != verbs.QPTypeUD || res[0].Dst.IsValid() {
		t.Errorf("passive rdma_getaddrinfo: %+v", res)
	}
	var ae *rdmacm.AddrInfoError
	_, err = c.cm.GetAddrInfo("host.example", "1", nil)
	if !errors.As(err, &ae) || ae.Code != rdmacm.EAINoName {
		t.Errorf("rdma_getaddrinfo of a name: %v, want EAI_NONAME", err)
	}
	_, err = c.cm.GetAddrInfo(c.addr.String(), "rdma", nil)
	if !errors.As(err, &ae) || ae.Code != rdmacm.EAIService {
		t.Errorf("rdma_getaddrinfo with service \"rdma\": %v, want EAI_SERVICE", err)
	}
	_, err = c.cm.GetAddrInfo("", "", nil)
	c.WantErrno("rdma_getaddrinfo with nothing", err, syscall.EINVAL)
}

func cmCreateQP(t *tester, e *env) {
	c := cmEnvOf(t, e)
	if c == nil {
		return
	}
	ch := c.channel()
	id := c.id(ch, rdmacm.PSTCP)
	attr := cmQPAttr(verbs.QPTypeRC)
	c.WantErrno("rdma_create_qp on an unbound ID", id.CreateQP(nil, &attr), syscall.EINVAL)
	c.resolve(ch, id, c.dst())
	pd, err := e.Ctx.AllocPD()
	c.WantOK("ibv_alloc_pd", err)
	defer pd.Dealloc()
	c.WantErrno("rdma_create_qp with a PD of another context", id.CreateQP(pd, &attr), syscall.EINVAL)
	q := c.qp(id)
	if a := c.qpAttr("the new RC QP", q); a.QPState != verbs.QPStateInit || a.PortNum != 1 || a.QPAccessFlags != 0 {
		t.Errorf("an RC QP from rdma_create_qp: state %v port %d access %v, want INIT, 1, none", a.QPState, a.PortNum, a.QPAccessFlags)
	}
	if id.SendCQ() == nil || id.RecvCQ() == nil || id.SendCQChannel() == nil || id.PD() == nil {
		t.Errorf("rdma_create_qp without CQs: the ID reports send CQ %v, recv CQ %v, channel %v, PD %v", id.SendCQ(), id.RecvCQ(), id.SendCQChannel(), id.PD())
	}
	again := cmQPAttr(verbs.QPTypeRC)
	c.WantErrno("a second rdma_create_qp", id.CreateQP(nil, &again), syscall.EINVAL)
	u := c.id(ch, rdmacm.PSUDP)
	c.resolve(ch, u, c.dst())
	uq := c.qp(u)
	if a := c.qpAttr("the new UD QP", uq); a.QPState != verbs.QPStateRTS || a.QKey != rdmacm.UDPQKey {
		t.Errorf("a UD QP from rdma_create_qp: state %v Q_Key %#x, want RTS and 0x01234567", a.QPState, a.QKey)
	}
	c.WantErrno("rdma_destroy_id with a QP", id.Destroy(context.Background()), syscall.EBUSY)
	c.WantOK("rdma_destroy_qp", id.DestroyQP())
	if id.QP() != nil || id.SendCQ() != nil {
		t.Errorf("after rdma_destroy_qp the ID still reports its QP or CQs")
	}
}
