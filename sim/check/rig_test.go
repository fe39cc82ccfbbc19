package check_test

import (
	"context"
	"io"
	"runtime"
	"testing"

	"github.com/verbsim/verbsim/internal/simhook"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/check"
	"github.com/verbsim/verbsim/verbs"
)

// rig is a fabric with the sanitizer on, every check, and what a case
// builds on it: two adapters, "a" and "b", a context and a PD on each.
type rig struct {
	t        *testing.T
	f        *sim.Fabric
	ctx      [2]*sim.Context
	pd       [2]*sim.PD
	ends     []*end // the pairs' ends, which cleanPair destroys
	findings []check.Finding
}

// newRig makes the rig in mode (sim.Auto or sim.Manual).
func newRig(t *testing.T, mode sim.Mode) *rig { return newRigWith(t, mode, check.Config{}) }

// newRigWith is newRig with the sanitizer's configuration cc, whose
// findings the rig collects.
func newRigWith(t *testing.T, mode sim.Mode, cc check.Config) *rig {
	r := &rig{t: t}
	cc.Output = io.Discard
	cc.Report = func(f check.Finding) { r.findings = append(r.findings, f) }
	f, err := sim.NewFabric(sim.Config{Mode: mode, Devices: []sim.DeviceConfig{{Name: "a"}, {Name: "b"}}, Check: &cc})
	if err != nil {
		t.Fatal(err)
	}
	r.f = f
	for i, d := range f.Devices() {
		if r.ctx[i], err = d.Open(); err != nil {
			t.Fatal(err)
		}
		if r.pd[i], err = r.ctx[i].AllocPD(); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// must fails the test on err.
func (r *rig) must(err error) {
	r.t.Helper()
	if err != nil {
		r.t.Fatal(err)
	}
}

// cancelled is a context that has ended: a blocking verb given it starts
// its wait, which the sanitizer looks at, and returns at once.
func cancelled() context.Context {
	c, cancel := context.WithCancel(context.Background())
	cancel()
	return c
}

// cq makes a CQ of cqe entries on side i, with channel ch (nil: none).
func (r *rig) cq(i, cqe int, ch *sim.CompChannel) *sim.CQ {
	r.t.Helper()
	q, err := r.ctx[i].CreateCQ(cqe, i, ch, 0)
	r.must(err)
	return q
}

// channel makes a completion channel on side i.
func (r *rig) channel(i int) *sim.CompChannel {
	r.t.Helper()
	ch, err := r.ctx[i].CreateCompChannel()
	r.must(err)
	return ch
}

// end is one side of a connected RC pair: its QP, CQ and a registered
// buffer.
type end struct {
	qp  *sim.QP
	cq  *sim.CQ
	mr  *sim.MR
	buf []byte
}

// pair connects an RC QP on a to one on b, each with its own CQ of 64 and
// a 64-byte buffer, with capacities c and sq_sig_all sigAll.
func (r *rig) pair(c verbs.QPCap, sigAll bool) (a, b *end) {
	r.t.Helper()
	ends := [2]*end{}
	for i := range ends {
		e := &end{cq: r.cq(i, 64, nil), buf: make([]byte, 64)}
		var err error
		e.qp, err = r.pd[i].CreateQP(sim.QPInitAttr{Context: "qp", SendCQ: e.cq, RecvCQ: e.cq, Cap: c,
			Type: verbs.QPTypeRC, SQSigAll: sigAll})
		r.must(err)
		e.mr, err = r.pd[i].RegMR(e.buf, verbs.AccessLocalWrite|verbs.AccessRemoteWrite|verbs.AccessMWBind)
		r.must(err)
		ends[i] = e
	}
	r.must(sim.Connect(ends[0].qp, ends[1].qp, sim.ConnectOptions{}))
	r.ends = append(r.ends, ends[0], ends[1])
	return ends[0], ends[1]
}

// smallCap is the capacity of a pair's QPs.
var smallCap = verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}

// sge names e's whole buffer.
func (e *end) sge() []verbs.SGE {
	return []verbs.SGE{{Addr: e.mr.Addr(), Length: uint32(len(e.buf)), LKey: e.mr.LKey()}}
}

// send posts a signaled SEND of e's buffer.
func (e *end) send(r *rig, id uint64, flags verbs.SendFlags) {
	r.t.Helper()
	_, err := e.qp.PostSend([]verbs.SendWR{{WRID: id, Opcode: verbs.WRSend, Flags: flags, SGList: e.sge()}})
	r.must(err)
}

// recv posts a receive into e's buffer.
func (e *end) recv(r *rig, id uint64) {
	r.t.Helper()
	_, err := e.qp.PostRecv([]verbs.RecvWR{{WRID: id, SGList: e.sge()}})
	r.must(err)
}

// drain polls e's CQ until it is empty and returns what it held.
func (e *end) drain(r *rig) []verbs.WC {
	var out []verbs.WC
	wcs := make([]verbs.WC, 8)
	for {
		n, err := e.cq.Poll(wcs)
		r.must(err)
		if n == 0 {
			return out
		}
		out = append(out, wcs[:n]...)
	}
}

// event raises one completion event on q (armed, on a channel) by pushing
// a completion.
func (r *rig) event(q *sim.CQ) {
	r.t.Helper()
	r.must(q.ReqNotify(false))
	_, err := q.Push(verbs.WC{WRID: 1, Opcode: verbs.WCRecv}, false)
	r.must(err)
}

// cleanCQ destroys q and ch and closes the rig's contexts.
func cleanCQ(r *rig, q *sim.CQ, ch *sim.CompChannel) {
	r.t.Helper()
	r.must(q.Destroy())
	r.must(ch.Destroy())
	tidy(r)
}

// cleanPair destroys the pairs' QPs, CQs and MRs and closes the rig's
// contexts.
func cleanPair(r *rig) {
	r.t.Helper()
	ends := r.ends
	for _, e := range ends {
		if e.qp != nil {
			r.must(e.qp.Destroy())
		}
	}
	for _, e := range ends {
		r.must(e.cq.Destroy())
		if e.mr != nil {
			r.must(e.mr.Dereg())
		}
	}
	tidy(r)
}

// tidy deallocates the rig's PDs and closes its contexts, so that a
// correct program leaves nothing behind.
func tidy(r *rig) {
	r.t.Helper()
	for i := range r.ctx {
		r.must(r.pd[i].Dealloc())
		r.must(r.ctx[i].Close())
	}
}

// waiting reports whether a goroutine waits in the rig's fabric.
func waiting(r *rig) bool {
	d := simhook.DomainOf(r.f)
	d.Lock()
	defer d.Unlock()
	return len(d.Waiters()) > 0
}

func runtimeGosched() { runtime.Gosched() }
