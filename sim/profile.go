package sim

import (
	"github.com/verbsim/verbsim/sim/internal/policy"
	"github.com/verbsim/verbsim/verbs"
)

// Profile names a set of readings of the rules on which providers disagree
// (the [IMPL] and [CONFLICT] rows of the rule catalogue). It is data: the
// engine consults its readings at the few places where they differ.
//
// The readings are a verbs.Readings, embedded, so p.OverrunDrops is one of
// them; the conformance suite and its model read the same type. The zero
// Profile is the default, which follows the rdma-core man pages.
type Profile struct {
	// Name identifies the profile in traces and test names.
	Name string
	verbs.Readings
}

// DefaultProfile returns the profile that follows the man pages: the "Sim
// default" reading of every rule.
func DefaultProfile() Profile { return Profile{Name: "default"} }

// RXEProfile returns the profile of Linux soft-RoCE (rxe) where it differs
// from the man pages (spec/catalogue.md §12): every reading of
// verbs.Readings except DestroyBusyOnUnacked and ExactCQE, which are
// stricter settings for tests, and ResetToErr, the IBTA's RESET→ERR that
// rxe's table refuses. That is: an overrun loses one completion and the CQ
// keeps going (CQ-23 B), a send completion lost to an overrun leaves the QP
// alone (CQ-24 B), no completion timestamps (CQX-02), send-side errors never
// wake a solicited-only arm (NOTIFY-05 B), CUR_STATE is trusted (QP-12), a
// work-queue slot is free as soon as its request completes or is flushed
// (QP-29 B), an opcode the transport does not take is posted and completes
// with LOC_QP_OP_ERR (QP-33 B), rxe's work request builder (QPX-01, QPX-04), a srq_limit given
// at creation arms the limit (SRQ-01), SRQ receives checked against the QP's
// PD (SRQ-12 B), no XRC verbs (XRC-03), no device memory (DM-02),
// deregistering an MR with bound windows is EINVAL (MR-06), ibv_rereg_mr as
// rxe_rereg_user_mr does it (MR-14 B, MR-15 B, MR-16 B), no on-demand paging
// (ODP-01, ODP-02, ODP-04), a type 1 window cannot be bound ZERO_BASED
// (MW-05), and the transport readings XFER-05 B, XFER-10 B, XFER-16 B,
// XFER-29 B, XFER-30 B, XFER-31 B, FLUSH-10 B, WC-13, ASYNC-11 and
// ASYNC-13, and GRHs without a flow label (AV-05 B).
func RXEProfile() Profile {
	return Profile{Name: "rxe", Readings: verbs.Readings{
		OverrunDrops:          true,
		OverrunSendIgnored:    true,
		NoCQTimestamps:        true,
		SolicitedBitOnly:      true,
		CurStateTrusted:       true,
		FreeSlotOnRetire:      true,
		TransportOpLocQPOp:    true,
		SendOpsRXE:            true,
		SRQLimitAtCreate:      true,
		SRQRecvQPPD:           true,
		NoXRC:                 true,
		NoDM:                  true,
		DeregBoundEINVAL:      true,
		ReregFailKeepsMR:      true,
		ReregKeepsKeys:        true,
		ReregNoTranslation:    true,
		NoODP:                 true,
		MWType1NoZeroBased:    true,
		RecvTooSmallRemInvReq: true,
		InfiniteRetry7:        true,
		RecvProtQPOp:          true,
		WriteImmRKeyRemAccess: true,
		LateLocalCheck:        true,
		SendInvErrAcked:       true,
		NoSQE:                 true,
		SendWCImm:             true,
		NoQPEvents:            true,
		AlwaysSQDrained:       true,
		NoFlowLabel:           true,
	}}
}

// Profiles returns every built-in profile, default first.
func Profiles() []Profile { return []Profile{DefaultProfile(), RXEProfile()} }

// engine returns the policies of the engine packages that follow p's
// readings: the one place where a reading becomes engine configuration
// (policy.Of).
func (p Profile) engine() policy.Engine { return policy.Of(p.Readings) }

// String returns the profile's name and the readings in which it differs
// from the man pages (verbs.Readings.String), e.g. "default (man-pages)".
func (p Profile) String() string {
	name := p.Name
	if name == "" {
		name = "default"
	}
	return name + " (" + p.Readings.String() + ")"
}
