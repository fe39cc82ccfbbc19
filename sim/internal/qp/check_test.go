package qp_test

import (
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/verbsim/verbsim/sim/internal/qp"
	"github.com/verbsim/verbsim/verbs"
)

type edgeCase struct {
	from, to verbs.QPState
	typ      verbs.QPType
	req, opt verbs.QPAttrMask
}

func (e edgeCase) String() string { return fmt.Sprintf("%v %v→%v", e.typ, e.from, e.to) }

func allEdges(pol qp.Policy) []edgeCase {
	var out []edgeCase
	legalEdges(pol, func(from, to verbs.QPState, typ verbs.QPType, req, opt verbs.QPAttrMask) {
		out = append(out, edgeCase{from, to, typ, req, opt})
	})
	return out
}

// TestDropRequiredOrAddForeign_QP09_QP10_QP21 is exhaustive: on every legal
// edge, leaving out any one required bit fails, and adding any one bit
// outside required ∪ optional ∪ {STATE} (known or not) fails; neither
// touches attr.
func TestDropRequiredOrAddForeign_QP09_QP10_QP21(t *testing.T) {
	for _, p := range policies {
		for _, e := range allEdges(p.pol) {
			attr := goodAttr(e.from, e.to)
			base := verbs.QPAttrState | e.req
			for _, b := range e.req.Bits() {
				_, err := qp.CheckModify(current(e.from), e.typ, &attr, base&^b, testLimits, p.pol)
				wantEINVAL(t, err, fmt.Sprintf("QP-10 %s/%v without %v", p.name, e, b))
			}
			for i := 0; i < 32; i++ {
				b := verbs.QPAttrMask(1) << i
				if b&(e.req|e.opt|verbs.QPAttrState) != 0 {
					continue
				}
				before := attr
				_, err := qp.CheckModify(current(e.from), e.typ, &attr, base|b, testLimits, p.pol)
				wantEINVAL(t, err, fmt.Sprintf("QP-10 %s/%v with foreign %v", p.name, e, b))
				if attr != before {
					t.Fatalf("%v: CheckModify changed attr", e)
				}
			}
		}
	}
}

// TestMaskProperty_QP10 draws a legal edge, a subset of its optional bits
// (always accepted), and then possibly drops a required bit or adds a
// foreign one (always refused).
func TestMaskProperty_QP10(t *testing.T) {
	for _, p := range policies {
		edges := allEdges(p.pol)
		t.Run(p.name, func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				e := rapid.SampledFrom(edges).Draw(rt, "edge")
				subset := verbs.QPAttrMask(rapid.Uint32().Draw(rt, "optional")) & e.opt
				mask := verbs.QPAttrState | e.req | subset
				attr := goodAttr(e.from, e.to)
				before := attr
				next, err := qp.CheckModify(current(e.from), e.typ, &attr, mask, testLimits, p.pol)
				if err != nil || next != e.to {
					rt.Fatalf("%v with %v: next %v, err %v", e, mask, next, err)
				}
				if attr != before {
					rt.Fatalf("%v: CheckModify changed attr", e)
				}
				switch rapid.IntRange(0, 2).Draw(rt, "break") {
				case 1:
					if e.req == 0 {
						return
					}
					b := rapid.SampledFrom(e.req.Bits()).Draw(rt, "drop")
					_, err = qp.CheckModify(current(e.from), e.typ, &attr, mask&^b, testLimits, p.pol)
					wantEINVAL(rt, err, fmt.Sprintf("%v %v without %v", e, mask, b))
				case 2:
					b := verbs.QPAttrMask(1) << rapid.IntRange(0, 31).Draw(rt, "bit")
					if b&(e.req|e.opt|verbs.QPAttrState) != 0 {
						return
					}
					_, err = qp.CheckModify(current(e.from), e.typ, &attr, mask|b, testLimits, p.pol)
					wantEINVAL(rt, err, fmt.Sprintf("%v %v plus %v", e, mask, b))
				}
			})
		})
	}
}

// TestForeignAttributes_QP21 names the rule's examples.
func TestForeignAttributes_QP21(t *testing.T) {
	cases := []struct {
		typ      verbs.QPType
		from, to verbs.QPState
		mask     verbs.QPAttrMask
		reason   string
	}{
		{verbs.QPTypeRC, verbs.QPStateReset, verbs.QPStateInit, verbs.QPAttrQKey, "QKEY has no meaning for RC"},
		{verbs.QPTypeUC, verbs.QPStateReset, verbs.QPStateInit, verbs.QPAttrQKey, "QKEY has no meaning for UC"},
		{verbs.QPTypeUD, verbs.QPStateReset, verbs.QPStateInit, verbs.QPAttrAccessFlags, "ACCESS_FLAGS has no meaning for UD"},
		{verbs.QPTypeUD, verbs.QPStateInit, verbs.QPStateRTR, verbs.QPAttrAV, "AV has no meaning for UD"},
		{verbs.QPTypeUD, verbs.QPStateInit, verbs.QPStateRTR, verbs.QPAttrDestQPN | verbs.QPAttrPathMTU, "PATH_MTU|DEST_QPN has no meaning for UD"},
		{verbs.QPTypeRC, verbs.QPStateRTS, verbs.QPStateRTS, verbs.QPAttrCap, "CAP is never accepted"},
		{verbs.QPTypeRC, verbs.QPStateSQD, verbs.QPStateSQD, verbs.QPAttrCap, "CAP is never accepted"},
		{verbs.QPTypeRC, verbs.QPStateRTS, verbs.QPStateRTS, verbs.QPAttrRateLimit, "RATE_LIMIT has no meaning for RC"},
		{verbs.QPTypeUD, verbs.QPStateRTR, verbs.QPStateRTS, 1 << 21, "not part of enum ibv_qp_attr_mask"},
		{verbs.QPTypeRC, verbs.QPStateRTS, verbs.QPStateRTS, 1 << 31, "not part of enum ibv_qp_attr_mask"},
	}
	for _, c := range cases {
		attr := goodAttr(c.from, c.to)
		mask, _ := verbs.MinimalMask(c.from, c.to, c.typ)
		_, err := qp.CheckModify(current(c.from), c.typ, &attr, mask|c.mask, testLimits, defaultPolicy)
		wantEINVAL(t, err, fmt.Sprintf("%v %v→%v + %v", c.typ, c.from, c.to, c.mask))
		if !strings.Contains(err.Error(), "QP-21") || !strings.Contains(err.Error(), c.reason) {
			t.Errorf("%v %v→%v + %v: reason %q, want QP-21 and %q", c.typ, c.from, c.to, c.mask, err, c.reason)
		}
	}
}

// TestToResetOrErrTakesStateOnly_QP09: the rule's own example, and
// CUR_STATE, which is otherwise accepted from RTS, refused on the way to
// ERR.
func TestToResetOrErrTakesStateOnly_QP09(t *testing.T) {
	for _, typ := range allTypes {
		for _, from := range qpStates[1:] {
			for _, to := range []verbs.QPState{verbs.QPStateReset, verbs.QPStateErr} {
				attr := goodAttr(from, to)
				for _, extra := range []verbs.QPAttrMask{verbs.QPAttrQKey, verbs.QPAttrCurState, verbs.QPAttrPKeyIndex} {
					_, err := qp.CheckModify(current(from), typ, &attr, verbs.QPAttrState|extra, testLimits, defaultPolicy)
					wantEINVAL(t, err, fmt.Sprintf("%v %v→%v + %v", typ, from, to, extra))
				}
			}
		}
	}
}

// TestAttributeOnlyModify_QP11: without STATE, the mask is checked as the
// cur→cur transition in every state: mask 0 is fine except in RTR and SQE
// (no such self-transition), and each of the self-transition's optional
// bits alone is fine; the QP stays where it is.
func TestAttributeOnlyModify_QP11(t *testing.T) {
	for _, typ := range allTypes {
		for _, s := range qpStates {
			attr := goodAttr(s, s)
			_, opt, selfLegal := verbs.Transition(s, s, typ, verbs.Readings{ResetToErr: defaultPolicy.ResetToErr})
			next, err := qp.CheckModify(current(s), typ, &attr, 0, testLimits, defaultPolicy)
			if selfLegal != (s != verbs.QPStateRTR && s != verbs.QPStateSQE) {
				t.Fatalf("QP-11: %v %v→%v legal=%v", typ, s, s, selfLegal)
			}
			if !selfLegal {
				wantEINVAL(t, err, fmt.Sprintf("%v mask 0 in %v", typ, s))
				attr.MinRNRTimer = 1
				_, err = qp.CheckModify(current(s), typ, &attr, verbs.QPAttrMinRNRTimer, testLimits, defaultPolicy)
				wantEINVAL(t, err, fmt.Sprintf("%v MIN_RNR_TIMER alone in %v", typ, s))
				continue
			}
			if err != nil || next != s {
				t.Errorf("%v mask 0 in %v: %v, %v", typ, s, next, err)
			}
			for _, b := range opt.Bits() {
				next, err := qp.CheckModify(current(s), typ, &attr, b, testLimits, defaultPolicy)
				if err != nil || next != s {
					t.Errorf("%v %v alone in %v: %v, %v", typ, b, s, next, err)
				}
			}
		}
	}
	// Without STATE, a mask that would satisfy an edge out of the state is
	// still checked as the self-transition: in RTR and SQE it fails even
	// with everything RTR→RTS or SQE→RTS takes.
	for _, e := range allEdges(defaultPolicy) {
		if e.from == e.to {
			continue
		}
		attr := goodAttr(e.from, e.to)
		mask := (e.req | e.opt) &^ verbs.QPAttrCurState
		_, err := qp.CheckModify(current(e.from), e.typ, &attr, mask, testLimits, defaultPolicy)
		_, selfOpt, selfLegal := verbs.Transition(e.from, e.from, e.typ, verbs.Readings{ResetToErr: defaultPolicy.ResetToErr})
		if !selfLegal || mask&^selfOpt != 0 {
			wantEINVAL(t, err, fmt.Sprintf("%v: %v without STATE", e, mask))
		} else if err != nil {
			t.Errorf("%v: %v without STATE in %v: %v", e, mask, e.from, err)
		}
	}
	// The rule's example: RC MIN_RNR_TIMER alone fails in RTR, works in RTS.
	attr := goodAttr(verbs.QPStateRTS, verbs.QPStateRTS)
	if _, err := qp.CheckModify(current(verbs.QPStateRTS), verbs.QPTypeRC, &attr, verbs.QPAttrMinRNRTimer, testLimits, defaultPolicy); err != nil {
		t.Errorf("QP-11: MIN_RNR_TIMER in RTS: %v", err)
	}
}

// TestCurState_QP12 covers where CUR_STATE is accepted and both readings
// of its value.
func TestCurState_QP12(t *testing.T) {
	cases := []struct {
		name      string
		typ       verbs.QPType
		real      verbs.QPState
		claim     verbs.QPState
		mask      verbs.QPAttrMask // CUR_STATE is added
		to        verbs.QPState
		match, tr bool   // accepted under must-match, under trusted
		why       string // rule the reason must name when refused
	}{
		{"RTR→RTS", verbs.QPTypeRC, verbs.QPStateRTR, verbs.QPStateRTR, verbs.QPAttrState | verbs.QPAttrSQPSN | verbs.QPAttrTimeout | verbs.QPAttrRetryCnt | verbs.QPAttrRNRRetry | verbs.QPAttrMaxQPRDAtomic, verbs.QPStateRTS, true, true, ""},
		{"RTS→RTS", verbs.QPTypeUC, verbs.QPStateRTS, verbs.QPStateRTS, verbs.QPAttrState, verbs.QPStateRTS, true, true, ""},
		{"attribute-only in RTS", verbs.QPTypeRC, verbs.QPStateRTS, verbs.QPStateRTS, 0, verbs.QPStateRTS, true, true, ""},
		{"SQD→RTS", verbs.QPTypeUD, verbs.QPStateSQD, verbs.QPStateSQD, verbs.QPAttrState, verbs.QPStateRTS, true, true, ""},
		{"SQE→RTS", verbs.QPTypeUD, verbs.QPStateSQE, verbs.QPStateSQE, verbs.QPAttrState, verbs.QPStateRTS, true, true, ""},
		{"SQE→RTS on RC: not optional", verbs.QPTypeRC, verbs.QPStateSQE, verbs.QPStateSQE, verbs.QPAttrState, verbs.QPStateRTS, false, false, "QP-10"},
		{"from INIT", verbs.QPTypeRC, verbs.QPStateInit, verbs.QPStateInit, 0, verbs.QPStateInit, false, false, "QP-12"},
		{"INIT→RTR", verbs.QPTypeUD, verbs.QPStateInit, verbs.QPStateInit, verbs.QPAttrState, verbs.QPStateRTR, false, false, "QP-12"},
		{"RTS→SQD: not optional", verbs.QPTypeRC, verbs.QPStateRTS, verbs.QPStateRTS, verbs.QPAttrState, verbs.QPStateSQD, false, false, "QP-10"},
		{"SQD→SQD: not optional", verbs.QPTypeUC, verbs.QPStateSQD, verbs.QPStateSQD, verbs.QPAttrState, verbs.QPStateSQD, false, false, "QP-10"},
		{"RTS→ERR: QP-09", verbs.QPTypeRC, verbs.QPStateRTS, verbs.QPStateRTS, verbs.QPAttrState, verbs.QPStateErr, false, false, "QP-09"},
		{"claim UNKNOWN", verbs.QPTypeRC, verbs.QPStateRTS, verbs.QPStateUnknown, 0, verbs.QPStateRTS, false, false, "QP-12"},
		{"claim 42", verbs.QPTypeRC, verbs.QPStateRTS, verbs.QPState(42), 0, verbs.QPStateRTS, false, false, "QP-12"},
		// The QP went to SQE behind the caller's back; the caller still
		// believes RTS. Must-match refuses; rxe validates RTS→RTS.
		{"stale RTS claim in SQE", verbs.QPTypeUD, verbs.QPStateSQE, verbs.QPStateRTS, verbs.QPAttrState, verbs.QPStateRTS, false, true, "QP-12"},
		// rxe's loophole: a false RTR claim lets INIT jump to RTS.
		{"false RTR claim in INIT", verbs.QPTypeUD, verbs.QPStateInit, verbs.QPStateRTR, verbs.QPAttrState | verbs.QPAttrSQPSN, verbs.QPStateRTS, false, true, "QP-12"},
		// A claimed state whose self-transition is illegal: refused as a
		// mismatch (QP-12), or when trusted as SQE→SQE (QP-11).
		{"claim SQE without STATE", verbs.QPTypeUD, verbs.QPStateRTS, verbs.QPStateSQE, 0, verbs.QPStateRTS, false, false, ""}, // QP-12, or QP-11 when trusted
	}
	for _, c := range cases {
		for _, p := range []struct {
			pol  qp.Policy
			want bool
		}{{qp.Policy{}, c.match}, {qp.RXEPolicy(), c.tr}} {
			name := fmt.Sprintf("%s (%v)", c.name, p.pol.CurState)
			attr := goodAttr(c.claim, c.to)
			cur := current(c.real)
			next, err := qp.CheckModify(cur, c.typ, &attr, c.mask|verbs.QPAttrCurState, testLimits, p.pol)
			if !p.want {
				wantEINVAL(t, err, name)
				if c.why != "" && !strings.Contains(err.Error(), c.why) {
					t.Errorf("%s: reason %q does not name %s", name, err, c.why)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			want := c.real
			if c.mask&verbs.QPAttrState != 0 {
				want = c.to
			}
			if next != want {
				t.Errorf("%s: next %v, want %v", name, next, want)
			}
		}
	}
}

// TestDraining_QP23: while SQD drains, only SQD→ERR may be requested;
// attribute-only modifies stay possible; after the drain everything the
// table allows works again.
func TestDraining_QP23(t *testing.T) {
	for _, typ := range allTypes {
		for _, to := range []verbs.QPState{verbs.QPStateRTS, verbs.QPStateSQD, verbs.QPStateReset, verbs.QPStateErr} {
			attr := goodAttr(verbs.QPStateSQD, to)
			cur := current(verbs.QPStateSQD)
			cur.Draining = true
			next, err := qp.CheckModify(cur, typ, &attr, verbs.QPAttrState, testLimits, defaultPolicy)
			if to == verbs.QPStateErr {
				if err != nil || next != verbs.QPStateErr {
					t.Errorf("%v draining SQD→ERR: %v, %v", typ, next, err)
				}
			} else {
				wantEINVAL(t, err, fmt.Sprintf("%v draining SQD→%v", typ, to))
				if !strings.Contains(err.Error(), "QP-23") {
					t.Errorf("reason %q does not name QP-23", err)
				}
			}
			cur.Draining = false
			if _, err := qp.CheckModify(cur, typ, &attr, verbs.QPAttrState, testLimits, defaultPolicy); err != nil {
				t.Errorf("%v drained SQD→%v: %v", typ, to, err)
			}
		}
		attr := goodAttr(verbs.QPStateSQD, verbs.QPStateSQD)
		cur := qp.Current{State: verbs.QPStateSQD, Port: 1, Draining: true}
		if _, err := qp.CheckModify(cur, typ, &attr, verbs.QPAttrPKeyIndex, testLimits, defaultPolicy); err != nil {
			t.Errorf("%v attribute-only in a draining SQD: %v", typ, err)
		}
	}
}

// TestCheckModifyBadInput: a nil attr, an unsimulated type or a QP in no
// valid state fail with EINVAL rather than panicking.
func TestCheckModifyBadInput(t *testing.T) {
	attr := goodAttr(verbs.QPStateReset, verbs.QPStateInit)
	mask, _ := verbs.MinimalMask(verbs.QPStateReset, verbs.QPStateInit, verbs.QPTypeRC)
	_, err := qp.CheckModify(current(verbs.QPStateReset), verbs.QPTypeRC, nil, mask, testLimits, defaultPolicy)
	wantEINVAL(t, err, "nil attr")
	for _, typ := range []verbs.QPType{verbs.QPTypeRawPacket, verbs.QPTypeDriver, 0} {
		_, err := qp.CheckModify(current(verbs.QPStateReset), typ, &attr, mask, testLimits, defaultPolicy)
		wantEINVAL(t, err, "type "+typ.String())
	}
	for _, s := range []verbs.QPState{verbs.QPStateUnknown, 8, 1 << 31} {
		_, err := qp.CheckModify(qp.Current{State: s}, verbs.QPTypeRC, &attr, mask, testLimits, defaultPolicy)
		wantEINVAL(t, err, "current state "+s.String())
	}
	_, err = qp.CheckModify(current(verbs.QPStateReset), verbs.QPTypeRC, &attr, mask, qp.Limits{}, defaultPolicy)
	wantEINVAL(t, err, "a device without ports")
}
