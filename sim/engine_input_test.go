package sim_test

import (
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// TestEngineBadInput: the engine's own calls refuse bad arguments with
// EINVAL (or a configuration error) and change nothing.
func TestEngineBadInput(t *testing.T) {
	for i, cfg := range []sim.Config{
		{Mode: sim.Background + 1},
		{Schedule: sim.Random + 1},
		{Faults: sim.Faults{Drop: -0.1}},
		{Faults: sim.Faults{Duplicate: 1.5}},
		{Devices: []sim.DeviceConfig{{}}},
		{Mode: sim.Background, TickDuration: -1},
		{TickDuration: -time.Second},
	} {
		if f, err := sim.NewFabric(cfg); !errors.Is(err, syscall.EINVAL) {
			if f != nil {
				f.Close()
			}
			t.Errorf("NewFabric, config %d: %v, want EINVAL", i, err)
		}
	}
	f, a, b := rcPair(t, sim.Config{}, sim.ConnectOptions{})
	if err := f.SetFaults(sim.Faults{Delay: 2}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("SetFaults with a probability of 2: %v, want EINVAL", err)
	}
	other, _, _ := twoDevices(t, sim.Config{})
	einval := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, syscall.EINVAL) {
			t.Errorf("%s: %v, want EINVAL", what, err)
		}
	}
	einval("ForceStatus(nil)", f.ForceStatus(nil, 1, false, verbs.WCRemOpErr))
	einval("ForceStatus(Success)", f.ForceStatus(a.q, 1, false, verbs.WCSuccess))
	einval("ForceStatus(status 99)", f.ForceStatus(a.q, 1, false, 99))
	einval("ForceStatus(QP of another fabric)", other.ForceStatus(a.q, 1, false, verbs.WCRemOpErr))
	einval("InjectFatal(QP of another fabric)", other.InjectFatal(a.q))
	einval("InjectSRQError(nil)", f.InjectSRQError(nil))
	srq, err := b.pd.CreateSRQ(sim.SRQInitAttr{Attr: verbs.SRQAttr{MaxWR: 4, MaxSGE: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer srq.Destroy()
	einval("InjectSRQError(SRQ of another fabric)", other.InjectSRQError(srq))
	einval("SetPortState(0)", f.Devices()[0].SetPortState(0, false))
	einval("SetPortState(9)", f.Devices()[0].SetPortState(9, false))
	einval("Connect(nil, b)", sim.Connect(nil, b.q, sim.ConnectOptions{}))
	einval("Connect(a, a)", sim.Connect(a.q, a.q, sim.ConnectOptions{}))
	einval("ReadyUD(RC QP)", sim.ReadyUD(a.q, 1))
	// Nothing changed: the connection still works.
	if a.q.State() != verbs.QPStateRTS || b.q.State() != verbs.QPStateRTS {
		t.Fatalf("states %v %v", a.q.State(), b.q.State())
	}
	b.q.PostRecv([]verbs.RecvWR{{WRID: 1, SGList: []verbs.SGE{b.sge(0, 64)}}})
	a.q.PostSend([]verbs.SendWR{{WRID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(0, 8)}}})
	if w := a.poll(t, 1)[0]; w.Status != verbs.WCSuccess {
		t.Errorf("send after the bad calls: %v", &w)
	}
	b.poll(t, 1)
	if ready, future := f.Pending(); ready != 0 || future != 0 {
		t.Errorf("pending %d ready, %d future after an idle exchange", ready, future)
	}
}
