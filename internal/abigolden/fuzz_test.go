package abigolden

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// FuzzParse: Parse never panics, and whatever it accepts it can write back
// and read again to the same rows.
func FuzzParse(f *testing.F) {
	f.Add("wc_status\t0\tIBV_WC_SUCCESS\tsuccess\n")
	f.Add("# comment\n\nevent_type\t20\t\tunknown\n")
	f.Add("wc_status\t0\tA\nwc_status\t0\tB\n")
	f.Add("wc_sizeof\t48\tstruct ibv_wc\n")
	f.Add("x\tnotanumber\ty\n")
	f.Fuzz(func(t *testing.T, in string) {
		rows, err := Parse(strings.NewReader(in))
		if err != nil {
			return
		}
		var b bytes.Buffer
		for _, r := range rows {
			if r.Str != "" {
				fmt.Fprintf(&b, "%s\t%d\t%s\t%s\n", r.Kind, r.Value, r.Name, r.Str)
			} else {
				fmt.Fprintf(&b, "%s\t%d\t%s\n", r.Kind, r.Value, r.Name)
			}
		}
		again, err := Parse(&b)
		if err != nil {
			t.Fatalf("re-parsing accepted rows failed: %v\n%s", err, b.String())
		}
		if len(again) != len(rows) {
			t.Fatalf("round trip changed the row count: %d -> %d", len(rows), len(again))
		}
		for i := range rows {
			if rows[i] != again[i] {
				t.Fatalf("row %d changed in the round trip: %+v -> %+v", i, rows[i], again[i])
			}
		}
	})
}
