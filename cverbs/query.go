//go:build cgo && linux

package cverbs

/*
#include "cverbs.h"
*/
import "C"

import (
	"unsafe"

	"github.com/verbsim/verbsim/verbs"
)

// QueryDeviceEx is ibv_query_device_ex (verbs.ExQuerier) with an input
// whose comp_mask is compMask (a NULL input for 0).
func (c *devContext) QueryDeviceEx(compMask uint32) (verbs.DeviceAttrEx, error) {
	if err := c.live("ibv_query_device_ex"); err != nil {
		return verbs.DeviceAttrEx{}, err
	}
	var a C.struct_ibv_device_attr_ex
	if rc, e := C.cv_query_device_ex(c.c, C.uint32_t(compMask), &a); rc != 0 {
		return verbs.DeviceAttrEx{}, rcErrno("ibv_query_device_ex", rc, e)
	}
	orig := deviceAttr(&a.orig_attr, int(c.c.num_comp_vectors))
	c.dev.inlineOnce.Do(func() { c.dev.maxInline = c.probeInline() })
	orig.MaxInline = c.dev.maxInline
	return verbs.DeviceAttrEx{
		Orig:     orig,
		CompMask: uint32(a.comp_mask),
		ODPCaps: verbs.ODPCaps{
			GeneralCaps: uint64(a.odp_caps.general_caps),
			RCODPCaps:   uint32(a.odp_caps.per_transport_caps.rc_odp_caps),
			UCODPCaps:   uint32(a.odp_caps.per_transport_caps.uc_odp_caps),
			UDODPCaps:   uint32(a.odp_caps.per_transport_caps.ud_odp_caps),
		},
		CompletionTimestampMask: uint64(a.completion_timestamp_mask),
		HCACoreClock:            uint64(a.hca_core_clock),
		DeviceCapFlagsEx:        uint64(a.device_cap_flags_ex),
		TSOCaps:                 verbs.TSOCaps{MaxTSO: uint32(a.tso_caps.max_tso), SupportedQPTs: uint32(a.tso_caps.supported_qpts)},
		RSSCaps: verbs.RSSCaps{
			SupportedQPTs:              uint32(a.rss_caps.supported_qpts),
			MaxRWQIndirectionTables:    uint32(a.rss_caps.max_rwq_indirection_tables),
			MaxRWQIndirectionTableSize: uint32(a.rss_caps.max_rwq_indirection_table_size),
			RXHashFieldsMask:           uint64(a.rss_caps.rx_hash_fields_mask),
			RXHashFunction:             uint8(a.rss_caps.rx_hash_function),
		},
		MaxWQTypeRQ: uint32(a.max_wq_type_rq),
		PacketPacingCaps: verbs.PacketPacingCaps{
			QPRateLimitMin: uint32(a.packet_pacing_caps.qp_rate_limit_min),
			QPRateLimitMax: uint32(a.packet_pacing_caps.qp_rate_limit_max),
			SupportedQPTs:  uint32(a.packet_pacing_caps.supported_qpts),
		},
		RawPacketCaps: uint32(a.raw_packet_caps),
		TMCaps: verbs.TMCaps{
			MaxRndvHdrSize: uint32(a.tm_caps.max_rndv_hdr_size),
			MaxNumTags:     uint32(a.tm_caps.max_num_tags),
			Flags:          uint32(a.tm_caps.flags),
			MaxOps:         uint32(a.tm_caps.max_ops),
			MaxSGE:         uint32(a.tm_caps.max_sge),
		},
		CQModCaps:     verbs.CQModCaps{MaxCQCount: uint16(a.cq_mod_caps.max_cq_count), MaxCQPeriod: uint16(a.cq_mod_caps.max_cq_period)},
		MaxDMSize:     uint64(a.max_dm_size),
		PCIAtomicCaps: verbs.PCIAtomicCaps{FetchAdd: uint16(a.pci_atomic_caps.fetch_add), Swap: uint16(a.pci_atomic_caps.swap), CompareSwap: uint16(a.pci_atomic_caps.compare_swap)},
		XRCODPCaps:    uint32(a.xrc_odp_caps),
		PhysPortCntEx: uint32(a.phys_port_cnt_ex),
	}, nil
}

func gidEntry(e *C.struct_ibv_gid_entry) verbs.GIDEntry {
	var g verbs.GIDEntry
	C.cv_gid_raw(&e.gid, (*C.uint8_t)(unsafe.Pointer(&g.GID[0])))
	g.GIDIndex = uint32(e.gid_index)
	g.PortNum = uint32(e.port_num)
	g.GIDType = verbs.GIDType(e.gid_type)
	g.NdevIfindex = uint32(e.ndev_ifindex)
	return g
}

// QueryGIDEx is ibv_query_gid_ex.
func (c *devContext) QueryGIDEx(port, index, flags uint32) (verbs.GIDEntry, error) {
	if err := c.live("ibv_query_gid_ex"); err != nil {
		return verbs.GIDEntry{}, err
	}
	var e C.struct_ibv_gid_entry
	if rc, en := C.cv_query_gid_ex(c.c, C.uint32_t(port), C.uint32_t(index), &e, C.uint32_t(flags)); rc != 0 {
		return verbs.GIDEntry{}, rcErrno("ibv_query_gid_ex", rc, en)
	}
	return gidEntry(&e), nil
}

// QueryGIDTable is ibv_query_gid_table with room for maxEntries.
func (c *devContext) QueryGIDTable(maxEntries int, flags uint32) ([]verbs.GIDEntry, error) {
	if err := c.live("ibv_query_gid_table"); err != nil {
		return nil, err
	}
	if maxEntries < 0 {
		return nil, einval("ibv_query_gid_table")
	}
	var buf *C.struct_ibv_gid_entry
	if maxEntries > 0 {
		buf = (*C.struct_ibv_gid_entry)(C.calloc(C.size_t(maxEntries), C.size_t(unsafe.Sizeof(C.struct_ibv_gid_entry{}))))
		defer C.free(unsafe.Pointer(buf))
	}
	n, e := C.cv_query_gid_table(c.c, buf, C.size_t(maxEntries), C.uint32_t(flags))
	if n < 0 {
		if n == -1 {
			return nil, errOf("ibv_query_gid_table", e)
		}
		return nil, rcErr("ibv_query_gid_table", C.int(n))
	}
	all := unsafe.Slice(buf, maxEntries)
	out := make([]verbs.GIDEntry, n)
	for i := range out {
		out[i] = gidEntry(&all[i])
	}
	return out, nil
}

var _ verbs.ExQuerier = (*devContext)(nil)
