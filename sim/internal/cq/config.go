package cq

import (
	"syscall"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/verbs"

	"github.com/verbsim/verbsim/sim/internal/notify"
	"github.com/verbsim/verbsim/sim/verr"
)

// Verb names used in errors, and the names the verbs enter the domain
// with (CQ.enter).
const (
	verbCreate    = "ibv_create_cq"
	verbPoll      = "ibv_poll_cq"
	verbReqNotify = "ibv_req_notify_cq"
	verbAck       = "ibv_ack_cq_events"
	verbResize    = "ibv_resize_cq"
	verbDestroy   = "ibv_destroy_cq"
	verbPush      = "cq push"
	verbStartPoll = "ibv_start_poll"
	verbNextPoll  = "ibv_next_poll"
	verbEndPoll   = "ibv_end_poll"
	verbRef       = "ibv_create_qp" // QPs, SRQs and WQs take references when created
	verbUnref     = "ibv_destroy_qp"
	verbRead      = "cq read" // the simulator's reads of a CQ's state (Len, Snapshot, ...)
)

// Limits are the device attributes that bound a CQ.
type Limits struct {
	MaxCQE         int // ibv_device_attr.max_cqe
	NumCompVectors int // ibv_context.num_comp_vectors
}

// DefaultLimits are the limits used when Config.Limits is zero: a max_cqe of
// 2^22-1 and four completion vectors.
var DefaultLimits = Limits{MaxCQE: 1<<22 - 1, NumCompVectors: 4}

// OverrunPolicy selects what an overrun leaves behind (CQ-23).
type OverrunPolicy uint8

const (
	// OverrunError is the man-page reading and the default: the CQ enters an
	// error state for good; every later completion is dropped and raises
	// another CQ_ERR, and Poll reports EIO.
	OverrunError OverrunPolicy = iota
	// OverrunDrop is the rxe reading: only the completion that did not fit is
	// lost; once the consumer polls, completions are stored again.
	OverrunDrop
)

// String names the policy.
func (p OverrunPolicy) String() string {
	if p == OverrunDrop {
		return "drop"
	}
	return "error"
}

// DestroyPolicy selects what destroying a CQ with read but unacknowledged
// events does (CQ-13).
type DestroyPolicy uint8

const (
	// DestroyWaits is libibverbs' behaviour and the default: the destroy
	// blocks until the acks arrive (bounded by DestroyContext's context).
	DestroyWaits DestroyPolicy = iota
	// DestroyBusy fails the destroy with EBUSY and changes nothing.
	DestroyBusy
)

// String names the policy.
func (p DestroyPolicy) String() string {
	if p == DestroyBusy {
		return "busy"
	}
	return "wait"
}

// Rounding selects how a requested cqe becomes the real capacity (CQ-02).
type Rounding uint8

const (
	// RoundPow2 rounds up to the next 2^k-1, as rxe and mlx5 do (a ring of 2^k
	// slots with one kept free); the default.
	RoundPow2 Rounding = iota
	// RoundExact gives exactly the requested capacity.
	RoundExact
)

// String names the rounding.
func (r Rounding) String() string {
	if r == RoundExact {
		return "exact"
	}
	return "pow2-1"
}

func (r Rounding) round(n, max int) int {
	if r == RoundExact {
		return n
	}
	c := 1
	for c-1 < n {
		c <<= 1
	}
	return min(c-1, max)
}

// Retirer is told, under the domain lock, when the completion it was pushed
// with has been polled. A work queue uses it to free its slots only once the
// completion covering them is polled, the strict reading of QP-29. Being
// told seq covers every earlier seq the same retirer was pushed with, so
// Poll tells a run of one retirer's completions once, with the last seq
// (its seqs increase: a work queue's completions come in order, CQ-18).
//
// It is an alias of an unnamed interface so that package qp can declare the
// identical type without importing this package.
type Retirer = interface{ RetireLocked(seq uint64) }

// Config describes a CQ to create: the arguments of ibv_create_cq plus the
// device limits and the profile's readings of the implementation-defined
// rules.
type Config struct {
	CQE        int      // requested capacity: 1 <= CQE <= Limits.MaxCQE (CQ-01)
	Context    any      // cq_context, handed back with every event (CQ-04)
	Channel    *Channel // optional completion channel (CQ-05)
	CompVector int      // 0 <= CompVector < Limits.NumCompVectors (CQ-03)

	// IgnoreOverrun is IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN: an overrun drops the
	// completion silently, with no error state and no CQ_ERR.
	IgnoreOverrun bool

	// WCFlags is wc_flags of ibv_cq_init_attr_ex: the fields beyond wr_id,
	// status, opcode, vendor_err and wc_flags that the poll iterator may
	// read (CQX-03). Zero: none of them. Bits outside SupportedWCFlags are
	// EOPNOTSUPP (CQX-02).
	WCFlags verbs.WCExFlags
	// CompMask is comp_mask of ibv_cq_init_attr_ex: which of the extended
	// fields below are given. A bit other than InitAttrMaskFlags is
	// EOPNOTSUPP (CQX-01); Flags is ignored unless InitAttrMaskFlags is set.
	CompMask verbs.CQInitAttrMask
	// Flags is flags of ibv_cq_init_attr_ex, read only when CompMask has
	// InitAttrMaskFlags. CreateIgnoreOverrun sets IgnoreOverrun;
	// CreateSingleThreaded is accepted and changes nothing; any other bit is
	// EOPNOTSUPP (CQX-01).
	Flags verbs.CQCreateFlags
	// Clock, if set, returns the virtual time in nanoseconds; it is called
	// under the domain lock when a completion is stored, and is what
	// completion timestamps are made of (CQX-09). Nil, or a zero ClockKHz:
	// the CQ cannot timestamp, and WCFlags asking for a timestamp is
	// EOPNOTSUPP.
	Clock func() uint64
	// ClockKHz is the HCA core clock in kHz (hca_core_clock): a timestamp
	// counts Clock()*ClockKHz/10^6 clock cycles.
	ClockKHz uint64

	Limits    Limits                 // zero: DefaultLimits
	Overrun   OverrunPolicy          // CQ-23
	Destroy   DestroyPolicy          // CQ-13
	Rounding  Rounding               // CQ-02
	Solicited notify.SolicitedPolicy // NOTIFY-05
	// Consulted, if set, records the readings whose value changed what the
	// CQ did (the portability report); shared with the CQ's owner.
	Consulted *verbs.ReadingSet

	// Async receives IBV_EVENT_CQ_ERR on overrun; nil drops those events.
	Async *notify.AsyncQueue
	// Domain is the domain the CQ lives in, shared with Channel and Async:
	// its lock, trace sink and engine hooks. Nil: the channel's or async
	// queue's domain, else a domain of the CQ's own.
	Domain *domain.Domain
	// Name is the CQ's name in the trace ("dev0/cq#1"); "" reads "cq".
	Name string
	// Owner, if set, identifies who created the CQ (package sim sets the
	// device context). The CQ never looks at it; Owner hands it back, so a
	// verb that is given the CQ can check that it belongs to the caller.
	Owner any
	// OnDestroy, if set, is called under the domain lock when the CQ stops
	// counting against the device (at destroy, before the wait for acks).
	OnDestroy func()
}

// Validate reports whether New would accept cfg's arguments, without
// creating anything: EINVAL for a bad cqe, comp_vector, policy or lock domain.
func (cfg Config) Validate() error {
	if cfg.Domain == nil {
		switch {
		case cfg.Channel != nil:
			cfg.Domain = cfg.Channel.Domain()
		case cfg.Async != nil:
			cfg.Domain = cfg.Async.Domain()
		}
	}
	_, err := cfg.validate()
	return err
}

// validate checks cfg and returns the capacity to allocate.
func (cfg *Config) validate() (int, error) {
	if cfg.Limits == (Limits{}) {
		cfg.Limits = DefaultLimits
	}
	lim := cfg.Limits
	// The extended attributes are checked first, as providers do before
	// they ask the kernel for the CQ: unsupported is EOPNOTSUPP (CQX-01,
	// CQX-02).
	if cfg.CompMask&^verbs.CQInitAttrMaskFlags != 0 {
		return 0, verr.Errorf(verbCreate, syscall.EOPNOTSUPP,
			"comp_mask %#x has bits other than IBV_CQ_INIT_ATTR_MASK_FLAGS (no parent domains) (CQX-01)", uint32(cfg.CompMask))
	}
	if bad := cfg.WCFlags &^ cfg.SupportedWCFlags(); bad != 0 {
		return 0, verr.Errorf(verbCreate, syscall.EOPNOTSUPP,
			"wc_flags %#x asks for fields this CQ cannot report (%#x) (CQX-02)", uint64(cfg.WCFlags), uint64(bad))
	}
	if cfg.CompMask&verbs.CQInitAttrMaskFlags != 0 {
		if cfg.Flags&^(verbs.CQCreateSingleThreaded|verbs.CQCreateIgnoreOverrun) != 0 {
			return 0, verr.Errorf(verbCreate, syscall.EOPNOTSUPP, "unknown create flags %#x (CQX-01)", uint32(cfg.Flags))
		}
		if cfg.Flags&verbs.CQCreateIgnoreOverrun != 0 {
			cfg.IgnoreOverrun = true
		}
	}
	if lim.MaxCQE < 1 || lim.NumCompVectors < 1 {
		return 0, verr.Errorf(verbCreate, syscall.EINVAL, "invalid device limits %+v", lim)
	}
	if cfg.CQE < 1 || cfg.CQE > lim.MaxCQE {
		return 0, verr.Errorf(verbCreate, syscall.EINVAL, "cqe %d is outside [1, max_cqe=%d] (CQ-01)", cfg.CQE, lim.MaxCQE)
	}
	if cfg.CompVector < 0 || cfg.CompVector >= lim.NumCompVectors {
		return 0, verr.Errorf(verbCreate, syscall.EINVAL,
			"comp_vector %d is outside [0, num_comp_vectors=%d) (CQ-03)", cfg.CompVector, lim.NumCompVectors)
	}
	if cfg.Overrun > OverrunDrop || cfg.Destroy > DestroyBusy || cfg.Rounding > RoundExact || cfg.Solicited > notify.SolicitedBitOnly {
		return 0, verr.New(verbCreate, syscall.EINVAL, "unknown policy value")
	}
	if cfg.Channel != nil && cfg.Channel.Domain() != cfg.Domain {
		return 0, verr.New(verbCreate, syscall.EINVAL, "the completion channel belongs to another lock domain (another fabric)")
	}
	if cfg.Async != nil && cfg.Async.Domain() != cfg.Domain {
		return 0, verr.New(verbCreate, syscall.EINVAL, "the async event queue belongs to another lock domain")
	}
	n := cfg.Rounding.round(cfg.CQE, lim.MaxCQE)
	if RoundPow2.round(cfg.CQE, lim.MaxCQE) != cfg.CQE {
		cfg.Consulted.Add(verbs.ReadingExactCQE) // the readings give different capacities
	}
	return n, nil
}
