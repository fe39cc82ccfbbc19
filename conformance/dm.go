package conformance

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"syscall"

	"github.com/verbsim/verbsim/verbs"
)

// Cases of the DM family: device memory (ibv_alloc_dm, the copies, and MRs
// on it). A device offers it through the optional capabilities
// verbs.DMAllocator of its Context and verbs.DMMRRegisterer of its PD; one
// whose profile says NoDM must report max_dm_size 0 and refuse ibv_alloc_dm
// with EOPNOTSUPP (DM-02), and the other cases do not run there.

// dmWorld is what a device memory case works in.
type dmWorld struct {
	t   *tester
	e   *env
	a   verbs.DMAllocator
	max uint64 // max_dm_size
}

// dmSetup returns the world, or nil (having logged why) when the device
// has no device memory or its profile says it has none (DM-02 checks that).
func dmSetup(t *tester, e *env) *dmWorld {
	t.Helper()
	a, ok := e.Ctx.(verbs.DMAllocator)
	q, qok := e.Ctx.(verbs.ExQuerier)
	switch {
	case !ok || !qok:
		t.Logf("not checked: the context has no device memory verbs (verbs.DMAllocator) or no ibv_query_device_ex")
		return nil
	case e.Profile.NoDM:
		t.Logf("not checked: the profile has no device memory (DM-02)")
		return nil
	}
	ax, err := q.QueryDeviceEx(0)
	if err != nil {
		t.Fatalf("ibv_query_device_ex: %v", err)
	}
	if ax.MaxDMSize == 0 {
		t.Errorf("max_dm_size is 0 on a device whose profile has device memory (DM-02)")
		return nil
	}
	return &dmWorld{t: t, e: e, a: a, max: ax.MaxDMSize}
}

// alloc allocates n bytes or fails the case; the memory is freed when the
// case ends unless the case freed it.
func (w *dmWorld) alloc(n uint64) verbs.DM {
	w.t.Helper()
	dm, err := w.a.AllocDM(verbs.AllocDMAttr{Length: n})
	if err != nil || dm == nil {
		w.t.Fatalf("ibv_alloc_dm(length %d): %v", n, err)
	}
	w.t.Cleanup(func() { _ = dm.Free() })
	return dm
}

// regOn returns pd's ibv_reg_dm_mr, or fails the case.
func (w *dmWorld) regOn(pd verbs.PD) verbs.DMMRRegisterer {
	w.t.Helper()
	r, ok := pd.(verbs.DMMRRegisterer)
	if !ok {
		w.t.Fatalf("the PD has no ibv_reg_dm_mr (verbs.DMMRRegisterer) though the context allocates device memory")
	}
	return r
}

// reg registers an MR on dm or fails the case; it is deregistered when the
// case ends unless the case deregistered it.
func (w *dmWorld) reg(pd verbs.PD, dm verbs.DM, off, n uint64, access uint32) verbs.MR {
	w.t.Helper()
	mr, err := w.regOn(pd).RegDMMR(dm, off, n, verbs.AccessFlags(access))
	if err != nil || mr == nil {
		w.t.Fatalf("ibv_reg_dm_mr(offset %d, length %d, access %#x): %v", off, n, access, err)
	}
	w.t.Cleanup(func() { _ = mr.Dereg() })
	return mr
}

// dmCases are the cases of the DM family in dm.go.
var dmCases = []Case{
	{"DM-01", "ibv_alloc_dm: comp_mask, length 0, above max_dm_size and log_align_req are EINVAL", allocDMArgs},
	{"DM-02", "a device without device memory: max_dm_size 0, ibv_alloc_dm EOPNOTSUPP", deviceWithoutDM},
	{"DM-03", "device memory is one page-granular budget of the device; exhausted, ENOMEM", dmBudget},
	{"DM-04", "ibv_memcpy_to/from_dm: EFAULT out of range (first), EINVAL unaligned, else a copy", dmMemcpy},
	{"DM-05", "ibv_free_dm is EBUSY while an MR covers the memory", freeDMWhileMR},
	{"DM-06", "ibv_reg_dm_mr: ZERO_BASED required, DM access flags only, the range inside the DM; addr 0", regDMMR},
	{"DM-07", "an MR on device memory: WRITE, READ and atomics addressed from 0, SEND and receive through it", dmMRTraffic},
	{"DM-07", "an MR on device memory as the local SGE of a receive and of a SEND", dmMRLocalSGE},
}

func allocDMArgs(t *tester, e *env) {
	w := dmSetup(t, e)
	if w == nil {
		return
	}
	for _, a := range []verbs.AllocDMAttr{
		{Length: 64, CompMask: 1}, {Length: 64, CompMask: 100}, {Length: 0},
		{Length: w.max + 1}, {Length: 64, LogAlignReq: 13}, {Length: 64, LogAlignReq: 1 << 31},
	} {
		dm, err := w.a.AllocDM(a)
		if dm != nil {
			_ = dm.Free()
		}
		e.WantErrno(fmt.Sprintf("ibv_alloc_dm(length %d, log_align_req %d, comp_mask %#x)", a.Length, a.LogAlignReq, a.CompMask), err, syscall.EINVAL)
	}
	for _, a := range []verbs.AllocDMAttr{{Length: 4}, {Length: 100, LogAlignReq: 6}, {Length: w.max, LogAlignReq: 12}} {
		dm, err := w.a.AllocDM(a)
		if err != nil || dm == nil {
			t.Errorf("ibv_alloc_dm(length %d, log_align_req %d): %v; want device memory", a.Length, a.LogAlignReq, err)
			continue
		}
		got := make([]byte, 4)
		e.WantOK("ibv_memcpy_from_dm of new memory", dm.MemcpyFrom(got, 0))
		e.WantOK("ibv_free_dm", dm.Free())
	}
}

func deviceWithoutDM(t *tester, e *env) {
	a, ok := e.Ctx.(verbs.DMAllocator)
	q, qok := e.Ctx.(verbs.ExQuerier)
	if !ok || !qok {
		t.Logf("not checked: the context has no device memory verbs (verbs.DMAllocator) or no ibv_query_device_ex")
		return
	}
	ax, err := q.QueryDeviceEx(0)
	if err != nil {
		t.Fatalf("ibv_query_device_ex: %v", err)
	}
	dm, err := a.AllocDM(verbs.AllocDMAttr{Length: 64})
	if dm != nil {
		defer func() { _ = dm.Free() }()
	}
	if e.Profile.NoDM {
		if ax.MaxDMSize != 0 {
			t.Errorf("max_dm_size %d on a device without device memory; want 0", ax.MaxDMSize)
		}
		e.WantErrno("ibv_alloc_dm without device memory", err, syscall.EOPNOTSUPP)
		return
	}
	if ax.MaxDMSize == 0 || err != nil {
		t.Errorf("device memory promised by the profile: max_dm_size %d, ibv_alloc_dm(64): %v", ax.MaxDMSize, err)
	}
}

func dmBudget(t *tester, e *env) {
	w := dmSetup(t, e)
	if w == nil {
		return
	}
	pages := int(w.max / 4096)
	if pages > 1024 {
		t.Logf("not checked: %d pages of device memory are too many to fill", pages)
		return
	}
	// Every allocation of 64 bytes takes a page of its own.
	dms := make([]verbs.DM, 0, pages)
	for i := range pages {
		dm, err := w.a.AllocDM(verbs.AllocDMAttr{Length: 64})
		if err != nil {
			t.Errorf("ibv_alloc_dm(64) number %d of %d pages: %v", i+1, pages, err)
			break
		}
		dms = append(dms, dm)
	}
	defer func() {
		for _, dm := range dms {
			_ = dm.Free()
		}
	}()
	if len(dms) < pages {
		return
	}
	dm, err := w.a.AllocDM(verbs.AllocDMAttr{Length: 4})
	if dm != nil {
		_ = dm.Free()
	}
	e.WantErrno(fmt.Sprintf("ibv_alloc_dm(4) with all %d pages taken", pages), err, syscall.ENOMEM)
	// Two neighbouring pages freed give a run of two back.
	e.WantOK("ibv_free_dm", dms[1].Free())
	e.WantOK("ibv_free_dm", dms[2].Free())
	dms = append(dms[:1], dms[3:]...)
	two, err := w.a.AllocDM(verbs.AllocDMAttr{Length: 8192})
	if err != nil {
		t.Errorf("ibv_alloc_dm(8192) into two freed pages: %v", err)
		return
	}
	dms = append(dms, two)
}

func dmMemcpy(t *tester, e *env) {
	w := dmSetup(t, e)
	if w == nil {
		return
	}
	dm := w.alloc(100)
	msg := []byte("device memory, 4-byte words")[:24]
	e.WantOK("ibv_memcpy_to_dm(offset 8, 24 bytes)", dm.MemcpyTo(8, msg))
	got := make([]byte, 24)
	e.WantOK("ibv_memcpy_from_dm(offset 8, 24 bytes)", dm.MemcpyFrom(got, 8))
	if !bytes.Equal(got, msg) {
		t.Errorf("ibv_memcpy_from_dm read %q after writing %q", got, msg)
	}
	for _, c := range []struct {
		off   uint64
		n     int
		errno syscall.Errno
	}{
		{3, 4, syscall.EINVAL}, {4, 3, syscall.EINVAL}, {104, 4, syscall.EFAULT}, {0, 104, syscall.EFAULT},
		{97, 4, syscall.EFAULT}, {1 << 63, 4, syscall.EFAULT},
	} {
		e.WantErrno(fmt.Sprintf("ibv_memcpy_to_dm(offset %d, %d bytes) of 100", c.off, c.n), dm.MemcpyTo(c.off, bytes.Repeat([]byte{0xee}, c.n)), c.errno)
		e.WantErrno(fmt.Sprintf("ibv_memcpy_from_dm(offset %d, %d bytes) of 100", c.off, c.n), dm.MemcpyFrom(make([]byte, c.n), c.off), c.errno)
	}
	e.WantOK("ibv_memcpy_from_dm after the refused copies", dm.MemcpyFrom(got, 8))
	if !bytes.Equal(got, msg) {
		t.Errorf("refused copies changed the memory: %q, want %q", got, msg)
	}
	e.WantOK("ibv_memcpy_to_dm of 0 bytes at the end", dm.MemcpyTo(100, nil))
}

func freeDMWhileMR(t *tester, e *env) {
	w := dmSetup(t, e)
	if w == nil {
		return
	}
	pd := e.pdAlloc()
	dm, err := w.a.AllocDM(verbs.AllocDMAttr{Length: 256})
	if err != nil {
		t.Fatalf("ibv_alloc_dm(256): %v", err)
	}
	mr, err := w.regOn(pd).RegDMMR(dm, 0, 128, verbs.AccessFlags(accessZeroBased|accessLocalWrite))
	if err != nil {
		_ = dm.Free()
		t.Fatalf("ibv_reg_dm_mr: %v", err)
	}
	e.WantErrno("ibv_free_dm with an MR on it", dm.Free(), syscall.EBUSY)
	got := make([]byte, 4)
	e.WantOK("ibv_memcpy_from_dm after the refused free", dm.MemcpyFrom(got, 0))
	e.WantOK("ibv_dereg_mr", mr.Dereg())
	e.WantOK("ibv_free_dm after the MR's dereg", dm.Free())
}

func regDMMR(t *tester, e *env) {
	w := dmSetup(t, e)
	if w == nil {
		return
	}
	pd := e.pdAlloc()
	dm := w.alloc(100)
	r := w.regOn(pd)
	zb := accessZeroBased
	for _, c := range []struct {
		off, n uint64
		access uint32
	}{
		{0, 100, accessLocalWrite}, {0, 104, zb}, {101, 0, zb}, {4, 97, zb},
		{0, 8, zb | accessLocalWrite | accessMWBind}, {0, 8, zb | accessRemoteWrite},
	} {
		mr, err := r.RegDMMR(dm, c.off, c.n, verbs.AccessFlags(c.access))
		if mr != nil {
			_ = mr.Dereg()
		}
		e.WantErrno(fmt.Sprintf("ibv_reg_dm_mr(offset %d, length %d, access %#x) of a 100-byte DM", c.off, c.n, c.access), err, syscall.EINVAL)
	}
	for _, c := range []struct{ off, n uint64 }{{0, 0}, {100, 0}, {4, 96}} {
		mr := w.reg(pd, dm, c.off, c.n, zb|accessAll)
		if mr.Addr() != 0 || mr.Length() != c.n || mr.LKey() == 0 {
			t.Errorf("ibv_reg_dm_mr(offset %d, length %d): addr %#x, length %d, lkey %#x; want addr 0 (NULL) and the length", c.off, c.n, mr.Addr(), mr.Length(), mr.LKey())
		}
	}
}

func dmMRTraffic(t *tester, e *env) {
	w := dmSetup(t, e)
	if w == nil {
		return
	}
	x := newWire(t, e)
	a, b, _ := x.pair(verbs.QPTypeRC, x.opts())
	bd, ok := b.s.ctx.(verbs.DMAllocator)
	if !ok {
		t.Fatalf("the peer context has no device memory verbs")
	}
	dm, err := bd.AllocDM(verbs.AllocDMAttr{Length: 256})
	if err != nil {
		t.Fatalf("ibv_alloc_dm(256) on the peer: %v", err)
	}
	t.Cleanup(func() { _ = dm.Free() })
	mr := w.reg(b.s.pd, dm, 64, 128, accessZeroBased|accessAll)
	remote := func(id uint64, op verbs.WROpcode, addr uint64, sge verbs.SGE) verbs.SendWR {
		return verbs.SendWR{WRID: id, Opcode: op, Flags: verbs.SendSignaled, SGList: []verbs.SGE{sge}, RemoteAddr: addr, RKey: mr.RKey()}
	}
	copy(a.s.buf, "written to chip!")
	a.post("a WRITE to the DM MR", remote(1, verbs.WRRDMAWrite, 8, a.s.sge(0, 16)))
	if c := x.await(a.scq, 1, "WRITE to the DM MR"); len(c) == 1 && a.want("WRITE to the DM MR", c[0], 1, verbs.WCSuccess) {
		got := make([]byte, 16)
		e.WantOK("ibv_memcpy_from_dm", dm.MemcpyFrom(got, 64+8))
		if string(got) != "written to chip!" {
			t.Errorf("the WRITE to remote address 8 of an MR at DM offset 64: DM offset 72 holds %q", got)
		}
	}
	e.WantOK("ibv_memcpy_to_dm", dm.MemcpyTo(64+32, []byte("read from chip!!")))
	a.post("a READ of the DM MR", remote(2, verbs.WRRDMARead, 32, a.s.sge(100, 16)))
	if c := x.await(a.scq, 1, "READ of the DM MR"); len(c) == 1 && a.want("READ of the DM MR", c[0], 2, verbs.WCSuccess) {
		if got := string(a.s.buf[100:116]); got != "read from chip!!" {
			t.Errorf("the READ of remote address 32 brought %q", got)
		}
	}
	var word [8]byte
	binary.LittleEndian.PutUint64(word[:], 40)
	e.WantOK("ibv_memcpy_to_dm", dm.MemcpyTo(64+120, word[:]))
	fa := remote(3, verbs.WRAtomicFetchAndAdd, 120, a.s.sge(200, 8))
	fa.CompareAdd = 2
	a.post("a FETCH_AND_ADD on the DM MR", fa)
	if c := x.await(a.scq, 1, "FETCH_AND_ADD on the DM MR"); len(c) == 1 && a.want("FETCH_AND_ADD on the DM MR", c[0], 3, verbs.WCSuccess) {
		e.WantOK("ibv_memcpy_from_dm", dm.MemcpyFrom(word[:], 64+120))
		if old, now := binary.LittleEndian.Uint64(a.s.buf[200:]), binary.LittleEndian.Uint64(word[:]); old != 40 || now != 42 {
			t.Errorf("FETCH_AND_ADD 2 on 40 in device memory: fetched %d, memory now %d; want 40, 42", old, now)
		}
	}
	a.post("a READ past the DM MR", remote(4, verbs.WRRDMARead, 124, a.s.sge(0, 8)))
	if c := x.await(a.scq, 1, "READ past the DM MR"); len(c) == 1 {
		a.want("READ of bytes 124-131 of a 128-byte DM MR", c[0], 4, verbs.WCRemAccessErr)
	}
}

func dmMRLocalSGE(t *tester, e *env) {
	w := dmSetup(t, e)
	if w == nil {
		return
	}
	x := newWire(t, e)
	a, b, _ := x.pair(verbs.QPTypeRC, x.opts())
	bd := b.s.ctx.(verbs.DMAllocator)
	dm, err := bd.AllocDM(verbs.AllocDMAttr{Length: 64})
	if err != nil {
		t.Fatalf("ibv_alloc_dm(64) on the peer: %v", err)
	}
	t.Cleanup(func() { _ = dm.Free() })
	mr := w.reg(b.s.pd, dm, 0, 64, accessZeroBased|accessLocalWrite)
	b.recv("a receive into the DM MR", verbs.RecvWR{WRID: 9, SGList: []verbs.SGE{{Addr: 16, Length: 32, LKey: mr.LKey()}}})
	copy(a.s.buf, "land on chip")
	a.post("a SEND", sendWR(1, verbs.WRSend, a.s.sge(0, 12)))
	x.await(a.scq, 1, "SEND into device memory: sender")
	if c := x.await(b.rcq, 1, "SEND into device memory: receiver"); len(c) == 1 && b.want("the receive into the DM MR", c[0], 9, verbs.WCSuccess) {
		got := make([]byte, 12)
		e.WantOK("ibv_memcpy_from_dm", dm.MemcpyFrom(got, 16))
		if string(got) != "land on chip" {
			t.Errorf("the receive at DM MR address 16 left %q at DM offset 16", got)
		}
	}
	a.recvAt("a receive", 5, 1000, 64)
	b.post("a SEND from the DM MR", sendWR(2, verbs.WRSend, verbs.SGE{Addr: 16, Length: 12, LKey: mr.LKey()}))
	x.await(b.scq, 1, "SEND from device memory: sender")
	if c := x.await(a.rcq, 1, "SEND from device memory: receiver"); len(c) == 1 && a.want("the SEND gathered from the DM MR", c[0], 5, verbs.WCSuccess) {
		if got := string(a.s.buf[1000:1012]); got != "land on chip" {
			t.Errorf("the SEND gathered from DM MR address 16 delivered %q", got)
		}
	}
}
