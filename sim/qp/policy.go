package qp

import iqp "github.com/verbsim/verbsim/sim/internal/qp"

// Policy is the queue-pair reading of a sim.Profile (where implementations
// differ in the QP state machine and its checks); see sim.Profile.QP.
type Policy = iqp.Policy

// CurStatePolicy selects how ibv_modify_qp treats IBV_QP_CUR_STATE.
type CurStatePolicy = iqp.CurStatePolicy

// The CurStatePolicy values.
const (
	CurStateMustMatch = iqp.CurStateMustMatch
	CurStateTrusted   = iqp.CurStateTrusted
)

// TransportPolicy is the transport reading of a sim.Profile; see
// sim.Profile.Transport.
type TransportPolicy = iqp.TransportPolicy

// QueryMaskAll is every attribute bit ibv_query_qp answers.
const QueryMaskAll = iqp.QueryMaskAll

// RXEPolicy returns the queue-pair reading of soft-RoCE.
func RXEPolicy() Policy { return iqp.RXEPolicy() }

// RXETransport returns the transport reading of soft-RoCE.
func RXETransport() TransportPolicy { return iqp.RXETransport() }

// SupportedSendOps returns the ibv_wr_* operations a QP of type t supports
// under policy p.
func SupportedSendOps(t Type, p Policy) SendOps { return iqp.SupportedSendOps(t, p) }

// TimeoutTicks returns the virtual duration of the local ACK timeout
// exponent t (4.096 µs × 2^t).
func TimeoutTicks(t uint8) uint64 { return iqp.TimeoutTicks(t) }

// Transition returns the attributes ibv_modify_qp requires and allows for
// the transition from -> to of a QP of type typ under policy pol, and false
// when the transition is not allowed.
func Transition(from, to State, typ Type, pol Policy) (required, optional AttrMask, ok bool) {
	return iqp.Transition(from, to, typ, pol)
}

// MinimalMask returns the attribute mask a modify from one state to another
// needs for a QP of type typ: the required attributes and nothing else
// (QP-14, QP-16, QP-17). ok is false for a transition that is not legal.
func MinimalMask(from, to State, typ Type) (mask AttrMask, ok bool) {
	return iqp.MinimalMask(from, to, typ)
}
