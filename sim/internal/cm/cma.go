package cm

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// CMAHeaderSize is the size of the RDMA CM header (the kernel's struct
// cma_hdr) that rdma_connect puts in front of the application's private
// data in a REQ or SIDR_REQ when the ID is addressed by IP: what is left of
// the private data field for the application is 92 - 36 = 56 bytes in a
// REQ and 216 - 36 = 180 in a SIDR_REQ (CM-13, CM-25).
const CMAHeaderSize = 36

// CMAHeader is the RDMA CM header: the IP addresses of the connection and
// the requester's port. A listener bound to a specific address only takes
// requests whose Dst is that address.
type CMAHeader struct {
	SrcPort  uint16
	Src, Dst netip.Addr // both IPv4 or both IPv6
}

// Put writes the header into b[:CMAHeaderSize]: version 0, the IP version in
// the high nibble of the second byte, the port, then each address as 16
// bytes (an IPv4 address in the last four).
func (h CMAHeader) Put(b []byte) {
	clear(b[:CMAHeaderSize])
	ver := byte(6)
	if h.Src.Is4() {
		ver = 4
	}
	b[1] = ver << 4
	binary.BigEndian.PutUint16(b[2:], h.SrcPort)
	putIP(b[4:20], h.Src)
	putIP(b[20:36], h.Dst)
}

func putIP(b []byte, a netip.Addr) {
	if a.Is4() {
		v := a.As4()
		copy(b[12:], v[:])
		return
	}
	v := a.As16()
	copy(b, v[:])
}

// ParseCMAHeader reads the header at the front of private data.
func ParseCMAHeader(b []byte) (CMAHeader, error) {
	if len(b) < CMAHeaderSize {
		return CMAHeader{}, fmt.Errorf("cm: %d bytes of private data hold no RDMA CM header", len(b))
	}
	if b[0] != 0 {
		return CMAHeader{}, fmt.Errorf("cm: RDMA CM header version %d", b[0])
	}
	h := CMAHeader{SrcPort: binary.BigEndian.Uint16(b[2:])}
	switch b[1] >> 4 {
	case 4:
		h.Src = netip.AddrFrom4([4]byte(b[16:20]))
		h.Dst = netip.AddrFrom4([4]byte(b[32:36]))
	case 6:
		h.Src = netip.AddrFrom16([16]byte(b[4:20]))
		h.Dst = netip.AddrFrom16([16]byte(b[20:36]))
	default:
		return CMAHeader{}, fmt.Errorf("cm: RDMA CM header IP version %d", b[1]>>4)
	}
	return h, nil
}

// ServiceID is the service ID of port port in port space ps, as
// rdma_get_service_id forms it for an IP address: ps in bits 16..31, the
// port in bits 0..15.
func ServiceID(ps, port uint16) uint64 { return uint64(ps)<<16 | uint64(port) }

// SplitServiceID returns the port space and port of a service ID of the IP
// port spaces; ok is false for a service ID that is not of that form.
func SplitServiceID(sid uint64) (ps, port uint16, ok bool) {
	if sid>>32 != 0 {
		return 0, 0, false
	}
	return uint16(sid >> 16), uint16(sid), true
}
