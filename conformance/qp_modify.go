package conformance

import (
	"fmt"
	"math/rand/v2"

	"github.com/verbsim/verbsim/verbs"
)

// Cases of the QP state machine: which transitions are legal (QP-07, QP-08),
// which attribute bits each takes (QP-09..21) and which values (QP-22), all
// against the suite's own table in qp.go. A refused modify must change
// nothing, which every check verifies by querying before and after (QP-13).
//
// SQE is never a source state here: only a failing send takes a QP there,
// which needs the transport (issue #4). It is a target like any other, and
// no modify may reach it.

// qpMaxFailures bounds the failures a table case reports, so that a broken
// device does not bury the first ones.
const qpMaxFailures = 12

// qpIllegalMasks are the masks tried on an illegal pair ending in to: STATE
// alone, and STATE with what each legal way into to requires, so that a
// device cannot pass by refusing for a missing bit.
func qpIllegalMasks(p verbs.Readings, to verbs.QPState, typ verbs.QPType) []verbs.QPAttrMask {
	masks := []verbs.QPAttrMask{bState}
	seen := map[verbs.QPAttrMask]bool{bState: true}
	for _, f := range qpStates {
		if req, _, ok := verbs.Transition(f, to, typ, p); ok && !seen[bState|req] {
			seen[bState|req] = true
			masks = append(masks, bState|req)
		}
	}
	return masks
}

// qpEdge is one (transport, from, to) triple.
type qpEdge struct {
	typ      verbs.QPType
	from, to verbs.QPState
}

// qpLegalEdges are the legal transitions out of the states a modify reaches.
func qpLegalEdges(p verbs.Readings) []qpEdge {
	var out []qpEdge
	for _, typ := range qpTypes {
		for _, from := range qpReachable {
			for _, to := range qpStates {
				if _, _, ok := verbs.Transition(from, to, typ, p); ok {
					out = append(out, qpEdge{typ, from, to})
				}
			}
		}
	}
	return out
}

// qpCheckEdges checks the mask rules of the given transitions on every
// transport: the minimal mask works and no required bit may be left out;
// each optional bit is accepted; every other bit is refused.
func qpCheckEdges(t *tester, e *env, pairs ...[2]verbs.QPState) {
	t.Helper()
	w := qpSetup(t, e)
	for _, pr := range pairs {
		from, to := pr[0], pr[1]
		for _, typ := range qpTypes {
			req, opt, ok := verbs.Transition(from, to, typ, e.Profile)
			if !ok {
				t.Fatalf("the suite's table has no %v→%v", from, to)
			}
			what := fmt.Sprintf("%v %v→%v", typ, from, to)
			a := qpAttr(w.lim, from, to)
			q := w.at(typ, from)
			for _, b := range req.Bits() {
				w.refused(what+" without required "+b.String(), q, a, bState|req&^b)
			}
			for _, b := range (verbs.KnownQPAttrs &^ (req | opt | bState)).Bits() {
				w.refused(what+" with "+b.String()+", which it does not take", q, a, bState|req|b)
			}
			if t.Failed() {
				return
			}
			w.accepted(what+" with the required bits", q, a, bState|req, to)
			for _, b := range qpUsable(w.lim, opt).Bits() {
				w.accepted(what+" with optional "+b.String(), w.at(typ, from), a, bState|req|b, to)
			}
		}
	}
}

// qpModifyCases are the cases of the QP family in qp_modify.go.
var qpModifyCases = []Case{
	{"QP-07", "every (from, to) of every transport is legal exactly as the table says", transitionTable},
	{"QP-08", "RESET→ERR follows the profile", resetToErr},
	{"QP-09", "moves to RESET and ERR take STATE and nothing else", toResetOrErrTakesState},
	{"QP-10", "dropping a required bit or adding a foreign one is EINVAL and changes nothing", maskExactlyRequired},
	{"QP-11", "a mask without STATE is checked as the current state to itself", maskWithoutState},
	{"QP-12", "CUR_STATE only on the way into RTS, and what its value means follows the profile", curState},
	{"QP-13", "a refused modify changes no attribute and not the state", refusedModifyChangesNothing},
	{"QP-14", "RESET→INIT: required PKEY_INDEX, PORT and ACCESS_FLAGS (RC, UC) or QKEY (UD)", resetToInit},
	{"QP-15", "INIT→INIT: nothing required, the RESET→INIT attributes optional", initToInit},
	{"QP-16", "INIT→RTR: the path and PSN for UC, plus responder depth and RNR timer for RC", initToRTR},
	{"QP-17", "RTR→RTS: SQ_PSN, plus the retry and depth attributes for RC", rtrToRTS},
	{"QP-18", "RTS→RTS and SQD→RTS: nothing required, the transport's optional set", rtsToRTS},
	{"QP-19", "RTS→SQD takes EN_SQD_ASYNC_NOTIFY; SQD→SQD the transport's optional set", toSQD},
	{"QP-21", "attributes a transport lacks, CAP and RATE_LIMIT are refused everywhere", foreignAttributes},
	{"QP-22", "attribute values: ranges, port limits, PSNs cut to 24 bits", attributeValues},
}

func transitionTable(t *tester, e *env) {
	w := qpSetup(t, e)
	for _, typ := range qpTypes {
		for _, from := range qpReachable {
			var q verbs.QP // reused while modifies are refused
			for _, to := range qpStates {
				if q == nil {
					q = w.at(typ, from)
				}
				what := fmt.Sprintf("%v %v→%v", typ, from, to)
				a := qpAttr(w.lim, from, to)
				if _, _, legal := verbs.Transition(from, to, typ, e.Profile); legal {
					w.accepted(what+" (legal)", q, a, w.minimal(q, from, to), to)
					q = nil
					continue
				}
				for _, m := range qpIllegalMasks(e.Profile, to, typ) {
					w.refused(what+" (illegal)", q, a, m)
				}
			}
			if t.Failed() {
				return
			}
		}
	}
}

func resetToErr(t *tester, e *env) {
	w := qpSetup(t, e)
	for _, typ := range qpTypes {
		q := w.create(typ)
		a := qpAttr(w.lim, verbs.QPStateReset, verbs.QPStateErr)
		if e.Profile.ResetToErr {
			w.accepted("RESET→ERR (the profile allows it)", q, a, bState, verbs.QPStateErr)
		} else {
			w.refused("RESET→ERR (the profile follows the Linux table)", q, a, bState)
		}
	}
}

func toResetOrErrTakesState(t *tester, e *env) {
	w := qpSetup(t, e)
	failed := 0
	for _, typ := range qpTypes {
		for _, from := range qpReachable {
			q := w.at(typ, from)
			for _, to := range []verbs.QPState{verbs.QPStateReset, verbs.QPStateErr} {
				if _, _, ok := verbs.Transition(from, to, typ, e.Profile); !ok {
					continue
				}
				a := qpAttr(w.lim, from, to)
				for _, b := range (verbs.KnownQPAttrs &^ bState).Bits() {
					if !w.refused(fmt.Sprintf("%v %v→%v with %v", typ, from, to, b), q, a, bState|b) {
						failed++
					}
				}
			}
			if failed > qpMaxFailures {
				return
			}
		}
	}
}

func maskExactlyRequired(t *tester, e *env) {
	w := qpSetup(t, e)
	rng := rand.New(rand.NewPCG(10, 0x9910))
	edges := qpLegalEdges(e.Profile)
	for i := range 48 {
		ed := edges[rng.IntN(len(edges))]
		req, opt, _ := verbs.Transition(ed.from, ed.to, ed.typ, e.Profile)
		q := w.at(ed.typ, ed.from)
		what := fmt.Sprintf("round %d: %v %v→%v", i, ed.typ, ed.from, ed.to)
		a := qpAttr(w.lim, ed.from, ed.to)
		mask := bState | req
		for _, b := range qpUsable(w.lim, opt).Bits() {
			if rng.IntN(2) == 0 {
				mask |= b
			}
		}
		if bits := req.Bits(); len(bits) > 0 {
			drop := bits[rng.IntN(len(bits))]
			w.refused(what+" without required "+drop.String(), q, a, mask&^drop)
		}
		foreign := (verbs.KnownQPAttrs &^ (req | opt | bState)).Bits()
		add := foreign[rng.IntN(len(foreign))]
		w.refused(what+" with foreign "+add.String(), q, a, mask|add)
		w.accepted(what+" with "+mask.String(), q, a, mask, ed.to)
		if t.Failed() {
			return
		}
	}
}

func maskWithoutState(t *tester, e *env) {
	w := qpSetup(t, e)
	for _, typ := range qpTypes {
		for _, s := range qpReachable {
			q := w.at(typ, s)
			a := qpAttr(w.lim, s, s)
			a.QKey, a.MinRNRTimer, a.QPAccessFlags = 0x0badcafe, 3, verbs.AccessRemoteAtomic
			_, opt, ok := verbs.Transition(s, s, typ, e.Profile)
			if !ok {
				w.refused(fmt.Sprintf("%v in %v, mask 0", typ, s), q, a, 0)
				// The attributes the way onwards takes are refused too.
				_, onward, _ := verbs.Transition(verbs.QPStateRTR, verbs.QPStateRTS, typ, e.Profile)
				for _, b := range (onward &^ bCur).Bits() {
					w.refused(fmt.Sprintf("%v in %v, %v alone", typ, s, b), q, a, b)
				}
				continue
			}
			w.accepted(fmt.Sprintf("%v in %v, mask 0", typ, s), q, a, 0, s)
			for _, b := range qpUsable(w.lim, opt&^bCur).Bits() {
				if !w.accepted(fmt.Sprintf("%v in %v, %v alone", typ, s, b), q, a, b, s) {
					continue
				}
				got := w.query(q)
				switch {
				case b == bQKey && got.QKey != a.QKey,
					b == bMinRNR && got.MinRNRTimer != a.MinRNRTimer,
					b == bAccess && got.QPAccessFlags != a.QPAccessFlags:
					t.Errorf("%v in %v: modify(%v) without STATE succeeded but query does not show the new value", typ, s, b)
				}
			}
		}
	}
}

func curState(t *tester, e *env) {
	w := qpSetup(t, e)
	for _, typ := range qpTypes {
		for _, s := range []verbs.QPState{verbs.QPStateInit, verbs.QPStateReset, verbs.QPStateErr} {
			q := w.at(typ, s)
			w.refused(fmt.Sprintf("%v in %v, STATE|CUR_STATE", typ, s), q, qpAttr(w.lim, s, s), bState|bCur)
		}
		q := w.at(typ, verbs.QPStateInit)
		w.refused(fmt.Sprintf("%v INIT→RTR with CUR_STATE", typ), q, qpAttr(w.lim, verbs.QPStateInit, verbs.QPStateRTR), w.minimal(q, verbs.QPStateInit, verbs.QPStateRTR)|bCur)
		for _, s := range []verbs.QPState{verbs.QPStateRTR, verbs.QPStateRTS, verbs.QPStateSQD} {
			q := w.at(typ, s)
			w.accepted(fmt.Sprintf("%v %v→RTS with CUR_STATE=%v", typ, s, s), q, qpAttr(w.lim, s, verbs.QPStateRTS), w.minimal(q, s, verbs.QPStateRTS)|bCur, verbs.QPStateRTS)
		}
		q = w.at(typ, verbs.QPStateRTS)
		bad := qpAttr(w.lim, verbs.QPStateUnknown, verbs.QPStateRTS)
		w.refused(fmt.Sprintf("%v RTS→RTS with CUR_STATE=UNKNOWN", typ), q, bad, bState|bCur)
	}
	// A claim that is not the real state: UD in RTS says it is in RTR and
	// brings what RTR→RTS takes (RTS→RTS does not take SQ_PSN).
	q := w.at(verbs.QPTypeUD, verbs.QPStateRTS)
	a := qpAttr(w.lim, verbs.QPStateRTR, verbs.QPStateRTS)
	a.SQPSN = 0x777
	mask := bState | bCur | bSQPSN
	if !e.Profile.CurStateTrusted {
		w.refused("UD in RTS claiming CUR_STATE=RTR (the profile says the claim must be true)", q, a, mask)
		return
	}
	if w.accepted("UD in RTS claiming CUR_STATE=RTR (the profile trusts the claim)", q, a, mask, verbs.QPStateRTS) && w.query(q).SQPSN != 0x777 {
		t.Errorf("the modify validated as RTR→RTS succeeded but did not set sq_psn")
	}
}

func refusedModifyChangesNothing(t *tester, e *env) {
	w := qpSetup(t, e)
	// Each row is a modify with one bad value or bit among good ones that
	// would change something; refused checks the query is identical.
	rows := []struct {
		name  string
		typ   verbs.QPType
		from  verbs.QPState
		to    verbs.QPState
		mask  verbs.QPAttrMask
		spoil func(*verbs.QPAttr)
	}{
		{"INIT→INIT: new qkey, pkey_index out of range", verbs.QPTypeUD, verbs.QPStateInit, verbs.QPStateInit, bState | bQKey | bPKey,
			func(a *verbs.QPAttr) { a.QKey = 0x5555; a.PKeyIndex = uint16(min(w.lim.Port.PKeyTableLen, 0xffff)) }},
		{"RTR→RTS: new access flags, timeout 32", verbs.QPTypeRC, verbs.QPStateRTR, verbs.QPStateRTS, bState | bSQPSN | bTimeout | bRetry | bRNR | bRdAtom | bAccess,
			func(a *verbs.QPAttr) { a.QPAccessFlags = verbs.AccessRemoteAtomic; a.Timeout = 32 }},
		{"INIT→RTR: every required value, and QKEY on RC", verbs.QPTypeRC, verbs.QPStateInit, verbs.QPStateRTR, bState | bAV | bMTU | bDestQPN | bRQPSN | bDestAt | bMinRNR | bQKey,
			func(a *verbs.QPAttr) { a.RQPSN = 0x999 }},
		{"RTS, no STATE: new min_rnr_timer and access flags, and RETRY_CNT", verbs.QPTypeRC, verbs.QPStateRTS, verbs.QPStateRTS, bMinRNR | bAccess | bRetry,
			func(a *verbs.QPAttr) { a.MinRNRTimer = 1; a.QPAccessFlags = 0 }},
		{"UD RTS→SQD with an attribute it does not take", verbs.QPTypeUD, verbs.QPStateRTS, verbs.QPStateSQD, bState | bQKey,
			func(a *verbs.QPAttr) { a.QKey = 0x6666 }},
		{"UD SQD→RTS: new qkey, cur_qp_state out of range", verbs.QPTypeUD, verbs.QPStateSQD, verbs.QPStateRTS, bState | bQKey | bCur,
			func(a *verbs.QPAttr) { a.QKey = 0x7777; a.CurQPState = 9 }},
	}
	for _, r := range rows {
		q := w.at(r.typ, r.from)
		a := qpAttr(w.lim, r.from, r.to)
		r.spoil(&a)
		w.refused(r.name, q, a, r.mask)
	}
}

func resetToInit(t *tester, e *env) {
	qpCheckEdges(t, e, [2]verbs.QPState{verbs.QPStateReset, verbs.QPStateInit})
}

func initToInit(t *tester, e *env) {
	qpCheckEdges(t, e, [2]verbs.QPState{verbs.QPStateInit, verbs.QPStateInit})
}

func initToRTR(t *tester, e *env) {
	qpCheckEdges(t, e, [2]verbs.QPState{verbs.QPStateInit, verbs.QPStateRTR})
}

func rtrToRTS(t *tester, e *env) {
	qpCheckEdges(t, e, [2]verbs.QPState{verbs.QPStateRTR, verbs.QPStateRTS})
}

func rtsToRTS(t *tester, e *env) {
	qpCheckEdges(t, e, [2]verbs.QPState{verbs.QPStateRTS, verbs.QPStateRTS}, [2]verbs.QPState{verbs.QPStateSQD, verbs.QPStateRTS})
}

func toSQD(t *tester, e *env) {
	qpCheckEdges(t, e, [2]verbs.QPState{verbs.QPStateRTS, verbs.QPStateSQD}, [2]verbs.QPState{verbs.QPStateSQD, verbs.QPStateSQD})
}

func foreignAttributes(t *tester, e *env) {
	w := qpSetup(t, e)
	failed := 0
	for _, typ := range qpTypes {
		var meaningful verbs.QPAttrMask
		for _, from := range qpStates {
			for _, to := range qpStates {
				req, opt, _ := verbs.Transition(from, to, typ, e.Profile)
				meaningful |= req | opt
			}
		}
		alien := verbs.KnownQPAttrs &^ meaningful &^ bState
		if alien&(bCap|bRate) != bCap|bRate {
			t.Fatalf("verbs.Transition lists CAP or RATE_LIMIT for %v", typ)
		}
		for _, from := range qpReachable {
			q := w.at(typ, from)
			for _, to := range qpStates {
				req, _, ok := verbs.Transition(from, to, typ, e.Profile)
				if !ok {
					continue
				}
				a := qpAttr(w.lim, from, to)
				for _, b := range alien.Bits() {
					if !w.refused(fmt.Sprintf("%v %v→%v with %v", typ, from, to, b), q, a, bState|req|b) {
						failed++
					}
				}
			}
			if failed > qpMaxFailures {
				return
			}
		}
	}
}

func attributeValues(t *tester, e *env) {
	w := qpSetup(t, e)
	qpCheckValues(t, w, w.lim)
	// With a LimitedDevice, a port whose max_mtu is below the largest
	// code shows that path_mtu is compared with the port, not the enum.
	small := cqLimitedEnv(t, e, Limits{Port: PortLimits{MaxMTU: verbs.MTU1024}})
	if small == nil {
		t.Logf("no LimitedDevice: path_mtu is checked only against this device's port")
		return
	}
	sw := qpSetup(t, small)
	if sw.lim.Port.MaxMTU != verbs.MTU1024 {
		t.Fatalf("a device made WithLimits(Port.MaxMTU: 1024) reports max_mtu %v", sw.lim.Port.MaxMTU)
	}
	qpCheckValues(t, sw, sw.lim)
}

// qpCheckValues runs the QP-22 value table on w's device.
func qpCheckValues(t *tester, w *qpWorld, l Limits) {
	t.Helper()
	type row struct {
		name     string
		typ      verbs.QPType
		from, to verbs.QPState
		bit      verbs.QPAttrMask // added to the minimal mask
		set      func(*verbs.QPAttr)
		ok       bool
		check    func(verbs.QPAttr) bool // for accepted rows: what query must show
	}
	rows := []row{
		{"timeout 31", verbs.QPTypeRC, verbs.QPStateRTR, verbs.QPStateRTS, 0, func(a *verbs.QPAttr) { a.Timeout = 31 }, true, func(a verbs.QPAttr) bool { return a.Timeout == 31 }},
		{"timeout 0 (wait forever)", verbs.QPTypeRC, verbs.QPStateRTR, verbs.QPStateRTS, 0, func(a *verbs.QPAttr) { a.Timeout = 0 }, true, nil},
		{"timeout 32", verbs.QPTypeRC, verbs.QPStateRTR, verbs.QPStateRTS, 0, func(a *verbs.QPAttr) { a.Timeout = 32 }, false, nil},
		{"retry_cnt 7", verbs.QPTypeRC, verbs.QPStateRTR, verbs.QPStateRTS, 0, func(a *verbs.QPAttr) { a.RetryCnt = 7 }, true, nil},
		{"retry_cnt 8", verbs.QPTypeRC, verbs.QPStateRTR, verbs.QPStateRTS, 0, func(a *verbs.QPAttr) { a.RetryCnt = 8 }, false, nil},
		{"rnr_retry 8", verbs.QPTypeRC, verbs.QPStateRTR, verbs.QPStateRTS, 0, func(a *verbs.QPAttr) { a.RNRRetry = 8 }, false, nil},
		{"min_rnr_timer 31", verbs.QPTypeRC, verbs.QPStateInit, verbs.QPStateRTR, 0, func(a *verbs.QPAttr) { a.MinRNRTimer = 31 }, true, nil},
		{"min_rnr_timer 32", verbs.QPTypeRC, verbs.QPStateInit, verbs.QPStateRTR, 0, func(a *verbs.QPAttr) { a.MinRNRTimer = 32 }, false, nil},
		{"path_mtu = the port's max_mtu", verbs.QPTypeUC, verbs.QPStateInit, verbs.QPStateRTR, 0, func(a *verbs.QPAttr) { a.PathMTU = l.Port.MaxMTU }, true, nil},
		{"path_mtu above the port's max_mtu", verbs.QPTypeUC, verbs.QPStateInit, verbs.QPStateRTR, 0, func(a *verbs.QPAttr) { a.PathMTU = l.Port.MaxMTU + 1 }, false, nil},
		{"path_mtu 0", verbs.QPTypeRC, verbs.QPStateInit, verbs.QPStateRTR, 0, func(a *verbs.QPAttr) { a.PathMTU = 0 }, false, nil},
		{"port_num 0", verbs.QPTypeRC, verbs.QPStateReset, verbs.QPStateInit, 0, func(a *verbs.QPAttr) { a.PortNum = 0 }, false, nil},
		{"port_num past the last port", verbs.QPTypeUD, verbs.QPStateReset, verbs.QPStateInit, 0, func(a *verbs.QPAttr) { a.PortNum = uint8(min(l.NumPorts+1, 255)) }, false, nil},
		{"pkey_index past the table", verbs.QPTypeRC, verbs.QPStateReset, verbs.QPStateInit, 0, func(a *verbs.QPAttr) { a.PKeyIndex = uint16(min(l.Port.PKeyTableLen, 0xffff)) }, false, nil},
		{"sq_psn 0x1000001 is cut to 0x000001", verbs.QPTypeRC, verbs.QPStateRTR, verbs.QPStateRTS, 0, func(a *verbs.QPAttr) { a.SQPSN = 0x1000001 }, true,
			func(a verbs.QPAttr) bool { return a.SQPSN == 0x000001 }},
		{"sq_psn 0xff123456 (UD) is cut to 0x123456", verbs.QPTypeUD, verbs.QPStateRTR, verbs.QPStateRTS, 0, func(a *verbs.QPAttr) { a.SQPSN = 0xff123456 }, true,
			func(a verbs.QPAttr) bool { return a.SQPSN == 0x123456 }},
		{"rq_psn 0xffffffff is cut to 0xffffff", verbs.QPTypeUC, verbs.QPStateInit, verbs.QPStateRTR, 0, func(a *verbs.QPAttr) { a.RQPSN = 0xffffffff }, true,
			func(a verbs.QPAttr) bool { return a.RQPSN == 0xffffff }},
	}
	if l.MaxQPInitRDAtom < 255 {
		rows = append(rows,
			row{"max_rd_atomic = max_qp_init_rd_atom", verbs.QPTypeRC, verbs.QPStateRTR, verbs.QPStateRTS, 0, func(a *verbs.QPAttr) { a.MaxRDAtomic = uint8(l.MaxQPInitRDAtom) }, true, nil},
			row{"max_rd_atomic above max_qp_init_rd_atom", verbs.QPTypeRC, verbs.QPStateRTR, verbs.QPStateRTS, 0, func(a *verbs.QPAttr) { a.MaxRDAtomic = uint8(l.MaxQPInitRDAtom + 1) }, false, nil})
	}
	if l.MaxQPRDAtom < 255 {
		rows = append(rows,
			row{"max_dest_rd_atomic = max_qp_rd_atom", verbs.QPTypeRC, verbs.QPStateInit, verbs.QPStateRTR, 0, func(a *verbs.QPAttr) { a.MaxDestRDAtomic = uint8(l.MaxQPRDAtom) }, true, nil},
			row{"max_dest_rd_atomic above max_qp_rd_atom", verbs.QPTypeRC, verbs.QPStateInit, verbs.QPStateRTR, 0, func(a *verbs.QPAttr) { a.MaxDestRDAtomic = uint8(l.MaxQPRDAtom + 1) }, false, nil})
	}
	for _, r := range rows {
		q := w.at(r.typ, r.from)
		a := qpAttr(l, r.from, r.to)
		r.set(&a)
		mask := w.minimal(q, r.from, r.to) | r.bit
		what := fmt.Sprintf("%v %v→%v, %s (max_mtu %v)", r.typ, r.from, r.to, r.name, l.Port.MaxMTU)
		if !r.ok {
			w.refused(what, q, a, mask)
			continue
		}
		if w.accepted(what, q, a, mask, r.to) && r.check != nil && !r.check(w.query(q)) {
			got := w.query(q)
			t.Errorf("%s: query shows sq_psn %#x rq_psn %#x timeout %d", what, got.SQPSN, got.RQPSN, got.Timeout)
		}
	}
}
