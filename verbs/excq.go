package verbs

import "errors"

// ReadWC assembles the completion the poll iterator q points at (after a
// successful StartPoll or NextPoll) as ibv_poll_cq would have returned it:
// the fields of IBV_WC_STANDARD_FLAGS, which every CQ ibv_create_cq makes
// reports. The error joins those of the reads: a field not asked for in
// wc_flags (CQX-03), or no current completion (CQX-07).
func ReadWC(q PollIterator) (WC, error) {
	var w WC
	var errs [11]error
	w.WRID, w.Status, errs[0] = q.Current()
	w.Opcode, errs[1] = q.ReadOpcode()
	w.VendorErr, errs[2] = q.ReadVendorErr()
	w.WCFlags, errs[3] = q.ReadWCFlags()
	w.ByteLen, errs[4] = q.ReadByteLen()
	w.ImmData, errs[5] = q.ReadImmData()
	w.QPNum, errs[6] = q.ReadQPNum()
	w.SrcQP, errs[7] = q.ReadSrcQP()
	var slid uint32
	slid, errs[8] = q.ReadSLID()
	w.SLID = uint16(slid)
	w.SL, errs[9] = q.ReadSL()
	w.DLIDPathBits, errs[10] = q.ReadDLIDPathBits()
	return w, errors.Join(errs[:]...)
}
