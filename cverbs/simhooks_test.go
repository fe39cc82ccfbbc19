//go:build cgo && linux

package cverbs_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/conformance"
	"github.com/verbsim/verbsim/cverbs"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/trace"
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
	// The capabilities of VERBSIM_TEST_2's hooks, and a CQ of
	// ibv_create_cq with the poll iterator.
	if got := cverbs.SimControls(); got != hooks {
		t.Errorf("SimControls() = %v, want %v", got, hooks)
	}
	if _, ex := q.(verbs.ExCQ); ex != hooks {
		t.Errorf("CQ of ibv_create_cq: ExCQ %v, want %v", ex, hooks)
	}
	srq, err := pd.CreateSRQ(verbs.SRQInitAttr{Context: "srq", Attr: verbs.SRQAttr{MaxWR: 4, MaxSGE: 2}})
	if err != nil {
		t.Fatal(err)
	}
	qp, err := pd.CreateQP(verbs.QPInitAttr{Type: verbs.QPTypeRC, SendCQ: q, RecvCQ: q, SRQ: srq,
		Cap: verbs.QPCap{MaxSendWR: 2, MaxSendSGE: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if qp.SRQ() != srq {
		t.Errorf("QP.SRQ() is not the SRQ CreateSRQ returned")
	}
	qpx, err := pd.(verbs.QPExCreator).CreateQPEx(verbs.QPInitAttrEx{QPInitAttr: verbs.QPInitAttr{Type: verbs.QPTypeRC,
		SendCQ: q, RecvCQ: q, Cap: verbs.QPCap{MaxSendWR: 2, MaxRecvWR: 2, MaxSendSGE: 1, MaxRecvSGE: 1}},
		CompMask: verbs.QPInitAttrSendOpsFlags, SendOpsFlags: verbs.QPExWithSend})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := qpx.(verbs.WRBuilder); !ok {
		t.Errorf("the QP of ibv_create_qp_ex with send_ops_flags has no builder")
	}
	for _, c := range []struct {
		what string
		obj  any
	}{{"QP", qp}, {"QP with the builder", qpx}} {
		_, fatal := c.obj.(conformance.FatalInjector)
		_, force := c.obj.(conformance.StatusForcer)
		_, out := c.obj.(conformance.Outstander)
		if fatal != hooks || force != hooks || out != hooks {
			t.Errorf("%s: FatalInjector %v, StatusForcer %v, Outstander %v; want %v", c.what, fatal, force, out, hooks)
		}
	}
	_, cons := srq.(conformance.Consumer)
	_, depth := srq.(conformance.Depth)
	_, serr := srq.(conformance.SRQErrorInjector)
	if cons != hooks || depth != hooks || serr != hooks {
		t.Errorf("SRQ: Consumer %v, Depth %v, SRQErrorInjector %v; want %v", cons, depth, serr, hooks)
	}
	if _, depth := ch.(conformance.Depth); depth != hooks {
		t.Errorf("channel: Depth %v, want %v", depth, hooks)
	}
	_, err = cverbs.WithLimits(d, cverbs.Limits{MaxCQ: 1})
	if !hooks {
		if !errors.Is(err, errors.ErrUnsupported) || !errors.Is(err, syscall.EOPNOTSUPP) {
			t.Errorf("WithLimits without the hooks: %v, want EOPNOTSUPP and errors.ErrUnsupported", err)
		}
		for what, err := range map[string]error{"SetPortState": cverbs.SetPortState(d, 1, true), "SetFaults": cverbs.SetFaults(d, 0, 0, 0),
			"InjectFrame": cverbs.InjectFrame(d, []byte("VS"))} {
			if !errors.Is(err, errors.ErrUnsupported) || !errors.Is(err, syscall.EOPNOTSUPP) {
				t.Errorf("%s without the hooks: %v, want EOPNOTSUPP and errors.ErrUnsupported", what, err)
			}
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
	if d := ch.(conformance.Depth).Len(); d != 0 {
		t.Errorf("channel depth %d after its only event was read, want 0", d)
	}
	if err := q.ReqNotify(false); err != nil {
		t.Fatal(err)
	}
	if _, err := q.(conformance.Injector).Push(w, false); err != nil {
		t.Fatal(err)
	}
	if d := ch.(conformance.Depth).Len(); d != 1 {
		t.Errorf("channel depth %d with one event queued, want 1", d)
	}
	if got, _, err := ch.TryGetEvent(); err != nil || got != q {
		t.Fatalf("TryGetEvent: %v %v", got, err)
	}
	if err := q.AckEvents(1); err != nil {
		t.Fatal(err)
	}
	if n, err := q.Poll(wcs); n != 1 || err != nil {
		t.Fatalf("Poll: %d %v", n, err)
	}

	// The SRQ: depth, consumption with the SGEs posted, then its error,
	// whose events name the very SRQ and QP objects.
	sges := []verbs.SGE{{Addr: 0x1000, Length: 8, LKey: mr.LKey()}, {Addr: 0x2000, Length: 16, LKey: mr.LKey()}}
	if n, err := srq.PostRecv([]verbs.RecvWR{{WRID: 11, SGList: sges}, {WRID: 12, SGList: sges[:1]}}); n != 2 || err != nil {
		t.Fatalf("PostRecv: %d %v", n, err)
	}
	if n := srq.(conformance.Depth).Len(); n != 2 {
		t.Errorf("SRQ depth %d, want 2", n)
	}
	if id, got, ok := srq.(conformance.Consumer).Take(); !ok || id != 11 || !slices.Equal(got, sges) {
		t.Errorf("Take: %d %v %v, want 11 %v", id, got, ok, sges)
	}
	if n := srq.(conformance.Depth).Len(); n != 1 {
		t.Errorf("SRQ depth %d after a Take, want 1", n)
	}
	if s, r := qp.(conformance.Outstander).Outstanding(); s != 0 || r != 0 {
		t.Errorf("Outstanding of an idle QP: %d, %d", s, r)
	}
	if err := qp.(conformance.StatusForcer).ForceStatus(1, false, verbs.WCSuccess); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("ForceStatus(SUCCESS): %v, want EINVAL", err)
	}
	if err := qp.(conformance.StatusForcer).ForceStatus(1, false, verbs.WCRemOpErr); err != nil {
		t.Errorf("ForceStatus: %v", err)
	}
	if err := qp.Modify(&verbs.QPAttr{QPState: verbs.QPStateInit, PortNum: 1}, verbs.QPAttrState|verbs.QPAttrPKeyIndex|verbs.QPAttrPort|verbs.QPAttrAccessFlags); err != nil {
		t.Fatal(err)
	}
	if err := srq.(conformance.SRQErrorInjector).InjectError(); err != nil {
		t.Fatalf("SRQ InjectError: %v", err)
	}
	seen := map[verbs.EventType]bool{}
	for {
		ev, err := ctx.TryGetAsyncEvent()
		if err != nil {
			break
		}
		seen[ev.EventType()] = true
		switch ev.EventType() {
		case verbs.EventSRQErr:
			if ev.SRQ() != srq {
				t.Errorf("SRQ_ERR names %v, not the SRQ", ev.SRQ())
			}
		case verbs.EventQPFatal:
			if ev.QP() != qp {
				t.Errorf("QP_FATAL names %v, not the QP", ev.QP())
			}
		}
		if err := ev.Ack(); err != nil {
			t.Fatal(err)
		}
	}
	if !seen[verbs.EventSRQErr] || !seen[verbs.EventQPFatal] {
		t.Errorf("events after the SRQ error: %v, want SRQ_ERR and QP_FATAL", seen)
	}
	if err := qpx.(conformance.FatalInjector).InjectFatal(); err != nil {
		t.Errorf("InjectFatal: %v", err)
	}
	if err := qp.DestroyContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := qp.(conformance.FatalInjector).InjectFatal(); err == nil {
		t.Errorf("InjectFatal on a destroyed QP succeeded")
	}

	// The link and the fabric's faults.
	if err := cverbs.SetPortState(d, 1, false); err != nil {
		t.Fatalf("SetPortState(down): %v", err)
	}
	if pa, err := ctx.QueryPort(1); err != nil || pa.State == verbs.PortActive {
		t.Errorf("port 1 after SetPortState(down): %v %v", pa.State, err)
	}
	if err := cverbs.SetPortState(d, 1, true); err != nil {
		t.Fatalf("SetPortState(up): %v", err)
	}
	if pa, err := ctx.QueryPort(1); err != nil || pa.State != verbs.PortActive {
		t.Errorf("port 1 after SetPortState(up): %v %v", pa.State, err)
	}
	if err := cverbs.SetPortState(d, 9, true); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("SetPortState of port 9: %v, want EINVAL", err)
	}
	if err := cverbs.SetFaults(d, 2, 0, 0); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("SetFaults(2, 0, 0): %v, want EINVAL", err)
	}
	if err := cverbs.SetFaults(d, 0, 0, 0); err != nil {
		t.Errorf("SetFaults(0, 0, 0): %v", err)
	}
	// VERBSIM_TEST_3: a frame that does not decode is EINVAL; one for a
	// QP nobody has is taken and dropped, as a wire would.
	if err := cverbs.InjectFrame(d, []byte("VS")); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("InjectFrame of a frame that does not decode: %v, want EINVAL", err)
	}
	pa, err := ctx.QueryPort(1)
	if err != nil {
		t.Fatal(err)
	}
	ack := sim.WirePacket{Kind: trace.PacketAck, Transport: verbs.QPTypeRC, DstQPN: 0xfffff0, DLID: pa.LID}
	if pa.LinkLayer == verbs.LinkLayerEthernet {
		ack.Global, ack.DGID = true, func() verbs.GID { g, _ := ctx.QueryGID(1, 0); return g }()
	}
	if err := cverbs.InjectFrame(d, sim.AppendFrame(nil, &ack)); err != nil {
		t.Errorf("InjectFrame of an ACK for no QP: %v", err)
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
