package sim_test

import (
	"context"
	"fmt"
	"time"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/wc"
)

// The event loop the man pages recommend: arm, then wait for an event, ack
// it, re-arm, and poll until the CQ is empty.
func Example() {
	fabric, _ := sim.NewFabric(sim.Config{})
	dev := fabric.Devices()[0]
	vctx, _ := dev.Open()
	defer vctx.Close()

	ch, _ := vctx.CreateCompChannel()
	defer ch.Destroy()
	cq, _ := vctx.CreateCQ(16, "rx", ch, 0)
	defer cq.Destroy()

	cq.ReqNotify(false) // arm before anything can complete

	go func() { // the "hardware": three receives complete
		for id := uint64(1); id <= 3; id++ {
			cq.Push(wc.WC{WRID: id, Status: wc.Success, Opcode: wc.Recv, ByteLen: 32}, false)
		}
	}()

	wait, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	buf := make([]wc.WC, 8)
	for seen := 0; seen < 3; {
		got, cqCtx, err := ch.GetEvent(wait) // ibv_get_cq_event
		if err != nil {
			fmt.Println(err)
			return
		}
		got.AckEvents(1)     // ibv_ack_cq_events
		got.ReqNotify(false) // re-arm BEFORE draining (NOTIFY-14)
		for {
			n, _ := got.Poll(buf) // ibv_poll_cq
			if n == 0 {
				break // an event may find the CQ empty (NOTIFY-13)
			}
			seen += n
		}
		_ = cqCtx
	}
	fmt.Println("received 3 completions on", cq.Context())
	// Output: received 3 completions on rx
}

// Creating a CQ through a context enforces the device limits.
func ExampleContext_CreateCQ() {
	fabric, _ := sim.NewFabric(sim.Config{})
	vctx, _ := fabric.Devices()[0].Open()
	attr, _ := vctx.QueryDevice()

	cq, err := vctx.CreateCQ(100, nil, nil, 0)
	fmt.Println(cq.CQE(), err)
	_, err = vctx.CreateCQ(attr.MaxCQE+1, nil, nil, 0)
	fmt.Println(err)
	_, err = vctx.CreateCQ(1, nil, nil, vctx.NumCompVectors())
	fmt.Println(err)
	// Output:
	// 127 <nil>
	// ibv_create_cq: EINVAL (invalid argument): cqe 4194304 is outside [1, max_cqe=4194303] (CQ-01)
	// ibv_create_cq: EINVAL (invalid argument): comp_vector 4 is outside [0, num_comp_vectors=4) (CQ-03)
}
