package sim_test

import (
	"bytes"
	"errors"
	"syscall"
	"testing"
	"testing/synctest"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
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
		a := newEnd(t, fa.Devices()[0], verbs.QPTypeRC, 1<<14)
		b := newEnd(t, fb.Devices()[0], verbs.QPTypeRC, 1<<14)
		ini, err := a.pd.CreateQP(sim.QPInitAttr{SendCQ: a.cq, Type: verbs.QPTypeXRCSend, Cap: verbs.QPCap{MaxSendWR: 4, MaxSendSGE: 1}})
		if err != nil {
			t.Fatal(err)
		}
		x, err := b.ctx.OpenXRCD(verbs.XRCDInitAttr{CompMask: verbs.XRCDInitFD | verbs.XRCDInitOFlags, FD: -1})
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
			srqs[i], err = b.ctx.CreateSRQEx(sim.SRQInitAttrEx{Attr: verbs.SRQAttr{MaxWR: 4, MaxSGE: 1},
				CompMask: verbs.SRQInitType | verbs.SRQInitPD | verbs.SRQInitXRCD | verbs.SRQInitCQ, Type: verbs.SRQTXRC,
				PD: b.pd, XRCD: x, CQ: cq})
			if err != nil {
				t.Fatal(err)
			}
			if nums[i], err = srqs[i].GetSRQNum(); err != nil {
				t.Fatal(err)
			}
			if _, err := srqs[i].PostRecv([]verbs.RecvWR{{WRID: uint64(10 + i), SGList: []verbs.SGE{b.sge(1024*i, 1024)}}}); err != nil {
				t.Fatal(err)
			}
		}
		tgt, err := x.CreateQP(sim.QPInitAttr{Type: verbs.QPTypeXRCRecv, CompMask: sim.QPInitXRCD})
		if err != nil {
			t.Fatal(err)
		}
		if err := errors.Join(
			tgt.Modify(&verbs.QPAttr{QPState: verbs.QPStateInit, PortNum: 1}, verbs.QPAttrState|verbs.QPAttrPKeyIndex|verbs.QPAttrPort|verbs.QPAttrAccessFlags),
			tgt.Modify(&verbs.QPAttr{QPState: verbs.QPStateRTR, PathMTU: verbs.MTU256, DestQPNum: ini.Num(), AHAttr: verbs.AHAttr{DLID: 1, PortNum: 1},
				MinRNRTimer: 1}, verbs.QPAttrState|verbs.QPAttrAV|verbs.QPAttrPathMTU|verbs.QPAttrDestQPN|verbs.QPAttrRQPSN|verbs.QPAttrMaxDestRDAtomic|verbs.QPAttrMinRNRTimer),
			tgt.Modify(&verbs.QPAttr{QPState: verbs.QPStateRTS, Timeout: 14}, verbs.QPAttrState|verbs.QPAttrTimeout|verbs.QPAttrSQPSN),
			ini.Modify(&verbs.QPAttr{QPState: verbs.QPStateInit, PortNum: 1}, verbs.QPAttrState|verbs.QPAttrPKeyIndex|verbs.QPAttrPort|verbs.QPAttrAccessFlags),
			ini.Modify(&verbs.QPAttr{QPState: verbs.QPStateRTR, PathMTU: verbs.MTU256, DestQPNum: tgt.Num(), AHAttr: verbs.AHAttr{DLID: 2, PortNum: 1}},
				verbs.QPAttrState|verbs.QPAttrAV|verbs.QPAttrPathMTU|verbs.QPAttrDestQPN|verbs.QPAttrRQPSN),
			ini.Modify(&verbs.QPAttr{QPState: verbs.QPStateRTS, Timeout: 14, RetryCnt: 7, RNRRetry: 7},
				verbs.QPAttrState|verbs.QPAttrTimeout|verbs.QPAttrSQPSN|verbs.QPAttrRetryCnt|verbs.QPAttrRNRRetry|verbs.QPAttrMaxQPRDAtomic),
		); err != nil {
			t.Fatal(err)
		}
		msg := bytes.Repeat([]byte("xrc!"), 200) // 4 packets at MTU 256
		copy(a.buf, msg)
		// The second SRQ first: the number, not the order, chooses.
		for i, n := range []uint32{nums[1], nums[0]} {
			if _, err := ini.PostSend([]verbs.SendWR{{WRID: uint64(i), Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
				SGList: []verbs.SGE{a.sge(0, len(msg))}, RemoteSRQN: n}}); err != nil {
				t.Fatal(err)
			}
		}
		for i, s := range a.waitWCs(t, 2) {
			if s.Status != verbs.WCSuccess || s.WRID != uint64(i) {
				t.Errorf("send WC %v", &s)
			}
		}
		e2 := &end{cq: cq2}
		for i, r := range []verbs.WC{e2.waitWCs(t, 1)[0], b.waitWCs(t, 1)[0]} {
			if r.Status != verbs.WCSuccess || r.WRID != uint64(11-i) || r.ByteLen != uint32(len(msg)) || r.QPNum != tgt.Num() || r.SrcQP != ini.Num() {
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
