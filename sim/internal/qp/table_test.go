package qp_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/verbsim/verbsim/sim/internal/qp"
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
			needs := map[qp.State]qp.AttrMask{}
			for _, from := range qpStates {
				for _, to := range qpStates {
					if m, ok := qp.MinimalMask(from, to, typ); ok {
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
						for _, mask := range []qp.AttrMask{qp.AttrState, qp.AttrState | needs[to]} {
							before := attr
							_, err := qp.CheckModify(cur, typ, &attr, mask, testLimits, p.pol)
							wantEINVAL(t, err, name+" mask "+mask.String())
							if to == qp.Unknown && from.Valid() && !strings.Contains(err.Error(), "QP-06") {
								t.Errorf("%s: reason %q does not name QP-06", name, err)
							}
							if attr != before {
								t.Fatalf("%s: CheckModify changed attr", name)
							}
						}
						if _, ok := qp.MinimalMask(from, to, typ); ok && !(from == qp.Reset && to == qp.Err) {
							t.Errorf("%s: MinimalMask reports an illegal transition as legal", name)
						}
						continue
					}
					mask, ok := qp.MinimalMask(from, to, typ)
					if !ok {
						// Only RESET→ERR under ResetToErr is legal beyond
						// the default table; it takes STATE alone.
						if from != qp.Reset || to != qp.Err {
							t.Fatalf("%s: legal per QP-07 but MinimalMask says no", name)
						}
						mask = qp.AttrState
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
		attr := goodAttr(qp.Reset, qp.Err)
		_, err := qp.CheckModify(current(qp.Reset), typ, &attr, qp.AttrState, testLimits, qp.Policy{})
		wantEINVAL(t, err, "default RESET→ERR on "+typ.String())
		_, err = qp.CheckModify(current(qp.Reset), typ, &attr, qp.AttrState, testLimits, qp.RXEPolicy())
		wantEINVAL(t, err, "rxe RESET→ERR on "+typ.String())
		next, err := qp.CheckModify(current(qp.Reset), typ, &attr, qp.AttrState, testLimits, qp.Policy{ResetToErr: true})
		if err != nil || next != qp.Err {
			t.Errorf("IBTA RESET→ERR on %v: %v, %v", typ, next, err)
		}
		_, err = qp.CheckModify(current(qp.Reset), typ, &attr, qp.AttrState|qp.AttrPort, testLimits, qp.Policy{ResetToErr: true})
		wantEINVAL(t, err, "IBTA RESET→ERR with PORT (QP-09)")
	}
}

// want is the attribute table as the catalogue words it (QP-09, QP-14..QP-20),
// written out a third time, independently of the package's table and of
// MinimalMask. Keys are "FROM>TO/TYPE"; a legal edge that is absent takes
// nothing besides STATE (QP-09 for every edge into RESET and ERR).
var want = func() map[string][2]qp.AttrMask {
	const (
		pkey, port, access, qkey = qp.AttrPKeyIndex, qp.AttrPort, qp.AttrAccessFlags, qp.AttrQKey
		curS, alt, mig, rnrT     = qp.AttrCurState, qp.AttrAltPath, qp.AttrPathMigState, qp.AttrMinRNRTimer
	)
	m := map[string][2]qp.AttrMask{
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
		"INIT>RTR/UC": {qp.AttrAV | qp.AttrPathMTU | qp.AttrDestQPN | qp.AttrRQPSN, alt | access | pkey},
		"INIT>RTR/RC": {qp.AttrAV | qp.AttrPathMTU | qp.AttrDestQPN | qp.AttrRQPSN | qp.AttrMaxDestRDAtomic | rnrT, alt | access | pkey},
		// QP-17
		"RTR>RTS/UD": {qp.AttrSQPSN, curS | qkey},
		"RTR>RTS/UC": {qp.AttrSQPSN, curS | alt | access | mig},
		"RTR>RTS/RC": {qp.AttrSQPSN | qp.AttrTimeout | qp.AttrRetryCnt | qp.AttrRNRRetry | qp.AttrMaxQPRDAtomic, curS | alt | access | mig | rnrT},
		// QP-19
		"RTS>SQD/UD": {0, qp.AttrEnSQDAsyncNotify},
		"RTS>SQD/UC": {0, qp.AttrEnSQDAsyncNotify},
		"RTS>SQD/RC": {0, qp.AttrEnSQDAsyncNotify},
		"SQD>SQD/UD": {0, pkey | qkey},
		"SQD>SQD/UC": {0, qp.AttrAV | alt | access | pkey | mig},
		"SQD>SQD/RC": {0, port | qp.AttrAV | qp.AttrTimeout | qp.AttrRetryCnt | qp.AttrRNRRetry | qp.AttrMaxQPRDAtomic |
			qp.AttrMaxDestRDAtomic | alt | access | pkey | rnrT | mig},
		// QP-20 (RC: legal, nothing accepted; unreachable by FLUSH-09)
		"SQE>RTS/UD": {0, curS | qkey},
		"SQE>RTS/UC": {0, curS | access},
	}
	// QP-18
	for _, from := range []string{"RTS", "SQD"} {
		m[from+">RTS/UD"] = [2]qp.AttrMask{0, curS | qkey}
		m[from+">RTS/UC"] = [2]qp.AttrMask{0, curS | access | alt | mig}
		m[from+">RTS/RC"] = [2]qp.AttrMask{0, curS | access | alt | mig | rnrT}
		// XRC-08: the kernel's IB_QPT_XRC_INI and IB_QPT_XRC_TGT rows.
		m[from+">RTS/XRC_SEND"] = [2]qp.AttrMask{0, curS | access | alt | mig}
		m[from+">RTS/XRC_RECV"] = [2]qp.AttrMask{0, curS | access | alt | mig | rnrT}
	}
	for _, x := range []string{"XRC_SEND", "XRC_RECV"} {
		m["RESET>INIT/"+x] = [2]qp.AttrMask{pkey | port | access, 0}
		m["INIT>INIT/"+x] = [2]qp.AttrMask{0, pkey | port | access}
		m["RTS>SQD/"+x] = [2]qp.AttrMask{0, qp.AttrEnSQDAsyncNotify}
	}
	m["INIT>RTR/XRC_SEND"] = [2]qp.AttrMask{qp.AttrAV | qp.AttrPathMTU | qp.AttrDestQPN | qp.AttrRQPSN, alt | access | pkey}
	m["INIT>RTR/XRC_RECV"] = [2]qp.AttrMask{qp.AttrAV | qp.AttrPathMTU | qp.AttrDestQPN | qp.AttrRQPSN | qp.AttrMaxDestRDAtomic | rnrT, alt | access | pkey}
	m["RTR>RTS/XRC_SEND"] = [2]qp.AttrMask{qp.AttrSQPSN | qp.AttrTimeout | qp.AttrRetryCnt | qp.AttrRNRRetry | qp.AttrMaxQPRDAtomic, curS | alt | access | mig}
	m["RTR>RTS/XRC_RECV"] = [2]qp.AttrMask{qp.AttrSQPSN | qp.AttrTimeout, curS | alt | access | mig | rnrT}
	m["SQD>SQD/XRC_SEND"] = [2]qp.AttrMask{0, port | qp.AttrAV | qp.AttrTimeout | qp.AttrRetryCnt | qp.AttrRNRRetry | qp.AttrMaxQPRDAtomic |
		alt | access | pkey | mig}
	m["SQD>SQD/XRC_RECV"] = [2]qp.AttrMask{0, port | qp.AttrAV | qp.AttrTimeout | qp.AttrMaxDestRDAtomic |
		alt | access | pkey | rnrT | mig}
	return m
}()

// TestAttributeTable_QP09_QP14_QP15_QP16_QP17_QP18_QP19_QP20 compares the
// package's table with the rules, edge by edge.
func TestAttributeTable_QP09_QP14_QP15_QP16_QP17_QP18_QP19_QP20(t *testing.T) {
	seen := 0
	legalEdges(defaultPolicy, func(from, to qp.State, typ qp.Type, req, opt qp.AttrMask) {
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
		if (to == qp.Reset || to == qp.Err) && req|opt != 0 {
			t.Errorf("QP-09: %s accepts %v", key, req|opt)
		}
		if (req|opt)&(qp.AttrCap|qp.AttrRateLimit) != 0 {
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
				mask, ok := qp.MinimalMask(from, to, typ)
				req, _, legal := qp.Transition(from, to, typ, defaultPolicy)
				if ok != legal {
					t.Errorf("%v %v→%v: MinimalMask ok=%v, table legal=%v", typ, from, to, ok, legal)
				}
				if ok && mask != qp.AttrState|req {
					t.Errorf("%v %v→%v: MinimalMask %v, table requires %v", typ, from, to, mask, req)
				}
			}
		}
	}
	if _, ok := qp.MinimalMask(qp.Init, qp.RTR, qp.RawPacket); ok {
		t.Error("MinimalMask accepts an unsimulated type")
	}
}

// TestTransitionRejectsBadInput covers the cases where Transition has no
// entry at all.
func TestTransitionRejectsBadInput(t *testing.T) {
	for _, c := range []struct {
		from, to qp.State
		typ      qp.Type
	}{
		{qp.Reset, qp.Init, qp.RawPacket},
		{qp.Reset, qp.Init, qp.Driver},
		{qp.Unknown, qp.Reset, qp.RC},
		{qp.Reset, qp.Unknown, qp.RC},
		{qp.State(99), qp.Err, qp.UD},
		{qp.Init, qp.RTS, qp.RC},
	} {
		if _, _, ok := qp.Transition(c.from, c.to, c.typ, ibtaPolicy); ok {
			t.Errorf("Transition(%v, %v, %v) ok", c.from, c.to, c.typ)
		}
	}
}
