package ops

import (
	"errors"
	"syscall"

	"github.com/verbsim/verbsim/conformance/model"
	"github.com/verbsim/verbsim/verbs"
	"pgregory.net/rapid"
)

// udNotOfTransport posts, alone on a UD QP in RTS, a request whose opcode
// UD does not take (QP-33): an RDMA WRITE, READ or atomic to the QP itself.
// Under reading A the post refuses it with EINVAL and nothing changes;
// under reading B (TransportOpLocQPOp) it is posted and the model fails it
// with LOC_QP_OP_ERR, the QP going to ERR (FLUSH-10 B; a profile whose UD
// send errors lead to SQE is not modelled, and this action does nothing
// there).
func (r *trafficRun) udNotOfTransport(t *rapid.T) {
	p := r.prof.Readings
	if p.TransportOpLocQPOp && !p.NoSQE {
		return
	}
	i, ok := r.pick(t, func(i int) bool { return r.qps[i].typ == verbs.QPTypeUD && r.m.State(i) == verbs.QPStateRTS })
	if !ok {
		return
	}
	if room, _ := r.m.Room(i); room.Min < 1 {
		return
	}
	q := r.qps[i]
	op := rapid.SampledFrom([]verbs.WROpcode{verbs.WRRDMAWrite, verbs.WRRDMARead, verbs.WRAtomicFetchAndAdd}).Draw(t, "opcode UD does not take")
	id := r.nextWRID()
	s := model.Send{WRID: id, Op: op, Len: 8, Dest: -1, Signaled: rapid.IntRange(0, 3).Draw(t, "signaled") > 0}
	ah, err := r.ah(i, q.dev)
	r.fatal(err)
	wr := verbs.SendWR{WRID: id, Opcode: op, SGList: []verbs.SGE{{Addr: q.mr.Addr(), Length: 8, LKey: q.mr.LKey()}},
		RemoteAddr: q.mr.Addr(), RKey: q.mr.RKey(), CompareAdd: 1, AH: ah, RemoteQPN: q.q.Num(), RemoteQKey: q.qkey}
	if s.Signaled {
		wr.Flags = verbs.SendSignaled
	}
	r.settle() // let nothing else be in flight when the QP fails
	n, err := q.q.PostSend([]verbs.SendWR{wr})
	r.step("qp %d: post %v on UD: %d accepted, %v", i, op, n, err)
	if !p.TransportOpLocQPOp {
		if n != 0 || !errors.Is(err, syscall.EINVAL) {
			r.t.Fatalf("qp %d: %v on UD: %d posted, %v; want EINVAL (QP-33 reading A)", i, op, n, err)
		}
		return
	}
	r.checkPost(i, false, 1, n, err)
	r.fatal(r.m.PostSend(i, []model.Send{s}))
	r.settleIfNeeded()
}
