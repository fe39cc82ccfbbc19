package verbs

// What a device offers, by its readings: a provider may lack a transport
// (siw has only RC, irdma no UC), atomics, immediate data or memory
// windows (QP-41, QP-42, QP-43, MW-08).

// OffersQP reports whether a device with readings rs has QPs of type t
// (QP-41; XRC needs XRC and ibv_create_qp_ex, XRC-03).
func (rs Readings) OffersQP(t QPType) bool {
	switch t {
	case QPTypeUD:
		return !rs.NoUD
	case QPTypeUC:
		return !rs.NoUC
	case QPTypeXRCSend, QPTypeXRCRecv:
		return !rs.NoXRC && !rs.NoQPEx
	}
	return true
}

// OpReading returns the reading under which a device refuses opcode op
// whatever the transport, and whether rs offers op: atomics (QP-42),
// immediate data (QP-43), BIND_MW and LOCAL_INV (MW-08). An opcode no
// reading takes away is offered, with reading 0.
func (rs Readings) OpReading(op WROpcode) (Reading, bool) {
	switch op {
	case WRAtomicCmpAndSwp, WRAtomicFetchAndAdd, WRAtomicWrite:
		return ReadingNoAtomics, !rs.NoAtomics
	case WRSendWithImm, WRRDMAWriteWithImm:
		return ReadingNoImmData, !rs.NoImmData
	case WRBindMW, WRLocalInv:
		return ReadingNoMW, !rs.NoMW
	}
	return 0, true
}

// OffersOp reports whether a device with readings rs runs opcode op.
func (rs Readings) OffersOp(op WROpcode) bool {
	_, ok := rs.OpReading(op)
	return ok
}
