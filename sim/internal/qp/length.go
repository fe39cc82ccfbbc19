package qp

import "github.com/verbsim/verbsim/verbs"

// The lengths a responder checks in every packet of a SEND or an RDMA WRITE
// (XFER-34; the IBTA's C9-92..C9-94, which rxe's rxe_resp_check_length and
// check_rkey implement): no packet carries more than the path MTU; a first
// or middle packet carries exactly the path MTU; a SEND's last packet, unless
// it is also the first, carries at least one byte; and a WRITE's packets
// carry exactly its DMA length between them: each packet before the last a
// path MTU of it, and the last exactly what remains. An RC responder answers
// a packet that breaks them with a NAK (invalid request) and enters ERR, as
// for any invalid request (FLUSH-12), without placing its payload: a WRITE
// whose packets do not add up to its DMA length is never acknowledged, so its
// requester never reports success for bytes that did not land. A UC responder
// drops the message (XFER-26).
//
// A READ response's payload is checked the same way against the READ's
// length at the requester: a response that does not carry exactly the bytes
// due (a path MTU, or the rest at the last) is dropped, as a stray, and the
// READ is asked for again when its ACK timer fires (XFER-10).

// sendLengthLocked says what is wrong with the length of p, a SEND packet,
// and the rule it breaks, or returns "".
func (q *QP) sendLengthLocked(p *Packet) (why, rule string) {
	n, mtu := uint32(len(p.Payload)), q.mtuLocked()
	switch {
	case n > mtu:
		return "a SEND packet longer than the path MTU", "XFER-34"
	case !p.Last && n != mtu:
		return "a first or middle SEND packet shorter than the path MTU", "XFER-34"
	case p.Last && !p.First && n == 0:
		return "an empty last SEND packet", "XFER-34"
	}
	return "", ""
}

// writeLengthLocked says what is wrong with the length of p, a WRITE packet
// with resid bytes of its DMA length still to come, and the rule it
// breaks, or returns "".
func (q *QP) writeLengthLocked(p *Packet, resid uint32) (why, rule string) {
	n, mtu := uint32(len(p.Payload)), q.mtuLocked()
	switch {
	case p.First && p.DMALen > maxRDMALen:
		return "RDMA length above 2^31", "XFER-23"
	case n > mtu:
		return "a WRITE packet longer than the path MTU", "XFER-34"
	case p.Last && n != resid:
		return "the last WRITE packet does not carry the rest of the DMA length", "XFER-34"
	case !p.Last && (n != mtu || resid <= mtu):
		return "a first or middle WRITE packet that is not a path MTU of the DMA length", "XFER-34"
	}
	return "", ""
}

// recvLengthStatus is the status a receive WR held for a SEND gets when the
// message breaks a length rule: that of a message that does not fit
// (XFER-05), LOC_LEN_ERR, or REM_INV_REQ_ERR under RecvTooSmallRemInvReq, as
// rxe's responder completes it after a length error.
func (q *QP) recvLengthStatus() verbs.WCStatus {
	if q.cfg.Transport.RecvTooSmallRemInvReq {
		return verbs.WCRemInvReqErr
	}
	return verbs.WCLocLenErr
}

// readResponseLengthOK reports whether p, the response packet number e.got
// of READ e, carries exactly the bytes due: a path MTU, or at the last
// response the rest of the READ.
func (q *QP) readResponseLengthOK(e *wqe, p *Packet) bool {
	mtu := uint64(q.mtuLocked())
	total := e.msgLen()
	off := uint64(e.got) * mtu
	if off > total {
		return false
	}
	return uint64(len(p.Payload)) == min(mtu, total-off)
}
