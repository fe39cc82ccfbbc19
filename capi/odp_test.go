package main

import (
	"strings"
	"testing"
)

// TestODP: on-demand paging from C (capi/testdata/odp.c): the caps,
// ON_DEMAND registrations carrying traffic, ibv_advise_mr and the implicit
// registration the library refuses, under the default profile; zero caps
// and EOPNOTSUPP under the rxe profile (ODP-01 to ODP-06).
func TestODP(t *testing.T) {
	dir := lib(t)
	bin := cprog(t, dir, "odp")
	for _, env := range [][]string{nil, {"VERBSIM_PROFILE=rxe", "VERBSIM_LINK=ib"}} {
		out, err := run(t, dir, env, bin)
		if err != nil || !strings.Contains(out, "odp: OK") {
			t.Errorf("%v odp: %v\n%s", env, err, out)
		}
	}
}
