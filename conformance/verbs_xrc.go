package conformance

import "github.com/verbsim/verbsim/verbs"

// XRC (XRC-01..05) is optional: a device context that has XRC domains
// implements XRCOpener. Without it the XRC cases log that they checked
// nothing. A device whose profile says NoXRC must still implement it, and
// refuse (XRC-03).

// XRCOpener is an optional capability of a Context: ibv_open_xrcd and
// ibv_create_srq_ex.
type XRCOpener interface {
	// OpenXRCD is ibv_open_xrcd with struct ibv_xrcd_init_attr's comp_mask,
	// fd and oflags.
	OpenXRCD(compMask uint32, fd, oflags int) (XRCD, error)
	// CreateSRQEx is ibv_create_srq_ex. The SRQ it returns also implements
	// SRQNumGetter.
	CreateSRQEx(attr SRQInitAttrEx) (SRQ, error)
}

// XRCD is an XRC domain: verbs.XRCD.
type XRCD = verbs.XRCD

// SRQInitAttrEx holds the arguments of ibv_create_srq_ex the suite uses
// (struct ibv_srq_init_attr_ex without srq_context and tm_cap).
type SRQInitAttrEx struct {
	MaxWR, MaxSGE uint32 // attr.max_wr, attr.max_sge
	CompMask      uint32 // enum ibv_srq_init_attr_mask
	Type          uint32 // srq_type: 0 BASIC, 1 XRC, 2 TM
	PD            PD
	XRCD          XRCD
	CQ            CQ
}

// The ibv_srq_init_attr_ex comp_mask bits and srq_type values of verbs.h.
const (
	srqInitType = 1 << 0
	srqInitPD   = 1 << 1
	srqInitXRCD = 1 << 2
	srqInitCQ   = 1 << 3
	srqInitTM   = 1 << 4
	srqtBasic   = 0
	srqtXRC     = 1
	srqtTM      = 2
	// xrcdFDOFlags is IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS.
	xrcdFDOFlags = 1<<0 | 1<<1
)
