package check_test

import (
	"strings"
	"testing"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/check"
	"github.com/verbsim/verbsim/verbs"
)

// A misuse case: a program that breaks a rule, which the sanitizer must
// report with that rule as it happens, and its correct twin, the same
// program done right, which it must leave alone. Each function runs on a
// fresh rig; the rig's findings are compared after it returns.
type misuseCase struct {
	name    string
	check   check.Check
	rule    string
	mode    sim.Mode
	misuse  func(r *rig)
	correct func(r *rig)
}

// misuseCases are the patterns the sanitizer reports from Go; each also
// runs through the drop-in library from C (capi's TestCheckC).
var misuseCases = []misuseCase{
	{"wait on a channel no CQ uses", check.Wait, "CHAN-13", sim.Auto, waitNoCQ, waitArmedCQ},
	{"wait on a channel whose CQs are unarmed", check.Wait, "CHAN-13", sim.Auto, waitUnarmed, waitArmedCQ},
	{"destroy the CQ a thread waits on", check.Wait, "CHAN-13", sim.Auto, destroyUnderWait, waitArmedCQ},
	{"async wait with no source", check.Wait, "ASYNC-18", sim.Auto, asyncNoSource, asyncWithSource},
	{"drain then arm", check.LostWakeup, "NOTIFY-15", sim.Auto, drainThenArm, armThenDrain},
	{"destroy a CQ with an event unacknowledged", check.Ack, "CQ-13", sim.Auto, destroyUnacked, destroyAcked},
	{"destroy a QP with an async event unacknowledged", check.Ack, "ASYNC-05", sim.Auto, destroyQPUnacked, destroyQPAcked},
	{"acknowledge more events than read", check.Ack, "CHAN-08", sim.Auto, overAck, ackEach},
	{"acknowledge an async event twice", check.Ack, "CHAN-08", sim.Auto, asyncOverAck, destroyQPAcked},
	{"acknowledge on the wrong CQ", check.Ack, "CHAN-07", sim.Auto, ackWrongCQ, ackRightCQ},
	{"a CQ smaller than its queues", check.CQSize, "CQ-25", sim.Auto, cqTooSmall, cqBigEnough},
	{"a queue of unsignaled sends", check.Signal, "QP-30", sim.Auto, allUnsignaled, signalEachDepth},
	{"a send buffer changed before it is sent", check.Buffer, "QP-36", sim.Manual, sendChangedBeforeWire, sendChangedAfterPoll},
	{"a send buffer changed before its completion", check.Buffer, "QP-36", sim.Manual, sendChangedBeforeCompletion, sendChangedAfterPoll},
	{"a receive buffer written before the message", check.Buffer, "QP-36", sim.Auto, recvWrittenEarly, recvWrittenAfterPoll},
	{"a received message overwritten before the poll", check.Buffer, "QP-36", sim.Auto, recvOverwrittenBeforePoll, recvWrittenAfterPoll},
	{"deregister an MR a receive names", check.Buffer, "MR-07", sim.Auto, deregInUse, deregAfterUse},
	{"deallocate a window a peer's WRITE names", check.Buffer, "MW-03", sim.Manual, deallocMWInUse, deallocMWAfterUse},
	{"poll a destroyed CQ", check.Destroyed, "USE-01", sim.Auto, pollDestroyed, destroyAcked},
	{"post to a destroyed QP", check.Destroyed, "USE-01", sim.Auto, postDestroyedQP, destroyQPAcked},
	{"use a key that ibv_rereg_mr replaced", check.Portability, "MR-15", sim.Auto, staleKey, freshKey},
	{"exit with objects alive", check.Leak, "USE-03", sim.Auto, leakObjects, tidyExit},
	{"exit with an event unacknowledged", check.Leak, "CQ-13", sim.Auto, leakUnackedEvent, tidyExit},
}

// TestMisuse runs every case: the misuse is reported with its rule and
// check, at the test's own line; its correct twin makes no finding.
func TestMisuse(t *testing.T) {
	rules := map[string]bool{}
	for _, c := range misuseCases {
		rules[c.rule+" "+c.name] = true
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, c.mode)
			c.misuse(r)
			var got *check.Finding
			for i, f := range r.findings {
				if f.Rule == c.rule && f.Check == c.check {
					got = &r.findings[i]
					break
				}
			}
			if got == nil {
				t.Fatalf("no %s finding of %v; got %d finding(s): %v", c.rule, c.check, len(r.findings), r.findings)
			}
			if len(got.Stack) == 0 || !strings.HasSuffix(got.Stack[0].File, "_test.go") {
				t.Errorf("the finding's stack does not start in the program: %v", got.Stack)
			}
			if len(got.Objects) == 0 || got.What == "" || got.Then == "" {
				t.Errorf("the finding names no object, or says not what is wrong and what follows: %+v", *got)
			}
			r.f.Close()
			if t.Failed() {
				for _, f := range r.findings {
					t.Log(f)
				}
			}

			ok := newRig(t, c.mode)
			c.correct(ok)
			ok.f.Close()
			for _, f := range ok.findings {
				t.Errorf("the correct program made a finding: %s", f)
			}
		})
	}
	if len(rules) < 15 {
		t.Errorf("%d misuse patterns, want at least 15", len(rules))
	}
}

// Waits.

// waitNoCQ is the verbs documentation's example gone wrong: the CQ is
// created with no channel, a channel later, and the program waits on the
// channel (CHAN-13).
func waitNoCQ(r *rig) {
	q := r.cq(0, 16, nil)
	r.must(q.ReqNotify(false))
	ch := r.channel(0)
	ch.GetEvent(cancelled())
	cleanCQ(r, q, ch)
}

// waitArmedCQ waits on a channel with an armed CQ: the wait can end.
func waitArmedCQ(r *rig) {
	ch := r.channel(0)
	q := r.cq(0, 16, ch)
	r.must(q.ReqNotify(false))
	ch.GetEvent(cancelled())
	cleanCQ(r, q, ch)
}

// waitUnarmed waits on a channel whose only CQ was never armed.
func waitUnarmed(r *rig) {
	ch := r.channel(0)
	q := r.cq(0, 16, ch)
	ch.GetEvent(cancelled())
	cleanCQ(r, q, ch)
}

// destroyUnderWait destroys the CQ of a channel another goroutine waits
// on.
func destroyUnderWait(r *rig) {
	ch := r.channel(0)
	q := r.cq(0, 16, ch)
	r.must(q.ReqNotify(false))
	started := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		close(started)
		ch.GetEvent(r.t.Context())
	}()
	<-started
	for ch.Len() == 0 && !waiting(r) {
		runtimeGosched()
	}
	r.must(q.Destroy())
	r.must(ch.Destroy()) // wakes the reader with EBADF
	<-done
	r.ctx[0].Close()
}

// asyncNoSource waits for an async event of a context that has nothing
// to raise one (ASYNC-18).
func asyncNoSource(r *rig) {
	r.ctx[0].GetAsyncEvent(cancelled())
	tidy(r)
}

// asyncWithSource waits for an async event of a context with a QP.
func asyncWithSource(r *rig) {
	r.pair(smallCap, true)
	r.ctx[0].GetAsyncEvent(cancelled())
	cleanPair(r)
}

// drainThenArm polls the CQ until... once, leaving completions, then arms
// and waits (NOTIFY-15).
func drainThenArm(r *rig) {
	ch := r.channel(0)
	q := r.cq(0, 16, ch)
	for i := range 3 {
		q.Push(verbs.WC{WRID: uint64(i), Opcode: verbs.WCRecv}, false)
	}
	wcs := make([]verbs.WC, 2)
	q.Poll(wcs) // leaves one
	r.must(q.ReqNotify(false))
	ch.GetEvent(cancelled())
	q.Poll(wcs)
	cleanCQ(r, q, ch)
}

// armThenDrain arms, then polls until the CQ is empty, then waits
// (NOTIFY-14).
func armThenDrain(r *rig) {
	ch := r.channel(0)
	q := r.cq(0, 16, ch)
	for i := range 3 {
		q.Push(verbs.WC{WRID: uint64(i), Opcode: verbs.WCRecv}, false)
	}
	r.must(q.ReqNotify(false))
	wcs := make([]verbs.WC, 2)
	for {
		if n, _ := q.Poll(wcs); n == 0 {
			break
		}
	}
	ch.GetEvent(cancelled())
	cleanCQ(r, q, ch)
}

// Acknowledgements.

// destroyUnacked reads an event and destroys its CQ without the ack
// (CQ-13): the destroy would wait for ever.
func destroyUnacked(r *rig) {
	ch := r.channel(0)
	q := r.cq(0, 16, ch)
	r.event(q)
	if _, _, err := ch.GetEvent(cancelled()); err != nil {
		r.t.Fatal(err)
	}
	q.DestroyContext(cancelled()) // EINTR: still waiting for the ack
	r.must(q.AckEvents(1))
	cleanCQ(r, q, ch)
}

// destroyAcked reads an event, acknowledges it, and destroys everything.
func destroyAcked(r *rig) {
	ch := r.channel(0)
	q := r.cq(0, 16, ch)
	r.event(q)
	if _, _, err := ch.GetEvent(cancelled()); err != nil {
		r.t.Fatal(err)
	}
	r.must(q.AckEvents(1))
	cleanCQ(r, q, ch)
}

// destroyQPUnacked reads a QP's async event and destroys the QP without
// the ack (ASYNC-05).
func destroyQPUnacked(r *rig) {
	a, _ := r.pair(smallCap, true)
	r.must(r.f.InjectFatal(a.qp))
	ev, err := r.ctx[0].GetAsyncEvent(cancelled())
	r.must(err)
	a.qp.DestroyContext(cancelled())
	r.must(ev.Ack())
	cleanPair(r)
}

// destroyQPAcked acknowledges the QP's async event before the destroy.
func destroyQPAcked(r *rig) {
	a, _ := r.pair(smallCap, true)
	r.must(r.f.InjectFatal(a.qp))
	ev, err := r.ctx[0].GetAsyncEvent(cancelled())
	r.must(err)
	r.must(ev.Ack())
	cleanPair(r)
}

// asyncOverAck acknowledges one async event twice (CHAN-08).
func asyncOverAck(r *rig) {
	a, _ := r.pair(smallCap, true)
	r.must(r.f.InjectFatal(a.qp))
	ev, err := r.ctx[0].GetAsyncEvent(cancelled())
	r.must(err)
	r.must(ev.Ack())
	ev.Ack() // EINVAL here; libibverbs would count it
	cleanPair(r)
}

// overAck acknowledges two events when one was read (CHAN-08).
func overAck(r *rig) {
	ch := r.channel(0)
	q := r.cq(0, 16, ch)
	r.event(q)
	ch.GetEvent(cancelled())
	q.AckEvents(2) // EINVAL here; libibverbs would count it
	q.AckEvents(1)
	cleanCQ(r, q, ch)
}

// ackEach acknowledges each event read, in one batch.
func ackEach(r *rig) {
	ch := r.channel(0)
	q := r.cq(0, 16, ch)
	r.event(q)
	ch.GetEvent(cancelled())
	r.event(q)
	ch.GetEvent(cancelled())
	r.must(q.AckEvents(2))
	cleanCQ(r, q, ch)
}

// ackWrongCQ reads an event of one CQ and acknowledges it on another of
// the same channel (CHAN-07).
func ackWrongCQ(r *rig) {
	ch := r.channel(0)
	q1, q2 := r.cq(0, 16, ch), r.cq(0, 16, ch)
	r.event(q2)
	ch.GetEvent(cancelled())
	q1.AckEvents(1)
	q2.AckEvents(1)
	r.must(q1.Destroy())
	cleanCQ(r, q2, ch)
}

// ackRightCQ acknowledges the event on the CQ it named.
func ackRightCQ(r *rig) {
	ch := r.channel(0)
	q1, q2 := r.cq(0, 16, ch), r.cq(0, 16, ch)
	r.event(q2)
	got, _, err := ch.GetEvent(cancelled())
	r.must(err)
	r.must(got.AckEvents(1))
	r.must(q1.Destroy())
	cleanCQ(r, q2, ch)
}

// Queues.

// cqTooSmall feeds a CQ of 31 entries from a QP of 32 send and 32 receive
// requests (CQ-25).
func cqTooSmall(r *rig) {
	q := r.cq(0, 16, nil)
	qp, err := r.pd[0].CreateQP(sim.QPInitAttr{SendCQ: q, RecvCQ: q, Type: verbs.QPTypeRC,
		Cap: verbs.QPCap{MaxSendWR: 32, MaxRecvWR: 32, MaxSendSGE: 1, MaxRecvSGE: 1}})
	r.must(err)
	r.must(qp.Modify(&verbs.QPAttr{QPState: verbs.QPStateInit, PortNum: 1}, verbs.QPAttrState|verbs.QPAttrPKeyIndex|verbs.QPAttrPort|verbs.QPAttrAccessFlags))
	r.must(qp.Destroy())
	r.must(q.Destroy())
	tidy(r)
}

// cqBigEnough sizes the CQ for both queues.
func cqBigEnough(r *rig) {
	q := r.cq(0, 64, nil)
	qp, err := r.pd[0].CreateQP(sim.QPInitAttr{SendCQ: q, RecvCQ: q, Type: verbs.QPTypeRC,
		Cap: verbs.QPCap{MaxSendWR: 32, MaxRecvWR: 32, MaxSendSGE: 1, MaxRecvSGE: 1}})
	r.must(err)
	r.must(qp.Modify(&verbs.QPAttr{QPState: verbs.QPStateInit, PortNum: 1}, verbs.QPAttrState|verbs.QPAttrPKeyIndex|verbs.QPAttrPort|verbs.QPAttrAccessFlags))
	r.must(qp.Destroy())
	r.must(q.Destroy())
	tidy(r)
}

// allUnsignaled posts a whole send queue of unsignaled SENDs (QP-30).
func allUnsignaled(r *rig) {
	a, b := r.pair(smallCap, false)
	for i := range 4 {
		b.recv(r, uint64(i))
	}
	for i := range 4 {
		a.send(r, uint64(i), 0)
	}
	b.drain(r)
	cleanPair(r)
}

// signalEachDepth signals the last request of every queue depth.
func signalEachDepth(r *rig) {
	a, b := r.pair(smallCap, false)
	for i := range 4 {
		b.recv(r, uint64(i))
	}
	for i := range 4 {
		var fl verbs.SendFlags
		if i == 3 {
			fl = verbs.SendSignaled
		}
		a.send(r, uint64(i), fl)
	}
	a.drain(r)
	b.drain(r)
	cleanPair(r)
}

// Buffers.

// sendChangedBeforeWire changes a SEND's source between its post and its
// transmission (QP-36): Manual mode runs nothing until Stabilize.
func sendChangedBeforeWire(r *rig) {
	a, b := r.pair(smallCap, true)
	b.recv(r, 1)
	copy(a.buf, "hello")
	a.send(r, 1, 0)
	copy(a.buf, "HELLO")
	r.f.Stabilize()
	a.drain(r)
	b.drain(r)
	cleanPair(r)
}

// sendChangedBeforeCompletion changes the source after the packet left,
// before the ACK completes the request.
func sendChangedBeforeCompletion(r *rig) {
	a, b := r.pair(smallCap, true)
	b.recv(r, 1)
	a.send(r, 1, 0)
	r.f.Step() // the requester: the packet leaves
	copy(a.buf, "late")
	r.f.Stabilize()
	a.drain(r)
	b.drain(r)
	cleanPair(r)
}

// sendChangedAfterPoll reuses the buffer once the completion is polled.
func sendChangedAfterPoll(r *rig) {
	a, b := r.pair(smallCap, true)
	b.recv(r, 1)
	a.send(r, 1, 0)
	r.f.Stabilize()
	a.drain(r)
	copy(a.buf, "free now")
	b.drain(r)
	cleanPair(r)
}

// recvWrittenEarly writes into a posted receive buffer before a message
// arrives.
func recvWrittenEarly(r *rig) {
	a, b := r.pair(smallCap, true)
	b.recv(r, 1)
	copy(b.buf, "mine")
	a.send(r, 1, 0)
	a.drain(r)
	b.drain(r)
	cleanPair(r)
}

// recvOverwrittenBeforePoll writes into a receive buffer after the
// message filled it, before polling its completion.
func recvOverwrittenBeforePoll(r *rig) {
	a, b := r.pair(smallCap, true)
	b.recv(r, 1)
	copy(a.buf, "hello")
	a.send(r, 1, 0)
	copy(b.buf, "clobber")
	a.drain(r)
	b.drain(r)
	cleanPair(r)
}

// recvWrittenAfterPoll touches the receive buffer only after the poll, in
// Auto or Manual mode.
func recvWrittenAfterPoll(r *rig) {
	a, b := r.pair(smallCap, true)
	b.recv(r, 1)
	a.send(r, 1, 0)
	r.f.Stabilize()
	a.drain(r)
	b.drain(r)
	copy(b.buf, "after")
	copy(a.buf, "after")
	cleanPair(r)
}

// deregInUse deregisters the MR of a posted receive (MR-07).
func deregInUse(r *rig) {
	_, b := r.pair(smallCap, true)
	b.recv(r, 1)
	r.must(b.mr.Dereg())
	b.mr = nil
	cleanPair(r)
}

// deregAfterUse deregisters it once the receive completed.
func deregAfterUse(r *rig) {
	a, b := r.pair(smallCap, true)
	b.recv(r, 1)
	a.send(r, 1, 0)
	a.drain(r)
	b.drain(r)
	cleanPair(r)
}

// deallocMWInUse deallocates a window that a peer's outstanding WRITE
// names (MW-03).
func deallocMWInUse(r *rig) {
	a, b := r.pair(smallCap, true)
	mw := bindWindow(r, b)
	_, err := a.qp.PostSend([]verbs.SendWR{{WRID: 2, Opcode: verbs.WRRDMAWrite, SGList: a.sge(),
		RemoteAddr: b.mr.Addr(), RKey: mw.RKey()}})
	r.must(err)
	r.must(mw.Dealloc())
	r.f.Stabilize()
	a.drain(r)
	b.drain(r)
	cleanPair(r)
}

// deallocMWAfterUse deallocates the window once the WRITE completed.
func deallocMWAfterUse(r *rig) {
	a, b := r.pair(smallCap, true)
	mw := bindWindow(r, b)
	_, err := a.qp.PostSend([]verbs.SendWR{{WRID: 2, Opcode: verbs.WRRDMAWrite, SGList: a.sge(),
		RemoteAddr: b.mr.Addr(), RKey: mw.RKey()}})
	r.must(err)
	r.f.Stabilize()
	a.drain(r)
	r.must(mw.Dealloc())
	b.drain(r)
	cleanPair(r)
}

// bindWindow binds a type 1 window over e's buffer, for remote writes.
func bindWindow(r *rig, e *end) *sim.MW {
	r.t.Helper()
	mw, err := r.pd[1].AllocMW(verbs.MWType1)
	r.must(err)
	r.must(e.qp.BindMW(mw, 1, verbs.SendSignaled, verbs.MWBindInfo{MR: e.mr, Addr: e.mr.Addr(),
		Length: uint64(len(e.buf)), Access: verbs.AccessRemoteWrite}))
	r.f.Stabilize()
	e.drain(r)
	return mw
}

// Destroyed objects.

// pollDestroyed polls a CQ after destroying it (USE-01).
func pollDestroyed(r *rig) {
	q := r.cq(0, 16, nil)
	r.must(q.Destroy())
	q.Poll(make([]verbs.WC, 1))
	tidy(r)
}

// postDestroyedQP posts to a QP after destroying it (USE-01).
func postDestroyedQP(r *rig) {
	a, _ := r.pair(smallCap, true)
	r.must(a.qp.Destroy())
	a.qp.PostRecv([]verbs.RecvWR{{WRID: 1, SGList: a.sge()}})
	a.qp = nil
	cleanPair(r)
}

// Keys.

// staleKey posts with the lkey an MR had before ibv_rereg_mr changed its
// access: the default profile gives it new keys (MR-15 A).
func staleKey(r *rig) {
	a, _ := r.pair(smallCap, true)
	old := a.sge()
	r.must(a.mr.Rereg(verbs.ReregChangeAccess, nil, nil, verbs.AccessLocalWrite))
	a.qp.PostRecv([]verbs.RecvWR{{WRID: 1, SGList: old}})
	cleanPair(r)
}

// freshKey reads the key again after the re-registration.
func freshKey(r *rig) {
	a, _ := r.pair(smallCap, true)
	r.must(a.mr.Rereg(verbs.ReregChangeAccess, nil, nil, verbs.AccessLocalWrite))
	a.recv(r, 1)
	cleanPair(r)
}

// Leaks.

// leakObjects closes the fabric with a CQ and a QP alive (USE-03).
func leakObjects(r *rig) {
	r.pair(smallCap, true)
	r.f.Close()
}

// leakUnackedEvent closes the fabric with an event read and never
// acknowledged.
func leakUnackedEvent(r *rig) {
	ch := r.channel(0)
	q := r.cq(0, 16, ch)
	r.event(q)
	ch.GetEvent(cancelled())
	r.f.Close()
}

// tidyExit destroys everything before the fabric closes.
func tidyExit(r *rig) {
	r.pair(smallCap, true)
	cleanPair(r)
}
