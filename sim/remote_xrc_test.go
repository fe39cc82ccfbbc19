package sim_test

import (
	"bytes"
	"errors"
	"syscall"
	"testing"
	"testing/synctest"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/internal/qp"
	"github.com/verbsim/verbsim/sim/wc"
)

// TestRemoteXRC: an XRC_SEND QP on one fabric reaches the XRC SRQs of an
// XRC_RECV QP's domain on another: the SRQ number travels in the frame,
// so each message lands in the SRQ it names, on that SRQ's CQ (XRC-09,
// XRC-10), as ibv_xsrq_pingpong between two processes needs.
func TestRemoteXRC(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &memWire{}
		fa, _ := w.attach(t, "a", 1, false, sim.Faults{}, 1)
		fb, _ := w.attach(t, "b", 2, false, sim.Faults{}, 2)
		a := newEnd(t, fa.Devices()[0], qp.RC, 1<<14)
		b := newEnd(t, fb.Devices()[0], qp.RC, 1<<14)
		ini, err := a.pd.CreateQP(sim.QPInitAttr{SendCQ: a.cq, Type: qp.XRCSend, Cap: qp.Cap{MaxSendWR: 4, MaxSendSGE: 1}})
		if err != nil {
			t.Fatal(err)
		}
		x, err := b.ctx.OpenXRCD(sim.XRCDInitAttr{CompMask: sim.XRCDInitFD | sim.XRCDInitOFlags, FD: -1})
		if err != nil {
			t.Fatal(err)
		}
		cq2, err := b.ctx.CreateCQ(16, nil, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		var srqs [2]*sim.SRQ
		var nums [2]uint32
		for i, cq := range []*sim.CQ{b.cq, cq2} {
			srqs[i], err = b.ctx.CreateSRQEx(sim.SRQInitAttrEx{Attr: qp.SRQAttr{MaxWR: 4, MaxSGE: 1},
				CompMask: sim.SRQInitType | sim.SRQInitPD | sim.SRQInitXRCD | sim.SRQInitCQ, Type: sim.SRQTXRC,
				PD: b.pd, XRCD: x, CQ: cq})
			if err != nil {
				t.Fatal(err)
			}
			if nums[i], err = srqs[i].GetSRQNum(); err != nil {
				t.Fatal(err)
			}
			if _, err := srqs[i].PostRecv([]qp.RecvWR{{WRID: uint64(10 + i), SGList: []qp.SGE{b.sge(1024*i, 1024)}}}); err != nil {
				t.Fatal(err)
			}
		}
		tgt, err := x.CreateQP(sim.QPInitAttr{Type: qp.XRCRecv, CompMask: sim.QPInitXRCD})
		if err != nil {
			t.Fatal(err)
		}
		if err := errors.Join(
			tgt.Modify(&qp.Attr{QPState: qp.Init, PortNum: 1}, qp.AttrState|qp.AttrPKeyIndex|qp.AttrPort|qp.AttrAccessFlags),
			tgt.Modify(&qp.Attr{QPState: qp.RTR, PathMTU: qp.MTU256, DestQPNum: ini.Num(), AHAttr: qp.AHAttr{DLID: 1, PortNum: 1},
				MinRNRTimer: 1}, qp.AttrState|qp.AttrAV|qp.AttrPathMTU|qp.AttrDestQPN|qp.AttrRQPSN|qp.AttrMaxDestRDAtomic|qp.AttrMinRNRTimer),
			tgt.Modify(&qp.Attr{QPState: qp.RTS, Timeout: 14}, qp.AttrState|qp.AttrTimeout|qp.AttrSQPSN),
			ini.Modify(&qp.Attr{QPState: qp.Init, PortNum: 1}, qp.AttrState|qp.AttrPKeyIndex|qp.AttrPort|qp.AttrAccessFlags),
			ini.Modify(&qp.Attr{QPState: qp.RTR, PathMTU: qp.MTU256, DestQPNum: tgt.Num(), AHAttr: qp.AHAttr{DLID: 2, PortNum: 1}},
				qp.AttrState|qp.AttrAV|qp.AttrPathMTU|qp.AttrDestQPN|qp.AttrRQPSN),
			ini.Modify(&qp.Attr{QPState: qp.RTS, Timeout: 14, RetryCnt: 7, RNRRetry: 7},
				qp.AttrState|qp.AttrTimeout|qp.AttrSQPSN|qp.AttrRetryCnt|qp.AttrRNRRetry|qp.AttrMaxQPRDAtomic),
		); err != nil {
			t.Fatal(err)
		}
		msg := bytes.Repeat([]byte("xrc!"), 200) // 4 packets at MTU 256
		copy(a.buf, msg)
		// The second SRQ first: the number, not the order, chooses.
		for i, n := range []uint32{nums[1], nums[0]} {
			if _, err := ini.PostSend([]qp.SendWR{{WRID: uint64(i), Opcode: wc.WRSend, Flags: qp.SendSignaled,
				SGList: []qp.SGE{a.sge(0, len(msg))}, RemoteSRQN: n}}); err != nil {
				t.Fatal(err)
			}
		}
		for i, s := range a.waitWCs(t, 2) {
			if s.Status != wc.Success || s.WRID != uint64(i) {
				t.Errorf("send WC %v", &s)
			}
		}
		e2 := &end{cq: cq2}
		for i, r := range []wc.WC{e2.waitWCs(t, 1)[0], b.waitWCs(t, 1)[0]} {
			if r.Status != wc.Success || r.WRID != uint64(11-i) || r.ByteLen != uint32(len(msg)) || r.QPNum != tgt.Num() || r.SrcQP != ini.Num() {
				t.Errorf("recv WC %d: %v", i, &r)
			}
		}
		if !bytes.Equal(b.buf[:len(msg)], msg) || !bytes.Equal(b.buf[1024:1024+len(msg)], msg) {
			t.Error("payloads differ")
		}
		if err := x.Close(); !errors.Is(err, syscall.EBUSY) {
			t.Errorf("close of a domain in use: %v", err)
		}
	})
}
