package abigolden_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/verbsim/verbsim/internal/abigolden"
)

const goldenPath = "../../verbs/testdata/verbs44.golden"

func TestParse(t *testing.T) {
	in := "# comment\n" +
		"\n" +
		"wc_status\t0\tIBV_WC_SUCCESS\tsuccess\n" +
		"wc_status\t4294967295\t\tunknown\r\n" +
		"qp_state\t7\tIBV_QPS_UNKNOWN\n" +
		"wc_status\t5\tIBV_WC_WR_FLUSH_ERR\tWork Request Flushed Error\n"
	got, err := abigolden.Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []abigolden.Row{
		{Kind: "wc_status", Value: 0, Name: "IBV_WC_SUCCESS", Str: "success"},
		{Kind: "wc_status", Value: 4294967295, Name: "", Str: "unknown"},
		{Kind: "qp_state", Value: 7, Name: "IBV_QPS_UNKNOWN"},
		{Kind: "wc_status", Value: 5, Name: "IBV_WC_WR_FLUSH_ERR", Str: "Work Request Flushed Error"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Parse mismatch (-want +got):\n%s", d)
	}

	wantStatus := map[int64]abigolden.Row{0: want[0], 4294967295: want[1], 5: want[3]}
	if d := cmp.Diff(wantStatus, abigolden.Lookup(got, "wc_status")); d != "" {
		t.Errorf("Lookup mismatch (-want +got):\n%s", d)
	}
	if m := abigolden.Lookup(got, "no_such_kind"); m == nil || len(m) != 0 {
		t.Errorf("Lookup(unknown kind) = %v, want empty non-nil map", m)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in, wantErr string
	}{
		{"too few fields", "wc_status\t0\n", "line 1: want 3 or 4"},
		{"too many fields", "a\t1\tB\tc\td\n", "line 1: want 3 or 4"},
		{"empty kind", "\t1\tB\n", "line 1: empty kind"},
		{"bad value", "# x\nk\tone\tB\n", "line 2: bad value"},
		{"duplicate", "k\t1\tA\nk\t1\tB\n", "line 2: duplicate k 1 (first on line 1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := abigolden.Parse(strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Parse(%q) error = %v, want containing %q", tc.in, err, tc.wantErr)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	if _, err := abigolden.Load(filepath.Join(t.TempDir(), "missing.golden")); err == nil {
		t.Error("Load(missing file) succeeded")
	}
	bad := filepath.Join(t.TempDir(), "bad.golden")
	if err := os.WriteFile(bad, []byte("k\tx\tN\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := abigolden.Load(bad)
	if err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("Load(bad) error = %v, want one naming %s", err, bad)
	}
}

// TestLoadRealGolden checks the shape of the committed table: every kind is
// present, the enums other packages rely on have the expected sizes, and the
// out-of-range probes (ASYNC-17) are there.
func TestLoadRealGolden(t *testing.T) {
	rows, err := abigolden.Load(goldenPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		kind string
		n    int
	}{
		{abigolden.KindWCStatus, 24 + 3},  // 0..23 plus three probes
		{abigolden.KindWCOpcode, 19},      // WC-07
		{abigolden.KindWCFlags, 7},        // WC-08
		{abigolden.KindWROpcode, 13},      // WC-07
		{abigolden.KindEventType, 20 + 4}, // ASYNC-04 plus four probes
		{abigolden.KindQPState, 8},        // RESET..UNKNOWN
		{abigolden.KindQPType, 7},         // RC..DRIVER
		{abigolden.KindAccessFlags, 9},    // LOCAL_WRITE..RELAXED_ORDERING
		{abigolden.KindWCField, 13},       // struct ibv_wc members
		{abigolden.KindWCSizeof, 1},
	} {
		if got := len(abigolden.Lookup(rows, tc.kind)); got != tc.n {
			t.Errorf("%s: %d rows, want %d", tc.kind, got, tc.n)
		}
	}
	ev := abigolden.Lookup(rows, abigolden.KindEventType)
	if r := ev[20]; r.Name != "" || r.Str != "unknown" {
		t.Errorf("ASYNC-04/ASYNC-17: event 20 = %+v, want unnamed probe rendering \"unknown\" (no DEVICE_SPEED_CHANGE in v44)", r)
	}
	if r := ev[0]; r.Name != "IBV_EVENT_CQ_ERR" || r.Str != "CQ error" {
		t.Errorf("event 0 = %+v", r)
	}
}
