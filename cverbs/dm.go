//go:build cgo && linux

package cverbs

/*
#include "cverbs.h"
*/
import "C"

import (
	"runtime"
	"unsafe"

	"github.com/verbsim/verbsim/verbs"
)

// Device memory (verbs.DMAllocator, verbs.DMMRRegisterer): ibv_alloc_dm
// and the verbs on it are inline in verbs.h and reach the provider through
// its verbs_context; a provider without them answers EOPNOTSUPP.

// AllocDM is ibv_alloc_dm.
func (c *devContext) AllocDM(attr verbs.AllocDMAttr) (verbs.DM, error) {
	if err := c.live("ibv_alloc_dm"); err != nil {
		return nil, err
	}
	a := C.struct_ibv_alloc_dm_attr{length: C.size_t(attr.Length), log_align_req: C.uint32_t(attr.LogAlignReq), comp_mask: C.uint32_t(attr.CompMask)}
	d, err := C.ibv_alloc_dm(c.c, &a)
	if d == nil {
		return nil, errOf("ibv_alloc_dm", err)
	}
	m := &dm{life: life{ctx: c}, d: d}
	track(unsafe.Pointer(d), m)
	return m, nil
}

// dm is a struct ibv_dm.
type dm struct {
	life
	d *C.struct_ibv_dm
}

func (m *dm) owner() *devContext { return m.ctx }

// kill marks the memory freed (its context closed).
func (m *dm) kill() {
	m.mu.Lock()
	m.dead = true
	m.mu.Unlock()
}

// MemcpyTo is ibv_memcpy_to_dm.
func (m *dm) MemcpyTo(offset uint64, src []byte) error {
	if err := m.lock("ibv_memcpy_to_dm"); err != nil {
		return err
	}
	defer m.mu.Unlock()
	var p unsafe.Pointer
	if len(src) > 0 {
		p = unsafe.Pointer(&src[0])
	}
	return rcErr("ibv_memcpy_to_dm", C.ibv_memcpy_to_dm(m.d, C.uint64_t(offset), p, C.size_t(len(src))))
}

// MemcpyFrom is ibv_memcpy_from_dm.
func (m *dm) MemcpyFrom(dst []byte, offset uint64) error {
	if err := m.lock("ibv_memcpy_from_dm"); err != nil {
		return err
	}
	defer m.mu.Unlock()
	var p unsafe.Pointer
	if len(dst) > 0 {
		p = unsafe.Pointer(&dst[0])
	}
	return rcErr("ibv_memcpy_from_dm", C.ibv_memcpy_from_dm(p, m.d, C.uint64_t(offset), C.size_t(len(dst))))
}

// Free is ibv_free_dm.
func (m *dm) Free() error {
	if err := m.lock("ibv_free_dm"); err != nil {
		return err
	}
	defer m.mu.Unlock()
	if rc := C.ibv_free_dm(m.d); rc != 0 {
		return rcErr("ibv_free_dm", rc)
	}
	m.dead = true
	forget(unsafe.Pointer(m.d))
	return nil
}

// RegDMMR is ibv_reg_dm_mr. A DM of another binding is EINVAL.
func (p *pd) RegDMMR(d verbs.DM, offset, length uint64, access verbs.AccessFlags) (verbs.MR, error) {
	m, ok := d.(*dm)
	if !ok || m == nil {
		return nil, einval("ibv_reg_dm_mr")
	}
	if err := p.lock("ibv_reg_dm_mr"); err != nil {
		return nil, err
	}
	defer p.mu.Unlock()
	if err := m.lock("ibv_reg_dm_mr"); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	r, err := C.ibv_reg_dm_mr(p.p, m.d, C.uint64_t(offset), C.size_t(length), C.uint(access))
	if r == nil {
		return nil, errOf("ibv_reg_dm_mr", err)
	}
	mr := &mr{life: life{ctx: p.ctx}, pd: p, m: r, pin: new(runtime.Pinner)} // no host memory to pin
	mr.fields()
	track(unsafe.Pointer(r), mr)
	return mr, nil
}

var (
	_ verbs.DMAllocator    = (*devContext)(nil)
	_ verbs.DMMRRegisterer = (*pd)(nil)
	_ verbs.DM             = (*dm)(nil)
)
