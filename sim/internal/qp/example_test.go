package qp_test

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/verbsim/verbsim/sim/internal/notify"
	"github.com/verbsim/verbsim/verbs"

	"github.com/verbsim/verbsim/sim/internal/qp"
)

// An RC QP is taken from RESET to RTS in three modifies, each carrying the
// attributes the table requires. The caller keeps the QP's attributes and
// applies each accepted change.
func ExampleCheckModify() {
	lim := qp.Limits{
		Ports:           []qp.PortLimits{{MaxMTU: verbs.MTU4096, PKeyTableLen: 128, GIDTableLen: 16}},
		MaxQPRDAtom:     16,
		MaxQPInitRDAtom: 16,
	}
	var stored verbs.QPAttr // what ibv_query_qp would report
	state := verbs.QPStateReset
	modify := func(attr verbs.QPAttr, mask verbs.QPAttrMask) {
		cur := qp.Current{State: state, Port: stored.PortNum}
		next, err := qp.CheckModify(cur, verbs.QPTypeRC, &attr, mask, lim, qp.Policy{})
		if err != nil {
			fmt.Println(err)
			return
		}
		stored.Apply(&attr, mask)
		fmt.Printf("%v -> %v with %v\n", state, next, mask)
		state = next
	}

	modify(verbs.QPAttr{QPState: verbs.QPStateInit, PKeyIndex: 0, PortNum: 1,
		QPAccessFlags: verbs.AccessRemoteWrite | verbs.AccessRemoteRead},
		verbs.QPAttrState|verbs.QPAttrPKeyIndex|verbs.QPAttrPort|verbs.QPAttrAccessFlags)

	modify(verbs.QPAttr{QPState: verbs.QPStateRTR, PathMTU: verbs.MTU1024, DestQPNum: 0x1234, RQPSN: 0,
		MaxDestRDAtomic: 1, MinRNRTimer: 12, AHAttr: verbs.AHAttr{DLID: 2, PortNum: 1}},
		verbs.QPAttrState|verbs.QPAttrAV|verbs.QPAttrPathMTU|verbs.QPAttrDestQPN|verbs.QPAttrRQPSN|
			verbs.QPAttrMaxDestRDAtomic|verbs.QPAttrMinRNRTimer)

	modify(verbs.QPAttr{QPState: verbs.QPStateRTS, SQPSN: 0, Timeout: 14, RetryCnt: 7, RNRRetry: 7, MaxRDAtomic: 1},
		verbs.QPAttrState|verbs.QPAttrSQPSN|verbs.QPAttrTimeout|verbs.QPAttrRetryCnt|verbs.QPAttrRNRRetry|verbs.QPAttrMaxQPRDAtomic)

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
	lim := qp.Limits{Ports: []qp.PortLimits{{MaxMTU: verbs.MTU4096, PKeyTableLen: 1}}}
	attr := verbs.QPAttr{QPState: verbs.QPStateRTS}
	_, err := qp.CheckModify(qp.Current{State: verbs.QPStateInit, Port: 1}, verbs.QPTypeUD, &attr, verbs.QPAttrState|verbs.QPAttrSQPSN, lim, qp.Policy{})
	fmt.Println(errors.Is(err, syscall.EINVAL), err)

	_, err = qp.CheckModify(qp.Current{State: verbs.QPStateRTR, Port: 1}, verbs.QPTypeUD, &attr, verbs.QPAttrState, lim, qp.Policy{})
	fmt.Println(err)
	// Output:
	// true ibv_modify_qp: EINVAL (invalid argument): QP-07: INIT→RTS is not a legal transition
	// ibv_modify_qp: EINVAL (invalid argument): QP-10: RTR→RTS on UD requires SQ_PSN; missing SQ_PSN
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
		Attr:   verbs.SRQAttr{MaxWR: 8, MaxSGE: 1},
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

	srq.PostRecv([]verbs.RecvWR{{WRID: 1}, {WRID: 2}, {WRID: 3}, {WRID: 4}})
	mustOK(srq.Modify(&verbs.SRQAttr{SRQLimit: 3}, verbs.SRQLimit)) // fire when fewer than 3 remain
	fmt.Println("take", take(), "left", srq.Len(), "events", async.Len())
	fmt.Println("take", take(), "left", srq.Len(), "events", async.Len()) // SRQ-04
	attr, _ := srq.Query()
	fmt.Println("srq_limit now", attr.SRQLimit) // disarmed (SRQ-05)

	fmt.Println("take", take(), "left", srq.Len(), "events", async.Len()) // one-shot

	mustOK(srq.Modify(&verbs.SRQAttr{SRQLimit: 4}, verbs.SRQLimit)) // already below: no event yet (SRQ-11)
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
