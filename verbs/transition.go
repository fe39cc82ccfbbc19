package verbs

// This file holds the transition table: for each legal (from, to) pair, the
// attribute bits each transport must supply and may supply. It follows the
// Linux core's qp_state_table (drivers/infiniband/core/verbs.c), which
// every driver that calls ib_modify_qp_is_ok enforces, restricted to the
// transports the simulator implements (QP-07, QP-09, QP-14..QP-21): RC, UC,
// UD and XRC's initiator (xi, IB_QPT_XRC_INI) and target (xt,
// IB_QPT_XRC_TGT) (XRC-08).
// QPAttrState is implied on every edge and is never listed.

// bitsFor is what one transport needs on one edge.
type bitsFor struct {
	req, opt QPAttrMask
}

// edge is one legal transition with its per-transport attribute sets. An
// edge with no bits for a transport still applies to it: the transport may
// take that transition with QPAttrState alone.
type edge struct {
	from, to   QPState
	rc, uc, ud bitsFor
	xi, xt     bitsFor // XRCSend, XRCRecv
}

// Attribute groups that several edges share.
const (
	// What connects an RC or UC QP to its peer's receive side.
	connectRTR = QPAttrAV | QPAttrPathMTU | QPAttrDestQPN | QPAttrRQPSN
	// The RC responder's resources, required on INIT→RTR.
	rcResponder = QPAttrMaxDestRDAtomic | QPAttrMinRNRTimer
	// The RC requester's retry machinery, required on RTR→RTS.
	rcRequester = QPAttrTimeout | QPAttrRetryCnt | QPAttrRNRRetry | QPAttrMaxQPRDAtomic
	// What a connected QP may adjust on its way to or within RTS.
	connectedRTS = QPAttrCurState | QPAttrAltPath | QPAttrAccessFlags | QPAttrPathMigState
	// What a UD QP may adjust on its way to or within RTS.
	datagramRTS = QPAttrCurState | QPAttrQKey
)

// edges lists every legal transition. RESET→ERR is absent: Linux rejects it
// (QP-08); Readings.ResetToErr adds it back.
var edges = []edge{
	{from: QPStateReset, to: QPStateReset},
	{from: QPStateReset, to: QPStateInit,
		rc: bitsFor{req: QPAttrPKeyIndex | QPAttrPort | QPAttrAccessFlags},
		uc: bitsFor{req: QPAttrPKeyIndex | QPAttrPort | QPAttrAccessFlags},
		ud: bitsFor{req: QPAttrPKeyIndex | QPAttrPort | QPAttrQKey},
		xi: bitsFor{req: QPAttrPKeyIndex | QPAttrPort | QPAttrAccessFlags},
		xt: bitsFor{req: QPAttrPKeyIndex | QPAttrPort | QPAttrAccessFlags}},

	{from: QPStateInit, to: QPStateReset},
	{from: QPStateInit, to: QPStateErr},
	{from: QPStateInit, to: QPStateInit,
		rc: bitsFor{opt: QPAttrPKeyIndex | QPAttrPort | QPAttrAccessFlags},
		uc: bitsFor{opt: QPAttrPKeyIndex | QPAttrPort | QPAttrAccessFlags},
		ud: bitsFor{opt: QPAttrPKeyIndex | QPAttrPort | QPAttrQKey},
		xi: bitsFor{opt: QPAttrPKeyIndex | QPAttrPort | QPAttrAccessFlags},
		xt: bitsFor{opt: QPAttrPKeyIndex | QPAttrPort | QPAttrAccessFlags}},
	// The XRC initiator has no responder: it connects like UC; the target
	// is RC's receive side.
	{from: QPStateInit, to: QPStateRTR,
		rc: bitsFor{req: connectRTR | rcResponder, opt: QPAttrAltPath | QPAttrAccessFlags | QPAttrPKeyIndex},
		uc: bitsFor{req: connectRTR, opt: QPAttrAltPath | QPAttrAccessFlags | QPAttrPKeyIndex},
		ud: bitsFor{opt: QPAttrPKeyIndex | QPAttrQKey},
		xi: bitsFor{req: connectRTR, opt: QPAttrAltPath | QPAttrAccessFlags | QPAttrPKeyIndex},
		xt: bitsFor{req: connectRTR | rcResponder, opt: QPAttrAltPath | QPAttrAccessFlags | QPAttrPKeyIndex}},

	{from: QPStateRTR, to: QPStateReset},
	{from: QPStateRTR, to: QPStateErr},
	// The XRC target sends nothing but responses: the kernel asks it for
	// sq_psn and timeout only.
	{from: QPStateRTR, to: QPStateRTS,
		rc: bitsFor{req: QPAttrSQPSN | rcRequester, opt: connectedRTS | QPAttrMinRNRTimer},
		uc: bitsFor{req: QPAttrSQPSN, opt: connectedRTS},
		ud: bitsFor{req: QPAttrSQPSN, opt: datagramRTS},
		xi: bitsFor{req: QPAttrSQPSN | rcRequester, opt: connectedRTS},
		xt: bitsFor{req: QPAttrSQPSN | QPAttrTimeout, opt: connectedRTS | QPAttrMinRNRTimer}},

	{from: QPStateRTS, to: QPStateReset},
	{from: QPStateRTS, to: QPStateErr},
	{from: QPStateRTS, to: QPStateRTS,
		rc: bitsFor{opt: connectedRTS | QPAttrMinRNRTimer},
		uc: bitsFor{opt: connectedRTS},
		ud: bitsFor{opt: datagramRTS},
		xi: bitsFor{opt: connectedRTS},
		xt: bitsFor{opt: connectedRTS | QPAttrMinRNRTimer}},
	{from: QPStateRTS, to: QPStateSQD,
		rc: bitsFor{opt: QPAttrEnSQDAsyncNotify},
		uc: bitsFor{opt: QPAttrEnSQDAsyncNotify},
		ud: bitsFor{opt: QPAttrEnSQDAsyncNotify},
		xi: bitsFor{opt: QPAttrEnSQDAsyncNotify},
		xt: bitsFor{opt: QPAttrEnSQDAsyncNotify}},

	{from: QPStateSQD, to: QPStateReset},
	{from: QPStateSQD, to: QPStateErr},
	{from: QPStateSQD, to: QPStateRTS,
		rc: bitsFor{opt: connectedRTS | QPAttrMinRNRTimer},
		uc: bitsFor{opt: connectedRTS},
		ud: bitsFor{opt: datagramRTS},
		xi: bitsFor{opt: connectedRTS},
		xt: bitsFor{opt: connectedRTS | QPAttrMinRNRTimer}},
	// In SQD a connected QP may be re-pointed: RC may change nearly
	// everything it set on the way up, UC its path and keys.
	{from: QPStateSQD, to: QPStateSQD,
		rc: bitsFor{opt: QPAttrPort | QPAttrAV | rcRequester | QPAttrMaxDestRDAtomic |
			QPAttrAltPath | QPAttrAccessFlags | QPAttrPKeyIndex | QPAttrMinRNRTimer | QPAttrPathMigState},
		uc: bitsFor{opt: QPAttrAV | QPAttrAltPath | QPAttrAccessFlags | QPAttrPKeyIndex | QPAttrPathMigState},
		ud: bitsFor{opt: QPAttrPKeyIndex | QPAttrQKey},
		xi: bitsFor{opt: QPAttrPort | QPAttrAV | rcRequester |
			QPAttrAltPath | QPAttrAccessFlags | QPAttrPKeyIndex | QPAttrPathMigState},
		xt: bitsFor{opt: QPAttrPort | QPAttrAV | QPAttrTimeout | QPAttrMaxDestRDAtomic |
			QPAttrAltPath | QPAttrAccessFlags | QPAttrPKeyIndex | QPAttrMinRNRTimer | QPAttrPathMigState}},

	{from: QPStateSQE, to: QPStateReset},
	{from: QPStateSQE, to: QPStateErr},
	// The kernel lists no attributes for RC (nor XRC) here, so RC may take
	// SQE→RTS with QPAttrState alone; it is unreachable because an RC QP
	// never enters SQE (FLUSH-09).
	{from: QPStateSQE, to: QPStateRTS,
		uc: bitsFor{opt: QPAttrCurState | QPAttrAccessFlags},
		ud: bitsFor{opt: datagramRTS}},

	{from: QPStateErr, to: QPStateReset},
	{from: QPStateErr, to: QPStateErr},
}

// edgeIndex finds an edge by (from, to); nil where the table has none.
var edgeIndex = func() (ix [QPStateErr + 1][QPStateErr + 1]*edge) {
	for i := range edges {
		e := &edges[i]
		ix[e.from][e.to] = e
	}
	return ix
}()

// Transition reports whether ibv_modify_qp may take a QP of type typ from
// one state to another under readings r, and if so which attribute bits
// the mask must and may have besides QPAttrState (QP-07, QP-09,
// QP-14..QP-21; QP-08 with r.ResetToErr). It is the one transition table:
// the simulator enforces it, the conformance suite and the reference model
// enumerate it. ok is false for a type the simulator does not implement (RC, UC, UD and
// the two XRC types are), a state outside RESET..ERR, or a pair the table
// does not list.
func Transition(from, to QPState, typ QPType, r Readings) (required, optional QPAttrMask, ok bool) {
	if !transitionTypes(typ) || !from.Valid() || !to.Valid() {
		return 0, 0, false
	}
	if from == QPStateReset && to == QPStateErr {
		// QP-08: IBTA allows it with no attributes; Linux does not.
		return 0, 0, r.ResetToErr
	}
	e := edgeIndex[from][to]
	if e == nil {
		return 0, 0, false
	}
	var b bitsFor
	switch typ {
	case QPTypeRC:
		b = e.rc
	case QPTypeUC:
		b = e.uc
	case QPTypeUD:
		b = e.ud
	case QPTypeXRCSend:
		b = e.xi
	case QPTypeXRCRecv:
		b = e.xt
	}
	return b.req, b.opt, true
}

// MinimalMask returns the smallest mask that takes a QP of type typ from
// one state to another under the default readings: QPAttrState plus the
// required attributes (the man page's "minimum list", QP-14, QP-16,
// QP-17). ok is false for a transition that is not legal. Under
// Readings.ResetToErr, RESET→ERR takes QPAttrState alone.
//
// It is written out by hand, independently of the table CheckModify uses,
// so that tests can check one against the other.
func MinimalMask(from, to QPState, typ QPType) (mask QPAttrMask, ok bool) {
	if !transitionTypes(typ) {
		return 0, false
	}
	legal := false
	switch from {
	case QPStateReset:
		legal = to == QPStateReset || to == QPStateInit
	case QPStateInit:
		legal = to == QPStateReset || to == QPStateErr || to == QPStateInit || to == QPStateRTR
	case QPStateRTR:
		legal = to == QPStateReset || to == QPStateErr || to == QPStateRTS
	case QPStateRTS:
		legal = to == QPStateReset || to == QPStateErr || to == QPStateRTS || to == QPStateSQD
	case QPStateSQD:
		legal = to == QPStateReset || to == QPStateErr || to == QPStateRTS || to == QPStateSQD
	case QPStateSQE:
		legal = to == QPStateReset || to == QPStateErr || to == QPStateRTS
	case QPStateErr:
		legal = to == QPStateReset || to == QPStateErr
	}
	if !legal {
		return 0, false
	}
	mask = QPAttrState
	switch {
	case from == QPStateReset && to == QPStateInit && typ == QPTypeUD:
		mask |= QPAttrPKeyIndex | QPAttrPort | QPAttrQKey
	case from == QPStateReset && to == QPStateInit:
		mask |= QPAttrPKeyIndex | QPAttrPort | QPAttrAccessFlags
	case from == QPStateInit && to == QPStateRTR && (typ == QPTypeRC || typ == QPTypeXRCRecv):
		mask |= QPAttrAV | QPAttrPathMTU | QPAttrDestQPN | QPAttrRQPSN | QPAttrMaxDestRDAtomic | QPAttrMinRNRTimer
	case from == QPStateInit && to == QPStateRTR && (typ == QPTypeUC || typ == QPTypeXRCSend):
		mask |= QPAttrAV | QPAttrPathMTU | QPAttrDestQPN | QPAttrRQPSN
	case from == QPStateRTR && to == QPStateRTS && (typ == QPTypeRC || typ == QPTypeXRCSend):
		mask |= QPAttrSQPSN | QPAttrTimeout | QPAttrRetryCnt | QPAttrRNRRetry | QPAttrMaxQPRDAtomic
	case from == QPStateRTR && to == QPStateRTS && typ == QPTypeXRCRecv:
		mask |= QPAttrSQPSN | QPAttrTimeout
	case from == QPStateRTR && to == QPStateRTS:
		mask |= QPAttrSQPSN
	}
	return mask, true
}

// transitionTypes reports whether the table has the transitions of t: RC,
// UC, UD and XRC's initiator and target.
func transitionTypes(t QPType) bool {
	return t == QPTypeRC || t == QPTypeUC || t == QPTypeUD || t == QPTypeXRCSend || t == QPTypeXRCRecv
}
