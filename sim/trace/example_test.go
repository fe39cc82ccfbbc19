package trace_test

import (
	"fmt"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/trace"
	"github.com/verbsim/verbsim/verbs"
)

// An RC SEND finds no receive WR posted at b: b answers with an RNR NAK,
// and a waits before it tries again. A test asks the records and the
// fabric's future by their fields, not by their words.
func ExampleRecord_NAK() {
	log := &trace.Log{}
	fabric, _ := sim.NewFabric(sim.Config{Trace: log, Devices: []sim.DeviceConfig{{Name: "a"}, {Name: "b"}}})
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
	sim.Connect(qps[0], qps[1], sim.ConnectOptions{MinRNRTimer: 1})
	qps[0].PostSend([]verbs.SendWR{{WRID: 1, Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
		SGList: []verbs.SGE{{Addr: mrs[0].Addr(), Length: 8, LKey: mrs[0].LKey()}}}})

	for _, r := range log.Records() {
		if r.NAK() == trace.NAKRNR {
			fmt.Printf("%-7s %-8s %s\n", r.Kind, r.Name, r.Object)
		}
	}
	for _, ev := range fabric.Future() {
		if ev.Timer == trace.TimerRNR {
			fmt.Printf("RNR wait of %s until t=%d\n", ev.Device, ev.At)
		}
	}
	// Output:
	// packet  RNR NAK  b/qp 0x11
	// packet  send     b/qp 0x11
	// packet  receive  a/qp 0x11
	// RNR wait of a until t=10000
}
