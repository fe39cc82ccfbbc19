package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDM runs testdata/dm.c: device memory from C (capi/testdata/dm.c): allocation rules and
// the page budget, the copies, an MR on device memory carrying an RDMA
// WRITE, a READ and a SEND, EBUSY while it exists, and a child of fork()
// with device memory of its own; with VERBSIM_DM_KIB=8 two pages of it;
// under the rxe profile, none at all.
func TestDM(t *testing.T) {
	dir := lib(t)
	bin := cprog(t, dir, "dm")
	for _, c := range []struct {
		env  []string
		args []string
	}{
		{[]string{"VERBSIM_FABRIC=none"}, nil},
		{[]string{"VERBSIM_FABRIC=none", "VERBSIM_DM_KIB=8"}, nil},
		{[]string{"VERBSIM_FABRIC=none", "VERBSIM_PROFILE=rxe"}, []string{"none"}},
	} {
		out, err := run(t, dir, c.env, bin, c.args...)
		if err != nil || !strings.Contains(out, "dm: OK") {
			t.Errorf("%v dm: %v\n%s", c.env, err, out)
		}
	}
}

// TestDMValgrind runs testdata/dm.c under valgrind: no report may come
// from the C glue (dm.c among it) or the program.
func TestDMValgrind(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	dir := lib(t)
	if _, err := exec.LookPath("valgrind"); err != nil {
		t.Skip("valgrind not installed")
	}
	bin := cprog(t, dir, "dm")
	out, err := run(t, dir, []string{"VERBSIM_FABRIC=none", valgrindGODEBUG}, "valgrind", "--num-callers=40", "--leak-check=full", "--trace-children=no", bin)
	if !strings.Contains(out, "dm: OK") {
		t.Fatalf("valgrind dm: %v\n%s", err, out)
	}
	ours := 0
	for _, block := range strings.Split(out, "== \n") {
		if !strings.Contains(block, "dm.c") && !strings.Contains(block, "glue.c") {
			continue
		}
		if strings.Contains(block, "Invalid") || strings.Contains(block, "uninitialised") ||
			strings.Contains(block, "Conditional jump") || strings.Contains(block, "definitely lost") {
			ours++
			t.Errorf("valgrind report in our code:\n%s", block)
		}
	}
	t.Logf("valgrind: %d reports in the C glue or the program", ours)
}
