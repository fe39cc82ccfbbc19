package qp

import (
	"github.com/verbsim/verbsim/sim/internal/policy"
	iqp "github.com/verbsim/verbsim/sim/internal/qp"
	"github.com/verbsim/verbsim/verbs"
)

// QueryMaskAll is every attribute bit ibv_query_qp answers.
const QueryMaskAll = iqp.QueryMaskAll

// SupportedSendOps returns the ibv_wr_* operations a QP of type t supports
// under readings r (QP-33; QPX-01 with r.SendOpsRXE).
func SupportedSendOps(t Type, r verbs.Readings) SendOps {
	return iqp.SupportedSendOps(t, policy.Of(r).QP)
}

// TimeoutTicks returns the virtual duration of the local ACK timeout
// exponent t (4.096 µs × 2^t).
func TimeoutTicks(t uint8) uint64 { return iqp.TimeoutTicks(t) }

// Transition returns the attributes ibv_modify_qp requires and allows for
// the transition from -> to of a QP of type typ under readings r (QP-08
// with r.ResetToErr), and false when the transition is not allowed.
func Transition(from, to State, typ Type, r verbs.Readings) (required, optional AttrMask, ok bool) {
	return iqp.Transition(from, to, typ, policy.Of(r).QP)
}

// MinimalMask returns the attribute mask a modify from one state to another
// needs for a QP of type typ: the required attributes and nothing else
// (QP-14, QP-16, QP-17). ok is false for a transition that is not legal.
func MinimalMask(from, to State, typ Type) (mask AttrMask, ok bool) {
	return iqp.MinimalMask(from, to, typ)
}
