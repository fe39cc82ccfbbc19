package verbs

import (
	"errors"
	"syscall"
	"testing"
)

// fakeIter is a poll iterator pointing at one completion; unread names a
// field it refuses to read (as one not asked for in wc_flags).
type fakeIter struct {
	w      WC
	unread string
}

func (f fakeIter) err(field string) error {
	if field == f.unread {
		return syscall.ENOENT
	}
	return nil
}

func (fakeIter) StartPoll() error { return nil }
func (fakeIter) NextPoll() error  { return nil }
func (fakeIter) EndPoll() error   { return nil }
func (f fakeIter) Current() (uint64, WCStatus, error) {
	return f.w.WRID, f.w.Status, f.err("current")
}
func (f fakeIter) ReadOpcode() (WCOpcode, error)        { return f.w.Opcode, f.err("opcode") }
func (f fakeIter) ReadVendorErr() (uint32, error)       { return f.w.VendorErr, f.err("vendor_err") }
func (f fakeIter) ReadWCFlags() (WCFlags, error)        { return f.w.WCFlags, f.err("wc_flags") }
func (f fakeIter) ReadByteLen() (uint32, error)         { return f.w.ByteLen, f.err("byte_len") }
func (f fakeIter) ReadImmData() (uint32, error)         { return f.w.ImmData, f.err("imm_data") }
func (f fakeIter) ReadInvalidatedRkey() (uint32, error) { return 0, nil }
func (f fakeIter) ReadQPNum() (uint32, error)           { return f.w.QPNum, f.err("qp_num") }
func (f fakeIter) ReadSrcQP() (uint32, error)           { return f.w.SrcQP, f.err("src_qp") }
func (f fakeIter) ReadSLID() (uint32, error)            { return uint32(f.w.SLID), f.err("slid") }
func (f fakeIter) ReadSL() (uint8, error)               { return f.w.SL, f.err("sl") }
func (f fakeIter) ReadDLIDPathBits() (uint8, error)     { return f.w.DLIDPathBits, f.err("dlid_path_bits") }
func (fakeIter) ReadCompletionTS() (uint64, error)      { return 0, nil }
func (fakeIter) ReadCompletionWallclockNS() (uint64, error) {
	return 0, nil
}

// TestReadWC: every standard field comes from its accessor, and a field
// that cannot be read is an error, the others still read.
func TestReadWC(t *testing.T) {
	w := WC{WRID: 7, Status: WCLocLenErr, Opcode: WCRecvRDMAWithImm, VendorErr: 0x99, WCFlags: WCWithImm | WCGRH,
		ByteLen: 64, ImmData: 5, QPNum: 0x12, SrcQP: 0x34, SLID: 9, SL: 3, DLIDPathBits: 1}
	if got, err := ReadWC(fakeIter{w: w}); got != w || err != nil {
		t.Errorf("ReadWC = %+v, %v; want %+v", got, err, w)
	}
	got, err := ReadWC(fakeIter{w: w, unread: "src_qp"})
	if !errors.Is(err, syscall.ENOENT) || got.QPNum != w.QPNum || got.SL != w.SL {
		t.Errorf("ReadWC with src_qp unreadable = %+v, %v; want ENOENT and the other fields", got, err)
	}
}
