package verbs_test

import (
	"fmt"

	"github.com/verbsim/verbsim/verbs"
)

// Example builds the two things an RC application hands to the verbs
// most often: the attributes of the INIT→RTR transition and a signaled
// SEND.
func Example() {
	attr := verbs.QPAttr{
		QPState:         verbs.QPStateRTR,
		PathMTU:         verbs.MTU1024,
		DestQPNum:       0x12,
		RQPSN:           0,
		MaxDestRDAtomic: 1,
		MinRNRTimer:     12,
		AHAttr:          verbs.AHAttr{DLID: 2, PortNum: 1},
	}
	mask := verbs.QPAttrState | verbs.QPAttrAV | verbs.QPAttrPathMTU | verbs.QPAttrDestQPN |
		verbs.QPAttrRQPSN | verbs.QPAttrMaxDestRDAtomic | verbs.QPAttrMinRNRTimer
	fmt.Println(attr.QPState.Name(), attr.PathMTU.Bytes())
	fmt.Println(mask)

	wr := verbs.SendWR{
		WRID:   7,
		Opcode: verbs.WRSend,
		Flags:  verbs.SendSignaled,
		SGList: []verbs.SGE{{Addr: 0x1000, Length: 64, LKey: 0x100}},
	}
	op, _ := wr.Opcode.SendCompletion()
	fmt.Println(wr.Opcode, wr.Flags, verbs.SGEListLength(wr.SGList), op)
	// Output:
	// IBV_QPS_RTR 1024
	// STATE|AV|PATH_MTU|RQ_PSN|MIN_RNR_TIMER|MAX_DEST_RD_ATOMIC|DEST_QPN
	// IBV_WR_SEND SIGNALED 64 IBV_WC_SEND
}
