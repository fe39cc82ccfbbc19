package cabi

import (
	"bytes"
	"encoding/binary"
	"unsafe"

	"github.com/verbsim/verbsim/verbs"
)

// Bytes is the memory of *p, as C holds the struct.
func Bytes[T any](p *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), unsafe.Sizeof(*p))
}

// Read copies a T from the front of b, which need not be aligned; false
// when b is shorter than a T.
func Read[T any](b []byte) (T, bool) {
	var v T
	if len(b) < int(unsafe.Sizeof(v)) {
		return v, false
	}
	copy(Bytes(&v), b)
	return v, true
}

// Size is the size of a T in C.
func Size[T any]() int {
	var v T
	return int(unsafe.Sizeof(v))
}

func b2u(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// be64 swaps v between host order and the big-endian order of a __be64.
func be64(v uint64) uint64 {
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], v)
	return binary.BigEndian.Uint64(b[:])
}

// Verbs is the verbs.AHAttr a holds.
func (a *AHAttr) Verbs() verbs.AHAttr {
	return verbs.AHAttr{
		GRH: verbs.GlobalRoute{DGID: a.GRH.DGID, FlowLabel: a.GRH.FlowLabel, SGIDIndex: a.GRH.SGIDIndex,
			HopLimit: a.GRH.HopLimit, TrafficClass: a.GRH.TrafficClass},
		DLID: a.DLID, SL: a.SL, SrcPathBits: a.SrcPathBits, StaticRate: a.StaticRate,
		IsGlobal: a.IsGlobal != 0, PortNum: a.PortNum,
	}
}

// Set makes a hold v.
func (a *AHAttr) Set(v *verbs.AHAttr) {
	*a = AHAttr{
		GRH: GlobalRoute{DGID: v.GRH.DGID, FlowLabel: v.GRH.FlowLabel, SGIDIndex: v.GRH.SGIDIndex,
			HopLimit: v.GRH.HopLimit, TrafficClass: v.GRH.TrafficClass},
		DLID: v.DLID, SL: v.SL, SrcPathBits: v.SrcPathBits, StaticRate: v.StaticRate,
		IsGlobal: b2u(v.IsGlobal), PortNum: v.PortNum,
	}
}

// Verbs is the verbs.QPCap c holds.
func (c *QPCap) Verbs() verbs.QPCap { return verbs.QPCap(*c) }

// CapOf is v as a struct ibv_qp_cap.
func CapOf(v verbs.QPCap) QPCap { return QPCap(v) }

// Verbs is the verbs.QPAttr a holds.
func (a *QPAttr) Verbs() verbs.QPAttr {
	return verbs.QPAttr{
		QPState:          verbs.QPState(a.QPState),
		CurQPState:       verbs.QPState(a.CurQPState),
		PathMTU:          verbs.MTU(a.PathMTU),
		PathMigState:     verbs.MigState(a.PathMigState),
		QKey:             a.QKey,
		RQPSN:            a.RQPSN,
		SQPSN:            a.SQPSN,
		DestQPNum:        a.DestQPNum,
		QPAccessFlags:    verbs.AccessFlags(a.QPAccessFlags),
		Cap:              a.Cap.Verbs(),
		AHAttr:           a.AHAttr.Verbs(),
		AltAHAttr:        a.AltAHAttr.Verbs(),
		PKeyIndex:        a.PKeyIndex,
		AltPKeyIndex:     a.AltPKeyIndex,
		EnSQDAsyncNotify: a.EnSQDAsyncNotify != 0,
		SQDraining:       a.SQDraining != 0,
		MaxRDAtomic:      a.MaxRDAtomic,
		MaxDestRDAtomic:  a.MaxDestRDAtomic,
		MinRNRTimer:      a.MinRNRTimer,
		PortNum:          a.PortNum,
		Timeout:          a.Timeout,
		RetryCnt:         a.RetryCnt,
		RNRRetry:         a.RNRRetry,
		AltPortNum:       a.AltPortNum,
		AltTimeout:       a.AltTimeout,
		RateLimit:        a.RateLimit,
	}
}

// Set makes a hold v.
func (a *QPAttr) Set(v *verbs.QPAttr) {
	*a = QPAttr{
		QPState:          uint32(v.QPState),
		CurQPState:       uint32(v.CurQPState),
		PathMTU:          uint32(v.PathMTU),
		PathMigState:     uint32(v.PathMigState),
		QKey:             v.QKey,
		RQPSN:            v.RQPSN,
		SQPSN:            v.SQPSN,
		DestQPNum:        v.DestQPNum,
		QPAccessFlags:    uint32(v.QPAccessFlags),
		Cap:              CapOf(v.Cap),
		PKeyIndex:        v.PKeyIndex,
		AltPKeyIndex:     v.AltPKeyIndex,
		EnSQDAsyncNotify: b2u(v.EnSQDAsyncNotify),
		SQDraining:       b2u(v.SQDraining),
		MaxRDAtomic:      v.MaxRDAtomic,
		MaxDestRDAtomic:  v.MaxDestRDAtomic,
		MinRNRTimer:      v.MinRNRTimer,
		PortNum:          v.PortNum,
		Timeout:          v.Timeout,
		RetryCnt:         v.RetryCnt,
		RNRRetry:         v.RNRRetry,
		AltPortNum:       v.AltPortNum,
		AltTimeout:       v.AltTimeout,
		RateLimit:        v.RateLimit,
	}
	a.AHAttr.Set(&v.AHAttr)
	a.AltAHAttr.Set(&v.AltAHAttr)
}

// Verbs is the verbs.PortAttr a holds.
func (a *PortAttr) Verbs() verbs.PortAttr {
	return verbs.PortAttr{
		State: verbs.PortState(a.State), MaxMTU: verbs.MTU(a.MaxMTU), ActiveMTU: verbs.MTU(a.ActiveMTU),
		GIDTblLen: int(a.GIDTblLen), PortCapFlags: a.PortCapFlags, MaxMsgSz: a.MaxMsgSz,
		BadPKeyCntr: a.BadPKeyCntr, QKeyViolCntr: a.QKeyViolCntr, PKeyTblLen: a.PKeyTblLen,
		LID: a.LID, SMLID: a.SMLID, LMC: a.LMC, MaxVLNum: a.MaxVLNum, SMSL: a.SMSL,
		SubnetTimeout: a.SubnetTimeout, InitTypeReply: a.InitTypeReply, ActiveWidth: a.ActiveWidth,
		ActiveSpeed: a.ActiveSpeed, PhysState: a.PhysState, LinkLayer: verbs.LinkLayer(a.LinkLayer),
		Flags: a.Flags, PortCapFlags2: a.PortCapFlags2,
	}
}

// Set makes a hold v.
func (a *PortAttr) Set(v *verbs.PortAttr) {
	*a = PortAttr{
		State: uint32(v.State), MaxMTU: uint32(v.MaxMTU), ActiveMTU: uint32(v.ActiveMTU),
		GIDTblLen: int32(v.GIDTblLen), PortCapFlags: v.PortCapFlags, MaxMsgSz: v.MaxMsgSz,
		BadPKeyCntr: v.BadPKeyCntr, QKeyViolCntr: v.QKeyViolCntr, PKeyTblLen: v.PKeyTblLen,
		LID: v.LID, SMLID: v.SMLID, LMC: v.LMC, MaxVLNum: v.MaxVLNum, SMSL: v.SMSL,
		SubnetTimeout: v.SubnetTimeout, InitTypeReply: v.InitTypeReply, ActiveWidth: v.ActiveWidth,
		ActiveSpeed: v.ActiveSpeed, PhysState: v.PhysState, LinkLayer: uint8(v.LinkLayer),
		Flags: v.Flags, PortCapFlags2: v.PortCapFlags2,
	}
}

// Verbs is the verbs.DeviceAttr a holds, with the given number of
// completion vectors (ibv_context.num_comp_vectors, not in the struct).
func (a *DeviceAttr) Verbs(vectors int) verbs.DeviceAttr {
	fw := a.FWVer[:]
	if i := bytes.IndexByte(fw, 0); i >= 0 {
		fw = fw[:i]
	}
	return verbs.DeviceAttr{
		FWVer: string(fw), NodeGUID: be64(a.NodeGUID), SysImageGUID: be64(a.SysImageGUID),
		MaxMRSize: a.MaxMRSize, VendorID: a.VendorID, VendorPartID: a.VendorPartID,
		MaxQP: int(a.MaxQP), MaxQPWR: int(a.MaxQPWR), DeviceCapFlags: verbs.DeviceCapFlags(a.DeviceCapFlags),
		MaxSGE: int(a.MaxSGE), MaxSGERD: int(a.MaxSGERD), MaxCQ: int(a.MaxCQ), MaxCQE: int(a.MaxCQE),
		MaxMR: int(a.MaxMR), MaxMW: int(a.MaxMW), MaxPD: int(a.MaxPD), MaxQPRDAtom: int(a.MaxQPRDAtom),
		MaxQPInitRDAtom: int(a.MaxQPInitRDAtom), AtomicCap: verbs.AtomicCap(a.AtomicCap),
		MaxAH: int(a.MaxAH), MaxSRQ: int(a.MaxSRQ), MaxSRQWR: int(a.MaxSRQWR), MaxSRQSGE: int(a.MaxSRQSGE),
		PhysPortCnt: a.PhysPortCnt, NumCompVectors: vectors,
	}
}

// Set makes a hold v as a device reports it: the fields of
// struct ibv_device_attr that verbs.DeviceAttr has no counterpart for are
// those of verbsim's devices (4 KiB pages and up, 128 P_Keys, an ACK delay
// of 16, max_res_rd_atom as max_qp times max_qp_rd_atom).
func (a *DeviceAttr) Set(v *verbs.DeviceAttr) {
	*a = DeviceAttr{
		NodeGUID: be64(v.NodeGUID), SysImageGUID: be64(v.SysImageGUID), MaxMRSize: v.MaxMRSize,
		PageSizeCap: 0xfffff000, VendorID: v.VendorID, VendorPartID: v.VendorPartID,
		MaxQP: int32(v.MaxQP), MaxQPWR: int32(v.MaxQPWR), DeviceCapFlags: uint32(v.DeviceCapFlags),
		MaxSGE: int32(v.MaxSGE), MaxSGERD: int32(v.MaxSGERD), MaxCQ: int32(v.MaxCQ), MaxCQE: int32(v.MaxCQE),
		MaxMR: int32(v.MaxMR), MaxPD: int32(v.MaxPD), MaxQPRDAtom: int32(v.MaxQPRDAtom),
		MaxResRDAtom: int32(v.MaxQP * v.MaxQPRDAtom), MaxQPInitRDAtom: int32(v.MaxQPInitRDAtom),
		AtomicCap: uint32(v.AtomicCap), MaxMW: int32(v.MaxMW), MaxAH: int32(v.MaxAH),
		MaxSRQ: int32(v.MaxSRQ), MaxSRQWR: int32(v.MaxSRQWR), MaxSRQSGE: int32(v.MaxSRQSGE),
		MaxPKeys: 128, LocalCAAckDelay: 16, PhysPortCnt: v.PhysPortCnt,
	}
	copy(a.FWVer[:len(a.FWVer)-1], v.FWVer)
}

// Verbs is the verbs.DeviceAttrEx a holds; vectors as for DeviceAttr.
func (a *DeviceAttrEx) Verbs(vectors int) verbs.DeviceAttrEx {
	return verbs.DeviceAttrEx{
		Orig:     a.Orig.Verbs(vectors),
		CompMask: a.CompMask,
		ODPCaps: verbs.ODPCaps{GeneralCaps: a.ODPCaps.GeneralCaps, RCODPCaps: a.ODPCaps.RCODPCaps,
			UCODPCaps: a.ODPCaps.UCODPCaps, UDODPCaps: a.ODPCaps.UDODPCaps},
		CompletionTimestampMask: a.CompletionTimestampMask,
		HCACoreClock:            a.HCACoreClock,
		DeviceCapFlagsEx:        a.DeviceCapFlagsEx,
		TSOCaps:                 verbs.TSOCaps{MaxTSO: a.TSOMaxTSO, SupportedQPTs: a.TSOSupportedQPTs},
		RSSCaps: verbs.RSSCaps{SupportedQPTs: a.RSSCaps.SupportedQPTs,
			MaxRWQIndirectionTables:    a.RSSCaps.MaxRWQIndirectionTables,
			MaxRWQIndirectionTableSize: a.RSSCaps.MaxRWQIndirectionTableSize,
			RXHashFieldsMask:           a.RSSCaps.RXHashFieldsMask, RXHashFunction: a.RSSCaps.RXHashFunction},
		MaxWQTypeRQ: a.MaxWQTypeRQ,
		PacketPacingCaps: verbs.PacketPacingCaps{QPRateLimitMin: a.PacingRateLimitMin,
			QPRateLimitMax: a.PacingRateLimitMax, SupportedQPTs: a.PacingSupportedQPTs},
		RawPacketCaps: a.RawPacketCaps,
		TMCaps: verbs.TMCaps{MaxRndvHdrSize: a.TMMaxRndvHdrSize, MaxNumTags: a.TMMaxNumTags,
			Flags: a.TMFlags, MaxOps: a.TMMaxOps, MaxSGE: a.TMMaxSGE},
		CQModCaps: verbs.CQModCaps{MaxCQCount: a.CQModMaxCount, MaxCQPeriod: a.CQModMaxPeriod},
		MaxDMSize: a.MaxDMSize,
		PCIAtomicCaps: verbs.PCIAtomicCaps{FetchAdd: a.PCIAtomicFetchAdd, Swap: a.PCIAtomicSwap,
			CompareSwap: a.PCIAtomicCompareSwap},
		XRCODPCaps:    a.XRCODPCaps,
		PhysPortCntEx: a.PhysPortCntEx,
	}
}

// Set makes a hold v (its orig_attr as DeviceAttr.Set has it).
func (a *DeviceAttrEx) Set(v *verbs.DeviceAttrEx) {
	*a = DeviceAttrEx{
		CompMask: v.CompMask,
		ODPCaps: ODPCaps{GeneralCaps: v.ODPCaps.GeneralCaps, RCODPCaps: v.ODPCaps.RCODPCaps,
			UCODPCaps: v.ODPCaps.UCODPCaps, UDODPCaps: v.ODPCaps.UDODPCaps},
		CompletionTimestampMask: v.CompletionTimestampMask,
		HCACoreClock:            v.HCACoreClock,
		DeviceCapFlagsEx:        v.DeviceCapFlagsEx,
		TSOMaxTSO:               v.TSOCaps.MaxTSO,
		TSOSupportedQPTs:        v.TSOCaps.SupportedQPTs,
		RSSCaps: RSSCaps{SupportedQPTs: v.RSSCaps.SupportedQPTs,
			MaxRWQIndirectionTables:    v.RSSCaps.MaxRWQIndirectionTables,
			MaxRWQIndirectionTableSize: v.RSSCaps.MaxRWQIndirectionTableSize,
			RXHashFieldsMask:           v.RSSCaps.RXHashFieldsMask, RXHashFunction: v.RSSCaps.RXHashFunction},
		MaxWQTypeRQ:          v.MaxWQTypeRQ,
		PacingRateLimitMin:   v.PacketPacingCaps.QPRateLimitMin,
		PacingRateLimitMax:   v.PacketPacingCaps.QPRateLimitMax,
		PacingSupportedQPTs:  v.PacketPacingCaps.SupportedQPTs,
		RawPacketCaps:        v.RawPacketCaps,
		TMMaxRndvHdrSize:     v.TMCaps.MaxRndvHdrSize,
		TMMaxNumTags:         v.TMCaps.MaxNumTags,
		TMFlags:              v.TMCaps.Flags,
		TMMaxOps:             v.TMCaps.MaxOps,
		TMMaxSGE:             v.TMCaps.MaxSGE,
		CQModMaxCount:        v.CQModCaps.MaxCQCount,
		CQModMaxPeriod:       v.CQModCaps.MaxCQPeriod,
		MaxDMSize:            v.MaxDMSize,
		PCIAtomicFetchAdd:    v.PCIAtomicCaps.FetchAdd,
		PCIAtomicSwap:        v.PCIAtomicCaps.Swap,
		PCIAtomicCompareSwap: v.PCIAtomicCaps.CompareSwap,
		XRCODPCaps:           v.XRCODPCaps,
		PhysPortCntEx:        v.PhysPortCntEx,
	}
	a.Orig.Set(&v.Orig)
}

// Verbs is the verbs.SRQAttr a holds.
func (a *SRQAttr) Verbs() verbs.SRQAttr { return verbs.SRQAttr(*a) }

// SRQAttrOf is v as a struct ibv_srq_attr.
func SRQAttrOf(v verbs.SRQAttr) SRQAttr { return SRQAttr(v) }

// Verbs is the verbs.WC w holds.
func (w *WC) Verbs() verbs.WC {
	return verbs.WC{
		WRID: w.WRID, Status: verbs.WCStatus(w.Status), Opcode: verbs.WCOpcode(w.Opcode),
		VendorErr: w.VendorErr, ByteLen: w.ByteLen, ImmData: w.ImmData, QPNum: w.QPNum, SrcQP: w.SrcQP,
		WCFlags: verbs.WCFlags(w.WCFlags), PKeyIndex: w.PKeyIndex, SLID: w.SLID, SL: w.SL,
		DLIDPathBits: w.DLIDPathBits,
	}
}

// Set makes w hold v.
func (w *WC) Set(v *verbs.WC) {
	*w = WC{
		WRID: v.WRID, Status: uint32(v.Status), Opcode: uint32(v.Opcode), VendorErr: v.VendorErr,
		ByteLen: v.ByteLen, ImmData: v.ImmData, QPNum: v.QPNum, SrcQP: v.SrcQP, WCFlags: uint32(v.WCFlags),
		PKeyIndex: v.PKeyIndex, SLID: v.SLID, SL: v.SL, DLIDPathBits: v.DLIDPathBits,
	}
}

// Verbs is the verbs.SGE s holds.
func (s *SGE) Verbs() verbs.SGE { return verbs.SGE(*s) }

// SGEOf is v as a struct ibv_sge.
func SGEOf(v verbs.SGE) SGE { return SGE(v) }
