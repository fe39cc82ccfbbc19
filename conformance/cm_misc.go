package conformance

import (
	"context"
	"net/netip"
	"syscall"
	"time"

	"github.com/verbsim/verbsim/rdmacm"
	"github.com/verbsim/verbsim/verbs"
)

// Cases of the CM family, last part: migration, options, QP attributes,
// the synchronous helpers, event strings, lossy wires, the private data of
// events and the QPs a connection leaves (CM-27 to CM-34).

// cmMiscCases are the cases of cm_misc.go.
var cmMiscCases = []Case{
	{"CM-27", "rdma_migrate_id moves unread events", cmMigrate},
	{"CM-28", "rdma_set_option", cmSetOption},
	{"CM-29", "rdma_init_qp_attr", cmInitQPAttr},
	{"CM-30", "rdma_create_ep, rdma_get_request, rdma_destroy_ep", cmEP},
	{"CM-31", "rdma_event_str", cmEventStr},
	{"CM-32", "connections form once over a wire that duplicates", cmDuplicates},
	{"CM-33", "the private data of events is the message's field", cmPrivateSizes},
	{"CM-34", "the QPs of a connection", cmConnectedQPs},
}

func cmMigrate(t *tester, e *env) {
	c := cmEnvOf(t, e)
	if c == nil {
		return
	}
	a, b := c.channel(), c.channel()
	id := c.id(a, rdmacm.PSTCP)
	c.WantOK("rdma_resolve_addr", id.ResolveAddr(netip.AddrPort{}, c.dst(), time.Second))
	c.WantOK("rdma_migrate_id", id.Migrate(b))
	c.noEvent("the old channel", a)
	ev := c.ack("the new channel", b, rdmacm.EventAddrResolved)
	if ev.ID() != id || id.Channel() != b {
		t.Errorf("after rdma_migrate_id: event of %v, channel ok %v", ev.ID(), id.Channel() == b)
	}
	c.WantOK("rdma_migrate_id to NULL", id.Migrate(nil))
	if id.Channel() != nil {
		t.Errorf("rdma_migrate_id to NULL left the ID on a channel")
	}
	c.WantOK("a synchronous rdma_resolve_route", id.ResolveRoute(time.Second))
}

func cmSetOption(t *tester, e *env) {
	c := cmEnvOf(t, e)
	if c == nil {
		return
	}
	ch := c.channel()
	id := c.id(ch, rdmacm.PSTCP)
	set := func(what string, level rdmacm.OptionLevel, name rdmacm.OptionName, v []byte, want syscall.Errno) {
		t.Helper()
		err := id.SetOption(level, name, v)
		if want == 0 {
			c.WantOK(what, err)
			return
		}
		c.WantErrno(what, err, want)
	}
	set("REUSEADDR with 1 byte", rdmacm.OptionLevelID, rdmacm.OptionReuseAddr, []byte{1}, syscall.EINVAL)
	set("TOS with 4 bytes", rdmacm.OptionLevelID, rdmacm.OptionTOS, make([]byte, 4), syscall.EINVAL)
	set("level 7", 7, rdmacm.OptionTOS, []byte{0}, syscall.ENOSYS)
	set("RDMA_OPTION_ID option 9", rdmacm.OptionLevelID, 9, []byte{0}, syscall.ENOSYS)
	set("TOS", rdmacm.OptionLevelID, rdmacm.OptionTOS, []byte{32}, 0)
	set("AFONLY", rdmacm.OptionLevelID, rdmacm.OptionAFOnly, []byte{1, 0, 0, 0}, 0)
	set("REUSEADDR on", rdmacm.OptionLevelID, rdmacm.OptionReuseAddr, []byte{1, 0, 0, 0}, 0)
	set("ACK_TIMEOUT 14", rdmacm.OptionLevelID, rdmacm.OptionAckTimeout, []byte{14}, 0)
	c.resolve(ch, id, c.dst())
	set("REUSEADDR off on a resolved ID", rdmacm.OptionLevelID, rdmacm.OptionReuseAddr, []byte{0, 0, 0, 0}, syscall.EINVAL)
	set("AFONLY on a resolved ID", rdmacm.OptionLevelID, rdmacm.OptionAFOnly, []byte{0, 0, 0, 0}, syscall.EINVAL)

	// The ACK timeout reaches the QP of the connection.
	sch := c.channel()
	_, at := c.listen(sch, rdmacm.PSTCP)
	cl := c.id(ch, rdmacm.PSTCP)
	c.WantOK("ACK_TIMEOUT 14", cl.SetOption(rdmacm.OptionLevelID, rdmacm.OptionAckTimeout, []byte{14}))
	c.resolve(ch, cl, at)
	q := c.qp(cl)
	c.WantOK("rdma_connect", cl.Connect(nil))
	req := c.ack("the request", sch, rdmacm.EventConnectRequest)
	c.track(req.ID())
	c.qp(req.ID())
	c.WantOK("rdma_accept", req.ID().Accept(nil))
	c.ack("the connection", ch, rdmacm.EventEstablished)
	if a := c.qpAttr("the client's QP", q); a.Timeout != 14 {
		t.Errorf("the QP's ACK timeout is %d, want the option's 14", a.Timeout)
	}
}

func cmInitQPAttr(t *tester, e *env) {
	c := cmEnvOf(t, e)
	if c == nil {
		return
	}
	sch, cch := c.channel(), c.channel()
	unbound := c.id(cch, rdmacm.PSTCP)
	if _, _, err := unbound.InitQPAttr(verbs.QPStateInit); err == nil {
		t.Errorf("rdma_init_qp_attr on an unbound ID succeeded, want EINVAL")
	}
	_, at := c.listen(sch, rdmacm.PSTCP)
	cl := c.id(cch, rdmacm.PSTCP)
	c.resolve(cch, cl, at)
	initMask := verbs.QPAttrState | verbs.QPAttrPKeyIndex | verbs.QPAttrPort | verbs.QPAttrAccessFlags
	a, m, err := cl.InitQPAttr(verbs.QPStateRTR)
	c.WantOK("rdma_init_qp_attr before a connection", err)
	if m != initMask || a.QPState != verbs.QPStateRTR || a.PortNum != 1 {
		t.Errorf("rdma_init_qp_attr(RTR) without a connection: mask %v state %v port %d; want INIT's mask %v, the state asked, port 1", m, a.QPState, a.PortNum, initMask)
	}
	q := c.qp(cl)
	c.WantOK("rdma_connect", cl.Connect(&rdmacm.ConnParam{ResponderResources: 2, InitiatorDepth: 2}))
	req := c.ack("the request", sch, rdmacm.EventConnectRequest)
	srv := req.ID()
	c.track(srv)
	a, m, err = srv.InitQPAttr(verbs.QPStateRTR)
	c.WantOK("the server's rdma_init_qp_attr(RTR)", err)
	if m&(verbs.QPAttrDestQPN|verbs.QPAttrRQPSN|verbs.QPAttrAV|verbs.QPAttrPathMTU) == 0 || a.DestQPNum != q.Num() {
		t.Errorf("the server's RTR attributes: mask %v dest_qp_num %#x; want the path and the client's QP %#x", m, a.DestQPNum, q.Num())
	}
	a, _, err = srv.InitQPAttr(verbs.QPStateInit)
	c.WantOK("the server's rdma_init_qp_attr(INIT)", err)
	if a.QPAccessFlags&verbs.AccessRemoteWrite == 0 || a.QPAccessFlags&verbs.AccessRemoteRead == 0 {
		t.Errorf("INIT access flags with responder resources: %v, want REMOTE_WRITE and REMOTE_READ", a.QPAccessFlags)
	}
	_, _, err = cl.InitQPAttr(verbs.QPStateRTR)
	c.WantErrno("the client's rdma_init_qp_attr(RTR) before the reply", err, syscall.EINVAL)
}

func cmEP(t *tester, e *env) {
	c := cmEnvOf(t, e)
	if c == nil {
		return
	}
	at := c.dst()
	pas, err := c.cm.GetAddrInfo(at.Addr().String(), "", &rdmacm.AddrInfo{Flags: rdmacm.AIPassive})
	c.WantOK("passive rdma_getaddrinfo", err)
	pas[0].Src = at
	attr := cmQPAttr(verbs.QPTypeRC)
	l, err := c.cm.CreateEP(&pas[0], nil, &attr)
	c.WantOK("passive rdma_create_ep", err)
	c.track(l)
	c.WantOK("rdma_listen", l.Listen(2))
	act, err := c.cm.GetAddrInfo(at.Addr().String(), "", nil)
	c.WantOK("rdma_getaddrinfo", err)
	act[0].Dst = at
	cattr := cmQPAttr(verbs.QPTypeRC)
	cl, err := c.cm.CreateEP(&act[0], nil, &cattr)
	c.WantOK("active rdma_create_ep", err)
	c.track(cl)
	if cl.QP() == nil || cl.Channel() != nil || cl.Route().NumPaths != 1 {
		t.Fatalf("an active rdma_create_ep: QP %v, channel %v, route %+v; want a QP, no channel, a route", cl.QP(), cl.Channel(), cl.Route())
	}
	// The client goes asynchronous for the handshake, so that one
	// goroutine drives both sides (a synchronous connect and a
	// synchronous accept would each wait for the other).
	cch, sch := c.channel(), c.channel()
	c.WantOK("rdma_migrate_id of the active endpoint", cl.Migrate(cch))
	c.WantOK("rdma_connect", cl.Connect(nil))
	ctx, cancel := patient()
	srv, err := l.GetRequest(ctx)
	cancel()
	c.WantOK("rdma_get_request", err)
	c.track(srv)
	if srv.QP() == nil || srv.Event() == nil || srv.Event().Type() != rdmacm.EventConnectRequest {
		t.Fatalf("rdma_get_request: QP %v, event %v; want the QP of the kept attributes and the request", srv.QP(), srv.Event())
	}
	c.WantOK("rdma_migrate_id of the request's ID", srv.Migrate(sch))
	c.WantOK("rdma_accept", srv.Accept(nil))
	c.ack("the client", cch, rdmacm.EventEstablished)
	c.ack("the server", sch, rdmacm.EventEstablished)
	ctx, cancel = patient()
	defer cancel()
	c.WantOK("rdma_destroy_ep", cl.DestroyEP(ctx))
	if cl.QP() != nil {
		t.Errorf("rdma_destroy_ep left the QP")
	}
	c.WantErrno("a call on the destroyed endpoint", cl.Disconnect(), syscall.ENOENT)

	srq := c.id(c.channel(), rdmacm.PSTCP)
	c.WantOK("rdma_bind_addr", srq.BindAddr(c.dst()))
	sattr := verbs.SRQInitAttr{Attr: verbs.SRQAttr{MaxWR: 8, MaxSGE: 1}}
	c.WantOK("rdma_create_srq", srq.CreateSRQ(nil, &sattr))
	c.WantErrno("a second rdma_create_srq", srq.CreateSRQ(nil, &sattr), syscall.EINVAL)
	qattr := cmQPAttr(verbs.QPTypeRC)
	c.WantOK("rdma_create_qp on an ID with an SRQ", srq.CreateQP(nil, &qattr))
	if qattr.SRQ == nil || qattr.SRQ != srq.SRQ() {
		t.Errorf("rdma_create_qp on an ID with an SRQ made a QP without it")
	}
}

func cmEventStr(t *tester, e *env) {
	names := []string{"RDMA_CM_EVENT_ADDR_RESOLVED", "RDMA_CM_EVENT_ADDR_ERROR", "RDMA_CM_EVENT_ROUTE_RESOLVED",
		"RDMA_CM_EVENT_ROUTE_ERROR", "RDMA_CM_EVENT_CONNECT_REQUEST", "RDMA_CM_EVENT_CONNECT_RESPONSE",
		"RDMA_CM_EVENT_CONNECT_ERROR", "RDMA_CM_EVENT_UNREACHABLE", "RDMA_CM_EVENT_REJECTED",
		"RDMA_CM_EVENT_ESTABLISHED", "RDMA_CM_EVENT_DISCONNECTED", "RDMA_CM_EVENT_DEVICE_REMOVAL",
		"RDMA_CM_EVENT_MULTICAST_JOIN", "RDMA_CM_EVENT_MULTICAST_ERROR", "RDMA_CM_EVENT_ADDR_CHANGE",
		"RDMA_CM_EVENT_TIMEWAIT_EXIT"}
	for i, n := range names {
		if got := rdmacm.EventType(i).Str(); got != n {
			t.Errorf("rdma_event_str(%d) = %q, want %q", i, got, n)
		}
	}
	for _, v := range []rdmacm.EventType{16, 255, 1 << 31} {
		if got := v.Str(); got != "UNKNOWN EVENT" {
			t.Errorf("rdma_event_str(%d) = %q, want \"UNKNOWN EVENT\"", v, got)
		}
	}
}

func cmDuplicates(t *tester, e *env) {
	c := cmEnvOf(t, e)
	if c == nil {
		return
	}
	f, ok := e.Dev.(Faults)
	if !ok {
		t.Logf("the device has no packet faults (conformance.Faults); nothing to check")
		return
	}
	c.WantOK("every packet duplicated", f.SetFaults(0, 1, 0))
	defer f.SetFaults(0, 0, 0)
	p := c.connect(nil, nil)
	c.noEvent("the server after one connection", p.sch)
	c.noEvent("the client after one connection", p.cch)
	c.WantOK("rdma_disconnect", p.client.Disconnect())
	c.ack("the server", p.sch, rdmacm.EventDisconnected)
	c.WantOK("rdma_disconnect", p.server.Disconnect())
	c.ack("the client", p.cch, rdmacm.EventDisconnected)
	c.ack("the client's timewait", p.cch, rdmacm.EventTimewaitExit)
	c.ack("the server's timewait", p.sch, rdmacm.EventTimewaitExit)
	c.noEvent("the server after the disconnection", p.sch)
	c.noEvent("the client after the disconnection", p.cch)
}

func cmPrivateSizes(t *tester, e *env) {
	c := cmEnvOf(t, e)
	if c == nil {
		return
	}
	p := c.connect(&rdmacm.ConnParam{PrivateData: []byte{1}}, &rdmacm.ConnParam{PrivateData: []byte{2}})
	if n := len(p.req.Conn().PrivateData); n != 56 {
		t.Errorf("CONNECT_REQUEST has %d bytes of private data, want 56", n)
	}
	if n := len(p.clientEstablish.Conn().PrivateData); n != 196 {
		t.Errorf("the client's ESTABLISHED has %d bytes of private data, want 196", n)
	}
	c.WantOK("rdma_disconnect", p.client.Disconnect())
	if ev := c.ack("DISCONNECTED", p.sch, rdmacm.EventDisconnected); len(ev.Conn().PrivateData) != 0 {
		t.Errorf("DISCONNECTED has %d bytes of private data, want none", len(ev.Conn().PrivateData))
	}
	ch := c.channel()
	id := c.id(ch, rdmacm.PSTCP)
	c.WantOK("rdma_resolve_addr", id.ResolveAddr(netip.AddrPort{}, c.dst(), time.Second))
	if ev := c.ack("ADDR_RESOLVED", ch, rdmacm.EventAddrResolved); len(ev.Conn().PrivateData) != 0 || len(ev.UD().PrivateData) != 0 {
		t.Errorf("ADDR_RESOLVED has private data")
	}
}

func cmConnectedQPs(t *tester, e *env) {
	c := cmEnvOf(t, e)
	if c == nil {
		return
	}
	p := c.connect(&rdmacm.ConnParam{InitiatorDepth: 2, ResponderResources: 1, RetryCount: 5, RNRRetryCount: 4},
		&rdmacm.ConnParam{RNRRetryCount: 3, InitiatorDepth: rdmacm.MaxInitDepth, ResponderResources: rdmacm.MaxRespRes})
	a, b := c.qpAttr("the client's QP", p.clientQP), c.qpAttr("the server's QP", p.srvQP)
	switch {
	case a.QPState != verbs.QPStateRTS || b.QPState != verbs.QPStateRTS:
		t.Errorf("states %v and %v, want RTS and RTS", a.QPState, b.QPState)
	case a.DestQPNum != p.srvQP.Num() || b.DestQPNum != p.clientQP.Num():
		t.Errorf("dest_qp_num %#x and %#x, want each other's %#x and %#x", a.DestQPNum, b.DestQPNum, p.srvQP.Num(), p.clientQP.Num())
	case a.SQPSN != b.RQPSN || b.SQPSN != a.RQPSN:
		t.Errorf("PSNs: client sq %#x rq %#x, server sq %#x rq %#x; each side's sq_psn must be the other's rq_psn", a.SQPSN, a.RQPSN, b.SQPSN, b.RQPSN)
	case a.RetryCnt != 5 || b.RetryCnt != 5:
		t.Errorf("retry_cnt %d and %d, want the request's 5 on both", a.RetryCnt, b.RetryCnt)
	case a.RNRRetry != 3 || b.RNRRetry != 4:
		t.Errorf("rnr_retry %d and %d, want the peer's: 3 (the server's) and 4 (the client's)", a.RNRRetry, b.RNRRetry)
	case a.MaxRDAtomic != 2 || b.MaxDestRDAtomic != 2 || a.MaxDestRDAtomic != 1 || b.MaxRDAtomic != 1:
		t.Errorf("depths: client rd %d dest %d, server rd %d dest %d; want 2/1 and 1/2", a.MaxRDAtomic, a.MaxDestRDAtomic, b.MaxRDAtomic, b.MaxDestRDAtomic)
	case a.Timeout != 19 || b.Timeout != 19 || a.MinRNRTimer != 0:
		t.Errorf("timeouts %d and %d, min_rnr_timer %d; want 19, 19, 0", a.Timeout, b.Timeout, a.MinRNRTimer)
	case a.QPAccessFlags&verbs.AccessRemoteWrite == 0 || a.QPAccessFlags&verbs.AccessRemoteRead == 0:
		t.Errorf("access flags %v, want REMOTE_WRITE and REMOTE_READ", a.QPAccessFlags)
	}
	c.sendRecv("a SEND over the connection", p.server, p.client, []byte("back"), nil)
	_ = context.Background
}
