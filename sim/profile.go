package sim

import (
	"fmt"
	"strings"

	"github.com/verbsim/verbsim/sim/internal/policy"
	"github.com/verbsim/verbsim/verbs"
)

// Profile names a provider's behaviour where providers disagree: the
// readings of the rules on which they differ (the [IMPL] and [CONFLICT]
// rows of the rule catalogue, and the capabilities a provider may lack),
// and the attributes of the provider's typical adapter. It is data: the
// engine consults its readings at the few places where they differ.
//
// The readings are a verbs.Readings, embedded, so p.OverrunDrops is one of
// them; the conformance suite and its model read the same type. The zero
// Profile is the default, which follows the rdma-core man pages.
//
// The built-in profiles (Profiles) are the default, rxe (Linux soft-RoCE),
// mlx5 (NVIDIA ConnectX), siw (soft-iWARP) and irdma (Intel E810); each of
// their readings names its source (Profile.Source, docs/profiles.md).
// Readings may be changed on top of a profile (verbs.Readings.Apply): the
// result is a profile of its own, no provider's.
type Profile struct {
	// Name identifies the profile in traces and test names.
	Name string
	verbs.Readings
	// Device is the attributes of the provider's typical adapter: the
	// devices of a fabric whose DeviceConfig.Attr is zero take them, and
	// fill the zero fields of a partial one from them. Zero:
	// DefaultDeviceAttr. Whatever they say, a reading that takes a
	// capability away wins (NoXRC clears IBV_DEVICE_XRC, NoMW max_mw, ...).
	Device verbs.DeviceAttr
	// Link is the link layer of the ports whose PortConfig leaves it unset:
	// Ethernet for siw and irdma. Zero: InfiniBand.
	Link verbs.LinkLayer
}

// DefaultProfile returns the profile that follows the man pages: the "Sim
// default" reading of every rule, on a device with DefaultDeviceAttr and
// InfiniBand ports.
func DefaultProfile() Profile { return Profile{Name: "default"} }

// RXEProfile returns the profile of Linux soft-RoCE (rxe) where it differs
// from the man pages (spec/catalogue.md §12): an overrun loses one
// completion and the CQ keeps going (CQ-23 B), a send completion lost to an
// overrun leaves the QP alone (CQ-24 B), no completion timestamps (CQX-02),
// send-side errors never wake a solicited-only arm (NOTIFY-05 B), CUR_STATE
// is trusted (QP-12), a work-queue slot is free as soon as its request
// completes or is flushed (QP-29 B), an opcode the transport does not take
// is posted and completes with LOC_QP_OP_ERR (QP-33 B), rxe's work request
// builder (QPX-01, QPX-04), a srq_limit given at creation arms the limit
// (SRQ-01), SRQ receives checked against the QP's PD (SRQ-12 B), no XRC
// verbs (XRC-03), no device memory (DM-02), deregistering an MR with bound
// windows is EINVAL (MR-06), ibv_rereg_mr as rxe_rereg_user_mr does it
// (MR-14 B, MR-15 B, MR-16 B), no on-demand paging (ODP-01, ODP-02, ODP-04),
// a type 1 window cannot be bound ZERO_BASED (MW-05), and the transport
// readings XFER-05 B, XFER-10 B, XFER-16 B, XFER-29 B, XFER-30 B, XFER-31 B,
// FLUSH-10 B, WC-13, ASYNC-11 and ASYNC-13, and GRHs without a flow label
// (AV-05 B). Its device attributes are DefaultDeviceAttr's. Its Link is left
// unset, so its ports are InfiniBand unless configured otherwise, as they
// were before profiles had a link layer: programs and tests written for it
// address ports by LID. (rxe runs on Ethernet; the drop-in library gives it
// Ethernet ports, docs/c-programs.md.)
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

// MLX5Profile returns the profile of NVIDIA's ConnectX adapters through
// rdma-core's mlx5 provider, the hardware most RDMA software is developed
// on: ibv_post_send before RTS fails with ENOMEM (QP-26 D: since rdma-core
// 40 the provider gives a QP that has not reached RTS a limit of -1 SGEs per
// request; receives are refused in RESET with EINVAL, as in the default),
// and so does a send with more SGEs than max_send_sge or more inline bytes
// than max_inline_data (QP-28 B: the same limit), a QP's completions are
// purged from its CQs when it is reset or destroyed (CQ-26 B), ibv_rereg_mr
// keeps the keys and a failed one leaves the MR as it was (MR-14 B, MR-15
// B), CUR_STATE is trusted (QP-12), send completions of *_WITH_IMM carry
// IBV_WC_WITH_IMM (WC-13), a SEND_WITH_INV the responder cannot invalidate
// is acknowledged (XFER-29 B), and an opcode the QP's transport does not
// take (an RDMA WRITE on UD, a READ on UC) is posted, the provider's post
// path not checking it, and fails as it executes (QP-33 B). Work-queue slots
// come back when their completions are polled (QP-29 A, mlx5_wq_overflow),
// as in the default. Its device is DefaultDeviceAttr's ConnectX-6 on
// InfiniBand ports. rdma-core's test suite (python3-pyverbs) passes under it
// unchanged.
//
// Not modelled: mlx5's gate is sticky. A QP that went to ERR without
// passing INIT (receives) or RTS (sends) refuses posts there too, where
// verbsim accepts and flushes them.
func MLX5Profile() Profile {
	return Profile{Name: "mlx5", Readings: verbs.Readings{
		CurStateTrusted:    true,
		ReregFailKeepsMR:   true,
		ReregKeepsKeys:     true,
		SendInvErrAcked:    true,
		SendWCImm:          true,
		ResetPurgesCQ:      true,
		PostENOMEM:         true,
		TransportOpLocQPOp: true,
	}}
}

// SIWProfile returns the profile of Linux soft-iWARP (siw) with rdma-core's
// siw provider, on an Ethernet port: iWARP's transport offers RC QPs only
// (QP-41), no atomics (QP-42) and no immediate data (QP-43); siw adds no
// memory windows (MW-08), no extended CQs (CQX-11) or QPs (QPX-06), no
// ibv_rereg_mr (MR-18), XRC, device memory or on-demand paging; a send
// posted before RTS fails with ENOTCONN (QP-26 C), a CQ overrun loses the
// completion and the CQ carries on (CQ-23 B), a solicited-only arm wakes
// only for completions marked solicited (NOTIFY-05 B), slots come back as
// soon as requests are taken (QP-29 B) and a srq_limit given at creation
// arms the limit (SRQ-01). Its device attributes are siw's (siw.h,
// siw_query_device): 6 SGEs, 1 for an RDMA READ, 80 bytes inline, no
// atomics, no windows.
//
// Not modelled: iWARP connects QPs through the iWARP connection manager
// (rdma_connect), and siw refuses an ibv_modify_qp to RTS without that
// connection; verbsim lets ibv_modify_qp connect siw's QPs as InfiniBand
// does, so that the rest of siw's behaviour can be tried.
func SIWProfile() Profile {
	return Profile{Name: "siw", Link: verbs.LinkLayerEthernet, Device: siwDeviceAttr(), Readings: verbs.Readings{
		OverrunDrops:     true,
		SolicitedBitOnly: true,
		FreeSlotOnRetire: true,
		SRQLimitAtCreate: true,
		NoCQTimestamps:   true,
		NoXRC:            true,
		NoDM:             true,
		NoODP:            true,
		PostENOTCONN:     true,
		NoUD:             true,
		NoUC:             true,
		NoAtomics:        true,
		NoImmData:        true,
		NoMW:             true,
		NoCQEx:           true,
		NoQPEx:           true,
		NoRereg:          true,
	}}
}

// IRDMAProfile returns the profile of Intel's E810 (irdma, gen 2) in RoCE
// v2 mode with rdma-core's irdma provider, on an Ethernet port: RC and UD
// QPs but no UC (QP-41), no atomics (QP-42: atomic_cap NONE), no SRQs
// (SRQ-13), no extended QPs (QPX-06), no ibv_rereg_mr (MR-18), XRC, device
// memory or on-demand paging, and posts before RTS accepted (QP-25,
// QP-26: the provider never looks at the QP state), and an RDMA opcode on
// a UD QP posted, to fail as it executes (QP-33 B). Its device attributes
// are the E810's as irdma reports them (irdma_query_device, the uk
// attributes of rdma-core's providers/irdma): 13 SGEs, 101 bytes inline,
// 4063 work requests per queue.
func IRDMAProfile() Profile {
	return Profile{Name: "irdma", Link: verbs.LinkLayerEthernet, Device: irdmaDeviceAttr(), Readings: verbs.Readings{
		NoXRC:              true,
		NoDM:               true,
		NoODP:              true,
		PostAnyState:       true,
		NoUC:               true,
		NoAtomics:          true,
		NoSRQ:              true,
		NoQPEx:             true,
		NoRereg:            true,
		TransportOpLocQPOp: true,
	}}
}

// Profiles returns every built-in profile: default, rxe, mlx5, siw, irdma.
func Profiles() []Profile {
	return []Profile{DefaultProfile(), RXEProfile(), MLX5Profile(), SIWProfile(), IRDMAProfile()}
}

// ProfilesWithout returns the built-in profiles in which none of the
// readings rs is on, in order: for code that needs what those readings take
// away (ProfilesWithout(verbs.ReadingNoUD) are the profiles with UD QPs).
func ProfilesWithout(rs ...verbs.Reading) []Profile {
	var out []Profile
	for _, p := range Profiles() {
		ok := true
		for _, r := range rs {
			ok = ok && !p.Get(r)
		}
		if ok {
			out = append(out, p)
		}
	}
	return out
}

// ProfileNames returns the names of the built-in profiles, in order.
func ProfileNames() []string {
	var names []string
	for _, p := range Profiles() {
		names = append(names, p.Name)
	}
	return names
}

// ProfileByName returns the built-in profile called name. An unknown name
// is an error that lists the known ones.
func ProfileByName(name string) (Profile, error) {
	for _, p := range Profiles() {
		if p.Name == name {
			return p, nil
		}
	}
	return Profile{}, fmt.Errorf("sim: %q is not a profile; the profiles are %s", name, strings.Join(ProfileNames(), ", "))
}

// DeviceAttr returns the attributes a device of a fabric with this profile
// has when its configuration leaves them zero: the profile's Device (or
// DefaultDeviceAttr), with what the readings take away taken away.
func (p Profile) DeviceAttr() verbs.DeviceAttr {
	a := p.Device
	if a == (verbs.DeviceAttr{}) {
		a = DefaultDeviceAttr()
	}
	return p.capAttr(a)
}

// capAttr removes from a what the profile's readings say the device lacks.
func (p Profile) capAttr(a verbs.DeviceAttr) verbs.DeviceAttr {
	if p.NoXRC {
		a.DeviceCapFlags &^= verbs.DeviceXRC
	}
	if p.NoDM {
		a.MaxDMSize = 0
	}
	if p.NoMW {
		a.DeviceCapFlags &^= verbs.DeviceMemWindow | verbs.DeviceMemWindow2A | verbs.DeviceMemWindow2B
		a.MaxMW = 0
	}
	if p.NoSRQ {
		a.DeviceCapFlags &^= verbs.DeviceSRQResize
		a.MaxSRQ, a.MaxSRQWR, a.MaxSRQSGE = 0, 0, 0
	}
	if p.NoAtomics {
		a.AtomicCap = verbs.AtomicNone
	}
	if p.NoUD {
		a.MaxAH = 0
	}
	return a
}

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
