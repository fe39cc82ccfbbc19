package sim_test

import (
	"context"
	"errors"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"github.com/verbsim/verbsim/rdmacm"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

func TestCMSmoke(t *testing.T) {
	f, err := sim.NewFabric(sim.Config{Devices: []sim.DeviceConfig{{Name: "a"}, {Name: "b"}}})
	if err != nil {
		t.Fatal(err)
	}
	cm := f.RDMACM()
	ctx := context.Background()
	sch, _ := cm.CreateEventChannel()
	cch, _ := cm.CreateEventChannel()
	lis, err := cm.CreateID(sch, "server", rdmacm.PSTCP)
	if err != nil {
		t.Fatal(err)
	}
	if err := lis.BindAddr(netip.MustParseAddrPort("10.0.2.1:7471")); err != nil {
		t.Fatal(err)
	}
	if err := lis.Listen(4); err != nil {
		t.Fatal(err)
	}
	cid, _ := cm.CreateID(cch, "client", rdmacm.PSTCP)
	if err := cid.ResolveAddr(netip.MustParseAddrPort("10.0.1.1:0"), netip.MustParseAddrPort("10.0.2.1:7471"), time.Second); err != nil {
		t.Fatal(err)
	}
	ev := get(t, cch, rdmacm.EventAddrResolved)
	ev.Ack()
	if err := cid.ResolveRoute(time.Second); err != nil {
		t.Fatal(err)
	}
	get(t, cch, rdmacm.EventRouteResolved).Ack()
	qattr := verbs.QPInitAttr{Cap: verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}, Type: verbs.QPTypeRC}
	if err := cid.CreateQP(nil, &qattr); err != nil {
		t.Fatal(err)
	}
	if err := cid.Connect(&rdmacm.ConnParam{PrivateData: []byte("hi"), RetryCount: 7, RNRRetryCount: 7}); err != nil {
		t.Fatal(err)
	}
	req := get(t, sch, rdmacm.EventConnectRequest)
	if got := req.Conn().PrivateData; len(got) != 56 || string(got[:2]) != "hi" {
		t.Fatalf("private data %q", got)
	}
	sid := req.ID()
	sattr := qattr
	sattr.SendCQ, sattr.RecvCQ = nil, nil
	if err := sid.CreateQP(nil, &sattr); err != nil {
		t.Fatal(err)
	}
	if err := sid.Accept(&rdmacm.ConnParam{PrivateData: []byte("ok")}); err != nil {
		t.Fatal(err)
	}
	req.Ack()
	est := get(t, cch, rdmacm.EventEstablished)
	if string(est.Conn().PrivateData[:2]) != "ok" {
		t.Fatalf("rep private %q", est.Conn().PrivateData)
	}
	est.Ack()
	get(t, sch, rdmacm.EventEstablished).Ack()
	cq, sq := cid.QP(), sid.QP()
	a, _, _ := cq.Query(verbs.QueryableQPAttrs)
	b, _, _ := sq.Query(verbs.QueryableQPAttrs)
	if a.QPState != verbs.QPStateRTS || b.QPState != verbs.QPStateRTS || a.DestQPNum != sq.Num() || b.DestQPNum != cq.Num() {
		t.Fatalf("states %v %v dest %x %x", a.QPState, b.QPState, a.DestQPNum, b.DestQPNum)
	}
	if err := cid.Disconnect(); err != nil {
		t.Fatal(err)
	}
	get(t, sch, rdmacm.EventDisconnected).Ack()
	if err := sid.Disconnect(); err != nil {
		t.Fatal(err)
	}
	get(t, cch, rdmacm.EventDisconnected).Ack()
	get(t, cch, rdmacm.EventTimewaitExit).Ack()
	get(t, sch, rdmacm.EventTimewaitExit).Ack()
	for _, id := range []rdmacm.ID{cid, sid} {
		if err := id.DestroyQP(); err != nil {
			t.Fatal(err)
		}
		if err := id.Destroy(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := lis.Destroy(ctx); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, ch rdmacm.EventChannel, want rdmacm.EventType) rdmacm.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ev, err := ch.GetEvent(ctx)
	if err != nil {
		t.Fatalf("waiting for %v: %v", want, err)
	}
	if ev.Type() != want {
		t.Fatalf("got %v status %d, want %v", ev.Type(), ev.Status(), want)
	}
	return ev
}

// TestDeviceRemoveTwice_CM24: a second removal is EINVAL and changes
// nothing; the removed device's port cannot come back up.
func TestDeviceRemoveTwice_CM24(t *testing.T) {
	f, err := sim.NewFabric(sim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	d := f.Devices()[0]
	if err := d.Remove(); err != nil {
		t.Fatal(err)
	}
	if err := d.Remove(); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("a second Remove: %v, want EINVAL", err)
	}
	if err := d.SetPortState(1, true); !errors.Is(err, syscall.ENODEV) {
		t.Errorf("bringing a removed device's port up: %v, want ENODEV", err)
	}
}
