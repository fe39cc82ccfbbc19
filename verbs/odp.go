package verbs

import "fmt"

// On-demand paging (ODP): an MR registered with AccessOnDemand has no
// pages pinned; the adapter faults them in when a work request touches
// them, and ibv_advise_mr may fault a range in ahead of time. What a device
// offers is in DeviceAttrEx.ODPCaps and XRCODPCaps (ODP-01).

// ODPGeneralCaps is enum ibv_odp_general_cap_bits, the bits of
// ODPCaps.GeneralCaps.
type ODPGeneralCaps = uint64

// The general ODP capabilities, with verbs.h values.
const (
	// ODPSupport (IBV_ODP_SUPPORT): ibv_reg_mr accepts AccessOnDemand.
	ODPSupport ODPGeneralCaps = 1 << 0
	// ODPSupportImplicit (IBV_ODP_SUPPORT_IMPLICIT): an on-demand MR may
	// cover the whole address space (addr NULL, length SIZE_MAX).
	ODPSupportImplicit ODPGeneralCaps = 1 << 1
)

// ODPTransportCaps is enum ibv_odp_transport_cap_bits, the bits of the
// per-transport ODP capabilities (ODPCaps.RCODPCaps and its siblings,
// DeviceAttrEx.XRCODPCaps): which operations may use on-demand MRs.
type ODPTransportCaps = uint32

// The per-transport ODP capabilities, with verbs.h values.
const (
	ODPSupportSend    ODPTransportCaps = 1 << 0 // IBV_ODP_SUPPORT_SEND: the gather list of a send
	ODPSupportRecv    ODPTransportCaps = 1 << 1 // IBV_ODP_SUPPORT_RECV: the scatter list of a receive WR
	ODPSupportWrite   ODPTransportCaps = 1 << 2 // IBV_ODP_SUPPORT_WRITE: the target of an RDMA WRITE
	ODPSupportRead    ODPTransportCaps = 1 << 3 // IBV_ODP_SUPPORT_READ: the source of an RDMA READ
	ODPSupportAtomic  ODPTransportCaps = 1 << 4 // IBV_ODP_SUPPORT_ATOMIC: the target of an atomic
	ODPSupportSRQRecv ODPTransportCaps = 1 << 5 // IBV_ODP_SUPPORT_SRQ_RECV: the scatter list of an SRQ receive WR
)

// AdviseMRAdvice is enum ibv_advise_mr_advice: what ibv_advise_mr asks of
// the ranges it names (ODP-04).
type AdviseMRAdvice uint32

// The advice values, with verbs.h values.
const (
	// AdvisePrefetch (IBV_ADVISE_MR_ADVICE_PREFETCH): fault the pages in
	// for reading.
	AdvisePrefetch AdviseMRAdvice = 0
	// AdvisePrefetchWrite (IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE): fault
	// them in for reading and writing; the MR must be writable.
	AdvisePrefetchWrite AdviseMRAdvice = 1
	// AdvisePrefetchNoFault (IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT): map
	// the pages already present, without faulting.
	AdvisePrefetchNoFault AdviseMRAdvice = 2
)

// String returns the verbs.h name less its prefix, e.g. "PREFETCH_WRITE".
func (a AdviseMRAdvice) String() string {
	switch a {
	case AdvisePrefetch:
		return "PREFETCH"
	case AdvisePrefetchWrite:
		return "PREFETCH_WRITE"
	case AdvisePrefetchNoFault:
		return "PREFETCH_NO_FAULT"
	}
	return fmt.Sprintf("AdviseMRAdvice(%d)", uint32(a))
}

// AdviseMRFlags is enum ibv_advise_mr_flag.
type AdviseMRFlags uint32

// AdviseMRFlagFlush (IBV_ADVISE_MR_FLAG_FLUSH) makes ibv_advise_mr
// synchronous: it returns once the work is done, and reports what failed.
const AdviseMRFlagFlush AdviseMRFlags = 1 << 0

// MRAdviser is an optional capability of a PD: ibv_advise_mr (ODP-04 to
// ODP-06). A device without on-demand paging may implement it and fail
// with EOPNOTSUPP.
type MRAdviser interface {
	// AdviseMR is ibv_advise_mr over the ranges of sgl, each an address
	// range of the on-demand MR whose lkey it carries.
	AdviseMR(advice AdviseMRAdvice, flags AdviseMRFlags, sgl []SGE) error
}
