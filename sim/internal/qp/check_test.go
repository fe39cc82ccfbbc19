package qp_test

import (
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/verbsim/verbsim/sim/internal/qp"
)

type edgeCase struct {
	from, to qp.State
	typ      qp.Type
	req, opt qp.AttrMask
}

func (e edgeCase) String() string { return fmt.Sprintf("%v %v→%v", e.typ, e.from, e.to) }

func allEdges(pol qp.Policy) []edgeCase {
	var out []edgeCase
	legalEdges(pol, func(from, to qp.State, typ qp.Type, req, opt qp.AttrMask) {
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
			base := qp.AttrState | e.req
			for _, b := range e.req.Bits() {
				_, err := qp.CheckModify(current(e.from), e.typ, &attr, base&^b, testLimits, p.pol)
				wantEINVAL(t, err, fmt.Sprintf("QP-10 %s/%v without %v", p.name, e, b))
			}
			for i := 0; i < 32; i++ {
				b := qp.AttrMask(1) << i
				if b&(e.req|e.opt|qp.AttrState) != 0 {
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
				subset := qp.AttrMask(rapid.Uint32().Draw(rt, "optional")) & e.opt
				mask := qp.AttrState | e.req | subset
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
					b := qp.AttrMask(1) << rapid.IntRange(0, 31).Draw(rt, "bit")
					if b&(e.req|e.opt|qp.AttrState) != 0 {
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
		typ      qp.Type
		from, to qp.State
		mask     qp.AttrMask
		reason   string
	}{
		{qp.RC, qp.Reset, qp.Init, qp.AttrQKey, "QKEY has no meaning for RC"},
		{qp.UC, qp.Reset, qp.Init, qp.AttrQKey, "QKEY has no meaning for UC"},
		{qp.UD, qp.Reset, qp.Init, qp.AttrAccessFlags, "ACCESS_FLAGS has no meaning for UD"},
		{qp.UD, qp.Init, qp.RTR, qp.AttrAV, "AV has no meaning for UD"},
		{qp.UD, qp.Init, qp.RTR, qp.AttrDestQPN | qp.AttrPathMTU, "PATH_MTU|DEST_QPN has no meaning for UD"},
		{qp.RC, qp.RTS, qp.RTS, qp.AttrCap, "CAP is never accepted"},
		{qp.RC, qp.SQD, qp.SQD, qp.AttrCap, "CAP is never accepted"},
		{qp.RC, qp.RTS, qp.RTS, qp.AttrRateLimit, "RATE_LIMIT has no meaning for RC"},
		{qp.UD, qp.RTR, qp.RTS, 1 << 21, "not part of enum ibv_qp_attr_mask"},
		{qp.RC, qp.RTS, qp.RTS, 1 << 31, "not part of enum ibv_qp_attr_mask"},
	}
	for _, c := range cases {
		attr := goodAttr(c.from, c.to)
		mask, _ := qp.MinimalMask(c.from, c.to, c.typ)
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
			for _, to := range []qp.State{qp.Reset, qp.Err} {
				attr := goodAttr(from, to)
				for _, extra := range []qp.AttrMask{qp.AttrQKey, qp.AttrCurState, qp.AttrPKeyIndex} {
					_, err := qp.CheckModify(current(from), typ, &attr, qp.AttrState|extra, testLimits, defaultPolicy)
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
			_, opt, selfLegal := qp.Transition(s, s, typ, defaultPolicy)
			next, err := qp.CheckModify(current(s), typ, &attr, 0, testLimits, defaultPolicy)
			if selfLegal != (s != qp.RTR && s != qp.SQE) {
				t.Fatalf("QP-11: %v %v→%v legal=%v", typ, s, s, selfLegal)
			}
			if !selfLegal {
				wantEINVAL(t, err, fmt.Sprintf("%v mask 0 in %v", typ, s))
				attr.MinRNRTimer = 1
				_, err = qp.CheckModify(current(s), typ, &attr, qp.AttrMinRNRTimer, testLimits, defaultPolicy)
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
		mask := (e.req | e.opt) &^ qp.AttrCurState
		_, err := qp.CheckModify(current(e.from), e.typ, &attr, mask, testLimits, defaultPolicy)
		_, selfOpt, selfLegal := qp.Transition(e.from, e.from, e.typ, defaultPolicy)
		if !selfLegal || mask&^selfOpt != 0 {
			wantEINVAL(t, err, fmt.Sprintf("%v: %v without STATE", e, mask))
		} else if err != nil {
			t.Errorf("%v: %v without STATE in %v: %v", e, mask, e.from, err)
		}
	}
	// The rule's example: RC MIN_RNR_TIMER alone fails in RTR, works in RTS.
	attr := goodAttr(qp.RTS, qp.RTS)
	if _, err := qp.CheckModify(current(qp.RTS), qp.RC, &attr, qp.AttrMinRNRTimer, testLimits, defaultPolicy); err != nil {
		t.Errorf("QP-11: MIN_RNR_TIMER in RTS: %v", err)
	}
}

// TestCurState_QP12 covers where CUR_STATE is accepted and both readings
// of its value.
func TestCurState_QP12(t *testing.T) {
	cases := []struct {
		name      string
		typ       qp.Type
		real      qp.State
		claim     qp.State
		mask      qp.AttrMask // CUR_STATE is added
		to        qp.State
		match, tr bool   // accepted under must-match, under trusted
		why       string // rule the reason must name when refused
	}{
		{"RTR→RTS", qp.RC, qp.RTR, qp.RTR, qp.AttrState | qp.AttrSQPSN | qp.AttrTimeout | qp.AttrRetryCnt | qp.AttrRNRRetry | qp.AttrMaxQPRDAtomic, qp.RTS, true, true, ""},
		{"RTS→RTS", qp.UC, qp.RTS, qp.RTS, qp.AttrState, qp.RTS, true, true, ""},
		{"attribute-only in RTS", qp.RC, qp.RTS, qp.RTS, 0, qp.RTS, true, true, ""},
		{"SQD→RTS", qp.UD, qp.SQD, qp.SQD, qp.AttrState, qp.RTS, true, true, ""},
		{"SQE→RTS", qp.UD, qp.SQE, qp.SQE, qp.AttrState, qp.RTS, true, true, ""},
		{"SQE→RTS on RC: not optional", qp.RC, qp.SQE, qp.SQE, qp.AttrState, qp.RTS, false, false, "QP-10"},
		{"from INIT", qp.RC, qp.Init, qp.Init, 0, qp.Init, false, false, "QP-12"},
		{"INIT→RTR", qp.UD, qp.Init, qp.Init, qp.AttrState, qp.RTR, false, false, "QP-12"},
		{"RTS→SQD: not optional", qp.RC, qp.RTS, qp.RTS, qp.AttrState, qp.SQD, false, false, "QP-10"},
		{"SQD→SQD: not optional", qp.UC, qp.SQD, qp.SQD, qp.AttrState, qp.SQD, false, false, "QP-10"},
		{"RTS→ERR: QP-09", qp.RC, qp.RTS, qp.RTS, qp.AttrState, qp.Err, false, false, "QP-09"},
		{"claim UNKNOWN", qp.RC, qp.RTS, qp.Unknown, 0, qp.RTS, false, false, "QP-12"},
		{"claim 42", qp.RC, qp.RTS, qp.State(42), 0, qp.RTS, false, false, "QP-12"},
		// The QP went to SQE behind the caller's back; the caller still
		// believes RTS. Must-match refuses; rxe validates RTS→RTS.
		{"stale RTS claim in SQE", qp.UD, qp.SQE, qp.RTS, qp.AttrState, qp.RTS, false, true, "QP-12"},
		// rxe's loophole: a false RTR claim lets INIT jump to RTS.
		{"false RTR claim in INIT", qp.UD, qp.Init, qp.RTR, qp.AttrState | qp.AttrSQPSN, qp.RTS, false, true, "QP-12"},
		// A claimed state whose self-transition is illegal: refused as a
		// mismatch (QP-12), or when trusted as SQE→SQE (QP-11).
		{"claim SQE without STATE", qp.UD, qp.RTS, qp.SQE, 0, qp.RTS, false, false, ""}, // QP-12, or QP-11 when trusted
	}
	for _, c := range cases {
		for _, p := range []struct {
			pol  qp.Policy
			want bool
		}{{qp.Policy{}, c.match}, {qp.RXEPolicy(), c.tr}} {
			name := fmt.Sprintf("%s (%v)", c.name, p.pol.CurState)
			attr := goodAttr(c.claim, c.to)
			cur := current(c.real)
			next, err := qp.CheckModify(cur, c.typ, &attr, c.mask|qp.AttrCurState, testLimits, p.pol)
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
			if c.mask&qp.AttrState != 0 {
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
		for _, to := range []qp.State{qp.RTS, qp.SQD, qp.Reset, qp.Err} {
			attr := goodAttr(qp.SQD, to)
			cur := current(qp.SQD)
			cur.Draining = true
			next, err := qp.CheckModify(cur, typ, &attr, qp.AttrState, testLimits, defaultPolicy)
			if to == qp.Err {
				if err != nil || next != qp.Err {
					t.Errorf("%v draining SQD→ERR: %v, %v", typ, next, err)
				}
			} else {
				wantEINVAL(t, err, fmt.Sprintf("%v draining SQD→%v", typ, to))
				if !strings.Contains(err.Error(), "QP-23") {
					t.Errorf("reason %q does not name QP-23", err)
				}
			}
			cur.Draining = false
			if _, err := qp.CheckModify(cur, typ, &attr, qp.AttrState, testLimits, defaultPolicy); err != nil {
				t.Errorf("%v drained SQD→%v: %v", typ, to, err)
			}
		}
		attr := goodAttr(qp.SQD, qp.SQD)
		cur := qp.Current{State: qp.SQD, Port: 1, Draining: true}
		if _, err := qp.CheckModify(cur, typ, &attr, qp.AttrPKeyIndex, testLimits, defaultPolicy); err != nil {
			t.Errorf("%v attribute-only in a draining SQD: %v", typ, err)
		}
	}
}

// TestCheckModifyBadInput: a nil attr, an unsimulated type or a QP in no
// valid state fail with EINVAL rather than panicking.
func TestCheckModifyBadInput(t *testing.T) {
	attr := goodAttr(qp.Reset, qp.Init)
	mask, _ := qp.MinimalMask(qp.Reset, qp.Init, qp.RC)
	_, err := qp.CheckModify(current(qp.Reset), qp.RC, nil, mask, testLimits, defaultPolicy)
	wantEINVAL(t, err, "nil attr")
	for _, typ := range []qp.Type{qp.RawPacket, qp.Driver, 0} {
		_, err := qp.CheckModify(current(qp.Reset), typ, &attr, mask, testLimits, defaultPolicy)
		wantEINVAL(t, err, "type "+typ.String())
	}
	for _, s := range []qp.State{qp.Unknown, 8, 1 << 31} {
		_, err := qp.CheckModify(qp.Current{State: s}, qp.RC, &attr, mask, testLimits, defaultPolicy)
		wantEINVAL(t, err, "current state "+s.String())
	}
	_, err = qp.CheckModify(current(qp.Reset), qp.RC, &attr, mask, qp.Limits{}, defaultPolicy)
	wantEINVAL(t, err, "a device without ports")
}
