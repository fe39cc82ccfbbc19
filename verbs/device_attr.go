package verbs

import (
	"fmt"
	"net"
)

// AtomicCap is enum ibv_atomic_cap: which atomic operations the device
// performs, and how they relate to other agents' accesses.
type AtomicCap uint32

// The values of enum ibv_atomic_cap.
const (
	AtomicNone AtomicCap = 0 // IBV_ATOMIC_NONE: no atomic operations
	AtomicHCA  AtomicCap = 1 // IBV_ATOMIC_HCA: atomic among this adapter's own accesses
	AtomicGlob AtomicCap = 2 // IBV_ATOMIC_GLOB: atomic against every agent
)

// DeviceCapFlags is the device_cap_flags mask of struct ibv_device_attr
// (enum ibv_device_cap_flags). The constants below are the bits verbsim
// models or reports; the others may be set and are reported unchanged.
type DeviceCapFlags uint32

// Bits of enum ibv_device_cap_flags (values from verbs.h).
const (
	DeviceBadPKeyCntr      DeviceCapFlags = 1 << 1  // IBV_DEVICE_BAD_PKEY_CNTR
	DeviceBadQKeyCntr      DeviceCapFlags = 1 << 2  // IBV_DEVICE_BAD_QKEY_CNTR
	DeviceChangePhyPort    DeviceCapFlags = 1 << 5  // IBV_DEVICE_CHANGE_PHY_PORT
	DeviceCurrQPStateMod   DeviceCapFlags = 1 << 7  // IBV_DEVICE_CURR_QP_STATE_MOD
	DevicePortActiveEvt    DeviceCapFlags = 1 << 10 // IBV_DEVICE_PORT_ACTIVE_EVENT
	DeviceSysImageGUID     DeviceCapFlags = 1 << 11 // IBV_DEVICE_SYS_IMAGE_GUID
	DeviceRCRNRNakGen      DeviceCapFlags = 1 << 12 // IBV_DEVICE_RC_RNR_NAK_GEN
	DeviceSRQResize        DeviceCapFlags = 1 << 13 // IBV_DEVICE_SRQ_RESIZE (SRQ-07)
	DeviceMemWindow        DeviceCapFlags = 1 << 17 // IBV_DEVICE_MEM_WINDOW: memory windows (PD.AllocMW, MW-01)
	DeviceXRC              DeviceCapFlags = 1 << 20 // IBV_DEVICE_XRC: XRC domains, SRQs and QPs (XRC-03)
	DeviceMemMgtExtensions DeviceCapFlags = 1 << 21 // IBV_DEVICE_MEM_MGT_EXTENSIONS: fast registration (reported by siw and irdma)
	DeviceMemWindow2A      DeviceCapFlags = 1 << 23 // IBV_DEVICE_MEM_WINDOW_TYPE_2A: type 2A windows
	DeviceMemWindow2B      DeviceCapFlags = 1 << 24 // IBV_DEVICE_MEM_WINDOW_TYPE_2B: type 2B windows (verbsim's type 2, MW-06)
)

// DeviceAttr holds the device attributes, modelled on struct ibv_device_attr
// (ibv_query_device), plus two limits that libibverbs reports elsewhere:
// NumCompVectors (ibv_context.num_comp_vectors) and MaxInline (the largest
// max_inline_data a QP may ask for, which hardware reports only through
// ibv_create_qp's returned caps; an implementation that cannot know it
// reports 0). HCACoreClock and CompletionTimestampMask are the fields of
// struct ibv_device_attr_ex that completion timestamps need.
//
// An implementation of the verbs reports it from Context.QueryDevice; a
// simulator may also take one as configuration (package sim documents how
// it fills zero fields).
type DeviceAttr struct {
	FWVer           string         // fw_ver (at most 63 bytes)
	NodeGUID        uint64         // node_guid; zero: assigned by the fabric
	SysImageGUID    uint64         // sys_image_guid; zero: NodeGUID
	MaxMRSize       uint64         // max_mr_size: the longest MR (ibv_reg_mr EINVAL above)
	MaxDMSize       uint64         // max_dm_size of ibv_device_attr_ex (ibv_query_device has none): device memory, a multiple of 4 KiB; 0 for none (DM-01)
	VendorID        uint32         // vendor_id (IEEE OUI)
	VendorPartID    uint32         // vendor_part_id
	MaxQP           int            // max_qp: QPs that may exist at once on the device
	MaxQPWR         int            // max_qp_wr: work requests per work queue (QP-02)
	DeviceCapFlags  DeviceCapFlags // device_cap_flags
	MaxSGE          int            // max_sge: SGEs per send or receive WR (QP-02)
	MaxSGERD        int            // max_sge_rd: SGEs per RDMA READ WR
	MaxCQ           int            // max_cq: CQs that may exist at once on the device (CQ-06)
	MaxCQE          int            // max_cqe: the largest CQ (CQ-01)
	MaxMR           int            // max_mr: MRs that may exist at once (ibv_reg_mr ENOMEM above); at most 1<<24
	MaxMW           int            // max_mw: memory windows that may exist at once (ibv_alloc_mw ENOMEM above, MW-01)
	MaxPD           int            // max_pd: PDs that may exist at once (ibv_alloc_pd ENOMEM above)
	MaxQPRDAtom     int            // max_qp_rd_atom: READ/atomic requests a QP answers at once
	MaxQPInitRDAtom int            // max_qp_init_rd_atom: READ/atomic requests a QP issues at once
	AtomicCap       AtomicCap      // atomic_cap
	MaxAH           int            // max_ah: AHs that may exist at once (ibv_create_ah ENOMEM above)
	MaxSRQ          int            // max_srq
	MaxSRQWR        int            // max_srq_wr (SRQ-01)
	MaxSRQSGE       int            // max_srq_sge (SRQ-01)
	PhysPortCnt     uint8          // phys_port_cnt: ports, numbered from 1
	MaxInline       int            // the largest max_inline_data a QP may ask for (QP-02, QP-35)
	NumCompVectors  int            // ibv_context.num_comp_vectors (CQ-03)
	// HCACoreClock is hca_core_clock of struct ibv_device_attr_ex, in kHz:
	// the rate of the clock completion timestamps count (CQX-09). The
	// default, 1000000 (1 GHz), makes one clock cycle one tick of virtual
	// time, so ibv_wc_read_completion_ts returns the tick itself.
	HCACoreClock uint64
	// CompletionTimestampMask is completion_timestamp_mask of struct
	// ibv_device_attr_ex: the bits a completion timestamp uses. Default: all
	// 64 (the virtual clock stops at MaxTick and never wraps).
	CompletionTimestampMask uint64
}

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

// DeviceAttrEx is struct ibv_device_attr_ex (ibv_query_device_ex): the
// attributes of ibv_query_device in Orig, and the extended capabilities,
// which are zero wherever the device lacks the feature (QUERY-03; verbsim
// has no on-demand paging, TSO, RSS, work queues, packet pacing, raw
// packets, tag matching, CQ moderation, device memory or PCI atomics, and
// reports those as zero; it reports completion timestamps where its
// profile offers them).
type DeviceAttrEx struct {
	Orig DeviceAttr // orig_attr: what QueryDevice returns
	// CompMask is comp_mask, the output one: which fields after it are
	// valid beyond the base set. libibverbs leaves it 0.
	CompMask                uint32
	ODPCaps                 ODPCaps          // odp_caps: zero
	CompletionTimestampMask uint64           // completion_timestamp_mask: the bits a timestamp uses; 0 without timestamps
	HCACoreClock            uint64           // hca_core_clock (kHz): the timestamps' clock; 0 without timestamps
	DeviceCapFlagsEx        uint64           // device_cap_flags_ex: the low 32 bits are device_cap_flags
	TSOCaps                 TSOCaps          // tso_caps: zero
	RSSCaps                 RSSCaps          // rss_caps: zero
	MaxWQTypeRQ             uint32           // max_wq_type_rq: 0, no ibv_create_wq
	PacketPacingCaps        PacketPacingCaps // packet_pacing_caps: zero
	RawPacketCaps           uint32           // raw_packet_caps: 0
	TMCaps                  TMCaps           // tm_caps: zero
	CQModCaps               CQModCaps        // cq_mod_caps: zero
	MaxDMSize               uint64           // max_dm_size: the device memory ibv_alloc_dm shares out; 0 without any (DM-01)
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

// XRCDInitMask is comp_mask of struct ibv_xrcd_init_attr (enum
// ibv_xrcd_init_attr_mask): which of its fields are valid.
type XRCDInitMask uint32

// The comp_mask bits of ibv_open_xrcd, with verbs.h values. Both must be
// set (XRC-01).
const (
	XRCDInitFD     XRCDInitMask = 1 << 0 // IBV_XRCD_INIT_ATTR_FD: fd is valid
	XRCDInitOFlags XRCDInitMask = 1 << 1 // IBV_XRCD_INIT_ATTR_OFLAGS: oflags is valid
)

// XRCDInitAttr holds the arguments of ibv_open_xrcd (struct
// ibv_xrcd_init_attr).
//
// FD -1 opens a new XRC domain of the caller's own, as the kernel does for
// fd -1 whatever OFlags says; a real fd (with O_CREAT, O_EXCL) shares a
// domain between processes through its inode. verbsim has no files and
// accepts only -1: any other fd is EBADF, the kernel's answer for a
// descriptor that names no open file (XRC-01).
type XRCDInitAttr struct {
	CompMask XRCDInitMask // must hold XRCDInitFD and XRCDInitOFlags
	FD       int          // fd: -1 for a new domain
	OFlags   int          // oflags (O_CREAT, O_EXCL): not read when FD is -1
}

// SRQType is srq_type of struct ibv_srq_init_attr_ex (enum ibv_srq_type).
type SRQType uint32

// The SRQ types, with verbs.h values.
const (
	SRQTBasic SRQType = 0 // IBV_SRQT_BASIC: an SRQ as ibv_create_srq makes it
	SRQTXRC   SRQType = 1 // IBV_SRQT_XRC: an XRC SRQ, in an XRCD, with a CQ
	SRQTTM    SRQType = 2 // IBV_SRQT_TM: tag matching, which verbsim lacks (EOPNOTSUPP)
)

// SRQInitMask is comp_mask of struct ibv_srq_init_attr_ex (enum
// ibv_srq_init_attr_mask).
type SRQInitMask uint32

// The comp_mask bits of ibv_create_srq_ex, with verbs.h values.
const (
	SRQInitType SRQInitMask = 1 << 0 // IBV_SRQ_INIT_ATTR_TYPE: srq_type is valid (else BASIC)
	SRQInitPD   SRQInitMask = 1 << 1 // IBV_SRQ_INIT_ATTR_PD: pd is valid (required)
	SRQInitXRCD SRQInitMask = 1 << 2 // IBV_SRQ_INIT_ATTR_XRCD: xrcd is valid
	SRQInitCQ   SRQInitMask = 1 << 3 // IBV_SRQ_INIT_ATTR_CQ: cq is valid
	SRQInitTM   SRQInitMask = 1 << 4 // IBV_SRQ_INIT_ATTR_TM: tm_cap is valid (EOPNOTSUPP)
)
