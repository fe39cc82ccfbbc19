package qp

import "github.com/verbsim/verbsim/verbs"

// A connected QP (RC, UC, the two sides of XRC) takes packets only from its
// peer (XFER-27), requests and acknowledgements alike, as rxe's check_addr
// filters every packet of such a QP: the QP dest_qp_num names, at the
// address of the QP's path: the peer's GID when both the path and the
// packet carry a GRH, its LID otherwise. And an acknowledgement is taken
// only for what was sent (XFER-35): an ACK or NAK whose PSN is beyond the
// last PSN the requester has sent is a ghost and is dropped.

// fromPath reports whether a packet from QP srcQPN, sent from LID slid and,
// when global, from GID sgid, comes from the peer that path av and
// destination QP destQPN name.
func fromPath(av *verbs.AHAttr, destQPN, srcQPN uint32, slid uint16, global bool, sgid *[16]byte) bool {
	if srcQPN != destQPN {
		return false
	}
	if global && av.IsGlobal {
		return *sgid == av.GRH.DGID
	}
	return slid == av.DLID
}

// fromPeerLocked reports whether p comes from q's connected peer (XFER-27).
func (q *QP) fromPeerLocked(p *Packet) bool {
	return fromPath(&q.attr.AHAttr, q.attr.DestQPNum, p.SrcQPN, p.SLID, p.Global, &p.SGID)
}

// ghostLocked reports whether p, an ACK or NAK, names a PSN the requester
// has not sent yet (XFER-35): the last PSN sent is the one before tx.psn,
// the next to give out.
func (q *QP) ghostLocked(p *Packet) bool { return psnDiff(p.PSN, q.tx.psn) >= 0 }
