package qp_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/verbsim/verbsim/sim/internal/qp"
	"github.com/verbsim/verbsim/verbs"
)

// TestTransitionsExhaustive_QP07_QP08 tries every (from, to) pair of the
// eight states, Unknown included, on every transport and under every
// policy. A legal pair with its minimal mask and good values must succeed
// and land in the target state; every other pair must fail with EINVAL,
// with the bare STATE mask and with a mask that carries every bit the
// target's legal entries require.
func TestTransitionsExhaustive_QP07_QP08(t *testing.T) {
	for _, p := range policies {
		for _, typ := range allTypes {
			// Everything some legal transition into `to` needs, per target.
			needs := map[verbs.QPState]verbs.QPAttrMask{}
			for _, from := range qpStates {
				for _, to := range qpStates {
					if m, ok := verbs.MinimalMask(from, to, typ); ok {
						needs[to] |= m
					}
				}
			}
			for _, from := range allStates {
				for _, to := range allStates {
					name := fmt.Sprintf("%s/%v/%v->%v", p.name, typ, from, to)
					attr := goodAttr(from, to)
					cur := current(from)
					if !legalIn(from, to, p.pol) {
						for _, mask := range []verbs.QPAttrMask{verbs.QPAttrState, verbs.QPAttrState | needs[to]} {
							before := attr
							_, err := qp.CheckModify(cur, typ, &attr, mask, testLimits, p.pol)
							wantEINVAL(t, err, name+" mask "+mask.String())
							if to == verbs.QPStateUnknown && from.Valid() && !strings.Contains(err.Error(), "QP-06") {
								t.Errorf("%s: reason %q does not name QP-06", name, err)
							}
							if attr != before {
								t.Fatalf("%s: CheckModify changed attr", name)
							}
						}
						if _, ok := verbs.MinimalMask(from, to, typ); ok && !(from == verbs.QPStateReset && to == verbs.QPStateErr) {
							t.Errorf("%s: MinimalMask reports an illegal transition as legal", name)
						}
						continue
					}
					mask, ok := verbs.MinimalMask(from, to, typ)
					if !ok {
						// Only RESET→ERR under ResetToErr is legal beyond
						// the default table; it takes STATE alone.
						if from != verbs.QPStateReset || to != verbs.QPStateErr {
							t.Fatalf("%s: legal per QP-07 but MinimalMask says no", name)
						}
						mask = verbs.QPAttrState
					}
					next, err := qp.CheckModify(cur, typ, &attr, mask, testLimits, p.pol)
					if err != nil {
						t.Fatalf("%s with %v: %v", name, mask, err)
					}
					if next != to {
						t.Fatalf("%s: next state %v", name, next)
					}
				}
			}
		}
	}
}

// TestResetToErr_QP08 names the conflict row directly: rejected by
// default and by rxe, accepted (with STATE only) under the IBTA reading.
func TestResetToErr_QP08(t *testing.T) {
	for _, typ := range allTypes {
		attr := goodAttr(verbs.QPStateReset, verbs.QPStateErr)
		_, err := qp.CheckModify(current(verbs.QPStateReset), typ, &attr, verbs.QPAttrState, testLimits, qp.Policy{})
		wantEINVAL(t, err, "default RESET→ERR on "+typ.String())
		_, err = qp.CheckModify(current(verbs.QPStateReset), typ, &attr, verbs.QPAttrState, testLimits, qp.RXEPolicy())
		wantEINVAL(t, err, "rxe RESET→ERR on "+typ.String())
		next, err := qp.CheckModify(current(verbs.QPStateReset), typ, &attr, verbs.QPAttrState, testLimits, qp.Policy{ResetToErr: true})
		if err != nil || next != verbs.QPStateErr {
			t.Errorf("IBTA RESET→ERR on %v: %v, %v", typ, next, err)
		}
		_, err = qp.CheckModify(current(verbs.QPStateReset), typ, &attr, verbs.QPAttrState|verbs.QPAttrPort, testLimits, qp.Policy{ResetToErr: true})
		wantEINVAL(t, err, "IBTA RESET→ERR with PORT (QP-09)")
	}
}

// want is the attribute table as the catalogue words it (QP-09, QP-14..QP-20),
// written out a third time, independently of the package's table and of
// MinimalMask. Keys are "FROM>TO/TYPE"; a legal edge that is absent takes
// nothing besides STATE (QP-09 for every edge into RESET and ERR).
var want = func() map[string][2]verbs.QPAttrMask {
	const (
		pkey, port, access, qkey = verbs.QPAttrPKeyIndex, verbs.QPAttrPort, verbs.QPAttrAccessFlags, verbs.QPAttrQKey
		curS, alt, mig, rnrT     = verbs.QPAttrCurState, verbs.QPAttrAltPath, verbs.QPAttrPathMigState, verbs.QPAttrMinRNRTimer
	)
	m := map[string][2]verbs.QPAttrMask{
		// QP-14
		"RESET>INIT/UD": {pkey | port | qkey, 0},
		"RESET>INIT/UC": {pkey | port | access, 0},
		"RESET>INIT/RC": {pkey | port | access, 0},
		// QP-15
		"INIT>INIT/UD": {0, pkey | port | qkey},
		"INIT>INIT/UC": {0, pkey | port | access},
		"INIT>INIT/RC": {0, pkey | port | access},
		// QP-16
		"INIT>RTR/UD": {0, pkey | qkey},
		"INIT>RTR/UC": {verbs.QPAttrAV | verbs.QPAttrPathMTU | verbs.QPAttrDestQPN | verbs.QPAttrRQPSN, alt | access | pkey},
		"INIT>RTR/RC": {verbs.QPAttrAV | verbs.QPAttrPathMTU | verbs.QPAttrDestQPN | verbs.QPAttrRQPSN | verbs.QPAttrMaxDestRDAtomic | rnrT, alt | access | pkey},
		// QP-17
		"RTR>RTS/UD": {verbs.QPAttrSQPSN, curS | qkey},
		"RTR>RTS/UC": {verbs.QPAttrSQPSN, curS | alt | access | mig},
		"RTR>RTS/RC": {verbs.QPAttrSQPSN | verbs.QPAttrTimeout | verbs.QPAttrRetryCnt | verbs.QPAttrRNRRetry | verbs.QPAttrMaxQPRDAtomic, curS | alt | access | mig | rnrT},
		// QP-19
		"RTS>SQD/UD": {0, verbs.QPAttrEnSQDAsyncNotify},
		"RTS>SQD/UC": {0, verbs.QPAttrEnSQDAsyncNotify},
		"RTS>SQD/RC": {0, verbs.QPAttrEnSQDAsyncNotify},
		"SQD>SQD/UD": {0, pkey | qkey},
		"SQD>SQD/UC": {0, verbs.QPAttrAV | alt | access | pkey | mig},
		"SQD>SQD/RC": {0, port | verbs.QPAttrAV | verbs.QPAttrTimeout | verbs.QPAttrRetryCnt | verbs.QPAttrRNRRetry | verbs.QPAttrMaxQPRDAtomic |
			verbs.QPAttrMaxDestRDAtomic | alt | access | pkey | rnrT | mig},
		// QP-20 (RC: legal, nothing accepted; unreachable by FLUSH-09)
		"SQE>RTS/UD": {0, curS | qkey},
		"SQE>RTS/UC": {0, curS | access},
	}
	// QP-18
	for _, from := range []string{"RTS", "SQD"} {
		m[from+">RTS/UD"] = [2]verbs.QPAttrMask{0, curS | qkey}
		m[from+">RTS/UC"] = [2]verbs.QPAttrMask{0, curS | access | alt | mig}
		m[from+">RTS/RC"] = [2]verbs.QPAttrMask{0, curS | access | alt | mig | rnrT}
		// XRC-08: the kernel's IB_QPT_XRC_INI and IB_QPT_XRC_TGT rows.
		m[from+">RTS/XRC_SEND"] = [2]verbs.QPAttrMask{0, curS | access | alt | mig}
		m[from+">RTS/XRC_RECV"] = [2]verbs.QPAttrMask{0, curS | access | alt | mig | rnrT}
	}
	for _, x := range []string{"XRC_SEND", "XRC_RECV"} {
		m["RESET>INIT/"+x] = [2]verbs.QPAttrMask{pkey | port | access, 0}
		m["INIT>INIT/"+x] = [2]verbs.QPAttrMask{0, pkey | port | access}
		m["RTS>SQD/"+x] = [2]verbs.QPAttrMask{0, verbs.QPAttrEnSQDAsyncNotify}
	}
	m["INIT>RTR/XRC_SEND"] = [2]verbs.QPAttrMask{verbs.QPAttrAV | verbs.QPAttrPathMTU | verbs.QPAttrDestQPN | verbs.QPAttrRQPSN, alt | access | pkey}
	m["INIT>RTR/XRC_RECV"] = [2]verbs.QPAttrMask{verbs.QPAttrAV | verbs.QPAttrPathMTU | verbs.QPAttrDestQPN | verbs.QPAttrRQPSN | verbs.QPAttrMaxDestRDAtomic | rnrT, alt | access | pkey}
	m["RTR>RTS/XRC_SEND"] = [2]verbs.QPAttrMask{verbs.QPAttrSQPSN | verbs.QPAttrTimeout | verbs.QPAttrRetryCnt | verbs.QPAttrRNRRetry | verbs.QPAttrMaxQPRDAtomic, curS | alt | access | mig}
	m["RTR>RTS/XRC_RECV"] = [2]verbs.QPAttrMask{verbs.QPAttrSQPSN | verbs.QPAttrTimeout, curS | alt | access | mig | rnrT}
	m["SQD>SQD/XRC_SEND"] = [2]verbs.QPAttrMask{0, port | verbs.QPAttrAV | verbs.QPAttrTimeout | verbs.QPAttrRetryCnt | verbs.QPAttrRNRRetry | verbs.QPAttrMaxQPRDAtomic |
		alt | access | pkey | mig}
	m["SQD>SQD/XRC_RECV"] = [2]verbs.QPAttrMask{0, port | verbs.QPAttrAV | verbs.QPAttrTimeout | verbs.QPAttrMaxDestRDAtomic |
		alt | access | pkey | rnrT | mig}
	return m
}()

// TestAttributeTable_QP09_QP14_QP15_QP16_QP17_QP18_QP19_QP20 compares the
// package's table with the rules, edge by edge.
func TestAttributeTable_QP09_QP14_QP15_QP16_QP17_QP18_QP19_QP20(t *testing.T) {
	seen := 0
	legalEdges(defaultPolicy, func(from, to verbs.QPState, typ verbs.QPType, req, opt verbs.QPAttrMask) {
		key := fmt.Sprintf("%v>%v/%v", from, to, typ)
		w, ok := want[key]
		if ok {
			seen++
		}
		if req != w[0] || opt != w[1] {
			t.Errorf("%s: required %v optional %v; want %v and %v", key, req, opt, w[0], w[1])
		}
		if !legalIn(from, to, defaultPolicy) {
			t.Errorf("%s: in the table but not legal per QP-07", key)
		}
		if (to == verbs.QPStateReset || to == verbs.QPStateErr) && req|opt != 0 {
			t.Errorf("QP-09: %s accepts %v", key, req|opt)
		}
		if (req|opt)&(verbs.QPAttrCap|verbs.QPAttrRateLimit) != 0 {
			t.Errorf("QP-21: %s accepts CAP or RATE_LIMIT", key)
		}
	})
	if seen != len(want) {
		t.Errorf("only %d of %d rule entries are legal edges", seen, len(want))
	}
}

// TestMinimalMask_QP14_QP16_QP17 checks the hand-written minimal masks
// against the table: AttrState plus exactly the required bits.
func TestMinimalMask_QP14_QP16_QP17(t *testing.T) {
	for _, typ := range allTypes {
		for _, from := range allStates {
			for _, to := range allStates {
				mask, ok := verbs.MinimalMask(from, to, typ)
				req, _, legal := verbs.Transition(from, to, typ, verbs.Readings{ResetToErr: defaultPolicy.ResetToErr})
				if ok != legal {
					t.Errorf("%v %v→%v: MinimalMask ok=%v, table legal=%v", typ, from, to, ok, legal)
				}
				if ok && mask != verbs.QPAttrState|req {
					t.Errorf("%v %v→%v: MinimalMask %v, table requires %v", typ, from, to, mask, req)
				}
			}
		}
	}
	if _, ok := verbs.MinimalMask(verbs.QPStateInit, verbs.QPStateRTR, verbs.QPTypeRawPacket); ok {
		t.Error("MinimalMask accepts an unsimulated type")
	}
}

// TestTransitionRejectsBadInput covers the cases where Transition has no
// entry at all.
func TestTransitionRejectsBadInput(t *testing.T) {
	for _, c := range []struct {
		from, to verbs.QPState
		typ      verbs.QPType
	}{
		{verbs.QPStateReset, verbs.QPStateInit, verbs.QPTypeRawPacket},
		{verbs.QPStateReset, verbs.QPStateInit, verbs.QPTypeDriver},
		{verbs.QPStateUnknown, verbs.QPStateReset, verbs.QPTypeRC},
		{verbs.QPStateReset, verbs.QPStateUnknown, verbs.QPTypeRC},
		{verbs.QPState(99), verbs.QPStateErr, verbs.QPTypeUD},
		{verbs.QPStateInit, verbs.QPStateRTS, verbs.QPTypeRC},
	} {
		if _, _, ok := verbs.Transition(c.from, c.to, c.typ, verbs.Readings{ResetToErr: ibtaPolicy.ResetToErr}); ok {
			t.Errorf("Transition(%v, %v, %v) ok", c.from, c.to, c.typ)
		}
	}
}
