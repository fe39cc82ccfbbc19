package scenario

import (
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected blocks of the tour scenarios with what they print now")

// Golden runs path under every profile and returns the file as it should
// read: its narration and commands with the blocks the runs printed.
func golden(t *testing.T, path string, src []byte) string {
	t.Helper()
	s, err := Parse(path, src)
	if err != nil {
		t.Fatal(err)
	}
	var results []*Result
	for _, p := range Profiles() {
		r, err := Run(s, p)
		if err != nil {
			t.Fatalf("profile %s: %v", p, err)
		}
		results = append(results, r)
	}
	return Format(s, Merge(results))
}

// TestTour runs every tour scenario under both profiles as a golden test:
// the file must read exactly as its runs print it. go test
// ./internal/scenario -rewrite regenerates the blocks.
func TestTour(t *testing.T) {
	files, err := fs.Glob(Tour, "tour/*.scen")
	if err != nil || len(files) == 0 {
		t.Fatalf("no tour scenarios: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".scen"), func(t *testing.T) {
			src, err := fs.ReadFile(Tour, f)
			if err != nil {
				t.Fatal(err)
			}
			got := golden(t, f, src)
			if *rewrite {
				if err := os.WriteFile(f, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if diff := cmp.Diff(string(src), got); diff != "" {
				t.Errorf("%s is stale (-file +run); go test ./internal/scenario -rewrite regenerates it:\n%s", f, diff)
			}
		})
	}
}
