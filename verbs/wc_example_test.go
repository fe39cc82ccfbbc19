package verbs_test

import (
	"fmt"

	"github.com/verbsim/verbsim/verbs"
)

func ExampleWCStatus_String() {
	// A status prints as its C enumerator, as an opcode does.
	fmt.Println(verbs.WCSuccess, verbs.WCSend)
	fmt.Println(verbs.WCWRFlushErr)
	fmt.Println(verbs.WCStatus(24)) // out of range
	// Output:
	// IBV_WC_SUCCESS IBV_WC_SEND
	// IBV_WC_WR_FLUSH_ERR
	// IBV_WC_STATUS(24)
}

func ExampleWCStatus_Str() {
	// Str is ibv_wc_status_str, capitalisation and all.
	fmt.Println(verbs.WCSuccess.Str())
	fmt.Println(verbs.WCWRFlushErr.Str())
	fmt.Println(verbs.WCStatus(24).Str()) // out of range
	// Output:
	// success
	// Work Request Flushed Error
	// unknown
}

func ExampleWROpcode_SendCompletion() {
	for _, wr := range []verbs.WROpcode{verbs.WRSend, verbs.WRSendWithImm, verbs.WRRDMAWriteWithImm, verbs.WRRDMARead} {
		req, _ := wr.SendCompletion()
		resp, ok := wr.RecvCompletion()
		if !ok {
			fmt.Printf("%-27v requester %-20v responder -\n", wr, req)
			continue
		}
		fmt.Printf("%-27v requester %-20v responder %v\n", wr, req, resp)
	}
	// Output:
	// IBV_WR_SEND                 requester IBV_WC_SEND          responder IBV_WC_RECV
	// IBV_WR_SEND_WITH_IMM        requester IBV_WC_SEND          responder IBV_WC_RECV
	// IBV_WR_RDMA_WRITE_WITH_IMM  requester IBV_WC_RDMA_WRITE    responder IBV_WC_RECV_RDMA_WITH_IMM
	// IBV_WR_RDMA_READ            requester IBV_WC_RDMA_READ     responder -
}

func ExampleWCOpcode_IsRecv() {
	for _, op := range []verbs.WCOpcode{verbs.WCSend, verbs.WCRecv, verbs.WCRecvRDMAWithImm, verbs.WCDriver1} {
		fmt.Printf("%-26v IsRecv=%-5v IsClassicRecv=%v\n", op, op.IsRecv(), op.IsClassicRecv())
	}
	// Output:
	// IBV_WC_SEND                IsRecv=false IsClassicRecv=false
	// IBV_WC_RECV                IsRecv=true  IsClassicRecv=true
	// IBV_WC_RECV_RDMA_WITH_IMM  IsRecv=true  IsClassicRecv=true
	// IBV_WC_DRIVER1             IsRecv=true  IsClassicRecv=false
}

func ExampleWC_String() {
	ok := &verbs.WC{WRID: 7, Opcode: verbs.WCRecv, ByteLen: 64, QPNum: 0x11}
	// An error WC: only wr_id, status, qp_num and vendor_err mean
	// anything, so the rest is not shown even if set.
	flushed := &verbs.WC{WRID: 8, Status: verbs.WCWRFlushErr, Opcode: verbs.WCSend, QPNum: 0x11}
	fmt.Println(ok)
	fmt.Println(flushed)
	// Output:
	// wr_id=7 status=IBV_WC_SUCCESS opcode=IBV_WC_RECV byte_len=64 qp=0x11
	// wr_id=8 status=IBV_WC_WR_FLUSH_ERR qp=0x11 vendor_err=0x0
}
