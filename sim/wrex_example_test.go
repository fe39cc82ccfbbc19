package sim_test

import (
	"fmt"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// A client creates its QP with send_ops_flags (ibv_create_qp_ex) and posts
// an RDMA WRITE and a SEND with inline data in one batch of the work
// request builder (ibv_wr_start ... ibv_wr_complete). A batch with a bad
// request is refused whole.
func ExampleQP_WRStart() {
	fabric, _ := sim.NewFabric(sim.Config{Devices: []sim.DeviceConfig{{Name: "client"}, {Name: "server"}}})
	side := func(name string, attr sim.QPInitAttr) (*sim.PD, *sim.CQ, *sim.QP) {
		dev, _ := fabric.Device(name)
		vctx, _ := dev.Open()
		pd, _ := vctx.AllocPD()
		cq, _ := vctx.CreateCQ(16, nil, nil, 0)
		attr.SendCQ, attr.RecvCQ, attr.Type = cq, cq, verbs.QPTypeRC
		attr.Cap = verbs.QPCap{MaxSendWR: 8, MaxRecvWR: 8, MaxSendSGE: 1, MaxRecvSGE: 1, MaxInlineData: 16}
		q, _ := pd.CreateQP(attr)
		return pd, cq, q
	}
	cpd, ccq, cqp := side("client", sim.QPInitAttr{CompMask: sim.QPInitSendOpsFlags, SendOpsFlags: verbs.QPExWithSend | verbs.QPExWithRDMAWrite})
	spd, scq, sqp := side("server", sim.QPInitAttr{})
	sim.Connect(cqp, sqp, sim.ConnectOptions{})

	mem := make([]byte, 64)
	smr, _ := spd.RegMR(mem, verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
	sqp.PostRecv([]verbs.RecvWR{{WRID: 9, SGList: []verbs.SGE{{Addr: smr.Addr() + 32, Length: 32, LKey: smr.LKey()}}}})
	src := []byte("written")
	cmr, _ := cpd.RegMR(src, 0)

	cqp.SetWRFlags(verbs.SendSignaled) // qpx->wr_flags
	cqp.WRStart()
	cqp.SetWRID(1) // qpx->wr_id
	cqp.WRRDMAWrite(smr.RKey(), smr.Addr())
	cqp.WRSetSGE(cmr.LKey(), cmr.Addr(), uint32(len(src)))
	cqp.SetWRID(2)
	cqp.WRSend()
	cqp.WRSetInlineData([]byte("sent"))
	fmt.Println("complete:", cqp.WRComplete())

	wcs := make([]verbs.WC, 4)
	n, _ := ccq.Poll(wcs)
	for _, w := range wcs[:n] {
		fmt.Println(w.WRID, w.Opcode, w.Status.Name())
	}
	n, _ = scq.Poll(wcs)
	fmt.Println("server:", n, wcs[0].Opcode, wcs[0].ByteLen)
	fmt.Printf("%q %q\n", mem[:7], mem[32:36])

	// A READ is not in send_ops_flags: the whole batch is refused.
	cqp.WRStart()
	cqp.WRSend()
	cqp.WRSetInlineData([]byte("lost"))
	cqp.WRRDMARead(smr.RKey(), smr.Addr())
	fmt.Println("complete:", cqp.WRComplete())
	n, _ = ccq.Poll(wcs)
	fmt.Println("completions:", n)
	// Output:
	// complete: <nil>
	// 1 IBV_WC_RDMA_WRITE IBV_WC_SUCCESS
	// 2 IBV_WC_SEND IBV_WC_SUCCESS
	// server: 1 IBV_WC_RECV 4
	// "written" "sent"
	// complete: ibv_wr_complete: EOPNOTSUPP (operation not supported): the operation is not in the QP's send_ops_flags (QPX-02)
	// completions: 0
}
