package verbs

import (
	"fmt"
	"strings"
)

// WC is one work completion, the Go form of struct ibv_wc as filled in by
// ibv_poll_cq. Fields keep the C order and widths.
//
// Which fields mean anything depends on Status and Opcode. When Status is
// not WCSuccess only WRID, Status, QPNum and VendorErr may be read; every
// other field is undefined, and in particular Opcode may hold anything
// (rxe leaves 0, which reads as WCSend) (WC-03, FLUSH-06).
type WC struct {
	// WRID is the caller's wr_id, copied bit-for-bit from the send WR or
	// the consumed receive WR this completion reports. Valid for every
	// status (WC-01).
	WRID uint64
	// Status says whether the WR succeeded and, if not, why. Always valid.
	Status WCStatus
	// Opcode is the completed operation. Valid only when Status is
	// WCSuccess (WC-03); see WROpcode.SendCompletion and
	// WROpcode.RecvCompletion for the values (WC-04, WC-05).
	Opcode WCOpcode
	// VendorErr is an opaque provider syndrome. Meaningful only when
	// Status is not WCSuccess (WC-14).
	VendorErr uint32
	// ByteLen is valid only when Status is WCSuccess. On a receive WC it is
	// the payload length placed in the buffer, excluding immediate data;
	// for UD it includes the 40 WCGRH bytes, and for WCRecvRDMAWithImm it is
	// the length of the RDMA write (WC-10). On a send-side WC it is the
	// bytes read for WCRDMARead and 8 for the atomics; for WCSend and
	// WCRDMAWrite it is provider-defined (verbsim reports the total
	// SGE length, but tests must not rely on it) (WC-11).
	ByteLen uint32
	// ImmData is the immediate data, valid only when Status is WCSuccess
	// and WCFlags has WCWithImm (WC-09). In C it is a __be32: the value is
	// opaque, in network byte order, and is delivered bit-for-bit as the
	// sender wrote it into the WR; nothing in verbsim swaps or
	// interprets it.
	//
	// In struct ibv_wc this storage is a union with invalidated_rkey,
	// which is what it holds instead when WCFlags has WCWithInv (WC-08);
	// read it through InvalidatedRkey in that case. The two flags are
	// never set together.
	ImmData uint32
	// QPNum is the number of the local QP whose WR completed. Valid for
	// every status; with a shared CQ or an SRQ it is how the consumer
	// tells completions apart (WC-02).
	QPNum uint32
	// SrcQP is the sender's QP number, valid on successful UD receive WCs
	// (WC-12) and on receive WCs of an XRC SRQ, where it is the XRC
	// initiator's (XRC-10).
	SrcQP uint32
	// WCFlags holds the WCGRH, WCWithImm, WCIPCSumOK and WCWithInv bits. Valid
	// only when Status is WCSuccess (WC-08). verbsim sets WCWithImm and
	// WCWithInv only on receive WCs, so consumers should test them only
	// there (WC-13).
	WCFlags WCFlags
	// PKeyIndex is the P_Key index, meaningful only on a GSI QP's receive
	// WCs (WC-12).
	PKeyIndex uint16
	// SLID is the source LID of a successful UD receive (WC-12).
	SLID uint16
	// SL is the service level of a successful UD receive (WC-12).
	SL uint8
	// DLIDPathBits is the destination LID path bits of a successful UD
	// receive; not applicable to multicast (WC-12).
	DLIDPathBits uint8
}

// InvalidatedRkey returns the rkey that an incoming SEND_WITH_INV
// invalidated. It reads the same storage as ImmData, as the C union does,
// and is meaningful only when Status is WCSuccess and WCFlags has WCWithInv
// (WC-08).
func (w *WC) InvalidatedRkey() uint32 {
	if w == nil {
		return 0
	}
	return w.ImmData
}

// String renders w on one line for test failures and walkthroughs, for
// example
//
//	wr_id=7 status=IBV_WC_SUCCESS opcode=IBV_WC_RECV byte_len=64 qp=0x11
//	wr_id=8 status=IBV_WC_WR_FLUSH_ERR qp=0x11 vendor_err=0x0
//
// The status and opcode are their C enumerator names. An error WC shows only
// the four fields that are meaningful for it (WC-03). A successful WC adds
// imm (when WCWithImm), inv_rkey (when WCWithInv), and src_qp, flags, slid, sl,
// dlid_path_bits and pkey_index when they are non-zero.
func (w *WC) String() string {
	if w == nil {
		return "<nil>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "wr_id=%d status=%v", w.WRID, w.Status)
	if w.Status != WCSuccess {
		fmt.Fprintf(&b, " qp=%#x vendor_err=%#x", w.QPNum, w.VendorErr)
		return b.String()
	}
	fmt.Fprintf(&b, " opcode=%v byte_len=%d qp=%#x", w.Opcode, w.ByteLen, w.QPNum)
	if w.SrcQP != 0 {
		fmt.Fprintf(&b, " src_qp=%#x", w.SrcQP)
	}
	if w.WCFlags != 0 {
		fmt.Fprintf(&b, " flags=%v", w.WCFlags)
	}
	if w.WCFlags&WCWithImm != 0 {
		fmt.Fprintf(&b, " imm=0x%08x", w.ImmData)
	}
	if w.WCFlags&WCWithInv != 0 {
		fmt.Fprintf(&b, " inv_rkey=%#x", w.InvalidatedRkey())
	}
	if w.SLID != 0 {
		fmt.Fprintf(&b, " slid=%d", w.SLID)
	}
	if w.SL != 0 {
		fmt.Fprintf(&b, " sl=%d", w.SL)
	}
	if w.DLIDPathBits != 0 {
		fmt.Fprintf(&b, " dlid_path_bits=%d", w.DLIDPathBits)
	}
	if w.PKeyIndex != 0 {
		fmt.Fprintf(&b, " pkey_index=%d", w.PKeyIndex)
	}
	return b.String()
}
