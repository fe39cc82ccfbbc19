package qp_test

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/verbsim/verbsim/sim/qp"
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
