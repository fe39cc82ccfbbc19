package explore_test

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/verbsim/verbsim/explore"
	"github.com/verbsim/verbsim/rdmacm"
	"github.com/verbsim/verbsim/verbs"
)

// cmWorld connects a client to a server through the connection manager
// and disconnects it, each side reading its events as an application
// does. The CM's messages are packets and its timers engine timers, and
// rdma_get_cm_event waits through the domain, so each is a choice point.
func cmWorld(w *explore.World) {
	f := w.Fabric()
	cm := f.RDMACM()
	sch, _ := cm.CreateEventChannel()
	l, _ := cm.CreateID(sch, nil, rdmacm.PSTCP)
	addr := netip.AddrPortFrom(f.Devices()[1].PortAddrs(1)[0], 7471)
	if err := l.BindAddr(addr); err != nil {
		w.Fatalf("rdma_bind_addr: %v", err)
	}
	if err := l.Listen(1); err != nil {
		w.Fatalf("rdma_listen: %v", err)
	}
	qpAttr := func() *verbs.QPInitAttr {
		return &verbs.QPInitAttr{Cap: verbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}}
	}
	// next reads an event of ch, acknowledges it and returns its type and
	// ID.
	next := func(ctx context.Context, ch rdmacm.EventChannel) (rdmacm.EventType, rdmacm.ID, bool) {
		ev, err := ch.GetEvent(ctx)
		if err != nil {
			return 0, nil, false
		}
		t, id := ev.Type(), ev.ID()
		if err := ev.Ack(); err != nil {
			w.Errorf("rdma_ack_cm_event(%v): %v", t, err)
		}
		return t, id, true
	}
	w.Daemon("server", func(ctx context.Context) {
		for {
			t, id, ok := next(ctx, sch)
			if !ok {
				return
			}
			switch t {
			case rdmacm.EventConnectRequest:
				if err := id.CreateQP(nil, qpAttr()); err != nil {
					w.Errorf("server rdma_create_qp: %v", err)
				}
				if err := id.Accept(&rdmacm.ConnParam{ResponderResources: 1, InitiatorDepth: 1}); err != nil {
					w.Errorf("rdma_accept: %v", err)
				}
			case rdmacm.EventDisconnected:
				_ = id.Disconnect() // the DREP
				_ = id.DestroyQP()
				if err := id.Destroy(ctx); err != nil {
					w.Errorf("server rdma_destroy_id: %v", err)
				}
			}
		}
	})
	w.Go("client", func(ctx context.Context) {
		cch, _ := cm.CreateEventChannel()
		id, _ := cm.CreateID(cch, nil, rdmacm.PSTCP)
		src := netip.AddrPortFrom(f.Devices()[0].PortAddrs(1)[0], 0)
		steps := []struct {
			call func() error
			want rdmacm.EventType
		}{
			{func() error { return id.ResolveAddr(src, addr, time.Second) }, rdmacm.EventAddrResolved},
			{func() error { return id.ResolveRoute(time.Second) }, rdmacm.EventRouteResolved},
			{func() error {
				if err := id.CreateQP(nil, qpAttr()); err != nil {
					return err
				}
				return id.Connect(&rdmacm.ConnParam{ResponderResources: 1, InitiatorDepth: 1, RetryCount: 7})
			}, rdmacm.EventEstablished},
			{id.Disconnect, rdmacm.EventDisconnected},
		}
		for _, s := range steps {
			if err := s.call(); err != nil {
				w.Errorf("client, before %v: %v", s.want, err)
				return
			}
			if t, _, ok := next(ctx, cch); !ok || t != s.want {
				w.Errorf("client: got %v, want %v", t, s.want)
				return
			}
		}
		_ = id.DestroyQP()
		if err := id.Destroy(ctx); err != nil {
			w.Errorf("client rdma_destroy_id: %v", err)
		}
	})
}

// TestCMChoicePoints explores the handshake under the random walk and
// PCT: every schedule connects and disconnects.
func TestCMChoicePoints(t *testing.T) {
	for _, s := range []explore.Strategy{explore.Random, explore.PCT} {
		res := explore.Explore(cmWorld, explore.Options{Strategy: s, Seed: 1, Schedules: 30})
		if res.Failure != nil {
			t.Fatalf("%v: %v", s, res.Failure)
		}
		if res.Schedules != 30 || res.Steps < 30*20 {
			t.Errorf("%v: %v; want 30 schedules of at least 20 steps", s, res)
		}
		t.Log(res)
	}
}

// TestCMUnackedRequest: a server that rejects a request and destroys its
// listener without acknowledging the CONNECT_REQUEST blocks for ever in
// rdma_destroy_id (CM-03); the explorer reports the blocked destroy.
func TestCMUnackedRequest(t *testing.T) {
	world := func(w *explore.World) {
		f := w.Fabric()
		cm := f.RDMACM()
		sch, _ := cm.CreateEventChannel()
		l, _ := cm.CreateID(sch, nil, rdmacm.PSTCP)
		addr := netip.AddrPortFrom(f.Devices()[1].PortAddrs(1)[0], 7471)
		if err := l.BindAddr(addr); err != nil || l.Listen(1) != nil {
			w.Fatalf("listen: %v", err)
		}
		w.Go("server", func(ctx context.Context) {
			ev, err := sch.GetEvent(ctx)
			if err != nil {
				return
			}
			_ = ev.ID().Reject(nil)
			_ = ev.ID().Destroy(ctx)
			_ = l.Destroy(ctx) // the CONNECT_REQUEST was never acknowledged
		})
		w.Go("client", func(ctx context.Context) {
			cch, _ := cm.CreateEventChannel()
			id, _ := cm.CreateID(cch, nil, rdmacm.PSTCP)
			for _, call := range []func() error{
				func() error { return id.ResolveAddr(netip.AddrPort{}, addr, time.Second) },
				func() error { return id.ResolveRoute(time.Second) },
				func() error { return id.Connect(&rdmacm.ConnParam{QPNum: 0x99}) },
			} {
				if err := call(); err != nil {
					w.Errorf("client: %v", err)
					return
				}
				if ev, err := cch.GetEvent(ctx); err == nil {
					_ = ev.Ack()
				}
			}
			_ = id.Destroy(ctx)
		})
	}
	res := explore.Explore(world, explore.Options{Seed: 1, Schedules: 20})
	if res.Failure == nil || res.Failure.Kind != explore.DestroyBlocked || !strings.Contains(res.Failure.Message, "rdma_destroy_id") {
		t.Fatalf("%v; want a blocked rdma_destroy_id", res)
	}
	t.Log(res.Failure.Message)
}
