package qp

import (
	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/verbs"
)

// The notes a QP makes for a checker (domain.Note), and what a checker
// reads of a QP or an SRQ. Every note is made only while the domain has a
// checker (domain.Domain.Checking), so that the paths below pay one test
// without one.

// noteLocked tells the checker of n, about q.
func (q *QP) noteLocked(n domain.Note) {
	n.Obj = q
	q.d.Note(&n)
}

// noteSentLocked notes that the send WR at seq is about to have its first
// bytes read for the wire (QP-36).
func (q *QP) noteSentLocked(e *wqe, seq uint64) {
	if e.flags&verbs.SendInline != 0 {
		return // copied at post (QP-35)
	}
	switch e.op {
	case verbs.WRSend, verbs.WRSendWithImm, verbs.WRSendWithInv, verbs.WRRDMAWrite, verbs.WRRDMAWriteWithImm:
		q.noteLocked(domain.Note{Kind: domain.NoteSent, Seq: seq, WRID: e.wrid, SGEs: e.sge})
	}
}

// noteDoneLocked notes that the send WR at seq has finished with st.
func (q *QP) noteDoneLocked(e *wqe, seq uint64, st verbs.WCStatus) {
	q.noteLocked(domain.Note{Kind: domain.NoteDone, Seq: seq, WRID: e.wrid, SGEs: e.sge, Status: st})
}

// recvQueueLocked returns the object whose queue the held receive WR came
// from (q, or the SRQ) and its place there.
func (q *QP) recvQueueLocked() (any, uint64) {
	if s := q.recvSRQ(); s != nil {
		return s, q.rx.srqSeq
	}
	return q, q.rq.done
}

// notePlacingLocked notes that a message's first bytes are about to be
// written to the held receive WR.
func (q *QP) notePlacingLocked() {
	obj, seq := q.recvQueueLocked()
	sges, wrid := q.recvSGEs()
	q.d.Note(&domain.Note{Kind: domain.NotePlacing, Obj: obj, With: q, Seq: seq, WRID: wrid, SGEs: sges})
}

// noteReceivedLocked notes that the held receive WR completes with w.
func (q *QP) noteReceivedLocked(w *verbs.WC) {
	obj, seq := q.recvQueueLocked()
	sges, _ := q.recvSGEs()
	q.d.Note(&domain.Note{Kind: domain.NoteReceived, Obj: obj, With: q, Seq: seq, WRID: w.WRID,
		SGEs: sges, Status: w.Status, N: int(w.ByteLen)})
}

// View is what a checker reads of a QP under the domain lock.
type View struct {
	Live   bool
	Num    uint32
	Type   verbs.QPType
	State  verbs.QPState
	Cap    verbs.QPCap // the real capacities (QP-02)
	SigAll bool        // sq_sig_all
	SendCQ CQ          // nil for none
	RecvCQ CQ          // nil for none (an XRC target's go to its SRQs' CQs)
	SRQ    *SRQ
	PD     any
	// Dest is the peer of a connected QP once it is past INIT: its
	// address vector and QP number.
	Dest    verbs.AHAttr
	DestQPN uint32
}

// ViewLocked returns what a checker reads of q.
//
// Precondition: the domain lock is held.
func (q *QP) ViewLocked() View {
	if q == nil {
		return View{}
	}
	v := View{Live: q.life == live, Num: q.num, Type: q.typ, State: q.state, Cap: q.cap,
		SigAll: q.init.SQSigAll, SRQ: q.init.SRQ, PD: q.cfg.PD, Dest: q.attr.AHAttr, DestQPN: q.attr.DestQPNum}
	if !isNil(q.init.SendCQ) {
		v.SendCQ = q.init.SendCQ
	}
	if !isNil(q.init.RecvCQ) {
		v.RecvCQ = q.init.RecvCQ
	}
	return v
}

// Pending is an outstanding work request, as OutstandingLocked lists it.
type Pending struct {
	Recv bool
	Seq  uint64
	WRID uint64
	Op   verbs.WROpcode // sends only
	SGEs []verbs.SGE    // the caller must not keep them
	RKey uint32         // the remote key of an RDMA or atomic request
}

// OutstandingLocked calls fn for each work request of q posted and not
// yet completed, sends first.
//
// Precondition: the domain lock is held.
func (q *QP) OutstandingLocked(fn func(p Pending)) {
	if q == nil || q.life != live {
		return
	}
	for seq := q.sq.done; seq < q.sq.tail; seq++ {
		e := q.sq.slot(seq)
		p := Pending{Seq: seq, WRID: e.wrid, Op: e.op, SGEs: e.sge}
		if e.op == verbs.WRRDMAWrite || e.op == verbs.WRRDMAWriteWithImm || e.op == verbs.WRRDMARead || isRdAtomic(e.op) {
			p.RKey = e.rkey
		}
		if e.flags&verbs.SendInline != 0 {
			p.SGEs = nil // read at post; no key is used after
		}
		fn(p)
	}
	if q.init.SRQ == nil {
		for seq := q.rq.done; seq < q.rq.tail; seq++ {
			e := q.rq.rslot(seq)
			fn(Pending{Recv: true, Seq: seq, WRID: e.wrid, SGEs: e.sge})
		}
	}
}

// MaxWRLocked returns the SRQ's capacity (max_wr).
//
// Precondition: the domain lock is held.
func (s *SRQ) MaxWRLocked() int {
	if s == nil {
		return 0
	}
	return s.q.depth
}

// LiveLocked reports whether the SRQ is neither destroyed nor waiting for
// acks to finish being destroyed.
//
// Precondition: the domain lock is held.
func (s *SRQ) LiveLocked() bool { return s != nil && s.life == live }

// CQLocked returns the CQ of an XRC SRQ, nil for a basic SRQ.
//
// Precondition: the domain lock is held.
func (s *SRQ) CQLocked() CQ {
	if s == nil || isNil(s.cfg.CQ) {
		return nil
	}
	return s.cfg.CQ
}

// OutstandingLocked calls fn for each receive work request queued on s.
//
// Precondition: the domain lock is held.
func (s *SRQ) OutstandingLocked(fn func(p Pending)) {
	if s == nil || s.life != live {
		return
	}
	for seq := s.q.done; seq < s.q.tail; seq++ {
		e := s.q.rslot(seq)
		fn(Pending{Recv: true, Seq: seq, WRID: e.wrid, SGEs: e.sge})
	}
}
