package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// TestWalkthroughGolden runs the walkthrough under each profile and compares
// it with the reviewed transcript in testdata. Run with -update after a
// deliberate change and review the diff.
func TestWalkthroughGolden(t *testing.T) {
	for _, profile := range []string{"default", "rxe"} {
		t.Run(profile, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := run([]string{"walkthrough", "-profile", profile}, &out, &errOut); code != 0 {
				t.Fatalf("exit %d: %s", code, errOut.String())
			}
			path := filepath.Join("testdata", "walkthrough-"+profile+".golden")
			if *update {
				if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./cmd/verbsim -update to create it)", err)
			}
			if d := cmp.Diff(string(want), out.String()); d != "" {
				t.Errorf("walkthrough output changed (-want +got):\n%s", d)
			}
		})
	}
}

func TestCommandLine(t *testing.T) {
	for _, tt := range []struct {
		args []string
		code int
		in   string // expected in stdout+stderr
	}{
		{nil, 0, "Overrun into IBV_EVENT_CQ_ERR"},
		{[]string{"help"}, 0, "usage: verbsim"},
		{[]string{"-h"}, 0, "usage: verbsim"},
		{[]string{"-profile", "mlx9"}, 2, `unknown profile "mlx9"`},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"walkthrough", "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"-bogus"}, 2, "flag provided but not defined"},
	} {
		var out bytes.Buffer
		code := run(tt.args, &out, &out)
		if code != tt.code || !strings.Contains(out.String(), tt.in) {
			t.Errorf("verbsim %v: exit %d, output %q; want exit %d containing %q", tt.args, code, out.String(), tt.code, tt.in)
		}
	}
}
