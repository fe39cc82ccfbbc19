//go:build cgo && linux

package cverbs

/*
#include "cverbs.h"
*/
import "C"

import (
	"syscall"
	"unsafe"

	"github.com/verbsim/verbsim/verbs"
)

// CreateCQEx is ibv_create_cq_ex (verbs.ExCQCreator).
func (c *devContext) CreateCQEx(attr verbs.CQInitAttrEx) (verbs.ExCQ, error) {
	if err := c.live("ibv_create_cq_ex"); err != nil {
		return nil, err
	}
	var cch *C.struct_ibv_comp_channel
	var gch *channel
	if attr.Channel != nil {
		var ok bool
		if gch, ok = channelOf(attr.Channel); !ok {
			return nil, einval("ibv_create_cq_ex (a channel of another implementation)")
		}
		if err := gch.lock("ibv_create_cq_ex (a destroyed channel)"); err != nil {
			return nil, err
		}
		cch = gch.ch
		gch.mu.Unlock()
	}
	if attr.CQE < 0 || attr.CompVector < 0 || attr.CQE > 1<<32-1 || attr.CompVector > 1<<32-1 {
		return nil, einval("ibv_create_cq_ex")
	}
	x, err := C.cv_create_cq_ex(c.c, C.uint32_t(attr.CQE), cch, C.uint32_t(attr.CompVector),
		C.uint64_t(attr.WCFlags), C.uint32_t(attr.CompMask), C.uint32_t(attr.Flags))
	if x == nil {
		return nil, errOf("ibv_create_cq_ex", err)
	}
	p := (*C.struct_ibv_cq)(unsafe.Pointer(x))
	q := &cq{life: life{ctx: c}, c: p, cqContext: attr.Context, cqe: int(p.cqe), ex: x, wcFlags: attr.WCFlags}
	e := &exCQ{q}
	q.self = e
	var out verbs.ExCQ = e
	if SimHooks() {
		h := &hookExCQ{e}
		q.self, out = h, h
	}
	if gch != nil {
		q.ch = gch
	}
	track(unsafe.Pointer(p), q)
	return out, nil
}

// exCQ is a CQ made by ibv_create_cq_ex: the classic verbs, and the poll
// iterator. The binding keeps the iterator's state, so that a misuse C
// leaves undefined (next_poll outside a batch, a read of a field not asked
// for in wc_flags, or with no current completion) is EINVAL, and polling or
// resizing inside a batch EBUSY.
type exCQ struct{ *cq }

// StartPoll is ibv_start_poll.
func (x *exCQ) StartPoll() error {
	if err := x.lock("ibv_start_poll"); err != nil {
		return err
	}
	defer x.mu.Unlock()
	if x.inBatch {
		return einval("ibv_start_poll (inside a batch)")
	}
	if rc, e := C.cv_start_poll(x.ex); rc != 0 {
		return rcErrno("ibv_start_poll", rc, e)
	}
	x.inBatch, x.hasCurrent = true, true
	return nil
}

// NextPoll is ibv_next_poll.
func (x *exCQ) NextPoll() error {
	if err := x.lock("ibv_next_poll"); err != nil {
		return err
	}
	defer x.mu.Unlock()
	if !x.inBatch {
		return einval("ibv_next_poll (no batch)")
	}
	if rc, e := C.cv_next_poll(x.ex); rc != 0 {
		x.hasCurrent = false
		return rcErrno("ibv_next_poll", rc, e)
	}
	x.hasCurrent = true
	return nil
}

// EndPoll is ibv_end_poll.
func (x *exCQ) EndPoll() error {
	if err := x.lock("ibv_end_poll"); err != nil {
		return err
	}
	defer x.mu.Unlock()
	if !x.inBatch {
		return einval("ibv_end_poll (no batch)")
	}
	C.cv_end_poll(x.ex)
	x.inBatch, x.hasCurrent = false, false
	return nil
}

// Current returns wr_id and status of struct ibv_cq_ex.
func (x *exCQ) Current() (uint64, verbs.WCStatus, error) {
	if err := x.lock("ibv_cq_ex wr_id"); err != nil {
		return 0, 0, err
	}
	defer x.mu.Unlock()
	if !x.hasCurrent {
		return 0, 0, einval("ibv_cq_ex wr_id (no current completion)")
	}
	return uint64(x.ex.wr_id), verbs.WCStatus(x.ex.status), nil
}

// read reads field f of the current completion, which needs flag in the
// CQ's wc_flags (0: always there).
func (x *exCQ) read(verb string, f C.int, flag verbs.WCExFlags) (uint64, error) {
	if err := x.lock(verb); err != nil {
		return 0, err
	}
	defer x.mu.Unlock()
	if !x.hasCurrent {
		return 0, einval(verb + " (no current completion)")
	}
	if flag != 0 && x.wcFlags&flag == 0 {
		return 0, &Error{Verb: verb + " (a field not asked for in wc_flags)", Errno: syscall.EINVAL}
	}
	return uint64(C.cv_read(x.ex, f)), nil
}

func (x *exCQ) ReadOpcode() (verbs.WCOpcode, error) {
	v, err := x.read("ibv_wc_read_opcode", C.CV_OPCODE, 0)
	return verbs.WCOpcode(v), err
}

func (x *exCQ) ReadVendorErr() (uint32, error) {
	v, err := x.read("ibv_wc_read_vendor_err", C.CV_VENDOR_ERR, 0)
	return uint32(v), err
}

func (x *exCQ) ReadWCFlags() (verbs.WCFlags, error) {
	v, err := x.read("ibv_wc_read_wc_flags", C.CV_WC_FLAGS, 0)
	return verbs.WCFlags(v), err
}

func (x *exCQ) ReadByteLen() (uint32, error) {
	v, err := x.read("ibv_wc_read_byte_len", C.CV_BYTE_LEN, verbs.WCExByteLen)
	return uint32(v), err
}

func (x *exCQ) ReadImmData() (uint32, error) {
	v, err := x.read("ibv_wc_read_imm_data", C.CV_IMM, verbs.WCExImm)
	return uint32(v), err
}

func (x *exCQ) ReadInvalidatedRkey() (uint32, error) {
	v, err := x.read("ibv_wc_read_invalidated_rkey", C.CV_INV_RKEY, verbs.WCExImm)
	return uint32(v), err
}

func (x *exCQ) ReadQPNum() (uint32, error) {
	v, err := x.read("ibv_wc_read_qp_num", C.CV_QP_NUM, verbs.WCExQPNum)
	return uint32(v), err
}

func (x *exCQ) ReadSrcQP() (uint32, error) {
	v, err := x.read("ibv_wc_read_src_qp", C.CV_SRC_QP, verbs.WCExSrcQP)
	return uint32(v), err
}

func (x *exCQ) ReadSLID() (uint32, error) {
	v, err := x.read("ibv_wc_read_slid", C.CV_SLID, verbs.WCExSLID)
	return uint32(v), err
}

func (x *exCQ) ReadSL() (uint8, error) {
	v, err := x.read("ibv_wc_read_sl", C.CV_SL, verbs.WCExSL)
	return uint8(v), err
}

func (x *exCQ) ReadDLIDPathBits() (uint8, error) {
	v, err := x.read("ibv_wc_read_dlid_path_bits", C.CV_DLID_PATH_BITS, verbs.WCExDLIDPathBits)
	return uint8(v), err
}

func (x *exCQ) ReadCompletionTS() (uint64, error) {
	return x.read("ibv_wc_read_completion_ts", C.CV_TS, verbs.WCExCompletionTimestamp)
}

func (x *exCQ) ReadCompletionWallclockNS() (uint64, error) {
	return x.read("ibv_wc_read_completion_wallclock_ns", C.CV_WALLCLOCK, verbs.WCExCompletionTimestampWallclock)
}

var (
	_ verbs.ExCQCreator = (*devContext)(nil)
	_ verbs.ExCQ        = (*exCQ)(nil)
)
