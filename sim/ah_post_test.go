package sim_test

import (
	"errors"
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// A UD send's address handle is checked when the request is posted (AV-04):
// one that is not verbsim's, of another fabric, device or device context, or
// destroyed, fails ibv_post_send (and ibv_wr_complete) with EINVAL, with the
// request as bad_wr and nothing posted, as the package doc promises for
// objects of another fabric. An AH of another PD of the QP's own context is
// accepted and fails as it executes, with LOC_QP_OP_ERR (PD-04).

// udPostWorld is a UD QP on context a of the owner world's device a, ready
// to send, and the owner world's other objects to take AHs from.
type udPostWorld struct {
	w *ownerWorld
	e *end
}

// ahAttr addresses port 1 of the fabric's first device by LID.
var ahAttr = verbs.AHAttr{DLID: 1, PortNum: 1}

func (u *udPostWorld) ahIn(t *testing.T, pd *sim.PD) *sim.AH {
	t.Helper()
	ah, err := pd.CreateAH(ahAttr)
	if err != nil {
		t.Fatal(err)
	}
	return ah
}

func ahOfAnotherFabric(t *testing.T, u *udPostWorld) verbs.AH { return u.ahIn(t, u.w.pdX) }
func ahOfAnotherDevice(t *testing.T, u *udPostWorld) verbs.AH { return u.ahIn(t, u.w.pdB) }
func ahOfAnotherContext(t *testing.T, u *udPostWorld) verbs.AH {
	return u.ahIn(t, u.w.pdA2)
}
func ahDestroyed(t *testing.T, u *udPostWorld) verbs.AH {
	ah := u.ahIn(t, u.e.pd)
	if err := ah.Destroy(); err != nil {
		t.Fatal(err)
	}
	return ah
}
func ahNotVerbsims(*testing.T, *udPostWorld) verbs.AH { return foreignAH{} }
func ahNilSim(*testing.T, *udPostWorld) verbs.AH      { return (*sim.AH)(nil) }

// udAHRefused are the AHs AV-04 refuses at post.
var udAHRefused = []struct {
	name string
	ah   func(*testing.T, *udPostWorld) verbs.AH
}{
	{"another fabric", ahOfAnotherFabric},
	{"another device", ahOfAnotherDevice},
	{"another context of the device", ahOfAnotherContext},
	{"destroyed", ahDestroyed},
	{"not verbsim's", ahNotVerbsims},
	{"a nil *sim.AH", ahNilSim},
}

func newUDPostWorld(t *testing.T) *udPostWorld {
	t.Helper()
	w := newOwnerWorld(t)
	e := newEnd(t, w.f.Devices()[0], verbs.QPTypeUD, 1<<10)
	if err := sim.ReadyUD(e.q, 1); err != nil {
		t.Fatal(err)
	}
	return &udPostWorld{w: w, e: e}
}

func TestUDAHCheckedAtPost_AV04(t *testing.T) {
	for _, c := range udAHRefused {
		t.Run(c.name, func(t *testing.T) {
			u := newUDPostWorld(t)
			good := u.ahIn(t, u.e.pd)
			wrs := []verbs.SendWR{
				{WRID: 1, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{u.e.sge(0, 3)}, AH: good, RemoteQPN: 0x99, RemoteQKey: 1},
				{WRID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{u.e.sge(0, 3)}, AH: c.ah(t, u), RemoteQPN: 0x99, RemoteQKey: 1},
			}
			n, err := u.e.q.PostSend(wrs)
			if n != 1 || !errors.Is(err, syscall.EINVAL) {
				t.Fatalf("ibv_post_send through an AH of %s: %d posted, %v; want 1 (bad_wr the second), EINVAL", c.name, n, err)
			}
			u.w.f.Stabilize()
			if got := u.e.poll(t, 1)[0]; got.WRID != 1 || got.Status != verbs.WCSuccess {
				t.Errorf("the request before the bad one: %v, want wr_id 1 SUCCESS", &got)
			}
		})
	}
}

// TestUDAHCheckedAtWRComplete_AV04: the builder's ibv_wr_set_ud_addr takes
// a *sim.AH, so an AH of another implementation cannot reach it from Go;
// every other refused AH fails the batch at ibv_wr_complete.
func TestUDAHCheckedAtWRComplete_AV04(t *testing.T) {
	for _, c := range udAHRefused {
		if c.name == "not verbsim's" {
			continue // does not compile: WRSetUDAddr takes a *sim.AH
		}
		t.Run(c.name, func(t *testing.T) {
			u := newUDPostWorld(t)
			q, err := u.e.pd.CreateQP(sim.QPInitAttr{SendCQ: u.e.cq, RecvCQ: u.e.cq, Type: verbs.QPTypeUD, Cap: exCap,
				CompMask: sim.QPInitPD | sim.QPInitSendOpsFlags, SendOpsFlags: verbs.QPExWithSend})
			if err != nil {
				t.Fatal(err)
			}
			if err := sim.ReadyUD(q, 1); err != nil {
				t.Fatal(err)
			}
			q.WRStart()
			q.SetWRID(7)
			q.WRSend()
			q.WRSetSGE(u.e.mr.LKey(), u.e.mr.Addr(), 3)
			ah, _ := c.ah(t, u).(*sim.AH)
			q.WRSetUDAddr(ah, 0x99, 1)
			if err := q.WRComplete(); !errors.Is(err, syscall.EINVAL) {
				t.Fatalf("ibv_wr_complete through an AH of %s: %v, want EINVAL", c.name, err)
			}
			u.w.f.Stabilize()
			u.e.poll(t, 0) // the batch was refused whole
		})
	}
}

// TestUDAHOfAnotherPD_PD04: an AH of another PD of the QP's context passes
// the post and fails the request as it executes.
func TestUDAHOfAnotherPD_PD04(t *testing.T) {
	u := newUDPostWorld(t)
	other, err := u.e.ctx.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	ah := u.ahIn(t, other)
	if _, err := u.e.q.PostSend([]verbs.SendWR{{WRID: 1, Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
		SGList: []verbs.SGE{u.e.sge(0, 3)}, AH: ah, RemoteQPN: 0x99, RemoteQKey: 1}}); err != nil {
		t.Fatalf("ibv_post_send through an AH of another PD of the context: %v", err)
	}
	u.w.f.Stabilize()
	if got := u.e.poll(t, 1)[0]; got.Status != verbs.WCLocQPOpErr {
		t.Errorf("UD send through an AH of another PD: %v, want LOC_QP_OP_ERR", &got)
	}
}
