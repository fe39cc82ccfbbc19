package qp

import (
	"encoding/binary"

	"github.com/verbsim/verbsim/sim/trace"
	"github.com/verbsim/verbsim/verbs"
)

// grhLen is the size of the Global Routing Header that starts every UD
// receive buffer (XFER-21).
const grhLen = 40

// maxRDMALen is the largest RDMA length a responder accepts (XFER-23).
const maxRDMALen = 1 << 31

// respondLocked handles an incoming request. Only a QP in RTR, RTS, SQD or
// SQE takes packets; in RESET, INIT and ERR they vanish without an answer
// (XFER-28, FLUSH-11).
func (q *QP) respondLocked(p *Packet) {
	switch q.state {
	case verbs.QPStateRTR, verbs.QPStateRTS, verbs.QPStateSQD, verbs.QPStateSQE:
	default:
		q.traceLocked(trace.Record{Kind: trace.KindPacket, Name: "packet dropped", Why: "the QP is not receiving", Rule: "XFER-28"})
		return
	}
	switch {
	case q.typ == verbs.QPTypeXRCSend:
		return // an initiator has no responder
	case q.typ == verbs.QPTypeXRCRecv && p.Transport != verbs.QPTypeXRCSend,
		q.typ != verbs.QPTypeXRCRecv && p.Transport != q.typ:
		return
	}
	if q.typ == verbs.QPTypeUD {
		q.udReceiveLocked(p)
		return
	}
	if !q.fromPeerLocked(p) {
		q.traceLocked(trace.Record{Kind: trace.KindPacket, Name: "packet ignored", Why: "not from the connected peer", Rule: "XFER-27"})
		return
	}
	if q.state == verbs.QPStateRTR && !q.rx.commEst {
		q.rx.commEst = true // ASYNC-12: the first packet in RTR
		q.raiseLocked(verbs.EventCommEst)
	}
	if q.typ == verbs.QPTypeUC {
		q.ucReceiveLocked(p)
		return
	}
	d := psnDiff(p.PSN, q.rx.epsn)
	if q.typ == verbs.QPTypeXRCRecv && d <= 0 && !q.xrcSRQLocked(p, d == 0) {
		return
	}
	switch {
	case d < 0:
		q.duplicateLocked(p)
		return
	case d > 0:
		if !q.rx.nakSent {
			q.rx.nakSent = true
			q.nakLocked(p, SynSeqErr, q.rx.epsn)
		}
		return
	}
	q.rx.nakSent = false
	switch p.Kind {
	case PktSend:
		q.rcSendLocked(p)
	case PktWrite:
		q.rcWriteLocked(p)
	case PktReadReq:
		if !q.remoteOKLocked(p, verbs.AccessRemoteRead) {
			return
		}
		q.readResponsesLocked(p)
		q.rx.epsn = psnAdd(q.rx.epsn, q.readPackets(p.DMALen))
	case PktAtomic:
		q.atomicLocked(p)
	}
}

// xrcSRQLocked finds the XRC SRQ request p names on an XRC_RECV QP
// (XRC-10): a live XRC SRQ of the device, in the QP's XRC domain. It
// reports false when there is none: an in-sequence request (inSeq) is then
// answered with a remote access error NAK, the QP raising
// QP_ACCESS_ERR and going to ERR; a duplicate is dropped.
func (q *QP) xrcSRQLocked(p *Packet, inSeq bool) bool {
	var s *SRQ
	if h, ok := q.cfg.Host.(XRCHost); ok {
		s = h.XRCSRQLocked(p.SRQN)
	}
	if s != nil && s.life == live && s.cfg.XRC && s.cfg.XRCD == q.cfg.XRCD {
		if q.rx.xsrq != s && !q.rx.wqe {
			q.rx.xsrq = s
			if c := cap(q.rx.srqSGE); c < s.maxSGE() {
				q.rx.srqSGE = make([]verbs.SGE, 0, s.maxSGE())
			}
		}
		return true
	}
	if inSeq {
		why := "the request names no XRC SRQ of the device"
		if s != nil {
			why = "the XRC SRQ the request names is in another XRC domain"
		}
		q.responderErrorLocked(p, SynRemAccess, verbs.WCSuccess, verbs.EventQPAccessErr, why, "XRC-10")
	}
	return false
}

// respPD is the protection domain an incoming request's memory is checked
// against: the QP's, or on an XRC_RECV QP, which has none, the PD of the XRC
// SRQ the request names (XRC-10).
func (q *QP) respPD() any {
	if q.typ == verbs.QPTypeXRCRecv {
		return q.rx.xsrq.PD()
	}
	return q.cfg.PD
}

// raiseLocked raises a QP async event unless the profile has none
// (ASYNC-11).
func (q *QP) raiseLocked(t verbs.EventType) {
	q.cfg.consult(verbs.ReadingNoQPEvents)
	if q.cfg.Transport.NoQPEvents || q.cfg.Async == nil {
		return
	}
	q.cfg.Async.RaiseLocked(t, q, &q.tally, 0)
}

// nakLocked answers req with an ACK-kind packet: syndrome syn (an ACK
// or a NAK) and PSN psn.
func (q *QP) nakLocked(req *Packet, syn Syndrome, psn uint32) {
	h := q.cfg.Host
	a := h.NewPacketLocked()
	a.reply(req, q, PktAck)
	a.Syndrome, a.PSN = syn, psn
	if syn != SynACK {
		q.countNAKSentLocked(syn)
		if syn == SynRNR {
			a.RNRTimer = q.attr.MinRNRTimer
		}
	}
	h.SendLocked(q, a)
}

// countNAKSentLocked counts a NAK the responder sends, by kind.
func (q *QP) countNAKSentLocked(syn Syndrome) {
	switch syn {
	case SynRNR:
		q.stats.RNRNAKsSent++
	case SynSeqErr:
		q.stats.SeqNAKsSent++
	default:
		q.stats.ErrorNAKsSent++
	}
}

// takeRecvLocked holds the oldest receive WR for an incoming message
// (XFER-01): the head of the receive queue, or one taken from the SRQ
// (SRQ-08). It reports false when there is none.
func (q *QP) takeRecvLocked() bool {
	if q.rx.wqe {
		return true
	}
	if q.typ == verbs.QPTypeXRCRecv && (q.rx.xsrq == nil || q.rx.xsrq.life != live) {
		return false
	}
	if s := q.recvSRQ(); s != nil {
		wrid, sges, ok := s.TakeLocked(q.rx.srqSGE[:0])
		if !ok {
			return false
		}
		q.rx.srqWRID, q.rx.srqSGE, q.rx.wqe = wrid, sges, true
		q.rx.srqSeq = s.q.done - 1
		return true
	}
	if q.rq.outstanding() == 0 {
		return false
	}
	q.rx.wqe = true
	return true
}

// recvSGEs returns the scatter list of the held receive WR.
func (q *QP) recvSGEs() ([]verbs.SGE, uint64) {
	if q.recvSRQ() != nil {
		return q.rx.srqSGE, q.rx.srqWRID
	}
	e := q.rq.rslot(q.rq.done)
	return e.sge, e.wrid
}

// completeRecvLocked completes the held receive WR with w. It reports
// whether the completion overran the receive CQ, which leaves the QP in ERR
// (CQ-24): an RC responder must then not acknowledge the message.
func (q *QP) completeRecvLocked(w *verbs.WC, solicited bool) (overrun bool) {
	_, w.WRID = q.recvSGEs()
	w.QPNum = q.num
	if len(q.forced) > 0 {
		if st := q.takeForcedLocked(w.WRID, true, w.Status); st != w.Status {
			*w = verbs.WC{WRID: w.WRID, Status: st, QPNum: q.num}
			defer q.SetErrorLocked()
		}
	}
	if q.d.Checking() {
		q.noteReceivedLocked(w)
	}
	q.rx.wqe = false
	if q.recvSRQ() != nil {
		return q.pushRecvLocked(w, solicited, nil, 0)
	}
	seq := q.rq.done
	q.rq.done++
	return q.pushRecvLocked(w, solicited, &q.rq, seq)
}

// ackReceivedLocked acknowledges p, the last packet of a message that
// completed a receive WR, unless that completion overran the CQ: the QP is
// then in ERR, and a QP in ERR answers nothing (FLUSH-11), so the requester
// retries and fails as it would against a dead peer. Soft-RoCE does the
// same: its responder posts the completion before it acknowledges, and a
// failed post takes its error path with no ACK.
func (q *QP) ackReceivedLocked(p *Packet, overrun bool) {
	if overrun {
		q.traceLocked(trace.Record{Kind: trace.KindPacket, Name: "no ACK", Why: "the receive completion overran the CQ; the QP is in ERR", Rule: "CQ-24, FLUSH-11"})
		return
	}
	q.nakLocked(p, SynACK, p.PSN)
}

// responderErrorLocked answers a bad request: a NAK with syn, the held
// receive WR (if any) completed with recvStatus, the event ev (unless the
// profile raises none) and the QP in ERR (FLUSH-12, XFER-15).
func (q *QP) responderErrorLocked(p *Packet, syn Syndrome, recvStatus verbs.WCStatus, ev verbs.EventType, why, rule string) {
	if q.tracing() {
		q.traceLocked(trace.Record{Kind: trace.KindPacket, Name: "responder error", Packet: &trace.Packet{NAK: nakOf(syn)}, Detail: syn.String(), Why: why, Rule: rule})
	}
	q.nakLocked(p, syn, p.PSN)
	if q.rx.wqe && recvStatus != verbs.WCSuccess {
		// Solicited only if the packet carried the SE bit: what a
		// solicited-only arm under NOTIFY-05 reading B looks at.
		w := verbs.WC{Status: recvStatus}
		q.completeRecvLocked(&w, p.SE)
	}
	q.raiseLocked(ev)
	q.SetErrorLocked()
}

// recvPD is the protection domain a held receive WR's scatter list is
// checked against (SRQ-12): the SRQ's, for a WR taken from an SRQ, as the
// IBTA has it; the QP's under the rxe reading, whose responder checks every
// receive against the QP's PD; and the QP's for its own receive queue.
func (q *QP) recvPD() any {
	if q.typ == verbs.QPTypeXRCRecv {
		return q.rx.xsrq.PD() // the target has no PD of its own (XRC-10)
	}
	if s := q.init.SRQ; s != nil {
		if s.PD() != q.cfg.PD {
			q.cfg.consult(verbs.ReadingSRQRecvQPPD) // the SRQ's PD is not the QP's (SRQ-12)
		}
		if !q.cfg.Transport.SRQRecvQPPD {
			return s.PD()
		}
	}
	return q.cfg.PD
}

// placeRecvLocked scatters payload at the current offset of the held
// receive WR. It returns the failure status, or Success.
func (q *QP) placeRecvLocked(payload []byte, at uint64) verbs.WCStatus {
	if at == 0 && q.d.Checking() {
		q.notePlacingLocked()
	}
	sges, _ := q.recvSGEs()
	if at+uint64(len(payload)) > verbs.SGEListLength(sges) {
		q.cfg.consult(verbs.ReadingRecvTooSmallRemInvReq)
		if q.cfg.Transport.RecvTooSmallRemInvReq {
			return verbs.WCRemInvReqErr
		}
		return verbs.WCLocLenErr
	}
	if !scatter(q.cfg.Host, q.recvPD(), sges, at, payload) {
		q.cfg.consult(verbs.ReadingRecvProtQPOp)
		if q.cfg.Transport.RecvProtQPOp {
			return verbs.WCLocQPOpErr
		}
		return verbs.WCLocProtErr
	}
	return verbs.WCSuccess
}

// rcSendLocked receives one packet of a SEND on an RC QP.
func (q *QP) rcSendLocked(p *Packet) {
	r := &q.rx
	if p.First {
		if !q.takeRecvLocked() {
			r.nakSent = true
			if q.tracing() {
				q.traceLocked(trace.Record{Kind: trace.KindPacket, Name: "RNR NAK", Packet: &trace.Packet{NAK: trace.NAKRNR}, Why: "no receive WR", Rule: "XFER-07"})
			}
			q.nakLocked(p, SynRNR, p.PSN)
			return
		}
		r.inMsg, r.off = true, 0
	}
	if !r.inMsg {
		q.responderErrorLocked(p, SynInvReq, verbs.WCSuccess, verbs.EventQPReqErr, "a middle packet without a first", "")
		return
	}
	if why, rule := q.sendLengthLocked(p); why != "" {
		r.inMsg = false
		q.responderErrorLocked(p, SynInvReq, q.recvLengthStatus(), verbs.EventQPReqErr, why, rule)
		return
	}
	switch st := q.placeRecvLocked(p.Payload, uint64(r.off)); st {
	case verbs.WCSuccess:
	case verbs.WCLocLenErr, verbs.WCRemInvReqErr:
		q.responderErrorLocked(p, SynInvReq, st, verbs.EventQPReqErr, "the message does not fit the receive WR", "XFER-05")
		return
	default:
		q.responderErrorLocked(p, SynRemOp, st, verbs.EventQPAccessErr, "bad SGE in the receive WR", "XFER-16")
		return
	}
	r.off += uint32(len(p.Payload))
	r.epsn = psnAdd(r.epsn, 1)
	if !p.Last {
		return
	}
	w := verbs.WC{Opcode: verbs.WCRecv, ByteLen: r.off, SrcQP: p.SrcQPN}
	switch p.Op {
	case verbs.WRSendWithImm:
		w.WCFlags, w.ImmData = verbs.WCWithImm, p.Imm
	case verbs.WRSendWithInv:
		if !q.cfg.Host.InvalidateLocked(q.respPD(), p.Imm) {
			q.cfg.consult(verbs.ReadingSendInvErrAcked)
			if q.cfg.Transport.SendInvErrAcked {
				q.sendInvAckedErrorLocked(p)
				return
			}
			q.responderErrorLocked(p, SynInvReq, verbs.WCLocQPOpErr, verbs.EventQPReqErr, "SEND_WITH_INV names no MR of the PD", "XFER-29")
			return
		}
		w.WCFlags, w.ImmData = verbs.WCWithInv, p.Imm
	}
	r.inMsg = false
	q.ackReceivedLocked(p, q.completeRecvLocked(&w, p.SE))
}

// sendInvAckedErrorLocked fails an RC SEND_WITH_INV whose rkey could not be
// invalidated under XFER-29 reading B (rxe's class J): the held receive WR
// completes with REM_INV_REQ_ERR, the message is still acknowledged (unless
// that completion overran the CQ), so the requester's send succeeds, and
// the responder alone goes to ERR.
func (q *QP) sendInvAckedErrorLocked(p *Packet) {
	q.traceLocked(trace.Record{Kind: trace.KindPacket, Name: "responder error", Why: "SEND_WITH_INV names nothing it may invalidate; acknowledged", Rule: "XFER-29 B"})
	q.rx.inMsg = false
	w := verbs.WC{Status: verbs.WCRemInvReqErr}
	q.ackReceivedLocked(p, q.completeRecvLocked(&w, p.SE))
	q.raiseLocked(verbs.EventQPReqErr)
	q.SetErrorLocked()
}

// remoteOKLocked checks an RDMA or atomic request against the QP's access
// flags (XFER-14 level 1: REM_INV_REQ_ERR) and the rkey (level 2:
// REM_ACCESS_ERR). A zero-length request needs no valid rkey (XFER-24).
func (q *QP) remoteOKLocked(p *Packet, need verbs.AccessFlags) bool {
	if q.attr.QPAccessFlags&need == 0 {
		q.responderErrorLocked(p, SynInvReq, verbs.WCSuccess, verbs.EventQPReqErr, "the QP's access flags do not allow it", "XFER-14")
		return false
	}
	if (p.Kind == PktReadReq || p.Kind == PktAtomic) && q.attr.MaxDestRDAtomic == 0 {
		q.responderErrorLocked(p, SynInvReq, verbs.WCSuccess, verbs.EventQPReqErr, "max_dest_rd_atomic is 0", "QP-40")
		return false
	}
	if p.DMALen > maxRDMALen {
		q.responderErrorLocked(p, SynInvReq, verbs.WCSuccess, verbs.EventQPReqErr, "RDMA length above 2^31", "XFER-23")
		return false
	}
	if p.Kind == PktAtomic && p.RemoteAddr%8 != 0 {
		q.responderErrorLocked(p, SynInvReq, verbs.WCSuccess, verbs.EventQPReqErr, "misaligned atomic", "XFER-17")
		return false
	}
	n := p.DMALen
	if p.Kind == PktAtomic {
		n = 8
	}
	if n == 0 {
		return true
	}
	if _, ok := q.cfg.Host.RemoteLocked(q, q.respPD(), p.RKey, p.RemoteAddr, n, need); !ok {
		q.responderErrorLocked(p, SynRemAccess, q.badRKeyRecvLocked(p), verbs.EventQPAccessErr, "rkey, range or MR rights", "XFER-14")
		return false
	}
	return true
}

// badRKeyRecvLocked decides what becomes of the receive WR of an RDMA WRITE
// WITH IMMEDIATE that fails its rkey check at packet p (XFER-30): it takes
// the receive WR and returns the status to complete it with, or returns
// Success when no receive WR is to be completed (the QP's error then
// flushes it). Under the man-page reading the message consumes a receive
// WR from its first packet and the error is LOC_ACCESS_ERR; soft-RoCE takes
// the receive WR only at the packet that carries the immediate and reports
// REM_ACCESS_ERR, so a longer message's receive is flushed.
func (q *QP) badRKeyRecvLocked(p *Packet) verbs.WCStatus {
	if p.Kind != PktWrite || p.Op != verbs.WRRDMAWriteWithImm {
		return verbs.WCSuccess
	}
	st := verbs.WCLocAccessErr
	q.cfg.consult(verbs.ReadingWriteImmRKeyRemAccess)
	if q.cfg.Transport.WriteImmRKeyRemAccess {
		if !p.Last {
			return verbs.WCSuccess
		}
		st = verbs.WCRemAccessErr
	}
	if !q.takeRecvLocked() {
		return verbs.WCSuccess
	}
	return st
}

// rcWriteLocked receives one packet of an RDMA WRITE on an RC QP.
func (q *QP) rcWriteLocked(p *Packet) {
	r := &q.rx
	if p.First {
		if why, rule := q.writeLengthLocked(p, p.DMALen); why != "" {
			r.inMsg = false
			q.responderErrorLocked(p, SynInvReq, verbs.WCSuccess, verbs.EventQPReqErr, why, rule)
			return
		}
		if !q.remoteOKLocked(p, verbs.AccessRemoteWrite) {
			return
		}
		r.inMsg, r.off = true, 0
		r.wAddr, r.wRKey, r.wLen = p.RemoteAddr, p.RKey, p.DMALen
	}
	if !r.inMsg {
		q.responderErrorLocked(p, SynInvReq, verbs.WCSuccess, verbs.EventQPReqErr, "a middle packet without a first", "")
		return
	}
	if why, rule := q.writeLengthLocked(p, r.wLen-r.off); !p.First && why != "" {
		r.inMsg = false
		q.responderErrorLocked(p, SynInvReq, verbs.WCSuccess, verbs.EventQPReqErr, why, rule)
		return
	}
	imm := p.Last && p.Op == verbs.WRRDMAWriteWithImm
	if imm && !q.takeRecvLocked() {
		r.nakSent = true
		if q.tracing() {
			q.traceLocked(trace.Record{Kind: trace.KindPacket, Name: "RNR NAK", Packet: &trace.Packet{NAK: trace.NAKRNR}, Why: "WRITE_WITH_IMM without a receive WR", Rule: "XFER-12"})
		}
		q.nakLocked(p, SynRNR, p.PSN)
		return
	}
	if len(p.Payload) > 0 {
		b, ok := q.cfg.Host.RemoteLocked(q, q.respPD(), r.wRKey, r.wAddr+uint64(r.off), uint32(len(p.Payload)), verbs.AccessRemoteWrite)
		if !ok {
			q.responderErrorLocked(p, SynRemAccess, q.badRKeyRecvLocked(p), verbs.EventQPAccessErr, "the target MR went away", "MR-07")
			return
		}
		q.placeRemoteLocked(b, r.wRKey, r.wAddr+uint64(r.off), p.Payload)
	}
	r.off += uint32(len(p.Payload))
	r.epsn = psnAdd(r.epsn, 1)
	if !p.Last {
		return
	}
	r.inMsg = false
	overrun := false
	if imm {
		w := verbs.WC{Opcode: verbs.WCRecvRDMAWithImm, ByteLen: r.wLen, WCFlags: verbs.WCWithImm, ImmData: p.Imm, SrcQP: p.SrcQPN}
		overrun = q.completeRecvLocked(&w, p.SE)
	}
	q.ackReceivedLocked(p, overrun)
}

// readPackets is the number of response packets (and PSNs) of a READ of n
// bytes.
func (q *QP) readPackets(n uint32) uint32 {
	mtu := uint32(q.mtuLocked())
	return max(1, (n+mtu-1)/mtu)
}

// readResponsesLocked sends the responses of a READ request, reading the
// target memory now.
func (q *QP) readResponsesLocked(req *Packet) {
	h := q.cfg.Host
	mtu := q.mtuLocked()
	n := q.readPackets(req.DMALen)
	for i := uint32(0); i < n; i++ {
		off := i * mtu
		size := min(mtu, req.DMALen-off)
		var src []byte
		var ext Mem // the bytes, in another process's memory
		if size > 0 {
			b, ok := h.RemoteLocked(q, q.respPD(), req.RKey, req.RemoteAddr+uint64(off), size, verbs.AccessRemoteRead)
			if !ok {
				q.responderErrorLocked(req, SynRemAccess, verbs.WCSuccess, verbs.EventQPAccessErr, "the READ target went away", "MR-07")
				return
			}
			src = b
			if b == nil {
				ext, _ = h.RemoteMemLocked(q, q.respPD(), req.RKey, req.RemoteAddr+uint64(off), size, verbs.AccessRemoteRead)
			}
		}
		a := h.NewPacketLocked()
		a.reply(req, q, PktReadResp)
		a.PSN = psnAdd(req.PSN, i)
		a.First, a.Last = i == 0, i == n-1
		if ext.X != nil {
			a.Payload = readPayload(a.Payload, ext)
		} else {
			a.Payload = append(a.Payload[:0], src...)
		}
		h.SendLocked(q, a)
	}
}

// atomicLocked executes an atomic (XFER-17) on the 8 bytes at the target,
// in host byte order, and answers with the value found there. An
// ATOMIC_WRITE (XFER-33) needs REMOTE_WRITE rather than REMOTE_ATOMIC,
// stores its 8 bytes, and is answered without a value.
func (q *QP) atomicLocked(p *Packet) {
	need := verbs.AccessRemoteAtomic
	if p.Op == verbs.WRAtomicWrite {
		need = verbs.AccessRemoteWrite
	}
	if !q.remoteOKLocked(p, need) {
		return
	}
	b, _ := q.cfg.Host.RemoteLocked(q, q.respPD(), p.RKey, p.RemoteAddr, 8, need)
	var orig uint64
	if b != nil {
		orig = atomicApply(b, p.Op, p.CompareAdd, p.Swap)
	} else { // another process's memory
		m, _ := q.cfg.Host.RemoteMemLocked(q, q.respPD(), p.RKey, p.RemoteAddr, 8, need)
		orig = atomicMem(m, p.Op, p.CompareAdd, p.Swap)
	}
	r := &q.rx
	r.saveAtomic(p.PSN, orig)
	r.epsn = psnAdd(r.epsn, 1)
	q.atomicAckLocked(p, orig)
}

// placeRemoteLocked writes payload at the bytes b that RemoteLocked gave
// for rkey and addr, or, for another process's memory (b nil), through
// RemoteMemLocked.
func (q *QP) placeRemoteLocked(b []byte, rkey uint32, addr uint64, payload []byte) {
	if b != nil {
		copy(b, payload)
		return
	}
	m, _ := q.cfg.Host.RemoteMemLocked(q, q.respPD(), rkey, addr, uint32(len(payload)), verbs.AccessRemoteWrite)
	m.WriteAt(payload, 0)
}

// atomicApply executes the atomic op on the 8 bytes b, in host byte order,
// and returns the value found there (XFER-17).
func atomicApply(b []byte, op verbs.WROpcode, compareAdd, swap uint64) uint64 {
	orig := binary.NativeEndian.Uint64(b)
	switch op {
	case verbs.WRAtomicCmpAndSwp:
		if orig == compareAdd {
			binary.NativeEndian.PutUint64(b, swap)
		}
	case verbs.WRAtomicFetchAndAdd:
		binary.NativeEndian.PutUint64(b, orig+compareAdd)
	case verbs.WRAtomicWrite:
		binary.NativeEndian.PutUint64(b, swap)
		return 0 // its response carries no value
	}
	return orig
}

// saveAtomic keeps the result of the atomic at psn for duplicates
// (XFER-25).
func (r *recvState) saveAtomic(psn uint32, orig uint64) {
	if r.atomics == nil {
		r.atomics = make([]atomicResult, atomicRing)
	}
	r.atomics[r.atomicN%len(r.atomics)] = atomicResult{psn: psn, orig: orig, ok: true}
	r.atomicN++
}

func (q *QP) atomicAckLocked(req *Packet, orig uint64) {
	h := q.cfg.Host
	a := h.NewPacketLocked()
	a.reply(req, q, PktAtomicAck)
	a.PSN, a.Orig = req.PSN, orig
	h.SendLocked(q, a)
}

// duplicateLocked answers a request the responder has already executed
// (XFER-25): a READ is executed again, an atomic's saved result is sent
// again (never executed twice), and a SEND or WRITE is acknowledged.
func (q *QP) duplicateLocked(p *Packet) {
	q.stats.DuplicateRequests++
	q.traceLocked(trace.Record{Kind: trace.KindPacket, Name: "duplicate request", Why: "already executed; answered, not redone", Rule: "XFER-25"})
	switch p.Kind {
	case PktReadReq:
		if q.attr.QPAccessFlags&verbs.AccessRemoteRead != 0 {
			q.readResponsesLocked(p)
		}
	case PktAtomic:
		for _, a := range q.rx.atomics {
			if a.ok && a.psn == p.PSN {
				q.atomicAckLocked(p, a.orig)
				return
			}
		}
	default:
		if p.Last {
			q.nakLocked(p, SynACK, psnAdd(q.rx.epsn, psnMask))
		}
	}
}

// ucReceiveLocked receives a UC packet. UC has no ACKs: a lost packet, a
// missing receive WR, a message too long or a bad target drops the whole
// message silently (XFER-09, XFER-26), and the receive WR stays posted.
func (q *QP) ucReceiveLocked(p *Packet) {
	r := &q.rx
	switch d := psnDiff(p.PSN, r.epsn); {
	case d < 0:
		q.traceLocked(trace.Record{Kind: trace.KindPacket, Name: "UC duplicate dropped", Why: "its PSN is behind the expected one"})
		return
	case d > 0:
		r.inMsg = false // packets were lost: the message in progress is gone
	}
	r.epsn = psnAdd(p.PSN, 1)
	if p.First {
		r.inMsg, r.off = false, 0
		switch p.Kind {
		case PktSend:
			if !q.takeRecvLocked() {
				q.traceLocked(trace.Record{Kind: trace.KindPacket, Name: "UC message dropped", Why: "no receive WR", Rule: "XFER-09"})
				return
			}
		case PktWrite:
			if q.attr.QPAccessFlags&verbs.AccessRemoteWrite == 0 {
				q.traceLocked(trace.Record{Kind: trace.KindPacket, Name: "UC message dropped", Why: "the QP's access flags", Rule: "XFER-14"})
				return
			}
			if why, rule := q.writeLengthLocked(p, p.DMALen); why != "" {
				q.traceLocked(trace.Record{Kind: trace.KindPacket, Name: "UC message dropped", Why: why, Rule: rule})
				return
			}
			if p.DMALen > 0 {
				if _, ok := q.cfg.Host.RemoteLocked(q, q.respPD(), p.RKey, p.RemoteAddr, p.DMALen, verbs.AccessRemoteWrite); !ok {
					q.traceLocked(trace.Record{Kind: trace.KindPacket, Name: "UC message dropped", Why: "rkey or range", Rule: "XFER-14"})
					return
				}
			}
			r.wAddr, r.wRKey, r.wLen = p.RemoteAddr, p.RKey, p.DMALen
		default:
			return
		}
		r.inMsg = true
	}
	if !r.inMsg {
		return
	}
	why, rule := "", ""
	switch {
	case p.Kind == PktSend:
		why, rule = q.sendLengthLocked(p)
	case !p.First:
		why, rule = q.writeLengthLocked(p, r.wLen-r.off)
	}
	if why != "" {
		r.inMsg = false
		q.traceLocked(trace.Record{Kind: trace.KindPacket, Name: "UC message dropped", Why: why, Rule: rule})
		return
	}
	switch p.Kind {
	case PktSend:
		if st := q.placeRecvLocked(p.Payload, uint64(r.off)); st != verbs.WCSuccess {
			r.inMsg = false
			q.traceLocked(trace.Record{Kind: trace.KindPacket, Name: "UC message dropped", Why: "does not fit or bad receive SGE", Rule: "XFER-06, XFER-26"})
			return
		}
	case PktWrite:
		if p.Last && p.Op == verbs.WRRDMAWriteWithImm && !q.takeRecvLocked() {
			r.inMsg = false
			q.traceLocked(trace.Record{Kind: trace.KindPacket, Name: "UC message dropped", Why: "WRITE_WITH_IMM without a receive WR", Rule: "XFER-12"})
			return
		}
		if len(p.Payload) > 0 {
			b, ok := q.cfg.Host.RemoteLocked(q, q.respPD(), r.wRKey, r.wAddr+uint64(r.off), uint32(len(p.Payload)), verbs.AccessRemoteWrite)
			if !ok {
				r.inMsg = false
				return
			}
			q.placeRemoteLocked(b, r.wRKey, r.wAddr+uint64(r.off), p.Payload)
		}
	}
	r.off += uint32(len(p.Payload))
	if !p.Last {
		return
	}
	r.inMsg = false
	var w verbs.WC
	switch {
	case p.Kind == PktWrite && p.Op == verbs.WRRDMAWriteWithImm:
		w = verbs.WC{Opcode: verbs.WCRecvRDMAWithImm, ByteLen: r.wLen, WCFlags: verbs.WCWithImm, ImmData: p.Imm, SrcQP: p.SrcQPN}
	case p.Kind == PktWrite:
		return
	default:
		w = verbs.WC{Opcode: verbs.WCRecv, ByteLen: r.off, SrcQP: p.SrcQPN}
		switch p.Op {
		case verbs.WRSendWithImm:
			w.WCFlags, w.ImmData = verbs.WCWithImm, p.Imm
		case verbs.WRSendWithInv:
			if !q.cfg.Host.InvalidateLocked(q.respPD(), p.Imm) {
				return
			}
			w.WCFlags, w.ImmData = verbs.WCWithInv, p.Imm
		}
	}
	q.completeRecvLocked(&w, p.SE)
}

// udReceiveLocked receives a UD datagram: the Q_Key must match (XFER-22),
// a receive WR must be there (XFER-09) and hold the 40-byte GRH plus the
// payload (XFER-21), or the datagram is dropped and the WR stays posted
// (XFER-06).
func (q *QP) udReceiveLocked(p *Packet) {
	if p.QKey != q.attr.QKey {
		q.traceLocked(trace.Record{Kind: trace.KindPacket, Name: "UD datagram dropped", Why: "Q_Key mismatch", Rule: "XFER-22"})
		return
	}
	if !q.takeRecvLocked() {
		q.traceLocked(trace.Record{Kind: trace.KindPacket, Name: "UD datagram dropped", Why: "no receive WR", Rule: "XFER-09"})
		return
	}
	sges, _ := q.recvSGEs()
	if verbs.SGEListLength(sges) < uint64(len(p.Payload))+grhLen {
		if q.init.SRQ != nil {
			// XFER-06 (sim default, rxe): a WR taken from an SRQ cannot
			// go back; it completes with REM_INV_REQ_ERR.
			q.traceLocked(trace.Record{Kind: trace.KindPacket, Name: "UD datagram too long", Why: "the SRQ receive WR fails", Rule: "XFER-06"})
			w := verbs.WC{Status: verbs.WCRemInvReqErr}
			q.completeRecvLocked(&w, p.SE)
			return
		}
		q.traceLocked(trace.Record{Kind: trace.KindPacket, Name: "UD datagram dropped", Why: "receive WR too small; it stays posted", Rule: "XFER-06"})
		return
	}
	var grh [grhLen]byte
	if p.Global {
		fillGRH(&grh, p, q.cfg.Host.PortLocked(q.attr.PortNum).Ethernet) // AV-05
	}
	st := q.placeRecvLocked(grh[:], 0)
	if st == verbs.WCSuccess {
		st = q.placeRecvLocked(p.Payload, grhLen)
	}
	if st != verbs.WCSuccess {
		w := verbs.WC{Status: st}
		q.completeRecvLocked(&w, true)
		q.SetErrorLocked()
		return
	}
	w := verbs.WC{Opcode: verbs.WCRecv, ByteLen: uint32(len(p.Payload)) + grhLen, SrcQP: p.SrcQPN, SLID: p.SLID, SL: p.SL}
	if p.Global {
		w.WCFlags |= verbs.WCGRH
	}
	if p.Op == verbs.WRSendWithImm {
		w.WCFlags |= verbs.WCWithImm
		w.ImmData = p.Imm
	}
	q.completeRecvLocked(&w, p.SE)
}
