package sim

import (
	"fmt"
	"github.com/verbsim/verbsim/sim/internal/domain"
	"syscall"

	"github.com/verbsim/verbsim/sim/verr"
)

// GIDType is enum ibv_gid_type: how the GID of a table entry is used on
// the wire.
type GIDType uint32

// The values of enum ibv_gid_type (verbs.h).
const (
	GIDTypeIB     GIDType = 0 // IBV_GID_TYPE_IB: an InfiniBand port's GID
	GIDTypeRoCEv1 GIDType = 1 // IBV_GID_TYPE_ROCE_V1
	GIDTypeRoCEv2 GIDType = 2 // IBV_GID_TYPE_ROCE_V2: RoCE over UDP/IP, the only kind rxe has
)

// String returns "IB", "RoCE v1" or "RoCE v2", as ibv_devinfo -v prints
// the types.
func (t GIDType) String() string {
	switch t {
	case GIDTypeIB:
		return "IB"
	case GIDTypeRoCEv1:
		return "RoCE v1"
	case GIDTypeRoCEv2:
		return "RoCE v2"
	}
	return fmt.Sprintf("GIDType(%d)", uint32(t))
}

// GIDEntry is struct ibv_gid_entry: one valid entry of a port's GID table
// with its type (ibv_query_gid_ex, ibv_query_gid_table).
type GIDEntry struct {
	GID      GID     // gid
	GIDIndex uint32  // gid_index: the entry's index in the port's table
	PortNum  uint32  // port_num, from 1
	GIDType  GIDType // gid_type: IB on InfiniBand ports, RoCE v2 on Ethernet ports (as rxe)
	// NdevIfindex is ndev_ifindex: the net device of a RoCE GID. verbsim
	// has no net devices, so it is 0, which the man page gives for "none".
	NdevIfindex uint32
}

func (p *port) entry(i int) GIDEntry {
	t := GIDTypeIB
	if p.attr.LinkLayer == LinkLayerEthernet {
		t = GIDTypeRoCEv2
	}
	return GIDEntry{GID: p.gids[i], GIDIndex: uint32(i), PortNum: uint32(p.num), GIDType: t}
}

// QueryGIDEx returns entry index of port num's GID table with its type
// (ibv_query_gid_ex). flags must be 0 (EINVAL otherwise, as the kernel
// refuses unknown flags); a port outside [1, phys_port_cnt] or an index
// outside [0, gid_tbl_len) is EINVAL; an index inside the table that holds
// no GID is ENODATA, where ibv_query_gid reads the zero GID (QUERY-05).
func (c *Context) QueryGIDEx(num, index, flags uint32) (GIDEntry, error) {
	const verb = "ibv_query_gid_ex"
	if c == nil {
		return GIDEntry{}, verr.New(verb, syscall.EINVAL, "nil device context")
	}
	c.dev.fabric.d.Enter(domain.Op{})
	defer c.dev.fabric.d.Leave(domain.Op{}, nil)
	if err := c.checkLocked(verb); err != nil {
		return GIDEntry{}, err
	}
	if flags != 0 {
		return GIDEntry{}, verr.Errorf(verb, syscall.EINVAL, "flags %#x: none are defined (QUERY-05)", flags)
	}
	if num == 0 || num > uint32(len(c.dev.ports)) {
		return GIDEntry{}, verr.Errorf(verb, syscall.EINVAL, "port %d is outside [1, phys_port_cnt=%d] (QUERY-05)", num, len(c.dev.ports))
	}
	p := c.dev.ports[num-1]
	if index >= uint32(len(p.gids)) {
		return GIDEntry{}, verr.Errorf(verb, syscall.EINVAL, "index %d is outside [0, gid_tbl_len=%d) (QUERY-05)", index, len(p.gids))
	}
	if p.gids[index].IsZero() {
		return GIDEntry{}, verr.Errorf(verb, syscall.ENODATA, "entry %d of port %d holds no GID (QUERY-05)", index, num)
	}
	return p.entry(int(index)), nil
}

// QueryGIDTable returns the valid entries of every port's GID table, port 1
// first and each port's entries in index order (ibv_query_gid_table).
// maxEntries is the room the caller has: 0, or fewer than the valid
// entries, is EINVAL, as are flags other than 0 (QUERY-06). The C call
// returns the count; here it is the length of the slice.
func (c *Context) QueryGIDTable(maxEntries int, flags uint32) ([]GIDEntry, error) {
	const verb = "ibv_query_gid_table"
	if c == nil {
		return nil, verr.New(verb, syscall.EINVAL, "nil device context")
	}
	c.dev.fabric.d.Enter(domain.Op{})
	defer c.dev.fabric.d.Leave(domain.Op{}, nil)
	if err := c.checkLocked(verb); err != nil {
		return nil, err
	}
	if flags != 0 {
		return nil, verr.Errorf(verb, syscall.EINVAL, "flags %#x: none are defined (QUERY-06)", flags)
	}
	if maxEntries <= 0 {
		return nil, verr.Errorf(verb, syscall.EINVAL, "max_entries %d: room for at least one entry is needed (QUERY-06)", maxEntries)
	}
	var out []GIDEntry
	for _, p := range c.dev.ports {
		for i, g := range p.gids {
			if g.IsZero() {
				continue
			}
			if len(out) == maxEntries {
				return nil, verr.Errorf(verb, syscall.EINVAL, "more than max_entries=%d valid GIDs (QUERY-06)", maxEntries)
			}
			out = append(out, p.entry(i))
		}
	}
	return out, nil
}

// DeviceAttrEx is struct ibv_device_attr_ex (ibv_query_device_ex): the
// attributes of ibv_query_device in Orig, and the extended capabilities,
// which verbsim reports as zero wherever it does not implement the feature
// (QUERY-03): no on-demand paging, no completion timestamps, no TSO, RSS,
// work queues, packet pacing, raw packets, tag matching, CQ moderation,
// device memory, PCI atomics or XRC.
type DeviceAttrEx struct {
	Orig DeviceAttr // orig_attr: what QueryDevice returns
	// CompMask is comp_mask, the output one: which fields after it are
	// valid beyond the base set. libibverbs leaves it 0.
	CompMask                uint32
	ODPCaps                 ODPCaps          // odp_caps: zero
	CompletionTimestampMask uint64           // completion_timestamp_mask: 0, no timestamps
	HCACoreClock            uint64           // hca_core_clock (kHz): 0, unsupported
	DeviceCapFlagsEx        uint64           // device_cap_flags_ex: the low 32 bits are device_cap_flags
	TSOCaps                 TSOCaps          // tso_caps: zero
	RSSCaps                 RSSCaps          // rss_caps: zero
	MaxWQTypeRQ             uint32           // max_wq_type_rq: 0, no ibv_create_wq
	PacketPacingCaps        PacketPacingCaps // packet_pacing_caps: zero
	RawPacketCaps           uint32           // raw_packet_caps: 0
	TMCaps                  TMCaps           // tm_caps: zero
	CQModCaps               CQModCaps        // cq_mod_caps: zero
	MaxDMSize               uint64           // max_dm_size: 0, no device memory
	PCIAtomicCaps           PCIAtomicCaps    // pci_atomic_caps: zero
	XRCODPCaps              uint32           // xrc_odp_caps: 0
	PhysPortCntEx           uint32           // phys_port_cnt_ex: the same count as phys_port_cnt
}

// ODPCaps is struct ibv_odp_caps.
type ODPCaps struct {
	GeneralCaps uint64 // general_caps (enum ibv_odp_general_cap_bits)
	RCODPCaps   uint32 // per_transport_caps.rc_odp_caps
	UCODPCaps   uint32 // per_transport_caps.uc_odp_caps
	UDODPCaps   uint32 // per_transport_caps.ud_odp_caps
}

// TSOCaps is struct ibv_tso_caps.
type TSOCaps struct {
	MaxTSO        uint32 // max_tso
	SupportedQPTs uint32 // supported_qpts
}

// RSSCaps is struct ibv_rss_caps.
type RSSCaps struct {
	SupportedQPTs              uint32 // supported_qpts
	MaxRWQIndirectionTables    uint32 // max_rwq_indirection_tables
	MaxRWQIndirectionTableSize uint32 // max_rwq_indirection_table_size
	RXHashFieldsMask           uint64 // rx_hash_fields_mask
	RXHashFunction             uint8  // rx_hash_function
}

// PacketPacingCaps is struct ibv_packet_pacing_caps.
type PacketPacingCaps struct {
	QPRateLimitMin uint32 // qp_rate_limit_min (kbps)
	QPRateLimitMax uint32 // qp_rate_limit_max (kbps)
	SupportedQPTs  uint32 // supported_qpts
}

// TMCaps is struct ibv_tm_caps.
type TMCaps struct {
	MaxRndvHdrSize uint32 // max_rndv_hdr_size
	MaxNumTags     uint32 // max_num_tags
	Flags          uint32 // flags (enum ibv_tm_cap_flags)
	MaxOps         uint32 // max_ops
	MaxSGE         uint32 // max_sge
}

// CQModCaps is struct ibv_cq_moderation_caps.
type CQModCaps struct {
	MaxCQCount  uint16 // max_cq_count
	MaxCQPeriod uint16 // max_cq_period
}

// PCIAtomicCaps is struct ibv_pci_atomic_caps.
type PCIAtomicCaps struct {
	FetchAdd    uint16 // fetch_add
	Swap        uint16 // swap
	CompareSwap uint16 // compare_swap
}

// QueryDeviceEx is ibv_query_device_ex. compMask is the comp_mask of
// struct ibv_query_device_ex_input (0 for a NULL input): libibverbs
// defines no bit of it and refuses any with EINVAL (QUERY-03).
func (c *Context) QueryDeviceEx(compMask uint32) (DeviceAttrEx, error) {
	const verb = "ibv_query_device_ex"
	if c == nil {
		return DeviceAttrEx{}, verr.New(verb, syscall.EINVAL, "nil device context")
	}
	if compMask != 0 {
		return DeviceAttrEx{}, verr.Errorf(verb, syscall.EINVAL, "input comp_mask %#x: no bit is defined (QUERY-03)", compMask)
	}
	if err := c.check(verb); err != nil {
		return DeviceAttrEx{}, err
	}
	a := c.dev.attr
	return DeviceAttrEx{
		Orig:             a,
		DeviceCapFlagsEx: uint64(a.DeviceCapFlags),
		PhysPortCntEx:    uint32(a.PhysPortCnt),
	}, nil
}
