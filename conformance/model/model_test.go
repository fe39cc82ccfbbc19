package model

import (
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/verbs"
)

// The model is the oracle of the state machine and the fuzz targets, so its
// key rules are pinned here against the catalogue, independently of any
// implementation.

var lim = Limits{MaxCQE: 16, NumCompVectors: 2}

func send(id uint64) verbs.WC {
	return verbs.WC{WRID: id, Status: verbs.WCSuccess, Opcode: verbs.WCSend}
}
func recv(id uint64) verbs.WC {
	return verbs.WC{WRID: id, Status: verbs.WCSuccess, Opcode: verbs.WCRecv}
}
func flush(id uint64) verbs.WC {
	return verbs.WC{WRID: id, Status: verbs.WCWRFlushErr}
}

// newCQ returns a model with one channel and one CQ of capacity capacity on
// it.
func newCQ(t *testing.T, r verbs.Readings, capacity int) (*Model, int, int) {
	t.Helper()
	m := New(r, lim)
	ch := m.CreateChannel()
	q, errno := m.CreateCQ(capacity, "ctx", ch, 0)
	if errno != OK {
		t.Fatalf("CreateCQ: %v", errno)
	}
	if err := m.AcceptCQE(q, capacity); err != nil {
		t.Fatal(err)
	}
	return m, q, ch
}

func want[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func TestCreateBounds(t *testing.T) { // CQ-01, CQ-02, CQ-03
	m := New(verbs.Readings{}, lim)
	for _, c := range []struct{ cqe, vec int }{{0, 0}, {-1, 0}, {17, 0}, {1, -1}, {1, 2}} {
		_, errno := m.CreateCQ(c.cqe, nil, -1, c.vec)
		want(t, "CreateCQ errno", errno, syscall.EINVAL)
	}
	q, errno := m.CreateCQ(4, nil, -1, 1)
	want(t, "CreateCQ(4) errno", errno, OK)
	if m.AcceptCQE(q, 3) == nil || m.AcceptCQE(q, 17) == nil {
		t.Error("capacities outside [4, 16] accepted")
	}
	if err := m.AcceptCQE(q, 7); err != nil {
		t.Error(err)
	}
	exact := New(verbs.Readings{ExactCQE: true}, lim)
	q, _ = exact.CreateCQ(4, nil, -1, 0)
	if exact.AcceptCQE(q, 7) == nil {
		t.Error("the exact reading accepted a rounded capacity")
	}
}

func TestArmRules(t *testing.T) {
	m, q, ch := newCQ(t, verbs.Readings{}, 8)
	m.Push(q, send(1), false)
	m.Arm(q, false)
	_, errno := m.GetEvent(ch)
	want(t, "event for a completion present at arm time (NOTIFY-02)", errno, syscall.EAGAIN)
	m.Push(q, send(2), false)
	m.Push(q, send(3), false)
	ev, errno := m.GetEvent(ch)
	want(t, "event after next arm (NOTIFY-03)", errno, OK)
	want(t, "event context (CQ-04)", ev.Context, any("ctx"))
	_, errno = m.GetEvent(ch)
	want(t, "second event without re-arm (NOTIFY-01)", errno, syscall.EAGAIN)

	m.Arm(q, false)
	m.Arm(q, true) // NOTIFY-07: next stays
	want(t, "arm after next then solicited", m.CQ(q).Arm, Next)
	m.Arm(q, true)
	want(t, "arm collapses (NOTIFY-08)", m.CQ(q).Arm, Next)

	m.Push(q, send(4), false) // fires the pending next
	m.Arm(q, true)
	m.Push(q, send(5), true) // a send never fires solicited (NOTIFY-04)
	m.Push(q, recv(6), false)
	want(t, "solicited arm after send and unsolicited recv", m.CQ(q).Arm, Solicited)
	m.Push(q, recv(7), true)
	want(t, "solicited arm after solicited recv", m.CQ(q).Arm, Disarmed)
}

func TestSolicitedErrors(t *testing.T) { // NOTIFY-05
	for _, bitOnly := range []bool{false, true} {
		m, q, _ := newCQ(t, verbs.Readings{SolicitedBitOnly: bitOnly}, 8)
		m.Arm(q, true)
		m.Push(q, flush(1), false)
		want(t, "fired by an unsolicited flush", m.CQ(q).Arm == Disarmed, !bitOnly)
	}
}

func TestOverrun(t *testing.T) { // CQ-22, CQ-23
	for _, drops := range []bool{false, true} {
		m, q, _ := newCQ(t, verbs.Readings{OverrunDrops: drops}, 1)
		m.Push(q, send(1), false)
		over, _ := m.Push(q, send(2), false)
		want(t, "overrun", over, true)
		ws, errno := m.Poll(q, 4)
		want(t, "stored before the overrun", len(ws), 1)
		want(t, "poll errno", errno == syscall.EIO, !drops)
		over, _ = m.Push(q, send(3), false)
		want(t, "overrun after draining", over, !drops)
		ev, errno := m.GetAsync()
		want(t, "CQ_ERR (ASYNC-07)", errno, OK)
		want(t, "CQ_ERR names the CQ", ev.CQ, q)
	}
}

func TestResizeKeepsUnpolled(t *testing.T) { // CQ-08, CQ-10
	m, q, _ := newCQ(t, verbs.Readings{}, 8)
	for i := range uint64(3) {
		m.Push(q, send(i), false)
	}
	want(t, "resize below the unpolled count", m.Resize(q, 2), syscall.EINVAL)
	want(t, "resize to 0", m.Resize(q, 0), syscall.EINVAL)
	want(t, "resize above max_cqe", m.Resize(q, 17), syscall.EINVAL)
	want(t, "resize to the unpolled count", m.Resize(q, 3), OK)
	if err := m.AcceptCQE(q, 2); err == nil {
		t.Error("a capacity below the request accepted")
	}
	if err := m.AcceptCQE(q, 3); err != nil {
		t.Fatal(err)
	}
	ws, _ := m.Poll(q, 8)
	want(t, "polled after resize", len(ws), 3)
	want(t, "order kept", ws[2].WRID, uint64(2))
}

func TestDestroyWaitsForAcks(t *testing.T) { // CQ-13, CHAN-09
	m, q, ch := newCQ(t, verbs.Readings{}, 4)
	m.Arm(q, false)
	m.Push(q, send(1), false)
	m.GetEvent(ch)
	want(t, "over-ack (CHAN-08)", m.Ack(q, 2), syscall.EINVAL)
	blocked, errno := m.DestroyCQ(q)
	want(t, "destroy with a read, unacked event blocks", blocked, true)
	want(t, "errno", errno, OK)
	want(t, "poll while destroying", func() syscall.Errno { _, e := m.Poll(q, 1); return e }(), syscall.EINVAL)
	want(t, "destroy the channel while the CQ is destroying", m.DestroyChannel(ch), syscall.EBUSY)
	want(t, "ack while destroying", m.Ack(q, 1), OK)
	blocked, errno = m.DestroyCQ(q)
	want(t, "destroy after the ack", blocked || errno != OK, false)
	want(t, "destroy again", func() syscall.Errno { _, e := m.DestroyCQ(q); return e }(), syscall.EINVAL)
	want(t, "destroy the channel", m.DestroyChannel(ch), OK)
	_, errno = m.GetEvent(ch)
	want(t, "get event on a destroyed channel", errno, syscall.EBADF)

	busy, q2, ch2 := newCQ(t, verbs.Readings{DestroyBusyOnUnacked: true}, 4)
	busy.Arm(q2, false)
	busy.Push(q2, send(1), false)
	busy.GetEvent(ch2)
	_, errno = busy.DestroyCQ(q2)
	want(t, "destroy with an unacked event, busy reading", errno, syscall.EBUSY)
	want(t, "the CQ is still live", busy.State(q2), Live)
}

func TestUnreadEventsDiscarded(t *testing.T) { // CQ-13
	m, q, ch := newCQ(t, verbs.Readings{}, 1)
	m.Arm(q, false)
	m.Push(q, send(1), false)
	m.Push(q, send(2), false) // overrun: an async event too
	blocked, errno := m.DestroyCQ(q)
	want(t, "destroy with unread events only", blocked || errno != OK, false)
	_, errno = m.GetEvent(ch)
	want(t, "the unread completion event is gone", errno, syscall.EAGAIN)
	_, errno = m.GetAsync()
	want(t, "the unread CQ_ERR is gone", errno, syscall.EAGAIN)
}

func TestSharedChannelFIFO(t *testing.T) { // CHAN-02, CHAN-06
	m := New(verbs.Readings{}, lim)
	ch := m.CreateChannel()
	a, _ := m.CreateCQ(2, "a", ch, 0)
	b, _ := m.CreateCQ(2, "b", ch, 0)
	_ = m.AcceptCQE(a, 2)
	_ = m.AcceptCQE(b, 2)
	m.Arm(a, false)
	m.Arm(b, false)
	m.Push(b, send(1), false)
	m.Push(a, send(2), false)
	first, _ := m.GetEvent(ch)
	second, _ := m.GetEvent(ch)
	want(t, "first event", first.CQ, b)
	want(t, "second event", second.CQ, a)
	want(t, "reads counted per CQ", m.CQ(a).CompRead+m.CQ(b).CompRead, 2)
}

func TestRefs(t *testing.T) { // CQ-11
	m, q, _ := newCQ(t, verbs.Readings{}, 1)
	want(t, "ref", m.Ref(q), OK)
	_, errno := m.DestroyCQ(q)
	want(t, "destroy while referenced", errno, syscall.EBUSY)
	m.Unref(q)
	_, errno = m.DestroyCQ(q)
	want(t, "destroy after unref", errno, OK)
	want(t, "ref a destroyed CQ", m.Ref(q), syscall.EINVAL)
}

func TestHistory(t *testing.T) {
	var h History
	h.Accepted(0, send(1)) // no arm yet: no window
	h.EventRead(0)
	if h.Check() == nil {
		t.Error("an event without an arm passed")
	}
	var g History
	g.Armed(0)
	g.Accepted(0, send(1))
	g.Accepted(0, send(2))
	g.EventRead(0)
	g.Polled(0, []verbs.WC{send(2)})
	g.Acked(0, 1)
	if g.Check() == nil {
		t.Error("out-of-order polling passed")
	}
	var k History
	k.Armed(0)
	k.Accepted(0, send(1))
	k.EventRead(0)
	k.Acked(0, 2)
	if k.Check() == nil {
		t.Error("acks beyond reads passed")
	}
}
