package sim

import (
	"testing"

	"github.com/verbsim/verbsim/sim/internal/qp"
	"github.com/verbsim/verbsim/sim/trace"
	"github.com/verbsim/verbsim/verbs"
)

// TestResponderRejectsRDMAAbove2G_XFER23 checks the second half of XFER-23,
// which no requester of verbsim can reach: max_msg_sz is 2^30, so a WR of
// more than 2^31 bytes fails locally with LOC_LEN_ERR before a packet is
// sent. A peer that ignores its own limit could still send one, so the
// test puts an RDMA WRITE whose RETH length is 2^31+1 on the wire by hand.
// The responder must reject it as an invalid request: NAK_INV_REQ, ERR, and
// QP_REQ_ERR naming it; the requester, which never posted such a WR,
// ignores the NAK.
func TestResponderRejectsRDMAAbove2G_XFER23(t *testing.T) {
	for _, prof := range Profiles() {
		t.Run(prof.Name, func(t *testing.T) { rejectRDMAAbove2G(t, prof) })
	}
}

func rejectRDMAAbove2G(t *testing.T, prof Profile) {
	log := &trace.Log{}
	f, err := NewFabric(Config{Profile: prof, Trace: log, Devices: []DeviceConfig{{Name: "a"}, {Name: "b"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type side struct {
		ctx *Context
		q   *QP
		mr  *MR
	}
	mk := func(d *Device) side {
		ctx, err := d.Open()
		if err != nil {
			t.Fatal(err)
		}
		pd, _ := ctx.AllocPD()
		cq, _ := ctx.CreateCQ(16, nil, nil, 0)
		mr, err := pd.RegMR(make([]byte, 4096), verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
		if err != nil {
			t.Fatal(err)
		}
		q, err := pd.CreateQP(QPInitAttr{SendCQ: cq, RecvCQ: cq, Type: verbs.QPTypeRC, Cap: verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
		if err != nil {
			t.Fatal(err)
		}
		return side{ctx, q, mr}
	}
	a, b := mk(f.Devices()[0]), mk(f.Devices()[1])
	if err := Connect(a.q, b.q, ConnectOptions{SQPSN: 100}); err != nil {
		t.Fatal(err)
	}
	pa, err := a.ctx.QueryPort(1)
	if err != nil {
		t.Fatal(err)
	}
	pb, _ := b.ctx.QueryPort(1)

	f.d.Lock()
	p := f.eng.newPacket()
	// The first packet of the message: one path MTU of payload.
	*p = qp.Packet{Kind: qp.PktWrite, Transport: verbs.QPTypeRC, First: true, Op: verbs.WRRDMAWrite,
		SrcQPN: a.q.Num(), DstQPN: b.q.Num(), PSN: 100, RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey(),
		DMALen: 1<<31 + 1, Payload: append(p.Payload[:0], make([]byte, 1024)...), Port: 1, SLID: pa.LID, DLID: pb.LID}
	b.q.q.ReceiveLocked(p)
	f.eng.freePacket(p)
	f.eng.settleLocked()
	f.d.Unlock()

	if s := b.q.State(); s != verbs.QPStateErr {
		t.Errorf("the responder is in %v after an RDMA WRITE of 2^31+1 bytes, want ERR", s)
	}
	ev, err := b.ctx.TryGetAsyncEvent()
	switch {
	case prof.NoQPEvents: // ASYNC-11
		if err == nil {
			t.Errorf("responder's async event %v; the profile raises none", ev)
		}
	case err != nil || ev.Type() != verbs.EventQPReqErr || ev.QP() != b.q:
		t.Errorf("responder's async event: %v, %v; want QP_REQ_ERR naming it (ASYNC-09)", ev, err)
	default:
		ev.Ack()
	}
	if s := a.q.State(); s != verbs.QPStateRTS {
		t.Errorf("the requester went to %v on a NAK for a PSN it never sent", s)
	}
	var found bool
	for _, r := range log.Records() {
		if r.Kind == trace.KindPacket && r.Name == "responder error" && r.NAK() == trace.NAKInvReq && r.Rule == "XFER-23" {
			found = true
		}
	}
	if !found {
		t.Error("the trace does not say why the request was rejected")
	}
}
