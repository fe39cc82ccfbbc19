package fuzz

import (
	"bytes"
	"errors"
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// FuzzDM drives ibv_alloc_dm, ibv_free_dm, ibv_memcpy_to_dm,
// ibv_memcpy_from_dm, ibv_reg_dm_mr and ibv_dereg_mr in arbitrary order
// with arbitrary lengths, alignments, comp_masks, offsets and access flags
// (DM-01..06), under both profiles. Each operation takes four bytes: op, a,
// b, c. A shadow of the device's page map and of every DM's bytes says what
// each call must do: an allocation succeeds exactly when its arguments are
// legal and the first fit finds a run of free pages (ENOMEM otherwise), a
// copy exactly when it is in range and 4-byte aligned (EFAULT, then
// EINVAL), and then moves the shadow's bytes; a free exactly when no MR is
// on the DM (EBUSY); a registration exactly when ZERO_BASED is set, the
// other flags are allowed and the range fits. Under rxe every allocation
// is EOPNOTSUPP. Everything can be torn down at the end.
func FuzzDM(f *testing.F) {
	f.Add(false, []byte{0, 100, 0, 0, 2, 0, 1, 8, 3, 0, 1, 8, 4, 0, 0, 25, 1, 0, 0, 0, 5, 0, 0, 0, 1, 0, 0, 0})
	f.Add(false, []byte{0, 255, 255, 0, 0, 255, 255, 0, 0, 255, 255, 0, 0, 255, 255, 0, 0, 1, 0, 0, 1, 1, 0, 0, 0, 3, 0, 0})
	f.Add(false, []byte{0, 64, 0, 0x10, 0, 64, 0, 0x21, 2, 0, 3, 4, 2, 0, 30, 1, 4, 0, 7, 40})
	f.Add(true, []byte{0, 100, 0, 0, 2, 0, 1, 8})
	f.Fuzz(func(t *testing.T, rxe bool, data []byte) {
		p := sim.DefaultProfile()
		if rxe {
			p = sim.RXEProfile()
		}
		fab, err := sim.NewFabric(sim.Config{Profile: p})
		if err != nil {
			t.Fatal(err)
		}
		c, _ := fab.Devices()[0].Open()
		pd, _ := c.AllocPD()
		max := fab.Devices()[0].Attr().MaxDMSize
		if rxe != (max == 0) {
			t.Fatalf("max_dm_size %d under rxe=%v (DM-02)", max, rxe)
		}
		used := make([]bool, max/4096)
		type shadowDM struct {
			dm           *sim.DM
			mem          []byte
			first, pages int
			mrs          []*sim.MR
		}
		var dms []*shadowDM
		want := func(what string, err error, errno syscall.Errno) {
			t.Helper()
			if errno == 0 && err != nil || errno != 0 && !errors.Is(err, errno) {
				t.Fatalf("%s: %v, want errno %d", what, err, errno)
			}
		}
		for i := 0; i+3 < len(data) && i < 4*64; i += 4 {
			op, a, b, cc := data[i]%6, data[i+1], data[i+2], data[i+3]
			switch op {
			case 0: // alloc: length a*b*4+cc&3 bytes-ish, log_align cc>>4, comp_mask bit 3 of cc
				length := uint64(a)*uint64(b)*4 + uint64(cc&3)
				if a == 255 && b == 255 {
					length = max + uint64(cc&1)
				}
				attr := verbs.AllocDMAttr{Length: length, LogAlignReq: uint32(cc >> 4), CompMask: uint32(cc>>3) & 1}
				dm, err := c.AllocDM(attr)
				var errno syscall.Errno
				first, pages := -1, 0
				switch {
				case rxe:
					errno = syscall.EOPNOTSUPP
				case attr.CompMask != 0 || length == 0 || length > max || attr.LogAlignReq > 12:
					errno = syscall.EINVAL
				default:
					pages = int(((length+63)&^63 + 4095) / 4096)
					run := 0
					for j, u := range used {
						if u {
							run = 0
						} else if run++; run == pages {
							first = j - pages + 1
							break
						}
					}
					if first < 0 {
						errno = syscall.ENOMEM
					}
				}
				want("alloc_dm", err, errno)
				if err == nil {
					for j := first; j < first+pages; j++ {
						used[j] = true
					}
					dms = append(dms, &shadowDM{dm: dm, mem: make([]byte, length), first: first, pages: pages})
				}
			case 1: // free DM a
				if len(dms) == 0 {
					continue
				}
				k := int(a) % len(dms)
				d := dms[k]
				var errno syscall.Errno
				if len(d.mrs) > 0 {
					errno = syscall.EBUSY
				}
				want("free_dm", d.dm.Free(), errno)
				if errno == 0 {
					for j := d.first; j < d.first+d.pages; j++ {
						used[j] = false
					}
					dms = append(dms[:k], dms[k+1:]...)
				}
			case 2, 3: // copy to (2) or from (3) DM a: offset b, length cc
				if len(dms) == 0 {
					continue
				}
				d := dms[int(a)%len(dms)]
				off, n := uint64(b), uint64(cc)
				var errno syscall.Errno
				switch {
				case off > uint64(len(d.mem)) || n > uint64(len(d.mem))-off:
					errno = syscall.EFAULT
				case off%4 != 0 || n%4 != 0:
					errno = syscall.EINVAL
				}
				buf := bytes.Repeat([]byte{byte(i)}, int(n))
				if op == 2 {
					want("memcpy_to_dm", d.dm.MemcpyTo(off, buf), errno)
					if errno == 0 {
						copy(d.mem[off:], buf)
					}
				} else {
					want("memcpy_from_dm", d.dm.MemcpyFrom(buf, off), errno)
					if errno == 0 && !bytes.Equal(buf, d.mem[off:off+n]) {
						t.Fatalf("memcpy_from_dm(%d, %d) read %x, want %x", off, n, buf, d.mem[off:off+n])
					}
				}
			case 4: // reg_dm_mr on DM a: offset b, length cc, access from the low bits of a
				if len(dms) == 0 {
					continue
				}
				d := dms[int(a)%len(dms)]
				access := verbs.AccessFlags(a>>3) & (verbs.AccessLocalWrite | verbs.AccessRemoteWrite | verbs.AccessRemoteRead | verbs.AccessRemoteAtomic | verbs.AccessMWBind | verbs.AccessZeroBased)
				off, n := uint64(b), uint64(cc)
				var errno syscall.Errno
				switch {
				case access&verbs.AccessZeroBased == 0, access&verbs.AccessMWBind != 0,
					off > uint64(len(d.mem)) || n > uint64(len(d.mem))-off,
					access&(verbs.AccessRemoteWrite|verbs.AccessRemoteAtomic) != 0 && access&verbs.AccessLocalWrite == 0:
					errno = syscall.EINVAL
				}
				mr, err := pd.RegDMMR(d.dm, off, n, access)
				want("reg_dm_mr", err, errno)
				if err == nil {
					if mr.Addr() != 0 || mr.Length() != n || mr.DM() != d.dm {
						t.Fatalf("reg_dm_mr(%d, %d): addr %#x length %d", off, n, mr.Addr(), mr.Length())
					}
					d.mrs = append(d.mrs, mr)
				}
			case 5: // dereg the newest MR of DM a
				if len(dms) == 0 {
					continue
				}
				d := dms[int(a)%len(dms)]
				if len(d.mrs) == 0 {
					continue
				}
				want("dereg_mr", d.mrs[len(d.mrs)-1].Dereg(), 0)
				d.mrs = d.mrs[:len(d.mrs)-1]
			}
		}
		for _, d := range dms {
			for _, mr := range d.mrs {
				want("dereg_mr at the end", mr.Dereg(), 0)
			}
			want("free_dm at the end", d.dm.Free(), 0)
		}
		want("dealloc_pd", pd.Dealloc(), 0)
		want("close_device", c.Close(), 0)
	})
}
