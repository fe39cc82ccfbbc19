package sim_test

import (
	"fmt"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// A targeted fault: every packet the requester sends is lost, so its SEND
// is retried retry_cnt times and then fails with RETRY_EXC_ERR. In the
// default Auto mode the engine runs whatever is ready after each verb, but
// moves the clock only when asked: RunUntilIdle lets the retry timer fire.
func ExampleFabric_InjectPacketFault() {
	fabric, _ := sim.NewFabric(sim.Config{Devices: []sim.DeviceConfig{{Name: "a"}, {Name: "b"}}})
	defer fabric.Close()
	var qps [2]*sim.QP
	var cqs [2]*sim.CQ
	var mrs [2]*sim.MR
	for i, dev := range fabric.Devices() {
		vctx, _ := dev.Open()
		pd, _ := vctx.AllocPD()
		cqs[i], _ = vctx.CreateCQ(16, nil, nil, 0)
		mrs[i], _ = pd.RegMR(make([]byte, 64), verbs.AccessLocalWrite)
		qps[i], _ = pd.CreateQP(sim.QPInitAttr{SendCQ: cqs[i], RecvCQ: cqs[i], Type: verbs.QPTypeRC,
			Cap: verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
	}
	sim.Connect(qps[0], qps[1], sim.ConnectOptions{Timeout: 5, RetryCnt: 2})

	lost, _ := fabric.InjectPacketFault(sim.PacketFault{
		Match:  sim.FromQP(qps[0]), // what a sends: its first try and both retries
		Action: sim.FaultDrop,
		Count:  3,
	})
	qps[1].PostRecv([]verbs.RecvWR{{WRID: 1, SGList: []verbs.SGE{{Addr: mrs[1].Addr(), Length: 64, LKey: mrs[1].LKey()}}}})
	qps[0].PostSend([]verbs.SendWR{{WRID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
		SGList: []verbs.SGE{{Addr: mrs[0].Addr(), Length: 8, LKey: mrs[0].LKey()}}}})
	fabric.RunUntilIdle(0)

	wcs := make([]verbs.WC, 4)
	n, _ := cqs[0].Poll(wcs)
	fmt.Println(n, wcs[0].WRID, wcs[0].Status, "after", lost.Hits(), "packets lost")
	fmt.Println("requester:", qps[0].State())
	// Output:
	// 1 2 IBV_WC_RETRY_EXC_ERR after 3 packets lost
	// requester: ERR
}
