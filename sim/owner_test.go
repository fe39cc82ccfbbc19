package sim_test

import (
	"errors"
	"sync"
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// ownerWorld is what the ownership tests combine: two devices on one
// fabric, a second context on device a, and a second fabric.
type ownerWorld struct {
	f, other    *sim.Fabric
	a, a2, b, x *sim.Context // a and a2 on device a; b on device b; x on the other fabric
	pd          *sim.PD      // in a
	cqA         *sim.CQ      // in a
	cqA2, cqB   *sim.CQ      // in a2, b
	cqX         *sim.CQ      // in x
	srqA2, srqX *sim.SRQ     // in a PD of a2, of x
	pdA2, pdB   *sim.PD
	pdX         *sim.PD
	chanA2, chX *sim.CompChannel
	chB         *sim.CompChannel
}

func newOwnerWorld(t *testing.T) *ownerWorld {
	t.Helper()
	w := &ownerWorld{}
	var da, db *sim.Device
	w.f, da, db = twoDevices(t, sim.Config{})
	w.other = fabric(t, sim.Config{})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	open := func(d *sim.Device) *sim.Context {
		c, err := d.Open()
		must(err)
		return c
	}
	w.a, w.a2, w.b, w.x = open(da), open(da), open(db), open(w.other.Devices()[0])
	pd := func(c *sim.Context) *sim.PD {
		p, err := c.AllocPD()
		must(err)
		return p
	}
	w.pd, w.pdA2, w.pdB, w.pdX = pd(w.a), pd(w.a2), pd(w.b), pd(w.x)
	cq := func(c *sim.Context) *sim.CQ {
		q, err := c.CreateCQ(16, nil, nil, 0)
		must(err)
		return q
	}
	w.cqA, w.cqA2, w.cqB, w.cqX = cq(w.a), cq(w.a2), cq(w.b), cq(w.x)
	srq := func(p *sim.PD) *sim.SRQ {
		s, err := p.CreateSRQ(sim.SRQInitAttr{Attr: verbs.SRQAttr{MaxWR: 4, MaxSGE: 1}})
		must(err)
		return s
	}
	w.srqA2, w.srqX = srq(w.pdA2), srq(w.pdX)
	ch := func(c *sim.Context) *sim.CompChannel {
		h, err := c.CreateCompChannel()
		must(err)
		return h
	}
	w.chanA2, w.chB, w.chX = ch(w.a2), ch(w.b), ch(w.x)
	return w
}

// TestCreateQPRejectsObjectsOfAnotherOwner: ibv_create_qp names its CQs
// and SRQ by handles of the caller's context, so a CQ or SRQ of another
// context, device or fabric is EINVAL, and nothing changes: the foreign
// objects hold no reference, the PD no child.
func TestCreateQPRejectsObjectsOfAnotherOwner(t *testing.T) {
	w := newOwnerWorld(t)
	for name, attr := range map[string]sim.QPInitAttr{
		"send CQ of another fabric":  {SendCQ: w.cqX, RecvCQ: w.cqA},
		"recv CQ of another fabric":  {SendCQ: w.cqA, RecvCQ: w.cqX},
		"send CQ of another device":  {SendCQ: w.cqB, RecvCQ: w.cqA},
		"recv CQ of another context": {SendCQ: w.cqA, RecvCQ: w.cqA2},
		"SRQ of another fabric":      {SendCQ: w.cqA, RecvCQ: w.cqA, SRQ: w.srqX},
		"SRQ of another context":     {SendCQ: w.cqA, RecvCQ: w.cqA, SRQ: w.srqA2},
	} {
		attr.Type = verbs.QPTypeRC
		attr.Cap = verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4}
		q, err := w.pd.CreateQP(attr)
		if !errors.Is(err, syscall.EINVAL) {
			t.Errorf("%s: CreateQP = %p, %v; want EINVAL", name, q, err)
		}
	}
	for _, c := range []*sim.CQ{w.cqA, w.cqA2, w.cqB, w.cqX} {
		if refs := c.Snapshot().Refs; refs != 0 {
			t.Errorf("a CQ holds %d references after the failed creates", refs)
		}
	}
	for _, s := range []*sim.SRQ{w.srqA2, w.srqX} {
		if err := s.Destroy(); err != nil {
			t.Errorf("SRQ destroy after the failed creates: %v", err)
		}
	}
	if err := w.pd.Dealloc(); err != nil {
		t.Errorf("PD dealloc after the failed creates: %v", err)
	}
}

// TestSRQOfAnotherPD pins the decision of docs/srq.md: a QP may take its
// receives from an SRQ of another PD of the same context. The kernel's
// create_qp and the providers (rxe_qp_chk_init, rxe_qp_from_init) never
// compare the two PDs, so real verbs accept it; PD-03 does not reach it.
func TestSRQOfAnotherPD(t *testing.T) {
	w := newOwnerWorld(t)
	other, err := w.a.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	srq, err := other.CreateSRQ(sim.SRQInitAttr{Attr: verbs.SRQAttr{MaxWR: 4, MaxSGE: 1}})
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range []verbs.QPType{verbs.QPTypeRC, verbs.QPTypeUD} {
		q, err := w.pd.CreateQP(sim.QPInitAttr{SendCQ: w.cqA, RecvCQ: w.cqA, SRQ: srq, Type: typ,
			Cap: verbs.QPCap{MaxSendWR: 4}})
		if err != nil {
			t.Fatalf("%v QP with an SRQ of another PD: %v", typ, err)
		}
		if err := srq.Destroy(); !errors.Is(err, syscall.EBUSY) {
			t.Errorf("SRQ destroy while a QP uses it: %v, want EBUSY (SRQ-10)", err)
		}
		if err := q.Destroy(); err != nil {
			t.Fatal(err)
		}
	}
	if err := srq.Destroy(); err != nil {
		t.Fatal(err)
	}
	if err := other.Dealloc(); err != nil {
		t.Fatal(err)
	}
}

// TestForeignCQRace: before CreateQP checked owners, a QP of one fabric
// pushed its completions into a CQ of another under the wrong lock, which
// the race detector reported (cq push against cq poll). Run with -race.
func TestForeignCQRace(t *testing.T) {
	f, a, b := rcPair(t, sim.Config{}, sim.ConnectOptions{})
	x := newOwnerWorld(t)
	q, err := a.pd.CreateQP(sim.QPInitAttr{SendCQ: x.cqX, RecvCQ: a.cq, Type: verbs.QPTypeRC,
		Cap: verbs.QPCap{MaxSendWR: 64, MaxRecvWR: 64, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if errors.Is(err, syscall.EINVAL) {
		return // refused, as it must be
	}
	t.Errorf("CreateQP with a send CQ of another fabric: %v, want EINVAL", err)
	if err != nil {
		return
	}
	peer, err := b.pd.CreateQP(sim.QPInitAttr{SendCQ: b.cq, RecvCQ: b.cq, Type: verbs.QPTypeRC,
		Cap: verbs.QPCap{MaxSendWR: 64, MaxRecvWR: 64, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Connect(q, peer, sim.ConnectOptions{}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		buf := make([]verbs.WC, 4)
		for {
			select {
			case <-stop:
				return
			default:
				x.cqX.Poll(buf)
			}
		}
	})
	for i := range 20 {
		peer.PostRecv([]verbs.RecvWR{{WRID: uint64(i), SGList: []verbs.SGE{b.sge(0, 8)}}})
		q.PostSend([]verbs.SendWR{{WRID: uint64(i), Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(0, 8)}}})
		f.Stabilize()
	}
	close(stop)
	wg.Wait()
}

// TestCreateCQRejectsChannelOfAnotherContext: a channel made through
// another context (of the same device, another device or another fabric)
// is EINVAL and changes nothing; before the check, a CQ of context b could
// use a channel of context a, and closing a then succeeded while the CQ
// still delivered into the channel.
func TestCreateCQRejectsChannelOfAnotherContext(t *testing.T) {
	w := newOwnerWorld(t)
	for name, ch := range map[string]*sim.CompChannel{
		"another context": w.chanA2, "another device": w.chB, "another fabric": w.chX,
	} {
		if q, err := w.a.CreateCQ(4, nil, ch, 0); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("CreateCQ with a channel of %s = %p, %v; want EINVAL", name, q, err)
		}
		if refs := ch.Refs(); refs != 0 {
			t.Errorf("channel of %s: %d CQs after the failed create", name, refs)
		}
	}
	// The channel's own context may use it, and then cannot close.
	q, err := w.a2.CreateCQ(4, nil, w.chanA2, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.a2.Close(); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("closing the context whose CQ uses its channel: %v, want EBUSY", err)
	}
	if err := q.Destroy(); err != nil {
		t.Fatal(err)
	}
}

// TestConnectRejectsQPsOfAnotherFabric: two QPs of different fabrics
// cannot reach each other; Connect used to bring both to RTS anyway. It is
// EINVAL now, and both QPs stay in RESET.
func TestConnectRejectsQPsOfAnotherFabric(t *testing.T) {
	w := newOwnerWorld(t)
	mk := func(pd *sim.PD, cq *sim.CQ) *sim.QP {
		q, err := pd.CreateQP(sim.QPInitAttr{SendCQ: cq, RecvCQ: cq, Type: verbs.QPTypeRC, Cap: verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4}})
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	a, x := mk(w.pd, w.cqA), mk(w.pdX, w.cqX)
	if err := sim.Connect(a, x, sim.ConnectOptions{}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Connect across fabrics: %v, want EINVAL", err)
	}
	if a.State() != verbs.QPStateReset || x.State() != verbs.QPStateReset {
		t.Errorf("states after the refused Connect: %v, %v; want RESET", a.State(), x.State())
	}
	// Two devices of one fabric still connect.
	b := mk(w.pdB, w.cqB)
	if err := sim.Connect(a, b, sim.ConnectOptions{}); err != nil {
		t.Errorf("Connect across devices of one fabric: %v", err)
	}
}

// TestFaultsOnDestroyedQP: ForceStatus and InjectFatal on a destroyed QP
// are EINVAL, like every verb on a destroyed object; they used to return
// nil and do nothing.
func TestFaultsOnDestroyedQP(t *testing.T) {
	f, a, _ := rcPair(t, sim.Config{}, sim.ConnectOptions{})
	if err := a.q.Destroy(); err != nil {
		t.Fatal(err)
	}
	if err := f.ForceStatus(a.q, 1, false, verbs.WCRemOpErr); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("ForceStatus on a destroyed QP: %v, want EINVAL", err)
	}
	if err := f.InjectFatal(a.q); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("InjectFatal on a destroyed QP: %v, want EINVAL", err)
	}
	if err := f.InjectFatal(nil); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("InjectFatal(nil): %v, want EINVAL", err)
	}
}

// TestUDSendWithAHOfAnotherFabric: a UD post naming an AH of another
// fabric fails with EINVAL and posts nothing (AV-04), and the check reads
// nothing the AH's own fabric guards: under -race, destroying the AH on its
// fabric during the post used to be reported (the engine read the AH's
// destroyed flag under the wrong lock).
func TestUDSendWithAHOfAnotherFabric(t *testing.T) {
	f, da, _ := twoDevices(t, sim.Config{})
	a := newEnd(t, da, verbs.QPTypeUD, 1<<10)
	if err := sim.ReadyUD(a.q, 1); err != nil {
		t.Fatal(err)
	}
	w := newOwnerWorld(t)
	ah, err := w.pdX.CreateAH(verbs.AHAttr{DLID: 1, PortNum: 1})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { ah.Destroy() })
	n, err := a.q.PostSend([]verbs.SendWR{{WRID: 1, Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
		SGList: []verbs.SGE{a.sge(0, 3)}, AH: ah, RemoteQPN: 0x99, RemoteQKey: 1}})
	f.Stabilize()
	wg.Wait()
	if n != 0 || !errors.Is(err, syscall.EINVAL) {
		t.Errorf("UD post through an AH of another fabric: %d posted, %v; want 0, EINVAL", n, err)
	}
	a.poll(t, 0) // nothing was posted, so nothing completes
}

// TestSRQMaxSGEZero pins the decision of docs/srq.md: max_sge 0 is not
// refused but raised to one SGE, under every profile, as rxe does
// (rxe_srq_chk_attr); the man page sets no lower bound.
func TestSRQMaxSGEZero(t *testing.T) {
	for _, p := range sim.Profiles() {
		w := newQPRig(t, sim.Config{Profile: p})
		s, err := w.pd.CreateSRQ(sim.SRQInitAttr{Attr: verbs.SRQAttr{MaxWR: 4, MaxSGE: 0}})
		if err != nil {
			t.Fatalf("%s: CreateSRQ with max_sge 0: %v", p.Name, err)
		}
		if a, err := s.Query(); err != nil || a.MaxSGE != 1 {
			t.Errorf("%s: Query after max_sge 0: %+v, %v; want max_sge 1", p.Name, a, err)
		}
		if _, err := s.PostRecv([]verbs.RecvWR{{WRID: 1}}); err != nil {
			t.Errorf("%s: a receive without SGEs: %v", p.Name, err)
		}
	}
}
