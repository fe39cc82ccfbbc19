package tracefmt

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzParseFilter: a filter (a command-line flag) parses or fails with an
// error that says "trace filter", never panics; one that parses selects a
// subset of the records, in order, and Write renders them as text and as
// JSON lines that are valid JSON.
func FuzzParseFilter(f *testing.F) {
	for _, s := range []string{"", "kind=packet", "obj=a/qp*|b/cq*,kind=packet|completion", "obj=?/cq#1|fabric",
		"kind=verb,kind=timer", "obj=", "kind=packets", "obj=a,,kind=verb", "obj=**?*", "kind=other|fault"} {
		f.Add(s)
	}
	all := recs()
	f.Fuzz(func(t *testing.T, s string) {
		flt, err := ParseFilter(s)
		if err != nil {
			if !strings.Contains(err.Error(), "trace filter") {
				t.Fatalf("ParseFilter(%q): %v", s, err)
			}
			return
		}
		if flt.String() != s {
			t.Fatalf("String() = %q, want %q", flt.String(), s)
		}
		shown := 0
		for _, r := range Collapse(all, flt) {
			shown += r.Count
		}
		if shown > len(all) {
			t.Fatalf("%d records shown of %d", shown, len(all))
		}
		var b bytes.Buffer
		if err := Write(&b, all, 0, flt, JSON); err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
			if line != "" && !json.Valid([]byte(line)) {
				t.Fatalf("not JSON: %s", line)
			}
		}
		b.Reset()
		if err := Write(&b, all, 0, flt, Text); err != nil {
			t.Fatal(err)
		}
	})
}
