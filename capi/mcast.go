package main

// mcast.go is the Go side of ibv_attach_mcast and ibv_detach_mcast.

/*
#include <stdint.h>
#include "capi.h"
*/
import "C"

import (
	"syscall"
	"unsafe"

	"github.com/verbsim/verbsim/verbs"
)

// vs_mcast attaches (on) or detaches QP h to or from the group of gid (16
// bytes) and lid (MCAST-01, MCAST-02).
//
//export vs_mcast
func vs_mcast(h C.uintptr_t, gid *C.uint8_t, lid C.uint16_t, on C.int) C.int {
	r := rec[qpRec](h)
	if r == nil || gid == nil {
		return C.int(syscall.EINVAL)
	}
	var g verbs.GID
	copy(g[:], unsafe.Slice((*byte)(unsafe.Pointer(gid)), len(g)))
	if on != 0 {
		return errno(r.q.AttachMcast(g, uint16(lid)))
	}
	return errno(r.q.DetachMcast(g, uint16(lid)))
}
