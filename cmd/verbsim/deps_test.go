package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCommandLeavesOutTheSuite checks what the command links: it names a
// rule's title from the catalogue (internal/catalogue), and must not pull in
// the conformance suite, its reference model, or the testing libraries they
// are built on (issue #21, item 5). `go test` puts its own go command first
// on PATH.
func TestCommandLeavesOutTheSuite(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	var found bool
	for _, p := range deps {
		found = found || p == "github.com/verbsim/verbsim/internal/catalogue"
		for _, banned := range []string{"github.com/verbsim/verbsim/conformance", "pgregory.net/rapid", "github.com/google/go-cmp"} {
			if p == banned || strings.HasPrefix(p, banned+"/") {
				t.Errorf("verbsim links %s", p)
			}
		}
	}
	if !found {
		t.Errorf("verbsim does not link internal/catalogue; the deps were:\n%s", out)
	}
}
