package fuzz

import (
	"bytes"
	"context"
	"errors"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"github.com/verbsim/verbsim/rdmacm"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// The connection manager's fuzz targets: FuzzCMWire sends arbitrary CM
// messages to a host as frames from another process would arrive
// (Fabric.Receive), FuzzCMAPI calls the rdmacm API in any order with any
// arguments (CM-32, and the bad-input rules of every CM call).

// capture is a Remote that keeps the frames a fabric sends off itself, and
// resolves one address to the port of another fabric.
type capture struct {
	frames [][]byte
	ip     netip.Addr
	gid    verbs.GID
	lid    uint16
}

func (c *capture) Send(p sim.RemotePacket) error {
	c.frames = append(c.frames, append([]byte(nil), p.Frame...))
	return nil
}

func (c *capture) ResolveAddr(ip netip.Addr) (verbs.GID, uint16, verbs.MTU, bool, bool) {
	return c.gid, c.lid, verbs.MTU4096, false, ip == c.ip
}

// cmTarget is a host with an RDMA_PS_TCP and an RDMA_PS_UDP listener, and a
// frame header addressed to its CM (from a REQ another fabric sent it).
type cmTarget struct {
	f      *sim.Fabric
	ch     rdmacm.EventChannel
	ids    []rdmacm.ID
	header []byte // a frame of a CM message up to its payload
	req    []byte // that REQ's MAD
	tcp    netip.AddrPort
}

func newCMTarget(t testing.TB) *cmTarget {
	t.Helper()
	attr := sim.DefaultDeviceAttr()
	attr.NodeGUID = 0x0002c903000b0001
	f, err := sim.NewFabric(sim.Config{Devices: []sim.DeviceConfig{{Name: "target", Attr: attr}}})
	if err != nil {
		t.Fatal(err)
	}
	tg := &cmTarget{f: f}
	cm := f.RDMACM()
	tg.ch, _ = cm.CreateEventChannel()
	addr := f.Devices()[0].PortAddrs(1)[0]
	for i, ps := range []rdmacm.PortSpace{rdmacm.PSTCP, rdmacm.PSUDP} {
		l, err := cm.CreateID(tg.ch, nil, ps)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.BindAddr(netip.AddrPortFrom(addr, uint16(7000+i))); err != nil {
			t.Fatal(err)
		}
		if err := l.Listen(2); err != nil {
			t.Fatal(err)
		}
		tg.ids = append(tg.ids, l)
	}
	tg.tcp = netip.AddrPortFrom(addr, 7000)

	// A REQ from another fabric, for the frame's header.
	c, _ := f.Devices()[0].Open()
	gid, _ := c.QueryGID(1, 0)
	pa, _ := c.QueryPort(1)
	c.Close()
	wire := &capture{ip: addr, gid: gid, lid: pa.LID}
	oattr := sim.DefaultDeviceAttr()
	oattr.NodeGUID = 0x0002c903000a0001
	other, err := sim.NewFabric(sim.Config{Remote: wire, Devices: []sim.DeviceConfig{{Name: "other", Attr: oattr,
		Ports: []sim.PortConfig{{Attr: verbs.PortAttr{LID: 0x40}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	och, _ := other.RDMACM().CreateEventChannel()
	id, _ := other.RDMACM().CreateID(och, nil, rdmacm.PSTCP)
	if err := id.ResolveAddr(netip.AddrPort{}, tg.tcp, time.Second); err != nil {
		t.Fatal(err)
	}
	ev, _ := och.TryGetEvent()
	ev.Ack()
	_ = id.ResolveRoute(time.Second)
	ev, _ = och.TryGetEvent()
	ev.Ack()
	if err := id.Connect(&rdmacm.ConnParam{QPNum: 0x99}); err != nil {
		t.Fatal(err)
	}
	if len(wire.frames) != 1 || len(wire.frames[0]) <= 256 {
		t.Fatalf("the other fabric sent %d frame(s), want one REQ", len(wire.frames))
	}
	// The frame is its fixed header (sim/remote.go) and the 256-byte MAD.
	n := len(wire.frames[0]) - 256
	tg.header = wire.frames[0][:n]
	tg.req = wire.frames[0][n:]
	return tg
}

// send delivers a MAD (any bytes) to the target's CM as a frame.
func (tg *cmTarget) send(t testing.TB, mad []byte) {
	t.Helper()
	frame := append(append([]byte(nil), tg.header...), mad...)
	err := tg.f.Receive(frame)
	if len(mad) > sim.MaxFramePayload {
		if !errors.Is(err, syscall.EINVAL) {
			t.Fatalf("an oversized frame: %v, want EINVAL", err)
		}
		return
	}
	if err != nil {
		t.Fatalf("Receive of a frame with a well-formed header: %v", err)
	}
}

// drain reads and acknowledges every event, tracking new IDs.
func (tg *cmTarget) drain(t testing.TB) {
	t.Helper()
	for {
		ev, err := tg.ch.TryGetEvent()
		if errors.Is(err, syscall.EAGAIN) {
			return
		}
		if err != nil {
			t.Fatalf("rdma_get_cm_event: %v", err)
		}
		if ev.Type() == rdmacm.EventConnectRequest {
			tg.ids = append(tg.ids, ev.ID())
		}
		if err := ev.Ack(); err != nil {
			t.Fatalf("rdma_ack_cm_event: %v", err)
		}
	}
}

// checkHealthy connects to the target's own listener through its CM, and
// tears everything down.
func (tg *cmTarget) checkHealthy(t testing.TB) {
	t.Helper()
	cm := tg.f.RDMACM()
	cch, _ := cm.CreateEventChannel()
	cl, _ := cm.CreateID(cch, nil, rdmacm.PSTCP)
	if err := cl.ResolveAddr(netip.AddrPort{}, tg.tcp, time.Second); err != nil {
		t.Fatalf("rdma_resolve_addr after the fuzzed messages: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, want := range []rdmacm.EventType{rdmacm.EventAddrResolved, rdmacm.EventRouteResolved} {
		ev, err := cch.GetEvent(ctx)
		if err != nil || ev.Type() != want {
			t.Fatalf("waiting for %v: %v %v", want, ev, err)
		}
		ev.Ack()
		if want == rdmacm.EventAddrResolved {
			_ = cl.ResolveRoute(time.Second)
		}
	}
	if err := cl.Connect(&rdmacm.ConnParam{QPNum: 0x77}); err != nil {
		t.Fatalf("rdma_connect after the fuzzed messages: %v", err)
	}
	tg.drain(t) // the request, or none when the backlog is full of fuzzed ones
	for _, id := range append(tg.ids, cl) {
		if err := id.Destroy(ctx); err != nil && !errors.Is(err, syscall.ENOENT) {
			t.Fatalf("rdma_destroy_id: %v", err)
		}
	}
	for ev, err := cch.TryGetEvent(); err == nil; ev, err = cch.TryGetEvent() {
		ev.Ack()
	}
	tg.f.RunUntilIdle(0)
	tg.drain(t)
	if err := tg.ch.Destroy(); err != nil {
		t.Fatalf("rdma_destroy_event_channel: %v", err)
	}
}

// FuzzCMWire delivers the input, cut into 256-byte MADs, to a host's
// connection manager (CM-32): whatever they say, nothing panics, Receive
// accepts every frame, the events that result can be read and
// acknowledged, and the host still connects afterwards.
func FuzzCMWire(f *testing.F) {
	tg := newCMTarget(f)
	f.Add(tg.req)
	f.Add(append(append([]byte(nil), tg.req...), tg.req...)) // the REQ and its retransmission
	for _, attr := range []byte{0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18} {
		m := bytes.Clone(tg.req)
		m[17] = attr  // the attribute
		m[24+7] = 1   // local comm ID 1
		m[24+4+3] = 1 // remote comm ID 1
		f.Add(m)
	}
	f.Add([]byte{1, 7, 2, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		tg := newCMTarget(t)
		for len(data) > 0 {
			n := min(len(data), 256)
			tg.send(t, data[:n])
			data = data[n:]
			tg.drain(t)
		}
		tg.f.RunUntilIdle(uint64(10 * time.Minute))
		tg.drain(t)
		tg.checkHealthy(t)
	})
}

// FuzzCMAPI runs the input as a program of rdmacm calls on three IDs of two
// channels (each byte an operation, the next bytes its arguments): every
// call either succeeds or returns an error carrying an errno, nothing
// panics or blocks, and at the end every event is acknowledged and every ID
// destroyed.
func FuzzCMAPI(f *testing.F) {
	f.Add([]byte{0, 0, 1, 0, 3, 0, 4, 1, 5, 1, 6, 1, 7, 1, 2, 8, 0, 8, 1, 9, 0, 10, 1, 11})
	f.Add([]byte{0, 1, 2, 1, 12, 1, 13, 2, 14, 0, 3, 15, 1, 16, 2})
	f.Add([]byte{0, 0, 3, 1, 17, 0, 18, 1, 19, 0, 1, 20, 21, 22})
	f.Fuzz(func(t *testing.T, prog []byte) {
		fab, err := sim.NewFabric(sim.Config{Devices: []sim.DeviceConfig{{Name: "a"}, {Name: "b"}}})
		if err != nil {
			t.Fatal(err)
		}
		r := &cmRun{t: t, f: fab, cm: fab.RDMACM(), prog: prog}
		r.run()
		r.teardown()
	})
}

type cmRun struct {
	t    *testing.T
	f    *sim.Fabric
	cm   *sim.CM
	prog []byte
	chs  [2]rdmacm.EventChannel
	ids  [3]rdmacm.ID
	all  []rdmacm.ID
}

func (r *cmRun) next() byte {
	if len(r.prog) == 0 {
		return 0
	}
	b := r.prog[0]
	r.prog = r.prog[1:]
	return b
}

// check fails the run on an error that carries no errno.
func (r *cmRun) check(what string, err error) {
	if err == nil {
		return
	}
	var e *verr.Error
	var ae *rdmacm.AddrInfoError
	if (!errors.As(err, &e) || verr.Errno(err) == 0) && !errors.As(err, &ae) {
		r.t.Fatalf("%s: error %q is not a *verr.Error with an errno", what, err)
	}
}

func (r *cmRun) addr(b byte) netip.AddrPort {
	addrs := [...]string{"10.0.1.1", "10.0.2.1", "0.0.0.0", "10.254.0.1", "fd00:5653::2c9:300:0:101", "::", "127.0.0.1", "239.1.1.1"}
	return netip.AddrPortFrom(netip.MustParseAddr(addrs[int(b)%len(addrs)]), uint16(7000+int(b>>3)%4))
}

func (r *cmRun) id() rdmacm.ID { return r.ids[int(r.next())%len(r.ids)] }

func (r *cmRun) run() {
	for i := range r.chs {
		r.chs[i], _ = r.cm.CreateEventChannel()
	}
	for len(r.prog) > 0 {
		op := r.next() % 23
		switch op {
		case 0:
			slot, ps := int(r.next())%3, [...]rdmacm.PortSpace{rdmacm.PSTCP, rdmacm.PSUDP, rdmacm.PSIB, 0x42}[r.next()%4]
			var ch rdmacm.EventChannel
			if c := r.next() % 3; c < 2 {
				ch = r.chs[c]
			}
			id, err := r.cm.CreateID(ch, nil, ps)
			r.check("rdma_create_id", err)
			if err == nil {
				r.ids[slot] = id
				r.all = append(r.all, id)
			}
		case 1:
			if id := r.id(); id != nil {
				r.check("rdma_bind_addr", id.BindAddr(r.addr(r.next())))
			}
		case 2:
			if id := r.id(); id != nil {
				r.check("rdma_listen", id.Listen(int(int8(r.next()))))
			}
		case 3:
			if id := r.id(); id != nil {
				r.check("rdma_resolve_addr", id.ResolveAddr(netip.AddrPort{}, r.addr(r.next()), time.Duration(r.next())*time.Millisecond))
			}
		case 4:
			if id := r.id(); id != nil {
				r.check("rdma_resolve_route", id.ResolveRoute(time.Second))
			}
		case 5:
			if id := r.id(); id != nil {
				attr := verbs.QPInitAttr{Type: id.QPType(), Cap: verbs.QPCap{MaxSendWR: uint32(r.next() % 5), MaxRecvWR: 2, MaxSendSGE: 1, MaxRecvSGE: 1}}
				r.check("rdma_create_qp", id.CreateQP(nil, &attr))
			}
		case 6:
			if id := r.id(); id != nil {
				n := int(r.next())
				r.check("rdma_connect", id.Connect(&rdmacm.ConnParam{PrivateData: make([]byte, n), QPNum: 5, RetryCount: r.next(), RNRRetryCount: r.next(), InitiatorDepth: r.next() % 20, ResponderResources: r.next() % 20}))
			}
		case 7:
			if id := r.id(); id != nil {
				var p *rdmacm.ConnParam
				if n := int(r.next()); n < 250 {
					p = &rdmacm.ConnParam{PrivateData: make([]byte, n), QPNum: 6}
				}
				r.check("rdma_accept", id.Accept(p))
			}
		case 8:
			if id := r.id(); id != nil {
				r.check("rdma_reject", id.Reject(make([]byte, int(r.next()))))
			}
		case 9:
			if id := r.id(); id != nil {
				r.check("rdma_disconnect", id.Disconnect())
			}
		case 10:
			if id := r.id(); id != nil {
				r.check("rdma_notify", id.Notify(verbs.EventType(r.next()%6)))
			}
		case 11:
			r.events(int(r.next() % 2))
		case 12:
			if id := r.id(); id != nil {
				var ch rdmacm.EventChannel
				if c := r.next() % 3; c < 2 {
					ch = r.chs[c]
				}
				r.check("rdma_migrate_id", id.Migrate(ch))
			}
		case 13:
			if id := r.id(); id != nil {
				r.check("rdma_set_option", id.SetOption(rdmacm.OptionLevel(r.next()%3), rdmacm.OptionName(r.next()%5), make([]byte, int(r.next()%6))))
			}
		case 14:
			if id := r.id(); id != nil {
				_, _, err := id.InitQPAttr(verbs.QPState(r.next() % 7))
				r.check("rdma_init_qp_attr", err)
			}
		case 15:
			if id := r.id(); id != nil {
				r.check("rdma_join_multicast", id.JoinMulticastEx(r.addr(r.next()).Addr(), rdmacm.JoinFlags(r.next()%3), nil))
			}
		case 16:
			if id := r.id(); id != nil {
				r.check("rdma_leave_multicast", id.LeaveMulticast(r.addr(r.next()).Addr()))
			}
		case 17:
			if id := r.id(); id != nil {
				r.check("rdma_establish", id.Establish())
			}
		case 18:
			if id := r.id(); id != nil {
				r.check("rdma_destroy_qp", id.DestroyQP())
			}
		case 19:
			if id := r.id(); id != nil {
				ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
				r.check("rdma_destroy_id", id.Destroy(ctx))
				cancel()
			}
		case 20:
			r.f.Tick(uint64(r.next()) << 24)
		case 21:
			if id := r.id(); id != nil {
				attr := verbs.SRQInitAttr{Attr: verbs.SRQAttr{MaxWR: uint32(r.next() % 8), MaxSGE: 1}}
				r.check("rdma_create_srq", id.CreateSRQ(nil, &attr))
			}
		case 22:
			_, err := r.cm.GetAddrInfo(r.addr(r.next()).Addr().String(), "7471", &rdmacm.AddrInfo{Flags: rdmacm.AIFlags(r.next() % 16)})
			r.check("rdma_getaddrinfo", err)
		}
	}
}

// events reads and acknowledges what channel c holds, tracking new IDs.
func (r *cmRun) events(c int) {
	for {
		ev, err := r.chs[c].TryGetEvent()
		if errors.Is(err, syscall.EAGAIN) {
			return
		}
		r.check("rdma_get_cm_event", err)
		if err != nil {
			return
		}
		if ev.Type() == rdmacm.EventConnectRequest {
			r.all = append(r.all, ev.ID())
			r.ids[0] = ev.ID()
		}
		r.check("rdma_ack_cm_event", ev.Ack())
	}
}

// teardown acknowledges every event and destroys every ID; each destroy
// must succeed (or find the ID destroyed already).
func (r *cmRun) teardown() {
	r.f.RunUntilIdle(uint64(time.Hour))
	for i := range r.chs {
		r.events(i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, id := range r.all {
		if ev := id.Event(); ev != nil {
			_ = ev.Ack()
		}
		if err := id.DestroyEP(ctx); err != nil && !errors.Is(err, syscall.ENOENT) {
			r.t.Fatalf("rdma_destroy_ep at the end: %v", err)
		}
	}
	r.f.RunUntilIdle(uint64(time.Hour))
	for i := range r.chs {
		r.events(i)
		if err := r.chs[i].Destroy(); err != nil {
			r.t.Fatalf("rdma_destroy_event_channel at the end: %v", err)
		}
	}
}
