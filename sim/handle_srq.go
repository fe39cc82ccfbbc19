package sim

import (
	"context"

	"github.com/verbsim/verbsim/sim/internal/qp"
	"github.com/verbsim/verbsim/verbs"
)

// SRQ is a shared receive queue (struct ibv_srq): receive work requests
// that every QP attached to it consumes in FIFO order (SRQ-08). It is a
// handle on the engine's SRQ; every method is safe to call from any
// goroutine.
// On a nil *SRQ every method returns EINVAL or zero values; see the package
// doc.
type SRQ struct{ s *qp.SRQ }

// newSRQ makes the handle of an engine SRQ and records it there.
func newSRQ(e *qp.SRQ) *SRQ {
	h := &SRQ{s: e}
	e.Handle = h
	return h
}

// eng returns the engine SRQ, nil for a nil handle.
func (s *SRQ) eng() *qp.SRQ {
	if s == nil {
		return nil
	}
	return s.s
}

// srqHandle maps an engine SRQ back to its handle; nil for nil.
func srqHandle(e *qp.SRQ) *SRQ {
	if e == nil {
		return nil
	}
	h, _ := e.Handle.(*SRQ)
	return h
}

// SRQContext returns the srq_context given at creation (ibv_srq.srq_context).
func (s *SRQ) SRQContext() any { return s.eng().Context() }

// Context returns the device context the SRQ was created through
// (ibv_srq.context): that of its PD. It is not the srq_context, which is
// SRQContext, and which Context returned until the handles of issue #9
// (see CQ.Context).
func (s *SRQ) Context() *Context { return s.PD().context() }

// PD returns the protection domain the SRQ was created in (ibv_srq.pd).
func (s *SRQ) PD() *PD {
	pd, _ := s.eng().PD().(*PD)
	return pd
}

// Len returns the number of receive WRs waiting in the SRQ.
func (s *SRQ) Len() int { return s.eng().Len() }

// PostRecv posts receive WRs to the SRQ (ibv_post_srq_recv), with the rules
// of ibv_post_recv (SRQ-02): in order, stopping at the first bad one; EINVAL
// above max_sge, ENOMEM when full. It returns how many were posted.
func (s *SRQ) PostRecv(wrs []verbs.RecvWR) (n int, err error) { return s.eng().PostRecv(wrs) }

// Take consumes the oldest receive WR as a QP receiving a message would
// (SRQ-08), and returns its wr_id and SGEs; ok is false when the SRQ is
// empty or destroyed. It is a simulator control with no verbs counterpart,
// for tests that drive an SRQ without traffic; the limit event fires as on
// a real consumption (SRQ-04, SRQ-11).
func (s *SRQ) Take() (wrid uint64, sges []verbs.SGE, ok bool) { return s.eng().Take() }

// Modify changes the SRQ (ibv_modify_srq), all or nothing (SRQ-06):
//   - SRQLimit arms the limit event with attr.SRQLimit (0 disarms); a limit
//     above the capacity is EINVAL.
//   - SRQMaxWR resizes, only on a device with IBV_DEVICE_SRQ_RESIZE, never
//     below the WRs queued or the limit armed, never above max_srq_wr
//     (SRQ-07); EINVAL otherwise. The queued WRs keep their order.
//
// Unknown mask bits are EINVAL.
func (s *SRQ) Modify(attr *verbs.SRQAttr, mask verbs.SRQAttrMask) (err error) {
	return s.eng().Modify(attr, mask)
}

// Query returns the SRQ's attributes (ibv_query_srq). SRQLimit is 0
// whenever the limit is not armed: never armed, or already fired (SRQ-05).
func (s *SRQ) Query() (verbs.SRQAttr, error) { return s.eng().Query() }

// GetSRQNum is ibv_get_srq_num: the SRQ number of an XRC SRQ, which a
// remote XRC sender names (XRC-05). On a basic SRQ it returns EOPNOTSUPP,
// as rxe (libibverbs' default operation) and mlx4 do; mlx5 would return its
// number (QUERY-07). A destroyed SRQ is EINVAL.
func (s *SRQ) GetSRQNum() (uint32, error) { return s.eng().GetSRQNum() }

// XRC reports whether the SRQ is an XRC SRQ (IBV_SRQT_XRC).
func (s *SRQ) XRC() bool { return s.eng().XRC() }

// Destroy destroys the SRQ, waiting without a deadline for the acks of its
// async events already read. See DestroyContext.
func (s *SRQ) Destroy() error { return s.eng().Destroy() }

// DestroyContext destroys the SRQ (ibv_destroy_srq): EBUSY while a QP is
// attached (SRQ-10), then a wait, bounded by ctx, for the acks of the SRQ's
// async events already read (ASYNC-05). EINVAL on a destroyed SRQ.
func (s *SRQ) DestroyContext(ctx context.Context) (err error) { return s.eng().DestroyContext(ctx) }

// InjectError is a catastrophic SRQ error, a fault no verb causes (a
// simulator control; Fabric.InjectSRQError is the same, checked against the
// fabric):
// IBV_EVENT_SRQ_ERR names the SRQ (ASYNC-15), and then every QP receiving
// through it takes the path of a fatal QP error (ASYNC-08): ERR, both
// queues flushed, IBV_EVENT_QP_FATAL (unless the profile raises no QP
// events, ASYNC-11). The SRQ's own receive WRs stay queued (FLUSH-07); what
// else a real adapter lets a failed SRQ do is not documented, and the
// manuals' advice is to destroy it. On a destroyed SRQ it returns EINVAL.
func (s *SRQ) InjectError() error { return s.eng().InjectError() }
