package conformance

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/verbsim/verbsim/verbs"
)

// An opcode the QP's transport does not take (QP-33): RDMA, atomics,
// LOCAL_INV and SEND_WITH_INV on UD, READ and atomics on UC. Reading A (efa,
// hns, the kernel's post path): ibv_post_send refuses it with EINVAL and
// the QP goes on. Reading B (Profile.TransportOpLocQPOp: rxe, whose
// provider posts it unchecked; mlx5's post path does not check either):
// the post takes it and it completes with LOC_QP_OP_ERR, after which the
// QP is in SQE, or in ERR under Profile.NoSQE (FLUSH-10). BIND_MW on UD is
// EINVAL under both: rxe's provider refuses it at post.

// qpOpcodeCases are the cases of qp_opcode.go.
var qpOpcodeCases = []Case{
	{"QP-33", "an RDMA or atomic opcode on UD, a READ or atomic on UC: EINVAL at post, or LOC_QP_OP_ERR by the reading", opcodeNotOfTransport},
}

// opNotOfTransport is a request of an opcode transport typ does not take.
type opNotOfTransport struct {
	typ verbs.QPType
	op  verbs.WROpcode
}

// opsNotOfTransport are the requests opcodeNotOfTransport posts.
var opsNotOfTransport = []opNotOfTransport{
	{verbs.QPTypeUD, verbs.WRRDMAWrite}, {verbs.QPTypeUD, verbs.WRRDMAWriteWithImm}, {verbs.QPTypeUD, verbs.WRRDMARead},
	{verbs.QPTypeUD, verbs.WRAtomicCmpAndSwp}, {verbs.QPTypeUD, verbs.WRAtomicFetchAndAdd}, {verbs.QPTypeUD, verbs.WRAtomicWrite},
	{verbs.QPTypeUD, verbs.WRSendWithInv}, {verbs.QPTypeUD, verbs.WRLocalInv}, {verbs.QPTypeUD, verbs.WRBindMW},
	{verbs.QPTypeUC, verbs.WRRDMARead}, {verbs.QPTypeUC, verbs.WRAtomicCmpAndSwp}, {verbs.QPTypeUC, verbs.WRAtomicFetchAndAdd},
	{verbs.QPTypeUC, verbs.WRAtomicWrite},
}

// lateOpcode reports whether, under p, a request of op on a QP of type typ,
// which the transport does not take, is posted and fails as it executes
// (QP-33 reading B) rather than refused at post.
func lateOpcode(p verbs.Readings, typ verbs.QPType, op verbs.WROpcode) bool {
	return p.TransportOpLocQPOp && !(op == verbs.WRBindMW && typ == verbs.QPTypeUD)
}

// opcodeNotOfTransport posts each request of opsNotOfTransport on a
// fresh pair and checks the post, the completion and the QP's state the
// profile's reading predicts.
func opcodeNotOfTransport(t *tester, e *env) {
	w := newWire(t, e)
	for i, c := range opsNotOfTransport {
		a, b := w.connect(c.typ, w.opts())
		id := uint64(i + 1)
		r := rdmaWR(id, c.op, w.b, 0, a.s.sge(0, 8))
		switch c.op {
		case verbs.WRSendWithInv, verbs.WRLocalInv:
			r.Imm = w.b.mr.RKey()
		case verbs.WRAtomicCmpAndSwp, verbs.WRAtomicFetchAndAdd:
			r.CompareAdd = 1
		}
		if c.typ == verbs.QPTypeUD {
			r = datagram(r, w.ah(w.a, w.b, false), b)
		}
		what := fmt.Sprintf("%v on %v", c.op, c.typ)
		n, err := a.q.PostSend([]verbs.SendWR{r})
		if !lateOpcode(e.Profile, c.typ, c.op) {
			if n != 0 || !errors.Is(err, syscall.EINVAL) {
				t.Errorf("%s: %d posted, %v; want 0 and EINVAL (QP-33 reading A)", what, n, err)
			}
			a.wantState(what+", refused", verbs.QPStateRTS)
			continue
		}
		if n != 1 || err != nil {
			t.Errorf("%s: %d posted, %v; want it posted, to fail as it executes (QP-33 reading B)", what, n, err)
			continue
		}
		a.want(what, w.await(a.scq, 1, what)[0], id, verbs.WCLocQPOpErr)
		want := verbs.QPStateSQE
		if e.Profile.NoSQE {
			want = verbs.QPStateErr
		}
		a.wantState(what+", failed (FLUSH-10)", want)
	}
}
