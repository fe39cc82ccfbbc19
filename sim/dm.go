package sim

import (
	"fmt"
	"syscall"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// Device memory (ibv_alloc_dm(3)): memory on the adapter itself, which the
// host reaches only through ibv_memcpy_to_dm and ibv_memcpy_from_dm and work
// requests reach through an MR registered on it with ibv_reg_dm_mr. verbsim
// models mlx5's on-chip memory (MEMIC), the one provider that has it: a
// device owns DeviceAttr.MaxDMSize bytes, shared out by every context on
// the device in whole 4 KiB pages.

const (
	// maxDMSize bounds DeviceAttr.MaxDMSize (1 GiB; mlx5's on-chip memory
	// is a few hundred KiB).
	maxDMSize = 1 << 30
	// dmMaxLogAlign is the largest log_align_req ibv_alloc_dm takes:
	// allocations start on a page, so any alignment up to a page holds.
	// mlx5 refuses alignments above its log_max_memic_addr_alignment
	// capability with EINVAL; verbsim's capability is the page (DM-01).
	dmMaxLogAlign = 12
	// dmBlock is the granularity mlx5 rounds a length up to before it
	// allocates (MLX5_MEMIC_BASE_SIZE).
	dmBlock = 64
	// dmAccessAllowed are the access flags ibv_reg_dm_mr takes (mlx5's
	// MLX5_DM_ALLOWED_ACCESS), the optional range included (DM-06).
	dmAccessAllowed = verbs.AccessLocalWrite | verbs.AccessRemoteWrite | verbs.AccessRemoteRead | verbs.AccessRemoteAtomic | verbs.AccessZeroBased | accessOptional
)

const (
	verbAllocDM      = "ibv_alloc_dm"
	verbFreeDM       = "ibv_free_dm"
	verbMemcpyToDM   = "ibv_memcpy_to_dm"
	verbMemcpyFromDM = "ibv_memcpy_from_dm"
	verbRegDMMR      = "ibv_reg_dm_mr"
)

// dmPool is a device's device memory: a page map of DeviceAttr.MaxDMSize.
type dmPool struct {
	used []bool // one entry per 4 KiB page; true while a DM holds it
}

func (p *dmPool) init(d *Device) {
	if d.fabric.profile.NoDM {
		d.attr.MaxDMSize = 0
	}
	p.used = make([]bool, d.attr.MaxDMSize/pageSize)
}

// take finds n free contiguous pages, first fit as mlx5's page map does,
// marks them used and returns the first; -1 when no run is long enough.
func (p *dmPool) take(n int) int {
	run := 0
	for i, u := range p.used {
		if u {
			run = 0
			continue
		}
		if run++; run == n {
			first := i - n + 1
			for j := first; j <= i; j++ {
				p.used[j] = true
			}
			return first
		}
	}
	return -1
}

func (p *dmPool) give(first, n int) {
	for j := first; j < first+n; j++ {
		p.used[j] = false
	}
}

// DM is a block of device memory (struct ibv_dm), allocated through a
// device context. Its bytes live on the simulated adapter: the host copies
// in and out with MemcpyTo and MemcpyFrom (DM-04), and work requests reach
// them through an MR that PD.RegDMMR registers (DM-06, DM-07). On a nil *DM
// every method returns EINVAL or zero values; see the package doc.
type DM struct {
	tname  string // the trace name, given at creation
	ctx    *Context
	mem    []byte // length bytes; nil once freed
	length uint64
	first  int // the first page of the device's pool the DM holds
	pages  int
	mrs    int // live MRs registered on the DM (DM-05)
	dead   bool
}

// AllocDM allocates device memory (ibv_alloc_dm). attr.Length bytes are
// taken from the device's max_dm_size, in whole 4 KiB pages that every
// context of the device shares; the memory reads as zeros until written.
//
// Errors, with nothing changed: EINVAL for a nil or closed context, a
// comp_mask other than 0, a length of 0 or above max_dm_size, and a
// log_align_req above 12 (DM-01); EOPNOTSUPP on a device without device
// memory (DM-02); ENOMEM when no run of free pages is long enough (DM-03).
func (c *Context) AllocDM(attr verbs.AllocDMAttr) (_ *DM, err error) {
	if c == nil {
		return nil, verr.New(verbAllocDM, syscall.EINVAL, "nil device context")
	}
	d := c.dev
	f := d.fabric
	f.d.Enter(domain.Op{})
	defer f.d.Leave(domain.Op{}, nil)
	if e := f.eng; e.tracing() {
		defer func() {
			if err != nil {
				e.callLocked(e.nameOf(c), "alloc_dm", "", fmt.Sprintf("length %d", attr.Length), err)
			}
		}()
	}
	if err := c.checkLocked(verbAllocDM); err != nil {
		return nil, err
	}
	switch max := d.attr.MaxDMSize; {
	case max == 0:
		return nil, verr.New(verbAllocDM, syscall.EOPNOTSUPP, "the device has no device memory (DM-02)")
	case attr.CompMask != 0:
		return nil, verr.Errorf(verbAllocDM, syscall.EINVAL, "comp_mask %#x: no bit is defined (DM-01)", attr.CompMask)
	case attr.Length > max:
		return nil, verr.Errorf(verbAllocDM, syscall.EINVAL, "length %d is above max_dm_size=%d (DM-01)", attr.Length, max)
	case attr.Length == 0:
		return nil, verr.New(verbAllocDM, syscall.EINVAL, "length 0 (DM-01)")
	case attr.LogAlignReq > dmMaxLogAlign:
		return nil, verr.Errorf(verbAllocDM, syscall.EINVAL, "log_align_req %d is above %d, the device's largest alignment (DM-01)", attr.LogAlignReq, dmMaxLogAlign)
	}
	size := (attr.Length + dmBlock - 1) &^ (dmBlock - 1)
	pages := int((size + pageSize - 1) / pageSize)
	first := d.dm.take(pages)
	if first < 0 {
		return nil, verr.Errorf(verbAllocDM, syscall.ENOMEM, "no %d free contiguous pages of device memory for length %d (DM-03)", pages, attr.Length)
	}
	dm := &DM{ctx: c, mem: make([]byte, attr.Length), length: attr.Length, first: first, pages: pages}
	c.dms++
	if e := f.eng; e.nameLocked(d, "dm", dm) != "" && e.tracing() {
		e.callLocked(e.nameOf(dm), "alloc_dm", e.nameOf(c), fmt.Sprintf("length %d, pages %d-%d", attr.Length, first, first+pages-1), nil)
	}
	return dm, nil
}

// Context returns the device context the memory was allocated through
// (ibv_dm.context).
func (dm *DM) Context() *Context {
	if dm == nil {
		return nil
	}
	return dm.ctx
}

// Length returns the length asked of AllocDM.
func (dm *DM) Length() uint64 {
	if dm == nil {
		return 0
	}
	return dm.length
}

// Free frees the device memory (ibv_free_dm) and returns its pages to the
// device. It fails with EBUSY, changing nothing, while an MR is registered
// on the memory (DM-05), and with EINVAL for a nil or freed DM.
func (dm *DM) Free() (err error) {
	if dm == nil {
		return verr.New(verbFreeDM, syscall.EINVAL, "nil DM")
	}
	f := dm.ctx.dev.fabric
	f.d.Enter(domain.Op{})
	defer f.d.Leave(domain.Op{}, nil)
	if e := f.eng; e.tracing() {
		defer func() { e.callLocked(e.nameOf(dm), "free_dm", "", "", err) }()
	}
	if dm.dead {
		return verr.New(verbFreeDM, syscall.EINVAL, "the DM has been freed")
	}
	if dm.mrs > 0 {
		return verr.Errorf(verbFreeDM, syscall.EBUSY, "%d MR(s) are registered on the device memory (DM-05)", dm.mrs)
	}
	dm.ctx.dev.dm.give(dm.first, dm.pages)
	dm.ctx.dms--
	dm.dead, dm.mem = true, nil
	return nil
}

// checkRange applies the copy rules of DM-04 to [offset, offset+n).
func (dm *DM) checkRange(verb string, offset uint64, n int) error {
	if dm.dead {
		return verr.New(verb, syscall.EINVAL, "the DM has been freed")
	}
	l := uint64(n)
	if offset > dm.length || l > dm.length-offset {
		return verr.Errorf(verb, syscall.EFAULT, "offset %d + length %d is beyond the %d bytes of the DM (DM-04)", offset, l, dm.length)
	}
	if offset%4 != 0 || l%4 != 0 {
		return verr.Errorf(verb, syscall.EINVAL, "offset %d and length %d must be multiples of 4 (DM-04)", offset, l)
	}
	return nil
}

// MemcpyTo copies src into the device memory from offset
// (ibv_memcpy_to_dm). EFAULT when the range leaves the memory, EINVAL when
// offset or len(src) is not a multiple of 4 (DM-04), or for a nil or freed
// DM; nothing is copied then.
func (dm *DM) MemcpyTo(offset uint64, src []byte) error {
	if dm == nil {
		return verr.New(verbMemcpyToDM, syscall.EINVAL, "nil DM")
	}
	f := dm.ctx.dev.fabric
	f.d.Enter(domain.Op{})
	defer f.d.Leave(domain.Op{}, nil)
	if err := dm.checkRange(verbMemcpyToDM, offset, len(src)); err != nil {
		return err
	}
	copy(dm.mem[offset:], src)
	return nil
}

// MemcpyFrom fills dst from the device memory at offset
// (ibv_memcpy_from_dm), with MemcpyTo's errors (DM-04).
func (dm *DM) MemcpyFrom(dst []byte, offset uint64) error {
	if dm == nil {
		return verr.New(verbMemcpyFromDM, syscall.EINVAL, "nil DM")
	}
	f := dm.ctx.dev.fabric
	f.d.Enter(domain.Op{})
	defer f.d.Leave(domain.Op{}, nil)
	if err := dm.checkRange(verbMemcpyFromDM, offset, len(dst)); err != nil {
		return err
	}
	copy(dst, dm.mem[offset:])
	return nil
}

// RegDMMR registers length bytes of dm from offset as an MR of the PD
// (ibv_reg_dm_mr). The MR is zero-based: work requests address its first
// byte as 0, and Addr is 0 (ibv_mr.addr NULL: the memory has no host
// address). It serves as a local SGE and as the target of remote WRITE,
// READ and atomics like any MR (DM-07); the DM cannot be freed while it
// exists (DM-05). A length of 0 is allowed, as the kernel checks only the
// bounds.
//
// Errors, with nothing changed: EINVAL for a nil or deallocated PD, a nil
// or freed DM or one of another context, access without AccessZeroBased
// or with a flag outside LOCAL_WRITE, REMOTE_WRITE, REMOTE_READ,
// REMOTE_ATOMIC, ZERO_BASED and the optional range, REMOTE_WRITE or
// REMOTE_ATOMIC without LOCAL_WRITE (MR-01), and a range beyond the DM
// (DM-06); ENOMEM when the device has max_mr MRs.
func (pd *PD) RegDMMR(dm *DM, offset, length uint64, access verbs.AccessFlags) (_ *MR, err error) {
	const verb = verbRegDMMR
	if pd == nil {
		return nil, verr.New(verb, syscall.EINVAL, "nil PD")
	}
	d := pd.ctx.dev
	d.fabric.d.Enter(domain.Op{})
	defer d.fabric.d.Leave(domain.Op{}, nil)
	if e := d.fabric.eng; e.tracing() {
		defer func() {
			if err != nil {
				e.callLocked(e.nameOf(pd), "reg_dm_mr", "", fmt.Sprintf("offset %d length %d access %#x", offset, length, uint32(access)), err)
			}
		}()
	}
	if err := pd.checkLocked(verb); err != nil {
		return nil, err
	}
	switch {
	case dm == nil:
		return nil, verr.New(verb, syscall.EINVAL, "nil DM")
	case dm.dead:
		return nil, verr.New(verb, syscall.EINVAL, "the DM has been freed")
	case dm.ctx != pd.ctx:
		return nil, verr.New(verb, syscall.EINVAL, "the DM and the PD belong to different device contexts (DM-06)")
	case access&verbs.AccessZeroBased == 0:
		return nil, verr.Errorf(verb, syscall.EINVAL, "access %v lacks ZERO_BASED; device memory MRs are zero-based (DM-06)", access)
	case access&^dmAccessAllowed != 0:
		return nil, verr.Errorf(verb, syscall.EINVAL, "access bits %#x are not allowed on device memory (DM-06)", uint32(access&^dmAccessAllowed))
	case offset > dm.length || length > dm.length-offset:
		return nil, verr.Errorf(verb, syscall.EINVAL, "offset %d + length %d is beyond the %d bytes of the DM (DM-06)", offset, length, dm.length)
	}
	access, err = checkAccess(verb, access, d.fabric.profile.NoODP) // ON_DEMAND is refused above (DM-06)
	if err != nil {
		return nil, err
	}
	if d.mrs.live >= d.attr.MaxMR {
		return nil, verr.Errorf(verb, syscall.ENOMEM, "the device already has max_mr=%d MRs", d.attr.MaxMR)
	}
	mr := &MR{pd: pd, buf: dm.mem[offset : offset+length : offset+length], length: length, access: access, dm: dm}
	if err := d.mrs.insert(verb, mr); err != nil {
		return nil, err
	}
	pd.children[childMR]++
	dm.mrs++
	if e := d.fabric.eng; e.tracing() {
		e.callLocked(e.nameLocked(d, "mr", mr), "reg_dm_mr", e.nameOf(pd), fmt.Sprintf("from %s, offset %d length %d lkey %#x rkey %#x", e.nameOf(dm), offset, length, mr.lkey, mr.rkey), nil)
	}
	return mr, nil
}

// DM returns the device memory an MR of RegDMMR lies in, or nil.
func (mr *MR) DM() *DM {
	if mr == nil {
		return nil
	}
	return mr.dm
}
