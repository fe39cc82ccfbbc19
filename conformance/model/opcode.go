package model

import (
	"fmt"

	"github.com/verbsim/verbsim/verbs"
)

// A request whose opcode UD does not take (QP-33): RDMA, atomics,
// LOCAL_INV and SEND_WITH_INV on a UD QP. Under reading A the post refuses
// it (EINVAL) and the model is not told. Under reading B
// (Readings.TransportOpLocQPOp, rxe) it is posted and completes with
// LOC_QP_OP_ERR when it executes, and the QP goes to ERR under FLUSH-10 B
// (NoSQE); SQE, where the other FLUSH-10 reading takes it, is not modelled.

// checkNotOfUD checks that the model follows s, posted on UD QP q with n-1
// others.
func (m *Traffic) checkNotOfUD(q int, s Send, n int) error {
	switch {
	case s.Op == verbs.WRBindMW:
		return fmt.Errorf("qp %d: BIND_MW on UD is refused at post under both readings (QP-33), not modelled", q)
	case !m.r.TransportOpLocQPOp:
		return fmt.Errorf("qp %d: %v on UD is refused at post (QP-33 reading A), not modelled", q, s.Op)
	case !m.r.NoSQE:
		return fmt.Errorf("qp %d: %v on UD fails into SQE (FLUSH-10 A), not modelled", q, s.Op)
	case n != 1:
		return fmt.Errorf("qp %d: %v on UD is modelled posted alone", q, s.Op)
	}
	if _, dup := m.wrs[s.WRID]; dup {
		return fmt.Errorf("wr_id %#x is already outstanding", s.WRID)
	}
	return nil
}

// notOfUD executes msg, a request whose opcode UD does not take, on UD QP
// t in RTS: it fails with LOC_QP_OP_ERR and takes t to ERR, flushing the
// rest (QP-33 B, FLUSH-10 B). In ERR it is flushed like any request
// (FLUSH-05).
func (m *Traffic) notOfUD(t *tqp, msg *tmsg) {
	if t.state == verbs.QPStateErr {
		msg.fate = fateFlushed
		complete(msg.wr, m.flushDue(), verbs.WCWRFlushErr)
		return
	}
	msg.fate = fateFailed
	m.failRequester(t, msg, m.sendDue(), verbs.WCLocQPOpErr)
}
