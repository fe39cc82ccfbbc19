package docs_test

// The Go snippets of the pages in this directory, as runnable examples. Every
// ```go block of a page must appear here verbatim (TestSnippetsAreExamples
// checks it), so a snippet that stops compiling, or starts printing something
// else, fails `go test ./docs`.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/cq"
	"github.com/verbsim/verbsim/sim/notify"
	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/sim/wc"
)

// openDevice opens the first device of a new fabric that follows profile p.
func openDevice(p sim.Profile) *sim.Context {
	fab, err := sim.NewFabric(sim.Config{Profile: p})
	if err != nil {
		panic(err)
	}
	verbs, err := fab.Devices()[0].Open()
	if err != nil {
		panic(err)
	}
	return verbs
}

// errno names the errno an error carries, or "ok".
func errno(err error) string {
	if err == nil {
		return "ok"
	}
	return verr.Name(verr.Errno(err))
}

func sendWC(id uint64) wc.WC { return wc.WC{WRID: id, Status: wc.Success, Opcode: wc.Send} }
func recvWC(id uint64) wc.WC { return wc.WC{WRID: id, Status: wc.Success, Opcode: wc.Recv} }

// must panics on an unexpected error; examples only.
func must(err error) {
	if err != nil {
		panic(err)
	}
}

// ---- cq.md ----

func Example_createCQ() {
	verbs := openDevice(sim.DefaultProfile())

	type conn struct{ peer string }
	q, err := verbs.CreateCQ(5, &conn{peer: "10.0.0.7"}, nil, 0)
	fmt.Println("cqe:", q.CQE(), err) // 5 rounded up to 2^3-1 (CQ-02)

	// The cq_context comes back untouched (CQ-04).
	fmt.Println("peer:", q.Context().(*conn).peer)

	_, err = verbs.CreateCQ(0, nil, nil, 0) // below 1 (CQ-01)
	fmt.Println("cqe=0:", errno(err))
	_, err = verbs.CreateCQ(8, nil, nil, verbs.NumCompVectors()) // one past the last vector (CQ-03)
	fmt.Println("bad vector:", errno(err))
	// Output:
	// cqe: 7 <nil>
	// peer: 10.0.0.7
	// cqe=0: EINVAL
	// bad vector: EINVAL
}

func Example_deviceLimits() {
	fab, err := sim.NewFabric(sim.Config{Devices: []sim.DeviceConfig{{
		Name: "tiny0",
		Attr: sim.DeviceAttr{MaxCQ: 1, MaxCQE: 255, NumCompVectors: 1},
	}}})
	must(err)
	verbs, err := fab.Devices()[0].Open()
	must(err)

	_, err = verbs.CreateCQ(256, nil, nil, 0)
	fmt.Println("cqe > max_cqe:", errno(err)) // CQ-01
	q, err := verbs.CreateCQ(255, nil, nil, 0)
	fmt.Println("cqe = max_cqe:", q.CQE(), errno(err))
	_, err = verbs.CreateCQ(1, nil, nil, 0)
	fmt.Println("over max_cq:", errno(err)) // CQ-06
	// Output:
	// cqe > max_cqe: EINVAL
	// cqe = max_cqe: 255 ok
	// over max_cq: ENOMEM
}

func Example_poll() {
	verbs := openDevice(sim.DefaultProfile())
	q, err := verbs.CreateCQ(16, nil, nil, 0)
	must(err)

	buf := make([]wc.WC, 4)
	n, err := q.Poll(buf) // an empty CQ: 0 at once, never a wait (CQ-14)
	fmt.Println("empty:", n, err)

	for id := uint64(1); id <= 6; id++ {
		_, err := q.Push(sendWC(id), false) // what the HCA does when a WR finishes
		must(err)
	}
	n, _ = q.Poll(buf[:0]) // num_entries = 0 removes nothing (CQ-16)
	fmt.Println("poll(0):", n, "left:", q.Len())

	for {
		n, err := q.Poll(buf) // at most len(buf), oldest first (CQ-15, CQ-17)
		if err != nil {
			panic(err)
		}
		if n == 0 {
			break
		}
		for _, w := range buf[:n] {
			fmt.Print(w.WRID, " ")
		}
		fmt.Println("| batch of", n)
	}
	// Output:
	// empty: 0 <nil>
	// poll(0): 0 left: 6
	// 1 2 3 4 | batch of 4
	// 5 6 | batch of 2
}

func Example_resize() {
	verbs := openDevice(sim.DefaultProfile())
	q, err := verbs.CreateCQ(15, nil, nil, 0)
	must(err)
	for id := uint64(1); id <= 3; id++ {
		_, err := q.Push(recvWC(id), false)
		must(err)
	}

	err = q.Resize(2) // 3 completions are unpolled (CQ-08)
	fmt.Println("resize(2):", errno(err), "cqe still", q.CQE())

	err = q.Resize(4) // may round up: 4 becomes 7 (CQ-09)
	fmt.Println("resize(4):", errno(err), "cqe now", q.CQE())

	buf := make([]wc.WC, 8)
	n, _ := q.Poll(buf) // order survives the resize (CQ-10)
	for _, w := range buf[:n] {
		fmt.Print(w.WRID, " ")
	}
	fmt.Println()
	// Output:
	// resize(2): EINVAL cqe still 15
	// resize(4): ok cqe now 7
	// 1 2 3
}

func Example_overrunDefault() {
	verbs := openDevice(sim.DefaultProfile())
	q, err := verbs.CreateCQ(1, nil, nil, 0) // capacity 1
	must(err)

	q.Push(sendWC(1), false)
	over, _ := q.Push(sendWC(2), false) // no room: the CQ overruns (CQ-22)
	fmt.Println("overrun:", over)

	ev, err := verbs.TryGetAsyncEvent()
	must(err)
	fmt.Println("async:", ev.Type.Name(), ev.Object == q) // ASYNC-07
	must(ev.Ack())

	buf := make([]wc.WC, 4)
	n, err := q.Poll(buf) // what was stored before the overrun, plus EIO
	fmt.Println("poll:", n, errno(err))

	over, _ = q.Push(sendWC(3), false) // reading A: the CQ stays broken (CQ-23)
	n, err = q.Poll(buf)
	fmt.Println("after:", over, n, errno(err))
	// Output:
	// overrun: true
	// async: IBV_EVENT_CQ_ERR true
	// poll: 1 EIO
	// after: true 0 EIO
}

func Example_overrunRXE() {
	verbs := openDevice(sim.RXEProfile())
	q, err := verbs.CreateCQ(1, nil, nil, 0)
	must(err)

	q.Push(sendWC(1), false)
	over, _ := q.Push(sendWC(2), false) // lost, CQ_ERR raised
	ev, err := verbs.TryGetAsyncEvent()
	must(err)
	must(ev.Ack())
	fmt.Println("overrun:", over, ev.Type.Name())

	buf := make([]wc.WC, 4)
	n, err := q.Poll(buf)
	fmt.Println("poll:", n, err, "wr_id", buf[0].WRID)

	over, _ = q.Push(sendWC(3), false) // reading B: the CQ keeps working (CQ-23)
	n, err = q.Poll(buf)
	fmt.Println("after:", over, n, err, "wr_id", buf[0].WRID)
	// Output:
	// overrun: true IBV_EVENT_CQ_ERR
	// poll: 1 <nil> wr_id 1
	// after: false 1 <nil> wr_id 3
}

func Example_ignoreOverrun() {
	verbs := openDevice(sim.DefaultProfile())
	q, err := verbs.CreateCQEx(sim.CQInitAttr{CQE: 1, IgnoreOverrun: true})
	must(err)

	q.Push(sendWC(1), false)
	over, _ := q.Push(sendWC(2), false) // dropped without a trace
	_, err = verbs.TryGetAsyncEvent()
	fmt.Println("overrun:", over, "async:", errno(err))

	buf := make([]wc.WC, 4)
	n, err := q.Poll(buf)
	fmt.Println("poll:", n, err)
	// Output:
	// overrun: true async: EAGAIN
	// poll: 1 <nil>
}

func Example_destroy() {
	verbs := openDevice(sim.DefaultProfile())
	ch, err := verbs.CreateCompChannel()
	must(err)
	q, err := verbs.CreateCQ(8, nil, ch, 0)
	must(err)

	must(q.Ref()) // what a QP does to its CQs
	fmt.Println("in use:", errno(q.Destroy()))
	q.Unref() // the QP is gone (CQ-11)

	must(q.ReqNotify(false))
	q.Push(recvWC(1), false) // fires: one event on the channel
	_, _, err = ch.GetEvent(context.Background())
	must(err) // read, and deliberately not acked yet

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err = q.DestroyContext(ctx) // waits for the ack (CQ-13) until ctx ends
	fmt.Println("unacked:", errno(err), errors.Is(err, context.DeadlineExceeded))

	must(q.AckEvents(1))
	fmt.Println("after ack:", errno(q.DestroyContext(context.Background())))
	// Output:
	// in use: EBUSY
	// unacked: EINTR true
	// after ack: ok
}

func Example_destroyUnread() {
	verbs := openDevice(sim.DefaultProfile())
	ch, err := verbs.CreateCompChannel()
	must(err)
	q, err := verbs.CreateCQ(8, nil, ch, 0)
	must(err)

	must(q.ReqNotify(false))
	q.Push(recvWC(1), false) // an event is queued but nobody reads it

	// Unpolled completions, an unread event: neither holds a destroy up
	// (CQ-12, CQ-13). The unread event is discarded.
	fmt.Println("destroy:", errno(q.Destroy()))
	fmt.Println("events left:", ch.Len())
	// Output:
	// destroy: ok
	// events left: 0
}

// ---- notify.md ----

func Example_armStates() {
	verbs := openDevice(sim.DefaultProfile())
	ch, err := verbs.CreateCompChannel()
	must(err)
	q, err := verbs.CreateCQ(8, nil, ch, 0)
	must(err)

	fmt.Println("created:        ", q.Armed())
	must(q.ReqNotify(true))
	fmt.Println("req_notify(1):  ", q.Armed())
	must(q.ReqNotify(false))
	fmt.Println("req_notify(0):  ", q.Armed()) // next beats solicited (NOTIFY-07)
	must(q.ReqNotify(true))
	fmt.Println("req_notify(1):  ", q.Armed()) // ... in either order
	q.Push(sendWC(1), false)
	fmt.Println("completion:     ", q.Armed(), "events:", ch.Len()) // one-shot (NOTIFY-01)
	q.Push(sendWC(2), false)
	fmt.Println("completion:     ", q.Armed(), "events:", ch.Len()) // no re-arm, no event
	// Output:
	// created:         disarmed
	// req_notify(1):   solicited
	// req_notify(0):   next
	// req_notify(1):   next
	// completion:      disarmed events: 1
	// completion:      disarmed events: 1
}

func Example_onlyNewCompletions() {
	verbs := openDevice(sim.DefaultProfile())
	ch, err := verbs.CreateCompChannel()
	must(err)
	q, err := verbs.CreateCQ(8, nil, ch, 0)
	must(err)

	q.Push(recvWC(1), false) // already there when we arm
	q.Push(recvWC(2), false)
	must(q.ReqNotify(false))
	must(q.ReqNotify(false)) // collapses with the first (NOTIFY-08)
	_, _, err = ch.TryGetEvent()
	fmt.Println("old completions:", errno(err)) // NOTIFY-02

	q.Push(recvWC(3), false)
	q.Push(recvWC(4), false)
	q.Push(recvWC(5), false)
	fmt.Println("after 3 new ones:", ch.Len(), "event(s),", q.Len(), "completions") // NOTIFY-11
	// Output:
	// old completions: EAGAIN
	// after 3 new ones: 1 event(s), 5 completions
}

func Example_solicited() {
	verbs := openDevice(sim.DefaultProfile())
	ch, err := verbs.CreateCompChannel()
	must(err)
	q, err := verbs.CreateCQ(8, nil, ch, 0)
	must(err)
	must(q.ReqNotify(true))

	q.Push(sendWC(1), false) // a successful send never fires it (NOTIFY-16)
	q.Push(recvWC(2), false) // a receive without the SE bit neither (NOTIFY-04)
	fmt.Println("plain:", ch.Len(), q.Armed())
	q.Push(recvWC(3), true) // a receive whose message had the SE bit
	fmt.Println("solicited:", ch.Len(), q.Armed())
	// Output:
	// plain: 0 solicited
	// solicited: 1 disarmed
}

func Example_solicitedErrors() {
	sendErr := wc.WC{WRID: 9, Status: wc.RemAccessErr} // a failed send WR
	for _, p := range sim.Profiles() {
		verbs := openDevice(p)
		ch, err := verbs.CreateCompChannel()
		must(err)
		q, err := verbs.CreateCQ(8, nil, ch, 0)
		must(err)
		must(q.ReqNotify(true))
		// The HCA never marks a send-side completion solicited.
		q.Push(sendErr, false)
		fmt.Printf("%-7s events: %d\n", p.Name, ch.Len()) // NOTIFY-05
	}
	// Output:
	// default events: 1
	// rxe     events: 0
}

// eventLoop is the consumer of NOTIFY-14: wait for an event, acknowledge it,
// re-arm, and only then poll until the CQ is empty. It returns when ctx ends
// or a verb fails. The CQs on ch must have been armed before their first
// completion could appear.
func eventLoop(ctx context.Context, ch *sim.CompChannel, handle func(wc.WC)) error {
	wcs := make([]wc.WC, 16)
	for {
		q, _, err := ch.GetEvent(ctx) // 1. wait for an event
		if err != nil {
			return err
		}
		if err := q.AckEvents(1); err != nil { // 2. acknowledge it
			return err
		}
		if err := q.ReqNotify(false); err != nil { // 3. re-arm BEFORE draining
			return err
		}
		for { // 4. drain; finding nothing at all is normal (NOTIFY-13)
			n, err := q.Poll(wcs)
			for _, w := range wcs[:n] {
				handle(w)
			}
			if err != nil {
				return err
			}
			if n == 0 {
				break
			}
		}
	}
}

func Example_eventLoop() {
	verbs := openDevice(sim.DefaultProfile())
	ch, err := verbs.CreateCompChannel()
	must(err)
	q, err := verbs.CreateCQ(64, nil, ch, 0)
	must(err)
	must(q.ReqNotify(false)) // arm before anything can complete

	const total = 1000
	ctx, cancel := context.WithCancel(context.Background())
	var got int
	done := make(chan error)
	go func() {
		done <- eventLoop(ctx, ch, func(w wc.WC) {
			if got++; got == total {
				cancel()
			}
		})
	}()

	for id := uint64(1); id <= total; id++ { // the "hardware"
		for q.Len() == q.CQE() {
			// A real HCA would overrun here (CQ-22); size the CQ so it
			// cannot happen (CQ-25). This producer waits instead.
			time.Sleep(time.Millisecond)
		}
		_, err := q.Push(recvWC(id), false)
		must(err)
	}
	err = <-done
	fmt.Println("handled:", got, "stopped by:", errno(err))
	// Output:
	// handled: 1000 stopped by: EINTR
}

func Example_lostWakeup() {
	verbs := openDevice(sim.DefaultProfile())
	ch, err := verbs.CreateCompChannel()
	must(err)
	q, err := verbs.CreateCQ(8, nil, ch, 0)
	must(err)
	buf := make([]wc.WC, 8)

	// The WRONG order: drain, then re-arm, then wait (NOTIFY-15).
	n, _ := q.Poll(buf)
	fmt.Println("t1 consumer polls:", n, "(empty)")
	q.Push(recvWC(1), false)
	fmt.Println("t2 HCA adds wr_id 1; the CQ is disarmed, no event")
	must(q.ReqNotify(false))
	fmt.Println("t3 consumer re-arms: wr_id 1 is already in, it cannot fire it")
	_, _, err = ch.TryGetEvent()
	fmt.Println("t4 consumer waits:", errno(err), "- but the CQ holds", q.Len())

	// The fix: poll once more after re-arming.
	n, _ = q.Poll(buf)
	fmt.Println("t5 poll after re-arm:", n)
	// Output:
	// t1 consumer polls: 0 (empty)
	// t2 HCA adds wr_id 1; the CQ is disarmed, no event
	// t3 consumer re-arms: wr_id 1 is already in, it cannot fire it
	// t4 consumer waits: EAGAIN - but the CQ holds 1
	// t5 poll after re-arm: 1
}

func Example_emptyAfterEvent() {
	verbs := openDevice(sim.DefaultProfile())
	ch, err := verbs.CreateCompChannel()
	must(err)
	q, err := verbs.CreateCQ(8, nil, ch, 0)
	must(err)
	buf := make([]wc.WC, 8)
	must(q.ReqNotify(false))

	q.Push(recvWC(1), false)
	fmt.Println("t1 HCA adds wr_id 1: event #1 queued")
	q1, _, err := ch.TryGetEvent()
	must(err)
	must(q1.AckEvents(1))
	must(q1.ReqNotify(false))
	fmt.Println("t2 consumer gets event #1, acks, re-arms")
	q.Push(recvWC(2), false)
	fmt.Println("t3 HCA adds wr_id 2: the new arm fires, event #2 queued")
	n, _ := q.Poll(buf)
	fmt.Println("t4 consumer drains:", n, "completions (1 and 2)")
	n, _ = q.Poll(buf)
	fmt.Println("   ... and the CQ is empty:", n)

	q2, _, err := ch.TryGetEvent()
	must(err)
	must(q2.AckEvents(1))
	must(q2.ReqNotify(false))
	n, _ = q.Poll(buf)
	fmt.Println("t5 consumer gets event #2, polls:", n, "(legal, NOTIFY-13)")
	// Output:
	// t1 HCA adds wr_id 1: event #1 queued
	// t2 consumer gets event #1, acks, re-arms
	// t3 HCA adds wr_id 2: the new arm fires, event #2 queued
	// t4 consumer drains: 2 completions (1 and 2)
	//    ... and the CQ is empty: 0
	// t5 consumer gets event #2, polls: 0 (legal, NOTIFY-13)
}

// ---- channels.md ----

func Example_sharedChannel() {
	verbs := openDevice(sim.DefaultProfile())
	ch, err := verbs.CreateCompChannel()
	must(err)
	sendCQ, err := verbs.CreateCQ(8, "send side", ch, 0)
	must(err)
	recvCQ, err := verbs.CreateCQ(8, "recv side", ch, 1)
	must(err)
	must(sendCQ.ReqNotify(false))
	must(recvCQ.ReqNotify(false))

	recvCQ.Push(recvWC(1), false) // fires first ...
	sendCQ.Push(sendWC(2), false) // ... so comes out first (CHAN-06)
	for range 2 {
		q, cqContext, err := ch.GetEvent(context.Background())
		must(err)
		fmt.Println(cqContext, q == recvCQ) // CHAN-02
		must(q.AckEvents(1))
	}
	// Output:
	// recv side true
	// send side false
}

func Example_nonBlocking() {
	verbs := openDevice(sim.DefaultProfile())
	ch, err := verbs.CreateCompChannel()
	must(err)

	_, _, err = ch.TryGetEvent() // an O_NONBLOCK descriptor (CHAN-04)
	fmt.Println("try:", errno(err))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, _, err = ch.GetEvent(ctx) // blocking, bounded by ctx
	fmt.Println("get:", errno(err), errors.Is(err, syscall.EINTR), errors.Is(err, context.DeadlineExceeded))
	// Output:
	// try: EAGAIN
	// get: EINTR true true
}

func Example_severalWaiters() {
	verbs := openDevice(sim.DefaultProfile())
	ch, err := verbs.CreateCompChannel()
	must(err)
	q, err := verbs.CreateCQ(8, nil, ch, 0)
	must(err)
	must(q.ReqNotify(false))

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	var mu sync.Mutex
	results := map[string]int{}
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			_, _, err := ch.GetEvent(ctx)
			mu.Lock()
			results[errno(err)]++
			mu.Unlock()
		})
	}
	q.Push(recvWC(1), false) // one event ...
	wg.Wait()
	fmt.Println("got it:", results["ok"], "timed out:", results["EINTR"]) // ... one winner (CHAN-11)
	must(q.AckEvents(1))
	// Output:
	// got it: 1 timed out: 2
}

// drainChannel reads every queued event and acknowledges them with one
// AckEvents call per CQ (CHAN-07, CHAN-12).
func drainChannel(ch *sim.CompChannel) error {
	unacked := map[*sim.CQ]int{}
	for {
		q, _, err := ch.TryGetEvent()
		if errors.Is(err, syscall.EAGAIN) {
			break
		}
		if err != nil {
			return err
		}
		unacked[q]++
	}
	for q, n := range unacked {
		if err := q.AckEvents(n); err != nil {
			return err
		}
	}
	return nil
}

func Example_batchedAcks() {
	verbs := openDevice(sim.DefaultProfile())
	ch, err := verbs.CreateCompChannel()
	must(err)
	q, err := verbs.CreateCQ(8, nil, ch, 0)
	must(err)
	for id := uint64(1); id <= 3; id++ {
		must(q.ReqNotify(false)) // re-armed before each event is read (NOTIFY-09)
		q.Push(recvWC(id), false)
	}
	fmt.Println("queued:", ch.Len())
	must(drainChannel(ch))
	s := q.Snapshot()
	fmt.Println("read:", s.CompRead, "acked:", s.CompAcked)
	fmt.Println("destroy:", errno(q.Destroy()))
	// Output:
	// queued: 3
	// read: 3 acked: 3
	// destroy: ok
}

func Example_overAck() {
	verbs := openDevice(sim.DefaultProfile())
	ch, err := verbs.CreateCompChannel()
	must(err)
	q, err := verbs.CreateCQ(8, nil, ch, 0)
	must(err)
	must(q.ReqNotify(false))
	q.Push(recvWC(1), false)
	_, _, err = ch.GetEvent(context.Background())
	must(err)

	err = q.AckEvents(2) // one read, two acked (CHAN-08)
	fmt.Println("over-ack:", errno(err))
	fmt.Println("acked:", q.Snapshot().CompAcked) // nothing was counted
	must(q.AckEvents(1))
	fmt.Println("destroy:", errno(q.Destroy()))
	// Output:
	// over-ack: EINVAL
	// acked: 0
	// destroy: ok
}

func Example_destroyOrder() {
	verbs := openDevice(sim.DefaultProfile())
	ch, err := verbs.CreateCompChannel()
	must(err)
	q, err := verbs.CreateCQ(8, nil, ch, 0)
	must(err)

	fmt.Println("channel first:", errno(ch.Destroy())) // CHAN-09
	fmt.Println("cq:", errno(q.Destroy()))
	fmt.Println("channel:", errno(ch.Destroy()))
	_, _, err = ch.TryGetEvent()
	fmt.Println("read after destroy:", errno(err))
	fmt.Println("close:", errno(verbs.Close()))
	// Output:
	// channel first: EBUSY
	// cq: ok
	// channel: ok
	// read after destroy: EBADF
	// close: ok
}

func Example_asyncEvent() {
	verbs := openDevice(sim.DefaultProfile())
	q, err := verbs.CreateCQ(1, "orders", nil, 0)
	must(err)
	q.Push(sendWC(1), false)
	q.Push(sendWC(2), false) // overrun: CQ_ERR (CQ-22, ASYNC-07)

	ev, err := verbs.GetAsyncEvent(context.Background())
	must(err)
	fmt.Println(ev.Type.Name(), "=", uint32(ev.Type)) // ASYNC-04
	fmt.Println(ev)                                   // type text and element (ASYNC-03)
	if ev.Type.Element() == notify.ElementCQ {
		fmt.Println("cq context:", ev.Object.(*sim.CQ).Context())
	}
	fmt.Println("ack:", errno(ev.Ack()))       // ASYNC-05
	fmt.Println("again:", errno(ev.Ack()))     // an over-ack
	fmt.Println(notify.EventType(42).String()) // ASYNC-17
	// Output:
	// IBV_EVENT_CQ_ERR = 0
	// CQ error (cq)
	// cq context: orders
	// ack: ok
	// again: EINVAL
	// unknown
}

// ---- profiles.md ----

func Example_profiles() {
	for _, p := range sim.Profiles() {
		fmt.Println(p)
	}
	// Output:
	// default (overrun=error destroy=wait rounding=pow2-1 solicited=errors-fire)
	// rxe (overrun=drop destroy=wait rounding=pow2-1 solicited=solicited-bit-only)
}

func Example_customProfile() {
	strict := sim.Profile{
		Name:       "strict",
		CQDestroy:  cq.DestroyBusy, // fail instead of waiting (CQ-13)
		CQRounding: cq.RoundExact,  // capacity == request (CQ-02)
	}
	verbs := openDevice(strict)
	ch, err := verbs.CreateCompChannel()
	must(err)
	q, err := verbs.CreateCQ(5, nil, ch, 0)
	must(err)
	fmt.Println("cqe:", q.CQE())

	must(q.ReqNotify(false))
	q.Push(recvWC(1), false)
	_, _, err = ch.GetEvent(context.Background())
	must(err)
	fmt.Println("destroy, unacked:", errno(q.Destroy())) // no wait, no hang
	must(q.AckEvents(1))
	fmt.Println("destroy, acked:", errno(q.Destroy()))
	// Output:
	// cqe: 5
	// destroy, unacked: EBUSY
	// destroy, acked: ok
}

func TestEventLoopUnderEveryProfile(t *testing.T) {
	for _, p := range sim.Profiles() {
		t.Run(p.Name, func(t *testing.T) {
			verbs := openDevice(p)
			ch, err := verbs.CreateCompChannel()
			if err != nil {
				t.Fatal(err)
			}
			q, err := verbs.CreateCQ(16, nil, ch, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := q.ReqNotify(false); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			done := make(chan error, 1)
			var got []uint64
			go func() {
				done <- eventLoop(ctx, ch, func(w wc.WC) {
					if got = append(got, w.WRID); len(got) == 3 {
						cancel()
					}
				})
			}()
			for id := uint64(1); id <= 3; id++ {
				if _, err := q.Push(recvWC(id), false); err != nil {
					t.Fatal(err)
				}
			}
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatalf("the loop ended with %v, want context.Canceled after 3 completions", err)
			}
			if len(got) != 3 {
				t.Errorf("handled %v, want wr_ids 1, 2, 3", got)
			}
		})
	}
}
