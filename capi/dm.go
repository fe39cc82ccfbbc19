package main

// dm.go is the Go side of dm.c: device memory (ibv_alloc_dm and the verbs
// on it, DM-01 to DM-07). Like engine.go it takes plain C values and
// handles and returns an errno.

/*
#include <stdint.h>
#include "capi.h"
*/
import "C"

import (
	"syscall"
	"unsafe"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// dmRec is a block of device memory allocated through a context.
type dmRec struct {
	dm  *sim.DM
	ctx *ctxRec
}

//export vs_alloc_dm
func vs_alloc_dm(h C.uintptr_t, length C.size_t, logAlign, compMask C.uint32_t, out *C.uintptr_t) C.int {
	r := rec[ctxRec](h)
	if r == nil || out == nil {
		return C.int(syscall.EINVAL)
	}
	dm, err := r.c.AllocDM(verbs.AllocDMAttr{Length: uint64(length), LogAlignReq: uint32(logAlign), CompMask: uint32(compMask)})
	if err != nil {
		return errno(err)
	}
	*out = newHandle(&dmRec{dm: dm, ctx: r})
	adopt(r, *out, rankDM, vs_free_dm)
	return 0
}

//export vs_free_dm
func vs_free_dm(h C.uintptr_t) C.int {
	r := rec[dmRec](h)
	if r == nil {
		return C.int(syscall.EINVAL)
	}
	if err := r.dm.Free(); err != nil {
		return errno(err)
	}
	freeHandle(h)
	return 0
}

// vs_memcpy_dm copies length bytes between the host memory at host and the
// device memory at offset: into the device when toDM is non-zero.
//
//export vs_memcpy_dm
func vs_memcpy_dm(h C.uintptr_t, offset C.uint64_t, host unsafe.Pointer, length C.size_t, toDM C.int) C.int {
	r := rec[dmRec](h)
	if r == nil {
		return C.int(syscall.EINVAL)
	}
	if host == nil && length != 0 {
		return C.int(syscall.EFAULT)
	}
	buf := bytesAt(host, uint64(length))
	var err error
	if toDM != 0 {
		err = r.dm.MemcpyTo(uint64(offset), buf)
	} else {
		err = r.dm.MemcpyFrom(buf, uint64(offset))
	}
	return errno(err)
}

//export vs_reg_dm_mr
func vs_reg_dm_mr(pdh, dmh C.uintptr_t, offset C.uint64_t, length C.size_t, access C.uint32_t,
	out *C.uintptr_t, lkey, rkey *C.uint32_t) C.int {
	p, d := rec[pdRec](pdh), rec[dmRec](dmh)
	if p == nil || d == nil || out == nil || lkey == nil || rkey == nil {
		return C.int(syscall.EINVAL)
	}
	mr, err := p.pd.RegDMMR(d.dm, uint64(offset), uint64(length), verbs.AccessFlags(access))
	if err != nil {
		return errno(err)
	}
	*out = newHandle(&mrRec{mr: mr})
	adopt(p.ctx, *out, rankMR, vs_dereg_mr)
	*lkey, *rkey = C.uint32_t(mr.LKey()), C.uint32_t(mr.RKey())
	return 0
}
