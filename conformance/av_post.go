package conformance

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/verbsim/verbsim/verbs"
)

// A UD send's address handle is checked when the request is posted (AV-04):
// an AH of another device or device context, a destroyed one, or one that
// is not the device's fails ibv_post_send with EINVAL at that request
// (bad_wr), and ibv_wr_complete with EINVAL, nothing of its batch posted.
// The requests before it in a list are posted and complete.

// avPostCases are the cases of av_post.go.
var avPostCases = []Case{
	{"AV-04", "a UD send through an AH of another device or context, destroyed, or not the device's is EINVAL at the post", udAHCheckedAtPost},
}

// otherAH is an address handle of no device.
type otherAH struct{}

func (otherAH) Destroy() error { return nil }

// udBadAH is an AH AV-04 refuses, and what it is.
type udBadAH struct {
	what string
	ah   verbs.AH
}

// udBadAHs returns the refused AHs the world can make: of another context
// of A's device, destroyed, of no device, and of B's device when B is on
// another one.
func udBadAHs(t *tester, e *env, w *wire) []udBadAH {
	t.Helper()
	av := avTo(w.b, false)
	var bad []udBadAH
	ctx2, err := e.Dev.Open()
	if err != nil {
		t.Fatalf("a second ibv_open_device: %v", err)
	}
	t.Cleanup(func() { _ = ctx2.Close() })
	pd2 := w.pdOn(ctx2)
	if ah, err := pd2.CreateAH(av); err != nil {
		t.Fatalf("ibv_create_ah on a second context: %v", err)
	} else {
		t.Cleanup(func() { _ = ah.Destroy() })
		bad = append(bad, udBadAH{"an AH of another context of the device", ah})
	}
	if !w.loop {
		back := avTo(w.a, false)
		ah, err := w.b.pd.CreateAH(back)
		if err != nil {
			t.Fatalf("ibv_create_ah on the peer device: %v", err)
		}
		t.Cleanup(func() { _ = ah.Destroy() })
		bad = append(bad, udBadAH{"an AH of another device", ah})
	}
	dead, err := w.a.pd.CreateAH(av)
	if err != nil {
		t.Fatalf("ibv_create_ah: %v", err)
	}
	if err := dead.Destroy(); err != nil {
		t.Fatalf("ibv_destroy_ah: %v", err)
	}
	return append(bad, udBadAH{"a destroyed AH", dead}, udBadAH{"an AH of no device", otherAH{}})
}

// udAHCheckedAtPost posts, for each refused AH, a good UD send and one
// through that AH: the first is posted and succeeds, the second fails the
// post with EINVAL. With the work request builder, a batch naming the AH
// is refused whole.
func udAHCheckedAtPost(t *tester, e *env) {
	w := newWire(t, e)
	a, b := w.connect(verbs.QPTypeUD, w.opts())
	good := w.ah(w.a, w.b, false)
	bad := udBadAHs(t, e, w)
	for i, c := range bad {
		id := uint64(10 * (i + 1))
		wrs := []verbs.SendWR{
			datagram(sendWR(id, verbs.WRSend, a.s.sge(0, 8)), good, b),
			datagram(sendWR(id+1, verbs.WRSend, a.s.sge(0, 8)), c.ah, b),
		}
		n, err := a.q.PostSend(wrs)
		if n != 1 || !errors.Is(err, syscall.EINVAL) {
			t.Errorf("ibv_post_send of a good UD send and one through %s: %d posted, %v; want 1 (bad_wr the second) and EINVAL", c.what, n, err)
		}
		if n >= 1 {
			a.want(fmt.Sprintf("the UD send before the one through %s", c.what), w.await(a.scq, 1, "the good UD send")[0], id, verbs.WCSuccess)
		}
		if n == 2 { // drain what a device that took it completes
			w.settle()
			_, _ = w.pollNow(a.scq)
		}
	}
	if _, ok := w.a.pd.(verbs.QPExCreator); !ok {
		t.Logf("the work request builder not checked: the device has no ibv_create_qp_ex (conformance.QPExCreator)")
		return
	}
	o := w.opts()
	o.sendOps = verbs.QPExWithSend
	x := w.newEnd(w.a, verbs.QPTypeUD, o)
	w.bring(x, b, verbs.QPStateRTS)
	wb, ok := x.q.(verbs.WRBuilder)
	if !ok {
		t.Fatalf("a UD QP created with send_ops_flags has no builder (conformance.WRBuilder)")
	}
	for i, c := range bad {
		id := uint64(100 + 10*i)
		wb.WRStart()
		wb.SetWRFlags(verbs.SendSignaled)
		wb.SetWRID(id)
		wb.WRSend()
		wb.WRSetSGE(a.s.mr.LKey(), a.s.addr(0), 8)
		wb.WRSetUDAddr(good, b.q.Num(), udQKey)
		wb.SetWRID(id + 1)
		wb.WRSend()
		wb.WRSetSGE(a.s.mr.LKey(), a.s.addr(0), 8)
		wb.WRSetUDAddr(c.ah, b.q.Num(), udQKey)
		if err := wb.WRComplete(); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("ibv_wr_complete of a batch with a UD send through %s: %v, want EINVAL", c.what, err)
		}
		w.settle()
		if got, _ := w.pollNow(x.scq); len(got) != 0 {
			t.Errorf("ibv_wr_complete of a batch with a UD send through %s: %d completions (%v), want none: the batch is refused whole (QPX-04)", c.what, len(got), got)
		}
	}
}
