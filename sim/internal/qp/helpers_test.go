package qp_test

import (
	"errors"
	"syscall"

	"github.com/verbsim/verbsim/sim/internal/qp"
	"github.com/verbsim/verbsim/sim/verr"
)

// Fixtures shared by the tests of this package.

var (
	allStates = []qp.State{qp.Reset, qp.Init, qp.RTR, qp.RTS, qp.SQD, qp.SQE, qp.Err, qp.Unknown}
	qpStates  = allStates[:7] // the states a QP can be in
	allTypes  = []qp.Type{qp.RC, qp.UC, qp.UD, qp.XRCSend, qp.XRCRecv}

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
		{MaxMTU: qp.MTU4096, PKeyTableLen: 64, GIDTableLen: 16},
		{MaxMTU: qp.MTU1024, PKeyTableLen: 1, GIDTableLen: 4, GRHRequired: true, Ethernet: true},
	},
	MaxQPRDAtom:     16,
	MaxQPInitRDAtom: 8,
}

// legalQP07 is the legal set as the catalogue's QP-07 words it, written out
// independently of the package's table.
var legalQP07 = map[qp.State][]qp.State{
	qp.Reset: {qp.Reset, qp.Init},
	qp.Init:  {qp.Reset, qp.Err, qp.Init, qp.RTR},
	qp.RTR:   {qp.Reset, qp.Err, qp.RTS},
	qp.RTS:   {qp.Reset, qp.Err, qp.RTS, qp.SQD},
	qp.SQD:   {qp.Reset, qp.Err, qp.RTS, qp.SQD},
	qp.SQE:   {qp.Reset, qp.Err, qp.RTS},
	qp.Err:   {qp.Reset, qp.Err},
}

func legalIn(from, to qp.State, pol qp.Policy) bool {
	if pol.ResetToErr && from == qp.Reset && to == qp.Err {
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
func current(s qp.State) qp.Current {
	c := qp.Current{State: s, Port: 1}
	if s == qp.Reset {
		c.Port = 0
	}
	return c
}

// goodAttr holds a value for every field that passes every check on port 1
// of testLimits, for a move from one state to another.
func goodAttr(from, to qp.State) qp.Attr {
	return qp.Attr{
		QPState:          to,
		CurQPState:       from,
		PathMTU:          qp.MTU1024,
		PathMigState:     qp.Armed,
		QKey:             0x11111111,
		RQPSN:            0x123456,
		SQPSN:            0x654321,
		DestQPNum:        0x42,
		QPAccessFlags:    qp.AccessRemoteWrite | qp.AccessRemoteRead,
		AHAttr:           qp.AHAttr{DLID: 7, SL: 1, PortNum: 1},
		AltAHAttr:        qp.AHAttr{DLID: 8, PortNum: 1, IsGlobal: true, GRH: qp.GlobalRoute{SGIDIndex: 15, HopLimit: 64}},
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
func legalEdges(pol qp.Policy, f func(from, to qp.State, typ qp.Type, req, opt qp.AttrMask)) {
	for _, typ := range allTypes {
		for _, from := range qpStates {
			for _, to := range qpStates {
				if req, opt, ok := qp.Transition(from, to, typ, pol); ok {
					f(from, to, typ, req, opt)
				}
			}
		}
	}
}
