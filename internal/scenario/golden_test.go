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

// TestTourStepsDoSomething: every step of the tour that drives the engine
// (stabilize, step, advance, run, tick) makes something happen, under one
// profile at least, or has a comment saying why it is there: a step that
// runs nothing and changes nothing teaches nothing (issue #21: three such
// steps ended 11-rnr-retry).
func TestTourStepsDoSomething(t *testing.T) {
	files, err := fs.Glob(Tour, "tour/*.scen")
	if err != nil || len(files) == 0 {
		t.Fatalf("no tour scenarios: %v", err)
	}
	drivers := map[string]bool{"stabilize": true, "step": true, "advance": true, "run": true, "tick": true}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".scen")
		runs := []*Result{runTourProfile(t, name, "default"), runTourProfile(t, name, "rxe")}
		for i, st := range runs[0].Steps {
			if !drivers[strings.Fields(st.Command)[0]] || len(st.Narration) > 0 {
				continue
			}
			idle := true
			for _, r := range runs {
				s := r.Steps[i]
				idle = idle && len(s.Engine) == 0 && len(s.Changed) == 0 && s.Errno == ""
			}
			if idle {
				t.Errorf("%s:%d: %q runs nothing and changes nothing under either profile; remove it, or say in a comment why it is there", f, st.Line, st.Command)
			}
		}
	}
}
