package qp

import (
	"encoding/binary"

	"github.com/verbsim/verbsim/verbs"
)

// The 40 bytes a UD receive buffer starts with (XFER-21) hold the network
// header the datagram arrived with (AV-05), in one of three forms:
//
//   - InfiniBand: the IBA GRH: IP version 6, the traffic class and flow
//     label, PayLen (the bytes after the GRH up to the ICRC, inclusive),
//     next header 0x1B (an IBA transport header), the hop limit, the
//     source and destination GIDs.
//   - RoCE v2 over IPv6: the IPv6 header the datagram came in: the same
//     fields, but the payload length counts the UDP header too, and the
//     next header is UDP (17).
//   - RoCE v2 over IPv4 (both GIDs IPv4-mapped, ::ffff:a.b.c.d): the first
//     20 bytes are zero (the verbs leave them undefined) and the last 20
//     hold the IPv4 header: version 4, IHL 5, TOS the traffic class, the
//     total length, don't-fragment, TTL the hop limit, protocol UDP, a
//     valid header checksum, and the two addresses. This is the layout of
//     the kernel's union rdma_network_hdr and what libibverbs'
//     ibv_init_ah_from_wc decodes (an IPv4 header is recognised by its
//     checksum).
//
// The lengths count a UD packet's headers: BTH (12 bytes), DETH (8), the
// immediate data (4) when there is one, the payload padded to 4 bytes, and
// the ICRC (4).

const (
	bthLen    = 12
	dethLen   = 8
	immLen    = 4
	icrcLen   = 4
	udpLen    = 8
	ipv4Len   = 20
	nextIBA   = 0x1b // the GRH's next header: an IBA transport header
	nextUDP   = 17   // IPPROTO_UDP
	ipv4DF    = 0x4000
	grhIPv4At = grhLen - ipv4Len // where the IPv4 header starts
)

// ipv4Mapped reports whether g is an IPv4-mapped IPv6 address
// (::ffff:a.b.c.d), the form of a RoCE v2 GID of an IPv4 address.
func ipv4Mapped(g *[16]byte) bool {
	for _, b := range g[:10] {
		if b != 0 {
			return false
		}
	}
	return g[10] == 0xff && g[11] == 0xff
}

// udTransportLen is the length of p, a UD datagram, from its BTH to its
// ICRC inclusive.
func udTransportLen(p *Packet) int {
	n := len(p.Payload)
	pad := -n & 3
	l := bthLen + dethLen + n + pad + icrcLen
	if p.Op == verbs.WRSendWithImm {
		l += immLen
	}
	return l
}

// fillGRH writes into b the network header p arrived with at a port whose
// link layer is Ethernet (RoCE v2) or InfiniBand. p carries a GRH.
func fillGRH(b *[grhLen]byte, p *Packet, ethernet bool) {
	*b = [grhLen]byte{}
	l := udTransportLen(p)
	if ethernet && ipv4Mapped(&p.SGID) && ipv4Mapped(&p.DGID) {
		h := b[grhIPv4At:]
		h[0] = 4<<4 | ipv4Len/4
		h[1] = p.TClass
		binary.BigEndian.PutUint16(h[2:], uint16(ipv4Len+udpLen+l))
		binary.BigEndian.PutUint16(h[6:], ipv4DF)
		h[8], h[9] = p.HopLimit, nextUDP
		copy(h[12:16], p.SGID[12:])
		copy(h[16:20], p.DGID[12:])
		binary.BigEndian.PutUint16(h[10:], ipv4Checksum(h[:ipv4Len]))
		return
	}
	next := byte(nextIBA)
	if ethernet {
		next, l = nextUDP, l+udpLen
	}
	binary.BigEndian.PutUint32(b[0:], 6<<28|uint32(p.TClass)<<20|p.FlowLabel&flowLabelMask)
	binary.BigEndian.PutUint16(b[4:], uint16(l))
	b[6], b[7] = next, p.HopLimit
	copy(b[8:24], p.SGID[:])
	copy(b[24:40], p.DGID[:])
}

// ipv4Checksum is the IPv4 header checksum of h, whose checksum field is
// zero: the ones' complement of the ones' complement sum of its 16-bit
// words.
func ipv4Checksum(h []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(h); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}
