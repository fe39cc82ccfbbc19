package simtest

import (
	"errors"
	"fmt"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"github.com/verbsim/verbsim/rdmacm"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// RCOverCM makes a fabric for t with o.Fabric and an RC pair connected
// through the connection manager (docs/rdma_cm.md), as an application that
// connects by address would: see Fabric.RCOverCM.
func RCOverCM(t testing.TB, o PairOptions) (a, b *End) {
	t.Helper()
	return New(t, o.Fabric).RCOverCM(o)
}

// RCOverCM makes an RC pair connected through the connection manager: b,
// on the fabric's second device (the first when it has one), listens on
// its port's IPv4 address; a, on the first, resolves that address and
// connects, and b accepts. Each end's QP is made with rdma_create_qp on
// the ID's own device context, with the end's CQs; End.ID and End.CMChan
// are the IDs and their channels, every event of the handshake read and
// acknowledged. o.Connect's RetryCnt and RNRRetry become the conn_param's
// retry counts (0: 7); its other fields are the CM's to choose. The
// listener stays open until the fabric is closed.
func (f *Fabric) RCOverCM(o PairOptions) (a, b *End) {
	t := f.t
	t.Helper()
	o = o.filled(verbs.QPTypeRC)
	devs := f.Devices()
	if len(devs) == 0 {
		t.Fatalf("simtest: the fabric has no device")
	}
	da, db := devs[0], devs[0]
	if len(devs) > 1 {
		db = devs[1]
	}
	cm := f.RDMACM()
	fail := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("simtest: %s: %v", what, err)
		}
	}
	sch, err := cm.CreateEventChannel()
	fail("rdma_create_event_channel", err)
	cch, err := cm.CreateEventChannel()
	fail("rdma_create_event_channel", err)
	listener, err := cm.CreateID(sch, nil, rdmacm.PSTCP)
	fail("rdma_create_id", err)
	fail("rdma_bind_addr", listener.BindAddr(netip.AddrPortFrom(ipv4Of(t, db), 0)))
	fail("rdma_listen", listener.Listen(0))
	client, err := cm.CreateID(cch, nil, rdmacm.PSTCP)
	fail("rdma_create_id", err)
	src := netip.AddrPortFrom(ipv4Of(t, da), 0)
	fail("rdma_resolve_addr", client.ResolveAddr(src, listener.LocalAddr(), time.Second))
	f.cmEvent(cch, rdmacm.EventAddrResolved)
	fail("rdma_resolve_route", client.ResolveRoute(time.Second))
	f.cmEvent(cch, rdmacm.EventRouteResolved)
	a = f.cmEnd(client, cch, da.Name(), o)
	retry, rnr := o.Connect.RetryCnt, o.Connect.RNRRetry
	if retry == 0 {
		retry = 7
	}
	if rnr == 0 {
		rnr = 7
	}
	fail("rdma_connect", client.Connect(&rdmacm.ConnParam{RetryCount: retry, RNRRetryCount: rnr,
		ResponderResources: rdmacm.MaxRespRes, InitiatorDepth: rdmacm.MaxInitDepth}))
	req := f.cmEvent(sch, rdmacm.EventConnectRequest)
	b = f.cmEnd(req.ID(), sch, db.Name(), o)
	fail("rdma_accept", req.ID().Accept(&rdmacm.ConnParam{RNRRetryCount: rnr,
		ResponderResources: rdmacm.MaxRespRes, InitiatorDepth: rdmacm.MaxInitDepth}))
	f.cmEvent(cch, rdmacm.EventEstablished)
	f.cmEvent(sch, rdmacm.EventEstablished)
	a.Peer, b.Peer = b, a
	for _, e := range []*End{a, b} {
		for range o.Recvs {
			e.PostRecvSlot(uint64(1000000 + e.nextRecv))
		}
	}
	return a, b
}

// ipv4Of is the IPv4 address of d's port 1.
func ipv4Of(t testing.TB, d *sim.Device) netip.Addr {
	t.Helper()
	for _, a := range d.PortAddrs(1) {
		if a.Is4() {
			return a
		}
	}
	t.Fatalf("simtest: device %s's port 1 has no IPv4 address", d.Name())
	return netip.Addr{}
}

// cmEnd makes the end of id: its resources in id's device context and its
// QP through rdma_create_qp.
func (f *Fabric) cmEnd(id rdmacm.ID, ch rdmacm.EventChannel, name string, o PairOptions) *End {
	f.t.Helper()
	ctx, ok := sim.ContextOf(id.Verbs())
	if !ok {
		f.t.Fatalf("simtest: the ID on %s is bound to no device", name)
	}
	e := f.endIn(ctx, name, verbs.QPTypeRC, o, func(pd *sim.PD, a sim.QPInitAttr) (*sim.QP, error) {
		attr := verbs.QPInitAttr{SendCQ: sim.VerbsCQ(a.SendCQ), RecvCQ: sim.VerbsCQ(a.RecvCQ), Cap: a.Cap, Type: a.Type}
		if err := id.CreateQP(sim.VerbsPD(pd), &attr); err != nil {
			return nil, err
		}
		q, _ := sim.QPOf(id.QP())
		return q, nil
	})
	e.ID, e.CMChan = id, ch
	return e
}

// cmEvent waits in virtual time for the next event of ch, fails the test
// unless it is want, acknowledges it and returns it.
func (f *Fabric) cmEvent(ch rdmacm.EventChannel, want rdmacm.EventType) rdmacm.Event {
	f.t.Helper()
	var ev rdmacm.Event
	f.Until(fmt.Sprintf("the connection manager's %v", want), func() bool {
		var err error
		ev, err = ch.TryGetEvent()
		switch {
		case err == nil:
			return true
		case errors.Is(err, syscall.EAGAIN):
			return false
		}
		f.t.Fatalf("simtest: rdma_get_cm_event: %v", err)
		return true
	}, nil)
	if ev == nil {
		return nil
	}
	if err := ev.Ack(); err != nil {
		f.t.Fatalf("simtest: rdma_ack_cm_event: %v", err)
	}
	if ev.Type() != want {
		f.t.Fatalf("simtest: the connection manager reported %v (status %d), want %v", ev.Type(), ev.Status(), want)
	}
	return ev
}
