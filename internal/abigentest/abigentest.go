// Package abigentest is the test that a committed ABI golden file
// (internal/abigolden's format) is what its C generator prints against the
// installed library: the generator is built with gcc, run, and its output
// compared with the file, so that the file cannot drift from it. Only
// tests import it.
package abigentest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Generator names a generator and what it needs.
type Generator struct {
	Source string // the generator's C file, relative to the test's package
	Header string // a header of the library's -dev package; the test is skipped without it
	Lib    string // the library to link: "-libverbs", "-lrdmacm"
	Golden string // the committed golden file
	Regen  string // how to regenerate it, for the failure message ("" for none)
}

// Check builds and runs g's generator and fails t when its output is not
// the golden file. It is skipped with -short, without gcc and without the
// header.
func Check(t *testing.T, g Generator) {
	t.Helper()
	if testing.Short() {
		t.Skip("skipping gcc build in -short mode")
	}
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("gcc not found")
	}
	if _, err := os.Stat(g.Header); err != nil {
		t.Skipf("%s not installed", g.Header)
	}
	bin := filepath.Join(t.TempDir(), "abigen")
	build := exec.Command(gcc, "-std=c11", "-Wall", "-Wextra", "-Werror=switch", "-o", bin, g.Source, g.Lib)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", g.Source, err, out)
	}
	got, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatalf("running %s: %v", g.Source, err)
	}
	want, err := os.ReadFile(g.Golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is stale (-committed +installed %s):\n%s%s", g.Golden, g.Lib, cmp.Diff(string(want), string(got)), g.Regen)
	}
}
