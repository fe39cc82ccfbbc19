package sim_test

import (
	"testing"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// TestResetPurgesCQ_CQ26: the receives a QP still holds are flushed when it
// fails; under ResetPurgesCQ (CQ-26 B, mlx5) a RESET deletes those
// completions from its CQ, and a destroy deletes what the next failure
// left; without the reading (A) they stay to be polled.
func TestResetPurgesCQ_CQ26(t *testing.T) {
	for _, purge := range []bool{false, true} {
		p := sim.DefaultProfile()
		p.Readings.ResetPurgesCQ = purge
		_, a, _ := rcPair(t, sim.Config{Profile: p}, sim.ConnectOptions{PathMTU: verbs.MTU1024})
		post := func() {
			t.Helper()
			if _, err := a.q.PostRecv([]verbs.RecvWR{{WRID: 1, SGList: []verbs.SGE{a.sge(0, 8)}}, {WRID: 2, SGList: []verbs.SGE{a.sge(8, 8)}}}); err != nil {
				t.Fatal(err)
			}
			if err := a.q.Modify(&verbs.QPAttr{QPState: verbs.QPStateErr}, verbs.QPAttrState); err != nil {
				t.Fatal(err)
			}
		}
		post()
		if err := a.q.Modify(&verbs.QPAttr{QPState: verbs.QPStateReset}, verbs.QPAttrState); err != nil {
			t.Fatal(err)
		}
		want := 2
		if purge {
			want = 0
		}
		for _, w := range a.poll(t, want) {
			if w.Status != verbs.WCWRFlushErr {
				t.Errorf("purge=%v: %v after RESET, want a flush", purge, &w)
			}
		}
		if err := a.q.Modify(&verbs.QPAttr{QPState: verbs.QPStateInit, PKeyIndex: 0, PortNum: 1}, verbs.QPAttrState|verbs.QPAttrPKeyIndex|verbs.QPAttrPort|verbs.QPAttrAccessFlags); err != nil {
			t.Fatal(err)
		}
		post()
		if err := a.q.Destroy(); err != nil {
			t.Fatal(err)
		}
		a.poll(t, want)
	}
}
