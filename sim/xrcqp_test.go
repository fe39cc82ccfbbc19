package sim_test

import (
	"errors"
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// xrcRig is an XRC connection across two devices: on a, an XRC_SEND QP
// with its PD, CQ and a registered buffer; on b, an XRC domain with two XRC
// SRQs (each on its own CQ), an XRC_RECV QP and a registered buffer.
type xrcRig struct {
	f          *sim.Fabric
	pda, pdb   *sim.PD
	cqa        *sim.CQ
	cqb1, cqb2 *sim.CQ
	ini, tgt   *sim.QP
	xrcd       *sim.XRCD
	srq1, srq2 *sim.SRQ
	n1, n2     uint32
	mra, mrb   *sim.MR
	bufa, bufb []byte
	ctxa, ctxb *sim.Context
}

func newXRCRig(t *testing.T, prof sim.Profile) *xrcRig {
	t.Helper()
	f, err := sim.NewFabric(sim.Config{Profile: prof, Devices: []sim.DeviceConfig{{Name: "a"}, {Name: "b"}}})
	if err != nil {
		t.Fatal(err)
	}
	r := &xrcRig{f: f}
	r.ctxa, _ = f.Devices()[0].Open()
	r.ctxb, _ = f.Devices()[1].Open()
	r.pda, _ = r.ctxa.AllocPD()
	r.pdb, _ = r.ctxb.AllocPD()
	r.cqa, _ = r.ctxa.CreateCQ(64, nil, nil, 0)
	r.cqb1, _ = r.ctxb.CreateCQ(64, nil, nil, 0)
	r.cqb2, _ = r.ctxb.CreateCQ(64, nil, nil, 0)
	r.bufa, r.bufb = make([]byte, 8192), make([]byte, 8192)
	rw := verbs.AccessFlags(verbs.AccessLocalWrite | verbs.AccessRemoteWrite | verbs.AccessRemoteRead | verbs.AccessRemoteAtomic)
	r.mra, _ = r.pda.RegMR(r.bufa, rw)
	r.mrb, _ = r.pdb.RegMR(r.bufb, rw)
	r.ini, err = r.pda.CreateQP(sim.QPInitAttr{SendCQ: r.cqa, Type: verbs.QPTypeXRCSend,
		Cap: verbs.QPCap{MaxSendWR: 16, MaxSendSGE: 1, MaxRecvWR: 8, MaxRecvSGE: 1}})
	if err != nil {
		t.Fatal("XRC_SEND:", err)
	}
	r.xrcd, err = r.ctxb.OpenXRCD(verbs.XRCDInitAttr{CompMask: both, FD: -1})
	if err != nil {
		t.Fatal(err)
	}
	r.tgt, err = r.xrcd.CreateQP(sim.QPInitAttr{Type: verbs.QPTypeXRCRecv, CompMask: sim.QPInitXRCD})
	if err != nil {
		t.Fatal("XRC_RECV:", err)
	}
	mk := func(cq *sim.CQ) (*sim.SRQ, uint32) {
		s, err := r.ctxb.CreateSRQEx(sim.SRQInitAttrEx{Attr: verbs.SRQAttr{MaxWR: 8, MaxSGE: 1},
			CompMask: verbs.SRQInitType | verbs.SRQInitPD | verbs.SRQInitXRCD | verbs.SRQInitCQ,
			Type:     verbs.SRQTXRC, PD: r.pdb, XRCD: r.xrcd, CQ: cq})
		if err != nil {
			t.Fatal(err)
		}
		n, _ := s.GetSRQNum()
		return s, n
	}
	r.srq1, r.n1 = mk(r.cqb1)
	r.srq2, r.n2 = mk(r.cqb2)
	if err := sim.Connect(r.ini, r.tgt, sim.ConnectOptions{}); err != nil {
		t.Fatal("connect:", err)
	}
	return r
}

// recv posts one receive of n bytes at off in b's buffer to s.
func (r *xrcRig) recv(t *testing.T, s *sim.SRQ, id uint64, off uint64, n uint32) {
	t.Helper()
	if _, err := s.PostRecv([]verbs.RecvWR{{WRID: id, SGList: []verbs.SGE{{Addr: r.mrb.Addr() + off, Length: n, LKey: r.mrb.LKey()}}}}); err != nil {
		t.Fatal(err)
	}
}

// send posts a signaled SEND of data, written at a's buffer, to SRQ srqn.
func (r *xrcRig) send(t *testing.T, id uint64, srqn uint32, data string) {
	t.Helper()
	copy(r.bufa, data)
	wr := verbs.SendWR{WRID: id, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, RemoteSRQN: srqn,
		SGList: []verbs.SGE{{Addr: r.mra.Addr(), Length: uint32(len(data)), LKey: r.mra.LKey()}}}
	if _, err := r.ini.PostSend([]verbs.SendWR{wr}); err != nil {
		t.Fatal(err)
	}
}

func poll1(t *testing.T, c *sim.CQ) (verbs.WC, bool) {
	t.Helper()
	var buf [1]verbs.WC
	n, err := c.Poll(buf[:])
	if err != nil {
		t.Fatal(err)
	}
	return buf[0], n == 1
}

func TestXRCTraffic_XRC09_XRC10(t *testing.T) {
	r := newXRCRig(t, sim.Profile{})
	if r.tgt.State() != verbs.QPStateRTS || r.ini.State() != verbs.QPStateRTS {
		t.Fatalf("states %v %v", r.ini.State(), r.tgt.State())
	}
	r.recv(t, r.srq1, 11, 0, 64)
	r.recv(t, r.srq2, 21, 1024, 64)
	r.send(t, 1, r.n2, "to two")
	r.send(t, 2, r.n1, "to one")
	r.f.RunUntilIdle(1 << 40)
	for i, c := range []struct {
		cq   *sim.CQ
		id   uint64
		off  int
		text string
	}{{r.cqb2, 21, 1024, "to two"}, {r.cqb1, 11, 0, "to one"}} {
		w, ok := poll1(t, c.cq)
		if !ok || w.Status != verbs.WCSuccess || w.WRID != c.id || w.Opcode != verbs.WCRecv || w.ByteLen != uint32(len(c.text)) ||
			w.QPNum != r.tgt.Num() || w.SrcQP != r.ini.Num() {
			t.Errorf("%d: SRQ completion %+v (ok %v); want wr_id %d on the XRC_RECV QP %#x from %#x", i, w, ok, c.id, r.tgt.Num(), r.ini.Num())
		}
		if got := string(r.bufb[c.off : c.off+len(c.text)]); got != c.text {
			t.Errorf("%d: placed %q, want %q", i, got, c.text)
		}
	}
	for id := uint64(1); id <= 2; id++ {
		if w, ok := poll1(t, r.cqa); !ok || w.Status != verbs.WCSuccess || w.WRID != id || w.Opcode != verbs.WCSend {
			t.Errorf("sender completion %+v (ok %v)", w, ok)
		}
	}
	// RDMA WRITE is checked against the SRQ's PD.
	copy(r.bufa, "written")
	wr := verbs.SendWR{WRID: 3, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled, RemoteSRQN: r.n1,
		RemoteAddr: r.mrb.Addr() + 4096, RKey: r.mrb.RKey(),
		SGList: []verbs.SGE{{Addr: r.mra.Addr(), Length: 7, LKey: r.mra.LKey()}}}
	if _, err := r.ini.PostSend([]verbs.SendWR{wr}); err != nil {
		t.Fatal(err)
	}
	r.f.RunUntilIdle(1 << 40)
	if w, ok := poll1(t, r.cqa); !ok || w.Status != verbs.WCSuccess || string(r.bufb[4096:4103]) != "written" {
		t.Errorf("RDMA WRITE through XRC: %+v (ok %v), %q", w, ok, r.bufb[4096:4103])
	}
}

func TestXRCRNR_XRC10(t *testing.T) {
	r := newXRCRig(t, sim.Profile{})
	r.send(t, 1, r.n1, "late")
	r.f.RunUntilIdle(1 << 20) // not long enough for the RNR timer
	if _, ok := poll1(t, r.cqa); ok {
		t.Fatal("the send completed with the XRC SRQ empty")
	}
	r.recv(t, r.srq1, 7, 0, 64)
	r.f.RunUntilIdle(1 << 40)
	if w, ok := poll1(t, r.cqb1); !ok || w.WRID != 7 || w.Status != verbs.WCSuccess {
		t.Errorf("after the RNR wait: %+v (ok %v)", w, ok)
	}
	if w, ok := poll1(t, r.cqa); !ok || w.Status != verbs.WCSuccess {
		t.Errorf("sender: %+v (ok %v)", w, ok)
	}
}

func TestXRCBadSRQN_XRC10(t *testing.T) {
	for _, c := range []struct {
		name string
		srqn func(r *xrcRig, t *testing.T) uint32
	}{
		{"no such SRQ", func(r *xrcRig, t *testing.T) uint32 { return 0xabcdef }},
		{"an SRQ of another domain", func(r *xrcRig, t *testing.T) uint32 {
			x2, err := r.ctxb.OpenXRCD(verbs.XRCDInitAttr{CompMask: both, FD: -1})
			if err != nil {
				t.Fatal(err)
			}
			s, err := r.ctxb.CreateSRQEx(sim.SRQInitAttrEx{Attr: verbs.SRQAttr{MaxWR: 8, MaxSGE: 1},
				CompMask: verbs.SRQInitType | verbs.SRQInitPD | verbs.SRQInitXRCD | verbs.SRQInitCQ,
				Type:     verbs.SRQTXRC, PD: r.pdb, XRCD: x2, CQ: r.cqb1})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.PostRecv([]verbs.RecvWR{{WRID: 99, SGList: []verbs.SGE{{Addr: r.mrb.Addr(), Length: 64, LKey: r.mrb.LKey()}}}}); err != nil {
				t.Fatal(err)
			}
			n, _ := s.GetSRQNum()
			return n
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newXRCRig(t, sim.Profile{})
			r.recv(t, r.srq1, 7, 0, 64)
			r.send(t, 1, c.srqn(r, t), "lost")
			r.f.RunUntilIdle(1 << 40)
			if w, ok := poll1(t, r.cqa); !ok || w.Status != verbs.WCRemAccessErr {
				t.Errorf("sender: %+v (ok %v), want REM_ACCESS_ERR", w, ok)
			}
			if r.tgt.State() != verbs.QPStateErr || r.ini.State() != verbs.QPStateErr {
				t.Errorf("states %v, %v; want ERR, ERR", r.ini.State(), r.tgt.State())
			}
			if w, ok := poll1(t, r.cqb1); ok {
				t.Errorf("a completion on the SRQ's CQ: %+v", w)
			}
			if r.srq1.Len() != 1 {
				t.Errorf("the good SRQ holds %d WRs, want 1", r.srq1.Len())
			}
		})
	}
}

func TestXRCCreate_XRC06_XRC07(t *testing.T) {
	r := newXRCRig(t, sim.Profile{})
	// The initiator: no receive side, whatever was asked for.
	if c := r.ini.Cap(); c.MaxRecvWR != 0 || c.MaxRecvSGE != 0 || c.MaxSendWR < 16 {
		t.Errorf("XRC_SEND caps %+v", c)
	}
	if r.ini.RecvCQ() != nil || r.ini.SRQ() != nil || r.ini.PD() != r.pda || r.ini.XRCD() != nil {
		t.Error("XRC_SEND objects")
	}
	// The target: no PD, CQ or queue; it holds its domain.
	if c := r.tgt.Cap(); c != (verbs.QPCap{}) {
		t.Errorf("XRC_RECV caps %+v", c)
	}
	if r.tgt.PD() != nil || r.tgt.SendCQ() != nil || r.tgt.RecvCQ() != nil || r.tgt.XRCD() != r.xrcd || r.tgt.Context() != r.ctxb {
		t.Error("XRC_RECV objects")
	}
	if r.tgt.Type() != verbs.QPTypeXRCRecv || r.ini.Type() != verbs.QPTypeXRCSend {
		t.Error("types")
	}
	rw := []verbs.RecvWR{{WRID: 1}}
	for _, q := range []*sim.QP{r.ini, r.tgt} {
		if n, err := q.PostRecv(rw); n != 0 || !errors.Is(err, syscall.EINVAL) {
			t.Errorf("%v post_recv: %d, %v; want EINVAL", q.Type(), n, err)
		}
	}
	if _, err := r.tgt.PostSend([]verbs.SendWR{{Opcode: verbs.WRSend}}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("XRC_RECV post_send: %v; want EINVAL", err)
	}
	wantErrno(t, "close_xrcd with a target QP and SRQs", r.xrcd.Close(), syscall.EBUSY)
	_ = r.srq1.Destroy()
	_ = r.srq2.Destroy()
	wantErrno(t, "close_xrcd with a target QP", r.xrcd.Close(), syscall.EBUSY)
	if err := r.tgt.Destroy(); err != nil {
		t.Fatal(err)
	}
	if err := r.xrcd.Close(); err != nil {
		t.Errorf("close_xrcd after the QP: %v", err)
	}
	// The initiator holds its PD and CQ like any QP.
	wantErrno(t, "dealloc_pd under an XRC_SEND QP", r.pda.Dealloc(), syscall.EBUSY)
	wantErrno(t, "destroy_cq under an XRC_SEND QP", r.cqa.Destroy(), syscall.EBUSY)
}

func TestXRCNoXRC_XRC03(t *testing.T) {
	ctx := open(t, sim.Config{Profile: sim.RXEProfile(), Devices: []sim.DeviceConfig{{Name: "a"}}})
	pd, _ := ctx.AllocPD()
	cq, _ := ctx.CreateCQ(16, nil, nil, 0)
	for _, typ := range []verbs.QPType{verbs.QPTypeXRCSend, verbs.QPTypeXRCRecv} {
		q, err := pd.CreateQP(sim.QPInitAttr{SendCQ: cq, RecvCQ: cq, Type: typ, Cap: verbs.QPCap{MaxSendWR: 1, MaxSendSGE: 1}})
		wantErrno(t, "rxe create "+typ.String(), err, syscall.EOPNOTSUPP)
		if q != nil {
			t.Error("a QP with the error")
		}
	}
}

func TestXRCBuilder_XRC09(t *testing.T) {
	r := newXRCRig(t, sim.Profile{})
	q, err := r.pda.CreateQP(sim.QPInitAttr{SendCQ: r.cqa, Type: verbs.QPTypeXRCSend, CompMask: sim.QPInitPD | sim.QPInitSendOpsFlags,
		SendOpsFlags: verbs.QPExWithSend | verbs.QPExWithRDMAWrite, Cap: verbs.QPCap{MaxSendWR: 4, MaxSendSGE: 1}})
	if err != nil {
		t.Fatal(err)
	}
	tgt, err := r.xrcd.CreateQP(sim.QPInitAttr{Type: verbs.QPTypeXRCRecv, CompMask: sim.QPInitXRCD})
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Connect(q, tgt, sim.ConnectOptions{}); err != nil {
		t.Fatal(err)
	}
	r.recv(t, r.srq2, 5, 0, 64)
	copy(r.bufa, "built")
	q.WRStart()
	q.SetWRID(9)
	q.SetWRFlags(verbs.SendSignaled)
	q.WRSend()
	q.WRSetXRCSRQN(r.n2)
	q.WRSetSGE(r.mra.LKey(), r.mra.Addr(), 5)
	if err := q.WRComplete(); err != nil {
		t.Fatal(err)
	}
	r.f.RunUntilIdle(1 << 40)
	if w, ok := poll1(t, r.cqb2); !ok || w.WRID != 5 || w.QPNum != tgt.Num() || string(r.bufb[:5]) != "built" {
		t.Errorf("builder send: %+v (ok %v) %q", w, ok, r.bufb[:5])
	}
}
