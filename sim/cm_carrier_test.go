package sim_test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/verbsim/verbsim/rdmacm"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// pumpWire joins Auto-mode fabrics as hosts: each fabric's Remote queues
// the frames it sends, and pump hands them to the fabric that owns the
// destination, until none is left. Its AddrResolver answers for the ports
// of every fabric on the wire, as ARP would.
type pumpWire struct {
	hosts []*pumpHost
}

type pumpHost struct {
	w     *pumpWire
	f     *sim.Fabric
	dev   *sim.Device
	dst   []sim.RemotePacket
	gids  []verbs.GID
	lid   uint16
	addrs []netip.Addr
	eth   bool
	mtu   verbs.MTU
}

func (h *pumpHost) Send(p sim.RemotePacket) error {
	p.Frame = append([]byte(nil), p.Frame...)
	h.dst = append(h.dst, p)
	return nil
}

func (h *pumpHost) ResolveAddr(ip netip.Addr) (verbs.GID, uint16, verbs.MTU, bool, bool) {
	for _, o := range h.w.hosts {
		for _, a := range o.addrs {
			if a == ip {
				gid := o.gids[0]
				if o.eth {
					gid = verbs.GID(ip.As16())
				}
				return gid, o.lid, o.mtu, o.eth, true
			}
		}
	}
	return verbs.GID{}, 0, 0, false, false
}

// host adds a fabric with one device whose node GUID is guid.
func (w *pumpWire) host(t testing.TB, guid uint64, eth bool) *pumpHost {
	t.Helper()
	h := &pumpHost{w: w, eth: eth}
	attr := sim.DefaultDeviceAttr()
	attr.NodeGUID = guid
	pa := verbs.PortAttr{LID: uint16(guid >> 8 & 0xff)}
	if eth {
		pa = verbs.PortAttr{LinkLayer: verbs.LinkLayerEthernet}
	}
	f, err := sim.NewFabric(sim.Config{Remote: h, Devices: []sim.DeviceConfig{{Name: "host", Attr: attr, Ports: []sim.PortConfig{{Attr: pa}}}}})
	if err != nil {
		t.Fatal(err)
	}
	h.f, h.dev = f, f.Devices()[0]
	c, _ := h.dev.Open()
	defer c.Close()
	pattr, _ := c.QueryPort(1)
	h.lid, h.mtu = pattr.LID, pattr.ActiveMTU
	g, _ := c.QueryGID(1, 0)
	h.gids = []verbs.GID{g}
	h.addrs = h.dev.PortAddrs(1)
	w.hosts = append(w.hosts, h)
	return h
}

// owner is the host whose port has the packet's destination address.
func (w *pumpWire) owner(p sim.RemotePacket) *pumpHost {
	for _, o := range w.hosts {
		if p.Global {
			if p.DGID == o.gids[0] {
				return o
			}
			for _, a := range o.addrs {
				if verbs.GID(a.As16()) == p.DGID {
					return o
				}
			}
		} else if p.DLID == o.lid {
			return o
		}
	}
	return nil
}

// pump delivers every queued frame, and what the deliveries send in turn.
func (w *pumpWire) pump(t testing.TB) {
	t.Helper()
	for moved := true; moved; {
		moved = false
		for _, h := range w.hosts {
			q := h.dst
			h.dst = nil
			for _, p := range q {
				moved = true
				if o := w.owner(p); o != nil {
					if err := o.f.Receive(p.Frame); err != nil {
						t.Fatalf("Receive: %v", err)
					}
				}
			}
		}
	}
}

// tryEvent pumps and reads the next event of ch, which must be want.
func tryEvent(t testing.TB, w *pumpWire, ch rdmacm.EventChannel, want rdmacm.EventType) rdmacm.Event {
	t.Helper()
	w.pump(t)
	ev, err := ch.TryGetEvent()
	if err != nil {
		t.Fatalf("waiting for %v: %v", want, err)
	}
	if ev.Type() != want {
		t.Fatalf("got %v status %d, want %v", ev.Type(), ev.Status(), want)
	}
	if err := ev.Ack(); err != nil {
		t.Fatal(err)
	}
	return ev
}

// TestCMAcrossFabrics_CM09: two fabrics joined by a carrier that resolves
// addresses connect by address, pass a SEND and disconnect, on InfiniBand
// and on RoCE; the CM messages travel as frames (CM-32).
func TestCMAcrossFabrics_CM09(t *testing.T) {
	for _, eth := range []bool{false, true} {
		name := "ib"
		if eth {
			name = "roce"
		}
		t.Run(name, func(t *testing.T) {
			w := &pumpWire{}
			a := w.host(t, 0x0002c90300000a01, eth)
			b := w.host(t, 0x0002c90300000b01, eth)
			ctx := context.Background()
			ach, _ := a.f.RDMACM().CreateEventChannel()
			bch, _ := b.f.RDMACM().CreateEventChannel()
			l, _ := b.f.RDMACM().CreateID(bch, nil, rdmacm.PSTCP)
			at := netip.AddrPortFrom(b.addrs[0], 4791)
			if err := l.BindAddr(at); err != nil {
				t.Fatal(err)
			}
			if err := l.Listen(1); err != nil {
				t.Fatal(err)
			}
			cl, _ := a.f.RDMACM().CreateID(ach, nil, rdmacm.PSTCP)
			if err := cl.ResolveAddr(netip.AddrPort{}, at, time.Second); err != nil {
				t.Fatal(err)
			}
			tryEvent(t, w, ach, rdmacm.EventAddrResolved)
			if got := cl.LocalAddr().Addr(); got != a.addrs[0] {
				t.Errorf("the client left from %v, want host A's %v", got, a.addrs[0])
			}
			if err := cl.ResolveRoute(time.Second); err != nil {
				t.Fatal(err)
			}
			tryEvent(t, w, ach, rdmacm.EventRouteResolved)
			attr := verbs.QPInitAttr{Type: verbs.QPTypeRC, Cap: verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}}
			if err := cl.CreateQP(nil, &attr); err != nil {
				t.Fatal(err)
			}
			if err := cl.Connect(&rdmacm.ConnParam{PrivateData: []byte("A"), RetryCount: 7, RNRRetryCount: 7}); err != nil {
				t.Fatal(err)
			}
			req := tryEvent(t, w, bch, rdmacm.EventConnectRequest)
			srv := req.ID()
			sattr := verbs.QPInitAttr{Type: verbs.QPTypeRC, Cap: attr.Cap}
			if err := srv.CreateQP(nil, &sattr); err != nil {
				t.Fatal(err)
			}
			if err := srv.Accept(nil); err != nil {
				t.Fatal(err)
			}
			tryEvent(t, w, ach, rdmacm.EventEstablished)
			tryEvent(t, w, bch, rdmacm.EventEstablished)

			buf := make([]byte, 16)
			rmr, _ := srv.PD().RegMR(buf, verbs.AccessLocalWrite)
			smr, _ := cl.PD().RegMR([]byte("over the wire"), 0)
			if _, err := srv.QP().PostRecv([]verbs.RecvWR{{WRID: 1, SGList: []verbs.SGE{{Addr: rmr.Addr(), Length: 16, LKey: rmr.LKey()}}}}); err != nil {
				t.Fatal(err)
			}
			if _, err := cl.QP().PostSend([]verbs.SendWR{{WRID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
				SGList: []verbs.SGE{{Addr: smr.Addr(), Length: 13, LKey: smr.LKey()}}}}); err != nil {
				t.Fatal(err)
			}
			w.pump(t)
			wcs := make([]verbs.WC, 1)
			if n, _ := srv.RecvCQ().Poll(wcs); n != 1 || wcs[0].Status != verbs.WCSuccess || string(buf[:13]) != "over the wire" {
				t.Fatalf("the SEND across fabrics: %d completion(s) %+v, data %q", n, wcs[0], buf)
			}
			if err := cl.Disconnect(); err != nil {
				t.Fatal(err)
			}
			tryEvent(t, w, bch, rdmacm.EventDisconnected)
			if err := srv.Disconnect(); err != nil {
				t.Fatal(err)
			}
			tryEvent(t, w, ach, rdmacm.EventDisconnected)
			rmr.Dereg()
			smr.Dereg()
			for _, id := range []rdmacm.ID{cl, srv} {
				if err := id.DestroyQP(); err != nil {
					t.Fatal(err)
				}
				if err := id.Destroy(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if err := l.Destroy(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}
