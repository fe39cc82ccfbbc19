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

// The CM cases' environment: the device's connection manager, its address
// and helpers that make channels, IDs and connections and tear them down
// when the case ends. Every connection is the host to itself: a listener
// on the device's address, and a client that resolves that address.

// cmEnv is a case's connection manager.
type cmEnv struct {
	*env
	cm   rdmacm.CM
	addr netip.Addr
	next uint16 // the next port a listener takes
	ids  []rdmacm.ID
	chs  []rdmacm.EventChannel
}

// cmEnvOf returns the case's connection manager, or nil (after logging)
// when the device has none.
func cmEnvOf(t *tester, e *env) *cmEnv {
	t.Helper()
	d, ok := e.Dev.(CMDevice)
	if !ok || !d.CMAddr().IsValid() {
		t.Logf("the device offers no connection manager (conformance.CMDevice); nothing to check")
		return nil
	}
	c := &cmEnv{env: e, cm: d.CM(), addr: d.CMAddr(), next: 7000}
	t.Cleanup(c.teardown)
	return c
}

func (c *cmEnv) teardown() {
	for i := len(c.ids) - 1; i >= 0; i-- {
		ctx, cancel := graceful()
		_ = c.ids[i].DestroyEP(ctx) // the case may have destroyed it
		cancel()
	}
	for _, ch := range c.chs {
		_ = ch.Destroy()
	}
}

// dst is the device's address at a port of the case's own.
func (c *cmEnv) dst() netip.AddrPort {
	c.next++
	return netip.AddrPortFrom(c.addr, c.next)
}

// channel makes an event channel or fails the case.
func (c *cmEnv) channel() rdmacm.EventChannel {
	c.T.Helper()
	ch, err := c.cm.CreateEventChannel()
	if err != nil {
		c.T.Fatalf("rdma_create_event_channel: %v", err)
	}
	c.chs = append(c.chs, ch)
	return ch
}

// id makes an ID on ch (nil: synchronous) or fails the case.
func (c *cmEnv) id(ch rdmacm.EventChannel, ps rdmacm.PortSpace) rdmacm.ID {
	c.T.Helper()
	id, err := c.cm.CreateID(ch, nil, ps)
	if err != nil {
		c.T.Fatalf("rdma_create_id(%v): %v", ps, err)
	}
	c.track(id)
	return id
}

// track makes the teardown destroy id (a connection request's).
func (c *cmEnv) track(id rdmacm.ID) { c.ids = append(c.ids, id) }

// event waits for the next event of ch, fails the case unless it is of
// type want, and returns it unacknowledged.
func (c *cmEnv) event(what string, ch rdmacm.EventChannel, want rdmacm.EventType) rdmacm.Event {
	c.T.Helper()
	ctx, cancel := patient()
	defer cancel()
	ev, err := ch.GetEvent(ctx)
	if err != nil {
		c.T.Fatalf("%s: waiting for %v: %v", what, want, err)
	}
	if ev.Type() != want {
		_ = ev.Ack()
		c.T.Fatalf("%s: got %v (status %d), want %v", what, ev.Type(), ev.Status(), want)
	}
	return ev
}

// ack waits for an event of type want on ch and acknowledges it.
func (c *cmEnv) ack(what string, ch rdmacm.EventChannel, want rdmacm.EventType) rdmacm.Event {
	c.T.Helper()
	ev := c.event(what, ch, want)
	c.WantOK("rdma_ack_cm_event", ev.Ack())
	return ev
}

// noEvent fails the case if ch has an event queued.
func (c *cmEnv) noEvent(what string, ch rdmacm.EventChannel) {
	c.T.Helper()
	ev, err := ch.TryGetEvent()
	if !errors.Is(err, syscall.EAGAIN) {
		typ := "none"
		if ev != nil {
			typ = ev.Type().String()
			_ = ev.Ack()
		}
		c.T.Errorf("%s: want no event (EAGAIN), got %s, %v", what, typ, err)
	}
}

// listen makes a listener of port space ps on ch at a fresh port of the
// device's address.
func (c *cmEnv) listen(ch rdmacm.EventChannel, ps rdmacm.PortSpace) (rdmacm.ID, netip.AddrPort) {
	c.T.Helper()
	l := c.id(ch, ps)
	at := c.dst()
	c.WantOK("rdma_bind_addr", l.BindAddr(at))
	c.WantOK("rdma_listen", l.Listen(8))
	return l, at
}

// resolve resolves id's address and route to dst, acknowledging the
// events (id must be on ch).
func (c *cmEnv) resolve(ch rdmacm.EventChannel, id rdmacm.ID, dst netip.AddrPort) {
	c.T.Helper()
	c.WantOK("rdma_resolve_addr", id.ResolveAddr(netip.AddrPort{}, dst, time.Second))
	c.ack("resolving the address", ch, rdmacm.EventAddrResolved)
	c.WantOK("rdma_resolve_route", id.ResolveRoute(time.Second))
	c.ack("resolving the route", ch, rdmacm.EventRouteResolved)
}

// cmQPAttr are the QP attributes of the cases' QPs.
func cmQPAttr(t verbs.QPType) verbs.QPInitAttr {
	return verbs.QPInitAttr{Type: t, Cap: verbs.QPCap{MaxSendWR: 8, MaxRecvWR: 8, MaxSendSGE: 1, MaxRecvSGE: 1}}
}

// qp gives id a QP of its type with CQs the CM makes.
func (c *cmEnv) qp(id rdmacm.ID) verbs.QP {
	c.T.Helper()
	attr := cmQPAttr(id.QPType())
	c.WantOK("rdma_create_qp", id.CreateQP(nil, &attr))
	return id.QP()
}

// cmPair is a connection made by connect: the two channels, the listener,
// the client's ID and the server's.
type cmPair struct {
	sch, cch        rdmacm.EventChannel
	listener        rdmacm.ID
	at              netip.AddrPort
	client, server  rdmacm.ID
	req             rdmacm.Event // the server's CONNECT_REQUEST, acknowledged
	clientEstablish rdmacm.Event // the client's ESTABLISHED, acknowledged
	clientQP, srvQP verbs.QP
}

// connect makes an RC connection with QPs on both sides: the client sends
// cp (nil for none), the server accepts with ap.
func (c *cmEnv) connect(cp, ap *rdmacm.ConnParam) *cmPair {
	c.T.Helper()
	p := &cmPair{sch: c.channel(), cch: c.channel()}
	p.listener, p.at = c.listen(p.sch, rdmacm.PSTCP)
	p.client = c.id(p.cch, rdmacm.PSTCP)
	c.resolve(p.cch, p.client, p.at)
	p.clientQP = c.qp(p.client)
	c.WantOK("rdma_connect", p.client.Connect(cp))
	p.req = c.ack("the server's connection request", p.sch, rdmacm.EventConnectRequest)
	p.server = p.req.ID()
	c.track(p.server)
	p.srvQP = c.qp(p.server)
	c.WantOK("rdma_accept", p.server.Accept(ap))
	p.clientEstablish = c.ack("the client's connection", p.cch, rdmacm.EventEstablished)
	c.ack("the server's connection", p.sch, rdmacm.EventEstablished)
	return p
}

// clock returns the device's clock and time, or nil.
func (c *cmEnv) now() (Nower, bool) {
	n, ok := c.Dev.(Nower)
	return n, ok
}

// destroyWaits checks that destroying id stays blocked for Grace, then that
// it returns once ack has been called.
func (c *cmEnv) destroyWaits(what string, id rdmacm.ID, ack func()) {
	c.T.Helper()
	ctx, cancel := graceful()
	err := id.Destroy(ctx)
	cancel()
	if err == nil {
		c.T.Errorf("%s: rdma_destroy_id returned with an event read and not acknowledged (CM-03)", what)
		return
	}
	ack()
	ctx, cancel = patient()
	defer cancel()
	c.WantOK(what+": rdma_destroy_id after the ack", id.Destroy(ctx))
}

// sendRecv posts a receive on to and a SEND of msg on from, and checks
// that it arrives, through the CQs the CM made.
func (c *cmEnv) sendRecv(what string, from, to rdmacm.ID, msg []byte, ud *rdmacm.UDParam) {
	c.T.Helper()
	pd := to.PD()
	buf := make([]byte, 64+len(msg))
	rmr, err := pd.RegMR(buf, verbs.AccessLocalWrite)
	c.WantOK(what+": ibv_reg_mr", err)
	defer rmr.Dereg()
	smr, err := from.PD().RegMR(append([]byte(nil), msg...), 0)
	c.WantOK(what+": ibv_reg_mr", err)
	defer smr.Dereg()
	_, err = to.QP().PostRecv([]verbs.RecvWR{{WRID: 1, SGList: []verbs.SGE{{Addr: rmr.Addr(), Length: uint32(len(buf)), LKey: rmr.LKey()}}}})
	c.WantOK(what+": ibv_post_recv", err)
	wr := verbs.SendWR{WRID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
		SGList: []verbs.SGE{{Addr: smr.Addr(), Length: uint32(len(msg)), LKey: smr.LKey()}}}
	if ud != nil {
		ah, err := from.PD().CreateAH(ud.AHAttr)
		c.WantOK(what+": ibv_create_ah", err)
		defer ah.Destroy()
		wr.AH, wr.RemoteQPN, wr.RemoteQKey = ah, ud.QPNum, ud.QKey
	}
	_, err = from.QP().PostSend([]verbs.SendWR{wr})
	c.WantOK(what+": ibv_post_send", err)
	got := c.pollOne(what+": the receive", to.RecvCQ())
	if got.Status != verbs.WCSuccess {
		c.T.Fatalf("%s: the receive completed with %v", what, got.Status)
	}
	off := 0
	if ud != nil {
		off = 40 // the GRH a UD receive buffer starts with
	}
	if n := int(got.ByteLen) - off; n != len(msg) || string(buf[off:off+n]) != string(msg) {
		c.T.Errorf("%s: received %q, want %q", what, buf[off:off+max(n, 0)], msg)
	}
	if s := c.pollOne(what+": the send", from.SendCQ()); s.Status != verbs.WCSuccess {
		c.T.Errorf("%s: the send completed with %v", what, s.Status)
	}
}

// pollOne polls q until a completion arrives, moving the device's clock
// when it has one, for up to Patience.
func (c *cmEnv) pollOne(what string, q verbs.CQ) verbs.WC {
	c.T.Helper()
	deadline := time.Now().Add(Patience)
	wcs := make([]verbs.WC, 1)
	for time.Now().Before(deadline) {
		n, err := q.Poll(wcs)
		c.WantOK(what+": ibv_poll_cq", err)
		if n == 1 {
			return wcs[0]
		}
		if cl, ok := c.Dev.(Clock); ok {
			cl.RunUntilIdle(uint64(time.Minute))
		} else {
			time.Sleep(time.Millisecond)
		}
	}
	c.T.Fatalf("%s: no completion within %v", what, Patience)
	return verbs.WC{}
}

// qpAttr queries a QP or fails the case.
func (c *cmEnv) qpAttr(what string, q verbs.QP) verbs.QPAttr {
	c.T.Helper()
	a, _, err := q.Query(verbs.QueryableQPAttrs)
	c.WantOK(what+": ibv_query_qp", err)
	return a
}

// zeroPadded reports whether b is want followed by zeros up to n bytes.
func zeroPadded(b, want []byte, n int) bool {
	if len(b) != n || string(b[:len(want)]) != string(want) {
		return false
	}
	for _, x := range b[len(want):] {
		if x != 0 {
			return false
		}
	}
	return true
}

// errETIMEDOUT is the status of an event of a timed-out exchange.
var errETIMEDOUT = -int(syscall.ETIMEDOUT)

var _ = context.Background
