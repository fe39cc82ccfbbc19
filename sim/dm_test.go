package sim_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/simtest"
	"github.com/verbsim/verbsim/verbs"
)

func dmContext(t *testing.T, p sim.Profile) (*sim.Fabric, *sim.Context) {
	t.Helper()
	f, err := sim.NewFabric(sim.Config{Profile: p})
	if err != nil {
		t.Fatal(err)
	}
	c, err := f.Devices()[0].Open()
	if err != nil {
		t.Fatal(err)
	}
	return f, c
}

func TestAllocDMArguments_DM01(t *testing.T) {
	_, c := dmContext(t, sim.DefaultProfile())
	ax, err := c.QueryDeviceEx(0)
	if err != nil || ax.MaxDMSize != 128<<10 || ax.Orig.MaxDMSize != ax.MaxDMSize {
		t.Fatalf("max_dm_size %d (orig %d), %v; want 128 KiB", ax.MaxDMSize, ax.Orig.MaxDMSize, err)
	}
	for _, tc := range []struct {
		attr verbs.AllocDMAttr
		want error
	}{
		{verbs.AllocDMAttr{}, syscall.EINVAL},
		{verbs.AllocDMAttr{Length: ax.MaxDMSize + 1}, syscall.EINVAL},
		{verbs.AllocDMAttr{Length: 64, CompMask: 1}, syscall.EINVAL},
		{verbs.AllocDMAttr{Length: 64, LogAlignReq: 13}, syscall.EINVAL},
		{verbs.AllocDMAttr{Length: 4, LogAlignReq: 12}, nil},
		{verbs.AllocDMAttr{Length: 100, LogAlignReq: 6}, nil},
	} {
		dm, err := c.AllocDM(tc.attr)
		if !errors.Is(err, tc.want) || (err == nil) != (tc.want == nil) {
			t.Errorf("AllocDM(%+v): %v, want %v", tc.attr, err, tc.want)
		}
		if err == nil {
			if dm.Length() != tc.attr.Length || dm.Context() != c {
				t.Errorf("AllocDM(%+v): length %d", tc.attr, dm.Length())
			}
			if err := dm.Free(); err != nil {
				t.Error(err)
			}
		}
	}
	if err := c.Close(); err != nil {
		t.Error(err)
	}
}

func TestNoDM_DM02(t *testing.T) {
	_, c := dmContext(t, sim.RXEProfile())
	ax, err := c.QueryDeviceEx(0)
	if err != nil || ax.MaxDMSize != 0 {
		t.Fatalf("max_dm_size %d, %v; want 0", ax.MaxDMSize, err)
	}
	if dm, err := c.AllocDM(verbs.AllocDMAttr{Length: 64}); !errors.Is(err, syscall.EOPNOTSUPP) || dm != nil {
		t.Errorf("AllocDM under rxe: %v, %v; want EOPNOTSUPP", dm, err)
	}
}

func TestDMBudget_DM03(t *testing.T) {
	f, c := dmContext(t, sim.DefaultProfile())
	c2, err := f.Devices()[0].Open()
	if err != nil {
		t.Fatal(err)
	}
	// 32 pages: a 4 KiB+1 request takes two, a 64-byte one takes one.
	var dms []*sim.DM
	for i := range 16 {
		ctx := c
		if i%2 == 1 {
			ctx = c2 // the contexts share the device's memory
		}
		dm, err := ctx.AllocDM(verbs.AllocDMAttr{Length: 4097})
		if err != nil {
			t.Fatalf("allocation %d: %v", i, err)
		}
		dms = append(dms, dm)
	}
	if _, err := c.AllocDM(verbs.AllocDMAttr{Length: 4}); !errors.Is(err, syscall.ENOMEM) {
		t.Fatalf("AllocDM with every page taken: %v, want ENOMEM", err)
	}
	// Freeing two neighbours gives a run of four pages back.
	for _, dm := range dms[4:6] {
		if err := dm.Free(); err != nil {
			t.Fatal(err)
		}
	}
	big, err := c.AllocDM(verbs.AllocDMAttr{Length: 4 * 4096})
	if err != nil {
		t.Fatalf("AllocDM into the freed run: %v", err)
	}
	if _, err := c.AllocDM(verbs.AllocDMAttr{Length: 4}); !errors.Is(err, syscall.ENOMEM) {
		t.Fatalf("AllocDM with every page taken again: %v, want ENOMEM", err)
	}
	for _, dm := range append(append(dms[:4], dms[6:]...), big) {
		if err := dm.Free(); err != nil {
			t.Fatal(err)
		}
	}
	if dm, err := c.AllocDM(verbs.AllocDMAttr{Length: 128 << 10}); err != nil {
		t.Errorf("AllocDM of the whole budget after freeing everything: %v", err)
	} else if err := dm.Free(); err != nil {
		t.Error(err)
	}
}

func TestDMCopy_DM04(t *testing.T) {
	_, c := dmContext(t, sim.DefaultProfile())
	dm, err := c.AllocDM(verbs.AllocDMAttr{Length: 100})
	if err != nil {
		t.Fatal(err)
	}
	zero := make([]byte, 100)
	got := make([]byte, 100)
	if err := dm.MemcpyFrom(got, 0); err != nil || !bytes.Equal(got, zero) {
		t.Fatalf("new memory: %x, %v; want zeros", got, err)
	}
	if err := dm.MemcpyTo(96, []byte("abcd")); err != nil {
		t.Fatal(err)
	}
	if err := dm.MemcpyTo(8, []byte("12345678")); err != nil {
		t.Fatal(err)
	}
	if err := dm.MemcpyFrom(got[:12], 4); err != nil || string(got[4:12]) != "12345678" {
		t.Fatalf("read back %q, %v", got[:12], err)
	}
	for _, tc := range []struct {
		off  uint64
		n    int
		want error
	}{
		{3, 4, syscall.EINVAL}, {4, 3, syscall.EINVAL}, {104, 4, syscall.EFAULT}, {0, 104, syscall.EFAULT},
		{97, 4, syscall.EFAULT}, // out of range and unaligned: the range is checked first
		{100, 0, nil}, {0, 0, nil},
	} {
		if err := dm.MemcpyTo(tc.off, make([]byte, tc.n)); !errors.Is(err, tc.want) || (err == nil) != (tc.want == nil) {
			t.Errorf("MemcpyTo(%d, %d bytes): %v, want %v", tc.off, tc.n, err, tc.want)
		}
		if err := dm.MemcpyFrom(make([]byte, tc.n), tc.off); !errors.Is(err, tc.want) || (err == nil) != (tc.want == nil) {
			t.Errorf("MemcpyFrom(%d bytes, %d): %v, want %v", tc.n, tc.off, err, tc.want)
		}
	}
	if err := dm.MemcpyFrom(got[:8], 8); err != nil || string(got[:8]) != "12345678" {
		t.Errorf("failed copies changed the memory: %q, %v", got[:8], err)
	}
	if err := dm.Free(); err != nil {
		t.Fatal(err)
	}
	if err := dm.MemcpyTo(0, make([]byte, 4)); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("MemcpyTo after Free: %v, want EINVAL", err)
	}
}

func TestDMFreeBusy_DM05(t *testing.T) {
	_, c := dmContext(t, sim.DefaultProfile())
	pd, _ := c.AllocPD()
	dm, err := c.AllocDM(verbs.AllocDMAttr{Length: 256})
	if err != nil {
		t.Fatal(err)
	}
	mr, err := pd.RegDMMR(dm, 0, 128, verbs.AccessZeroBased|verbs.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	if err := dm.Free(); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("Free with an MR on the DM: %v, want EBUSY", err)
	}
	if err := pd.Dealloc(); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("Dealloc of the DM MR's PD: %v, want EBUSY", err)
	}
	if err := mr.Dereg(); err != nil {
		t.Fatal(err)
	}
	if err := pd.Dealloc(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("Close with a live DM: %v, want EBUSY", err)
	}
	if err := dm.Free(); err != nil {
		t.Fatalf("Free after the MR's Dereg: %v", err)
	}
	if err := dm.Free(); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("second Free: %v, want EINVAL", err)
	}
	if err := c.Close(); err != nil {
		t.Error(err)
	}
}

func TestRegDMMR_DM06(t *testing.T) {
	f, c := dmContext(t, sim.DefaultProfile())
	pd, _ := c.AllocPD()
	dm, err := c.AllocDM(verbs.AllocDMAttr{Length: 100})
	if err != nil {
		t.Fatal(err)
	}
	zb := verbs.AccessZeroBased
	for _, tc := range []struct {
		off, n uint64
		access verbs.AccessFlags
		want   error
	}{
		{0, 100, verbs.AccessLocalWrite, syscall.EINVAL},
		{0, 104, zb, syscall.EINVAL},
		{101, 0, zb, syscall.EINVAL},
		{4, 97, zb, syscall.EINVAL},
		{0, 8, zb | verbs.AccessMWBind | verbs.AccessLocalWrite, syscall.EINVAL},
		{0, 8, zb | verbs.AccessRemoteAtomic, syscall.EINVAL}, // MR-01
		{0, 0, zb | verbs.AccessLocalWrite, nil},
		{100, 0, zb, nil},
		{4, 96, zb | verbs.AccessLocalWrite | verbs.AccessRemoteWrite | verbs.AccessRemoteRead | verbs.AccessRemoteAtomic | verbs.AccessRelaxedOrdering, nil},
	} {
		mr, err := pd.RegDMMR(dm, tc.off, tc.n, tc.access)
		if !errors.Is(err, tc.want) || (err == nil) != (tc.want == nil) {
			t.Errorf("RegDMMR(%d, %d, %v): %v, want %v", tc.off, tc.n, tc.access, err, tc.want)
		}
		if err != nil {
			continue
		}
		if mr.Addr() != 0 || mr.IOVA() != 0 || mr.Length() != tc.n || mr.DM() != dm || mr.LKey() == mr.RKey() {
			t.Errorf("RegDMMR(%d, %d): addr %#x iova %#x length %d", tc.off, tc.n, mr.Addr(), mr.IOVA(), mr.Length())
		}
		if err := mr.Rereg(verbs.ReregChangeAccess, nil, nil, verbs.AccessLocalWrite); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("Rereg of a DM MR: %v, want EINVAL", err)
		}
		if err := mr.Dereg(); err != nil {
			t.Error(err)
		}
	}
	c2, _ := f.Devices()[0].Open()
	pd2, _ := c2.AllocPD()
	if _, err := pd2.RegDMMR(dm, 0, 8, zb); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("RegDMMR of another context's DM: %v, want EINVAL", err)
	}
	if err := dm.Free(); err != nil {
		t.Error(err)
	}
}

// A DM MR carries traffic like any MR: the target of WRITE, READ and
// atomics on its rkey, addressed from 0, and a local SGE of a SEND.
func TestDMMRTraffic_DM07(t *testing.T) {
	a, b := simtest.RC(t, simtest.PairOptions{})
	dm, err := b.Ctx.AllocDM(verbs.AllocDMAttr{Length: 256})
	if err != nil {
		t.Fatal(err)
	}
	mr, err := b.PD.RegDMMR(dm, 64, 128, verbs.AccessZeroBased|verbs.AccessLocalWrite|verbs.AccessRemoteWrite|verbs.AccessRemoteRead|verbs.AccessRemoteAtomic)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := mr.Dereg(); err != nil {
			t.Error(err)
		}
		if err := dm.Free(); err != nil {
			t.Error(err)
		}
	})
	copy(a.Buf, "into device memory")
	a.Post(verbs.SendWR{WRID: 1, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.SGE(0, 20)},
		RemoteAddr: 8, RKey: mr.RKey()})
	if w := a.Await(1); w[0].Status != verbs.WCSuccess {
		t.Fatalf("WRITE to the DM MR: %v", w[0].Status)
	}
	got := make([]byte, 20)
	if err := dm.MemcpyFrom(got, 72); err != nil || string(got[:18]) != "into device memory" {
		t.Fatalf("device memory after the WRITE: %q, %v", got, err)
	}
	if err := dm.MemcpyTo(128, []byte("from the device!")); err != nil {
		t.Fatal(err)
	}
	a.Post(verbs.SendWR{WRID: 2, Opcode: verbs.WRRDMARead, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.SGE(100, 16)},
		RemoteAddr: 64, RKey: mr.RKey()})
	if w := a.Await(1); w[0].Status != verbs.WCSuccess || string(a.Buf[100:116]) != "from the device!" {
		t.Fatalf("READ of the DM MR: %v %q", w[0].Status, a.Buf[100:116])
	}
	var eight [8]byte
	binary.LittleEndian.PutUint64(eight[:], 40)
	if err := dm.MemcpyTo(64+120, eight[:]); err != nil {
		t.Fatal(err)
	}
	a.Post(verbs.SendWR{WRID: 3, Opcode: verbs.WRAtomicFetchAndAdd, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.SGE(200, 8)},
		RemoteAddr: 120, RKey: mr.RKey(), CompareAdd: 2})
	if w := a.Await(1); w[0].Status != verbs.WCSuccess || binary.LittleEndian.Uint64(a.Buf[200:]) != 40 {
		t.Fatalf("FETCH_AND_ADD on the DM MR: %v, fetched %d", w[0].Status, binary.LittleEndian.Uint64(a.Buf[200:]))
	}
	if err := dm.MemcpyFrom(eight[:], 64+120); err != nil || binary.LittleEndian.Uint64(eight[:]) != 42 {
		t.Fatalf("device memory after the atomic: %d, %v", binary.LittleEndian.Uint64(eight[:]), err)
	}
	// Out of the MR's 128 bytes: a remote access error.
	a.Post(verbs.SendWR{WRID: 4, Opcode: verbs.WRRDMARead, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.SGE(0, 8)},
		RemoteAddr: 124, RKey: mr.RKey()})
	if w := a.Await(1); w[0].Status != verbs.WCRemAccessErr {
		t.Fatalf("READ past the DM MR: %v, want REM_ACCESS_ERR", w[0].Status)
	}
}

// The DM MR as a local SGE: a SEND gathers from device memory and a receive
// scatters into it.
func TestDMMRLocal_DM07(t *testing.T) {
	a, b := simtest.RC(t, simtest.PairOptions{})
	dm, err := b.Ctx.AllocDM(verbs.AllocDMAttr{Length: 64})
	if err != nil {
		t.Fatal(err)
	}
	mr, err := b.PD.RegDMMR(dm, 0, 64, verbs.AccessZeroBased|verbs.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := mr.Dereg(); err != nil {
			t.Error(err)
		}
		if err := dm.Free(); err != nil {
			t.Error(err)
		}
	})
	if _, err := b.QP.PostRecv([]verbs.RecvWR{{WRID: 9, SGList: []verbs.SGE{{Addr: 16, Length: 32, LKey: mr.LKey()}}}}); err != nil {
		t.Fatal(err)
	}
	a.Send(1, []byte("land on chip"))
	if w := b.Await(1); w[0].Status != verbs.WCSuccess || w[0].ByteLen != 12 {
		t.Fatalf("receive into the DM MR: %v %d", w[0].Status, w[0].ByteLen)
	}
	got := make([]byte, 12)
	if err := dm.MemcpyFrom(got, 16); err != nil || string(got) != "land on chip" {
		t.Fatalf("device memory after the receive: %q, %v", got, err)
	}
	a.PostRecv(5, 0, 64)
	b.Post(verbs.SendWR{WRID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{{Addr: 16, Length: 12, LKey: mr.LKey()}}})
	b.Await(1)
	if w := a.Await(2); w[1].Status != verbs.WCSuccess || string(a.Received(w[1])) != "land on chip" {
		t.Fatalf("SEND from the DM MR: %v %q", w[1].Status, a.Received(w[1]))
	}
}
