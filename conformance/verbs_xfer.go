package conformance

import "github.com/verbsim/verbsim/verbs"

// Optional capabilities that the transport cases (xfer_*.go) use. Each is
// found by type assertion, like Injector and LimitedDevice; a device without
// one runs the cases that need it in a weaker form (or not at all), and the
// case says so where it matters.

// PeerDevice is an optional capability of a Device: another adapter on the
// same fabric, so that traffic crosses from one device to the other. The
// peer shares the receiver's clock, faults and profile. Without it (or when
// Peer fails) the transport cases connect two QPs of the one device
// (loopback), which every adapter supports.
type PeerDevice interface {
	Peer() (Device, error)
}

// Clock is an optional capability of a Device whose time is virtual: one
// tick is one nanosecond of the adapter's time, and nothing that waits for
// time (an ACK timeout, an RNR wait) happens until the clock moves. Cases
// that need timers to fire move it; on a device without a Clock they wait in
// wall time, bounded by Patience, and skip the checks that measure time.
type Clock interface {
	// Tick moves the clock n ticks forward, running everything due on the
	// way.
	Tick(n uint64)
	// RunUntilIdle advances from timer to timer until nothing is pending,
	// or until limit ticks have passed (0: no limit); it reports whether
	// the device is idle.
	RunUntilIdle(limit uint64) bool
}

// Faults is an optional capability of a Device: seeded packet faults on
// the fabric (each probability in [0, 1]; zeros switch them off). Cases
// about retransmission (XFER-25, XFER-26) use it; without it they run on a
// clean wire.
type Faults interface {
	SetFaults(drop, duplicate, delay float64) error
}

// LinkControl is an optional capability of a Device: taking a port's link
// down or up, as a cable pull would (ASYNC-16).
type LinkControl interface {
	SetPortState(port uint8, up bool) error
}

// portInfo holds the fields of struct ibv_port_attr (and GID index 0 of
// ibv_query_gid) that connecting QPs and sizing messages need.
type portInfo struct {
	Active    bool      // state is IBV_PORT_ACTIVE
	LID       uint16    // lid: 0 on Ethernet (RoCE)
	GID       [16]byte  // GID table entry 0
	ActiveMTU verbs.MTU // active_mtu: the MTU of UD messages (XFER-20)
	MaxMsgSz  uint32    // max_msg_sz (XFER-23)
	Ethernet  bool      // link_layer is IBV_LINK_LAYER_ETHERNET: paths must be global
}

// queryPortInfo reads port of c with ibv_query_port and ibv_query_gid, which
// is how a program learns the address its peer must use.
func queryPortInfo(c verbs.Context, port uint8) (portInfo, error) {
	pa, err := c.QueryPort(port)
	if err != nil {
		return portInfo{}, err
	}
	gid, err := c.QueryGID(port, 0)
	if err != nil {
		return portInfo{}, err
	}
	return portInfo{
		Active:    pa.State == verbs.PortActive,
		LID:       pa.LID,
		GID:       gid,
		ActiveMTU: pa.ActiveMTU,
		MaxMsgSz:  pa.MaxMsgSz,
		Ethernet:  pa.LinkLayer == verbs.LinkLayerEthernet,
	}, nil
}

// FatalInjector is an optional capability of a QP: making it hit a
// catastrophic work-queue error (ASYNC-08), as a fault would.
type FatalInjector interface {
	InjectFatal() error
}

// StatusForcer is an optional capability of a QP: making the next
// completion of one of its work requests fail with a given error status, as
// a fault of the adapter would. The QP then reacts as to any failed request
// (an RC QP goes to ERR and the rest of its queues is flushed). With it the
// suite checks how the statuses that no traffic produces (WC-S03, S06..S08,
// S14..S21) reach the consumer; without it those cases log and end.
type StatusForcer interface {
	// ForceStatus makes the next completion of the send request (or, with
	// recv, the receive request) whose wr_id is wrID complete with st.
	ForceStatus(wrID uint64, recv bool, st verbs.WCStatus) error
}

// Forger is an optional capability of a Device: putting on its fabric a
// packet that no QP of the case sent, as a buggy or hostile adapter would
// (XFER-27, XFER-34, XFER-35). The packet arrives at the port that has its
// destination address, after whatever is already under way, as a packet
// from another adapter. Cases that play the hostile peer need it; without
// it they log that they are not checked.
type Forger interface {
	Forge(p ForgedPacket) error
}

// ForgedKind is what a forged packet carries.
type ForgedKind uint8

// The kinds of forged packets.
const (
	ForgedSend     ForgedKind = iota + 1 // a SEND packet
	ForgedWrite                          // an RDMA WRITE packet
	ForgedACK                            // an ACK
	ForgedNAKSeq                         // a NAK PSN sequence error
	ForgedReadResp                       // an RDMA READ response packet
)

// ForgedPacket describes a forged packet: a request or an acknowledgement
// of an RC or UC connection (Transport) from QP SrcQPN at address SLID (and
// SGID when Global) to QP DstQPN at DLID (DGID).
type ForgedPacket struct {
	Kind        ForgedKind
	Transport   verbs.QPType
	Op          verbs.WROpcode // of a request: SEND, WRITE or their WITH_IMM forms
	First, Last bool
	SrcQPN      uint32
	DstQPN      uint32
	PSN         uint32
	Imm         uint32
	RemoteAddr  uint64 // of a WRITE's first packet
	RKey        uint32
	DMALen      uint32
	Payload     []byte
	SLID, DLID  uint16
	Global      bool
	SGID, DGID  [16]byte
}

// TrafficProfile states the readings a fabric's devices follow and the
// properties of the fabric the state machine relies on. The properties are
// not readings of any rule: they say how the fabric is driven and what it
// may do to packets.
type TrafficProfile struct {
	// Readings are the readings the devices follow (Device.Profile),
	// embedded. The traffic model consults RecvTooSmallRemInvReq (XFER-05),
	// SendInvErrAcked (XFER-29), SendWCImm (WC-13), NoQPEvents (ASYNC-11)
	// and FreeSlotOnRetire (QP-29, QP-31).
	verbs.Readings
	// Settles: before a verb returns, the fabric has done everything that
	// needs no time to pass (verbsim's Auto mode; docs/time.md). False:
	// completions are only required once RunUntilIdle has run.
	Settles bool
	// SyncFlush: entering ERR flushes before the verb returns; false: by
	// the next RunUntilIdle (FLUSH-13).
	SyncFlush bool
	// UDReorder and UDDuplicate: with faults, a UD datagram may be
	// overtaken by a later one of the same sender, or arrive twice. The rules
	// promise neither order nor at-most-once delivery for UD.
	UDReorder, UDDuplicate bool
	// MTU is the active MTU of every port in bytes. The state machine sends
	// UD datagrams up to MTU+40 bytes (XFER-20) and RC and UC messages of up
	// to 640 bytes, so an MTU of 256 makes them span packets.
	MTU int
}

// TrafficFabric is a fabric of two or more adapters whose ports reach one
// another, and the clock the test moves. Port 1 of each device is used.
type TrafficFabric interface {
	// Devices returns the adapters.
	Devices() []Device
	// Address returns the address vector of port 1 of device dev, as an AH
	// or an INIT→RTR modify names it.
	Address(dev int) verbs.AHAttr
	// Tick lets n nanoseconds of fabric time pass.
	Tick(n uint64)
	// RunUntilIdle lets time pass until nothing is pending, or until limit
	// nanoseconds have passed, and reports whether the fabric is idle.
	RunUntilIdle(limit uint64) bool
	// TrafficProfile returns the readings the fabric follows.
	TrafficProfile() TrafficProfile
	// Close releases the fabric.
	Close() error
}

// NewTrafficFabric makes a fresh fabric for one run of
// the traffic state machine (conformance/ops). seed seeds every choice the fabric makes; with
// faults it drops, duplicates and delays packets.
type NewTrafficFabric func(seed uint64, faults bool) (TrafficFabric, error)
