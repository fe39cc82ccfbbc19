//go:build cgo && linux

package cverbs_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/conformance"
	"github.com/verbsim/verbsim/cverbs"
	"github.com/verbsim/verbsim/verbs"
)

// TestSimHooksDevice checks, in a child process, what the binding offers
// on the library it loaded: CVERBS_HOOKS=1 says it is verbsim's test-mode
// library (the hooks back Push, Ref/Unref and WithLimits), 0 that it is
// the production one (the objects have none of these methods).
func TestSimHooksDevice(t *testing.T) {
	want, ok := os.LookupEnv("CVERBS_HOOKS")
	if !ok {
		t.Skip("CVERBS_HOOKS is not set: run by TestSimHooksThroughC")
	}
	hooks := want == "1"
	if got := cverbs.SimHooks(); got != hooks {
		t.Fatalf("SimHooks() = %v, want %v", got, hooks)
	}
	d, err := cverbs.Open("sim0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, err := d.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	ch, err := ctx.CreateCompChannel()
	if err != nil {
		t.Fatal(err)
	}
	q, err := ctx.CreateCQ(2, "ctx", ch, 0)
	if err != nil {
		t.Fatal(err)
	}
	x, err := ctx.(verbs.ExCQCreator).CreateCQEx(verbs.CQInitAttrEx{CQE: 2})
	if err != nil {
		t.Fatal(err)
	}
	pd, err := ctx.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	mr, err := pd.RegMR(make([]byte, 64), verbs.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what string
		obj  any
	}{{"CQ", q}, {"extended CQ", x}} {
		_, inj := c.obj.(conformance.Injector)
		_, ref := c.obj.(conformance.Referencer)
		if inj != hooks || ref != hooks {
			t.Errorf("%s: Injector %v, Referencer %v; want %v", c.what, inj, ref, hooks)
		}
	}
	if _, ref := mr.(conformance.Referencer); ref != hooks {
		t.Errorf("MR: Referencer %v, want %v", ref, hooks)
	}
	_, err = cverbs.WithLimits(d, cverbs.Limits{MaxCQ: 1})
	if !hooks {
		if !errors.Is(err, errors.ErrUnsupported) || !errors.Is(err, syscall.EOPNOTSUPP) {
			t.Errorf("WithLimits without the hooks: %v, want EOPNOTSUPP and errors.ErrUnsupported", err)
		}
		return
	}
	if err != nil {
		t.Fatalf("WithLimits: %v", err)
	}

	// An injected completion fires the armed CQ: the event is readable at
	// once, and names the very CQ object; then the completion polls.
	if err := q.ReqNotify(false); err != nil {
		t.Fatal(err)
	}
	w := verbs.WC{WRID: 7, Status: verbs.WCSuccess, Opcode: verbs.WCRecv, ByteLen: 3, ImmData: 9, WCFlags: verbs.WCWithImm, QPNum: 5}
	if over, err := q.(conformance.Injector).Push(w, false); over || err != nil {
		t.Fatalf("Push: overrun %v, %v", over, err)
	}
	got, cctx, err := ch.TryGetEvent()
	if err != nil || got != q || cctx != "ctx" {
		t.Fatalf("TryGetEvent after Push: %v %v %v, want the CQ", got, cctx, err)
	}
	if err := q.AckEvents(1); err != nil {
		t.Fatal(err)
	}
	wcs := make([]verbs.WC, 2)
	if n, err := q.Poll(wcs); n != 1 || err != nil || wcs[0] != w {
		t.Errorf("Poll: %d %v %+v, want %+v", n, err, wcs[0], w)
	}
	// Held, the CQ and the MR cannot be destroyed.
	r := q.(conformance.Referencer)
	if err := r.Ref(); err != nil {
		t.Fatal(err)
	}
	if err := q.DestroyContext(context.Background()); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("destroying a held CQ: %v, want EBUSY", err)
	}
	r.Unref()
	if err := mr.(conformance.Referencer).Ref(); err != nil {
		t.Fatal(err)
	}
	if err := mr.Dereg(); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("deregistering a held MR: %v, want EBUSY", err)
	}
	mr.(conformance.Referencer).Unref()
	if err := mr.Dereg(); err != nil {
		t.Errorf("Dereg after Unref: %v", err)
	}
}

// TestSimHooksThroughC runs TestSimHooksDevice on the production build of
// the drop-in library and on its test-mode build.
func TestSimHooksThroughC(t *testing.T) {
	if os.Getenv("CVERBS_HOOKS") != "" || os.Getenv("CVERBS_DEVICE") != "" {
		t.Skip("running as a child process")
	}
	if testing.Short() {
		t.Skip("-short: builds the drop-in library twice")
	}
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skip("no C compiler: the drop-in library cannot be built")
	}
	prod := t.TempDir()
	if out, err := exec.Command("bash", "../capi/build.sh", prod).CombinedOutput(); err != nil {
		t.Fatalf("capi/build.sh: %v\n%s", err, out)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dir, hooks string }{{prod, "0"}, {dropIn(t), "1"}} {
		cmd := exec.Command(self, "-test.run=^TestSimHooksDevice$", "-test.v", "-test.count=1", "-test.timeout=2m")
		cmd.Env = append(os.Environ(), "CVERBS_HOOKS="+c.hooks, "VERBSIM_FABRIC=none",
			"LD_LIBRARY_PATH="+c.dir+string(filepath.ListSeparator)+os.Getenv("LD_LIBRARY_PATH"))
		out, err := cmd.CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte("--- PASS: TestSimHooksDevice")) {
			t.Errorf("CVERBS_HOOKS=%s: %v\n%s", c.hooks, err, tail(out, 40))
		}
	}
}
