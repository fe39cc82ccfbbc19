package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/verbsim/verbsim/conformance"
	"github.com/verbsim/verbsim/conformance/ops"
	"github.com/verbsim/verbsim/conformance/simdev"
	"github.com/verbsim/verbsim/internal/rapidtb"
	"github.com/verbsim/verbsim/sim"
	"pgregory.net/rapid"
)

// misreadingFabric is verbsim's traffic fabric under the default profile
// stating the other reading of QP-29 and QP-31 (FreeSlotOnRetire): the
// model and the fabric part where a post meets a queue whose requests
// retired but were not polled.
type misreadingFabric struct{ conformance.TrafficFabric }

func (f misreadingFabric) TrafficProfile() conformance.TrafficProfile {
	p := f.TrafficFabric.TrafficProfile()
	p.FreeSlotOnRetire = !p.FreeSlotOnRetire
	return p
}

func newMisreadingFabric(seed uint64, faults bool) (conformance.TrafficFabric, error) {
	f, err := simdev.TrafficFabric(sim.DefaultProfile())(seed, faults)
	return misreadingFabric{f}, err
}

// TestRunReplaysAFailingTrafficMachine is the round trip of a traffic
// failure: the traffic state machine (conformance/ops) fails on a fabric
// that misstates a transport reading and prints the run as a scenario;
// verbsim run replays that text as it is, one step per call of the run,
// and every step has the outcome the log's narration says it had in the
// run (the errno, or the completions polled), up to the call that
// differed, which has the outcome the model expected. Replayed with the readings the fabric really follows, the
// last step has its run's outcome too; and the text parses back into the
// operations it prints.
func TestRunReplaysAFailingTrafficMachine(t *testing.T) {
	setRapidFlag(t, "rapid.nofailfile", "true")
	setRapidFlag(t, "rapid.seed", "20261128")
	f := rapidtb.New("replay")
	f.Check(func(rt *rapid.T) { ops.TrafficStateMachine(rt, newMisreadingFabric, false) })
	if !f.Failed() {
		t.Fatal("the traffic state machine passed a fabric that misstates FreeSlotOnRetire")
	}
	_, log, ok := strings.Cut(f.Message(), ops.TrafficFailureMark+"\n\n")
	if !ok {
		t.Fatalf("the failure does not print the run:\n%s", f.Message())
	}
	log, _, _ = strings.Cut(log, "\nTo reproduce")
	first, _, _ := strings.Cut(f.Message(), "\n")
	t.Logf("the run failed with: %s", first)
	parsed, err := ops.ParseTraffic([]byte(log))
	if err != nil {
		t.Fatalf("the log does not parse: %v\n%s", err, log)
	}

	// verbsim run replays it as printed, under the readings the fabric
	// stated.
	steps := runLog(t, log)
	if len(steps) != len(parsed) {
		t.Fatalf("verbsim run ran %d steps; the log has %d operations", len(steps), len(parsed))
	}
	for i, op := range parsed {
		if got := steps[i].Command; got != op.String() {
			t.Errorf("step %d is %q, the operation %q", i, got, op)
		}
	}
	for i, st := range steps[:len(steps)-1] {
		if got, want := st.outcome(), ops.RunOutcome(st.Narration); got != want {
			t.Fatalf("step %d %q: %q on replay, %q in the run\n%s", i, st.Command, got, want, log)
		}
	}

	// The last step, the post that differed, replays as the model said it
	// would go under the stated readings.
	last := steps[len(steps)-1]
	if last.outcome() == ops.RunOutcome(last.Narration) {
		t.Errorf("the last step %q replays with the run's outcome %q under the readings the fabric stated", last.Command, last.outcome())
	}

	// With the readings the fabric follows, every step, the last included,
	// has the outcome it had in the run.
	fab := parsed[0].(ops.TFabric)
	fab.Readings = sim.DefaultProfile().Readings
	truth := strings.Replace(log, parsed[0].String(), fab.String(), 1)
	for i, st := range runLog(t, truth) {
		if got, want := st.outcome(), ops.RunOutcome(st.Narration); got != want {
			t.Fatalf("step %d %q under the fabric's own readings: %q on replay, %q in the run\n%s", i, st.Command, got, want, truth)
		}
	}
}

// replayStep is a step of verbsim run's JSON output.
type replayStep struct {
	Command, Errno string
	Narration      []string
	Said           []string
}

// outcome is the step's errno, or for a poll the completions it printed
// as the traffic log's narration writes them.
func (s replayStep) outcome() string {
	if s.Errno != "" || !strings.HasPrefix(s.Command, "poll_cq ") {
		return s.Errno
	}
	var out []string
	for _, l := range s.Said {
		if f := strings.Fields(l); len(f) >= 3 && f[0] == "wr_id" {
			out = append(out, strings.Join(f[:3], " "))
		}
	}
	return strings.Join(out, "; ")
}

// runLog runs a scenario text with verbsim run -format json and returns
// its steps.
func runLog(t *testing.T, log string) []replayStep {
	t.Helper()
	file := filepath.Join(t.TempDir(), "traffic.scen")
	if err := os.WriteFile(file, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"run", "-format", "json", file}, &out, &errOut); code != 0 {
		t.Fatalf("verbsim run: exit %d: %s\nthe log:\n%s", code, errOut.String(), log)
	}
	var res struct{ Steps []replayStep }
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	return res.Steps
}
