package sim_test

import (
	"fmt"
	"testing"

	"github.com/verbsim/verbsim/internal/simhook"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// TestFaultChooser: with a chooser installed (the schedule explorer's
// hook), every packet of a fabric with fault probabilities is one draw
// among the outcomes those probabilities allow, no fault first, and the
// outcome chosen is the one that happens; without fault probabilities the
// chooser is never asked.
func TestFaultChooser(t *testing.T) {
	cases := []struct {
		faults sim.Faults
		pick   simhook.FaultKind
		want   string // the outcomes offered
		check  func(st sim.EngineStats, recvd int) error
	}{
		{sim.Faults{}, 0, "", func(st sim.EngineStats, n int) error { return expect(n == 1 && st.Dropped == 0, st, n) }},
		{sim.Faults{Drop: 0.5}, simhook.FaultDrop, "deliver drop", func(st sim.EngineStats, n int) error { return expect(n == 0 && st.Dropped == 1, st, n) }},
		{sim.Faults{Drop: 0.5}, simhook.FaultDeliver, "deliver drop", func(st sim.EngineStats, n int) error { return expect(n == 1 && st.Dropped == 0, st, n) }},
		{sim.Faults{Duplicate: 0.1, Delay: 0.1, MaxDelay: 7}, simhook.FaultDuplicate, "deliver duplicate delay 1 tick delay 7 ticks",
			func(st sim.EngineStats, n int) error { return expect(n == 2 && st.Duplicated == 1, st, n) }},
		{sim.Faults{Delay: 1}, simhook.FaultDelay, "delay 1 tick delay 10000 ticks",
			func(st sim.EngineStats, n int) error { return expect(n == 1 && st.Delayed == 1, st, n) }},
	}
	for _, c := range cases {
		f, err := sim.NewFabric(sim.Config{Mode: sim.Manual, Faults: c.faults, Devices: []sim.DeviceConfig{{Name: "a"}, {Name: "b"}}})
		if err != nil {
			t.Fatal(err)
		}
		offered := ""
		asked := 0
		simhook.SetFaultChooser(f, func(d *simhook.FaultDraw) int {
			asked++
			for i, o := range d.Outcomes {
				if i > 0 {
					offered += " "
				}
				offered += o.String()
			}
			for i, o := range d.Outcomes {
				if o.Kind == c.pick {
					return i
				}
			}
			return 0
		})
		send, recv := udDatagram(t, f)
		send()
		f.RunUntilIdle(1 << 20)
		if offered != c.want || (c.want == "") != (asked == 0) {
			t.Errorf("%+v: offered %q (asked %d), want %q", c.faults, offered, asked, c.want)
		}
		if err := c.check(f.Stats(), recv()); err != nil {
			t.Errorf("%+v, chose %v: %v", c.faults, c.pick, err)
		}
		f.Close()
	}
}

func expect(ok bool, st sim.EngineStats, n int) error {
	if ok {
		return nil
	}
	return fmt.Errorf("%d received; stats %+v", n, st)
}

// udDatagram makes a UD QP on each device of f: send posts one datagram from
// a to b, recv polls b's CQ and returns how many arrived.
func udDatagram(t *testing.T, f *sim.Fabric) (send func(), recv func() int) {
	t.Helper()
	type end struct {
		ctx *sim.Context
		pd  *sim.PD
		cq  *sim.CQ
		qp  *sim.QP
		mr  *sim.MR
	}
	mk := func(d *sim.Device) end {
		var e end
		e.ctx, _ = d.Open()
		e.pd, _ = e.ctx.AllocPD()
		e.cq, _ = e.ctx.CreateCQ(16, nil, nil, 0)
		e.mr, _ = e.pd.RegMR(make([]byte, 256), verbs.AccessLocalWrite)
		var err error
		e.qp, err = e.pd.CreateQP(sim.QPInitAttr{SendCQ: e.cq, RecvCQ: e.cq, Type: verbs.QPTypeUD,
			Cap: verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
		if err != nil {
			t.Fatal(err)
		}
		if err := sim.ReadyUD(e.qp, 1); err != nil {
			t.Fatal(err)
		}
		return e
	}
	a, b := mk(f.Devices()[0]), mk(f.Devices()[1])
	for i := range 2 {
		b.qp.PostRecv([]verbs.RecvWR{{WRID: uint64(i), SGList: []verbs.SGE{{Addr: b.mr.Addr() + uint64(64*i), Length: 64, LKey: b.mr.LKey()}}}})
	}
	port, _ := b.ctx.QueryPort(1)
	ah, err := a.pd.CreateAH(verbs.AHAttr{DLID: port.LID, PortNum: 1})
	if err != nil {
		t.Fatal(err)
	}
	send = func() {
		if _, err := a.qp.PostSend([]verbs.SendWR{{WRID: 9, Opcode: verbs.WRSend, SGList: []verbs.SGE{{Addr: a.mr.Addr(), Length: 8, LKey: a.mr.LKey()}},
			AH: ah, RemoteQPN: b.qp.Num(), RemoteQKey: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	recv = func() int {
		wcs := make([]verbs.WC, 4)
		n, _ := b.cq.Poll(wcs)
		return n
	}
	return send, recv
}
