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
	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/simtest"
	"github.com/verbsim/verbsim/verbs"
)

// openDevice opens the first device of a new fabric that follows profile p.
func openDevice(p sim.Profile) *sim.Context {
	fab, err := sim.NewFabric(sim.Config{Profile: p})
	if err != nil {
		panic(err)
	}
	dev, err := fab.Devices()[0].Open()
	if err != nil {
		panic(err)
	}
	return dev
}

// errno names the errno an error carries, or "ok".
func errno(err error) string {
	if err == nil {
		return "ok"
	}
	return verr.Name(verr.Errno(err))
}

func sendWC(id uint64) verbs.WC {
	return verbs.WC{WRID: id, Status: verbs.WCSuccess, Opcode: verbs.WCSend}
}
func recvWC(id uint64) verbs.WC {
	return verbs.WC{WRID: id, Status: verbs.WCSuccess, Opcode: verbs.WCRecv}
}

// must panics on an unexpected error; examples only.
func must(err error) {
	if err != nil {
		panic(err)
	}
}

// ---- cq.md ----

func Example_createCQ() {
	dev := openDevice(sim.DefaultProfile())

	type conn struct{ peer string }
	q, err := dev.CreateCQ(5, &conn{peer: "10.0.0.7"}, nil, 0)
	fmt.Println("cqe:", q.CQE(), err) // 5 rounded up to 2^3-1 (CQ-02)

	// The cq_context comes back untouched (CQ-04).
	fmt.Println("peer:", q.CQContext().(*conn).peer)

	_, err = dev.CreateCQ(0, nil, nil, 0) // below 1 (CQ-01)
	fmt.Println("cqe=0:", errno(err))
	_, err = dev.CreateCQ(8, nil, nil, dev.NumCompVectors()) // one past the last vector (CQ-03)
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
		Attr: verbs.DeviceAttr{MaxCQ: 1, MaxCQE: 255, NumCompVectors: 1},
	}}})
	must(err)
	dev, err := fab.Devices()[0].Open()
	must(err)

	_, err = dev.CreateCQ(256, nil, nil, 0)
	fmt.Println("cqe > max_cqe:", errno(err)) // CQ-01
	q, err := dev.CreateCQ(255, nil, nil, 0)
	fmt.Println("cqe = max_cqe:", q.CQE(), errno(err))
	_, err = dev.CreateCQ(1, nil, nil, 0)
	fmt.Println("over max_cq:", errno(err)) // CQ-06
	// Output:
	// cqe > max_cqe: EINVAL
	// cqe = max_cqe: 255 ok
	// over max_cq: ENOMEM
}

func Example_poll() {
	dev := openDevice(sim.DefaultProfile())
	q, err := dev.CreateCQ(16, nil, nil, 0)
	must(err)

	buf := make([]verbs.WC, 4)
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
	dev := openDevice(sim.DefaultProfile())
	q, err := dev.CreateCQ(15, nil, nil, 0)
	must(err)
	for id := uint64(1); id <= 3; id++ {
		_, err := q.Push(recvWC(id), false)
		must(err)
	}

	err = q.Resize(2) // 3 completions are unpolled (CQ-08)
	fmt.Println("resize(2):", errno(err), "cqe still", q.CQE())

	err = q.Resize(4) // may round up: 4 becomes 7 (CQ-09)
	fmt.Println("resize(4):", errno(err), "cqe now", q.CQE())

	buf := make([]verbs.WC, 8)
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
	dev := openDevice(sim.DefaultProfile())
	q, err := dev.CreateCQ(1, nil, nil, 0) // capacity 1
	must(err)

	q.Push(sendWC(1), false)
	over, _ := q.Push(sendWC(2), false) // no room: the CQ overruns (CQ-22)
	fmt.Println("overrun:", over)

	ev, err := dev.TryGetAsyncEvent()
	must(err)
	fmt.Println("async:", ev.Type().Name(), ev.CQ() == q) // ASYNC-07
	must(ev.Ack())

	buf := make([]verbs.WC, 4)
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
	dev := openDevice(sim.RXEProfile())
	q, err := dev.CreateCQ(1, nil, nil, 0)
	must(err)

	q.Push(sendWC(1), false)
	over, _ := q.Push(sendWC(2), false) // lost, CQ_ERR raised
	ev, err := dev.TryGetAsyncEvent()
	must(err)
	must(ev.Ack())
	fmt.Println("overrun:", over, ev.Type().Name())

	buf := make([]verbs.WC, 4)
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
	dev := openDevice(sim.DefaultProfile())
	q, err := dev.CreateCQEx(sim.CQInitAttr{CQE: 1, IgnoreOverrun: true})
	must(err)

	q.Push(sendWC(1), false)
	over, _ := q.Push(sendWC(2), false) // dropped without a trace
	_, err = dev.TryGetAsyncEvent()
	fmt.Println("overrun:", over, "async:", errno(err))

	buf := make([]verbs.WC, 4)
	n, err := q.Poll(buf)
	fmt.Println("poll:", n, err)
	// Output:
	// overrun: true async: EAGAIN
	// poll: 1 <nil>
}

// handle stands for the application's work on one completion.
func handle(wrID uint64, st verbs.WCStatus, op verbs.WCOpcode, n uint32, ts uint64) {
	fmt.Println(wrID, st, op, n, ts)
}

func Example_extendedCQ() {
	ctx := openDevice(sim.DefaultProfile())
	fab := ctx.Device().Fabric()
	q, _ := ctx.CreateCQEx(sim.CQInitAttr{CQE: 64, WCFlags: verbs.WCStandardFlags | verbs.WCExCompletionTimestamp})
	fab.Tick(1000)
	q.Push(verbs.WC{WRID: 1, Opcode: verbs.WCRecv, ByteLen: 64}, false)
	fab.Tick(500)
	q.Push(verbs.WC{WRID: 2, Opcode: verbs.WCSend, ByteLen: 8}, false)

	if err := q.StartPoll(); err == nil { // ENOENT: empty, and no EndPoll
		for ; err == nil; err = q.NextPoll() { // ENOENT at the end
			op, _ := q.ReadOpcode()
			n, _ := q.ReadByteLen()
			ts, _ := q.ReadCompletionTS()
			handle(q.WRID(), q.Status(), op, n, ts)
		}
		q.EndPoll() // consumes everything the batch visited
	}
	fmt.Println("left:", q.Len())
	// Output:
	// 1 IBV_WC_SUCCESS IBV_WC_RECV 64 1000
	// 2 IBV_WC_SUCCESS IBV_WC_SEND 8 1500
	// left: 0
}

func Example_destroy() {
	dev := openDevice(sim.DefaultProfile())
	ch, err := dev.CreateCompChannel()
	must(err)
	q, err := dev.CreateCQ(8, nil, ch, 0)
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
	dev := openDevice(sim.DefaultProfile())
	ch, err := dev.CreateCompChannel()
	must(err)
	q, err := dev.CreateCQ(8, nil, ch, 0)
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
	dev := openDevice(sim.DefaultProfile())
	ch, err := dev.CreateCompChannel()
	must(err)
	q, err := dev.CreateCQ(8, nil, ch, 0)
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
	dev := openDevice(sim.DefaultProfile())
	ch, err := dev.CreateCompChannel()
	must(err)
	q, err := dev.CreateCQ(8, nil, ch, 0)
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
	dev := openDevice(sim.DefaultProfile())
	ch, err := dev.CreateCompChannel()
	must(err)
	q, err := dev.CreateCQ(8, nil, ch, 0)
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
	sendErr := verbs.WC{WRID: 9, Status: verbs.WCRemAccessErr} // a failed send WR
	for _, p := range sim.Profiles() {
		dev := openDevice(p)
		ch, err := dev.CreateCompChannel()
		must(err)
		q, err := dev.CreateCQ(8, nil, ch, 0)
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
func eventLoop(ctx context.Context, ch *sim.CompChannel, handle func(verbs.WC)) error {
	wcs := make([]verbs.WC, 16)
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
	dev := openDevice(sim.DefaultProfile())
	ch, err := dev.CreateCompChannel()
	must(err)
	q, err := dev.CreateCQ(64, nil, ch, 0)
	must(err)
	must(q.ReqNotify(false)) // arm before anything can complete

	const total = 1000
	ctx, cancel := context.WithCancel(context.Background())
	var got int
	done := make(chan error)
	go func() {
		done <- eventLoop(ctx, ch, func(w verbs.WC) {
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
	dev := openDevice(sim.DefaultProfile())
	ch, err := dev.CreateCompChannel()
	must(err)
	q, err := dev.CreateCQ(8, nil, ch, 0)
	must(err)
	buf := make([]verbs.WC, 8)

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
	dev := openDevice(sim.DefaultProfile())
	ch, err := dev.CreateCompChannel()
	must(err)
	q, err := dev.CreateCQ(8, nil, ch, 0)
	must(err)
	buf := make([]verbs.WC, 8)
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
	dev := openDevice(sim.DefaultProfile())
	ch, err := dev.CreateCompChannel()
	must(err)
	sendCQ, err := dev.CreateCQ(8, "send side", ch, 0)
	must(err)
	recvCQ, err := dev.CreateCQ(8, "recv side", ch, 1)
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
	dev := openDevice(sim.DefaultProfile())
	ch, err := dev.CreateCompChannel()
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
	dev := openDevice(sim.DefaultProfile())
	ch, err := dev.CreateCompChannel()
	must(err)
	q, err := dev.CreateCQ(8, nil, ch, 0)
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
	dev := openDevice(sim.DefaultProfile())
	ch, err := dev.CreateCompChannel()
	must(err)
	q, err := dev.CreateCQ(8, nil, ch, 0)
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
	dev := openDevice(sim.DefaultProfile())
	ch, err := dev.CreateCompChannel()
	must(err)
	q, err := dev.CreateCQ(8, nil, ch, 0)
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
	dev := openDevice(sim.DefaultProfile())
	ch, err := dev.CreateCompChannel()
	must(err)
	q, err := dev.CreateCQ(8, nil, ch, 0)
	must(err)

	fmt.Println("channel first:", errno(ch.Destroy())) // CHAN-09
	fmt.Println("cq:", errno(q.Destroy()))
	fmt.Println("channel:", errno(ch.Destroy()))
	_, _, err = ch.TryGetEvent()
	fmt.Println("read after destroy:", errno(err))
	fmt.Println("close:", errno(dev.Close()))
	// Output:
	// channel first: EBUSY
	// cq: ok
	// channel: ok
	// read after destroy: EBADF
	// close: ok
}

func Example_asyncEvent() {
	dev := openDevice(sim.DefaultProfile())
	q, err := dev.CreateCQ(1, "orders", nil, 0)
	must(err)
	q.Push(sendWC(1), false)
	q.Push(sendWC(2), false) // overrun: CQ_ERR (CQ-22, ASYNC-07)

	ev, err := dev.GetAsyncEvent(context.Background())
	must(err)
	fmt.Println(ev.Type().Name(), "=", uint32(ev.Type())) // ASYNC-04
	fmt.Println(ev)                                       // type and element (ASYNC-03)
	if ev.Type().Element() == verbs.ElementCQ {
		fmt.Println("cq context:", ev.CQ().CQContext())
	}
	fmt.Println("ack:", errno(ev.Ack()))                                                   // ASYNC-05
	fmt.Println("again:", errno(ev.Ack()))                                                 // an over-ack
	fmt.Println(ev.Type().Str(), "|", verbs.EventType(42).Str(), "|", verbs.EventType(42)) // ibv_event_type_str (ASYNC-17)
	// Output:
	// IBV_EVENT_CQ_ERR = 0
	// IBV_EVENT_CQ_ERR (cq)
	// cq context: orders
	// ack: ok
	// again: EINVAL
	// CQ error | unknown | IBV_EVENT_TYPE(42)
}

// ---- profiles.md ----

func Example_profiles() {
	for _, p := range sim.Profiles() {
		fmt.Println(p)
	}
	// Output:
	// default (man-pages)
	// rxe (OverrunDrops OverrunSendIgnored NoCQTimestamps SolicitedBitOnly CurStateTrusted FreeSlotOnRetire TransportOpLocQPOp SendOpsRXE SRQLimitAtCreate SRQRecvQPPD NoXRC NoDM DeregBoundEINVAL ReregFailKeepsMR ReregKeepsKeys ReregNoTranslation NoODP MWType1NoZeroBased RecvTooSmallRemInvReq InfiniteRetry7 RecvProtQPOp WriteImmRKeyRemAccess LateLocalCheck SendInvErrAcked NoSQE SendWCImm NoQPEvents AlwaysSQDrained NoFlowLabel)
}

func Example_customProfile() {
	strict := sim.Profile{
		Name: "strict",
		Readings: verbs.Readings{
			DestroyBusyOnUnacked: true, // fail instead of waiting (CQ-13)
			ExactCQE:             true, // capacity == request (CQ-02)
		},
	}
	dev := openDevice(strict)
	ch, err := dev.CreateCompChannel()
	must(err)
	q, err := dev.CreateCQ(5, nil, ch, 0)
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
			dev := openDevice(p)
			ch, err := dev.CreateCompChannel()
			if err != nil {
				t.Fatal(err)
			}
			q, err := dev.CreateCQ(16, nil, ch, 0)
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
				done <- eventLoop(ctx, ch, func(w verbs.WC) {
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

// ---- qp.md ----

// newQP allocates a PD and a CQ of 64 entries on verbs and creates a QP of
// type typ with capacities c whose two queues share that CQ.
func newQP(dev *sim.Context, typ verbs.QPType, c verbs.QPCap) (*sim.QP, *sim.CQ) {
	pd, err := dev.AllocPD()
	must(err)
	q, err := dev.CreateCQ(64, nil, nil, 0)
	must(err)
	p, err := pd.CreateQP(sim.QPInitAttr{SendCQ: q, RecvCQ: q, Type: typ, Cap: c})
	must(err)
	return p, q
}

func Example_walkToRTS() {
	fabric, _ := sim.NewFabric(sim.Config{}) // one device, default profile
	vctx, _ := fabric.Devices()[0].Open()    // ibv_open_device
	pd, _ := vctx.AllocPD()                  // ibv_alloc_pd
	cq, _ := vctx.CreateCQ(64, nil, nil, 0)  // ibv_create_cq
	q, _ := pd.CreateQP(sim.QPInitAttr{      // ibv_create_qp: the QP starts in RESET
		SendCQ: cq, RecvCQ: cq, Type: verbs.QPTypeRC,
		Cap: verbs.QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1},
	})
	err := errors.Join( // ibv_modify_qp, three times: each mask names what its step sets
		q.Modify(&verbs.QPAttr{QPState: verbs.QPStateInit, PortNum: 1, QPAccessFlags: verbs.AccessRemoteWrite},
			verbs.QPAttrState|verbs.QPAttrPKeyIndex|verbs.QPAttrPort|verbs.QPAttrAccessFlags),
		q.Modify(&verbs.QPAttr{QPState: verbs.QPStateRTR, PathMTU: verbs.MTU1024, DestQPNum: q.Num(), // loopback
			MaxDestRDAtomic: 1, MinRNRTimer: 12, AHAttr: verbs.AHAttr{DLID: 1, PortNum: 1}},
			verbs.QPAttrState|verbs.QPAttrAV|verbs.QPAttrPathMTU|verbs.QPAttrDestQPN|verbs.QPAttrRQPSN|verbs.QPAttrMaxDestRDAtomic|verbs.QPAttrMinRNRTimer),
		q.Modify(&verbs.QPAttr{QPState: verbs.QPStateRTS, Timeout: 14, RetryCnt: 7, RNRRetry: 7, MaxRDAtomic: 1},
			verbs.QPAttrState|verbs.QPAttrSQPSN|verbs.QPAttrTimeout|verbs.QPAttrRetryCnt|verbs.QPAttrRNRRetry|verbs.QPAttrMaxQPRDAtomic),
	)
	fmt.Println(q.State(), err) // RTS <nil>

	err = q.Modify(&verbs.QPAttr{QPState: verbs.QPStateRTR}, verbs.QPAttrState) // RTS→RTR is no transition
	fmt.Println(q.State(), errors.Is(err, syscall.EINVAL))                      // RTS true: nothing changed
	// Output:
	// RTS <nil>
	// RTS true
}

func Example_createQP() {
	dev := openDevice(sim.DefaultProfile())
	pd, err := dev.AllocPD()
	must(err)
	cq, err := dev.CreateCQ(64, nil, nil, 0)
	must(err)

	q, err := pd.CreateQP(sim.QPInitAttr{
		SendCQ: cq, RecvCQ: cq, Type: verbs.QPTypeRC, // one CQ may serve both queues (QP-03)
		Cap: verbs.QPCap{MaxSendWR: 8, MaxRecvWR: 8, MaxSendSGE: 0, MaxRecvSGE: 2},
	})
	must(err)
	fmt.Printf("qp_num %#x, state %v\n", q.Num(), q.State()) // QP-01
	fmt.Printf("caps %+v\n", q.Cap())                        // never below the request (QP-02)

	_, err = pd.CreateQP(sim.QPInitAttr{SendCQ: cq, Type: verbs.QPTypeRC}) // QP-03
	fmt.Println("no recv_cq:", errno(err))
	maxWR := uint32(dev.Device().Attr().MaxQPWR)
	_, err = pd.CreateQP(sim.QPInitAttr{SendCQ: cq, RecvCQ: cq, Type: verbs.QPTypeRC,
		Cap: verbs.QPCap{MaxSendWR: maxWR + 1}}) // QP-02
	fmt.Println("above max_qp_wr:", errno(err))
	srq, err := pd.CreateSRQ(sim.SRQInitAttr{Attr: verbs.SRQAttr{MaxWR: 8, MaxSGE: 1}})
	must(err)
	_, err = pd.CreateQP(sim.QPInitAttr{SendCQ: cq, RecvCQ: cq, SRQ: srq, Type: verbs.QPTypeUC}) // QP-04
	fmt.Println("UC on an SRQ:", errno(err))

	fmt.Println("destroy the CQ:", errno(cq.Destroy())) // the QP holds it (CQ-11)
	// Output:
	// qp_num 0x11, state RESET
	// caps {MaxSendWR:8 MaxRecvWR:8 MaxSendSGE:1 MaxRecvSGE:2 MaxInlineData:0}
	// no recv_cq: EINVAL
	// above max_qp_wr: EINVAL
	// UC on an SRQ: EINVAL
	// destroy the CQ: EBUSY
}

func Example_resetToErr() {
	ibta := sim.Profile{Name: "ibta", Readings: verbs.Readings{ResetToErr: true}}
	for _, p := range []sim.Profile{sim.DefaultProfile(), sim.RXEProfile(), ibta} {
		q, _ := newQP(openDevice(p), verbs.QPTypeRC, verbs.QPCap{MaxSendWR: 1})
		err := q.Modify(&verbs.QPAttr{QPState: verbs.QPStateErr}, verbs.QPAttrState) // QP-08
		fmt.Printf("%-7s RESET→ERR: %s, now %v\n", p.Name, errno(err), q.State())
	}
	// Output:
	// default RESET→ERR: EINVAL, now RESET
	// rxe     RESET→ERR: EINVAL, now RESET
	// ibta    RESET→ERR: ok, now ERR
}

// connectRC takes an RC QP from RESET to RTS, connected to QP number remote
// behind the port whose LID is dlid, with what each step requires.
func connectRC(q *sim.QP, remote uint32, dlid uint16) error {
	init := verbs.QPAttr{QPState: verbs.QPStateInit, PKeyIndex: 0, PortNum: 1,
		QPAccessFlags: verbs.AccessRemoteWrite | verbs.AccessRemoteRead}
	err := q.Modify(&init, verbs.QPAttrState|verbs.QPAttrPKeyIndex|verbs.QPAttrPort|verbs.QPAttrAccessFlags)
	if err != nil {
		return err
	}
	rtr := verbs.QPAttr{QPState: verbs.QPStateRTR, AHAttr: verbs.AHAttr{DLID: dlid, PortNum: 1},
		PathMTU: verbs.MTU4096, DestQPNum: remote, RQPSN: 0x1000,
		MaxDestRDAtomic: 4, MinRNRTimer: 12}
	err = q.Modify(&rtr, verbs.QPAttrState|verbs.QPAttrAV|verbs.QPAttrPathMTU|verbs.QPAttrDestQPN|
		verbs.QPAttrRQPSN|verbs.QPAttrMaxDestRDAtomic|verbs.QPAttrMinRNRTimer)
	if err != nil {
		return err
	}
	rts := verbs.QPAttr{QPState: verbs.QPStateRTS, SQPSN: 0x2000,
		Timeout: 14, RetryCnt: 7, RNRRetry: 7, MaxRDAtomic: 4}
	return q.Modify(&rts, verbs.QPAttrState|verbs.QPAttrSQPSN|verbs.QPAttrTimeout|
		verbs.QPAttrRetryCnt|verbs.QPAttrRNRRetry|verbs.QPAttrMaxQPRDAtomic)
}

// activateUD takes a UD QP from RESET to RTS. A UD QP has no peer: the
// destination travels in every send WR.
func activateUD(q *sim.QP, qkey uint32) error {
	init := verbs.QPAttr{QPState: verbs.QPStateInit, PKeyIndex: 0, PortNum: 1, QKey: qkey}
	err := q.Modify(&init, verbs.QPAttrState|verbs.QPAttrPKeyIndex|verbs.QPAttrPort|verbs.QPAttrQKey)
	if err != nil {
		return err
	}
	if err := q.Modify(&verbs.QPAttr{QPState: verbs.QPStateRTR}, verbs.QPAttrState); err != nil {
		return err
	}
	return q.Modify(&verbs.QPAttr{QPState: verbs.QPStateRTS, SQPSN: 0}, verbs.QPAttrState|verbs.QPAttrSQPSN)
}

func Example_connect() {
	dev := openDevice(sim.DefaultProfile())
	rc, _ := newQP(dev, verbs.QPTypeRC, verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4})
	ud, _ := newQP(dev, verbs.QPTypeUD, verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4})
	must(connectRC(rc, 0x99, 1))
	must(activateUD(ud, 0x11111111))

	attr, _, err := rc.Query(verbs.QPAttrState | verbs.QPAttrDestQPN | verbs.QPAttrPathMTU | verbs.QPAttrSQPSN) // what was set comes back (QP-24)
	must(err)
	fmt.Printf("rc: %v dest_qp_num=%#x path_mtu=%v sq_psn=%#x\n", attr.QPState, attr.DestQPNum, attr.PathMTU, attr.SQPSN)
	attr, _, err = ud.Query(verbs.QPAttrState | verbs.QPAttrQKey)
	must(err)
	fmt.Printf("ud: %v qkey=%#x\n", attr.QPState, attr.QKey)
	// Output:
	// rc: RTS dest_qp_num=0x99 path_mtu=4096 sq_psn=0x2000
	// ud: RTS qkey=0x11111111
}

func Example_maskErrors() {
	dev := openDevice(sim.DefaultProfile())
	q, _ := newQP(dev, verbs.QPTypeRC, verbs.QPCap{MaxSendWR: 4})
	init := verbs.QPAttr{QPState: verbs.QPStateInit, PortNum: 1}

	err := q.Modify(&init, verbs.QPAttrState|verbs.QPAttrPort|verbs.QPAttrAccessFlags) // QP-10: one short
	fmt.Println(err)
	err = q.Modify(&init, verbs.QPAttrState|verbs.QPAttrPKeyIndex|verbs.QPAttrPort|verbs.QPAttrAccessFlags|verbs.QPAttrQKey) // QP-21
	fmt.Println(err)
	err = q.Modify(&init, verbs.QPAttrState|verbs.QPAttrPKeyIndex|verbs.QPAttrPort|verbs.QPAttrAccessFlags)
	fmt.Println(q.State(), err)
	err = q.Modify(&verbs.QPAttr{QPState: verbs.QPStateErr}, verbs.QPAttrState|verbs.QPAttrPort) // QP-09
	fmt.Println(err)
	// Output:
	// ibv_modify_qp: EINVAL (invalid argument): QP-10: RESET→INIT on RC requires ACCESS_FLAGS|PKEY_INDEX|PORT; missing PKEY_INDEX
	// ibv_modify_qp: EINVAL (invalid argument): QP-21: QKEY has no meaning for RC QPs
	// INIT <nil>
	// ibv_modify_qp: EINVAL (invalid argument): QP-09: moving to ERR takes STATE only; got also PORT
}

func Example_attributeOnly() {
	dev := openDevice(sim.DefaultProfile())
	q, _ := newQP(dev, verbs.QPTypeRC, verbs.QPCap{MaxSendWR: 4})
	must(connectRC(q, 0x99, 1))

	// In RTS: a mask without STATE is checked as RTS→RTS (QP-11).
	err := q.Modify(&verbs.QPAttr{MinRNRTimer: 20}, verbs.QPAttrMinRNRTimer)
	attr, _, _ := q.Query(verbs.QPAttrMinRNRTimer | verbs.QPAttrState)
	fmt.Println("RTS, min_rnr_timer only:", errno(err), attr.MinRNRTimer, attr.QPState)

	// RTS→RTS does not take the PSNs: those are set on the way up.
	err = q.Modify(&verbs.QPAttr{SQPSN: 7}, verbs.QPAttrSQPSN)
	fmt.Println("RTS, sq_psn only:", errno(err))

	// RTR→RTR is not a transition, so in RTR nothing can be changed alone.
	r, _ := newQP(dev, verbs.QPTypeUD, verbs.QPCap{MaxSendWR: 4})
	must(r.Modify(&verbs.QPAttr{QPState: verbs.QPStateInit, PortNum: 1}, verbs.QPAttrState|verbs.QPAttrPKeyIndex|verbs.QPAttrPort|verbs.QPAttrQKey))
	must(r.Modify(&verbs.QPAttr{QPState: verbs.QPStateRTR}, verbs.QPAttrState))
	fmt.Println("RTR, qkey only:", errno(r.Modify(&verbs.QPAttr{QKey: 5}, verbs.QPAttrQKey)))
	fmt.Println("RTR, empty mask:", errno(r.Modify(&verbs.QPAttr{}, 0)))
	// Output:
	// RTS, min_rnr_timer only: ok 20 RTS
	// RTS, sq_psn only: EINVAL
	// RTR, qkey only: EINVAL
	// RTR, empty mask: EINVAL
}

func Example_curState() {
	for _, p := range sim.Profiles() {
		q, _ := newQP(openDevice(p), verbs.QPTypeUD, verbs.QPCap{MaxSendWR: 4})
		must(activateUD(q, 0x11111111))

		// The QP is in RTS; the caller claims RTR and sends what RTR→RTS takes.
		stale := verbs.QPAttr{QPState: verbs.QPStateRTS, CurQPState: verbs.QPStateRTR, SQPSN: 0x500}
		err := q.Modify(&stale, verbs.QPAttrState|verbs.QPAttrCurState|verbs.QPAttrSQPSN)
		attr, _, _ := q.Query(verbs.QPAttrSQPSN)
		fmt.Printf("%-7s claim RTR: %s, sq_psn %#x\n", p.Name, errno(err), attr.SQPSN)

		// Claiming the true state is fine under both readings.
		right := verbs.QPAttr{QPState: verbs.QPStateRTS, CurQPState: verbs.QPStateRTS, QKey: 0x22}
		err = q.Modify(&right, verbs.QPAttrState|verbs.QPAttrCurState|verbs.QPAttrQKey)
		fmt.Printf("%-7s claim RTS: %s\n", p.Name, errno(err))
	}
	// Output:
	// default claim RTR: EINVAL, sq_psn 0x0
	// default claim RTS: ok
	// rxe     claim RTR: ok, sq_psn 0x500
	// rxe     claim RTS: ok
}

func Example_allOrNothing() {
	dev := openDevice(sim.DefaultProfile())
	q, _ := newQP(dev, verbs.QPTypeRC, verbs.QPCap{MaxSendWR: 4})
	init := verbs.QPAttr{QPState: verbs.QPStateInit, PortNum: 1}
	must(q.Modify(&init, verbs.QPAttrState|verbs.QPAttrPKeyIndex|verbs.QPAttrPort|verbs.QPAttrAccessFlags))
	before, _, _ := q.Query(verbs.QueryableQPAttrs)

	rtr := verbs.QPAttr{QPState: verbs.QPStateRTR, AHAttr: verbs.AHAttr{DLID: 1, PortNum: 1},
		PathMTU: verbs.MTU1024, DestQPNum: 0x99, MaxDestRDAtomic: 1,
		MinRNRTimer: 32} // one bad value: the timer has 5 bits (QP-22)
	err := q.Modify(&rtr, verbs.QPAttrState|verbs.QPAttrAV|verbs.QPAttrPathMTU|verbs.QPAttrDestQPN|
		verbs.QPAttrRQPSN|verbs.QPAttrMaxDestRDAtomic|verbs.QPAttrMinRNRTimer)
	after, _, _ := q.Query(verbs.QueryableQPAttrs)
	fmt.Println(errno(err), "unchanged:", before == after) // QP-13
	fmt.Println("state", after.QPState, "dest_qp_num", after.DestQPNum)
	// Output:
	// EINVAL unchanged: true
	// state INIT dest_qp_num 0
}

func Example_valueChecks() {
	dev := openDevice(sim.DefaultProfile())
	q, _ := newQP(dev, verbs.QPTypeRC, verbs.QPCap{MaxSendWR: 4})
	init := verbs.QPAttr{QPState: verbs.QPStateInit, PortNum: 2} // the device has one port
	err := q.Modify(&init, verbs.QPAttrState|verbs.QPAttrPKeyIndex|verbs.QPAttrPort|verbs.QPAttrAccessFlags)
	fmt.Println("port 2:", errno(err))
	must(connectRC(q, 0x99, 1))

	err = q.Modify(&verbs.QPAttr{Timeout: 32}, verbs.QPAttrTimeout) // RTS→RTS does not take it
	fmt.Println("timeout in RTS:", errno(err))
	err = q.Modify(&verbs.QPAttr{QPState: verbs.QPStateSQD}, verbs.QPAttrState)
	must(err)
	err = q.Modify(&verbs.QPAttr{Timeout: 32}, verbs.QPAttrTimeout) // SQD→SQD does, up to 31
	fmt.Println("timeout 32 in SQD:", errno(err))
	err = q.Modify(&verbs.QPAttr{RetryCnt: 8}, verbs.QPAttrRetryCnt)
	fmt.Println("retry_cnt 8:", errno(err))

	// PSNs have 24 bits: wider values are cut, not refused.
	p, _ := newQP(dev, verbs.QPTypeUD, verbs.QPCap{MaxSendWR: 4})
	must(p.Modify(&verbs.QPAttr{QPState: verbs.QPStateInit, PortNum: 1}, verbs.QPAttrState|verbs.QPAttrPKeyIndex|verbs.QPAttrPort|verbs.QPAttrQKey))
	must(p.Modify(&verbs.QPAttr{QPState: verbs.QPStateRTR}, verbs.QPAttrState))
	must(p.Modify(&verbs.QPAttr{QPState: verbs.QPStateRTS, SQPSN: 0x1000001}, verbs.QPAttrState|verbs.QPAttrSQPSN))
	attr, _, _ := p.Query(verbs.QPAttrSQPSN)
	fmt.Printf("sq_psn %#x\n", attr.SQPSN)
	// Output:
	// port 2: EINVAL
	// timeout in RTS: EINVAL
	// timeout 32 in SQD: EINVAL
	// retry_cnt 8: EINVAL
	// sq_psn 0x1
}

func Example_postStates() {
	dev := openDevice(sim.DefaultProfile())
	q, _ := newQP(dev, verbs.QPTypeUD, verbs.QPCap{MaxSendWR: 8, MaxRecvWR: 8})
	pd := q.PD() // the AH must be in the QP's PD (PD-04)
	ah, err := pd.CreateAH(verbs.AHAttr{DLID: 1, PortNum: 1})
	must(err)
	send := []verbs.SendWR{{WRID: 1, Opcode: verbs.WRSend, AH: ah, RemoteQPN: 0x99, RemoteQKey: 0x11111111}}
	recv := []verbs.RecvWR{{WRID: 2}}

	steps := []struct {
		attr verbs.QPAttr
		mask verbs.QPAttrMask
	}{
		{verbs.QPAttr{QPState: verbs.QPStateReset}, verbs.QPAttrState},
		{verbs.QPAttr{QPState: verbs.QPStateInit, PortNum: 1}, verbs.QPAttrState | verbs.QPAttrPKeyIndex | verbs.QPAttrPort | verbs.QPAttrQKey},
		{verbs.QPAttr{QPState: verbs.QPStateRTR}, verbs.QPAttrState},
		{verbs.QPAttr{QPState: verbs.QPStateRTS}, verbs.QPAttrState | verbs.QPAttrSQPSN},
		{verbs.QPAttr{QPState: verbs.QPStateSQD}, verbs.QPAttrState},
		{verbs.QPAttr{QPState: verbs.QPStateErr}, verbs.QPAttrState},
	}
	for _, s := range steps {
		must(q.Modify(&s.attr, s.mask))
		_, errS := q.PostSend(send) // QP-26
		_, errR := q.PostRecv(recv) // QP-25
		fmt.Printf("%-5v post_send %-6s post_recv %s\n", q.State(), errno(errS), errno(errR))
	}
	// Output:
	// RESET post_send EINVAL post_recv EINVAL
	// INIT  post_send EINVAL post_recv ok
	// RTR   post_send EINVAL post_recv ok
	// RTS   post_send ok     post_recv ok
	// SQD   post_send ok     post_recv ok
	// ERR   post_send ok     post_recv ok
}

func Example_postList() {
	dev := openDevice(sim.DefaultProfile())
	q, cq := newQP(dev, verbs.QPTypeUC, verbs.QPCap{MaxSendWR: 8, MaxSendSGE: 1})
	must(q.Modify(&verbs.QPAttr{QPState: verbs.QPStateInit, PortNum: 1}, verbs.QPAttrState|verbs.QPAttrPKeyIndex|verbs.QPAttrPort|verbs.QPAttrAccessFlags))
	must(q.Modify(&verbs.QPAttr{QPState: verbs.QPStateRTR, AHAttr: verbs.AHAttr{DLID: 1, PortNum: 1}, PathMTU: verbs.MTU1024, DestQPNum: 0x99},
		verbs.QPAttrState|verbs.QPAttrAV|verbs.QPAttrPathMTU|verbs.QPAttrDestQPN|verbs.QPAttrRQPSN))
	must(q.Modify(&verbs.QPAttr{QPState: verbs.QPStateRTS}, verbs.QPAttrState|verbs.QPAttrSQPSN))

	wrs := []verbs.SendWR{
		{WRID: 1, Opcode: verbs.WRSend, Flags: verbs.SendSignaled},
		{WRID: 2, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled, RemoteAddr: 0x1000, RKey: 0x55},
		{WRID: 3, Opcode: verbs.WRRDMARead, Flags: verbs.SendSignaled, RemoteAddr: 0x1000, RKey: 0x55}, // not on UC (QP-33)
		{WRID: 4, Opcode: verbs.WRSend, Flags: verbs.SendSignaled},
	}
	n, err := q.PostSend(wrs) // QP-27: n is the index of the bad WR
	fmt.Println("posted:", n, "bad wr_id:", wrs[n].WRID)
	fmt.Println(err)
	wcs := make([]verbs.WC, 4)
	k, _ := cq.Poll(wcs) // UC sends complete once sent (XFER-26)
	for _, c := range wcs[:k] {
		fmt.Println("wr_id", c.WRID, c.Status)
	}
	// Output:
	// posted: 2 bad wr_id: 3
	// ibv_post_send: EINVAL (invalid argument): opcode IBV_WR_RDMA_READ is not allowed on a UC QP (QP-33)
	// wr_id 1 IBV_WC_SUCCESS
	// wr_id 2 IBV_WC_SUCCESS
}

func Example_inline() {
	dev := openDevice(sim.DefaultProfile())
	pd, err := dev.AllocPD()
	must(err)
	cq, err := dev.CreateCQ(8, nil, nil, 0)
	must(err)
	q, err := pd.CreateQP(sim.QPInitAttr{SendCQ: cq, RecvCQ: cq, Type: verbs.QPTypeRC,
		Cap: verbs.QPCap{MaxSendWR: 4, MaxSendSGE: 1, MaxInlineData: 64}})
	must(err)
	must(connectRC(q, 0x99, 1))
	buf := []byte("hello, inline world")
	mr, err := pd.RegMR(buf, 0)
	must(err)

	sge := []verbs.SGE{{Addr: mr.Addr(), Length: 5, LKey: 0}} // the lkey is not checked (QP-35)
	_, err = q.PostSend([]verbs.SendWR{{WRID: 1, Opcode: verbs.WRSend, Flags: verbs.SendInline, SGList: sge}})
	fmt.Println("inline send:", errno(err))
	copy(buf, "HELLO") // fine: the payload was copied during PostSend

	sge[0].Length = 65
	_, err = q.PostSend([]verbs.SendWR{{WRID: 2, Opcode: verbs.WRSend, Flags: verbs.SendInline, SGList: sge}})
	fmt.Println("65 bytes inline:", errno(err))
	sge[0] = verbs.SGE{Addr: 0x7f000000, Length: 4}
	_, err = q.PostSend([]verbs.SendWR{{WRID: 3, Opcode: verbs.WRSend, Flags: verbs.SendInline, SGList: sge}})
	fmt.Println("unregistered:", errno(err))
	// Output:
	// inline send: ok
	// 65 bytes inline: EINVAL
	// unregistered: EFAULT
}

func Example_slotReclaim() {
	dev := openDevice(sim.DefaultProfile())
	q, cq := newQP(dev, verbs.QPTypeRC, verbs.QPCap{MaxSendWR: 2, MaxRecvWR: 2})
	must(connectRC(q, 0x99, 1))
	send := func(id uint64) string {
		_, err := q.PostSend([]verbs.SendWR{{WRID: id, Opcode: verbs.WRSend}}) // unsignaled
		return errno(err)
	}
	fmt.Println("post 1, 2, 3:", send(1), send(2), send(3)) // QP-29

	must(q.Modify(&verbs.QPAttr{QPState: verbs.QPStateErr}, verbs.QPAttrState))
	fmt.Println("flushed, in the CQ:", cq.Len())
	fmt.Println("post 4:", send(4)) // the slots are not free until polled

	buf := make([]verbs.WC, 1)
	n, _ := cq.Poll(buf) // polling wr_id 1 frees its slot
	fmt.Println("polled", n, "wr_id", buf[0].WRID, "then post 5:", send(5), "post 6:", send(6))
	// Output:
	// post 1, 2, 3: ok ok ENOMEM
	// flushed, in the CQ: 2
	// post 4: ENOMEM
	// polled 1 wr_id 1 then post 5: ok post 6: ENOMEM
}

func Example_slotReclaimOnRetire() {
	dev := openDevice(sim.RXEProfile())
	q, cq := newQP(dev, verbs.QPTypeRC, verbs.QPCap{MaxSendWR: 2, MaxRecvWR: 2})
	must(connectRC(q, 0x99, 1))
	send := func(id uint64) string {
		_, err := q.PostSend([]verbs.SendWR{{WRID: id, Opcode: verbs.WRSend}}) // unsignaled
		return errno(err)
	}
	fmt.Println("post 1, 2, 3:", send(1), send(2), send(3)) // still waiting for an ACK

	must(q.Modify(&verbs.QPAttr{QPState: verbs.QPStateErr}, verbs.QPAttrState))
	fmt.Println("flushed, in the CQ:", cq.Len())
	fmt.Println("post 4, 5, 6:", send(4), send(5), send(6)) // each flushed at once, each slot free again
	fmt.Println("in the CQ:", cq.Len())
	// Output:
	// post 1, 2, 3: ok ok ENOMEM
	// flushed, in the CQ: 2
	// post 4, 5, 6: ok ok ok
	// in the CQ: 5
}

func Example_flush() {
	dev := openDevice(sim.DefaultProfile())
	pd, err := dev.AllocPD()
	must(err)
	sendCQ, err := dev.CreateCQ(8, nil, nil, 0)
	must(err)
	recvCQ, err := dev.CreateCQ(8, nil, nil, 0)
	must(err)
	q, err := pd.CreateQP(sim.QPInitAttr{SendCQ: sendCQ, RecvCQ: recvCQ, Type: verbs.QPTypeRC,
		Cap: verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4}})
	must(err)
	must(connectRC(q, 0x99, 1))

	q.PostRecv([]verbs.RecvWR{{WRID: 10}, {WRID: 11}})
	q.PostSend([]verbs.SendWR{
		{WRID: 1, Opcode: verbs.WRSend}, // unsignaled: flushed all the same (FLUSH-04)
		{WRID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled},
	})
	must(q.Modify(&verbs.QPAttr{QPState: verbs.QPStateErr}, verbs.QPAttrState)) // FLUSH-01

	buf := make([]verbs.WC, 8)
	n, _ := sendCQ.Poll(buf)
	for _, w := range buf[:n] { // in posting order (FLUSH-02)
		fmt.Printf("send CQ: wr_id %d %v qp_num %#x\n", w.WRID, w.Status.Name(), w.QPNum)
	}
	n, _ = recvCQ.Poll(buf)
	for _, w := range buf[:n] {
		fmt.Printf("recv CQ: wr_id %d %v qp_num %#x\n", w.WRID, w.Status.Name(), w.QPNum)
	}
	fmt.Println("opcode of a receive flush:", buf[0].Opcode.Name()) // meaningless (FLUSH-06)
	_, err = dev.TryGetAsyncEvent()
	fmt.Println("async event:", errno(err)) // none (FLUSH-14)

	q.PostSend([]verbs.SendWR{{WRID: 3, Opcode: verbs.WRSend}}) // accepted in ERR ...
	q.PostRecv([]verbs.RecvWR{{WRID: 12}})
	n, _ = sendCQ.Poll(buf)
	m, _ := recvCQ.Poll(buf[n:])
	fmt.Println("posted in ERR:", n+m, "flushed at once") // FLUSH-05
	// Output:
	// send CQ: wr_id 1 IBV_WC_WR_FLUSH_ERR qp_num 0x11
	// send CQ: wr_id 2 IBV_WC_WR_FLUSH_ERR qp_num 0x11
	// recv CQ: wr_id 10 IBV_WC_WR_FLUSH_ERR qp_num 0x11
	// recv CQ: wr_id 11 IBV_WC_WR_FLUSH_ERR qp_num 0x11
	// opcode of a receive flush: IBV_WC_SEND
	// async event: EAGAIN
	// posted in ERR: 2 flushed at once
}

func Example_resetAndReuse() {
	dev := openDevice(sim.DefaultProfile())
	q, cq := newQP(dev, verbs.QPTypeRC, verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4})
	must(connectRC(q, 0x99, 1))
	q.PostRecv([]verbs.RecvWR{{WRID: 1}, {WRID: 2}})

	must(q.Modify(&verbs.QPAttr{QPState: verbs.QPStateReset}, verbs.QPAttrState)) // FLUSH-08
	send, recv := q.Outstanding()
	attr, _, _ := q.Query(verbs.QPAttrDestQPN)
	fmt.Println("after RESET:", send, recv, "outstanding,", cq.Len(), "completions, dest_qp_num", attr.DestQPNum)

	must(connectRC(q, 0x42, 1)) // the same QP, connected anew
	_, err := q.PostRecv([]verbs.RecvWR{{WRID: 3}})
	attr, _, _ = q.Query(verbs.QPAttrState | verbs.QPAttrDestQPN)
	fmt.Printf("reused: %v, dest_qp_num %#x, post_recv %s\n", attr.QPState, attr.DestQPNum, errno(err))
	// Output:
	// after RESET: 0 0 outstanding, 0 completions, dest_qp_num 0
	// reused: RTS, dest_qp_num 0x42, post_recv ok
}

func Example_sqd() {
	dev := openDevice(sim.DefaultProfile())
	q, _ := newQP(dev, verbs.QPTypeRC, verbs.QPCap{MaxSendWR: 4})
	must(connectRC(q, 0x99, 1))

	drain := verbs.QPAttr{QPState: verbs.QPStateSQD, EnSQDAsyncNotify: true}
	must(q.Modify(&drain, verbs.QPAttrState|verbs.QPAttrEnSQDAsyncNotify))
	ev, err := dev.TryGetAsyncEvent() // ASYNC-13: the drain is over
	must(err)
	fmt.Println(ev.Type().Name(), ev.QP() == q)
	must(ev.Ack())

	_, err = q.PostSend([]verbs.SendWR{{WRID: 1, Opcode: verbs.WRSend}}) // accepted; waits for RTS
	fmt.Println("post in SQD:", errno(err))
	must(q.Modify(&verbs.QPAttr{QPState: verbs.QPStateRTS}, verbs.QPAttrState))
	fmt.Println("back to", q.State())
	// Output:
	// IBV_EVENT_SQ_DRAINED true
	// post in SQD: ok
	// back to RTS
}

func Example_teardown() {
	dev := openDevice(sim.DefaultProfile())
	ch, err := dev.CreateCompChannel()
	must(err)
	pd, err := dev.AllocPD()
	must(err)
	cq, err := dev.CreateCQ(16, nil, ch, 0)
	must(err)
	mr, err := pd.RegMR(make([]byte, 4096), verbs.AccessLocalWrite)
	must(err)
	q, err := pd.CreateQP(sim.QPInitAttr{SendCQ: cq, RecvCQ: cq, Type: verbs.QPTypeRC,
		Cap: verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxRecvSGE: 1}})
	must(err)
	must(connectRC(q, 0x99, 1))
	q.PostRecv([]verbs.RecvWR{{WRID: 1, SGList: []verbs.SGE{{Addr: mr.Addr(), Length: 4096, LKey: mr.LKey()}}}})

	// Too early: each fails with EBUSY and changes nothing (PD-05).
	fmt.Println("PD:", errno(pd.Dealloc()), "CQ:", errno(cq.Destroy()), "channel:", errno(ch.Destroy()))

	// The order that always works.
	must(q.Modify(&verbs.QPAttr{QPState: verbs.QPStateErr}, verbs.QPAttrState)) // 1. flush what is outstanding
	buf := make([]verbs.WC, 16)
	n, _ := cq.Poll(buf) // 2. collect the flushes
	fmt.Println("flushed:", n, buf[0].WRID)
	must(q.Destroy())  // 3. the QP
	must(mr.Dereg())   // 4. MRs, AHs, SRQs
	must(pd.Dealloc()) // 5. the PD
	must(cq.Destroy()) // 6. CQs, after their QPs
	must(ch.Destroy()) // 7. channels, after their CQs
	must(dev.Close())  // 8. the device context
	fmt.Println("all gone")
	// Output:
	// PD: EBUSY CQ: EBUSY channel: EBUSY
	// flushed: 1 1
	// all gone
}

func Example_destroyOutstanding() {
	dev := openDevice(sim.DefaultProfile())
	q, cq := newQP(dev, verbs.QPTypeRC, verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4})
	must(connectRC(q, 0x99, 1))
	q.PostRecv([]verbs.RecvWR{{WRID: 1}, {WRID: 2}})
	q.PostSend([]verbs.SendWR{{WRID: 3, Opcode: verbs.WRSend, Flags: verbs.SendSignaled}})

	must(q.Destroy()) // QP-37: the three WRs vanish
	fmt.Println("completions:", cq.Len())
	_, err := q.PostRecv([]verbs.RecvWR{{WRID: 4}})
	fmt.Println("post after destroy:", errno(err))
	// Output:
	// completions: 0
	// post after destroy: EINVAL
}

// ---- srq.md ----

func Example_createSRQ() {
	dev := openDevice(sim.DefaultProfile())
	pd, err := dev.AllocPD()
	must(err)
	cq, err := dev.CreateCQ(64, nil, nil, 0)
	must(err)

	srq, err := pd.CreateSRQ(sim.SRQInitAttr{Attr: verbs.SRQAttr{MaxWR: 16, MaxSGE: 0, SRQLimit: 4}})
	must(err)
	attr, _ := srq.Query()
	fmt.Printf("%+v\n", attr) // SRQ-01: at least one SGE; the limit is ignored

	maxWR := dev.Device().Attr().MaxSRQWR
	_, err = pd.CreateSRQ(sim.SRQInitAttr{Attr: verbs.SRQAttr{MaxWR: uint32(maxWR) + 1}})
	fmt.Println("above max_srq_wr:", errno(err))

	q, err := pd.CreateQP(sim.QPInitAttr{SendCQ: cq, RecvCQ: cq, SRQ: srq, Type: verbs.QPTypeRC,
		Cap: verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 100}}) // MaxRecvWR is ignored (QP-04)
	must(err)
	fmt.Printf("qp caps %+v\n", q.Cap())
	must(connectRC(q, 0x99, 1))
	_, err = q.PostRecv([]verbs.RecvWR{{WRID: 1}}) // receives go to the SRQ (SRQ-03)
	fmt.Println("post_recv on the QP:", errno(err))
	fmt.Println("destroy the SRQ:", errno(srq.Destroy())) // SRQ-10
	// Output:
	// {MaxWR:16 MaxSGE:1 SRQLimit:0}
	// above max_srq_wr: EINVAL
	// qp caps {MaxSendWR:4 MaxRecvWR:0 MaxSendSGE:1 MaxRecvSGE:0 MaxInlineData:0}
	// post_recv on the QP: EINVAL
	// destroy the SRQ: EBUSY
}

func Example_postSRQ() {
	dev := openDevice(sim.DefaultProfile())
	pd, err := dev.AllocPD()
	must(err)
	srq, err := pd.CreateSRQ(sim.SRQInitAttr{Attr: verbs.SRQAttr{MaxWR: 4, MaxSGE: 1}})
	must(err)

	wrs := []verbs.RecvWR{{WRID: 1}, {WRID: 2, SGList: make([]verbs.SGE, 2)}, {WRID: 3}}
	n, err := srq.PostRecv(wrs) // SRQ-02: stops at the bad one
	fmt.Println("posted", n, errno(err))
	n, err = srq.PostRecv([]verbs.RecvWR{{WRID: 2}, {WRID: 3}, {WRID: 4}, {WRID: 5}})
	fmt.Println("posted", n, errno(err), "queued", srq.Len())

	err = srq.Modify(&verbs.SRQAttr{SRQLimit: 5}, verbs.SRQLimit) // above the capacity (SRQ-06)
	fmt.Println("limit 5:", errno(err))
	err = srq.Modify(&verbs.SRQAttr{MaxWR: 3}, verbs.SRQMaxWR) // below what is queued (SRQ-07)
	fmt.Println("shrink to 3:", errno(err))
	err = srq.Modify(&verbs.SRQAttr{MaxWR: 8, SRQLimit: 2}, verbs.SRQMaxWR|verbs.SRQLimit)
	attr, _ := srq.Query()
	fmt.Printf("grow and arm: %s %+v\n", errno(err), attr)
	// Output:
	// posted 1 EINVAL
	// posted 3 ENOMEM queued 4
	// limit 5: EINVAL
	// shrink to 3: EINVAL
	// grow and arm: ok {MaxWR:8 MaxSGE:1 SRQLimit:2}
}

func Example_lastWQE() {
	dev := openDevice(sim.DefaultProfile())
	pd, err := dev.AllocPD()
	must(err)
	cq, err := dev.CreateCQ(64, nil, nil, 0)
	must(err)
	srq, err := pd.CreateSRQ(sim.SRQInitAttr{Attr: verbs.SRQAttr{MaxWR: 8, MaxSGE: 1}})
	must(err)
	a, err := pd.CreateQP(sim.QPInitAttr{SendCQ: cq, RecvCQ: cq, SRQ: srq, Type: verbs.QPTypeRC, Cap: verbs.QPCap{MaxSendWR: 4}})
	must(err)
	b, err := pd.CreateQP(sim.QPInitAttr{SendCQ: cq, RecvCQ: cq, SRQ: srq, Type: verbs.QPTypeRC, Cap: verbs.QPCap{MaxSendWR: 4}})
	must(err)
	must(connectRC(a, b.Num(), 1))
	must(connectRC(b, a.Num(), 1))
	srq.PostRecv([]verbs.RecvWR{{WRID: 1}, {WRID: 2}, {WRID: 3}})

	must(a.Modify(&verbs.QPAttr{QPState: verbs.QPStateErr}, verbs.QPAttrState))
	fmt.Println("completions:", cq.Len(), "still in the SRQ:", srq.Len()) // FLUSH-07

	ev, err := dev.TryGetAsyncEvent()
	must(err)
	fmt.Println(ev.Type().Name(), ev.QP() == a) // ASYNC-14
	must(ev.Ack())

	must(a.Destroy()) // now it is safe: a takes nothing more from the SRQ
	fmt.Println("b is still attached:", errno(srq.Destroy()))
	must(b.Destroy())
	fmt.Println("after the last QP:", errno(srq.Destroy()))
	// Output:
	// completions: 0 still in the SRQ: 3
	// IBV_EVENT_QP_LAST_WQE_REACHED true
	// b is still attached: EBUSY
	// after the last QP: ok
}

func Example_srqLimitAtCreate() {
	for _, p := range sim.Profiles() {
		pd, err := openDevice(p).AllocPD()
		must(err)
		srq, err := pd.CreateSRQ(sim.SRQInitAttr{Attr: verbs.SRQAttr{MaxWR: 8, MaxSGE: 1, SRQLimit: 2}})
		must(err)
		attr, _ := srq.Query()
		fmt.Printf("%-7s srq_limit after create: %d\n", p.Name, attr.SRQLimit) // SRQ-01
	}
	// Output:
	// default srq_limit after create: 0
	// rxe     srq_limit after create: 2
}

func Example_sendAndWrite() {
	fabric, _ := sim.NewFabric(sim.Config{Devices: []sim.DeviceConfig{{Name: "a"}, {Name: "b"}}})
	type end struct {
		cq  *sim.CQ
		buf []byte
		mr  *sim.MR
		q   *sim.QP
	}
	var a, b end
	for i, e := range []*end{&a, &b} { // one RC QP on each adapter
		vctx, _ := fabric.Devices()[i].Open()
		pd, _ := vctx.AllocPD()
		e.cq, _ = vctx.CreateCQ(16, nil, nil, 0)
		e.buf = make([]byte, 4096)
		e.mr, _ = pd.RegMR(e.buf, verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
		e.q, _ = pd.CreateQP(sim.QPInitAttr{SendCQ: e.cq, RecvCQ: e.cq, Type: verbs.QPTypeRC,
			Cap: verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
	}
	// Exchange QP numbers and addresses, walk both QPs to RTS.
	fmt.Println("connect:", sim.Connect(a.q, b.q, sim.ConnectOptions{}))

	sge := func(e end, off, n int) []verbs.SGE {
		return []verbs.SGE{{Addr: e.mr.Addr() + uint64(off), Length: uint32(n), LKey: e.mr.LKey()}}
	}
	b.q.PostRecv([]verbs.RecvWR{{WRID: 1, SGList: sge(b, 0, 64)}}) // ibv_post_recv
	copy(a.buf, "hello, verbs")
	a.q.PostSend([]verbs.SendWR{ // ibv_post_send: a SEND, then an RDMA WRITE to b's offset 100
		{WRID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: sge(a, 0, 12)},
		{WRID: 3, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled, SGList: sge(a, 0, 12),
			RemoteAddr: b.mr.Addr() + 100, RKey: b.mr.RKey()},
	})

	wcs := make([]verbs.WC, 4) // the default Auto mode has run both transfers
	for _, e := range []end{a, b} {
		n, _ := e.cq.Poll(wcs) // ibv_poll_cq
		for _, w := range wcs[:n] {
			fmt.Println(w.QPNum == e.q.Num(), w.WRID, w.Status, w.Opcode, w.ByteLen)
		}
	}
	fmt.Printf("%q %q\n", b.buf[:12], b.buf[100:112])
	// Output:
	// connect: <nil>
	// true 2 IBV_WC_SUCCESS IBV_WC_SEND 12
	// true 3 IBV_WC_SUCCESS IBV_WC_RDMA_WRITE 12
	// true 1 IBV_WC_SUCCESS IBV_WC_RECV 12
	// "hello, verbs" "hello, verbs"
}

// ---- transport.md: statuses ----

func Example_forceStatus() {
	fabric, _ := sim.NewFabric(sim.Config{Devices: []sim.DeviceConfig{{Name: "a"}, {Name: "b"}}})
	var qps [2]*sim.QP
	var cqs [2]*sim.CQ
	var mrs [2]*sim.MR
	for i := range qps { // one RC QP on each adapter
		vctx, _ := fabric.Devices()[i].Open()
		pd, _ := vctx.AllocPD()
		cqs[i], _ = vctx.CreateCQ(16, nil, nil, 0)
		mrs[i], _ = pd.RegMR(make([]byte, 256), verbs.AccessLocalWrite)
		qps[i], _ = pd.CreateQP(sim.QPInitAttr{SendCQ: cqs[i], RecvCQ: cqs[i], Type: verbs.QPTypeRC,
			Cap: verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
	}
	must(sim.Connect(qps[0], qps[1], sim.ConnectOptions{}))
	a, b := qps[0], qps[1]
	for id := uint64(11); id <= 13; id++ {
		b.PostRecv([]verbs.RecvWR{{WRID: id, SGList: []verbs.SGE{{Addr: mrs[1].Addr() + 64*(id-11), Length: 64, LKey: mrs[1].LKey()}}}})
	}
	sge := []verbs.SGE{{Addr: mrs[0].Addr(), Length: 8, LKey: mrs[0].LKey()}}

	// No RC traffic ends in BAD_RESP_ERR by itself: make the adapter fail
	// the second of three SENDs with it.
	must(fabric.ForceStatus(a, 2, false, verbs.WCBadRespErr))
	a.PostSend([]verbs.SendWR{
		{WRID: 1, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: sge},
		{WRID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: sge},
		{WRID: 3, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: sge},
	})
	wcs := make([]verbs.WC, 4)
	n, _ := cqs[0].Poll(wcs)
	for _, w := range wcs[:n] {
		fmt.Println(w.WRID, w.Status.Name()) // of an error completion, read nothing else
	}
	sa, _, _ := a.Query(verbs.QPAttrState)
	sb, _, _ := b.Query(verbs.QPAttrState)
	fmt.Println("A:", sa.QPState, "B:", sb.QPState)
	// Output:
	// 1 IBV_WC_SUCCESS
	// 2 IBV_WC_BAD_RESP_ERR
	// 3 IBV_WC_WR_FLUSH_ERR
	// A: ERR B: RTS
}

// TestPingAcrossALossyLink is the README's "Testing your code": an RC pair
// made by simtest, a targeted fault, an event loop, a wait in virtual time.
func TestPingAcrossALossyLink(t *testing.T) {
	a, b := simtest.RC(t, simtest.PairOptions{Channel: true, Recvs: 1, Connect: sim.ConnectOptions{Timeout: 5}})
	a.F.InjectPacketFault(sim.PacketFault{Match: sim.FromQP(a.QP), Action: sim.FaultDrop, Count: 1}) // lose a's first packet
	got := make(chan string, 1)
	b.Arm()
	go func() { // b's event loop: wait, ack, re-arm, drain
		cq, _, err := b.Chan.GetEvent(t.Context())
		if err != nil {
			return
		}
		cq.AckEvents(1)
		cq.ReqNotify(false)
		var w [1]verbs.WC
		if n, _ := cq.Poll(w[:]); n == 1 {
			got <- string(b.Received(w[0]))
		}
	}()
	a.Send(1, []byte("ping"))
	if w := a.Await(1)[0]; w.Status != verbs.WCSuccess { // Await runs the ACK timeout: the retry happens inside it
		t.Fatalf("send: %v", w.Status)
	}
	if msg := <-got; msg != "ping" {
		t.Errorf("b received %q", msg)
	}
}

// Example_xrcSRQ opens an XRC domain, creates an XRC SRQ in it and reads
// its number, then tears down in order (docs/xrc.md).
func Example_xrcSRQ() {
	f, _ := sim.NewFabric(sim.Config{})
	ctx, _ := f.Devices()[0].Open()
	pd, _ := ctx.AllocPD()
	cq, _ := ctx.CreateCQ(16, nil, nil, 0)

	xrcd, err := ctx.OpenXRCD(verbs.XRCDInitAttr{
		CompMask: verbs.XRCDInitFD | verbs.XRCDInitOFlags,
		FD:       -1, // a domain of our own: verbsim has no files
		OFlags:   syscall.O_CREAT,
	})
	if err != nil {
		fmt.Println("open_xrcd:", err)
		return
	}
	srq, err := ctx.CreateSRQEx(sim.SRQInitAttrEx{
		Attr:     verbs.SRQAttr{MaxWR: 16, MaxSGE: 1},
		CompMask: verbs.SRQInitType | verbs.SRQInitPD | verbs.SRQInitXRCD | verbs.SRQInitCQ,
		Type:     verbs.SRQTXRC,
		PD:       pd, XRCD: xrcd, CQ: cq,
	})
	if err != nil {
		fmt.Println("create_srq_ex:", err)
		return
	}
	num, err := srq.GetSRQNum() // what a remote XRC sender names
	fmt.Println("srq_num non-zero:", num != 0, err)

	// The domain, the CQ and the PD are held by the SRQ.
	fmt.Println("close_xrcd:", errors.Is(xrcd.Close(), syscall.EBUSY))
	_ = srq.Destroy()
	fmt.Println("close_xrcd after the SRQ:", xrcd.Close())
	_ = cq.Destroy()
	_ = pd.Dealloc()

	// Under the rxe profile there is no XRC at all.
	rxe, _ := sim.NewFabric(sim.Config{Profile: sim.RXEProfile()})
	rctx, _ := rxe.Devices()[0].Open()
	_, err = rctx.OpenXRCD(verbs.XRCDInitAttr{CompMask: verbs.XRCDInitFD | verbs.XRCDInitOFlags, FD: -1})
	fmt.Println("rxe open_xrcd:", errors.Is(err, syscall.EOPNOTSUPP))
	// Output:
	// srq_num non-zero: true <nil>
	// close_xrcd: true
	// close_xrcd after the SRQ: <nil>
	// rxe open_xrcd: true
}

// Example_xrcSend connects an XRC_SEND QP on device a to an XRC_RECV QP on
// device b and sends one message to each of b's two XRC SRQs: each lands
// on its own SRQ and completes on that SRQ's CQ (docs/xrc.md, XRC-06..10).
func Example_xrcSend() {
	f, _ := sim.NewFabric(sim.Config{Devices: []sim.DeviceConfig{{Name: "a"}, {Name: "b"}}})
	actx, _ := f.Devices()[0].Open()
	bctx, _ := f.Devices()[1].Open()

	// The sender: a PD, a CQ and an XRC_SEND QP, which has no receive side.
	apd, _ := actx.AllocPD()
	acq, _ := actx.CreateCQ(16, nil, nil, 0)
	abuf := make([]byte, 64)
	amr, _ := apd.RegMR(abuf, verbs.AccessFlags(verbs.AccessLocalWrite))
	ini, err := apd.CreateQP(sim.QPInitAttr{SendCQ: acq, Type: verbs.QPTypeXRCSend,
		Cap: verbs.QPCap{MaxSendWR: 4, MaxSendSGE: 1}})
	if err != nil {
		fmt.Println("create XRC_SEND:", err)
		return
	}

	// The receiver: a domain, two XRC SRQs with a CQ each, a target QP.
	bpd, _ := bctx.AllocPD()
	bbuf := make([]byte, 128)
	bmr, _ := bpd.RegMR(bbuf, verbs.AccessFlags(verbs.AccessLocalWrite))
	xrcd, _ := bctx.OpenXRCD(verbs.XRCDInitAttr{CompMask: verbs.XRCDInitFD | verbs.XRCDInitOFlags, FD: -1})
	var cqs [2]*sim.CQ
	var nums [2]uint32
	for i := range cqs {
		cqs[i], _ = bctx.CreateCQ(16, nil, nil, 0)
		srq, _ := bctx.CreateSRQEx(sim.SRQInitAttrEx{
			Attr:     verbs.SRQAttr{MaxWR: 4, MaxSGE: 1},
			CompMask: verbs.SRQInitType | verbs.SRQInitPD | verbs.SRQInitXRCD | verbs.SRQInitCQ,
			Type:     verbs.SRQTXRC, PD: bpd, XRCD: xrcd, CQ: cqs[i],
		})
		nums[i], _ = srq.GetSRQNum()
		srq.PostRecv([]verbs.RecvWR{{WRID: uint64(100 + i),
			SGList: []verbs.SGE{{Addr: bmr.Addr() + uint64(64*i), Length: 64, LKey: bmr.LKey()}}}})
	}
	tgt, err := xrcd.CreateQP(sim.QPInitAttr{Type: verbs.QPTypeXRCRecv, CompMask: sim.QPInitXRCD})
	if err != nil {
		fmt.Println("create XRC_RECV:", err)
		return
	}
	if err := sim.Connect(ini, tgt, sim.ConnectOptions{}); err != nil {
		fmt.Println("connect:", err)
		return
	}

	// Each send names the SRQ it is for (qp_type.xrc.remote_srqn).
	for i, text := range []string{"for SRQ 0", "for SRQ 1"} {
		copy(abuf[32*i:], text)
		ini.PostSend([]verbs.SendWR{{WRID: uint64(i + 1), Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
			RemoteSRQN: nums[i],
			SGList:     []verbs.SGE{{Addr: amr.Addr() + uint64(32*i), Length: uint32(len(text)), LKey: amr.LKey()}}}})
	}
	f.RunUntilIdle(1 << 40)

	var w [1]verbs.WC
	for i, c := range cqs {
		if n, _ := c.Poll(w[:]); n == 1 {
			fmt.Printf("SRQ %d: wr_id %d %v %q, qp_num is the target's: %v\n",
				i, w[0].WRID, w[0].Status, bbuf[64*i:64*i+int(w[0].ByteLen)], w[0].QPNum == tgt.Num())
		}
	}
	for n, _ := acq.Poll(w[:]); n == 1; n, _ = acq.Poll(w[:]) {
		fmt.Println("sender: wr_id", w[0].WRID, w[0].Status)
	}
	// Output:
	// SRQ 0: wr_id 100 IBV_WC_SUCCESS "for SRQ 0", qp_num is the target's: true
	// SRQ 1: wr_id 101 IBV_WC_SUCCESS "for SRQ 1", qp_num is the target's: true
	// sender: wr_id 1 IBV_WC_SUCCESS
	// sender: wr_id 2 IBV_WC_SUCCESS
}
