package cq_test

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/verbsim/verbsim/sim/internal/cq"
	"github.com/verbsim/verbsim/verbs"
)

// Polling returns completions oldest first, as many as the slice holds.
func ExampleCQ_Poll() {
	c, _ := cq.New(cq.Config{CQE: 4})
	for id := uint64(1); id <= 3; id++ {
		c.Push(verbs.WC{WRID: id, Status: verbs.WCSuccess, Opcode: verbs.WCRecv, ByteLen: 64}, false)
	}
	buf := make([]verbs.WC, 2)
	for {
		n, err := c.Poll(buf)
		if err != nil || n == 0 {
			break
		}
		for _, w := range buf[:n] {
			fmt.Println(w.WRID, w.Status, w.Opcode)
		}
	}
	// Output:
	// 1 IBV_WC_SUCCESS IBV_WC_RECV
	// 2 IBV_WC_SUCCESS IBV_WC_RECV
	// 3 IBV_WC_SUCCESS IBV_WC_RECV
}

// An armed CQ raises one event on its channel for the first completion added
// after the arm; the event must be acknowledged before the CQ is destroyed.
func ExampleCQ_ReqNotify() {
	ch := cq.NewChannel(nil)
	c, _ := cq.New(cq.Config{CQE: 4, Channel: ch, Context: "my-cq"})

	c.ReqNotify(false) // ibv_req_notify_cq(cq, 0)
	c.Push(verbs.WC{WRID: 1, Status: verbs.WCSuccess, Opcode: verbs.WCSend}, false)
	c.Push(verbs.WC{WRID: 2, Status: verbs.WCSuccess, Opcode: verbs.WCSend}, false)

	got, ctx, _ := ch.TryGetEvent()
	fmt.Println("event for", ctx, got == c)
	_, _, err := ch.TryGetEvent()
	fmt.Println("second event:", errors.Is(err, syscall.EAGAIN))
	fmt.Println("completions waiting:", c.Len())

	fmt.Println(c.AckEvents(1), c.Destroy(), ch.Destroy())
	// Output:
	// event for my-cq true
	// second event: true
	// completions waiting: 2
	// <nil> <nil> <nil>
}

// Resize never drops unpolled completions.
func ExampleCQ_Resize() {
	c, _ := cq.New(cq.Config{CQE: 8, Rounding: cq.RoundExact})
	for id := uint64(1); id <= 3; id++ {
		c.Push(verbs.WC{WRID: id}, false)
	}
	fmt.Println(c.Resize(2))
	fmt.Println(c.Resize(3), c.CQE())
	// Output:
	// ibv_resize_cq: EINVAL (invalid argument): 3 completions are unpolled; a CQ of 2 cannot hold them (CQ-08)
	// <nil> 3
}

// A full CQ overruns: the completion is lost, IBV_EVENT_CQ_ERR is raised, and
// under the default policy the CQ stays in its error state.
func ExampleCQ_Push_overrun() {
	c, _ := cq.New(cq.Config{CQE: 1})
	c.Push(verbs.WC{WRID: 1}, false)
	over, _ := c.Push(verbs.WC{WRID: 2}, false)
	fmt.Println("overrun:", over)
	buf := make([]verbs.WC, 4)
	n, err := c.Poll(buf)
	fmt.Println(n, buf[0].WRID, errors.Is(err, syscall.EIO))
	// Output:
	// overrun: true
	// 1 1 true
}

// An extended CQ is read with the poll iterator: StartPoll, NextPoll until
// ENOENT, then EndPoll, which consumes the batch. Fields outside wc_flags
// are refused.
func ExampleCQ_StartPoll() {
	var now uint64 // the virtual clock, in ns
	c, _ := cq.New(cq.Config{
		CQE:      8,
		WCFlags:  verbs.WCExByteLen | verbs.WCExCompletionTimestamp,
		Clock:    func() uint64 { return now },
		ClockKHz: 1e6, // 1 GHz: a timestamp is the tick
	})
	for id := uint64(1); id <= 3; id++ {
		now += 100
		c.Push(verbs.WC{WRID: id, Status: verbs.WCSuccess, Opcode: verbs.WCRecv, ByteLen: uint32(10 * id)}, false)
	}
	err := c.StartPoll()
	for ; err == nil; err = c.NextPoll() {
		n, _ := c.ReadByteLen()
		ts, _ := c.ReadCompletionTS()
		fmt.Println(c.WRID, c.Status, n, ts)
	}
	fmt.Println("end:", errors.Is(err, syscall.ENOENT), c.Len(), "still in the CQ")
	_, err = c.ReadImmData()
	fmt.Println("imm_data not asked for:", errors.Is(err, syscall.EINVAL))
	c.EndPoll()
	fmt.Println("after end_poll:", c.Len())
	fmt.Println("empty:", errors.Is(c.StartPoll(), syscall.ENOENT))
	// Output:
	// 1 IBV_WC_SUCCESS 10 100
	// 2 IBV_WC_SUCCESS 20 200
	// 3 IBV_WC_SUCCESS 30 300
	// end: true 3 still in the CQ
	// imm_data not asked for: true
	// after end_poll: 0
	// empty: true
}
