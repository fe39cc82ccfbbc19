package sim

import (
	"fmt"

	"github.com/verbsim/verbsim/sim/internal/cq"
	"github.com/verbsim/verbsim/sim/internal/notify"
	"github.com/verbsim/verbsim/sim/internal/qp"
)

// Profile selects the reading of every rule on which providers disagree
// (the [IMPL] and [CONFLICT] rows of the rule catalogue). It is data: the
// engine consults it at the few places where readings differ.
//
// The zero Profile is the default, which follows the rdma-core man pages.
type Profile struct {
	// Name identifies the profile in traces and test names.
	Name string
	// CQOverrun: what an overrun leaves behind (CQ-23).
	CQOverrun cq.OverrunPolicy
	// CQDestroy: destroying a CQ with read but unacked events waits (libibverbs)
	// or fails with EBUSY (CQ-13).
	CQDestroy cq.DestroyPolicy
	// CQRounding: how a requested cqe becomes the capacity (CQ-02).
	CQRounding cq.Rounding
	// Solicited: which unsuccessful completions wake a solicited-only arm
	// (NOTIFY-05).
	Solicited notify.SolicitedPolicy
	// QP: the readings of the QP verbs: RESET→ERR (QP-08), the
	// reading of CUR_STATE (QP-12), and when a work-queue slot is free
	// again (QP-29, QP-31).
	QP qp.Policy
	// SRQLimitAtCreate: a srq_limit given to ibv_create_srq arms the limit,
	// as rxe does; the man page says it is ignored (SRQ-01).
	SRQLimitAtCreate bool
	// DeregBoundEINVAL: ibv_dereg_mr of an MR with bound memory windows
	// fails with EINVAL, as rxe's rxe_dereg_mr says; false: EBUSY, the
	// core's use count (MR-06).
	DeregBoundEINVAL bool
	// MWType1NoZeroBased: a type 1 window cannot be bound ZERO_BASED
	// (MW_BIND_ERR), as rxe enforces IBTA o10-36.2.2; false: it can, as
	// the ibv_bind_mw man page lists the flag without restriction (MW-05).
	MWType1NoZeroBased bool
	// Transport: the readings of the transport rules (XFER-05, XFER-10,
	// XFER-16, ASYNC-11, ASYNC-13, WC-13, FLUSH-10, CQ-24).
	Transport qp.TransportPolicy
	// MR: the readings of ibv_rereg_mr (MR-14, MR-15, MR-16).
	MR MRPolicy
	// CQNoTimestamps: ibv_create_cq_ex refuses the completion-timestamp
	// wc_flags with EOPNOTSUPP, as rxe, whose provider supports only
	// IBV_WC_STANDARD_FLAGS, does (CQX-02). False: a CQ may ask for them.
	CQNoTimestamps bool
	// NoXRC: the device has no XRC verbs, as rxe's provider has none:
	// ibv_open_xrcd and an ibv_create_srq_ex that ibv_create_srq cannot
	// serve fail with EOPNOTSUPP, libibverbs' answer for a provider
	// without them (XRC-03). False: XRC domains and XRC SRQs work.
	NoXRC bool
}

// DefaultProfile returns the profile that follows the man pages: the "Sim
// default" reading of every rule.
func DefaultProfile() Profile { return Profile{Name: "default"} }

// RXEProfile returns the profile of Linux soft-RoCE (rxe) where it differs
// from the man pages (spec/catalogue.md §12): an overrun loses one completion and the
// CQ keeps going (CQ-23 B), send-side errors never wake a solicited-only arm
// (NOTIFY-05 B), CUR_STATE is trusted (QP-12), a work-queue slot is free as
// soon as its request completes or is flushed, before any poll (QP-29 B), a
// srq_limit given at creation arms the limit (SRQ-01), deregistering an MR
// with bound windows is EINVAL (MR-06), a type 1 window cannot be bound
// ZERO_BASED (MW-05), and the transport
// readings of qp.RXETransport (XFER-05 B, XFER-10 B, XFER-16 B, ASYNC-11,
// ASYNC-13, WC-13, FLUSH-10 B, CQ-24 B), ibv_rereg_mr as rxe_rereg_user_mr
// does it (RXEMRPolicy: MR-14 B, MR-15 B, MR-16 B), and ibv_create_cq_ex
// offers no completion timestamps (CQX-02), and there are no XRC verbs
// (XRC-03).
func RXEProfile() Profile {
	return Profile{
		Name:               "rxe",
		CQOverrun:          cq.OverrunDrop,
		Solicited:          notify.SolicitedBitOnly,
		QP:                 qp.RXEPolicy(),
		SRQLimitAtCreate:   true,
		DeregBoundEINVAL:   true,
		MWType1NoZeroBased: true,
		Transport:          qp.RXETransport(),
		MR:                 RXEMRPolicy(),
		CQNoTimestamps:     true,
		NoXRC:              true,
	}
}

// Profiles returns every built-in profile, default first.
func Profiles() []Profile { return []Profile{DefaultProfile(), RXEProfile()} }

func (p Profile) validate() error {
	if p.CQOverrun > cq.OverrunDrop || p.CQDestroy > cq.DestroyBusy ||
		p.CQRounding > cq.RoundExact || p.Solicited > notify.SolicitedBitOnly ||
		p.QP.CurState > qp.CurStateTrusted {
		return fmt.Errorf("sim: profile %q has an unknown policy value", p.Name)
	}
	return nil
}

// String returns the profile's name and readings.
func (p Profile) String() string {
	name := p.Name
	if name == "" {
		name = "default"
	}
	slots := "poll"
	if p.QP.FreeSlotOnRetire {
		slots = "retire"
	}
	return fmt.Sprintf("%s (overrun=%s destroy=%s rounding=%s solicited=%s reset-to-err=%v cur-state=%s slot-free-on=%s srq-limit-at-create=%v dereg-bound-einval=%v mw1-no-zero-based=%v rereg=%s cq-timestamps=%v xrc=%v transport=%s)",
		name, p.CQOverrun, p.CQDestroy, p.CQRounding, p.Solicited, p.QP.ResetToErr, p.QP.CurState, slots, p.SRQLimitAtCreate,
		p.DeregBoundEINVAL, p.MWType1NoZeroBased, p.MR, !p.CQNoTimestamps, !p.NoXRC, p.Transport)
}
