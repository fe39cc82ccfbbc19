package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/verbsim/verbsim/conformance"
	"github.com/verbsim/verbsim/conformance/ops"
	"github.com/verbsim/verbsim/conformance/simdev"
	"github.com/verbsim/verbsim/internal/rapidtb"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
	"pgregory.net/rapid"
)

// misreading is verbsim's default device stating the other reading of the
// overrun rule: its behaviour and the model's predictions part at
// the first poll after an overrun.
type misreading struct{ conformance.Device }

func (d misreading) Profile() verbs.Readings {
	p := d.Device.Profile()
	p.OverrunDrops = !p.OverrunDrops
	return p
}

func newMisreading() (conformance.Device, error) {
	d, err := simdev.Factory(sim.DefaultProfile())()
	return misreading{d}, err
}

// setRapidFlag sets one of rapid's flags for the rest of the test.
func setRapidFlag(t *testing.T, name, value string) {
	f := flag.Lookup(name)
	old := f.Value.String()
	if err := f.Value.Set(value); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Value.Set(old) })
}

// TestRunReplaysAFailingStateMachine is the round trip of a failure: the
// conformance state machine (conformance/ops) fails on a device that
// misstates a reading, and prints the run as a scenario; verbsim run replays
// that text as it is, every step of it, under the readings the device
// stated, so its last step shows what the model expected; and the same
// text, parsed back into operations, fails the misreading device again at
// its last operation and passes verbsim itself.
func TestRunReplaysAFailingStateMachine(t *testing.T) {
	setRapidFlag(t, "rapid.nofailfile", "true")
	setRapidFlag(t, "rapid.seed", "20261128")
	f := rapidtb.New("replay")
	f.Check(func(rt *rapid.T) { ops.StateMachine(rt, newMisreading) })
	if !f.Failed() {
		t.Fatal("the state machine passed a device that misstates the overrun reading")
	}
	_, log, ok := strings.Cut(f.Message(), ops.FailureMark+"\n\n")
	if !ok {
		t.Fatalf("the failure does not print the run:\n%s", f.Message())
	}
	log, _, _ = strings.Cut(log, "\nTo reproduce")
	file := filepath.Join(t.TempDir(), "failure.scen")
	if err := os.WriteFile(file, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}

	// verbsim run replays it.
	var out, errOut bytes.Buffer
	if code := run([]string{"run", "-format", "json", file}, &out, &errOut); code != 0 {
		t.Fatalf("verbsim run: exit %d: %s\nthe log:\n%s", code, errOut.String(), log)
	}
	var res struct {
		Steps []struct{ Command, Errno string }
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	parsed, err := ops.Parse([]byte(log))
	if err != nil {
		t.Fatal(err)
	}
	const header = 4 // fabric, open_device, alloc_pd, create_ah
	if len(res.Steps) != header+len(parsed) {
		t.Fatalf("verbsim run ran %d steps; the log has %d operations after its header", len(res.Steps), len(parsed))
	}
	for i, op := range parsed {
		if got := res.Steps[header+i].Command; got != op.String() {
			t.Errorf("step %d is %q, the operation %q", header+i, got, op)
		}
	}

	// Replayed under the readings the device stated, the step that differed
	// has the outcome the model expected.
	first, _, _ := strings.Cut(f.Message(), "\n")
	if _, exp, ok := strings.Cut(first, "; the model expects "); ok {
		want := strings.Fields(exp)[0]
		if want == "success" {
			want = ""
		}
		if got := res.Steps[len(res.Steps)-1].Errno; got != want {
			t.Errorf("the last step replayed with outcome %q; the model expected %q", got, want)
		}
	}

	// The operations reproduce the failure, at the last one, and verbsim
	// itself passes them.
	err = ops.Replay(newMisreading, parsed)
	if err == nil || !strings.Contains(first, strings.SplitN(err.Error(), "\n", 2)[0]) {
		t.Errorf("replayed on the misreading device: %v\nthe run failed with: %s", err, first)
	}
	if err := ops.Replay(simdev.Factory(sim.DefaultProfile()), parsed); err != nil {
		t.Errorf("verbsim fails its own run: %v", err)
	}
}
