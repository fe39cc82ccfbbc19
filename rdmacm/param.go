package rdmacm

import (
	"net/netip"

	"github.com/verbsim/verbsim/verbs"
)

// ConnParam is struct rdma_conn_param: what rdma_connect and rdma_accept
// send, and what the events of a connected (RDMA_PS_TCP, RDMA_PS_IB) ID
// report.
type ConnParam struct {
	// PrivateData is copied into the CM message; an event's PrivateData is
	// the whole private data field of the message that caused it, the
	// sender's bytes followed by zeros (CM-33). The limits: 56 bytes for
	// rdma_connect, 196 for rdma_accept, 148 for rdma_reject (CM-13,
	// CM-16, CM-19).
	PrivateData []byte
	// ResponderResources and InitiatorDepth are the RDMA read and atomic
	// depths (MaxRespRes and MaxInitDepth: as many as the device allows).
	// In an event they are the peer's, turned round: the requester's
	// initiator depth is the passive side's responder resources.
	ResponderResources uint8
	InitiatorDepth     uint8
	FlowControl        uint8
	RetryCount         uint8 // ignored by rdma_accept; capped at 7
	RNRRetryCount      uint8 // capped at 7
	// SRQ and QPNum describe the QP of an ID that has none of its own
	// (rdma_create_qp was not called); ignored otherwise.
	SRQ   uint8
	QPNum uint32
}

// UDParam is struct rdma_ud_param: what the events of a UD (RDMA_PS_UDP) ID
// report: how to address the peer or the multicast group.
type UDParam struct {
	PrivateData []byte       // as in ConnParam (CM-33)
	AHAttr      verbs.AHAttr // the address vector of the peer or group
	QPNum       uint32       // the peer's QP number, or 0xFFFFFF for a group
	QKey        uint32       // the Q_Key to send with
}

// AddrInfo is struct rdma_addrinfo: one answer of rdma_getaddrinfo, and the
// hints it takes. Route and connect data are not offered.
type AddrInfo struct {
	Flags     AIFlags
	Family    int          // AFInet or AFInet6 (AFUnspec in hints: either)
	QPType    verbs.QPType // RC or UD
	PortSpace PortSpace
	Src       netip.AddrPort // ai_src_addr; invalid when there is none
	Dst       netip.AddrPort // ai_dst_addr; invalid for a passive answer
	// SrcCanonName and DstCanonName are ai_src_canonname and
	// ai_dst_canonname.
	SrcCanonName, DstCanonName string
}

// Route is what an ID's route (struct rdma_route and its path record) says
// once rdma_resolve_route has completed, or, on the passive side, once the
// connection request arrived.
type Route struct {
	SGID, DGID     verbs.GID
	SLID, DLID     uint16 // 0 on RoCE
	PKey           uint16
	SL             uint8
	TrafficClass   uint8
	HopLimit       uint8
	MTU            verbs.MTU
	PacketLifeTime uint8 // 4.096 µs × 2^n
	NumPaths       int   // 0 until resolved, then 1
}
