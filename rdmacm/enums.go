package rdmacm

import (
	"strconv"

	"github.com/verbsim/verbsim/verbs"
)

// EventType is the type of a connection manager event (enum
// rdma_cm_event_type), with the values of rdma-core 44's rdma_cma.h.
type EventType uint32

// The event types, in rdma_cma.h order.
const (
	EventAddrResolved    EventType = iota // RDMA_CM_EVENT_ADDR_RESOLVED
	EventAddrError                        // RDMA_CM_EVENT_ADDR_ERROR
	EventRouteResolved                    // RDMA_CM_EVENT_ROUTE_RESOLVED
	EventRouteError                       // RDMA_CM_EVENT_ROUTE_ERROR
	EventConnectRequest                   // RDMA_CM_EVENT_CONNECT_REQUEST
	EventConnectResponse                  // RDMA_CM_EVENT_CONNECT_RESPONSE
	EventConnectError                     // RDMA_CM_EVENT_CONNECT_ERROR
	EventUnreachable                      // RDMA_CM_EVENT_UNREACHABLE
	EventRejected                         // RDMA_CM_EVENT_REJECTED
	EventEstablished                      // RDMA_CM_EVENT_ESTABLISHED
	EventDisconnected                     // RDMA_CM_EVENT_DISCONNECTED
	EventDeviceRemoval                    // RDMA_CM_EVENT_DEVICE_REMOVAL
	EventMulticastJoin                    // RDMA_CM_EVENT_MULTICAST_JOIN
	EventMulticastError                   // RDMA_CM_EVENT_MULTICAST_ERROR
	EventAddrChange                       // RDMA_CM_EVENT_ADDR_CHANGE
	EventTimewaitExit                     // RDMA_CM_EVENT_TIMEWAIT_EXIT
)

var eventNames = [...]string{
	"RDMA_CM_EVENT_ADDR_RESOLVED", "RDMA_CM_EVENT_ADDR_ERROR", "RDMA_CM_EVENT_ROUTE_RESOLVED",
	"RDMA_CM_EVENT_ROUTE_ERROR", "RDMA_CM_EVENT_CONNECT_REQUEST", "RDMA_CM_EVENT_CONNECT_RESPONSE",
	"RDMA_CM_EVENT_CONNECT_ERROR", "RDMA_CM_EVENT_UNREACHABLE", "RDMA_CM_EVENT_REJECTED",
	"RDMA_CM_EVENT_ESTABLISHED", "RDMA_CM_EVENT_DISCONNECTED", "RDMA_CM_EVENT_DEVICE_REMOVAL",
	"RDMA_CM_EVENT_MULTICAST_JOIN", "RDMA_CM_EVENT_MULTICAST_ERROR", "RDMA_CM_EVENT_ADDR_CHANGE",
	"RDMA_CM_EVENT_TIMEWAIT_EXIT",
}

// String returns the C enumerator of the event type
// ("RDMA_CM_EVENT_ESTABLISHED"), or "RDMA_CM_EVENT_TYPE(n)" for a value
// outside the enum.
func (t EventType) String() string {
	if int(t) < len(eventNames) {
		return eventNames[t]
	}
	return "RDMA_CM_EVENT_TYPE(" + strconv.FormatUint(uint64(t), 10) + ")"
}

// Str returns what rdma_event_str returns: the enumerator's name, or
// "UNKNOWN EVENT" for a value outside the enum (CM-31).
func (t EventType) Str() string {
	if int(t) < len(eventNames) {
		return eventNames[t]
	}
	return "UNKNOWN EVENT"
}

// PortSpace is an RDMA port space (enum rdma_port_space): which service an
// ID offers, and so the transport of its QP (CM-01).
type PortSpace uint16

// The port spaces.
const (
	PSIPoIB PortSpace = 0x0002 // RDMA_PS_IPOIB: not simulated
	PSTCP   PortSpace = 0x0106 // RDMA_PS_TCP: reliable connected (RC)
	PSUDP   PortSpace = 0x0111 // RDMA_PS_UDP: unreliable datagram (UD) with SIDR and multicast
	PSIB    PortSpace = 0x013F // RDMA_PS_IB: any IB service; rdma_create_id makes it RC
)

// String returns the enumerator's name ("RDMA_PS_TCP"), or
// "PortSpace(0x...)" for another value.
func (ps PortSpace) String() string {
	switch ps {
	case PSIPoIB:
		return "RDMA_PS_IPOIB"
	case PSTCP:
		return "RDMA_PS_TCP"
	case PSUDP:
		return "RDMA_PS_UDP"
	case PSIB:
		return "RDMA_PS_IB"
	}
	return "PortSpace(0x" + strconv.FormatUint(uint64(ps), 16) + ")"
}

// QPType returns the QP type rdma_create_id gives an ID of the port space:
// UD for UDP and IPoIB, RC otherwise (CM-01). It does not say whether the
// port space is valid.
func (ps PortSpace) QPType() verbs.QPType {
	if ps == PSUDP || ps == PSIPoIB {
		return verbs.QPTypeUD
	}
	return verbs.QPTypeRC
}

// JoinFlags is how rdma_join_multicast_ex joins a group (enum
// rdma_cm_mc_join_flags).
type JoinFlags uint32

// The join flags.
const (
	JoinFullMember         JoinFlags = iota // RDMA_MC_JOIN_FLAG_FULLMEMBER: send and receive
	JoinSendOnlyFullMember                  // RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER: send only; the QP is not attached
	joinFlagReserved                        // RDMA_MC_JOIN_FLAG_RESERVED: the first invalid value
)

// Valid reports whether f is a join flag rdma_join_multicast_ex accepts.
func (f JoinFlags) Valid() bool { return f < joinFlagReserved }

// OptionLevel is the level argument of rdma_set_option.
type OptionLevel int

// The option levels.
const (
	OptionLevelID OptionLevel = 0 // RDMA_OPTION_ID
	OptionLevelIB OptionLevel = 1 // RDMA_OPTION_IB
)

// OptionName is the optname argument of rdma_set_option, relative to its
// level.
type OptionName int

// The options of rdma_cma.h, with the size of the value each takes.
const (
	OptionTOS        OptionName = 0 // RDMA_OPTION_ID_TOS: uint8_t
	OptionReuseAddr  OptionName = 1 // RDMA_OPTION_ID_REUSEADDR: int
	OptionAFOnly     OptionName = 2 // RDMA_OPTION_ID_AFONLY: int
	OptionAckTimeout OptionName = 3 // RDMA_OPTION_ID_ACK_TIMEOUT: uint8_t
	OptionIBPath     OptionName = 1 // RDMA_OPTION_IB_PATH (level IB): struct ibv_path_data[]
)

// Constants of rdma_cma.h.
const (
	UDPQKey      = 0x01234567 // RDMA_UDP_QKEY: the Q_Key of UDP port space QPs and groups
	MaxRespRes   = 0xFF       // RDMA_MAX_RESP_RES: "as many as the device allows"
	MaxInitDepth = 0xFF       // RDMA_MAX_INIT_DEPTH: likewise
)

// AIFlags are the ai_flags of struct rdma_addrinfo.
type AIFlags int

// The ai_flags rdma_getaddrinfo knows.
const (
	AIPassive     AIFlags = 0x1 // RAI_PASSIVE: the result is for a listener
	AINumericHost AIFlags = 0x2 // RAI_NUMERICHOST: node is a numeric address
	AINoRoute     AIFlags = 0x4 // RAI_NOROUTE: no route resolution
	AIFamily      AIFlags = 0x8 // RAI_FAMILY: ai_family is a hint for node
)

// Address families of struct rdma_addrinfo's ai_family, with Linux values.
const (
	AFUnspec = 0  // AF_UNSPEC
	AFInet   = 2  // AF_INET
	AFInet6  = 10 // AF_INET6
	AFIB     = 27 // AF_IB: not offered
)
