package sim

import (
	"errors"
	"fmt"
	"github.com/verbsim/verbsim/sim/internal/domain"
	"net"
	"syscall"

	"github.com/verbsim/verbsim/sim/internal/qp"
	"github.com/verbsim/verbsim/sim/verr"
)

// PortState is enum ibv_port_state, the logical state of a port.
type PortState uint32

// The values of enum ibv_port_state (verbs.h).
const (
	PortNOP         PortState = 0 // IBV_PORT_NOP: reserved, never reported
	PortDown        PortState = 1 // IBV_PORT_DOWN
	PortInit        PortState = 2 // IBV_PORT_INIT
	PortArmed       PortState = 3 // IBV_PORT_ARMED
	PortActive      PortState = 4 // IBV_PORT_ACTIVE
	PortActiveDefer PortState = 5 // IBV_PORT_ACTIVE_DEFER
)

var portStateNames = [...]string{"PORT_NOP", "PORT_DOWN", "PORT_INIT", "PORT_ARMED", "PORT_ACTIVE", "PORT_ACTIVE_DEFER"}

// String returns the name ibv_devinfo prints for the state, e.g.
// "PORT_ACTIVE".
func (s PortState) String() string {
	if int(s) < len(portStateNames) {
		return portStateNames[s]
	}
	return fmt.Sprintf("PortState(%d)", uint32(s))
}

// MTU is enum ibv_mtu: a path MTU as its code, 1 (256 bytes) to 5 (4096).
// It is the same type as qp.MTU, which a QP's path_mtu uses.
type MTU = qp.MTU

// The values of enum ibv_mtu (verbs.h).
const (
	MTU256  = qp.MTU256  // IBV_MTU_256
	MTU512  = qp.MTU512  // IBV_MTU_512
	MTU1024 = qp.MTU1024 // IBV_MTU_1024
	MTU2048 = qp.MTU2048 // IBV_MTU_2048
	MTU4096 = qp.MTU4096 // IBV_MTU_4096
)

// LinkLayer is ibv_port_attr.link_layer.
type LinkLayer uint8

// The IBV_LINK_LAYER_* values (verbs.h).
const (
	LinkLayerUnspecified LinkLayer = 0 // IBV_LINK_LAYER_UNSPECIFIED
	LinkLayerInfiniBand  LinkLayer = 1 // IBV_LINK_LAYER_INFINIBAND: LIDs address ports
	LinkLayerEthernet    LinkLayer = 2 // IBV_LINK_LAYER_ETHERNET (RoCE): no LIDs, GIDs address ports
)

// String returns "InfiniBand", "Ethernet" or "Unspecified".
func (l LinkLayer) String() string {
	switch l {
	case LinkLayerInfiniBand:
		return "InfiniBand"
	case LinkLayerEthernet:
		return "Ethernet"
	case LinkLayerUnspecified:
		return "Unspecified"
	}
	return fmt.Sprintf("LinkLayer(%d)", uint8(l))
}

// Bits of enum ibv_port_cap_flags (verbs.h) that the default ports report.
const (
	PortCapSysImageGUIDSup uint32 = 1 << 11 // IBV_PORT_SYS_IMAGE_GUID_SUP
	PortCapCMSup           uint32 = 1 << 16 // IBV_PORT_CM_SUP
	PortCapClientRegSup    uint32 = 1 << 25 // IBV_PORT_CLIENT_REG_SUP
	PortCapIPBasedGIDs     uint32 = 1 << 26 // IBV_PORT_IP_BASED_GIDS
)

// GID is a 128-bit global identifier, union ibv_gid in network byte order.
// It converts to and from [16]byte without a cast.
type GID [16]byte

// String formats the GID as an IPv6 address, as ibv_devinfo -v does.
func (g GID) String() string { return net.IP(g[:]).String() }

// IsZero reports whether every byte of g is zero (an unused table entry).
func (g GID) IsZero() bool { return g == GID{} }

// PortAttr holds the attributes of a port, modelled on struct
// ibv_port_attr (ibv_query_port).
type PortAttr struct {
	State        PortState // state
	MaxMTU       MTU       // max_mtu
	ActiveMTU    MTU       // active_mtu: at most MaxMTU
	GIDTblLen    int       // gid_tbl_len
	PortCapFlags uint32    // port_cap_flags (enum ibv_port_cap_flags)
	MaxMsgSz     uint32    // max_msg_sz: the longest message (XFER-23)
	PKeyTblLen   uint16    // pkey_tbl_len
	LID          uint16    // lid: base LID; 0 on Ethernet
	SMLID        uint16    // sm_lid: LID of the subnet manager; 0 on Ethernet
	LMC          uint8     // lmc: the port answers to LIDs [LID, LID+2^LMC)
	ActiveWidth  uint8     // active_width (IBV_WIDTH_4X = 2)
	ActiveSpeed  uint8     // active_speed (32: 25 Gb/s per lane)
	LinkLayer    LinkLayer // link_layer

	// The fields below complete struct ibv_port_attr of rdma-core 44
	// (QUERY-04). rdma-core 44 has no active_speed_ex.

	BadPKeyCntr   uint32 // bad_pkey_cntr: always 0 (verbsim counts no P_Key violations)
	QKeyViolCntr  uint32 // qkey_viol_cntr: always 0
	MaxVLNum      uint8  // max_vl_num: 1 VL0, 2 VL0-1, 3 VL0-3, 4 VL0-7, 5 VL0-14
	SMSL          uint8  // sm_sl
	SubnetTimeout uint8  // subnet_timeout
	InitTypeReply uint8  // init_type_reply
	// PhysState is phys_state; it follows State and cannot be configured:
	// PhysLinkUp unless the port is down, PhysDisabled when it is.
	PhysState     uint8
	Flags         uint8  // flags (IBV_QPF_GRH_REQUIRED = 1): 0, verbsim never demands a GRH on its own
	PortCapFlags2 uint16 // port_cap_flags2 (enum ibv_port_cap_flags2): 0
}

// The phys_state values QueryPort reports (IB_PORT_PHYS_STATE_* of the
// kernel, as ibv_devinfo prints them).
const (
	PhysDisabled uint8 = 3 // DISABLED: the port is down (a pulled cable, SetPortState)
	PhysLinkUp   uint8 = 5 // LINK_UP
)

// queried returns the attributes as ibv_query_port reports them, with
// phys_state following the logical state.
func (a PortAttr) queried() PortAttr {
	a.PhysState = PhysLinkUp
	if a.State == PortDown {
		a.PhysState = PhysDisabled
	}
	return a
}

// DefaultPortAttr returns the attributes of a default port: an active 4X
// InfiniBand port at 4096-byte MTU with 128 GIDs and 128 P_Keys, whose LID
// and SM LID the fabric assigns.
func DefaultPortAttr() PortAttr {
	return PortAttr{
		State:        PortActive,
		MaxMTU:       MTU4096,
		ActiveMTU:    MTU4096,
		GIDTblLen:    128,
		PortCapFlags: PortCapSysImageGUIDSup | PortCapCMSup | PortCapClientRegSup,
		MaxMsgSz:     1 << 30,
		PKeyTblLen:   128,
		MaxVLNum:     4,
		PhysState:    PhysLinkUp,
		ActiveWidth:  2,
		ActiveSpeed:  32,
		LinkLayer:    LinkLayerInfiniBand,
	}
}

// PortConfig describes one port. Zero fields of Attr take the values of
// DefaultPortAttr, adjusted to the link layer: an Ethernet (RoCE) port
// defaults to 256 GIDs, one P_Key, IP-based GIDs and no LIDs. LMC zero is
// kept; LID and SMLID zero on InfiniBand are assigned by the fabric.
type PortConfig struct {
	Attr PortAttr
	// GIDs are the first entries of the GID table. An empty or zero entry 0
	// becomes the port's link-local GID: fe80::/64 followed by the port GUID
	// (InfiniBand) or by the port GUID with its universal/local bit flipped
	// as an EUI-64 from a MAC address would be (Ethernet). The port GUID is
	// the node GUID plus the port number minus one.
	GIDs []GID
	// PKeys are the first entries of the P_Key table. Empty: one entry,
	// 0xffff, the default full-membership partition.
	PKeys []uint16
}

const (
	maxUnicastLID = 0xbfff
	maxGIDTblLen  = 1 << 12
)

func (c *PortConfig) fill() error {
	a := &c.Attr
	def := DefaultPortAttr()
	if a.LinkLayer == LinkLayerUnspecified {
		a.LinkLayer = def.LinkLayer
	}
	eth := a.LinkLayer == LinkLayerEthernet
	if eth {
		def.GIDTblLen, def.PKeyTblLen = 256, 1
		def.PortCapFlags = PortCapIPBasedGIDs | PortCapCMSup
	}
	orDefault(&a.State, def.State)
	orDefault(&a.MaxMTU, def.MaxMTU)
	orDefault(&a.ActiveMTU, a.MaxMTU)
	orDefault(&a.GIDTblLen, def.GIDTblLen)
	orDefault(&a.PortCapFlags, def.PortCapFlags)
	orDefault(&a.MaxMsgSz, def.MaxMsgSz)
	orDefault(&a.PKeyTblLen, def.PKeyTblLen)
	orDefault(&a.ActiveWidth, def.ActiveWidth)
	orDefault(&a.ActiveSpeed, def.ActiveSpeed)
	if eth {
		def.MaxVLNum = 1 // rxe reports one VL
	}
	orDefault(&a.MaxVLNum, def.MaxVLNum)
	a.PhysState = a.queried().PhysState // derived from State, not configured
	switch {
	case a.LinkLayer > LinkLayerEthernet:
		return fmt.Errorf("link_layer %d is not an IBV_LINK_LAYER value", a.LinkLayer)
	case a.State > PortActiveDefer:
		return fmt.Errorf("state %d is not an enum ibv_port_state value", a.State)
	case a.MaxMTU.Bytes() == 0 || a.ActiveMTU.Bytes() == 0:
		return fmt.Errorf("max_mtu %d or active_mtu %d is not an enum ibv_mtu value", a.MaxMTU, a.ActiveMTU)
	case a.ActiveMTU > a.MaxMTU:
		return fmt.Errorf("active_mtu %v is above max_mtu %v", a.ActiveMTU, a.MaxMTU)
	case a.GIDTblLen < 1 || a.GIDTblLen > maxGIDTblLen:
		return fmt.Errorf("gid_tbl_len %d is outside [1, %d]", a.GIDTblLen, maxGIDTblLen)
	case len(c.GIDs) > a.GIDTblLen:
		return fmt.Errorf("%d GIDs for gid_tbl_len=%d", len(c.GIDs), a.GIDTblLen)
	case len(c.PKeys) > int(a.PKeyTblLen):
		return fmt.Errorf("%d P_Keys for pkey_tbl_len=%d", len(c.PKeys), a.PKeyTblLen)
	case a.MaxVLNum > 5:
		return fmt.Errorf("max_vl_num %d is above 5 (VL0-14)", a.MaxVLNum)
	case a.LMC > 7:
		return fmt.Errorf("lmc %d is above 7", a.LMC)
	case eth && (a.LID != 0 || a.SMLID != 0 || a.LMC != 0):
		return errors.New("an Ethernet port has no LID, SM LID or LMC")
	case a.LID != 0 && (a.LID&(1<<a.LMC-1) != 0 || int(a.LID)+1<<a.LMC-1 > maxUnicastLID):
		return fmt.Errorf("lid %#x with lmc %d is not an aligned block of unicast LIDs", a.LID, a.LMC)
	case a.SMLID > maxUnicastLID:
		return fmt.Errorf("sm_lid %#x is not a unicast LID", a.SMLID)
	}
	return nil
}

// port is one port of a device. Its tables do not change after NewFabric.
type port struct {
	dev   *Device
	num   uint8
	guid  uint64
	attr  PortAttr
	gids  []GID
	pkeys []uint16
}

func newPort(num uint8, nodeGUID uint64, c PortConfig) *port {
	p := &port{num: num, guid: nodeGUID + uint64(num) - 1, attr: c.Attr}
	p.gids = make([]GID, c.Attr.GIDTblLen)
	copy(p.gids, c.GIDs)
	if p.gids[0].IsZero() {
		p.gids[0] = linkLocalGID(p.guid, c.Attr.LinkLayer == LinkLayerEthernet)
	}
	p.pkeys = make([]uint16, c.Attr.PKeyTblLen)
	if len(c.PKeys) == 0 {
		p.pkeys[0] = 0xffff
	}
	copy(p.pkeys, c.PKeys)
	return p
}

// linkLocalGID returns fe80::/64 with the interface identifier iid; on
// Ethernet the universal/local bit is flipped, as in an EUI-64 made from a
// MAC address.
func linkLocalGID(iid uint64, eth bool) GID {
	if eth {
		iid ^= 0x02 << 56
	}
	g := GID{0: 0xfe, 1: 0x80}
	for i := range 8 {
		g[8+i] = byte(iid >> (56 - 8*i))
	}
	return g
}

// addressPorts gives every InfiniBand port a LID block (the configured one,
// or the first free aligned block in device and port order), sets the SM LID
// to the first InfiniBand port's LID where it is zero, and checks that no GID
// belongs to two ports.
func (f *Fabric) addressPorts() error {
	used := map[uint16]*port{}
	owner := map[*port]string{}
	free := func(base uint16, lmc uint8) bool {
		for l := range uint16(1) << lmc {
			if used[base+l] != nil {
				return false
			}
		}
		return true
	}
	claim := func(p *port, base uint16) {
		for l := range uint16(1) << p.attr.LMC {
			used[base+l] = p
		}
		p.attr.LID = base
	}
	var ib []*port
	for _, d := range f.devices {
		for _, p := range d.ports {
			owner[p] = fmt.Sprintf("%s port %d", d.name, p.num)
			if p.attr.LinkLayer != LinkLayerInfiniBand {
				continue
			}
			ib = append(ib, p)
			if p.attr.LID == 0 {
				continue
			}
			if !free(p.attr.LID, p.attr.LMC) {
				return fmt.Errorf("sim: %s: LID %#x is taken", owner[p], p.attr.LID)
			}
			claim(p, p.attr.LID)
		}
	}
	for _, p := range ib {
		if p.attr.LID != 0 {
			continue
		}
		size := 1 << p.attr.LMC
		base := size
		for ; base+size-1 <= maxUnicastLID && !free(uint16(base), p.attr.LMC); base += size {
		}
		if base+size-1 > maxUnicastLID {
			return fmt.Errorf("sim: %s: no unicast LIDs left", owner[p])
		}
		claim(p, uint16(base))
	}
	for _, p := range ib {
		if p.attr.SMLID == 0 {
			p.attr.SMLID = ib[0].attr.LID
		}
	}
	gids := map[GID]*port{}
	for _, d := range f.devices {
		for _, p := range d.ports {
			for _, g := range p.gids {
				if g.IsZero() {
					continue
				}
				if q := gids[g]; q != nil && q != p {
					return fmt.Errorf("sim: %s and %s both have GID %v", owner[q], owner[p], g)
				}
				gids[g] = p
			}
		}
	}
	return nil
}

// portLocked returns port n of the device, or nil when there is no such
// port. Ports never change after NewFabric, so the lock only keeps the
// calling convention.
func (d *Device) portLocked(n uint8) *port {
	if n == 0 || int(n) > len(d.ports) {
		return nil
	}
	return d.ports[n-1]
}

// queryPortLocked checks the context and the port number for verb.
func (c *Context) queryPortLocked(verb string, num uint8) (*port, error) {
	if err := c.checkLocked(verb); err != nil {
		return nil, err
	}
	p := c.dev.portLocked(num)
	if p == nil {
		return nil, verr.Errorf(verb, syscall.EINVAL, "port %d is outside [1, phys_port_cnt=%d]", num, len(c.dev.ports))
	}
	return p, nil
}

// QueryPort returns the attributes of port num, numbered from 1
// (ibv_query_port). Port 0 or above phys_port_cnt is EINVAL.
func (c *Context) QueryPort(num uint8) (PortAttr, error) {
	if c == nil {
		return PortAttr{}, verr.New("ibv_query_port", syscall.EINVAL, "nil device context")
	}
	c.dev.fabric.d.Enter(domain.Op{})
	defer c.dev.fabric.d.Leave(domain.Op{}, nil)
	p, err := c.queryPortLocked("ibv_query_port", num)
	if err != nil {
		return PortAttr{}, err
	}
	return p.attr.queried(), nil
}

// QueryGID returns entry index of port num's GID table (ibv_query_gid). An
// index outside [0, gid_tbl_len) is EINVAL; an unused entry reads as the
// zero GID, as libibverbs reports it.
func (c *Context) QueryGID(num uint8, index int) (GID, error) {
	if c == nil {
		return GID{}, verr.New("ibv_query_gid", syscall.EINVAL, "nil device context")
	}
	c.dev.fabric.d.Enter(domain.Op{})
	defer c.dev.fabric.d.Leave(domain.Op{}, nil)
	p, err := c.queryPortLocked("ibv_query_gid", num)
	if err != nil {
		return GID{}, err
	}
	if index < 0 || index >= len(p.gids) {
		return GID{}, verr.Errorf("ibv_query_gid", syscall.EINVAL, "index %d is outside [0, gid_tbl_len=%d)", index, len(p.gids))
	}
	return p.gids[index], nil
}

// QueryPKey returns entry index of port num's P_Key table (ibv_query_pkey).
// An index outside [0, pkey_tbl_len) is EINVAL; an unused entry reads 0.
func (c *Context) QueryPKey(num uint8, index int) (uint16, error) {
	if c == nil {
		return 0, verr.New("ibv_query_pkey", syscall.EINVAL, "nil device context")
	}
	c.dev.fabric.d.Enter(domain.Op{})
	defer c.dev.fabric.d.Leave(domain.Op{}, nil)
	p, err := c.queryPortLocked("ibv_query_pkey", num)
	if err != nil {
		return 0, err
	}
	if index < 0 || index >= len(p.pkeys) {
		return 0, verr.Errorf("ibv_query_pkey", syscall.EINVAL, "index %d is outside [0, pkey_tbl_len=%d)", index, len(p.pkeys))
	}
	return p.pkeys[index], nil
}
