package qp_test

import (
	"errors"
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/sim/internal/qp"
	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// FuzzCheckModify feeds CheckModify arbitrary states, types, masks and
// attribute values. It must never panic and never touch attr; every error
// must be a *verr.Error with EINVAL for ibv_modify_qp; and every success
// must be a legal table entry: required ⊆ mask ⊆ required ∪ optional ∪
// {STATE} for the transition it was checked as (QP-10, QP-11, QP-12), with
// the state after the modify being the target (or the current state
// without AttrState).
func FuzzCheckModify(f *testing.F) {
	// Seed with every minimal legal mask, and the same with all bits set.
	for _, typ := range allTypes {
		for _, from := range qpStates {
			for _, to := range qpStates {
				if m, ok := verbs.MinimalMask(from, to, typ); ok {
					f.Add(uint8(from), uint8(to), uint8(from), uint8(typ), uint32(m), uint8(0), false, uint64(0))
					f.Add(uint8(from), uint8(to), uint8(from), uint8(typ), uint32(m)|0xFFFF, uint8(3), true, ^uint64(0))
				}
			}
		}
	}
	f.Fuzz(func(t *testing.T, from, to, claim, typ uint8, mask uint32, knobs uint8, draining bool, vals uint64) {
		// knobs: bit 0 trusted CUR_STATE, bit 1 RESET→ERR, bits 2..3 port.
		pol := qp.Policy{ResetToErr: knobs&2 != 0}
		if knobs&1 != 0 {
			pol.CurState = qp.CurStateTrusted
		}
		cur := qp.Current{State: verbs.QPState(from % 9), Port: (knobs >> 2) & 3, Draining: draining}
		// vals spreads over the fields, mostly small so that the checks
		// are reached and sometimes pass.
		b := func(shift uint) uint8 { return uint8(vals >> shift) }
		attr := verbs.QPAttr{
			QPState: verbs.QPState(to % 9), CurQPState: verbs.QPState(claim % 9),
			PathMTU: verbs.MTU(b(0) % 7), PathMigState: verbs.MigState(b(3) % 4),
			QKey: uint32(vals), RQPSN: uint32(vals >> 8), SQPSN: uint32(vals >> 20), DestQPNum: uint32(vals >> 32),
			QPAccessFlags: verbs.AccessFlags(b(6) % 32),
			AHAttr: verbs.AHAttr{PortNum: b(8) % 4, IsGlobal: b(10)&1 != 0,
				GRH: verbs.GlobalRoute{SGIDIndex: b(11) % 20}},
			AltAHAttr: verbs.AHAttr{PortNum: b(14) % 4, IsGlobal: b(16)&1 != 0},
			PKeyIndex: uint16(b(17) % 70), AltPKeyIndex: uint16(b(20) % 70),
			MaxRDAtomic: b(24) % 12, MaxDestRDAtomic: b(28) % 20, MinRNRTimer: b(32) % 40,
			PortNum: b(36) % 4, Timeout: b(40) % 40, RetryCnt: b(44) % 10, RNRRetry: b(48) % 10,
			AltPortNum: b(52) % 4, AltTimeout: b(56) % 40,
		}
		before := attr
		ty := verbs.QPType(typ)
		if typ < 200 {
			ty = []verbs.QPType{verbs.QPTypeRC, verbs.QPTypeUC, verbs.QPTypeUD, verbs.QPTypeRawPacket}[typ%4]
		}
		m := verbs.QPAttrMask(mask)

		next, err := qp.CheckModify(cur, ty, &attr, m, testLimits, pol)
		if attr != before {
			t.Fatal("CheckModify changed attr")
		}
		if err != nil {
			var e *verr.Error
			if !errors.As(err, &e) || e.Errno != syscall.EINVAL || e.Verb != "ibv_modify_qp" {
				t.Fatalf("error %v (%T) is not an EINVAL *verr.Error for ibv_modify_qp", err, err)
			}
			return
		}
		eff := cur.State
		if m&verbs.QPAttrCurState != 0 {
			if pol.CurState == qp.CurStateMustMatch && attr.CurQPState != cur.State {
				t.Fatalf("accepted cur_qp_state %v on a QP in %v", attr.CurQPState, cur.State)
			}
			eff = attr.CurQPState
		}
		target, wantNext := eff, cur.State
		if m&verbs.QPAttrState != 0 {
			target, wantNext = attr.QPState, attr.QPState
		}
		req, opt, ok := verbs.Transition(eff, target, ty, verbs.Readings{ResetToErr: pol.ResetToErr})
		if !ok {
			t.Fatalf("accepted %v %v→%v, which the table does not list", ty, eff, target)
		}
		if req&^m != 0 || m&^(req|opt|verbs.QPAttrState) != 0 {
			t.Fatalf("accepted %v for %v %v→%v (required %v, optional %v)", m, ty, eff, target, req, opt)
		}
		if next != wantNext {
			t.Fatalf("next %v, want %v", next, wantNext)
		}
		if m&verbs.QPAttrState != 0 && eff == verbs.QPStateSQD && draining && next != verbs.QPStateErr {
			t.Fatalf("QP-23: left a draining SQD for %v", next)
		}
	})
}
