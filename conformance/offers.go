package conformance

import "github.com/verbsim/verbsim/verbs"

// What a device offers. A provider may lack a transport (siw has only RC,
// irdma no UC), atomics, immediate data, memory windows, SRQs or a verb
// (ibv_create_cq_ex, ibv_create_qp_ex, ibv_rereg_mr); its profile says so
// with a reading (QP-41, QP-42, QP-43, MW-08, SRQ-13, CQX-11, QPX-06,
// MR-18), and the case of each of those rules checks the refusal. Every
// other case checks what it can: a case made for every transport checks
// the transports the device offers, and a case that needs something the
// device lacks stops where it would need it, logging "not checked" and
// why, without failing (tester.NotChecked). So every case runs under every
// profile, and under each checks all the device has.

// transports returns the transports of qpTypes that profile p offers, in
// qpTypes' order.
func transports(p verbs.Readings) []verbs.QPType {
	out := make([]verbs.QPType, 0, len(qpTypes))
	for _, t := range qpTypes {
		if p.OffersQP(t) {
			out = append(out, t)
		}
	}
	return out
}

// transports returns the transports the device offers (QP-41).
func (e *env) transports() []verbs.QPType { return transports(e.Profile) }

// notOfferedSendOps returns the send_ops_flags bits of the operations a
// device with profile p does not run whatever the transport.
func notOfferedSendOps(p verbs.Readings) verbs.QPSendOps {
	var bad verbs.QPSendOps
	if p.NoAtomics {
		bad |= verbs.QPExWithAtomicCmpSwp | verbs.QPExWithAtomicFetchAdd | verbs.QPExWithAtomicWrite
	}
	if p.NoImmData {
		bad |= verbs.QPExWithSendImm | verbs.QPExWithRDMAWriteImm
	}
	if p.NoMW {
		bad |= verbs.QPExWithBindMW | verbs.QPExWithLocalInv
	}
	return bad
}

// needQP stops the case, not checked, unless the device has QPs of type
// t.
func (e *env) needQP(t verbs.QPType) {
	e.T.Helper()
	if !e.Profile.OffersQP(t) {
		e.T.NotChecked("the device has no %v QPs (QP-41)", t)
	}
}

// needOps stops the case, not checked, unless the device runs the opcode
// of every request of wrs.
func (e *env) needOps(wrs ...verbs.SendWR) {
	e.T.Helper()
	for i := range wrs {
		if r, ok := e.Profile.OpReading(wrs[i].Opcode); !ok {
			e.T.NotChecked("the device does not offer %v (%s, %s)", wrs[i].Opcode, r.Rules(), r)
		}
	}
}

// need stops the case, not checked, when the device's profile has reading
// r, one that takes a capability away (NoSRQ, NoCQEx, NoQPEx, NoRereg,
// NoMW, NoUD...).
func (e *env) need(r verbs.Reading) {
	e.T.Helper()
	if e.Profile.Get(r) {
		e.T.NotChecked("%s (%s, %s)", r.Behaviour(true), r.Rules(), r)
	}
}
