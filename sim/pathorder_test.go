package sim_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/verbsim/verbsim/internal/simhook"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/trace"
	"github.com/verbsim/verbsim/verbs"
)

// pathOrderRun runs, on a Manual fabric made with cfg, an RC connection
// with retry_cnt 0 and MTU 256 that carries a 4-packet SEND, a 3-packet
// RDMA WRITE and a 1-packet SEND, with no fault configured, and returns
// the problems it saw: any completion but SUCCESS, a NAK, a
// retransmission. With anyOrder, the engine runs as before XFER-32.
func pathOrderRun(t *testing.T, cfg sim.Config, anyOrder bool) []string {
	t.Helper()
	log := &trace.Log{}
	cfg.Mode, cfg.Trace = sim.Manual, log
	f, a, b := rcPair(t, cfg, sim.ConnectOptions{PathMTU: verbs.MTU256, NoDefaults: true, Timeout: 14,
		RetryCnt: 0, RNRRetry: 7, MinRNRTimer: 12, RDAtomic: 16,
		Access: verbs.AccessRemoteWrite | verbs.AccessRemoteRead | verbs.AccessRemoteAtomic})
	simhook.SetAnyOrder(f, anyOrder)
	if _, err := b.q.PostRecv([]verbs.RecvWR{{WRID: 10, SGList: []verbs.SGE{b.sge(0, 1024)}},
		{WRID: 11, SGList: []verbs.SGE{b.sge(1024, 64)}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.q.PostSend([]verbs.SendWR{
		{WRID: 1, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(0, 1000)}},
		{WRID: 2, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(0, 700)},
			RemoteAddr: b.mr.Addr() + 4096, RKey: b.mr.RKey()},
		{WRID: 3, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(0, 8)}},
	}); err != nil {
		t.Fatal(err)
	}
	f.RunUntilIdle(1 << 40)
	var bad []string
	var w [16]verbs.WC
	for _, e := range []*end{a, b} {
		n, _ := e.cq.Poll(w[:])
		if n != 3 && e == a || n != 2 && e == b {
			bad = append(bad, fmt.Sprintf("%d completions", n))
		}
		for _, c := range w[:n] {
			if c.Status != verbs.WCSuccess {
				bad = append(bad, fmt.Sprintf("wr %d: %v", c.WRID, c.Status))
			}
		}
	}
	var sb strings.Builder
	if err := f.WriteTrace(&sb); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(sb.String(), "\n") {
		if strings.Contains(line, "NAK") || strings.Contains(line, "retransmit") {
			bad = append(bad, line)
		}
	}
	return bad
}

// lastReady is a Chooser that always runs the newest ready event.
func lastReady(ready []sim.ReadyEvent) int { return len(ready) - 1 }

// TestPathOrderXFER32: with no fault configured, neither the Random
// schedule nor a Chooser reorders the packets of one path (XFER-32), so an
// RC connection with retry_cnt 0 sees no NAK_SEQ, no retransmission and no
// RETRY_EXC_ERR, whichever event the schedule runs next. The engine
// without the rule (simhook.SetAnyOrder, the mutant) fails: the newest
// packet of a message is delivered before the first.
func TestPathOrderXFER32(t *testing.T) {
	cfgs := map[string]sim.Config{"chooser newest": {Chooser: lastReady}}
	for seed := range uint64(20) {
		cfgs[fmt.Sprint("random seed ", seed)] = sim.Config{Schedule: sim.Random, Seed: seed}
	}
	mutantCaught := 0
	for name, cfg := range cfgs {
		if bad := pathOrderRun(t, cfg, false); len(bad) > 0 {
			t.Errorf("%s: %s", name, strings.Join(bad, "; "))
		}
		if bad := pathOrderRun(t, cfg, true); len(bad) > 0 {
			mutantCaught++
		}
	}
	if bad := pathOrderRun(t, sim.Config{Chooser: lastReady}, true); len(bad) == 0 {
		t.Error("mutant (any order): the newest-first Chooser ran without a NAK or retransmission")
	}
	t.Logf("mutant caught by %d of %d", mutantCaught, len(cfgs))
	if mutantCaught < len(cfgs)/2 {
		t.Errorf("mutant (any order) caught by %d of %d schedules", mutantCaught, len(cfgs))
	}
}

// TestChooserSeesEligibleXFER32: the Chooser is offered every ready event
// but the packets behind an earlier packet of their path, and
// Fabric.Ready marks those Behind.
func TestChooserSeesEligibleXFER32(t *testing.T) {
	var offered [][]sim.ReadyEvent
	f, a, b := rcPair(t, sim.Config{Mode: sim.Manual, Chooser: func(ready []sim.ReadyEvent) int {
		offered = append(offered, append([]sim.ReadyEvent(nil), ready...))
		return 0
	}}, sim.ConnectOptions{PathMTU: verbs.MTU256})
	b.q.PostRecv([]verbs.RecvWR{{WRID: 1, SGList: []verbs.SGE{b.sge(0, 1024)}}})
	a.q.PostSend([]verbs.SendWR{{WRID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(0, 1000)}}})
	if !f.Step() { // the requester: 4 packets on the wire
		t.Fatal("nothing ran")
	}
	ready := f.Ready()
	if len(ready) != 4 {
		t.Fatalf("ready %v, want 4 packets", ready)
	}
	for i, r := range ready {
		if r.Kind != sim.EventPacket || r.Behind != (i > 0) {
			t.Errorf("ready[%d] = %+v: want a packet, behind %v", i, r, i > 0)
		}
	}
	// Only one may run: the Chooser is not asked.
	f.Step()
	if len(offered) != 0 {
		t.Errorf("the Chooser was asked: %v", offered)
	}
	f.Stabilize()
	for _, o := range offered {
		for _, r := range o {
			if r.Behind {
				t.Errorf("offered a packet behind another: %+v", r)
			}
		}
	}
	a.poll(t, 1)
	b.poll(t, 1)
}

// TestPathOrderAllocFree: choosing among the events that may run next
// allocates nothing once warm (the hot-path rule): a 4-packet RC SEND
// under the Random schedule and under a Chooser, post to both completions.
func TestPathOrderAllocFree(t *testing.T) {
	for name, cfg := range map[string]sim.Config{"random": {Schedule: sim.Random, Seed: 1}, "chooser": {Chooser: lastReady}} {
		_, a, b := rcPair(t, cfg, sim.ConnectOptions{PathMTU: verbs.MTU256})
		recv := []verbs.RecvWR{{WRID: 1, SGList: []verbs.SGE{b.sge(0, 1024)}}}
		send := []verbs.SendWR{{WRID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(0, 1000)}}}
		w := make([]verbs.WC, 1)
		round := func() {
			b.q.PostRecv(recv)
			a.q.PostSend(send)
			if n, _ := a.cq.Poll(w); n != 1 || w[0].Status != verbs.WCSuccess {
				t.Fatalf("%s: send %d %v", name, n, w[0].Status)
			}
			if n, _ := b.cq.Poll(w); n != 1 || w[0].Status != verbs.WCSuccess {
				t.Fatalf("%s: recv %d %v", name, n, w[0].Status)
			}
		}
		for range 10 {
			round()
		}
		if n := testing.AllocsPerRun(100, round); n != 0 {
			t.Errorf("%s: %v allocs per message", name, n)
		}
	}
}
