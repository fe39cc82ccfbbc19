package main

// mw.go is the Go side of mw.c: BIND_MW work requests of type 2 memory
// windows, through ibv_post_send and ibv_wr_bind_mw.

/*
#include <stdint.h>
#include "capi.h"
*/
import "C"

import (
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// bindInfo is the MWBindInfo of a bind: the MR handle mrh (0: none, which
// the engine refuses as it executes), the range and the rights.
func bindInfo(mrh C.uintptr_t, addr, length C.uint64_t, access C.uint32_t) (verbs.MWBindInfo, bool) {
	info := verbs.MWBindInfo{Addr: uint64(addr), Length: uint64(length), Access: verbs.AccessFlags(access)}
	if mrh != 0 {
		m := rec[mrRec](mrh)
		if m == nil {
			return info, false
		}
		info.MR = m.mr
	}
	return info, true
}

// bindFromC completes sw, a BIND_MW request of ibv_post_send, from the
// bind fields of w; false when a handle names nothing. No window at all
// (a NULL bind_mw.mw) is a nil window, which the engine accepts at post and
// completes with MW_BIND_ERR, as in process.
func bindFromC(w *C.struct_capi_swr, sw *verbs.SendWR) bool {
	var win *sim.MW
	if w.mw != 0 {
		mw := rec[mwRec](w.mw)
		if mw == nil {
			return false
		}
		win = mw.mw
	}
	info, ok := bindInfo(w.mr, w.remote_addr, w.compare_add, w.mw_access)
	if !ok {
		return false
	}
	sw.MW, sw.Bind = win, info
	return true
}

// wrBindMW is ibv_wr_bind_mw: the window mwh is to be bound with rkey to
// [addr, addr+length) of the MR mrh with the given rights. A handle that
// names nothing becomes a nil window or MR, which wr_complete refuses.
func wrBindMW(q *sim.QP, rkey, access C.uint32_t, addr, length, mrh C.uint64_t, mwh C.uintptr_t) {
	var w *sim.MW
	if r := rec[mwRec](mwh); r != nil {
		w = r.mw
	}
	info, _ := bindInfo(C.uintptr_t(mrh), C.uint64_t(addr), C.uint64_t(length), access)
	q.WRBindMW(w, uint32(rkey), info)
}
