package qp_test

import (
	"errors"
	"fmt"
	"github.com/verbsim/verbsim/sim/internal/notify"
	"syscall"

	"github.com/verbsim/verbsim/sim/internal/qp"
)

// An RC QP is taken from RESET to RTS in three modifies, each carrying the
// attributes the table requires. The caller keeps the QP's attributes and
// applies each accepted change.
func ExampleCheckModify() {
	lim := qp.Limits{
		Ports:           []qp.PortLimits{{MaxMTU: qp.MTU4096, PKeyTableLen: 128, GIDTableLen: 16}},
		MaxQPRDAtom:     16,
		MaxQPInitRDAtom: 16,
	}
	var stored qp.Attr // what ibv_query_qp would report
	state := qp.Reset
	modify := func(attr qp.Attr, mask qp.AttrMask) {
		cur := qp.Current{State: state, Port: stored.PortNum}
		next, err := qp.CheckModify(cur, qp.RC, &attr, mask, lim, qp.Policy{})
		if err != nil {
			fmt.Println(err)
			return
		}
		stored.Apply(&attr, mask)
		fmt.Printf("%v -> %v with %v\n", state, next, mask)
		state = next
	}

	modify(qp.Attr{QPState: qp.Init, PKeyIndex: 0, PortNum: 1,
		QPAccessFlags: qp.AccessRemoteWrite | qp.AccessRemoteRead},
		qp.AttrState|qp.AttrPKeyIndex|qp.AttrPort|qp.AttrAccessFlags)

	modify(qp.Attr{QPState: qp.RTR, PathMTU: qp.MTU1024, DestQPNum: 0x1234, RQPSN: 0,
		MaxDestRDAtomic: 1, MinRNRTimer: 12, AHAttr: qp.AHAttr{DLID: 2, PortNum: 1}},
		qp.AttrState|qp.AttrAV|qp.AttrPathMTU|qp.AttrDestQPN|qp.AttrRQPSN|
			qp.AttrMaxDestRDAtomic|qp.AttrMinRNRTimer)

	modify(qp.Attr{QPState: qp.RTS, SQPSN: 0, Timeout: 14, RetryCnt: 7, RNRRetry: 7, MaxRDAtomic: 1},
		qp.AttrState|qp.AttrSQPSN|qp.AttrTimeout|qp.AttrRetryCnt|qp.AttrRNRRetry|qp.AttrMaxQPRDAtomic)

	fmt.Println("dest_qp_num", stored.DestQPNum, "path_mtu", stored.PathMTU, "timeout", stored.Timeout)
	// Output:
	// RESET -> INIT with STATE|ACCESS_FLAGS|PKEY_INDEX|PORT
	// INIT -> RTR with STATE|AV|PATH_MTU|RQ_PSN|MIN_RNR_TIMER|MAX_DEST_RD_ATOMIC|DEST_QPN
	// RTR -> RTS with STATE|TIMEOUT|RETRY_CNT|RNR_RETRY|MAX_QP_RD_ATOMIC|SQ_PSN
	// dest_qp_num 4660 path_mtu 1024 timeout 14
}

// A refused modify is an EINVAL whose reason names the rule: here a skipped
// state, and a required attribute left out.
func ExampleCheckModify_refused() {
	lim := qp.Limits{Ports: []qp.PortLimits{{MaxMTU: qp.MTU4096, PKeyTableLen: 1}}}
	attr := qp.Attr{QPState: qp.RTS}
	_, err := qp.CheckModify(qp.Current{State: qp.Init, Port: 1}, qp.UD, &attr, qp.AttrState|qp.AttrSQPSN, lim, qp.Policy{})
	fmt.Println(errors.Is(err, syscall.EINVAL), err)

	_, err = qp.CheckModify(qp.Current{State: qp.RTR, Port: 1}, qp.UD, &attr, qp.AttrState, lim, qp.Policy{})
	fmt.Println(err)
	// Output:
	// true ibv_modify_qp: EINVAL (invalid argument): QP-07: INIT→RTS is not a legal transition
	// ibv_modify_qp: EINVAL (invalid argument): QP-10: RTR→RTS on UD requires SQ_PSN; missing SQ_PSN
}

// Transition answers what a transport must and may send on one edge.
func ExampleTransition() {
	req, opt, ok := qp.Transition(qp.RTR, qp.RTS, qp.UC, qp.Policy{})
	fmt.Println(ok, req, "/", opt)
	_, _, ok = qp.Transition(qp.Reset, qp.Err, qp.RC, qp.Policy{})
	fmt.Println("RESET→ERR by default:", ok)
	_, _, ok = qp.Transition(qp.Reset, qp.Err, qp.RC, qp.Policy{ResetToErr: true})
	fmt.Println("RESET→ERR, IBTA reading:", ok)
	// Output:
	// true SQ_PSN / CUR_STATE|ACCESS_FLAGS|ALT_PATH|PATH_MIG_STATE
	// RESET→ERR by default: false
	// RESET→ERR, IBTA reading: true
}

// An SRQ's limit event fires once when fewer than srq_limit receives remain,
// and disarms the limit (SRQ-04, SRQ-05); re-arming below the limit waits
// for the next take (SRQ-11). The engine is driven directly here, with the
// lock that sim.Fabric would own.
func ExampleSRQ_limit() {
	async := notify.NewAsyncQueue(nil) // in a domain of its own; sim.Fabric would own one
	mu := async.Domain()
	mu.Lock()
	srq, err := qp.NewSRQLocked(qp.SRQConfig{
		Attr:   qp.SRQAttr{MaxWR: 8, MaxSGE: 1},
		Device: qp.SRQLimits{MaxSRQWR: 64, MaxSRQSGE: 4},
		Domain: mu, Async: async,
	})
	mu.Unlock()
	mustOK(err)
	take := func() uint64 { // one receive consumed by some QP (SRQ-08)
		mu.Lock()
		defer mu.Unlock()
		id, _, _ := srq.TakeLocked(nil)
		return id
	}

	srq.PostRecv([]qp.RecvWR{{WRID: 1}, {WRID: 2}, {WRID: 3}, {WRID: 4}})
	mustOK(srq.Modify(&qp.SRQAttr{SRQLimit: 3}, qp.SRQLimit)) // fire when fewer than 3 remain
	fmt.Println("take", take(), "left", srq.Len(), "events", async.Len())
	fmt.Println("take", take(), "left", srq.Len(), "events", async.Len()) // SRQ-04
	attr, _ := srq.Query()
	fmt.Println("srq_limit now", attr.SRQLimit) // disarmed (SRQ-05)

	fmt.Println("take", take(), "left", srq.Len(), "events", async.Len()) // one-shot

	mustOK(srq.Modify(&qp.SRQAttr{SRQLimit: 4}, qp.SRQLimit)) // already below: no event yet (SRQ-11)
	fmt.Println("re-armed at 4 with", srq.Len(), "left: events", async.Len())
	fmt.Println("take", take(), "left", srq.Len(), "events", async.Len())
	// Output:
	// take 1 left 3 events 0
	// take 2 left 2 events 1
	// srq_limit now 0
	// take 3 left 1 events 1
	// re-armed at 4 with 1 left: events 1
	// take 4 left 0 events 2
}

func mustOK(err error) {
	if err != nil {
		panic(err)
	}
}
