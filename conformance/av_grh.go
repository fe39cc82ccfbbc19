package conformance

import (
	"encoding/binary"
	"fmt"

	"github.com/verbsim/verbsim/verbs"
)

// What a UD receiver reads in the 40 bytes before the payload (AV-05): the
// network header the datagram arrived with, built from the sender's
// address vector: its traffic class, hop limit and flow label (reading A;
// under Profile.NoFlowLabel, rxe's, the flow label is 0), between the
// sender's and the receiver's GIDs. On InfiniBand it is the IBA GRH (next
// header 0x1B, PayLen the bytes after it up to the ICRC); on RoCE v2 the
// IPv6 header (next header UDP, the payload length counting the UDP header
// too) or, between IPv4-mapped GIDs, 20 undefined bytes and the IPv4
// header (TOS the traffic class, TTL the hop limit, protocol UDP, a valid
// checksum).

// avGRHCases are the cases of av_grh.go.
var avGRHCases = []Case{
	{"AV-05", "a UD receive's GRH carries the AH's traffic class, hop limit and flow label", udGRHFields},
}

// grhWant is what a received GRH must say.
type grhWant struct {
	tclass, hop uint8
	flow        uint32
	sgid, dgid  [16]byte
	ethernet    bool // the receiving port is RoCE
	transport   int  // the datagram's bytes from its BTH to its ICRC
}

// udTransportBytes is the length of a UD datagram of n payload bytes from
// its BTH to its ICRC: BTH 12, DETH 8, the immediate 4, the payload padded
// to 4 bytes, ICRC 4.
func udTransportBytes(n int, imm bool) int {
	l := 12 + 8 + n + (-n & 3) + 4
	if imm {
		l += 4
	}
	return l
}

// v4Mapped reports whether g is ::ffff:a.b.c.d.
func v4Mapped(g [16]byte) bool {
	return [12]byte(g[:12]) == [12]byte{10: 0xff, 11: 0xff}
}

// checkGRH returns what is wrong with grh, the first 40 bytes of a UD
// receive buffer, against w, or "".
func checkGRH(grh []byte, w grhWant) string {
	be := binary.BigEndian
	if w.ethernet && v4Mapped(w.sgid) && v4Mapped(w.dgid) {
		h := grh[20:40]
		var sum uint32
		for i := 0; i < 20; i += 2 {
			sum += uint32(be.Uint16(h[i:]))
		}
		for sum>>16 != 0 {
			sum = sum&0xffff + sum>>16
		}
		switch {
		case h[0] != 0x45:
			return fmt.Sprintf("RoCE v2 IPv4: version/IHL %#x, want 0x45", h[0])
		case h[1] != w.tclass:
			return fmt.Sprintf("RoCE v2 IPv4: TOS %#x, want the traffic class %#x", h[1], w.tclass)
		case int(be.Uint16(h[2:])) != 20+8+w.transport:
			return fmt.Sprintf("RoCE v2 IPv4: total length %d, want %d", be.Uint16(h[2:]), 20+8+w.transport)
		case h[8] != w.hop:
			return fmt.Sprintf("RoCE v2 IPv4: TTL %d, want the hop limit %d", h[8], w.hop)
		case h[9] != 17:
			return fmt.Sprintf("RoCE v2 IPv4: protocol %d, want UDP (17)", h[9])
		case sum != 0xffff:
			return fmt.Sprintf("RoCE v2 IPv4: the header checksum %#x does not verify", be.Uint16(h[10:]))
		case [4]byte(h[12:16]) != [4]byte(w.sgid[12:]) || [4]byte(h[16:20]) != [4]byte(w.dgid[12:]):
			return fmt.Sprintf("RoCE v2 IPv4: addresses %v -> %v, want the GIDs' %v -> %v", h[12:16], h[16:20], w.sgid[12:], w.dgid[12:])
		}
		return ""
	}
	vtf := be.Uint32(grh)
	next, plen := byte(0x1b), w.transport
	if w.ethernet {
		next, plen = 17, w.transport+8
	}
	switch {
	case vtf>>28 != 6:
		return fmt.Sprintf("IP version %d, want 6", vtf>>28)
	case uint8(vtf>>20) != w.tclass:
		return fmt.Sprintf("traffic class %#x, want %#x", uint8(vtf>>20), w.tclass)
	case vtf&0xfffff != w.flow:
		return fmt.Sprintf("flow label %#x, want %#x", vtf&0xfffff, w.flow)
	case int(be.Uint16(grh[4:])) != plen:
		return fmt.Sprintf("payload length %d, want %d", be.Uint16(grh[4:]), plen)
	case grh[6] != next:
		return fmt.Sprintf("next header %#x, want %#x", grh[6], next)
	case grh[7] != w.hop:
		return fmt.Sprintf("hop limit %d, want %d", grh[7], w.hop)
	case [16]byte(grh[8:24]) != w.sgid || [16]byte(grh[24:40]) != w.dgid:
		return fmt.Sprintf("GIDs %x -> %x, want %x -> %x", grh[8:24], grh[24:40], w.sgid, w.dgid)
	}
	return ""
}

// udGRHFields sends a SEND and a SEND_WITH_IMM through a global AH with
// a traffic class, hop limit and flow label of its own and reads the GRH the
// receiver got.
func udGRHFields(t *tester, e *env) {
	w := newWire(t, e)
	a, b := w.connect(verbs.QPTypeUD, w.opts())
	av := avTo(w.b, true)
	av.GRH.TrafficClass, av.GRH.HopLimit, av.GRH.FlowLabel = 0xb8, 9, 0x12345
	ah, err := w.a.pd.CreateAH(av)
	if err != nil {
		t.Fatalf("ibv_create_ah(traffic_class 0xb8, hop_limit 9, flow_label 0x12345): %v", err)
	}
	t.Cleanup(func() { _ = ah.Destroy() })
	want := grhWant{tclass: 0xb8, hop: 9, flow: 0x12345, sgid: w.a.port.GID, dgid: w.b.port.GID, ethernet: w.b.port.Ethernet}
	if e.Profile.NoFlowLabel {
		want.flow = 0
	}
	copy(a.s.buf, "datagram")
	for i, op := range []verbs.WROpcode{verbs.WRSend, verbs.WRSendWithImm} {
		n := 3 + 2*i
		off := 1000 * (i + 1)
		id := uint64(i + 1)
		what := fmt.Sprintf("a UD %v of %d bytes through an AH with a GRH", op, n)
		b.recvAt(what, id, off, 100)
		r := datagram(sendWR(id, op, a.s.sge(0, n)), ah, b)
		r.Imm = 0x1234
		a.post(what, r)
		w.await(a.scq, 1, what+": sender")
		c := w.await(b.rcq, 1, what+": receiver")[0]
		if !b.want(what, c, id, verbs.WCSuccess) {
			continue
		}
		if c.WCFlags&verbs.WCGRH == 0 {
			t.Errorf("%s: the receive completion has no IBV_WC_GRH (WC-12)", what)
			continue
		}
		want.transport = udTransportBytes(n, op == verbs.WRSendWithImm)
		if why := checkGRH(b.s.buf[off:off+40], want); why != "" {
			t.Errorf("%s (traffic_class 0xb8, hop_limit 9, flow_label 0x12345; port Ethernet: %v): %s; the 40 bytes: % x", what, want.ethernet, why, b.s.buf[off:off+40])
		}
	}
}
