// Package cabi holds Go types laid out exactly as the structs of
// libibverbs' C ABI (rdma-core 44, Linux x86-64), with the conversions to
// and from the verbs vocabulary: written once, for every place that meets
// C (the per-host daemon, which reads the structs a program's library
// sends; the cgo binding cverbs, which points them at C memory).
//
// Each type carries a c tag per field naming the C member it mirrors;
// TestLayouts compiles a C program against the system's verbs.h and
// checks every offset and size, so a layout that drifts fails the build's
// tests, not a program.
//
// Values are in host byte order, as the C structs hold them: fields that
// are big-endian in C (node_guid, the GIDs) stay as C has them.
package cabi

// GlobalRoute is struct ibv_global_route.
type GlobalRoute struct {
	_            [0]uint64 // union ibv_gid holds two uint64s: align 8
	DGID         [16]byte  `c:"dgid"`
	FlowLabel    uint32    `c:"flow_label"`
	SGIDIndex    uint8     `c:"sgid_index"`
	HopLimit     uint8     `c:"hop_limit"`
	TrafficClass uint8     `c:"traffic_class"`
}

// AHAttr is struct ibv_ah_attr.
type AHAttr struct {
	GRH         GlobalRoute `c:"grh"`
	DLID        uint16      `c:"dlid"`
	SL          uint8       `c:"sl"`
	SrcPathBits uint8       `c:"src_path_bits"`
	StaticRate  uint8       `c:"static_rate"`
	IsGlobal    uint8       `c:"is_global"`
	PortNum     uint8       `c:"port_num"`
}

// QPCap is struct ibv_qp_cap.
type QPCap struct {
	MaxSendWR     uint32 `c:"max_send_wr"`
	MaxRecvWR     uint32 `c:"max_recv_wr"`
	MaxSendSGE    uint32 `c:"max_send_sge"`
	MaxRecvSGE    uint32 `c:"max_recv_sge"`
	MaxInlineData uint32 `c:"max_inline_data"`
}

// QPAttr is struct ibv_qp_attr.
type QPAttr struct {
	QPState          uint32 `c:"qp_state"`
	CurQPState       uint32 `c:"cur_qp_state"`
	PathMTU          uint32 `c:"path_mtu"`
	PathMigState     uint32 `c:"path_mig_state"`
	QKey             uint32 `c:"qkey"`
	RQPSN            uint32 `c:"rq_psn"`
	SQPSN            uint32 `c:"sq_psn"`
	DestQPNum        uint32 `c:"dest_qp_num"`
	QPAccessFlags    uint32 `c:"qp_access_flags"`
	Cap              QPCap  `c:"cap"`
	AHAttr           AHAttr `c:"ah_attr"`
	AltAHAttr        AHAttr `c:"alt_ah_attr"`
	PKeyIndex        uint16 `c:"pkey_index"`
	AltPKeyIndex     uint16 `c:"alt_pkey_index"`
	EnSQDAsyncNotify uint8  `c:"en_sqd_async_notify"`
	SQDraining       uint8  `c:"sq_draining"`
	MaxRDAtomic      uint8  `c:"max_rd_atomic"`
	MaxDestRDAtomic  uint8  `c:"max_dest_rd_atomic"`
	MinRNRTimer      uint8  `c:"min_rnr_timer"`
	PortNum          uint8  `c:"port_num"`
	Timeout          uint8  `c:"timeout"`
	RetryCnt         uint8  `c:"retry_cnt"`
	RNRRetry         uint8  `c:"rnr_retry"`
	AltPortNum       uint8  `c:"alt_port_num"`
	AltTimeout       uint8  `c:"alt_timeout"`
	RateLimit        uint32 `c:"rate_limit"`
}

// PortAttr is struct ibv_port_attr.
type PortAttr struct {
	State         uint32 `c:"state"`
	MaxMTU        uint32 `c:"max_mtu"`
	ActiveMTU     uint32 `c:"active_mtu"`
	GIDTblLen     int32  `c:"gid_tbl_len"`
	PortCapFlags  uint32 `c:"port_cap_flags"`
	MaxMsgSz      uint32 `c:"max_msg_sz"`
	BadPKeyCntr   uint32 `c:"bad_pkey_cntr"`
	QKeyViolCntr  uint32 `c:"qkey_viol_cntr"`
	PKeyTblLen    uint16 `c:"pkey_tbl_len"`
	LID           uint16 `c:"lid"`
	SMLID         uint16 `c:"sm_lid"`
	LMC           uint8  `c:"lmc"`
	MaxVLNum      uint8  `c:"max_vl_num"`
	SMSL          uint8  `c:"sm_sl"`
	SubnetTimeout uint8  `c:"subnet_timeout"`
	InitTypeReply uint8  `c:"init_type_reply"`
	ActiveWidth   uint8  `c:"active_width"`
	ActiveSpeed   uint8  `c:"active_speed"`
	PhysState     uint8  `c:"phys_state"`
	LinkLayer     uint8  `c:"link_layer"`
	Flags         uint8  `c:"flags"`
	PortCapFlags2 uint16 `c:"port_cap_flags2"`
}

// DeviceAttr is struct ibv_device_attr.
type DeviceAttr struct {
	FWVer                 [64]byte `c:"fw_ver"`
	NodeGUID              uint64   `c:"node_guid"` // big-endian, as __be64
	SysImageGUID          uint64   `c:"sys_image_guid"`
	MaxMRSize             uint64   `c:"max_mr_size"`
	PageSizeCap           uint64   `c:"page_size_cap"`
	VendorID              uint32   `c:"vendor_id"`
	VendorPartID          uint32   `c:"vendor_part_id"`
	HWVer                 uint32   `c:"hw_ver"`
	MaxQP                 int32    `c:"max_qp"`
	MaxQPWR               int32    `c:"max_qp_wr"`
	DeviceCapFlags        uint32   `c:"device_cap_flags"`
	MaxSGE                int32    `c:"max_sge"`
	MaxSGERD              int32    `c:"max_sge_rd"`
	MaxCQ                 int32    `c:"max_cq"`
	MaxCQE                int32    `c:"max_cqe"`
	MaxMR                 int32    `c:"max_mr"`
	MaxPD                 int32    `c:"max_pd"`
	MaxQPRDAtom           int32    `c:"max_qp_rd_atom"`
	MaxEERDAtom           int32    `c:"max_ee_rd_atom"`
	MaxResRDAtom          int32    `c:"max_res_rd_atom"`
	MaxQPInitRDAtom       int32    `c:"max_qp_init_rd_atom"`
	MaxEEInitRDAtom       int32    `c:"max_ee_init_rd_atom"`
	AtomicCap             uint32   `c:"atomic_cap"`
	MaxEE                 int32    `c:"max_ee"`
	MaxRDD                int32    `c:"max_rdd"`
	MaxMW                 int32    `c:"max_mw"`
	MaxRawIPv6QP          int32    `c:"max_raw_ipv6_qp"`
	MaxRawEthyQP          int32    `c:"max_raw_ethy_qp"`
	MaxMcastGrp           int32    `c:"max_mcast_grp"`
	MaxMcastQPAttach      int32    `c:"max_mcast_qp_attach"`
	MaxTotalMcastQPAttach int32    `c:"max_total_mcast_qp_attach"`
	MaxAH                 int32    `c:"max_ah"`
	MaxFMR                int32    `c:"max_fmr"`
	MaxMapPerFMR          int32    `c:"max_map_per_fmr"`
	MaxSRQ                int32    `c:"max_srq"`
	MaxSRQWR              int32    `c:"max_srq_wr"`
	MaxSRQSGE             int32    `c:"max_srq_sge"`
	MaxPKeys              uint16   `c:"max_pkeys"`
	LocalCAAckDelay       uint8    `c:"local_ca_ack_delay"`
	PhysPortCnt           uint8    `c:"phys_port_cnt"`
}

// ODPCaps is struct ibv_odp_caps.
type ODPCaps struct {
	GeneralCaps uint64 `c:"general_caps"`
	RCODPCaps   uint32 `c:"per_transport_caps.rc_odp_caps"`
	UCODPCaps   uint32 `c:"per_transport_caps.uc_odp_caps"`
	UDODPCaps   uint32 `c:"per_transport_caps.ud_odp_caps"`
}

// RSSCaps is struct ibv_rss_caps.
type RSSCaps struct {
	SupportedQPTs              uint32 `c:"supported_qpts"`
	MaxRWQIndirectionTables    uint32 `c:"max_rwq_indirection_tables"`
	MaxRWQIndirectionTableSize uint32 `c:"max_rwq_indirection_table_size"`
	RXHashFieldsMask           uint64 `c:"rx_hash_fields_mask"`
	RXHashFunction             uint8  `c:"rx_hash_function"`
}

// DeviceAttrEx is struct ibv_device_attr_ex.
type DeviceAttrEx struct {
	Orig                    DeviceAttr `c:"orig_attr"`
	CompMask                uint32     `c:"comp_mask"`
	ODPCaps                 ODPCaps    `c:"odp_caps"`
	CompletionTimestampMask uint64     `c:"completion_timestamp_mask"`
	HCACoreClock            uint64     `c:"hca_core_clock"`
	DeviceCapFlagsEx        uint64     `c:"device_cap_flags_ex"`
	TSOMaxTSO               uint32     `c:"tso_caps.max_tso"`
	TSOSupportedQPTs        uint32     `c:"tso_caps.supported_qpts"`
	RSSCaps                 RSSCaps    `c:"rss_caps"`
	MaxWQTypeRQ             uint32     `c:"max_wq_type_rq"`
	PacingRateLimitMin      uint32     `c:"packet_pacing_caps.qp_rate_limit_min"`
	PacingRateLimitMax      uint32     `c:"packet_pacing_caps.qp_rate_limit_max"`
	PacingSupportedQPTs     uint32     `c:"packet_pacing_caps.supported_qpts"`
	RawPacketCaps           uint32     `c:"raw_packet_caps"`
	TMMaxRndvHdrSize        uint32     `c:"tm_caps.max_rndv_hdr_size"`
	TMMaxNumTags            uint32     `c:"tm_caps.max_num_tags"`
	TMFlags                 uint32     `c:"tm_caps.flags"`
	TMMaxOps                uint32     `c:"tm_caps.max_ops"`
	TMMaxSGE                uint32     `c:"tm_caps.max_sge"`
	CQModMaxCount           uint16     `c:"cq_mod_caps.max_cq_count"`
	CQModMaxPeriod          uint16     `c:"cq_mod_caps.max_cq_period"`
	MaxDMSize               uint64     `c:"max_dm_size"`
	PCIAtomicFetchAdd       uint16     `c:"pci_atomic_caps.fetch_add"`
	PCIAtomicSwap           uint16     `c:"pci_atomic_caps.swap"`
	PCIAtomicCompareSwap    uint16     `c:"pci_atomic_caps.compare_swap"`
	XRCODPCaps              uint32     `c:"xrc_odp_caps"`
	PhysPortCntEx           uint32     `c:"phys_port_cnt_ex"`
}

// SRQAttr is struct ibv_srq_attr.
type SRQAttr struct {
	MaxWR    uint32 `c:"max_wr"`
	MaxSGE   uint32 `c:"max_sge"`
	SRQLimit uint32 `c:"srq_limit"`
}

// WC is struct ibv_wc, imm_data and invalidated_rkey being one union
// member.
type WC struct {
	WRID         uint64 `c:"wr_id"`
	Status       uint32 `c:"status"`
	Opcode       uint32 `c:"opcode"`
	VendorErr    uint32 `c:"vendor_err"`
	ByteLen      uint32 `c:"byte_len"`
	ImmData      uint32 `c:"imm_data"`
	QPNum        uint32 `c:"qp_num"`
	SrcQP        uint32 `c:"src_qp"`
	WCFlags      uint32 `c:"wc_flags"`
	PKeyIndex    uint16 `c:"pkey_index"`
	SLID         uint16 `c:"slid"`
	SL           uint8  `c:"sl"`
	DLIDPathBits uint8  `c:"dlid_path_bits"`
}

// SGE is struct ibv_sge.
type SGE struct {
	Addr   uint64 `c:"addr"`
	Length uint32 `c:"length"`
	LKey   uint32 `c:"lkey"`
}

// QPInitAttr is struct ibv_qp_init_attr, its pointers as addresses.
type QPInitAttr struct {
	QPContext uint64 `c:"qp_context"`
	SendCQ    uint64 `c:"send_cq"`
	RecvCQ    uint64 `c:"recv_cq"`
	SRQ       uint64 `c:"srq"`
	Cap       QPCap  `c:"cap"`
	QPType    uint32 `c:"qp_type"`
	SQSigAll  int32  `c:"sq_sig_all"`
}
