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

// TestQPTableCoversTheCatalogue spells out, independently of the table in
// qp.go, the legal pairs QP-07 lists, and checks the table has exactly
// those (RESET→ERR aside, which QP-08 leaves to the profile).
func TestQPTableCoversTheCatalogue(t *testing.T) {
	legal := map[string][]string{
		"RESET": {"RESET", "INIT"},
		"INIT":  {"RESET", "ERR", "INIT", "RTR"},
		"RTR":   {"RESET", "ERR", "RTS"},
		"RTS":   {"RESET", "ERR", "RTS", "SQD"},
		"SQD":   {"RESET", "ERR", "RTS", "SQD"},
		"SQE":   {"RESET", "ERR", "RTS"},
		"ERR":   {"RESET", "ERR"},
	}
	n := 0
	for from, tos := range legal {
		for _, to := range tos {
			n++
			found := false
			for pr := range qpTable {
				if pr[0].String() == from && pr[1].String() == to {
					found = true
				}
			}
			if !found {
				t.Errorf("the table lacks %s→%s", from, to)
			}
		}
	}
	if len(qpTable) != n {
		t.Errorf("the table has %d pairs, the catalogue %d", len(qpTable), n)
	}
	for _, p := range []Profile{{}, {ResetToErr: true}} {
		_, _, ok := qpTransition(p, qpStates[0], qpStates[6], qpTypes[0])
		if ok != p.ResetToErr {
			t.Errorf("RESET→ERR under ResetToErr=%v: legal=%v", p.ResetToErr, ok)
		}
	}
}
