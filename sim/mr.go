package sim

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"syscall"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/sim/internal/qp"
	"github.com/verbsim/verbsim/verbs"

	"github.com/verbsim/verbsim/sim/verr"
)

const (
	// accessOptional is IBV_ACCESS_OPTIONAL_RANGE, bits 20 to 29: flags a
	// device may ignore. Unknown ones are accepted and dropped, as the kernel
	// accepts (or libibverbs masks) them.
	accessOptional verbs.AccessFlags = 0x3ff00000
	accessKnown                      = verbs.AccessLocalWrite | verbs.AccessRemoteWrite | verbs.AccessRemoteRead | verbs.AccessRemoteAtomic |
		verbs.AccessMWBind | verbs.AccessZeroBased | verbs.AccessOnDemand | verbs.AccessHugeTLB | verbs.AccessRelaxedOrdering
)

// checkAccess applies the registration-time rules to access and returns the
// flags the MR keeps: unknown optional flags are dropped. noODP says the
// device has no on-demand paging (ODP-02).
func checkAccess(verb string, access verbs.AccessFlags, f *Fabric) (verbs.AccessFlags, error) {
	if bad := access &^ (accessKnown | accessOptional); bad != 0 {
		return 0, verr.Errorf(verb, syscall.EINVAL, "unknown access bits %#x (MR-09)", uint32(bad))
	}
	if access&(verbs.AccessRemoteWrite|verbs.AccessRemoteAtomic) != 0 && access&verbs.AccessLocalWrite == 0 {
		return 0, verr.Errorf(verb, syscall.EINVAL, "access %v asks for remote write or atomic access without LOCAL_WRITE (MR-01)", access)
	}
	if access&verbs.AccessOnDemand != 0 {
		f.consult(verbs.ReadingNoODP)
	}
	if access&verbs.AccessOnDemand != 0 && f.profile.NoODP {
		return 0, verr.New(verb, syscall.EOPNOTSUPP, "ON_DEMAND on a device without on-demand paging (ODP-02)")
	}
	return access &^ (accessOptional &^ verbs.AccessRelaxedOrdering), nil
}

// MR is a registered memory region (struct ibv_mr). It aliases the caller's
// buffer: the adapter reads and writes that very memory when work requests
// execute, never a copy taken at registration (QP-36).
// On a nil *MR every method returns EINVAL or zero values; see the
// package doc.
type MR struct {
	tname  string // the trace name, given at creation
	pd     *PD
	buf    []byte // nil once deregistered
	length uint64
	addr   uint64 // simulated virtual address of buf[0]
	iova   uint64 // the address work requests use for buf[0]
	// va is the address of buf[0] for work requests when the MR is not
	// ZERO_BASED: addr, or the hca_va of RegMRIOVA or ReregIOVA. A
	// re-registration that drops ZERO_BASED gives iova this value again.
	va     uint64
	lkey   uint32
	rkey   uint32
	access verbs.AccessFlags
	dead   bool
	binds  int // memory windows bound to the MR (MR-06)
	// invalid is set by an incoming SEND_WITH_INV naming the rkey
	// (XFER-29): the keys no longer resolve.
	invalid bool
	// broken is set by a re-registration that failed with a command error
	// under the default profile (MR-14): the keys no longer resolve and
	// only Dereg works.
	broken bool
	// dm is the device memory of an MR of RegDMMR (DM-06), nil for one
	// over host memory; its buf lies in dm's memory and is not placed in
	// the simulated address space.
	dm *DM
	// ext is the memory of an MR over another process's pages (the
	// per-host daemon: regExternal), whose first byte is at address extAt
	// there; buf is then nil and the MR is not placed in the simulated
	// address space either (addr is extAt).
	ext   qp.Extern
	extAt uint64
}

// PD returns the protection domain of the MR (ibv_mr.pd).
func (mr *MR) PD() *PD {
	if mr == nil {
		return nil
	}
	return mr.pd
}

// Addr returns ibv_mr.addr: the simulated virtual address of the first byte
// of the buffer. Each device has its own deterministic address space; a
// buffer registered while another registration of the same starting byte is
// live gets the same address, as the process address would be.
func (mr *MR) Addr() uint64 {
	if mr == nil {
		return 0
	}
	return mr.addr
}

// IOVA returns the address that work requests use for the first byte of the
// MR: Addr for RegMR, hca_va for RegMRIOVA, and 0 with AccessZeroBased
// (MR-04). An SGE or remote address x refers to byte x-IOVA() of the buffer.
func (mr *MR) IOVA() uint64 {
	if mr == nil {
		return 0
	}
	return mr.iova
}

// Length returns ibv_mr.length, the length of the registered buffer.
func (mr *MR) Length() uint64 {
	if mr == nil {
		return 0
	}
	return mr.length
}

// LKey returns the local key (ibv_mr.lkey), used in SGEs.
func (mr *MR) LKey() uint32 {
	if mr == nil {
		return 0
	}
	return mr.lkey
}

// RKey returns the remote key (ibv_mr.rkey), used by peers in RDMA and
// atomic work requests. verbsim's rkey always differs from the lkey, so a
// program that swaps them fails as it would on some adapters.
func (mr *MR) RKey() uint32 {
	if mr == nil {
		return 0
	}
	return mr.rkey
}

// Access returns the access flags the MR was registered with, less unknown
// optional flags.
func (mr *MR) Access() verbs.AccessFlags {
	if mr == nil {
		return 0
	}
	return mr.access
}

// RegMR registers buf with the given access (ibv_reg_mr). buf is not
// copied: the MR aliases it until Dereg. Work requests address it from
// mr.Addr(), or from 0 with AccessZeroBased.
//
// Errors, all checked at registration and with nothing changed: EINVAL for
// a nil or deallocated PD, REMOTE_WRITE or REMOTE_ATOMIC without
// LOCAL_WRITE (MR-01), unknown access bits outside the optional range
// (MR-09), an empty buf (the kernel pins no pages for a zero length) or one
// longer than max_mr_size; EOPNOTSUPP for AccessOnDemand under a profile
// without on-demand paging (ODP-02); ENOMEM when the device has max_mr MRs.
func (pd *PD) RegMR(buf []byte, access verbs.AccessFlags) (*MR, error) {
	return pd.regMR("ibv_reg_mr", extent{buf: buf}, 0, false, access)
}

// RegMRIOVA registers buf so that work requests address its first byte as
// hcaVA (ibv_reg_mr_iova, MR-04). hcaVA 0 means offsets from 0, as
// AccessZeroBased does; AccessZeroBased with another hcaVA is EINVAL. As the
// kernel requires, hcaVA must have the same offset within a 4 KiB page as
// the buffer's address: verbsim places a new buffer to match, so this only
// fails for a buffer that another live MR already placed. The other errors
// are RegMR's.
func (pd *PD) RegMRIOVA(buf []byte, hcaVA uint64, access verbs.AccessFlags) (*MR, error) {
	return pd.regMR("ibv_reg_mr_iova", extent{buf: buf}, hcaVA, true, access)
}

// extent is the memory a registration covers: a buffer of this process,
// or the n bytes at address at of another process's memory ext (an MR of
// the per-host daemon, registered through simhook.RegExternalMR).
type extent struct {
	buf   []byte
	ext   qp.Extern
	at, n uint64
}

func (x extent) length() uint64 {
	if x.ext != nil {
		return x.n
	}
	return uint64(len(x.buf))
}

func (pd *PD) regMR(verb string, x extent, iova uint64, withIOVA bool, access verbs.AccessFlags) (_ *MR, err error) {
	if pd == nil {
		return nil, verr.New(verb, syscall.EINVAL, "nil PD")
	}
	d := pd.ctx.dev
	d.fabric.d.Enter(domain.Op{})
	defer d.fabric.d.Leave(domain.Op{}, nil)
	if e := d.fabric.eng; e.tracing() {
		defer func() {
			if err != nil {
				e.callLocked(e.nameOf(pd), verb[4:], "", fmt.Sprintf("length %d access %#x", x.length(), uint32(access)), err)
			}
		}()
	}
	if err := pd.checkLocked(verb); err != nil {
		return nil, err
	}
	access, err = checkAccess(verb, access, d.fabric)
	if err != nil {
		return nil, err
	}
	n := x.length()
	switch {
	case n == 0:
		return nil, verr.New(verb, syscall.EINVAL, "the buffer is empty; a registration covers at least one byte")
	case n > d.attr.MaxMRSize:
		return nil, verr.Errorf(verb, syscall.EINVAL, "length %d is above max_mr_size=%d", n, d.attr.MaxMRSize)
	case withIOVA && access&verbs.AccessZeroBased != 0 && iova != 0:
		return nil, verr.Errorf(verb, syscall.EINVAL, "ZERO_BASED asks for offsets from 0 but hca_va is %#x", iova)
	case withIOVA && iova > math.MaxUint64-(n-1):
		return nil, verr.Errorf(verb, syscall.EINVAL, "hca_va %#x + length %d wraps around", iova, n)
	}
	if d.mrs.live >= d.attr.MaxMR {
		return nil, verr.Errorf(verb, syscall.ENOMEM, "the device already has max_mr=%d MRs", d.attr.MaxMR)
	}
	addr, err := d.mrs.placeExtent(verb, x, iova, withIOVA)
	if err != nil {
		return nil, err
	}
	mr := &MR{pd: pd, buf: x.buf, ext: x.ext, extAt: x.at, length: n, addr: addr, access: access, va: addr}
	switch {
	case withIOVA:
		mr.iova, mr.va = iova, iova
	case access&verbs.AccessZeroBased == 0:
		mr.iova = addr
	}
	if err := d.mrs.insert(verb, mr); err != nil {
		d.mrs.unplace(x.buf)
		return nil, err
	}
	pd.children[childMR]++
	if e := d.fabric.eng; e.tracing() {
		e.callLocked(e.nameLocked(d, "mr", mr), verb[4:], e.nameOf(pd), fmt.Sprintf("length %d lkey %#x rkey %#x", n, mr.lkey, mr.rkey), nil)
	} else if d.fabric.d.Checking() {
		e.nameLocked(d, "mr", mr) // the sanitizer names it (Config.Check)
	}
	return mr, nil
}

// Dereg deregisters the MR (ibv_dereg_mr). Its keys stop working at once:
// work requests that still name them fail when they execute (MR-07), which
// the verb does not wait for. It fails while memory windows are bound to
// the MR (MR-06): EBUSY, or EINVAL under Profile.DeregBoundEINVAL (rxe); and
// with EINVAL for a nil or deregistered MR.
func (mr *MR) Dereg() (err error) {
	const verb = "ibv_dereg_mr"
	if mr == nil {
		return verr.New(verb, syscall.EINVAL, "nil MR")
	}
	d := mr.pd.ctx.dev
	d.fabric.d.Enter(domain.Op{})
	defer d.fabric.d.Leave(domain.Op{}, nil)
	if e := d.fabric.eng; e.tracing() {
		defer func() { e.callLocked(e.nameOf(mr), "dereg_mr", "", "", err) }()
	}
	if mr.dead {
		return verr.New(verb, syscall.EINVAL, "the MR has been deregistered")
	}
	if mr.binds > 0 {
		d.fabric.consult(verbs.ReadingDeregBoundEINVAL)
		errno := syscall.EBUSY
		if d.fabric.profile.DeregBoundEINVAL {
			errno = syscall.EINVAL
		}
		return verr.Errorf(verb, errno, "%d memory window(s) are bound to the MR (MR-06)", mr.binds)
	}
	if f := d.fabric; f.d.Checking() {
		f.d.Note(&domain.Note{Kind: domain.NoteDeregistering, Obj: mr, LKey: mr.lkey, RKey: mr.rkey})
		defer f.noteGoneLocked(mr)
	}
	d.mrs.remove(mr)
	if mr.dm != nil {
		mr.dm.mrs-- // DM-05
	} else {
		d.mrs.unplace(mr.buf)
	}
	mr.pd.releaseLocked(childMR)
	mr.dead = true
	mr.buf = nil
	return nil
}

// Ref holds the MR the way a bound memory window does: Dereg fails (MR-06)
// until the matching Unref. It lets tests check the rule without binding a
// window. EINVAL for a nil or deregistered MR.
func (mr *MR) Ref() error {
	if mr == nil {
		return verr.New("ibv_bind_mw", syscall.EINVAL, "nil MR")
	}
	mr.pd.ctx.dev.fabric.d.Enter(domain.Op{})
	defer mr.pd.ctx.dev.fabric.d.Leave(domain.Op{}, nil)
	return mr.bindLocked()
}

// Unref drops a hold taken by Ref; without one it does nothing.
func (mr *MR) Unref() {
	if mr == nil {
		return
	}
	mr.pd.ctx.dev.fabric.d.Enter(domain.Op{})
	defer mr.pd.ctx.dev.fabric.d.Leave(domain.Op{}, nil)
	mr.unbindLocked()
}

// bindLocked records a memory window bound to the MR (MR-06).
//
// Precondition: the domain lock is held.
func (mr *MR) bindLocked() error {
	if mr.dead {
		return verr.New("ibv_bind_mw", syscall.EINVAL, "the MR has been deregistered")
	}
	mr.binds++
	return nil
}

// unbindLocked forgets a window recorded by bindLocked.
//
// Precondition: the domain lock is held.
func (mr *MR) unbindLocked() {
	if mr.binds > 0 {
		mr.binds--
	}
}

// Keys. An MR owns an index, unique among the device's live MRs, in the top
// 24 bits of both keys; the low byte is a tag that changes with every
// registration, as adapters do, so a key kept after Dereg rarely names the
// next MR that reuses the index. lkey tags are 1..127 and rkey tags the same
// with bit 7 set, so no key is 0 and no lkey equals any rkey.
const (
	maxMRIndex = 1<<24 - 1
	pageSize   = 1 << 12
	// firstVA is where each device's simulated address space begins.
	firstVA = 0x10000000
)

// mrTable is a device's registry of live MRs and its simulated address
// space.
type mrTable struct {
	live    int
	byIndex map[uint32]*MR
	mws     map[uint32]*MW // memory windows, by the same index space
	mwLive  int
	next    uint32 // the next index to try
	serial  uint32 // registrations so far, for the key tags
	nextVA  uint64
	starts  map[*byte]*placement // live registrations by first byte
	// byAddr holds the placements in increasing address order, for
	// readAddr: a new placement always takes the highest address, so it is
	// appended; one whose last reference goes is marked gone and dropped by
	// a compaction once gone placements are half of them.
	byAddr []placed
	gone   int    // gone placements still in byAddr
	span   uint64 // the longest MR ever attached since the last compaction

	// recent caches byIndex: the live MR of index i, if looked up or
	// inserted lately, is at recent[i%len(recent)] (a hit compares the
	// index in its lkey). A message resolves two or three keys; a map
	// read is ~35 instructions.
	recent [16]*MR
}

// placed is an entry of mrTable.byAddr: the address beside the placement,
// so that the binary search reads contiguous memory.
type placed struct {
	addr uint64
	p    *placement
}

// placement is where a buffer's first byte sits in the simulated address
// space, shared by every live registration of a buffer starting there.
type placement struct {
	addr uint64
	refs int   // place calls not yet undone by unplace
	mrs  []*MR // live MRs placed here (attach)
	top  *MR   // the longest of mrs; nil when there is none
	gone bool  // refs fell to 0: no longer in starts
}

func (t *mrTable) init() {
	t.byIndex = map[uint32]*MR{}
	t.mws = map[uint32]*MW{}
	t.starts = map[*byte]*placement{}
	t.nextVA = firstVA
	t.next = 1
}

// placed reports whether the MR's buffer has a place in the simulated
// address space: it is in host memory of this process, not device memory
// (DM-06) nor another process's (extent).
func (mr *MR) placed() bool { return mr.dm == nil && mr.ext == nil }

// placeExtent is place for a registration's extent. Memory of another
// process takes no simulated address: the MR's address is the one it has
// there, whose offset in its 4 KiB page hcaVA must share, as the kernel
// requires of the buffer's.
func (t *mrTable) placeExtent(verb string, x extent, iova uint64, withIOVA bool) (uint64, error) {
	if x.ext == nil {
		return t.place(verb, x.buf, iova, withIOVA)
	}
	if withIOVA && x.at%pageSize != iova%pageSize {
		return 0, verr.Errorf(verb, syscall.EINVAL, "hca_va %#x and the buffer's address %#x differ in page offset", iova, x.at)
	}
	return x.at, nil
}

// place returns the simulated address of buf[0]: the one a live MR already
// gave it, or fresh addresses after the last ones used, page-aligned or, for
// an IOVA registration, at hcaVA's offset in its page.
func (t *mrTable) place(verb string, buf []byte, iova uint64, withIOVA bool) (uint64, error) {
	n := uint64(len(buf))
	if p := t.starts[&buf[0]]; p != nil {
		if withIOVA && p.addr%pageSize != iova%pageSize {
			return 0, verr.Errorf(verb, syscall.EINVAL, "hca_va %#x and the buffer's address %#x differ in page offset", iova, p.addr)
		}
		p.refs++
		return p.addr, nil
	}
	addr := t.nextVA
	if withIOVA {
		addr += iova % pageSize
	}
	end, carry := bits.Add64(addr, n+pageSize-1, 0)
	if carry != 0 {
		return 0, verr.New(verb, syscall.ENOMEM, "the simulated address space is exhausted")
	}
	t.nextVA = end &^ (pageSize - 1)
	p := &placement{addr: addr, refs: 1}
	t.starts[&buf[0]] = p
	t.byAddr = append(t.byAddr, placed{addr, p}) // addr is above every earlier placement's
	return addr, nil
}

// unplace drops the placement that place made for buf.
func (t *mrTable) unplace(buf []byte) {
	if len(buf) == 0 {
		return
	}
	if p := t.starts[&buf[0]]; p != nil {
		if p.refs--; p.refs == 0 {
			delete(t.starts, &buf[0])
			p.gone = true
			if t.gone++; t.gone > len(t.byAddr)/2 {
				t.compact()
			}
		}
	}
}

// compact drops the gone placements from byAddr and recomputes span.
func (t *mrTable) compact() {
	t.span = 0
	t.byAddr = slices.DeleteFunc(t.byAddr, func(e placed) bool {
		if !e.p.gone && e.p.top != nil {
			t.span = max(t.span, e.p.top.length)
		}
		return e.p.gone
	})
	t.gone = 0
}

// attach records mr, whose buffer has been placed, in its placement, for
// readAddr.
func (t *mrTable) attach(mr *MR) {
	p := t.starts[&mr.buf[0]]
	p.mrs = append(p.mrs, mr)
	if p.top == nil || mr.length > p.top.length {
		p.top = mr
	}
	t.span = max(t.span, mr.length)
}

// detach undoes attach, before the placement of mr's buffer is dropped.
func (t *mrTable) detach(mr *MR) {
	p := t.starts[&mr.buf[0]]
	if p == nil {
		return
	}
	if i := slices.Index(p.mrs, mr); i >= 0 {
		p.mrs = slices.Delete(p.mrs, i, i+1)
	}
	if p.top == mr {
		p.top = nil
		for _, o := range p.mrs {
			if p.top == nil || o.length > p.top.length {
				p.top = o
			}
		}
	}
}

// readAddr returns the n bytes at simulated address addr, if a live MR of
// the device covers them all, whatever its keys, PD or access (the inline
// payload of QP-35). Where registrations overlap in the simulated address
// space (a buffer registered again, longer, from the same first byte), the
// placement that starts nearest below addr and covers the range wins.
// O(log placements) when the nearest placement covers the range, which is
// the case unless registrations overlap; allocation free.
//
// Precondition: the domain lock is held.
func (t *mrTable) readAddr(addr uint64, n uint32) ([]byte, bool) {
	// i: the number of placements that start at or below addr.
	lo, hi := 0, len(t.byAddr)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if t.byAddr[m].addr <= addr {
			lo = m + 1
		} else {
			hi = m
		}
	}
	for i := lo - 1; i >= 0; i-- {
		e := t.byAddr[i]
		off := addr - e.addr
		if off >= t.span {
			break // no MR is long enough to reach addr from here or below
		}
		if mr := e.p.top; mr != nil && off < mr.length && uint64(n) <= mr.length-off {
			return mr.buf[off : off+uint64(n)], true
		}
	}
	return nil, false
}

// insert gives mr, whose buffer has been placed, an index and its keys.
func (t *mrTable) insert(verb string, mr *MR) error {
	for range maxMRIndex + 1 {
		idx := t.next
		t.next = (t.next + 1) & maxMRIndex
		if t.byIndex[idx] != nil || t.mws[idx] != nil {
			continue
		}
		t.serial++
		tag := 1 + t.serial%127
		mr.lkey = idx<<8 | tag
		mr.rkey = idx<<8 | tag | 0x80
		t.byIndex[idx] = mr
		t.recent[idx%uint32(len(t.recent))] = mr
		t.live++
		if mr.placed() {
			t.attach(mr)
		}
		return nil
	}
	return verr.New(verb, syscall.ENOMEM, "no MR key index is free")
}

func (t *mrTable) remove(mr *MR) {
	if t.byIndex[mr.lkey>>8] == mr {
		delete(t.byIndex, mr.lkey>>8)
		if c := &t.recent[(mr.lkey>>8)%uint32(len(t.recent))]; *c == mr {
			*c = nil
		}
		t.live--
		if mr.placed() {
			t.detach(mr)
		}
	}
}

// protFault is why a key lookup failed: the transport turns it into
// LOC_PROT_ERR for a local SGE and REM_ACCESS_ERR for a remote address.
type protFault uint8

const (
	faultNone   protFault = iota
	faultKey              // no live MR has the key, or an rkey was given as an lkey or the reverse (MR-04, MR-07)
	faultPD               // the MR belongs to another PD (MR-08)
	faultAccess           // the MR lacks a needed access flag (MR-01, MR-03)
	faultRange            // the addressed range leaves the MR (MR-04)
)

var faultNames = [...]string{"none", "invalid key", "MR of another PD", "missing access right", "out of the MR's range"}

// String says what was wrong, e.g. "invalid key".
func (f protFault) String() string {
	if int(f) < len(faultNames) {
		return faultNames[f]
	}
	return fmt.Sprintf("protFault(%d)", uint8(f))
}

// lookupLKeyLocked resolves a local SGE: lkey must be the lkey of a live MR
// of pd that grants need (0 for reading, AccessLocalWrite for receive, READ
// and atomic-result buffers: MR-02, MR-03), and [addr, addr+length) must
// lie within the MR, addresses counted from its IOVA (MR-04). It returns the
// bytes of the registered buffer that the range covers, aliasing the
// caller's memory, or the reason for the protection fault.
//
// A zero length needs no valid key or address (XFER-24): it returns an
// empty slice and faultNone without looking at lkey or addr. Allocation
// free.
//
// Precondition: the domain lock is held.
func (d *Device) lookupLKeyLocked(pd *PD, lkey uint32, addr, length uint64, need verbs.AccessFlags) ([]byte, protFault) {
	return d.mrs.lookup(pd, lkey, false, addr, length, need)
}

// lookupRKeyLocked is lookupLKeyLocked for the responder side: rkey must be
// the rkey of a live MR of pd (the responder QP's PD) that grants need
// (AccessRemoteWrite, AccessRemoteRead or AccessRemoteAtomic).
//
// Precondition: the domain lock is held.
func (d *Device) lookupRKeyLocked(pd *PD, rkey uint32, addr, length uint64, need verbs.AccessFlags) ([]byte, protFault) {
	return d.mrs.lookup(pd, rkey, true, addr, length, need)
}

// mrLocked returns the live MR of index idx, or nil.
func (t *mrTable) mrLocked(idx uint32) *MR {
	c := &t.recent[idx%uint32(len(t.recent))]
	if mr := *c; mr != nil && mr.lkey>>8 == idx {
		return mr
	}
	mr := t.byIndex[idx]
	if mr != nil {
		*c = mr
	}
	return mr
}

func (t *mrTable) lookup(pd *PD, key uint32, remote bool, addr, length uint64, need verbs.AccessFlags) ([]byte, protFault) {
	if length == 0 {
		return nil, faultNone
	}
	mr := t.mrLocked(key >> 8)
	if mr == nil {
		return nil, faultKey
	}
	want := mr.lkey
	if remote {
		want = mr.rkey
	}
	if key != want || mr.invalid || mr.broken {
		return nil, faultKey
	}
	if mr.pd != pd {
		return nil, faultPD
	}
	if mr.access&need != need {
		return nil, faultAccess
	}
	off := addr - mr.iova
	if addr < mr.iova || off >= mr.length || length > mr.length-off {
		return nil, faultRange
	}
	if mr.ext != nil {
		return nil, faultNone // lookupMem has it
	}
	return mr.buf[off : off+length : off+length], faultNone
}

// lookupMem is lookup for the memory of any MR, this process's or
// another's (an extent's): the transport asks for it when lookup
// resolved a non-empty range to no bytes.
func (t *mrTable) lookupMem(pd *PD, key uint32, remote bool, addr, length uint64, need verbs.AccessFlags) (qp.Mem, protFault) {
	b, f := t.lookup(pd, key, remote, addr, length, need)
	if f != faultNone || b != nil || length == 0 {
		return qp.Mem{B: b}, f
	}
	mr := t.mrLocked(key >> 8)
	return mr.mem(addr-mr.iova, length), faultNone
}

// mem is the memory of the MR's bytes [off, off+length), which lie within
// it.
func (mr *MR) mem(off, length uint64) qp.Mem {
	if mr.ext != nil {
		return qp.Mem{X: mr.ext, At: mr.extAt + off, N: length}
	}
	return qp.Mem{B: mr.buf[off : off+length : off+length]}
}
