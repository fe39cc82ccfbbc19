package sim_test

import (
	"fmt"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// Seeded, fabric-wide faults: three packets in ten are lost, yet RC
// delivers all eight SENDs in order, each once; the requester's ACK
// timeouts and retries hide the losses. Faults draw from Config.Seed, so
// the same seed and the same calls lose the same packets: the counts below
// are the same on every run.
func ExampleFabric_SetFaults() {
	fabric, _ := sim.NewFabric(sim.Config{Seed: 42, Devices: []sim.DeviceConfig{{Name: "a"}, {Name: "b"}}})
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
			Cap: verbs.QPCap{MaxSendWR: 8, MaxRecvWR: 8, MaxSendSGE: 1, MaxRecvSGE: 1}})
	}
	sim.Connect(qps[0], qps[1], sim.ConnectOptions{Timeout: 5})

	fabric.SetFaults(sim.Faults{Drop: 0.3})
	for id := uint64(1); id <= 8; id++ {
		qps[1].PostRecv([]verbs.RecvWR{{WRID: id, SGList: []verbs.SGE{{Addr: mrs[1].Addr(), Length: 64, LKey: mrs[1].LKey()}}}})
		qps[0].PostSend([]verbs.SendWR{{WRID: id, Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
			SGList: []verbs.SGE{{Addr: mrs[0].Addr(), Length: 8, LKey: mrs[0].LKey()}}}})
	}
	fabric.RunUntilIdle(0) // the ACK timeouts fire as virtual time passes

	wcs := make([]verbs.WC, 16)
	n, _ := cqs[1].Poll(wcs)
	var got []uint64
	for _, w := range wcs[:n] {
		if w.Status == verbs.WCSuccess {
			got = append(got, w.WRID)
		}
	}
	st := fabric.Stats()
	fmt.Println("received:", got)
	fmt.Printf("%d of %d packets lost, %d ACK timeouts, %d PSN sequence error NAK(s)\n", st.Dropped, st.Packets, st.ACKTimers, st.SeqNAKs)
	// Output:
	// received: [1 2 3 4 5 6 7 8]
	// 9 of 26 packets lost, 4 ACK timeouts, 1 PSN sequence error NAK(s)
}

// ForceStatus fails one chosen work request as if the adapter had: the
// SEND with wr_id 1 completes with REM_ACCESS_ERR, the RC requester goes to
// ERR, and the SEND behind it is flushed. Nothing else in the fabric has
// to be arranged for the error to happen.
func ExampleFabric_ForceStatus() {
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
	sim.Connect(qps[0], qps[1], sim.ConnectOptions{})

	fmt.Println(fabric.ForceStatus(qps[0], 1, false, verbs.WCRemAccessErr))
	qps[1].PostRecv([]verbs.RecvWR{{WRID: 9, SGList: []verbs.SGE{{Addr: mrs[1].Addr(), Length: 64, LKey: mrs[1].LKey()}}}})
	for id := uint64(1); id <= 2; id++ {
		qps[0].PostSend([]verbs.SendWR{{WRID: id, Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
			SGList: []verbs.SGE{{Addr: mrs[0].Addr(), Length: 8, LKey: mrs[0].LKey()}}}})
	}

	wcs := make([]verbs.WC, 4)
	n, _ := cqs[0].Poll(wcs)
	for _, w := range wcs[:n] {
		fmt.Println(w.WRID, w.Status)
	}
	fmt.Println("requester:", qps[0].State())
	// Output:
	// <nil>
	// 1 IBV_WC_REM_ACCESS_ERR
	// 2 IBV_WC_WR_FLUSH_ERR
	// requester: ERR
}

// InjectFatal is a catastrophic error of one QP: it goes to ERR, what it
// had posted is flushed, and the context's async event queue gets
// IBV_EVENT_QP_FATAL naming it, to be read and acknowledged like any other
// async event.
func ExampleFabric_InjectFatal() {
	fabric, _ := sim.NewFabric(sim.Config{})
	defer fabric.Close()
	vctx, _ := fabric.Devices()[0].Open()
	pd, _ := vctx.AllocPD()
	cq, _ := vctx.CreateCQ(16, nil, nil, 0)
	mr, _ := pd.RegMR(make([]byte, 64), verbs.AccessLocalWrite)
	q, _ := pd.CreateQP(sim.QPInitAttr{SendCQ: cq, RecvCQ: cq, Type: verbs.QPTypeUD,
		Cap: verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
	sim.ReadyUD(q, 0x1111)
	q.PostRecv([]verbs.RecvWR{{WRID: 7, SGList: []verbs.SGE{{Addr: mr.Addr(), Length: 64, LKey: mr.LKey()}}}})

	fmt.Println(fabric.InjectFatal(q))
	ev, err := vctx.TryGetAsyncEvent() // ibv_get_async_event on a non-blocking fd
	fmt.Println(ev.Type(), ev.QP() == q, err)
	fmt.Println(ev.Ack()) // ibv_ack_async_event

	wcs := make([]verbs.WC, 4)
	n, _ := cq.Poll(wcs)
	fmt.Println(n, wcs[0].WRID, wcs[0].Status, q.State())
	// Output:
	// <nil>
	// IBV_EVENT_QP_FATAL true <nil>
	// <nil>
	// 1 7 IBV_WC_WR_FLUSH_ERR ERR
}

// Manual mode runs nothing until asked, and a Chooser decides which ready
// event runs next whenever more than one could: here always the newest
// (last in, first out), where the default FIFO schedule runs the oldest.
// Two QPs of device a each post a SEND; under this Chooser the second one
// posted is delivered first. The Chooser runs under the fabric's lock, so
// it only looks and picks; it calls no verb. A schedule explorer is a
// Chooser that enumerates the choices.
func ExampleChooser() {
	var picks []string
	newest := func(ready []sim.ReadyEvent) int {
		e := ready[len(ready)-1]
		what := fmt.Sprintf("%v %s/qp %#x", e.Kind, e.Device, e.QPN)
		if e.Kind == sim.EventPacket {
			what = fmt.Sprintf("%v %v to %s/qp %#x", e.Kind, e.Packet, e.Device, e.QPN)
		}
		picks = append(picks, fmt.Sprintf("of %d ready: %s", len(ready), what))
		return len(ready) - 1
	}
	fabric, _ := sim.NewFabric(sim.Config{Mode: sim.Manual, Chooser: newest,
		Devices: []sim.DeviceConfig{{Name: "a"}, {Name: "b"}}})
	defer fabric.Close()
	devs := fabric.Devices()
	var ctx [2]*sim.Context
	var pds [2]*sim.PD
	var cqs [2]*sim.CQ
	var mrs [2]*sim.MR
	for i, dev := range devs {
		ctx[i], _ = dev.Open()
		pds[i], _ = ctx[i].AllocPD()
		cqs[i], _ = ctx[i].CreateCQ(16, nil, nil, 0)
		mrs[i], _ = pds[i].RegMR(make([]byte, 64), verbs.AccessLocalWrite)
	}
	newQP := func(i int) *sim.QP {
		q, _ := pds[i].CreateQP(sim.QPInitAttr{SendCQ: cqs[i], RecvCQ: cqs[i], Type: verbs.QPTypeRC,
			Cap: verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
		return q
	}
	for range 2 { // two pairs a→b
		a, b := newQP(0), newQP(1)
		sim.Connect(a, b, sim.ConnectOptions{})
		b.PostRecv([]verbs.RecvWR{{WRID: uint64(b.Num()), SGList: []verbs.SGE{{Addr: mrs[1].Addr(), Length: 64, LKey: mrs[1].LKey()}}}})
		a.PostSend([]verbs.SendWR{{WRID: uint64(a.Num()), Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
			SGList: []verbs.SGE{{Addr: mrs[0].Addr(), Length: 8, LKey: mrs[0].LKey()}}}})
	}
	ready, _ := fabric.Pending()
	fmt.Println("posted, nothing run; ready:", ready)
	fmt.Println("events run:", fabric.Stabilize())
	for _, p := range picks {
		fmt.Println(p)
	}
	wcs := make([]verbs.WC, 4)
	n, _ := cqs[1].Poll(wcs)
	for _, w := range wcs[:n] {
		fmt.Printf("b received on qp %#x\n", w.WRID)
	}
	// Output:
	// posted, nothing run; ready: 2
	// events run: 6
	// of 2 ready: run a/qp 0x12
	// of 2 ready: packet SEND to b/qp 0x12
	// of 2 ready: packet ACK to a/qp 0x12
	// b received on qp 0x12
	// b received on qp 0x11
}

// Device.Verbs is the way into the verbs interfaces: code written against
// verbs.Device, verbs.QP and the rest runs here unchanged, and would run on
// a binding to a real libibverbs. A test gets the concrete handle back
// with sim.QPOf (sim.CQOf, ...) to aim the fabric's controls at it.
func ExampleDevice_Verbs() {
	fabric, _ := sim.NewFabric(sim.Config{})
	defer fabric.Close()

	var dev verbs.Device = fabric.Devices()[0].Verbs() // what the application is given
	vctx, _ := dev.Open()
	pd, _ := vctx.AllocPD()
	cq, _ := vctx.CreateCQ(8, "my cq", nil, 0)
	q, _ := pd.CreateQP(verbs.QPInitAttr{SendCQ: cq, RecvCQ: cq, Type: verbs.QPTypeRC,
		Cap: verbs.QPCap{MaxSendWR: 2, MaxRecvWR: 2, MaxSendSGE: 1, MaxRecvSGE: 1}})
	fmt.Println(dev.Name(), q.Type(), q.State(), cq.CQContext())

	// The test's side: the same QP as a *sim.QP, for the fabric's controls.
	sq, ok := sim.QPOf(q)
	fmt.Println(ok, sq.Num() == q.Num(), fabric.InjectFatal(sq), q.State())
	// Output:
	// vsim0 RC RESET my cq
	// true true <nil> ERR
}
