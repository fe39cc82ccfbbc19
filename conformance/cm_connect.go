package conformance

import (
	"bytes"
	"context"
	"errors"
	"syscall"
	"time"

	"github.com/verbsim/verbsim/rdmacm"
	"github.com/verbsim/verbsim/verbs"
)

// Cases of the CM family, second part: the handshake of RC connections,
// its failures and its end (CM-08, CM-13 to CM-24).

// cmConnectCases are the cases of cm_connect.go.
var cmConnectCases = []Case{
	{"CM-08", "a full backlog drops requests unanswered", cmBacklog},
	{"CM-13", "rdma_connect and its private data", cmConnect},
	{"CM-14", "the connection request event", cmConnectRequest},
	{"CM-15", "nobody listening: REJECTED 8", cmNoListener},
	{"CM-16", "rdma_accept", cmAccept},
	{"CM-17", "ESTABLISHED, or CONNECT_RESPONSE and rdma_establish", cmEstablish},
	{"CM-18", "the passive side's ESTABLISHED and rdma_notify", cmNotify},
	{"CM-19", "rdma_reject", cmReject},
	{"CM-20", "an unanswered REQ times out in virtual time", cmReqTimeout},
	{"CM-21", "rdma_disconnect, DISCONNECTED and TIMEWAIT_EXIT", cmDisconnect},
	{"CM-22", "rdma_destroy_id cleans the connection up", cmDestroyConn},
	{"CM-23", "a peer that stops answering", cmDeadPeer},
	{"CM-24", "device removal", cmDeviceRemoval},
}

func cmBacklog(t *tester, e *env) {
	c := cmEnvOf(t, e)
	if c == nil {
		return
	}
	sch, cch := c.channel(), c.channel()
	l := c.id(sch, rdmacm.PSTCP)
	at := c.dst()
	c.WantOK("rdma_bind_addr", l.BindAddr(at))
	c.WantOK("rdma_listen with backlog 1", l.Listen(1))
	a, b := c.id(cch, rdmacm.PSTCP), c.id(cch, rdmacm.PSTCP)
	for _, id := range []rdmacm.ID{a, b} {
		c.resolve(cch, id, at)
		c.qp(id)
		c.WantOK("rdma_connect", id.Connect(nil))
	}
	first := c.event("the first request", sch, rdmacm.EventConnectRequest)
	c.noEvent("a second request beyond the backlog", sch)
	c.noEvent("the client of the dropped request (it is not rejected)", cch)
	c.track(first.ID())
	c.WantOK("rdma_reject", first.ID().Reject(nil))
	c.WantOK("rdma_ack_cm_event", first.Ack())
	second := c.ack("the second request, retransmitted once there is room", sch, rdmacm.EventConnectRequest)
	c.track(second.ID())
	c.ack("the first client", cch, rdmacm.EventRejected)
}

func cmConnect(t *tester, e *env) {
	c := cmEnvOf(t, e)
	if c == nil {
		return
	}
	sch, cch := c.channel(), c.channel()
	_, at := c.listen(sch, rdmacm.PSTCP)
	id := c.id(cch, rdmacm.PSTCP)
	c.WantErrno("rdma_connect before the route", id.Connect(nil), syscall.EINVAL)
	c.resolve(cch, id, at)
	c.WantErrno("rdma_connect of an RDMA_PS_TCP ID with no QP and no conn_param", id.Connect(nil), syscall.EINVAL)
	lim := c.Limits()
	c.WantErrno("rdma_connect with responder_resources above the device's", id.Connect(&rdmacm.ConnParam{QPNum: 1, ResponderResources: uint8(min(lim.MaxQPRDAtom+1, 254))}), syscall.EINVAL)
	c.qp(id)
	c.WantErrno("rdma_connect with 57 bytes of private data", id.Connect(&rdmacm.ConnParam{PrivateData: make([]byte, 57)}), syscall.EINVAL)
	c.WantOK("rdma_connect with 56 bytes of private data", id.Connect(&rdmacm.ConnParam{PrivateData: bytes.Repeat([]byte{7}, 56)}))
	req := c.ack("the request", sch, rdmacm.EventConnectRequest)
	c.track(req.ID())
	if !bytes.Equal(req.Conn().PrivateData, bytes.Repeat([]byte{7}, 56)) {
		t.Errorf("the request carried private data %x, want 56 bytes of 7", req.Conn().PrivateData)
	}
	c.WantErrno("a second rdma_connect", id.Connect(nil), syscall.EINVAL)
}

func cmConnectRequest(t *tester, e *env) {
	c := cmEnvOf(t, e)
	if c == nil {
		return
	}
	sch, cch := c.channel(), c.channel()
	l, err := c.cm.CreateID(sch, "listener's context", rdmacm.PSTCP)
	c.WantOK("rdma_create_id", err)
	c.track(l)
	at := c.dst()
	c.WantOK("rdma_bind_addr", l.BindAddr(at))
	c.WantOK("rdma_listen", l.Listen(4))
	id := c.id(cch, rdmacm.PSTCP)
	c.resolve(cch, id, at)
	q := c.qp(id)
	c.WantOK("rdma_connect", id.Connect(&rdmacm.ConnParam{PrivateData: []byte("req"), InitiatorDepth: 3, ResponderResources: 2, RetryCount: 5, RNRRetryCount: 4}))
	req := c.ack("the request", sch, rdmacm.EventConnectRequest)
	conn := req.ID()
	c.track(conn)
	p := req.Conn()
	switch {
	case req.ListenID() != l || conn == nil || conn == l:
		t.Errorf("CONNECT_REQUEST: listen_id %v, id %v; want the listener and a new ID", req.ListenID(), conn)
	case conn.Context() != "listener's context":
		t.Errorf("the new ID's context is %v, want the listener's", conn.Context())
	case conn.Verbs() == nil || conn.PortNum() != 1:
		t.Errorf("the new ID is bound to %v port %d, want the device's port 1", conn.Verbs(), conn.PortNum())
	case p.ResponderResources != 3 || p.InitiatorDepth != 2:
		t.Errorf("the request's depths: responder_resources %d initiator_depth %d, want the client's turned round: 3 and 2", p.ResponderResources, p.InitiatorDepth)
	case p.RetryCount != 5 || p.RNRRetryCount != 4 || p.QPNum != q.Num():
		t.Errorf("the request: retry %d rnr %d qp_num %#x, want 5, 4, %#x", p.RetryCount, p.RNRRetryCount, p.QPNum, q.Num())
	case !zeroPadded(p.PrivateData, []byte("req"), 56):
		t.Errorf("the request's private data %q, want \"req\" and zeros to 56 bytes (CM-33)", p.PrivateData)
	case conn.PeerAddr().Port() != id.LocalAddr().Port() || conn.LocalAddr() != at:
		t.Errorf("the new ID: local %v peer %v; want %v and the client's port %d", conn.LocalAddr(), conn.PeerAddr(), at, id.LocalAddr().Port())
	}
}

func cmNoListener(t *tester, e *env) {
	c := cmEnvOf(t, e)
	if c == nil {
		return
	}
	cch := c.channel()
	id := c.id(cch, rdmacm.PSTCP)
	c.resolve(cch, id, c.dst())
	q := c.qp(id)
	c.WantOK("rdma_connect", id.Connect(nil))
	ev := c.ack("a port nobody listens on", cch, rdmacm.EventRejected)
	if ev.Status() != int(rdmacm.RejInvalidServiceID) {
		t.Errorf("REJECTED status %d, want 8 (invalid service ID)", ev.Status())
	}
	if s := c.qpAttr("the rejected QP", q).QPState; s != verbs.QPStateErr {
		t.Errorf("after REJECTED the QP is %v, want ERR", s)
	}
}

func cmAccept(t *tester, e *env) {
	c := cmEnvOf(t, e)
	if c == nil {
		return
	}
	p := c.connect(nil, &rdmacm.ConnParam{PrivateData: []byte("ok")})
	if s := c.qpAttr("the accepting QP", p.srvQP).QPState; s != verbs.QPStateRTS {
		t.Errorf("after rdma_accept the server's QP is %v, want RTS", s)
	}
	c.WantErrno("rdma_accept on an established ID", p.server.Accept(nil), syscall.EINVAL)
	c.WantErrno("rdma_accept on the listener", p.listener.Accept(nil), syscall.EINVAL)

	cl := c.id(p.cch, rdmacm.PSTCP)
	c.resolve(p.cch, cl, p.at)
	c.qp(cl)
	c.WantOK("rdma_connect", cl.Connect(nil))
	req := c.ack("a second request", p.sch, rdmacm.EventConnectRequest)
	c.track(req.ID())
	c.qp(req.ID())
	c.WantErrno("rdma_accept with 197 bytes of private data", req.ID().Accept(&rdmacm.ConnParam{PrivateData: make([]byte, 197)}), syscall.EINVAL)
	if ev := c.ack("the client of a failed accept", p.cch, rdmacm.EventRejected); ev.Status() != int(rdmacm.RejConsumerDefined) {
		t.Errorf("the failed accept's REJ: status %d, want 28", ev.Status())
	}
	if s := c.qpAttr("the QP of a failed accept", req.ID().QP()).QPState; s != verbs.QPStateErr {
		t.Errorf("after a failed accept the server's QP is %v, want ERR", s)
	}
}

func cmEstablish(t *tester, e *env) {
	c := cmEnvOf(t, e)
	if c == nil {
		return
	}
	p := c.connect(nil, &rdmacm.ConnParam{PrivateData: []byte("rep")})
	if got := p.clientEstablish.Conn(); !zeroPadded(got.PrivateData, []byte("rep"), 196) || got.QPNum != p.srvQP.Num() {
		t.Errorf("the client's ESTABLISHED: private data %q qp_num %#x, want \"rep\" padded to 196 and %#x", got.PrivateData, got.QPNum, p.srvQP.Num())
	}
	c.sendRecv("a SEND over the connection", p.client, p.server, []byte("hello"), nil)
	c.WantErrno("rdma_establish on an ID with a QP", p.client.Establish(), syscall.EINVAL)

	// An ID without a QP: CONNECT_RESPONSE, then rdma_establish.
	bare := c.id(p.cch, rdmacm.PSTCP)
	c.resolve(p.cch, bare, p.at)
	c.WantErrno("rdma_establish with nothing to confirm", bare.Establish(), syscall.EINVAL)
	c.WantOK("rdma_connect with qp_num", bare.Connect(&rdmacm.ConnParam{QPNum: 0x123}))
	req := c.ack("the request", p.sch, rdmacm.EventConnectRequest)
	c.track(req.ID())
	c.WantOK("rdma_accept with qp_num", req.ID().Accept(&rdmacm.ConnParam{QPNum: 0x456}))
	resp := c.ack("an ID without a QP", p.cch, rdmacm.EventConnectResponse)
	if resp.Conn().QPNum != 0x456 {
		t.Errorf("CONNECT_RESPONSE qp_num %#x, want the server's 0x456", resp.Conn().QPNum)
	}
	c.noEvent("the server before rdma_establish", p.sch)
	c.WantOK("rdma_establish", bare.Establish())
	c.ack("the server after rdma_establish", p.sch, rdmacm.EventEstablished)
}

func cmNotify(t *tester, e *env) {
	c := cmEnvOf(t, e)
	if c == nil {
		return
	}
	p := c.connect(nil, nil)
	c.WantErrno("rdma_notify on an established ID", p.server.Notify(verbs.EventCommEst), syscall.EISCONN)
	fresh := c.id(p.sch, rdmacm.PSTCP)
	c.WantErrno("rdma_notify on an ID with no connection", fresh.Notify(verbs.EventCommEst), syscall.EINVAL)
	c.WantErrno("rdma_notify with another event", p.server.Notify(verbs.EventPortActive), syscall.EINVAL)

	// The client never confirms (no QP, no rdma_establish): COMM_EST
	// establishes the server.
	bare := c.id(p.cch, rdmacm.PSTCP)
	c.resolve(p.cch, bare, p.at)
	c.WantOK("rdma_connect with qp_num", bare.Connect(&rdmacm.ConnParam{QPNum: 0x123}))
	req := c.ack("the request", p.sch, rdmacm.EventConnectRequest)
	srv := req.ID()
	c.track(srv)
	c.qp(srv)
	c.WantOK("rdma_accept", srv.Accept(nil))
	c.ack("the client's CONNECT_RESPONSE", p.cch, rdmacm.EventConnectResponse)
	c.noEvent("the server before the RTU", p.sch)
	c.WantOK("rdma_notify(IBV_EVENT_COMM_EST)", srv.Notify(verbs.EventCommEst))
	c.ack("the server after rdma_notify", p.sch, rdmacm.EventEstablished)
	c.WantErrno("a second rdma_notify", srv.Notify(verbs.EventCommEst), syscall.EISCONN)
}

func cmReject(t *tester, e *env) {
	c := cmEnvOf(t, e)
	if c == nil {
		return
	}
	sch, cch := c.channel(), c.channel()
	_, at := c.listen(sch, rdmacm.PSTCP)
	id := c.id(cch, rdmacm.PSTCP)
	c.resolve(cch, id, at)
	q := c.qp(id)
	c.WantErrno("rdma_reject on an ID with no request", id.Reject(nil), syscall.EINVAL)
	c.WantOK("rdma_connect", id.Connect(nil))
	req := c.ack("the request", sch, rdmacm.EventConnectRequest)
	conn := req.ID()
	c.track(conn)
	c.WantErrno("rdma_reject with 149 bytes of private data", conn.Reject(make([]byte, 149)), syscall.EINVAL)
	c.noEvent("the client of a refused reject", cch)
	c.WantOK("rdma_reject", conn.Reject([]byte("busy")))
	ev := c.ack("a rejected client", cch, rdmacm.EventRejected)
	if ev.Status() != int(rdmacm.RejConsumerDefined) || !zeroPadded(ev.Conn().PrivateData, []byte("busy"), 148) {
		t.Errorf("REJECTED: status %d private data %q; want 28 and \"busy\" padded to 148", ev.Status(), ev.Conn().PrivateData)
	}
	if s := c.qpAttr("the rejected QP", q).QPState; s != verbs.QPStateErr {
		t.Errorf("the rejected client's QP is %v, want ERR", s)
	}
	c.WantErrno("a second rdma_reject", conn.Reject(nil), syscall.EINVAL)
}

func cmReqTimeout(t *tester, e *env) {
	c := cmEnvOf(t, e)
	if c == nil {
		return
	}
	link, ok := e.Dev.(LinkControl)
	if !ok {
		t.Logf("the device cannot take its port down (conformance.LinkControl); nothing to check")
		return
	}
	cch := c.channel()
	id := c.id(cch, rdmacm.PSTCP)
	c.resolve(cch, id, c.dst())
	c.qp(id)
	c.WantOK("taking the port down", link.SetPortState(1, false))
	defer link.SetPortState(1, true)
	n, timed := c.now()
	var t0 uint64
	if timed {
		t0 = n.Now()
	}
	c.WantOK("rdma_connect", id.Connect(nil))
	ev := c.ack("a REQ nobody answers", cch, rdmacm.EventUnreachable)
	if ev.Status() != errETIMEDOUT {
		t.Errorf("UNREACHABLE status %d, want -ETIMEDOUT (%d)", ev.Status(), errETIMEDOUT)
	}
	if timed {
		if d := time.Duration(n.Now() - t0); d != 16*6144*time.Millisecond {
			t.Errorf("UNREACHABLE after %v of virtual time, want 16 × 6.144s = 98.304s", d)
		}
	}
}

func cmDisconnect(t *tester, e *env) {
	c := cmEnvOf(t, e)
	if c == nil {
		return
	}
	p := c.connect(nil, nil)
	fresh := c.id(p.cch, rdmacm.PSTCP)
	c.WantErrno("rdma_disconnect of an ID with no connection", fresh.Disconnect(), syscall.EINVAL)
	c.WantOK("rdma_disconnect by the client", p.client.Disconnect())
	if s := c.qpAttr("the client's QP", p.clientQP).QPState; s != verbs.QPStateErr {
		t.Errorf("after rdma_disconnect the QP is %v, want ERR", s)
	}
	c.ack("the server hearing the DREQ", p.sch, rdmacm.EventDisconnected)
	c.noEvent("the client before the DREP", p.cch)
	n, timed := c.now()
	var t0 uint64
	if timed {
		t0 = n.Now()
	}
	c.WantOK("rdma_disconnect by the server", p.server.Disconnect())
	c.ack("the client hearing the DREP", p.cch, rdmacm.EventDisconnected)
	c.ack("the client's timewait", p.cch, rdmacm.EventTimewaitExit)
	c.ack("the server's timewait", p.sch, rdmacm.EventTimewaitExit)
	if timed {
		if d := time.Duration(n.Now() - t0); d != 2048*time.Millisecond {
			t.Errorf("TIMEWAIT_EXIT after %v of virtual time, want 2.048s", d)
		}
	}
}

func cmDestroyConn(t *tester, e *env) {
	c := cmEnvOf(t, e)
	if c == nil {
		return
	}
	p := c.connect(nil, nil)
	c.WantErrno("rdma_destroy_id with its QP", p.server.Destroy(context.Background()), syscall.EBUSY)
	c.WantOK("rdma_destroy_qp", p.server.DestroyQP())
	ctx, cancel := patient()
	c.WantOK("rdma_destroy_id of an established ID", p.server.Destroy(ctx))
	cancel()
	c.ack("the client of a destroyed server", p.cch, rdmacm.EventDisconnected)

	cl := c.id(p.cch, rdmacm.PSTCP)
	c.resolve(p.cch, cl, p.at)
	c.qp(cl)
	c.WantOK("rdma_connect", cl.Connect(nil))
	req := c.ack("the request", p.sch, rdmacm.EventConnectRequest)
	ctx, cancel = patient()
	c.WantOK("rdma_destroy_id of an unanswered request", req.ID().Destroy(ctx))
	cancel()
	if ev := c.ack("the client of a request destroyed unanswered", p.cch, rdmacm.EventRejected); ev.Status() != int(rdmacm.RejConsumerDefined) {
		t.Errorf("REJECTED status %d, want 28", ev.Status())
	}
}

func cmDeadPeer(t *tester, e *env) {
	c := cmEnvOf(t, e)
	if c == nil {
		return
	}
	link, ok := e.Dev.(LinkControl)
	if !ok {
		t.Logf("the device cannot take its port down (conformance.LinkControl); nothing to check")
		return
	}
	// retry_count 7 would retry for ever under a reading of XFER-10.
	p := c.connect(&rdmacm.ConnParam{RetryCount: 3, RNRRetryCount: 3}, nil)
	c.WantOK("taking the port down", link.SetPortState(1, false))
	defer link.SetPortState(1, true)
	mr, err := p.client.PD().RegMR(make([]byte, 8), verbs.AccessLocalWrite)
	c.WantOK("ibv_reg_mr", err)
	defer mr.Dereg()
	_, err = p.clientQP.PostSend([]verbs.SendWR{{WRID: 9, Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
		SGList: []verbs.SGE{{Addr: mr.Addr(), Length: 8, LKey: mr.LKey()}}}})
	c.WantOK("ibv_post_send", err)
	if wc := c.pollOne("a SEND to a peer that stopped answering", p.client.SendCQ()); wc.Status != verbs.WCRetryExcErr {
		t.Errorf("the SEND completed with %v, want RETRY_EXC_ERR", wc.Status)
	}
	c.noEvent("the client, which the CM does not tell", p.cch)
	c.WantOK("rdma_disconnect", p.client.Disconnect())
	if ev := c.ack("a DREQ nobody answers", p.cch, rdmacm.EventDisconnected); ev.Status() != errETIMEDOUT {
		t.Errorf("DISCONNECTED status %d, want -ETIMEDOUT", ev.Status())
	}
}

func cmDeviceRemoval(t *tester, e *env) {
	c := cmEnvOf(t, e)
	if c == nil {
		return
	}
	rm, ok := e.Dev.(DeviceRemover)
	if !ok {
		t.Logf("the device cannot be removed (conformance.DeviceRemover); nothing to check")
		return
	}
	p := c.connect(nil, nil)
	c.WantOK("removing the device", rm.RemoveDevice())
	got := map[rdmacm.ID]bool{}
	for range 3 {
		ev := c.event("device removal", p.sch, rdmacm.EventDeviceRemoval)
		got[ev.ID()] = true
		c.WantOK("rdma_ack_cm_event", ev.Ack())
		if len(got) == 2 {
			break
		}
	}
	ev := c.ack("the client's device removal", p.cch, rdmacm.EventDeviceRemoval)
	if !got[p.listener] || !got[p.server] || ev.ID() != p.client {
		t.Errorf("DEVICE_REMOVAL reached %v on the server's channel and %v on the client's; want the listener, the server and the client", got, ev.ID())
	}
	if err := p.client.Disconnect(); !errors.Is(err, syscall.EIO) {
		t.Errorf("rdma_disconnect after DEVICE_REMOVAL: %v, want EIO", err)
	}
	for _, id := range []rdmacm.ID{p.client, p.server, p.listener} {
		ctx, cancel := patient()
		c.WantOK("rdma_destroy_ep after DEVICE_REMOVAL", id.DestroyEP(ctx))
		cancel()
	}
}
