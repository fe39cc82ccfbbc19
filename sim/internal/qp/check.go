package qp

import (
	"syscall"

	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// modifyVerb is the libibverbs function CheckModify models.
const modifyVerb = "ibv_modify_qp"

// CurStatePolicy says what a modify does with CurQPState when the mask has
// AttrCurState (QP-12).
type CurStatePolicy uint8

// Readings of IBV_QP_CUR_STATE. Both refuse a value outside Reset..Err (as
// uverbs does) and accept the bit only where the table lists it (on the
// way into RTS from RTR, RTS, SQD or SQE).
const (
	// CurStateMustMatch (the default) treats the value as an assertion:
	// if the QP is not in that state, the modify fails with EINVAL. A QP
	// that moved to SQE or ERR behind the caller's back then cannot be
	// modified on a stale assumption.
	CurStateMustMatch CurStatePolicy = iota
	// CurStateTrusted is what rxe and rdmavt do: the value replaces the
	// QP's real state for the whole validation (the table lookup and the
	// SQD drain rule), and is never compared with it. A caller can thus
	// validate a transition from a state the QP is not in; the QP still
	// moves from its real state.
	CurStateTrusted
)

// String returns "must-match" or "trusted".
func (p CurStatePolicy) String() string {
	if p == CurStateTrusted {
		return "trusted"
	}
	return "must-match"
}

// Policy selects the implementation-defined readings of the QP verbs: those
// CheckModify follows, and when a posted request gives back its work-queue
// slot. The zero value is the simulator's default, which is Linux's table
// with CUR_STATE checked and slots freed by the poll.
type Policy struct {
	// ResetToErr allows RESET→ERR with AttrState alone (QP-08 reading A,
	// IBTA). The default rejects it as the Linux core table does.
	ResetToErr bool
	// CurState is the reading of AttrCurState (QP-12).
	CurState CurStatePolicy
	// FreeSlotOnRetire frees the slot of a send or receive request as soon
	// as the engine retires it, that is completes or flushes it, whether or
	// not its completion is polled or even stored (QP-29 reading B, QP-31,
	// rxe). False: the slot stays taken until the completion of the
	// request, or of a later one of its queue that covers it, is polled
	// (reading A, mlx5), so a completion lost to an overrun keeps its slot
	// until a later completion of the queue is polled or the QP is reset.
	FreeSlotOnRetire bool
	// SendOpsRXE takes rxe's readings of the work request builder
	// (QPX-01, QPX-04): a UC QP may not ask for IBV_QP_EX_WITH_LOCAL_INV
	// (rxe's UC set leaves it out), and a batch that overflows the send
	// queue, gives more SGEs than max_send_sge or more inline bytes than
	// max_inline_data is refused by ibv_wr_complete with ENOSPC, the errno
	// rxe's builders record. False: the transport matrix of QP-33 decides
	// the supported operations and wr_complete returns the errno
	// ibv_post_send would (ENOMEM, EINVAL).
	SendOpsRXE bool
	// TransportOpLate accepts at post a request whose opcode the QP's
	// transport does not take (but BIND_MW and TSO) and completes it with
	// LOC_QP_OP_ERR as it executes (QP-33 reading B, rxe). False: EINVAL at
	// post (A).
	TransportOpLate bool
}

// RXEPolicy returns the readings of Linux soft-RoCE (rxe): RESET→ERR
// rejected, CUR_STATE trusted, and a slot freed as soon as its request is
// retired: rxe's completer and responder advance the queue's consumer index
// when they finish with a WR, before the completion is posted, let alone
// polled.
func RXEPolicy() Policy {
	return Policy{CurState: CurStateTrusted, FreeSlotOnRetire: true, SendOpsRXE: true, TransportOpLate: true}
}

// PortLimits describes one port as far as attribute values depend on it
// (the relevant fields of struct ibv_port_attr). A zero field admits
// nothing: a port with PKeyTableLen 0 accepts no pkey_index.
type PortLimits struct {
	MaxMTU       verbs.MTU // max_mtu: the largest path_mtu a QP on this port may use
	PKeyTableLen int       // pkey_tbl_len: pkey_index must be below it
	GIDTableLen  int       // gid_tbl_len: grh.sgid_index must be below it
	// GRHRequired says address vectors through this port must be global
	// (is_global=1): the port reports IBV_QPF_GRH_REQUIRED or is RoCE.
	GRHRequired bool
	// Ethernet says the link layer is Ethernet (RoCE). The Linux core
	// supports alternate paths only on InfiniBand ports.
	Ethernet bool
	// UnusedGID reports whether GID table entry i (below GIDTableLen)
	// holds no GID; nil means every entry is in use.
	UnusedGID func(i int) bool
}

// Limits holds the device and port limits that attribute values are
// checked against (QP-22).
type Limits struct {
	// Ports describes the device's ports: Ports[i] is port i+1. A port
	// number is valid when it is 1..len(Ports).
	Ports []PortLimits
	// MaxQPRDAtom is ibv_device_attr.max_qp_rd_atom, the responder depth:
	// the bound for MaxDestRDAtomic.
	MaxQPRDAtom int
	// MaxQPInitRDAtom is ibv_device_attr.max_qp_init_rd_atom, the
	// requester depth: the bound for MaxRDAtomic.
	MaxQPInitRDAtom int
}

// port returns the limits of port n (1-based).
func (l Limits) port(n uint8) (PortLimits, bool) {
	if n == 0 || int(n) > len(l.Ports) {
		return PortLimits{}, false
	}
	return l.Ports[n-1], true
}

// Current is what CheckModify needs to know about the QP being modified
// besides its type.
type Current struct {
	// State is the QP's real state.
	State verbs.QPState
	// Port is the port the QP is bound to, set by RESET→INIT (0 before).
	// INIT→RTR requires the primary path to leave through it, and
	// pkey_index and path_mtu are checked against its tables.
	Port uint8
	// Draining is true while an SQD drain is still in progress: send WRs
	// that had started before RTS→SQD have not all completed (QP-23).
	Draining bool
}

func modifyErr(format string, args ...any) error {
	return verr.Errorf(modifyVerb, syscall.EINVAL, format, args...)
}

// transportBits is, per transport, every bit some edge accepts; a bit
// outside it has no meaning for that transport (QP-21).
var transportBits = func() (m [5]verbs.QPAttrMask) {
	types := [5]verbs.QPType{verbs.QPTypeRC, verbs.QPTypeUC, verbs.QPTypeUD, verbs.QPTypeXRCSend, verbs.QPTypeXRCRecv}
	for from := verbs.QPStateReset; from <= verbs.QPStateErr; from++ {
		for to := verbs.QPStateReset; to <= verbs.QPStateErr; to++ {
			for i, typ := range types {
				req, opt, _ := verbs.Transition(from, to, typ, verbs.Readings{})
				m[i] |= req | opt
			}
		}
	}
	return m
}()

func meaningful(typ verbs.QPType) verbs.QPAttrMask {
	switch typ {
	case verbs.QPTypeRC:
		return transportBits[0] | verbs.QPAttrState
	case verbs.QPTypeUC:
		return transportBits[1] | verbs.QPAttrState
	case verbs.QPTypeXRCSend:
		return transportBits[3] | verbs.QPAttrState
	case verbs.QPTypeXRCRecv:
		return transportBits[4] | verbs.QPAttrState
	default:
		return transportBits[2] | verbs.QPAttrState
	}
}

// CheckModify validates ibv_modify_qp(attr, mask) on a QP of type typ that
// is in the situation cur, without changing anything (the caller applies
// the change only when it returns nil, which makes the verb all-or-nothing,
// QP-13). It returns the state the QP is in afterwards: attr.QPState when
// the mask has AttrState, cur.State otherwise.
//
// It enforces, in this order: a supported type and a valid current state;
// no bit outside enum ibv_qp_attr_mask (QP-21); a target state in
// Reset..Err (QP-06); the CUR_STATE rules (QP-12, see Policy.CurState);
// the transition table, where a mask without AttrState is checked as the
// cur→cur transition (QP-07, QP-08, QP-11); every required bit present and
// no bit outside required ∪ optional ∪ {AttrState} (QP-09, QP-10, QP-21);
// no way out of SQD but to ERR while it drains (QP-23); and the values of
// the named attributes against lim (QP-22). PSNs are not refused for being
// too wide: Normalize and Attr.Apply cut them to 24 bits.
//
// Every error is a *verr.Error with EINVAL for verb "ibv_modify_qp" whose
// reason names the offending bit or value and the rule.
func CheckModify(cur Current, typ verbs.QPType, attr *verbs.QPAttr, mask verbs.QPAttrMask, lim Limits, pol Policy) (next verbs.QPState, err error) {
	next = cur.State
	if attr == nil {
		return next, modifyErr("attr is nil")
	}
	if !Supported(typ) {
		return next, modifyErr("QP type %v is not simulated (RC, UC, UD, XRC_SEND and XRC_RECV are)", typ)
	}
	if !cur.State.Valid() {
		return next, modifyErr("the QP is in no valid state (%v)", cur.State)
	}
	if unknown := mask &^ verbs.KnownQPAttrs; unknown != 0 {
		return next, modifyErr("QP-21: mask bits %#x are not part of enum ibv_qp_attr_mask", uint32(unknown))
	}
	if mask&verbs.QPAttrState != 0 {
		if !attr.QPState.Valid() {
			return next, modifyErr("QP-06: qp_state %v is not a state a QP can be moved to", attr.QPState)
		}
		next = attr.QPState
	}

	from := cur.State
	if mask&verbs.QPAttrCurState != 0 {
		claim := attr.CurQPState
		if !claim.Valid() {
			return next, modifyErr("QP-12: cur_qp_state %v is not a QP state", claim)
		}
		if pol.CurState == CurStateMustMatch && claim != cur.State {
			return next, modifyErr("QP-12: cur_qp_state is %v but the QP is in %v", claim, cur.State)
		}
		if claim != verbs.QPStateRTR && claim != verbs.QPStateRTS && claim != verbs.QPStateSQD && claim != verbs.QPStateSQE {
			return next, modifyErr("QP-12: CUR_STATE is accepted only in RTR, RTS, SQD or SQE, not in %v", claim)
		}
		from = claim
	}
	to := next
	if mask&verbs.QPAttrState == 0 {
		to = from
	}

	req, opt, ok := verbs.Transition(from, to, typ, verbs.Readings{ResetToErr: pol.ResetToErr})
	switch {
	case ok:
	case mask&verbs.QPAttrState == 0:
		return next, modifyErr("QP-11: a mask without STATE is checked as %v→%v, which is not a legal transition", from, to)
	case from == verbs.QPStateReset && to == verbs.QPStateErr:
		return next, modifyErr("QP-08: RESET→ERR is not a legal transition (Linux reading)")
	default:
		return next, modifyErr("QP-07: %v→%v is not a legal transition", from, to)
	}
	if missing := req &^ mask; missing != 0 {
		return next, modifyErr("QP-10: %v→%v on %v requires %v; missing %v", from, to, typ, req, missing)
	}
	if extra := mask &^ (req | opt | verbs.QPAttrState); extra != 0 {
		switch {
		case extra&verbs.QPAttrCap != 0:
			return next, modifyErr("QP-21: CAP is never accepted (resizing a QP is not supported)")
		case extra&^meaningful(typ) != 0:
			return next, modifyErr("QP-21: %v has no meaning for %v QPs", extra&^meaningful(typ), typ)
		case to == verbs.QPStateReset || to == verbs.QPStateErr:
			return next, modifyErr("QP-09: moving to %v takes STATE only; got also %v", to, extra)
		case opt == 0:
			return next, modifyErr("QP-10: %v→%v on %v takes no optional attribute; got %v", from, to, typ, extra)
		default:
			return next, modifyErr("QP-10: %v→%v on %v does not accept %v (optional: %v)", from, to, typ, extra, opt)
		}
	}
	if mask&verbs.QPAttrState != 0 && from == verbs.QPStateSQD && cur.Draining && to != verbs.QPStateErr {
		return next, modifyErr("QP-23: the send queue is still draining; SQD→%v must wait (only SQD→ERR is allowed)", to)
	}
	if err := checkValues(cur, attr, mask, next, lim); err != nil {
		return next, err
	}
	return next, nil
}

// checkValues validates the attributes the mask names (QP-22).
func checkValues(cur Current, attr *verbs.QPAttr, mask verbs.QPAttrMask, next verbs.QPState, lim Limits) error {
	qpPort := cur.Port
	if mask&verbs.QPAttrPort != 0 {
		if _, ok := lim.port(attr.PortNum); !ok {
			return modifyErr("QP-22: port_num %d does not exist (the device has %d ports)", attr.PortNum, len(lim.Ports))
		}
		qpPort = attr.PortNum
	}
	if mask&verbs.QPAttrPKeyIndex != 0 {
		p, ok := lim.port(qpPort)
		if !ok {
			return modifyErr("QP-22: pkey_index needs the QP's port, and port %d does not exist", qpPort)
		}
		if int(attr.PKeyIndex) >= p.PKeyTableLen {
			return modifyErr("QP-22: pkey_index %d is outside port %d's P_Key table (%d entries)", attr.PKeyIndex, qpPort, p.PKeyTableLen)
		}
	}
	if mask&verbs.QPAttrAV != 0 {
		if err := checkAV("ah_attr", &attr.AHAttr, lim); err != nil {
			return err
		}
		if mask&verbs.QPAttrState != 0 && next == verbs.QPStateRTR && attr.AHAttr.PortNum != cur.Port {
			return modifyErr("QP-22: ah_attr.port_num %d is not the QP's port %d", attr.AHAttr.PortNum, cur.Port)
		}
		if mask&verbs.QPAttrPort != 0 && attr.AHAttr.PortNum != attr.PortNum {
			return modifyErr("QP-22: ah_attr.port_num %d differs from port_num %d", attr.AHAttr.PortNum, attr.PortNum)
		}
	}
	if mask&verbs.QPAttrPathMTU != 0 {
		if !attr.PathMTU.Valid() {
			return modifyErr("QP-22: path_mtu %d is not an enum ibv_mtu value", uint32(attr.PathMTU))
		}
		p, ok := lim.port(qpPort)
		if !ok {
			return modifyErr("QP-22: path_mtu needs the QP's port, and port %d does not exist", qpPort)
		}
		if attr.PathMTU > p.MaxMTU {
			return modifyErr("QP-22: path_mtu %v exceeds port %d's max_mtu %v", attr.PathMTU, qpPort, p.MaxMTU)
		}
	}
	if mask&verbs.QPAttrTimeout != 0 && attr.Timeout > 31 {
		return modifyErr("QP-22: timeout %d exceeds 31", attr.Timeout)
	}
	if mask&verbs.QPAttrRetryCnt != 0 && attr.RetryCnt > 7 {
		return modifyErr("QP-22: retry_cnt %d exceeds 7", attr.RetryCnt)
	}
	if mask&verbs.QPAttrRNRRetry != 0 && attr.RNRRetry > 7 {
		return modifyErr("QP-22: rnr_retry %d exceeds 7", attr.RNRRetry)
	}
	if mask&verbs.QPAttrMinRNRTimer != 0 && attr.MinRNRTimer > 31 {
		return modifyErr("QP-22: min_rnr_timer %d exceeds 31", attr.MinRNRTimer)
	}
	if mask&verbs.QPAttrMaxQPRDAtomic != 0 && int(attr.MaxRDAtomic) > lim.MaxQPInitRDAtom {
		return modifyErr("QP-22: max_rd_atomic %d exceeds the device's max_qp_init_rd_atom %d", attr.MaxRDAtomic, lim.MaxQPInitRDAtom)
	}
	if mask&verbs.QPAttrMaxDestRDAtomic != 0 && int(attr.MaxDestRDAtomic) > lim.MaxQPRDAtom {
		return modifyErr("QP-22: max_dest_rd_atomic %d exceeds the device's max_qp_rd_atom %d", attr.MaxDestRDAtomic, lim.MaxQPRDAtom)
	}
	if mask&verbs.QPAttrAltPath != 0 {
		if err := checkAltPath(attr, qpPort, lim); err != nil {
			return err
		}
	}
	if mask&verbs.QPAttrPathMigState != 0 && !attr.PathMigState.Valid() {
		return modifyErr("QP-22: path_mig_state %d is not an enum ibv_mig_state value", uint32(attr.PathMigState))
	}
	// ON_DEMAND is accepted and means nothing to a QP: rxe lists it among
	// the QP's supported access bits and mlx5 ignores it (ODP-03).
	if bad := attr.QPAccessFlags &^ (verbs.QPAccessBits | verbs.AccessOnDemand); mask&verbs.QPAttrAccessFlags != 0 && bad != 0 {
		return modifyErr("QP-22: qp_access_flags %v has bits a QP does not use (%v)", attr.QPAccessFlags, bad)
	}
	return nil
}

// checkAltPath validates the four fields AttrAltPath covers. qpPort is the
// QP's primary port after the modify (0 if unknown).
func checkAltPath(attr *verbs.QPAttr, qpPort uint8, lim Limits) error {
	alt, ok := lim.port(attr.AltPortNum)
	if !ok {
		return modifyErr("QP-22: alt_port_num %d does not exist (the device has %d ports)", attr.AltPortNum, len(lim.Ports))
	}
	if err := checkAV("alt_ah_attr", &attr.AltAHAttr, lim); err != nil {
		return err
	}
	if attr.AltAHAttr.PortNum != attr.AltPortNum {
		return modifyErr("QP-22: alt_ah_attr.port_num %d differs from alt_port_num %d", attr.AltAHAttr.PortNum, attr.AltPortNum)
	}
	if primary, ok := lim.port(qpPort); alt.Ethernet || (ok && primary.Ethernet) {
		return modifyErr("QP-22: alternate paths are supported on InfiniBand ports only")
	}
	if attr.AltTimeout > 31 {
		return modifyErr("QP-22: alt_timeout %d exceeds 31", attr.AltTimeout)
	}
	if int(attr.AltPKeyIndex) >= alt.PKeyTableLen {
		return modifyErr("QP-22: alt_pkey_index %d is outside port %d's P_Key table (%d entries)", attr.AltPKeyIndex, attr.AltPortNum, alt.PKeyTableLen)
	}
	return nil
}

// The LIDs a connected QP's path may not name (IBA 4.1.3): 0 is reserved,
// and from 0xc000 up they are multicast and, 0xffff, permissive.
const (
	lidReserved      = 0
	lidMulticastBase = 0xc000
)

// checkAV validates an address vector as the kernel and an InfiniBand
// provider do (AV-01..AV-03): its port exists (EINVAL), it is global where
// the port requires it (EINVAL), a GRH's source GID index lies in the
// port's table (EINVAL) and names a GID (ENODATA, as rdma_get_gid_attr
// says), the SL fits in 4 bits and the static rate is an enum ibv_rate
// value (EINVAL, rdmavt's rvt_check_ah), and on an InfiniBand port the DLID
// is a unicast LID (EINVAL: 0 is reserved, and rvt_modify_qp refuses
// multicast and permissive LIDs on a QP's paths). A RoCE port addresses by
// GID, so its DLID is not looked at.
func checkAV(field string, av *verbs.AHAttr, lim Limits) error {
	p, ok := lim.port(av.PortNum)
	if !ok {
		return modifyErr("QP-22: %s.port_num %d does not exist (the device has %d ports; AV-01)", field, av.PortNum, len(lim.Ports))
	}
	if av.IsGlobal {
		if int(av.GRH.SGIDIndex) >= p.GIDTableLen {
			return modifyErr("QP-22: %s.grh.sgid_index %d is outside port %d's GID table (%d entries; AV-02)", field, av.GRH.SGIDIndex, av.PortNum, p.GIDTableLen)
		}
		if p.UnusedGID != nil && p.UnusedGID(int(av.GRH.SGIDIndex)) {
			return verr.Errorf(modifyVerb, syscall.ENODATA, "QP-22: %s.grh.sgid_index %d names an unused entry of port %d's GID table (AV-02)", field, av.GRH.SGIDIndex, av.PortNum)
		}
	} else if p.GRHRequired {
		return modifyErr("QP-22: %s: port %d requires a GRH (is_global=1; AV-01)", field, av.PortNum)
	}
	switch {
	case av.SL > 15:
		return modifyErr("QP-22: %s.sl %d does not fit in 4 bits (AV-03)", field, av.SL)
	case !validRate(av.StaticRate):
		return modifyErr("QP-22: %s.static_rate %d is not an enum ibv_rate value (AV-03)", field, av.StaticRate)
	case p.Ethernet:
		return nil
	case av.DLID == lidReserved:
		return modifyErr("QP-22: %s.dlid 0 is reserved on InfiniBand port %d (AV-03)", field, av.PortNum)
	case av.DLID >= lidMulticastBase:
		return modifyErr("QP-22: %s.dlid %#x is a multicast or permissive LID, which a QP's path cannot name (AV-03)", field, av.DLID)
	}
	return nil
}

// validRate reports whether r is an enum ibv_rate value: IBV_RATE_MAX (0,
// the port's rate) or IBV_RATE_2_5_GBPS (2) to IBV_RATE_1200_GBPS (24); 1
// is unassigned.
func validRate(r uint8) bool { return r == 0 || (r >= 2 && r <= 24) }
