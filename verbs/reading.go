package verbs

import (
	"fmt"
	"math/bits"
	"strings"
)

// Reading names one field of Readings: one implementation-defined rule (or
// one capability a provider may lack) on which providers differ. Code that
// handles readings by name (the drop-in library's VERBSIM_READINGS) or
// records which ones a run depended on (ReadingSet, the portability report)
// uses it; Readings.Get and Readings.Set read and write the field.
type Reading uint8

// The readings, in the declaration order of the fields of Readings.
const (
	ReadingOverrunDrops Reading = iota
	ReadingDestroyBusyOnUnacked
	ReadingExactCQE
	ReadingOverrunSendIgnored
	ReadingNoCQTimestamps
	ReadingSolicitedBitOnly
	ReadingResetToErr
	ReadingCurStateTrusted
	ReadingFreeSlotOnRetire
	ReadingTransportOpLocQPOp
	ReadingSendOpsRXE
	ReadingSRQLimitAtCreate
	ReadingSRQRecvQPPD
	ReadingNoXRC
	ReadingNoDM
	ReadingDeregBoundEINVAL
	ReadingReregFailKeepsMR
	ReadingReregKeepsKeys
	ReadingReregNoTranslation
	ReadingNoODP
	ReadingMWType1NoZeroBased
	ReadingRecvTooSmallRemInvReq
	ReadingInfiniteRetry7
	ReadingRecvProtQPOp
	ReadingWriteImmRKeyRemAccess
	ReadingLateLocalCheck
	ReadingSendInvErrAcked
	ReadingNoSQE
	ReadingSendWCImm
	ReadingNoQPEvents
	ReadingAlwaysSQDrained
	ReadingNoFlowLabel
	ReadingResetPurgesCQ
	ReadingPostAnyState
	ReadingPostENOTCONN
	ReadingPostENOMEM
	ReadingNoUD
	ReadingNoUC
	ReadingNoAtomics
	ReadingNoImmData
	ReadingNoMW
	ReadingNoSRQ
	ReadingNoCQEx
	ReadingNoQPEx
	ReadingNoRereg

	numReadings
)

// readingInfo describes one reading: its field, the rules it reads, and
// what a program sees under each value, in words a report can print.
type readingInfo struct {
	name    string
	rules   string
	field   func(*Readings) *bool
	on, off string // the behaviour when the field is true, and when false
}

// readingTable has one entry per Reading, in order. TestReadingTable checks
// that it covers every field of Readings, in declaration order.
var readingTable = [numReadings]readingInfo{
	{"OverrunDrops", "CQ-23", func(r *Readings) *bool { return &r.OverrunDrops },
		"a CQ overrun loses only the completion that did not fit; the CQ carries on",
		"a CQ overrun puts the CQ in error for good (later completions lost, ibv_poll_cq EIO)"},
	{"DestroyBusyOnUnacked", "CQ-13", func(r *Readings) *bool { return &r.DestroyBusyOnUnacked },
		"ibv_destroy_cq with unacknowledged events fails with EBUSY at once",
		"ibv_destroy_cq with unacknowledged events waits for the acknowledgements"},
	{"ExactCQE", "CQ-02, CQ-09", func(r *Readings) *bool { return &r.ExactCQE },
		"a CQ holds exactly the cqe asked for",
		"a CQ holds the cqe asked for rounded up to 2^k-1"},
	{"OverrunSendIgnored", "CQ-24", func(r *Readings) *bool { return &r.OverrunSendIgnored },
		"a send completion lost to a CQ overrun leaves its QP alone",
		"a completion lost to a CQ overrun moves its QP to ERR"},
	{"NoCQTimestamps", "CQX-02", func(r *Readings) *bool { return &r.NoCQTimestamps },
		"ibv_create_cq_ex refuses completion timestamps with EOPNOTSUPP",
		"ibv_create_cq_ex offers completion timestamps"},
	{"SolicitedBitOnly", "NOTIFY-05", func(r *Readings) *bool { return &r.SolicitedBitOnly },
		"an error completion wakes a solicited-only arm only when marked solicited",
		"every error completion wakes a solicited-only arm"},
	{"ResetToErr", "QP-08", func(r *Readings) *bool { return &r.ResetToErr },
		"RESET->ERR is allowed",
		"RESET->ERR fails with EINVAL"},
	{"CurStateTrusted", "QP-12", func(r *Readings) *bool { return &r.CurStateTrusted },
		"IBV_QP_CUR_STATE replaces the real state while a modify is checked",
		"an IBV_QP_CUR_STATE other than the real state fails with EINVAL"},
	{"FreeSlotOnRetire", "QP-29, QP-31", func(r *Readings) *bool { return &r.FreeSlotOnRetire },
		"a work-queue slot is free as soon as its request completes, polled or not",
		"a work-queue slot is free only once its completion is polled (else ENOMEM)"},
	{"TransportOpLocQPOp", "QP-33", func(r *Readings) *bool { return &r.TransportOpLocQPOp },
		"an opcode the QP's transport does not take is posted and completes with LOC_QP_OP_ERR",
		"an opcode the QP's transport does not take fails ibv_post_send with EINVAL"},
	{"SendOpsRXE", "QPX-01, QPX-04", func(r *Readings) *bool { return &r.SendOpsRXE },
		"the work request builder: no LOCAL_INV on UC, ENOSPC for an oversized batch",
		"the work request builder: LOCAL_INV on UC, ENOMEM/EINVAL for an oversized batch"},
	{"SRQLimitAtCreate", "SRQ-01", func(r *Readings) *bool { return &r.SRQLimitAtCreate },
		"a srq_limit given to ibv_create_srq arms the limit",
		"a srq_limit given to ibv_create_srq is ignored"},
	{"SRQRecvQPPD", "SRQ-12", func(r *Readings) *bool { return &r.SRQRecvQPPD },
		"an SRQ receive is checked against the QP's PD",
		"an SRQ receive is checked against the SRQ's PD"},
	{"NoXRC", "XRC-03", func(r *Readings) *bool { return &r.NoXRC },
		"XRC domains, SRQs and QPs fail with EOPNOTSUPP",
		"XRC domains, SRQs and QPs work"},
	{"NoDM", "DM-02", func(r *Readings) *bool { return &r.NoDM },
		"ibv_alloc_dm fails with EOPNOTSUPP (max_dm_size 0)",
		"ibv_alloc_dm gives device memory"},
	{"DeregBoundEINVAL", "MR-06", func(r *Readings) *bool { return &r.DeregBoundEINVAL },
		"ibv_dereg_mr of an MR with bound windows fails with EINVAL",
		"ibv_dereg_mr of an MR with bound windows fails with EBUSY"},
	{"ReregFailKeepsMR", "MR-14", func(r *Readings) *bool { return &r.ReregFailKeepsMR },
		"after a failed ibv_rereg_mr the MR is as it was",
		"after a failed ibv_rereg_mr the MR is unusable"},
	{"ReregKeepsKeys", "MR-15", func(r *Readings) *bool { return &r.ReregKeepsKeys },
		"ibv_rereg_mr keeps the lkey and rkey",
		"ibv_rereg_mr gives new keys; the old ones stop working"},
	{"ReregNoTranslation", "MR-16", func(r *Readings) *bool { return &r.ReregNoTranslation },
		"ibv_rereg_mr CHANGE_TRANSLATION fails with EOPNOTSUPP",
		"ibv_rereg_mr CHANGE_TRANSLATION works"},
	{"NoODP", "ODP-01, ODP-02, ODP-04", func(r *Readings) *bool { return &r.NoODP },
		"IBV_ACCESS_ON_DEMAND and ibv_advise_mr fail with EOPNOTSUPP",
		"on-demand paging works"},
	{"MWType1NoZeroBased", "MW-05", func(r *Readings) *bool { return &r.MWType1NoZeroBased },
		"a ZERO_BASED bind of a type 1 window completes with MW_BIND_ERR",
		"a ZERO_BASED bind of a type 1 window binds"},
	{"RecvTooSmallRemInvReq", "XFER-05", func(r *Readings) *bool { return &r.RecvTooSmallRemInvReq },
		"an RC SEND too big for its receive: the receiver gets REM_INV_REQ_ERR",
		"an RC SEND too big for its receive: the receiver gets LOC_LEN_ERR"},
	{"InfiniteRetry7", "XFER-10", func(r *Readings) *bool { return &r.InfiniteRetry7 },
		"retry_cnt 7 retries for ever",
		"retry_cnt 7 retries seven times, then RETRY_EXC_ERR"},
	{"RecvProtQPOp", "XFER-16", func(r *Readings) *bool { return &r.RecvProtQPOp },
		"a bad lkey in the receive an incoming SEND lands in: LOC_QP_OP_ERR",
		"a bad lkey in the receive an incoming SEND lands in: LOC_PROT_ERR"},
	{"WriteImmRKeyRemAccess", "XFER-30", func(r *Readings) *bool { return &r.WriteImmRKeyRemAccess },
		"a WRITE_WITH_IMM failing its rkey check: the receive gets REM_ACCESS_ERR or is flushed",
		"a WRITE_WITH_IMM failing its rkey check: the receive gets LOC_ACCESS_ERR"},
	{"LateLocalCheck", "XFER-31", func(r *Readings) *bool { return &r.LateLocalCheck },
		"a READ's or atomic's bad local SGE is found when the response arrives",
		"a READ's or atomic's bad local SGE fails it before it is sent"},
	{"SendInvErrAcked", "XFER-29", func(r *Readings) *bool { return &r.SendInvErrAcked },
		"a SEND_WITH_INV the responder cannot invalidate succeeds at the requester",
		"a SEND_WITH_INV the responder cannot invalidate fails with REM_INV_REQ_ERR"},
	{"NoSQE", "FLUSH-10", func(r *Readings) *bool { return &r.NoSQE },
		"a UD or UC send error moves the QP to ERR",
		"a UD or UC send error moves the QP to SQE; receives go on"},
	{"SendWCImm", "WC-13", func(r *Readings) *bool { return &r.SendWCImm },
		"send completions of *_WITH_IMM carry IBV_WC_WITH_IMM",
		"send completions never carry IBV_WC_WITH_IMM"},
	{"NoQPEvents", "ASYNC-11", func(r *Readings) *bool { return &r.NoQPEvents },
		"the responder raises no QP_REQ_ERR, QP_ACCESS_ERR or COMM_EST",
		"the responder raises QP_REQ_ERR, QP_ACCESS_ERR and COMM_EST"},
	{"AlwaysSQDrained", "ASYNC-13", func(r *Readings) *bool { return &r.AlwaysSQDrained },
		"RTS->SQD always raises SQ_DRAINED",
		"RTS->SQD raises SQ_DRAINED only when en_sqd_async_notify asks"},
	{"NoFlowLabel", "AV-05", func(r *Readings) *bool { return &r.NoFlowLabel },
		"packets leave with flow label 0 whatever the address vector says",
		"packets carry their address vector's flow label"},
	{"ResetPurgesCQ", "CQ-26", func(r *Readings) *bool { return &r.ResetPurgesCQ },
		"a QP's completions still in its CQs are deleted when it moves to RESET or is destroyed",
		"a QP's completions stay in its CQs when it moves to RESET or is destroyed"},
	{"PostAnyState", "QP-25, QP-26", func(r *Readings) *bool { return &r.PostAnyState },
		"a post before RTS (a receive in RESET) is accepted; the sends wait for a doorbell in RTS",
		"a send posted before RTS, or a receive in RESET, fails with EINVAL"},
	{"PostENOTCONN", "QP-26", func(r *Readings) *bool { return &r.PostENOTCONN },
		"a send refused before RTS fails with ENOTCONN",
		"a send refused before RTS fails with EINVAL"},
	{"PostENOMEM", "QP-26, QP-28", func(r *Readings) *bool { return &r.PostENOMEM },
		"ibv_post_send before RTS, or with too many SGEs or inline bytes, fails with ENOMEM",
		"ibv_post_send before RTS, or with too many SGEs or inline bytes, fails with EINVAL"},
	{"NoUD", "QP-41", func(r *Readings) *bool { return &r.NoUD },
		"UD QPs and address handles fail with EOPNOTSUPP",
		"UD QPs and address handles work"},
	{"NoUC", "QP-41", func(r *Readings) *bool { return &r.NoUC },
		"UC QPs fail with EOPNOTSUPP",
		"UC QPs work"},
	{"NoAtomics", "QP-42", func(r *Readings) *bool { return &r.NoAtomics },
		"atomic_cap is NONE and atomic requests fail with EINVAL",
		"atomic requests work"},
	{"NoImmData", "QP-43", func(r *Readings) *bool { return &r.NoImmData },
		"SEND_WITH_IMM and RDMA_WRITE_WITH_IMM fail with EINVAL",
		"SEND_WITH_IMM and RDMA_WRITE_WITH_IMM work"},
	{"NoMW", "MW-08", func(r *Readings) *bool { return &r.NoMW },
		"ibv_alloc_mw fails with EOPNOTSUPP; BIND_MW and LOCAL_INV with EINVAL",
		"memory windows work"},
	{"NoSRQ", "SRQ-13", func(r *Readings) *bool { return &r.NoSRQ },
		"ibv_create_srq fails with EOPNOTSUPP",
		"SRQs work"},
	{"NoCQEx", "CQX-11", func(r *Readings) *bool { return &r.NoCQEx },
		"ibv_create_cq_ex fails with EOPNOTSUPP",
		"ibv_create_cq_ex works"},
	{"NoQPEx", "QPX-06", func(r *Readings) *bool { return &r.NoQPEx },
		"ibv_create_qp_ex beyond a PD (the work request builder) fails with EOPNOTSUPP",
		"ibv_create_qp_ex and the work request builder work"},
	{"NoRereg", "MR-18", func(r *Readings) *bool { return &r.NoRereg },
		"ibv_rereg_mr fails with EOPNOTSUPP",
		"ibv_rereg_mr works"},
}

// AllReadings returns every reading, in the declaration order of the
// fields of Readings.
func AllReadings() []Reading {
	out := make([]Reading, numReadings)
	for i := range out {
		out[i] = Reading(i)
	}
	return out
}

func (r Reading) info() *readingInfo {
	if r >= numReadings {
		return nil
	}
	return &readingTable[r]
}

// String returns the name of the reading's field of Readings, e.g.
// "OverrunDrops".
func (r Reading) String() string {
	if i := r.info(); i != nil {
		return i.name
	}
	return fmt.Sprintf("Reading(%d)", uint8(r))
}

// Rules returns the IDs of the catalogue's rules the reading reads, e.g.
// "CQ-23" or "QP-25, QP-26".
func (r Reading) Rules() string {
	if i := r.info(); i != nil {
		return i.rules
	}
	return ""
}

// Behaviour says in a few words what a program sees when the reading is on
// (the field true) or off, e.g. Behaviour(true) of ReadingPostAnyState is
// that a post before RTS is accepted.
func (r Reading) Behaviour(on bool) string {
	i := r.info()
	switch {
	case i == nil:
		return ""
	case on:
		return i.on
	}
	return i.off
}

// ParseReading returns the reading named name (a field of Readings). An
// unknown name is an error that lists the known ones.
func ParseReading(name string) (Reading, error) {
	for i := range readingTable {
		if readingTable[i].name == name {
			return Reading(i), nil
		}
	}
	names := make([]string, len(readingTable))
	for i := range readingTable {
		names[i] = readingTable[i].name
	}
	return 0, fmt.Errorf("%q is not a reading; the readings are %s", name, strings.Join(names, ", "))
}

// Get returns the value of reading r (false for an unknown one).
func (rs Readings) Get(r Reading) bool {
	if i := r.info(); i != nil {
		return *i.field(&rs)
	}
	return false
}

// SetReading sets reading r to on; an unknown reading changes nothing.
func (rs *Readings) SetReading(r Reading, on bool) {
	if i := r.info(); i != nil {
		*i.field(rs) = on
	}
}

// Set turns on each named reading (a field name of Readings), or turns it
// off when the name has a '-' in front: r.Set("ReregKeepsKeys", "-NoXRC").
// A name that is no reading is an error naming the readings there are,
// and then nothing changes.
func (rs *Readings) Set(names ...string) error {
	next := *rs
	for _, name := range names {
		on := true
		if rest, ok := strings.CutPrefix(name, "-"); ok {
			name, on = rest, false
		}
		r, err := ParseReading(name)
		if err != nil {
			return fmt.Errorf("%w, each optionally prefixed with '-'", err)
		}
		next.SetReading(r, on)
	}
	*rs = next
	return nil
}

// Apply changes the readings a spec names: Set of its comma-separated
// items, blank ones skipped; e.g. "ReregKeepsKeys, -NoXRC", the form of
// VERBSIM_READINGS.
func (rs *Readings) Apply(spec string) error {
	var names []string
	for _, item := range strings.Split(spec, ",") {
		if name := strings.TrimSpace(item); name != "" {
			names = append(names, name)
		}
	}
	return rs.Set(names...)
}

// On returns the readings that are on (the fields that are true), as a set.
func (rs Readings) On() ReadingSet {
	var s ReadingSet
	for r := range numReadings {
		if rs.Get(r) {
			s.Add(r)
		}
	}
	return s
}

// Readings returns the Readings whose fields are on exactly for the
// readings of the set: the inverse of Readings.On.
func (s ReadingSet) Readings() Readings {
	var rs Readings
	for _, r := range s.List() {
		rs.SetReading(r, true)
	}
	return rs
}

// String names the readings that differ from the man pages (the fields that
// are true), space separated in declaration order, or returns "man-pages"
// for the zero value.
func (rs Readings) String() string {
	if s := rs.On(); s != 0 {
		return s.String()
	}
	return "man-pages"
}

// ReadingSet is a set of readings, as a bit mask: bit r is Reading r. The
// zero value is the empty set. The simulator records in one the readings
// a run consulted where its profile's value changed the outcome (the
// portability report).
type ReadingSet uint64

// Add adds r to the set. It is a method on the pointer so that a component
// holding a *ReadingSet can record into its owner's set; a nil set records
// nothing.
func (s *ReadingSet) Add(r Reading) {
	if s != nil && r < numReadings {
		*s |= 1 << r
	}
}

// Has reports whether r is in the set.
func (s ReadingSet) Has(r Reading) bool { return r < numReadings && s&(1<<r) != 0 }

// Len returns the number of readings in the set.
func (s ReadingSet) Len() int { return bits.OnesCount64(uint64(s)) }

// List returns the readings of the set in order.
func (s ReadingSet) List() []Reading {
	var out []Reading
	for r := range numReadings {
		if s.Has(r) {
			out = append(out, r)
		}
	}
	return out
}

// String names the readings of the set, space separated in order, or
// returns "none".
func (s ReadingSet) String() string {
	l := s.List()
	if len(l) == 0 {
		return "none"
	}
	names := make([]string, len(l))
	for i, r := range l {
		names[i] = r.String()
	}
	return strings.Join(names, " ")
}
