package conformance

import (
	"testing"

	"github.com/verbsim/verbsim/internal/abigolden"
)

// TestAsyncVerbsTypesMatchGolden checks the table the ASYNC-04 and ASYNC-17
// cases compare against: every row must be the enumerator, value and
// ibv_event_type_str text that rdma-core 44 itself printed into the golden
// file, every enumerator of the golden file must have a row, and every
// out-of-range probe must render as the golden file says.
func TestAsyncVerbsTypesMatchGolden(t *testing.T) {
	rows, err := abigolden.Load("../verbs/testdata/verbs44.golden")
	if err != nil {
		t.Fatal(err)
	}
	golden := abigolden.Lookup(rows, abigolden.KindEventType)
	named := 0
	for _, g := range golden {
		if g.Name != "" {
			named++
		}
	}
	if len(asyncVerbsTypes) != named {
		t.Errorf("the table has %d event types, the golden file %d", len(asyncVerbsTypes), named)
	}
	for _, r := range asyncVerbsTypes {
		g, ok := golden[int64(r.val)]
		if !ok {
			t.Errorf("%s = %d: no such value in the golden file", r.name, r.val)
			continue
		}
		if g.Name != r.name || g.Str != r.str {
			t.Errorf("value %d: table says %s %q, golden file %s %q", r.val, r.name, r.str, g.Name, g.Str)
		}
	}
	probes := map[int64]bool{}
	for _, v := range asyncOutOfRange {
		probes[int64(v)] = true
	}
	for v, g := range golden {
		if g.Name != "" {
			continue
		}
		if !probes[v] {
			t.Errorf("the golden file probes %d, which asyncOutOfRange does not", v)
		}
		if g.Str != "unknown" {
			t.Errorf("the golden file renders out-of-range %d as %q; ASYNC-17 expects \"unknown\"", v, g.Str)
		}
	}
}
