package sim_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestOldContextIdiomsDoNotCompile: CQ.Context, QP.Context and SRQ.Context
// once returned the cookie given at creation (cq_context, qp_context,
// srq_context); they now return the device context (ibv_cq.context and its
// siblings), and the cookie is CQContext, QPContext, SRQContext. Code written
// for the old meaning uses the cookie by asserting its type or comparing it
// with a value; this test compiles those idioms against sim's handles and
// verbs' interfaces and requires the compiler to refuse every one, so that
// old code fails to build rather than silently reading the wrong thing.
// (Only uses that take any value, such as printing it or a map[any] key,
// still compile; the doc comments of the methods say so.)
func TestOldContextIdiomsDoNotCompile(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	var src strings.Builder
	src.WriteString("package probe\n\nimport (\n\t\"github.com/verbsim/verbsim/sim\"\n\t\"github.com/verbsim/verbsim/verbs\"\n)\n\n")
	var lines []int
	line := 8
	for _, typ := range []string{"*sim.CQ", "*sim.QP", "*sim.SRQ", "verbs.CQ", "verbs.QP", "verbs.SRQ"} {
		for _, body := range []string{
			"func _(x %s) string { return x.Context().(string) }\n",
			"func _(x %s) bool { return x.Context() == \"orders\" }\n",
			"func _(x %s) { h := x.Context().(*struct{ n int }); h.n++ }\n",
		} {
			fmt.Fprintf(&src, body, typ)
			lines = append(lines, line)
			line++
		}
	}
	dir := t.TempDir()
	probe := filepath.Join(dir, "probe.go")
	if err := os.WriteFile(probe, []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	overlay, _ := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(root, "internal", "contextprobe", "probe.go"): probe}})
	ov := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(ov, overlay, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-gcflags=-e", "-overlay", ov, "./internal/contextprobe")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the old idioms compiled:\n%s", src.String())
	}
	for _, l := range lines {
		if !strings.Contains(string(out), fmt.Sprintf("probe.go:%d:", l)) {
			t.Errorf("line %d compiled: %s", l, strings.Split(src.String(), "\n")[l-1])
		}
	}
	if t.Failed() {
		t.Logf("the compiler said:\n%s", out)
	}
}
