package sim_test

import (
	"bytes"
	"testing"
	"testing/synctest"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// The GRH a UD receiver reads carries the sender's address vector: its
// traffic class, hop limit and flow label (AV-05), in the form of the
// receiving port's link: the IBA GRH on InfiniBand, the IPv6 header on RoCE
// v2, or the IPv4 header in the last 20 bytes between IPv4-mapped GIDs.
// Connected QPs carry the fields of their path on every packet.

// grhRoute is the route of the UD datagrams of TestUDGRH_AV05.
var grhRoute = verbs.GlobalRoute{TrafficClass: 0xb8, HopLimit: 9, FlowLabel: 0x12345}

// v4GID is ::ffff:10.0.0.n.
func v4GID(n byte) verbs.GID { return verbs.GID{10: 0xff, 11: 0xff, 12: 10, 15: n} }

// grhWorld is two devices whose ports have the given link layer and, when
// v4, an IPv4-mapped GID at index 1; a sends to b.
type grhWorld struct {
	f    *sim.Fabric
	a, b *end
	av   verbs.AHAttr
}

func newGRHWorld(t *testing.T, p sim.Profile, ll verbs.LinkLayer, v4 bool) *grhWorld {
	t.Helper()
	dev := func(name string, n byte) sim.DeviceConfig {
		pc := sim.PortConfig{Attr: verbs.PortAttr{LinkLayer: ll}}
		if v4 {
			pc.GIDs = []verbs.GID{{}, v4GID(n)}
		}
		return sim.DeviceConfig{Name: name, Ports: []sim.PortConfig{pc}}
	}
	f, err := sim.NewFabric(sim.Config{Profile: p, Devices: []sim.DeviceConfig{dev("a", 1), dev("b", 2)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	w := &grhWorld{f: f, a: newEnd(t, f.Devices()[0], verbs.QPTypeUD, 1<<12), b: newEnd(t, f.Devices()[1], verbs.QPTypeUD, 1<<12)}
	for _, e := range []*end{w.a, w.b} {
		if err := sim.ReadyUD(e.q, 7); err != nil {
			t.Fatal(err)
		}
	}
	w.av = verbs.AHAttr{PortNum: 1, IsGlobal: true, GRH: grhRoute}
	w.av.GRH.DGID, _ = w.b.ctx.QueryGID(1, 0)
	if v4 {
		w.av.GRH.DGID, w.av.GRH.SGIDIndex = v4GID(2), 1
	}
	if ll == verbs.LinkLayerInfiniBand {
		pa, _ := w.b.ctx.QueryPort(1)
		w.av.DLID = pa.LID
	}
	return w
}

// grhOf sends "abc" (and, with imm, a SEND_WITH_IMM) from a to b through
// w.av and returns the first 40 bytes of b's receive buffer.
func (w *grhWorld) grhOf(t *testing.T, imm bool) []byte {
	t.Helper()
	ah, err := w.a.pd.CreateAH(w.av)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.b.q.PostRecv([]verbs.RecvWR{{WRID: 1, SGList: []verbs.SGE{w.b.sge(0, 100)}}}); err != nil {
		t.Fatal(err)
	}
	copy(w.a.buf, "abc")
	op := verbs.WRSend
	if imm {
		op = verbs.WRSendWithImm
	}
	if _, err := w.a.q.PostSend([]verbs.SendWR{{WRID: 1, Opcode: op, Imm: 5, SGList: []verbs.SGE{w.a.sge(0, 3)},
		AH: ah, RemoteQPN: w.b.q.Num(), RemoteQKey: 7}}); err != nil {
		t.Fatal(err)
	}
	w.f.Stabilize()
	if c := w.b.poll(t, 1)[0]; c.Status != verbs.WCSuccess || c.WCFlags&verbs.WCGRH == 0 || c.ByteLen != 43 {
		t.Fatalf("receive %v", &c)
	}
	return w.b.buf[:40]
}

func TestUDGRH_AV05(t *testing.T) {
	ibA, ibB := func() (verbs.GID, verbs.GID) {
		w := newGRHWorld(t, sim.DefaultProfile(), verbs.LinkLayerInfiniBand, false)
		a, _ := w.a.ctx.QueryGID(1, 0)
		b, _ := w.b.ctx.QueryGID(1, 0)
		return a, b
	}()
	ethA, ethB := func() (verbs.GID, verbs.GID) {
		w := newGRHWorld(t, sim.DefaultProfile(), verbs.LinkLayerEthernet, false)
		a, _ := w.a.ctx.QueryGID(1, 0)
		b, _ := w.b.ctx.QueryGID(1, 0)
		return a, b
	}()
	ipv6 := func(next byte, plen uint16, flow uint32, s, d verbs.GID) []byte {
		h := []byte{0x6b, 0x80 | byte(flow>>16), byte(flow >> 8), byte(flow), byte(plen >> 8), byte(plen), next, 9}
		return append(append(h, s[:]...), d[:]...)
	}
	cases := []struct {
		name string
		p    sim.Profile
		ll   verbs.LinkLayer
		v4   bool
		imm  bool
		want []byte
	}{
		// IBA GRH: PayLen is BTH 12 + DETH 8 + 3 bytes + 1 of pad + ICRC 4.
		{"InfiniBand", sim.DefaultProfile(), verbs.LinkLayerInfiniBand, false, false, ipv6(0x1b, 28, 0x12345, ibA, ibB)},
		{"InfiniBand, with immediate", sim.DefaultProfile(), verbs.LinkLayerInfiniBand, false, true, ipv6(0x1b, 32, 0x12345, ibA, ibB)},
		// RoCE v2 IPv6: the payload length counts the UDP header (8).
		{"RoCE v2 IPv6", sim.DefaultProfile(), verbs.LinkLayerEthernet, false, false, ipv6(17, 36, 0x12345, ethA, ethB)},
		// rxe sends no flow label (AV-05 B).
		{"RoCE v2 IPv6, rxe", sim.RXEProfile(), verbs.LinkLayerEthernet, false, false, ipv6(17, 36, 0, ethA, ethB)},
		// RoCE v2 IPv4: 20 zero bytes, then the IPv4 header: TOS 0xb8,
		// total length 20+8+28, DF, TTL 9, UDP, checksum 0x5cfb,
		// 10.0.0.1 -> 10.0.0.2.
		{"RoCE v2 IPv4", sim.DefaultProfile(), verbs.LinkLayerEthernet, true, false, append(make([]byte, 20),
			0x45, 0xb8, 0, 56, 0, 0, 0x40, 0, 9, 17, 0x5c, 0xfb, 10, 0, 0, 1, 10, 0, 0, 2)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newGRHWorld(t, c.p, c.ll, c.v4)
			if got := w.grhOf(t, c.imm); !bytes.Equal(got, c.want) {
				t.Errorf("the GRH of a UD receive:\n got % x\nwant % x", got, c.want)
			}
		})
	}
}

// TestUDGRHAcrossFabrics_AV05: frames carry the GRH's fields, so a UD
// receiver on another fabric (another process) reads the sender's.
func TestUDGRHAcrossFabrics_AV05(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &memWire{}
		fa, _ := w.attach(t, "a", 1, true, sim.Faults{}, 1)
		fb, _ := w.attach(t, "b", 2, true, sim.Faults{}, 2)
		a, b := newEnd(t, fa.Devices()[0], verbs.QPTypeUD, 1<<12), newEnd(t, fb.Devices()[0], verbs.QPTypeUD, 1<<12)
		for _, e := range []*end{a, b} {
			if err := sim.ReadyUD(e.q, 7); err != nil {
				t.Fatal(err)
			}
		}
		av := verbs.AHAttr{PortNum: 1, IsGlobal: true, GRH: grhRoute}
		av.GRH.DGID, _ = b.ctx.QueryGID(1, 0)
		ah, err := a.pd.CreateAH(av)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.q.PostRecv([]verbs.RecvWR{{WRID: 1, SGList: []verbs.SGE{b.sge(0, 100)}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := a.q.PostSend([]verbs.SendWR{{WRID: 1, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(0, 3)},
			AH: ah, RemoteQPN: b.q.Num(), RemoteQKey: 7}}); err != nil {
			t.Fatal(err)
		}
		a.waitWCs(t, 1)
		if c := b.waitWCs(t, 1)[0]; c.Status != verbs.WCSuccess {
			t.Fatalf("receive %v", &c)
		}
		if g := b.buf[:8]; !bytes.Equal(g, []byte{0x6b, 0x81, 0x23, 0x45, 0, 36, 17, 9}) {
			t.Errorf("the first 8 bytes of the GRH across fabrics: % x, want 6b 81 23 45 00 24 11 09", g)
		}
	})
}

// TestPathGRH_AV05: every packet of a connected QP with a global path
// carries its path's traffic class, hop limit and flow label: the requests
// those of the requester's path, the acknowledgements the responder's.
func TestPathGRH_AV05(t *testing.T) {
	for _, typ := range []verbs.QPType{verbs.QPTypeRC, verbs.QPTypeUC} {
		t.Run(typ.String(), func(t *testing.T) {
			eth := sim.PortConfig{Attr: verbs.PortAttr{LinkLayer: verbs.LinkLayerEthernet}}
			f, err := sim.NewFabric(sim.Config{Devices: []sim.DeviceConfig{{Name: "a", Ports: []sim.PortConfig{eth}}, {Name: "b", Ports: []sim.PortConfig{eth}}}})
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			a, b := newEnd(t, f.Devices()[0], typ, 1<<12), newEnd(t, f.Devices()[1], typ, 1<<12)
			routes := map[*end]verbs.GlobalRoute{a: {TrafficClass: 0x20, HopLimit: 3, FlowLabel: 0xabcde}, b: {TrafficClass: 0x48, HopLimit: 200, FlowLabel: 7}}
			for _, x := range [][2]*end{{a, b}, {b, a}} {
				q, peer := x[0], x[1]
				g := routes[q]
				g.DGID, _ = peer.ctx.QueryGID(1, 0)
				connectPath(t, q, peer, verbs.AHAttr{PortNum: 1, IsGlobal: true, GRH: g})
			}
			var seen []sim.Packet
			if _, err := f.InjectPacketFault(sim.PacketFault{Action: sim.FaultDrop, Match: func(p sim.Packet) bool {
				seen = append(seen, p)
				return false
			}}); err != nil {
				t.Fatal(err)
			}
			if _, err := b.q.PostRecv([]verbs.RecvWR{{WRID: 1, SGList: []verbs.SGE{b.sge(0, 4096)}}}); err != nil {
				t.Fatal(err)
			}
			if _, err := a.q.PostSend([]verbs.SendWR{{WRID: 1, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(0, 3000)}}}); err != nil {
				t.Fatal(err)
			}
			f.Stabilize()
			a.poll(t, 1)
			b.poll(t, 1)
			if len(seen) == 0 {
				t.Fatal("no packet seen")
			}
			for _, p := range seen {
				g := routes[a]
				if p.From == "b" {
					g = routes[b]
				}
				if !p.Global || p.TrafficClass != g.TrafficClass || p.HopLimit != g.HopLimit || p.FlowLabel != g.FlowLabel {
					t.Errorf("%v %v from %s: GRH %v tclass %#x hop %d flow %#x, want its path's %#x %d %#x",
						p.Kind, p.PSN, p.From, p.Global, p.TrafficClass, p.HopLimit, p.FlowLabel, g.TrafficClass, g.HopLimit, g.FlowLabel)
				}
			}
		})
	}
}

// connectPath takes q to RTS connected to peer along path av.
func connectPath(t *testing.T, q, peer *end, av verbs.AHAttr) {
	t.Helper()
	access := verbs.AccessRemoteWrite
	rtr := verbs.QPAttrState | verbs.QPAttrAV | verbs.QPAttrPathMTU | verbs.QPAttrDestQPN | verbs.QPAttrRQPSN
	rts := verbs.QPAttrState | verbs.QPAttrSQPSN
	if q.q.Type() == verbs.QPTypeRC {
		rtr |= verbs.QPAttrMaxDestRDAtomic | verbs.QPAttrMinRNRTimer
		rts |= verbs.QPAttrTimeout | verbs.QPAttrRetryCnt | verbs.QPAttrRNRRetry | verbs.QPAttrMaxQPRDAtomic
	}
	for _, m := range []struct {
		a    verbs.QPAttr
		mask verbs.QPAttrMask
	}{
		{verbs.QPAttr{QPState: verbs.QPStateInit, PortNum: 1, QPAccessFlags: access}, verbs.QPAttrState | verbs.QPAttrPKeyIndex | verbs.QPAttrPort | verbs.QPAttrAccessFlags},
		{verbs.QPAttr{QPState: verbs.QPStateRTR, PathMTU: verbs.MTU1024, DestQPNum: peer.q.Num(), MaxDestRDAtomic: 1, MinRNRTimer: 1, AHAttr: av}, rtr},
		{verbs.QPAttr{QPState: verbs.QPStateRTS, Timeout: 14, RetryCnt: 7, RNRRetry: 7, MaxRDAtomic: 1}, rts},
	} {
		if err := q.q.Modify(&m.a, m.mask); err != nil {
			t.Fatal(err)
		}
	}
}
