package sim

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// queriedPortAttr returns the attributes as ibv_query_port reports them, with
// phys_state following the logical state.
func queriedPortAttr(a verbs.PortAttr) verbs.PortAttr {
	a.PhysState = verbs.PhysLinkUp
	if a.State == verbs.PortDown {
		a.PhysState = verbs.PhysDisabled
	}
	return a
}

// DefaultPortAttr returns the attributes of a default port: an active 4X
// InfiniBand port at 4096-byte MTU with 128 GIDs and 128 P_Keys, whose LID
// and SM LID the fabric assigns.
func DefaultPortAttr() verbs.PortAttr {
	return verbs.PortAttr{
		State:        verbs.PortActive,
		MaxMTU:       verbs.MTU4096,
		ActiveMTU:    verbs.MTU4096,
		GIDTblLen:    128,
		PortCapFlags: verbs.PortCapSysImageGUIDSup | verbs.PortCapCMSup | verbs.PortCapClientRegSup,
		MaxMsgSz:     1 << 30,
		PKeyTblLen:   128,
		MaxVLNum:     4,
		PhysState:    verbs.PhysLinkUp,
		ActiveWidth:  2,
		ActiveSpeed:  32,
		LinkLayer:    verbs.LinkLayerInfiniBand,
	}
}

// PortConfig describes one port. Zero fields of Attr take the values of
// DefaultPortAttr, adjusted to the link layer: an Ethernet (RoCE) port
// defaults to 256 GIDs, one P_Key, IP-based GIDs and no LIDs. LMC zero is
// kept; LID and SMLID zero on InfiniBand are assigned by the fabric.
type PortConfig struct {
	Attr verbs.PortAttr
	// GIDs are the first entries of the GID table. An empty or zero entry 0
	// becomes the port's link-local GID: fe80::/64 followed by the port GUID
	// (InfiniBand) or by the port GUID with its universal/local bit flipped
	// as an EUI-64 from a MAC address would be (Ethernet). The port GUID is
	// the node GUID plus the port number minus one.
	GIDs []verbs.GID
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
	if a.LinkLayer == verbs.LinkLayerUnspecified {
		a.LinkLayer = def.LinkLayer
	}
	eth := a.LinkLayer == verbs.LinkLayerEthernet
	if eth {
		def.GIDTblLen, def.PKeyTblLen = 256, 1
		def.PortCapFlags = verbs.PortCapIPBasedGIDs | verbs.PortCapCMSup
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
	a.PhysState = queriedPortAttr(*a).PhysState // derived from State, not configured
	switch {
	case a.LinkLayer > verbs.LinkLayerEthernet:
		return fmt.Errorf("link_layer %d is not an IBV_LINK_LAYER value", a.LinkLayer)
	case a.State > verbs.PortActiveDefer:
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
	attr  verbs.PortAttr
	gids  []verbs.GID
	pkeys []uint16
}

func newPort(num uint8, nodeGUID uint64, c PortConfig) *port {
	p := &port{num: num, guid: nodeGUID + uint64(num) - 1, attr: c.Attr}
	p.gids = make([]verbs.GID, c.Attr.GIDTblLen)
	copy(p.gids, c.GIDs)
	if p.gids[0].IsZero() {
		p.gids[0] = linkLocalGID(p.guid, c.Attr.LinkLayer == verbs.LinkLayerEthernet)
	}
	p.pkeys = make([]uint16, c.Attr.PKeyTblLen)
	if len(c.PKeys) == 0 {
		p.pkeys[0] = 0xffff
	}
	copy(p.pkeys, c.PKeys)
	return p
}

// gidAt returns the GID a packet leaves with for GID table index i (the
// address vector's sgid_index, AV-05): entry i when it holds a GID, entry 0
// otherwise.
func (p *port) gidAt(i uint8) verbs.GID {
	if int(i) < len(p.gids) && !p.gids[i].IsZero() {
		return p.gids[i]
	}
	return p.gids[0]
}

// sourceGID returns the GID a packet along path av leaves p with.
func (p *port) sourceGID(av *verbs.AHAttr) verbs.GID {
	if !av.IsGlobal {
		return p.gids[0]
	}
	return p.gidAt(av.GRH.SGIDIndex)
}

// linkLocalGID returns fe80::/64 with the interface identifier iid; on
// Ethernet the universal/local bit is flipped, as in an EUI-64 made from a
// MAC address.
func linkLocalGID(iid uint64, eth bool) verbs.GID {
	if eth {
		iid ^= 0x02 << 56
	}
	g := verbs.GID{0: 0xfe, 1: 0x80}
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
			if p.attr.LinkLayer != verbs.LinkLayerInfiniBand {
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
	gids := map[verbs.GID]*port{}
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
func (c *Context) QueryPort(num uint8) (verbs.PortAttr, error) {
	if c == nil {
		return verbs.PortAttr{}, verr.New("ibv_query_port", syscall.EINVAL, "nil device context")
	}
	c.dev.fabric.d.Enter(domain.Op{})
	defer c.dev.fabric.d.Leave(domain.Op{}, nil)
	p, err := c.queryPortLocked("ibv_query_port", num)
	if err != nil {
		return verbs.PortAttr{}, err
	}
	return queriedPortAttr(p.attr), nil
}

// QueryGID returns entry index of port num's GID table (ibv_query_gid). An
// index outside [0, gid_tbl_len) is EINVAL; an unused entry reads as the
// zero GID, as libibverbs reports it.
func (c *Context) QueryGID(num uint8, index int) (verbs.GID, error) {
	if c == nil {
		return verbs.GID{}, verr.New("ibv_query_gid", syscall.EINVAL, "nil device context")
	}
	c.dev.fabric.d.Enter(domain.Op{})
	defer c.dev.fabric.d.Leave(domain.Op{}, nil)
	p, err := c.queryPortLocked("ibv_query_gid", num)
	if err != nil {
		return verbs.GID{}, err
	}
	if index < 0 || index >= len(p.gids) {
		return verbs.GID{}, verr.Errorf("ibv_query_gid", syscall.EINVAL, "index %d is outside [0, gid_tbl_len=%d)", index, len(p.gids))
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
