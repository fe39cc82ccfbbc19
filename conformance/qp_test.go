package conformance

import (
	"testing"

	"github.com/verbsim/verbsim/internal/abigolden"
)

// TestQPStateValuesMatchGolden checks the table the QP-06 case compares
// against: every row is an enumerator and value that rdma-core 44 printed
// into the golden file, and every enumerator of the file has a row.
func TestQPStateValuesMatchGolden(t *testing.T) {
	rows, err := abigolden.Load("../verbs/testdata/verbs44.golden")
	if err != nil {
		t.Fatal(err)
	}
	golden := abigolden.Lookup(rows, abigolden.KindQPState)
	if len(golden) != len(qpStateValues) {
		t.Errorf("the table has %d states, the golden file %d", len(qpStateValues), len(golden))
	}
	for _, r := range qpStateValues {
		g, ok := golden[int64(r.val)]
		if !ok || g.Name != r.name {
			t.Errorf("%s = %d: the golden file has %q for %d", r.name, r.val, g.Name, r.val)
		}
	}
}
