package ops

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/verbsim/verbsim/conformance/simdev"
	"github.com/verbsim/verbsim/internal/scenario"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
	"pgregory.net/rapid"
)

// TestTrafficLogReplaysAsScenario checks that a traffic run's log is a
// scenario that does what the run did: run by package scenario (the code
// of verbsim run) on verbsim, every step has the outcome the call had in
// the run, the same errno, and for a poll the same completions, under
// every built-in profile, with and without faults. Each run is replayed
// by the timeline's interpreter, so it runs fewer checks than
// TestTrafficStateMachine by default (-rapid.checks sets more).
func TestTrafficLogReplaysAsScenario(t *testing.T) {
	defaultFlag(t, "rapid.steps", strconv.Itoa(trafficSteps))
	defaultFlag(t, "rapid.checks", "20")
	for _, p := range sim.Profiles() {
		for _, faults := range []bool{false, true} {
			name := p.Name
			if faults {
				name += "/faults"
			}
			t.Run(name, func(t *testing.T) {
				rapid.Check(t, func(rt *rapid.T) {
					r := runTraffic(rt, simdev.TrafficFabric(p), faults)
					trafficReplayed(rt, r.log, r.outcomes)
				})
			})
		}
	}
}

// trafficReplayed runs log as a scenario and compares each step's outcome
// with outcomes.
func trafficReplayed(t *rapid.T, log []TrafficOp, outcomes []string) {
	t.Helper()
	text := TrafficLog(log, outcomes)
	s, err := scenario.Parse("traffic.scen", []byte(text))
	if err != nil {
		t.Fatalf("the log is no scenario: %v\n%s", err, text)
	}
	res, err := scenario.Run(s, "default")
	if err != nil {
		t.Fatalf("the scenario stopped: %v\n%s", err, text)
	}
	if len(res.Steps) != len(log) {
		t.Fatalf("%d steps for %d operations", len(res.Steps), len(log))
	}
	for i, st := range res.Steps {
		got := st.Errno
		if _, poll := log[i].(TPoll); poll && got == "" {
			got = polled(st.Said)
		}
		if n := RunOutcome(st.Narration); n != outcomes[i] {
			t.Fatalf("step %d %q: the log's narration says %q, the run %q", i, st.Command, n, outcomes[i])
		}
		if got != outcomes[i] {
			t.Fatalf("step %d %q: outcome %q on replay, %q in the run\n%s", i, st.Command, got, outcomes[i], text)
		}
	}
}

// polled reads the completions a poll_cq step printed, as wcWords renders
// them.
func polled(said []string) string {
	var out []string
	for _, l := range said {
		if f := strings.Fields(l); len(f) >= 3 && f[0] == "wr_id" {
			out = append(out, f[0]+" "+f[1]+" "+f[2])
		}
	}
	return strings.Join(out, "; ")
}

// TestTrafficLogRoundTrip checks the printer against the parser: every
// operation a traffic run logs prints as a line that ParseTraffic reads
// back as the same operation.
func TestTrafficLogRoundTrip(t *testing.T) {
	defaultFlag(t, "rapid.steps", strconv.Itoa(trafficSteps))
	rapid.Check(t, func(rt *rapid.T) {
		p := rapid.SampledFrom(sim.Profiles()).Draw(rt, "profile")
		r := runTraffic(rt, simdev.TrafficFabric(p), rapid.Bool().Draw(rt, "faults"))
		text := TrafficLog(r.log, r.outcomes)
		got, err := ParseTraffic([]byte(text))
		if err != nil {
			rt.Fatalf("%v\n%s", err, text)
		}
		if d := cmp.Diff(r.log, got); d != "" {
			rt.Fatalf("parsed log differs from the operations (-logged +parsed):\n%s", d)
		}
	})
}

// FuzzParseTraffic: ParseTraffic never panics, and whatever it reads
// prints as lines it reads back the same.
func FuzzParseTraffic(f *testing.F) {
	for _, op := range []TrafficOp{
		TFabric{Seed: 3, MTU: 256, RoCE: true, Readings: verbs.Readings{FreeSlotOnRetire: true}, Drop: 0.03, Dup: 0.5, Delay: 1, MaxDelay: 2000, Random: true},
		TOpen{Dev: 1}, TCreateCQ{Name: "cq2", Dev: 1, CQE: 256}, TAllocPD{Name: "pd0", Dev: 0},
		TRegMR{Name: "mr0", PD: "pd0", Size: 34048, Access: verbs.AccessLocalWrite | verbs.AccessMWBind},
		TFill{MR: "mr0", At: []Piece{{10, 5}, {0, 10}}, Kind: "payload", Seed: 0x5eed},
		TCreateQP{Name: "qp0", PD: "pd0", Type: verbs.QPTypeUD, SendCQ: "cq0", RecvCQ: "cq1", SendWR: 2, RecvWR: 6, SendSGE: 3, RecvSGE: 3, Inline: 64, SigAll: true},
		TModifyQP{QP: "qp0", To: verbs.QPStateRTR, Mask: verbs.QPAttrState | verbs.QPAttrAV | verbs.QPAttrDestQPN | verbs.QPAttrRQPSN | verbs.QPAttrPathMTU,
			Peer: "qp1", AV: "b", PathMTU: 256, RQPSN: 0xfffffe},
		TCreateAH{Name: "ah0_1", PD: "pd0", Dev: 1},
		TPostRecv{QP: "qp0", MR: "mr0", WRs: []TRecv{{WRID: 1, SGL: []Piece{{12288, 0}}}, {WRID: 2}}},
		TPostSend{QP: "qp0", MR: "mr0", WRs: []TSend{{WRID: 9, Op: verbs.WRRDMAWrite, SGL: []Piece{{0, 8}}, Signaled: true, RAddrMR: "mr1", RAddr: 100, RKey: 0x203},
			{WRID: 10, Op: verbs.WRSendWithImm, Inline: true, Imm: 7, AH: "ah0_1", Dest: "qp1", QKey: 0x1111}, {WRID: 11, DestQPN: 0xabcde}}},
		TPostSend{QP: "qp0", MR: "mr0", WRs: []TSend{{WRID: 12, Op: verbs.WRBindMW, RKey: 0x700}}, MW: "mw0", BindMR: "mr0", BindAt: Piece{33792, 8},
			BindAccess: verbs.AccessRemoteRead | verbs.AccessZeroBased},
		TPoll{CQ: "cq0", N: 16}, TTick{NS: 2000000}, TRun{NS: 1 << 26}, TGetAsync{Dev: 1}, TAckAsync{Dev: 0},
		TAllocMW{Name: "mw0", PD: "pd0", Type: verbs.MWType2}, TDeallocMW{MW: "mw0"},
		TBindMW{QP: "qp0", MW: "mw1", MR: "mr0", WRID: 4, At: Piece{33800, 0}, Access: verbs.AccessRemoteWrite, Signaled: true},
	} {
		f.Add(op.String())
	}
	f.Fuzz(func(t *testing.T, src string) {
		ops, err := ParseTraffic([]byte(src))
		if err != nil {
			return
		}
		text := TrafficLog(ops, nil)
		again, err := ParseTraffic([]byte(text))
		if err != nil {
			t.Fatalf("%q parses, but its operations print as %q, which does not: %v", src, text, err)
		}
		if d := cmp.Diff(ops, again); d != "" {
			t.Fatalf("%q: printed and parsed again, the operations differ (-first +again):\n%s", src, d)
		}
	})
}
