package qp_test

import (
	"errors"
	"syscall"

	"github.com/verbsim/verbsim/sim/internal/qp"
	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// Fixtures shared by the tests of this package.

var (
	allStates = []verbs.QPState{verbs.QPStateReset, verbs.QPStateInit, verbs.QPStateRTR, verbs.QPStateRTS, verbs.QPStateSQD, verbs.QPStateSQE, verbs.QPStateErr, verbs.QPStateUnknown}
	qpStates  = allStates[:7] // the states a QP can be in
	allTypes  = []verbs.QPType{verbs.QPTypeRC, verbs.QPTypeUC, verbs.QPTypeUD, verbs.QPTypeXRCSend, verbs.QPTypeXRCRecv}

	defaultPolicy = qp.Policy{}
	ibtaPolicy    = qp.Policy{ResetToErr: true}
	policies      = []struct {
		name string
		pol  qp.Policy
	}{
		{"default", defaultPolicy},
		{"reset-to-err", ibtaPolicy},
		{"rxe", qp.RXEPolicy()},
	}
)

// testLimits is a two-port device: port 1 is InfiniBand, port 2 RoCE.
var testLimits = qp.Limits{
	Ports: []qp.PortLimits{
		{MaxMTU: verbs.MTU4096, PKeyTableLen: 64, GIDTableLen: 16},
		{MaxMTU: verbs.MTU1024, PKeyTableLen: 1, GIDTableLen: 4, GRHRequired: true, Ethernet: true},
	},
	MaxQPRDAtom:     16,
	MaxQPInitRDAtom: 8,
}

// legalQP07 is the legal set as the catalogue's QP-07 words it, written out
// independently of the package's table.
var legalQP07 = map[verbs.QPState][]verbs.QPState{
	verbs.QPStateReset: {verbs.QPStateReset, verbs.QPStateInit},
	verbs.QPStateInit:  {verbs.QPStateReset, verbs.QPStateErr, verbs.QPStateInit, verbs.QPStateRTR},
	verbs.QPStateRTR:   {verbs.QPStateReset, verbs.QPStateErr, verbs.QPStateRTS},
	verbs.QPStateRTS:   {verbs.QPStateReset, verbs.QPStateErr, verbs.QPStateRTS, verbs.QPStateSQD},
	verbs.QPStateSQD:   {verbs.QPStateReset, verbs.QPStateErr, verbs.QPStateRTS, verbs.QPStateSQD},
	verbs.QPStateSQE:   {verbs.QPStateReset, verbs.QPStateErr, verbs.QPStateRTS},
	verbs.QPStateErr:   {verbs.QPStateReset, verbs.QPStateErr},
}

func legalIn(from, to verbs.QPState, pol qp.Policy) bool {
	if pol.ResetToErr && from == verbs.QPStateReset && to == verbs.QPStateErr {
		return true
	}
	for _, s := range legalQP07[from] {
		if s == to {
			return true
		}
	}
	return false
}

// current is a QP in state s on port 1 (no port yet in RESET), not
// draining.
func current(s verbs.QPState) qp.Current {
	c := qp.Current{State: s, Port: 1}
	if s == verbs.QPStateReset {
		c.Port = 0
	}
	return c
}

// goodAttr holds a value for every field that passes every check on port 1
// of testLimits, for a move from one state to another.
func goodAttr(from, to verbs.QPState) verbs.QPAttr {
	return verbs.QPAttr{
		QPState:          to,
		CurQPState:       from,
		PathMTU:          verbs.MTU1024,
		PathMigState:     verbs.MigArmed,
		QKey:             0x11111111,
		RQPSN:            0x123456,
		SQPSN:            0x654321,
		DestQPNum:        0x42,
		QPAccessFlags:    verbs.AccessRemoteWrite | verbs.AccessRemoteRead,
		AHAttr:           verbs.AHAttr{DLID: 7, SL: 1, PortNum: 1},
		AltAHAttr:        verbs.AHAttr{DLID: 8, PortNum: 1, IsGlobal: true, GRH: verbs.GlobalRoute{SGIDIndex: 15, HopLimit: 64}},
		PKeyIndex:        63,
		AltPKeyIndex:     0,
		EnSQDAsyncNotify: true,
		MaxRDAtomic:      8,
		MaxDestRDAtomic:  16,
		MinRNRTimer:      31,
		PortNum:          1,
		Timeout:          31,
		RetryCnt:         7,
		RNRRetry:         7,
		AltPortNum:       1,
		AltTimeout:       0,
	}
}

// fataler is what wantEINVAL needs of *testing.T and *rapid.T.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// wantEINVAL fails unless err is a *verr.Error for ibv_modify_qp carrying
// EINVAL.
func wantEINVAL(t fataler, err error, what string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: succeeded, want EINVAL", what)
	}
	var e *verr.Error
	if !errors.As(err, &e) || e.Errno != syscall.EINVAL || e.Verb != "ibv_modify_qp" || !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("%s: error %v (%T), want a *verr.Error with EINVAL for ibv_modify_qp", what, err, err)
	}
}

// legalEdges calls f for every legal (from, to, transport) under pol.
func legalEdges(pol qp.Policy, f func(from, to verbs.QPState, typ verbs.QPType, req, opt verbs.QPAttrMask)) {
	for _, typ := range allTypes {
		for _, from := range qpStates {
			for _, to := range qpStates {
				if req, opt, ok := verbs.Transition(from, to, typ, verbs.Readings{ResetToErr: pol.ResetToErr}); ok {
					f(from, to, typ, req, opt)
				}
			}
		}
	}
}
