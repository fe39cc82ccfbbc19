package qp

// This file holds the transition table: for each legal (from, to) pair, the
// attribute bits each transport must supply and may supply. It follows the
// Linux core's qp_state_table (drivers/infiniband/core/verbs.c), which
// every driver that calls ib_modify_qp_is_ok enforces, restricted to the
// transports the simulator implements (QP-07, QP-09, QP-14..QP-21): RC, UC,
// UD and XRC's initiator (xi, IB_QPT_XRC_INI) and target (xt,
// IB_QPT_XRC_TGT) (XRC-08).
// AttrState is implied on every edge and is never listed.

// bitsFor is what one transport needs on one edge.
type bitsFor struct {
	req, opt AttrMask
}

// edge is one legal transition with its per-transport attribute sets. An
// edge with no bits for a transport still applies to it: the transport may
// take that transition with AttrState alone.
type edge struct {
	from, to   State
	rc, uc, ud bitsFor
	xi, xt     bitsFor // XRCSend, XRCRecv
}

// Attribute groups that several edges share.
const (
	// What connects an RC or UC QP to its peer's receive side.
	connectRTR = AttrAV | AttrPathMTU | AttrDestQPN | AttrRQPSN
	// The RC responder's resources, required on INIT→RTR.
	rcResponder = AttrMaxDestRDAtomic | AttrMinRNRTimer
	// The RC requester's retry machinery, required on RTR→RTS.
	rcRequester = AttrTimeout | AttrRetryCnt | AttrRNRRetry | AttrMaxQPRDAtomic
	// What a connected QP may adjust on its way to or within RTS.
	connectedRTS = AttrCurState | AttrAltPath | AttrAccessFlags | AttrPathMigState
	// What a UD QP may adjust on its way to or within RTS.
	datagramRTS = AttrCurState | AttrQKey
)

// edges lists every legal transition. RESET→ERR is absent: Linux rejects it
// (QP-08); Policy.ResetToErr adds it back.
var edges = []edge{
	{from: Reset, to: Reset},
	{from: Reset, to: Init,
		rc: bitsFor{req: AttrPKeyIndex | AttrPort | AttrAccessFlags},
		uc: bitsFor{req: AttrPKeyIndex | AttrPort | AttrAccessFlags},
		ud: bitsFor{req: AttrPKeyIndex | AttrPort | AttrQKey},
		xi: bitsFor{req: AttrPKeyIndex | AttrPort | AttrAccessFlags},
		xt: bitsFor{req: AttrPKeyIndex | AttrPort | AttrAccessFlags}},

	{from: Init, to: Reset},
	{from: Init, to: Err},
	{from: Init, to: Init,
		rc: bitsFor{opt: AttrPKeyIndex | AttrPort | AttrAccessFlags},
		uc: bitsFor{opt: AttrPKeyIndex | AttrPort | AttrAccessFlags},
		ud: bitsFor{opt: AttrPKeyIndex | AttrPort | AttrQKey},
		xi: bitsFor{opt: AttrPKeyIndex | AttrPort | AttrAccessFlags},
		xt: bitsFor{opt: AttrPKeyIndex | AttrPort | AttrAccessFlags}},
	// The XRC initiator has no responder: it connects like UC; the target
	// is RC's receive side.
	{from: Init, to: RTR,
		rc: bitsFor{req: connectRTR | rcResponder, opt: AttrAltPath | AttrAccessFlags | AttrPKeyIndex},
		uc: bitsFor{req: connectRTR, opt: AttrAltPath | AttrAccessFlags | AttrPKeyIndex},
		ud: bitsFor{opt: AttrPKeyIndex | AttrQKey},
		xi: bitsFor{req: connectRTR, opt: AttrAltPath | AttrAccessFlags | AttrPKeyIndex},
		xt: bitsFor{req: connectRTR | rcResponder, opt: AttrAltPath | AttrAccessFlags | AttrPKeyIndex}},

	{from: RTR, to: Reset},
	{from: RTR, to: Err},
	// The XRC target sends nothing but responses: the kernel asks it for
	// sq_psn and timeout only.
	{from: RTR, to: RTS,
		rc: bitsFor{req: AttrSQPSN | rcRequester, opt: connectedRTS | AttrMinRNRTimer},
		uc: bitsFor{req: AttrSQPSN, opt: connectedRTS},
		ud: bitsFor{req: AttrSQPSN, opt: datagramRTS},
		xi: bitsFor{req: AttrSQPSN | rcRequester, opt: connectedRTS},
		xt: bitsFor{req: AttrSQPSN | AttrTimeout, opt: connectedRTS | AttrMinRNRTimer}},

	{from: RTS, to: Reset},
	{from: RTS, to: Err},
	{from: RTS, to: RTS,
		rc: bitsFor{opt: connectedRTS | AttrMinRNRTimer},
		uc: bitsFor{opt: connectedRTS},
		ud: bitsFor{opt: datagramRTS},
		xi: bitsFor{opt: connectedRTS},
		xt: bitsFor{opt: connectedRTS | AttrMinRNRTimer}},
	{from: RTS, to: SQD,
		rc: bitsFor{opt: AttrEnSQDAsyncNotify},
		uc: bitsFor{opt: AttrEnSQDAsyncNotify},
		ud: bitsFor{opt: AttrEnSQDAsyncNotify},
		xi: bitsFor{opt: AttrEnSQDAsyncNotify},
		xt: bitsFor{opt: AttrEnSQDAsyncNotify}},

	{from: SQD, to: Reset},
	{from: SQD, to: Err},
	{from: SQD, to: RTS,
		rc: bitsFor{opt: connectedRTS | AttrMinRNRTimer},
		uc: bitsFor{opt: connectedRTS},
		ud: bitsFor{opt: datagramRTS},
		xi: bitsFor{opt: connectedRTS},
		xt: bitsFor{opt: connectedRTS | AttrMinRNRTimer}},
	// In SQD a connected QP may be re-pointed: RC may change nearly
	// everything it set on the way up, UC its path and keys.
	{from: SQD, to: SQD,
		rc: bitsFor{opt: AttrPort | AttrAV | rcRequester | AttrMaxDestRDAtomic |
			AttrAltPath | AttrAccessFlags | AttrPKeyIndex | AttrMinRNRTimer | AttrPathMigState},
		uc: bitsFor{opt: AttrAV | AttrAltPath | AttrAccessFlags | AttrPKeyIndex | AttrPathMigState},
		ud: bitsFor{opt: AttrPKeyIndex | AttrQKey},
		xi: bitsFor{opt: AttrPort | AttrAV | rcRequester |
			AttrAltPath | AttrAccessFlags | AttrPKeyIndex | AttrPathMigState},
		xt: bitsFor{opt: AttrPort | AttrAV | AttrTimeout | AttrMaxDestRDAtomic |
			AttrAltPath | AttrAccessFlags | AttrPKeyIndex | AttrMinRNRTimer | AttrPathMigState}},

	{from: SQE, to: Reset},
	{from: SQE, to: Err},
	// The kernel lists no attributes for RC (nor XRC) here, so RC may take
	// SQE→RTS with AttrState alone; it is unreachable because an RC QP
	// never enters SQE (FLUSH-09).
	{from: SQE, to: RTS,
		uc: bitsFor{opt: AttrCurState | AttrAccessFlags},
		ud: bitsFor{opt: datagramRTS}},

	{from: Err, to: Reset},
	{from: Err, to: Err},
}

// edgeIndex finds an edge by (from, to); nil where the table has none.
var edgeIndex = func() (ix [Err + 1][Err + 1]*edge) {
	for i := range edges {
		e := &edges[i]
		ix[e.from][e.to] = e
	}
	return ix
}()

// Transition reports whether a QP of type typ may go from one state to
// another under pol, and if so which attribute bits it must and may
// supply besides AttrState. It is the table CheckModify enforces, for
// callers that want to enumerate it. ok is false for an unsupported type,
// a state outside Reset..Err, or a pair the table does not list.
func Transition(from, to State, typ Type, pol Policy) (required, optional AttrMask, ok bool) {
	if !Supported(typ) || !from.Valid() || !to.Valid() {
		return 0, 0, false
	}
	if from == Reset && to == Err {
		// QP-08: IBTA allows it with no attributes; Linux does not.
		return 0, 0, pol.ResetToErr
	}
	e := edgeIndex[from][to]
	if e == nil {
		return 0, 0, false
	}
	var b bitsFor
	switch typ {
	case RC:
		b = e.rc
	case UC:
		b = e.uc
	case UD:
		b = e.ud
	case XRCSend:
		b = e.xi
	case XRCRecv:
		b = e.xt
	}
	return b.req, b.opt, true
}

// MinimalMask returns the smallest mask that takes a QP of type typ from
// one state to another under the default Policy: AttrState plus the
// required attributes (the man page's "minimum list", QP-14, QP-16,
// QP-17). ok is false for a transition that is not legal. Under
// Policy.ResetToErr, RESET→ERR takes AttrState alone.
//
// It is written out by hand, independently of the table CheckModify uses,
// so that tests can check one against the other.
func MinimalMask(from, to State, typ Type) (mask AttrMask, ok bool) {
	if !Supported(typ) {
		return 0, false
	}
	legal := false
	switch from {
	case Reset:
		legal = to == Reset || to == Init
	case Init:
		legal = to == Reset || to == Err || to == Init || to == RTR
	case RTR:
		legal = to == Reset || to == Err || to == RTS
	case RTS:
		legal = to == Reset || to == Err || to == RTS || to == SQD
	case SQD:
		legal = to == Reset || to == Err || to == RTS || to == SQD
	case SQE:
		legal = to == Reset || to == Err || to == RTS
	case Err:
		legal = to == Reset || to == Err
	}
	if !legal {
		return 0, false
	}
	mask = AttrState
	switch {
	case from == Reset && to == Init && typ == UD:
		mask |= AttrPKeyIndex | AttrPort | AttrQKey
	case from == Reset && to == Init:
		mask |= AttrPKeyIndex | AttrPort | AttrAccessFlags
	case from == Init && to == RTR && (typ == RC || typ == XRCRecv):
		mask |= AttrAV | AttrPathMTU | AttrDestQPN | AttrRQPSN | AttrMaxDestRDAtomic | AttrMinRNRTimer
	case from == Init && to == RTR && (typ == UC || typ == XRCSend):
		mask |= AttrAV | AttrPathMTU | AttrDestQPN | AttrRQPSN
	case from == RTR && to == RTS && (typ == RC || typ == XRCSend):
		mask |= AttrSQPSN | AttrTimeout | AttrRetryCnt | AttrRNRRetry | AttrMaxQPRDAtomic
	case from == RTR && to == RTS && typ == XRCRecv:
		mask |= AttrSQPSN | AttrTimeout
	case from == RTR && to == RTS:
		mask |= AttrSQPSN
	}
	return mask, true
}
