package sim_test

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
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
			cq.Push(verbs.WC{WRID: id, Status: verbs.WCSuccess, Opcode: verbs.WCRecv, ByteLen: 32}, false)
		}
	}()

	wait, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	buf := make([]verbs.WC, 8)
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
	fmt.Println("received 3 completions on", cq.CQContext())
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

// ExampleContext_QueryGIDEx reads entry 0 of port 1's GID table with its
// type, an empty entry, and the whole table (ibv_query_gid_ex,
// ibv_query_gid_table; QUERY-05, QUERY-06).
func ExampleContext_QueryGIDEx() {
	fabric, _ := sim.NewFabric(sim.Config{})
	vctx, _ := fabric.Devices()[0].Open()
	g, err := vctx.QueryGIDEx(1, 0, 0)
	fmt.Println(g.GID, g.GIDType, g.PortNum, err)
	_, err = vctx.QueryGIDEx(1, 5, 0)
	fmt.Println(errors.Is(err, syscall.ENODATA))
	tbl, err := vctx.QueryGIDTable(8, 0)
	fmt.Println(len(tbl), err)
	// Output:
	// fe80::2:c903:0:100 IB 1 <nil>
	// true
	// 1 <nil>
}

// ExampleQP_Query shows that the mask of ibv_query_qp is a hint: every
// attribute comes back, and only bits from IBV_QP_RATE_LIMIT up are
// refused (QUERY-01, QUERY-02).
func ExampleQP_Query() {
	fabric, _ := sim.NewFabric(sim.Config{})
	vctx, _ := fabric.Devices()[0].Open()
	pd, _ := vctx.AllocPD()
	cq, _ := vctx.CreateCQ(4, nil, nil, 0)
	q, _ := pd.CreateQP(sim.QPInitAttr{SendCQ: cq, RecvCQ: cq, Type: verbs.QPTypeRC, SQSigAll: true,
		Cap: verbs.QPCap{MaxSendWR: 2, MaxRecvWR: 2, MaxSendSGE: 1, MaxRecvSGE: 1}})
	a, init, err := q.Query(verbs.QPAttrState)
	fmt.Println(a.QPState, a.Cap.MaxSendWR >= 2, init.SQSigAll, err)
	_, _, err = q.Query(verbs.QPAttrState | verbs.QPAttrRateLimit)
	fmt.Println(errors.Is(err, syscall.EOPNOTSUPP))
	// Output:
	// RESET true true <nil>
	// true
}

// ExampleCQ_Context: a CQ carries two contexts. CQContext is the cq_context
// given at creation, what an event loop gets back from GetEvent; Context is
// the device context that created it (ibv_cq.context). QPs and SRQs have
// the same pair (QPContext, SRQContext).
func ExampleCQ_Context() {
	fabric, _ := sim.NewFabric(sim.Config{})
	vctx, _ := fabric.Devices()[0].Open()
	cq, _ := vctx.CreateCQ(4, "orders", nil, 0)
	fmt.Println(cq.CQContext())
	fmt.Println(cq.Context(), cq.Context() == vctx)
	// Output:
	// orders
	// ibv_context vsim0/ctx#1 true
}
