package sim_test

import (
	"fmt"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// What could still happen: a SEND into a queue with no receive gets an RNR
// NAK, and the requester's RNR timer is the one thing pending. Future names
// it; AdvanceToNext would run it.
func ExampleFabric_Future() {
	fabric, _ := sim.NewFabric(sim.Config{Devices: []sim.DeviceConfig{{Name: "a"}, {Name: "b"}}})
	defer fabric.Close()
	var qps [2]*sim.QP
	var mrs [2]*sim.MR
	for i, dev := range fabric.Devices() {
		vctx, _ := dev.Open()
		pd, _ := vctx.AllocPD()
		cq, _ := vctx.CreateCQ(16, nil, nil, 0)
		mrs[i], _ = pd.RegMR(make([]byte, 64), verbs.AccessLocalWrite)
		qps[i], _ = pd.CreateQP(sim.QPInitAttr{SendCQ: cq, RecvCQ: cq, Type: verbs.QPTypeRC,
			Cap: verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
	}
	sim.Connect(qps[0], qps[1], sim.ConnectOptions{MinRNRTimer: 1}) // an RNR wait of 10 µs
	qps[0].PostSend([]verbs.SendWR{{WRID: 1, Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
		SGList: []verbs.SGE{{Addr: mrs[0].Addr(), Length: 8, LKey: mrs[0].LKey()}}}})
	fmt.Println(fabric.Future())
	// Output:
	// [t=10000 a/qp 0x11: RNR wait]
}
