package conformance

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"syscall"

	"github.com/google/go-cmp/cmp"
	"github.com/verbsim/verbsim/verbs"
)

// Helpers shared by the CQ family's cases.

// cqDiff returns "" when got equals want and a cmp.Diff of them otherwise;
// the fast path keeps the seeded properties cheap under -race. An error
// completion is compared by wr_id, status and qp_num alone: its other
// fields are undefined (WC-03) and vendor_err is the device's own code
// (WC-14), so a device need not hand back what was added.
func cqDiff(want, got []verbs.WC) string {
	if slices.Equal(want, got) {
		return ""
	}
	w, g := slices.Clone(want), slices.Clone(got)
	for _, s := range [][]verbs.WC{w, g} {
		for i := range s {
			s[i] = cqDefined(s[i])
		}
	}
	return cmp.Diff(w, g)
}

// cqDefined returns c with the fields it does not define cleared: for an
// error completion, all but wr_id, status and qp_num.
func cqDefined(c verbs.WC) verbs.WC {
	if c.Status == verbs.WCSuccess {
		return c
	}
	return verbs.WC{WRID: c.WRID, Status: c.Status, QPNum: c.QPNum}
}

// cqDestroy destroys q, waiting patiently, and fails the case on error.
func cqDestroy(t *tester, e *env, q verbs.CQ, what string) {
	t.Helper()
	ctx, cancel := patient()
	defer cancel()
	e.WantOK(what, q.DestroyContext(ctx))
}

// cqGetEvent waits patiently for the next event on ch and returns the CQ and
// context it names; it fails the case if none comes.
func cqGetEvent(t *tester, ch verbs.CompChannel, what string) (verbs.CQ, any) {
	t.Helper()
	ctx, cancel := patient()
	defer cancel()
	q, c, err := ch.GetEvent(ctx)
	if err != nil {
		t.Fatalf("%s: ibv_get_cq_event: %v, want an event", what, err)
	}
	return q, c
}

// cqWaitAsync waits patiently for the next async event of the context.
func cqWaitAsync(t *tester, e *env, what string) verbs.AsyncEvent {
	t.Helper()
	ctx, cancel := patient()
	defer cancel()
	ev, err := e.Ctx.GetAsyncEvent(ctx)
	if err != nil {
		t.Fatalf("%s: ibv_get_async_event: %v, want an event", what, err)
	}
	return ev
}

// cqReadEvents makes q raise n completion events on ch and reads them,
// leaving them unacked. Each time it arms q while q and ch are empty, adds a
// solicited receive completion (which fires an arm of either kind under either
// solicited reading), reads the event and polls the completion out: the
// events are set-up here, so the steps avoid every subtlety of the NOTIFY
// rules.
func cqReadEvents(t *tester, e *env, q verbs.CQ, ch verbs.CompChannel, n int, firstID uint64) {
	t.Helper()
	for i := range n {
		e.WantOK("ibv_req_notify_cq", q.ReqNotify(false))
		e.Push(q, RecvWC(firstID+uint64(i)), true)
		if gq, _ := cqGetEvent(t, ch, "arming and adding a completion"); gq != q {
			t.Fatalf("the event names another CQ")
		}
		e.PollAll(q, 4)
	}
}

// cqOverrun fills q to its reported capacity, adds one completion more, and
// reads the CQ_ERR that must follow (CQ-22), leaving it unacked. It returns
// the completions that must have been stored and the event.
func cqOverrun(t *tester, e *env, q verbs.CQ) ([]verbs.WC, verbs.AsyncEvent) {
	t.Helper()
	a := q.CQE()
	var want []verbs.WC
	for i := range a {
		w := RecvWC(uint64(500 + i))
		if e.Push(q, w, false) {
			t.Fatalf("cqe=%d: completion %d overran", a, i+1)
		}
		want = append(want, w)
	}
	if !e.Push(q, SendWC(999), false) {
		t.Fatalf("cqe=%d: completion %d, one beyond the capacity, did not overrun the CQ", a, a+1)
	}
	ev := cqWaitAsync(t, e, "after the overrun")
	if ev.EventType() != verbs.EventCQErr {
		t.Errorf("the overrun raised %v, want IBV_EVENT_CQ_ERR", ev.EventType())
	}
	if ev.CQ() != q {
		t.Errorf("the CQ_ERR names %v, not the CQ that overran", named(ev))
	}
	return want, ev
}

// cqFill checks that q takes exactly c completions without overrunning and
// overruns on the next. It leaves q overrun; call it last on q.
func cqFill(t *tester, e *env, q verbs.CQ, c int, what string) {
	t.Helper()
	for i := range c {
		if e.Push(q, SendWC(uint64(i)), false) {
			t.Errorf("%s, cqe=%d: completion %d overran; cqe must be the real capacity", what, c, i+1)
			return
		}
	}
	if !e.Push(q, SendWC(uint64(c)), false) {
		t.Errorf("%s, cqe=%d: completion %d did not overrun; cqe must be the real capacity", what, c, c+1)
	}
}

// cqDrainOverrun polls q until it returns nothing and returns what it polled.
// After an overrun the sticky reading (CQ-23 A) lets a poll report an error
// matching EIO alongside its completions; any other error, or any error under
// Profile.OverrunDrops, fails the case.
func cqDrainOverrun(t *tester, e *env, q verbs.CQ, what string) []verbs.WC {
	t.Helper()
	var all []verbs.WC
	buf := make([]verbs.WC, 3)
	for range 1 << 20 {
		n, err := q.Poll(buf)
		if n < 0 || n > len(buf) {
			t.Fatalf("%s: ibv_poll_cq(num_entries=%d) returned %d", what, len(buf), n)
		}
		all = append(all, buf[:n]...)
		if err != nil && (e.Profile.OverrunDrops || !errors.Is(err, syscall.EIO)) {
			t.Fatalf("%s: ibv_poll_cq: %v", what, err)
		}
		if n == 0 {
			return all
		}
	}
	t.Fatalf("%s: the CQ never ran empty", what)
	return nil
}

// cqCanary is what a poll must leave alone in slot i.
func cqCanary(i int) verbs.WC {
	return verbs.WC{WRID: 0xdead_0000_0000_0000 | uint64(i), Status: verbs.WCStatus(0x7777), QPNum: 0xbad, VendorErr: uint32(i)}
}

// cqCanaries returns n canary completions.
func cqCanaries(n int) []verbs.WC {
	buf := make([]verbs.WC, n)
	for i := range buf {
		buf[i] = cqCanary(i)
	}
	return buf
}

// cqCheckCanaries fails the case if buf[from:] is not as cqCanaries left it.
func cqCheckCanaries(t *tester, buf []verbs.WC, from int, what string) {
	t.Helper()
	for i := from; i < len(buf); i++ {
		if buf[i] != cqCanary(i) {
			t.Errorf("%s overwrote entry %d, past the ones it returned: %v", what, i, &buf[i])
			return
		}
	}
}

// cqRandomWC returns a completion with random contents and a wr_id unique per
// seq.
func cqRandomWC(r *rand.Rand, seq uint64) verbs.WC {
	opcodes := []verbs.WCOpcode{verbs.WCSend, verbs.WCRDMAWrite, verbs.WCRDMARead, verbs.WCCompSwap, verbs.WCFetchAdd, verbs.WCRecv, verbs.WCRecvRDMAWithImm}
	return verbs.WC{
		WRID:         r.Uint64()<<24 | seq&0xffffff,
		Status:       verbs.WCStatus(r.IntN(22)),
		Opcode:       opcodes[r.IntN(len(opcodes))],
		VendorErr:    r.Uint32(),
		ByteLen:      r.Uint32(),
		ImmData:      r.Uint32(),
		QPNum:        r.Uint32() & 0xffffff,
		SrcQP:        r.Uint32() & 0xffffff,
		WCFlags:      verbs.WCFlags(r.IntN(128)),
		PKeyIndex:    uint16(r.Uint32()),
		SLID:         uint16(r.Uint32()),
		SL:           uint8(r.IntN(16)),
		DLIDPathBits: uint8(r.IntN(128)),
	}
}

// cqModel drives a CQ against a list of what it must hold (CQ-10).
type cqModel struct {
	t    *tester
	e    *env
	q    verbs.CQ
	rng  *rand.Rand
	want []verbs.WC
	seq  uint64
}

// add adds k completions, which must fit.
func (m *cqModel) add(k int) {
	m.t.Helper()
	for range k {
		m.seq++
		w := SendWC(m.seq)
		if m.seq%2 == 0 {
			w = RecvWC(m.seq)
		}
		if m.e.Push(m.q, w, false) {
			m.t.Fatalf("wr_id %d overran a CQ of cqe=%d holding %d", m.seq, m.q.CQE(), len(m.want))
		}
		m.want = append(m.want, w)
	}
}

// take polls up to k and checks they are the oldest.
func (m *cqModel) take(k int) {
	m.t.Helper()
	buf := make([]verbs.WC, k)
	n, err := m.q.Poll(buf)
	m.e.WantOK("ibv_poll_cq", err)
	if exp := min(k, len(m.want)); n != exp {
		m.t.Fatalf("ibv_poll_cq(num_entries=%d) with %d unpolled returned %d", k, len(m.want), n)
	}
	if d := cqDiff(m.want[:n], buf[:n]); d != "" {
		m.t.Fatalf("completions polled after resizes (-want +got):\n%s", d)
	}
	m.want = m.want[n:]
}

// resize resizes to n, which must succeed and give at least n.
func (m *cqModel) resize(n int) {
	m.t.Helper()
	m.e.WantOK("ibv_resize_cq("+itoa(n)+") with "+itoa(len(m.want))+" unpolled", m.q.Resize(n))
	if c := m.q.CQE(); c < n {
		m.t.Fatalf("after ibv_resize_cq(%d) cqe is %d", n, c)
	}
}

// drain polls everything and checks it.
func (m *cqModel) drain() {
	m.t.Helper()
	if d := cqDiff(m.want, m.e.PollAll(m.q, 5)); d != "" {
		m.t.Errorf("completions drained after resizes (-want +got):\n%s", d)
	}
	m.want = nil
}

// cqHeld is the destroy of a CQ with read but unacked events: in flight under
// the waiting reading of CQ-13, already refused with EBUSY under
// Profile.DestroyBusyOnUnacked.
type cqHeld struct {
	q      verbs.CQ
	what   string
	done   chan error // the destroy in flight; nil under the EBUSY reading
	cancel context.CancelFunc
	ended  bool // returned too early, already reported
}

// cqHoldDestroy starts destroying q, which has read but unacked events.
func cqHoldDestroy(t *tester, e *env, q verbs.CQ, what string) *cqHeld {
	t.Helper()
	h := &cqHeld{q: q, what: what}
	ctx, cancel := patient()
	if e.Profile.DestroyBusyOnUnacked {
		defer cancel()
		e.WantErrno(what+": ibv_destroy_cq with read, unacked events", q.DestroyContext(ctx), syscall.EBUSY)
		return h
	}
	h.cancel = cancel
	t.Cleanup(cancel)
	h.done = make(chan error, 1)
	go func() { h.done <- q.DestroyContext(ctx) }()
	return h
}

// cqStillHeld checks, after one Grace period, that none of the destroys in
// flight has returned.
func cqStillHeld(t *tester, hs ...*cqHeld) {
	t.Helper()
	if len(hs) == 0 || hs[0].done == nil {
		return
	}
	g, cancel := graceful()
	defer cancel()
	<-g.Done()
	for _, h := range hs {
		select {
		case err := <-h.done:
			h.ended = true
			t.Errorf("%s: ibv_destroy_cq returned (err %v) before the ack; it must wait for it", h.what, err)
		default:
		}
	}
}

// finish checks, after the acks, that the destroy completes.
func (h *cqHeld) finish(t *tester, e *env) {
	t.Helper()
	if h.done == nil {
		cqDestroy(t, e, h.q, h.what+": ibv_destroy_cq after the acks")
		return
	}
	defer h.cancel()
	if h.ended {
		return
	}
	if err := <-h.done; err != nil {
		t.Errorf("%s: the waiting ibv_destroy_cq returned %v after the acks, want success", h.what, err)
	}
}

// cqLimitedEnv returns an environment on a fresh device of the same
// implementation and profile with limits l (zero fields unchanged), torn down
// when the case ends, or nil when the device is not a LimitedDevice.
func cqLimitedEnv(t *tester, e *env, l Limits) *env {
	t.Helper()
	ld, ok := e.Dev.(LimitedDevice)
	if !ok {
		return nil
	}
	dev, err := ld.WithLimits(l)
	if err != nil {
		t.Fatalf("WithLimits(%+v): %v", l, err)
	}
	ctx, err := dev.Open()
	if err != nil {
		t.Fatalf("opening the device with limits %+v: %v", l, err)
	}
	sub := &env{T: t, Dev: dev, Ctx: ctx, Profile: dev.Profile()}
	t.Cleanup(sub.teardown)
	got := sub.Limits()
	if (l.MaxCQ != 0 && got.MaxCQ != l.MaxCQ) || (l.MaxCQE != 0 && got.MaxCQE != l.MaxCQE) ||
		(l.NumCompVectors != 0 && got.NumCompVectors != l.NumCompVectors) {
		t.Fatalf("a device made WithLimits(%+v) reports limits %+v", l, got)
	}
	if sub.Profile != e.Profile {
		t.Fatalf("a device made WithLimits has profile %+v, not the original's %+v", sub.Profile, e.Profile)
	}
	return sub
}

func itoa(n int) string {
	neg := n < 0
	u := uint64(n)
	if neg {
		u = -u
	}
	s := ""
	for {
		s = string(rune('0'+u%10)) + s
		u /= 10
		if u == 0 {
			break
		}
	}
	if neg {
		s = "-" + s
	}
	return s
}
