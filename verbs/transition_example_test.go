package verbs_test

import (
	"fmt"

	"github.com/verbsim/verbsim/verbs"
)

// Transition answers what a transport must and may set on one edge of
// the QP state machine.
func ExampleTransition() {
	req, opt, ok := verbs.Transition(verbs.QPStateRTR, verbs.QPStateRTS, verbs.QPTypeUC, verbs.Readings{})
	fmt.Println(ok, req, "/", opt)
	_, _, ok = verbs.Transition(verbs.QPStateReset, verbs.QPStateErr, verbs.QPTypeRC, verbs.Readings{})
	fmt.Println("RESET→ERR by default:", ok)
	_, _, ok = verbs.Transition(verbs.QPStateReset, verbs.QPStateErr, verbs.QPTypeRC, verbs.Readings{ResetToErr: true})
	fmt.Println("RESET→ERR, IBTA reading:", ok)
	// Output:
	// true SQ_PSN / CUR_STATE|ACCESS_FLAGS|ALT_PATH|PATH_MIG_STATE
	// RESET→ERR by default: false
	// RESET→ERR, IBTA reading: true
}

// MinimalMask is the mask each step of the usual RESET→INIT→RTR→RTS walk
// needs, and nothing more.
func ExampleMinimalMask() {
	steps := []verbs.QPState{verbs.QPStateReset, verbs.QPStateInit, verbs.QPStateRTR, verbs.QPStateRTS}
	for i := 1; i < len(steps); i++ {
		mask, _ := verbs.MinimalMask(steps[i-1], steps[i], verbs.QPTypeRC)
		fmt.Printf("%v→%v: %v\n", steps[i-1], steps[i], mask)
	}
	// Output:
	// RESET→INIT: STATE|ACCESS_FLAGS|PKEY_INDEX|PORT
	// INIT→RTR: STATE|AV|PATH_MTU|RQ_PSN|MIN_RNR_TIMER|MAX_DEST_RD_ATOMIC|DEST_QPN
	// RTR→RTS: STATE|TIMEOUT|RETRY_CNT|RNR_RETRY|MAX_QP_RD_ATOMIC|SQ_PSN
}
