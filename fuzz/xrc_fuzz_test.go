package fuzz

import (
	"errors"
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// FuzzXRC drives ibv_open_xrcd, ibv_close_xrcd, ibv_create_srq_ex,
// ibv_get_srq_num and ibv_destroy_srq in arbitrary order with arbitrary
// comp_masks, fds, srq_types and capacities (XRC-01..05), under both
// profiles. Each operation takes three bytes: op, a, b. Invariants: no
// panic, only the documented errnos; an open succeeds exactly with both
// comp_mask bits, no bit above them and fd -1; a close succeeds exactly
// when no XRC SRQ or XRC_RECV QP is left in the domain; live XRC SRQs have distinct
// non-zero numbers; everything can be torn down at the end.
func FuzzXRC(f *testing.F) {
	f.Add(false, []byte{0, 3, 0xff, 2, 0x0f, 0x11, 3, 0, 0, 1, 0, 0, 4, 0, 0, 1, 0, 0})
	f.Add(true, []byte{0, 3, 0xff, 2, 0x03, 0x01, 2, 0x0f, 0x21})
	f.Add(false, []byte{0, 7, 0xff, 0, 3, 0, 2, 0x1f, 0x11, 2, 0x0f, 0x12})
	f.Add(false, []byte{0, 3, 0xff, 5, 0, 0, 5, 0, 1, 1, 0, 0, 6, 0, 0, 1, 0, 0})
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
		cq, _ := c.CreateCQ(4, nil, nil, 0)
		var xrcds []*sim.XRCD
		inDomain := map[*sim.XRCD]int{}
		var srqs []*sim.SRQ
		domainOf := map[*sim.SRQ]*sim.XRCD{}
		var tgts []*sim.QP // XRC_RECV QPs; each also counts in inDomain (XRC-06)
		okErr := func(what string, err error, allowed ...syscall.Errno) {
			if err == nil {
				return
			}
			for _, e := range allowed {
				if errors.Is(err, e) {
					return
				}
			}
			t.Fatalf("%s: unexpected %v", what, err)
		}
		for i := 0; i+2 < len(data) && i < 3*64; i += 3 {
			op, a, b := data[i]%7, data[i+1], data[i+2]
			switch op {
			case 0: // open: a = comp_mask bits (a&7, bit 3 -> 1<<31), b = fd (0xff -> -1)
				mask := verbs.XRCDInitMask(a & 7)
				if a&8 != 0 {
					mask |= 1 << 31
				}
				fd := int(int8(b))
				x, err := c.OpenXRCD(verbs.XRCDInitAttr{CompMask: mask, FD: fd, OFlags: int(a >> 4)})
				want := !rxe && mask == verbs.XRCDInitFD|verbs.XRCDInitOFlags && fd == -1
				if (err == nil) != want {
					t.Fatalf("OpenXRCD(mask %#x, fd %d) = %v, want success %v", uint32(mask), fd, err, want)
				}
				okErr("OpenXRCD", err, syscall.EINVAL, syscall.EOPNOTSUPP, syscall.EBADF)
				if x != nil {
					xrcds = append(xrcds, x)
				}
			case 1: // close domain a
				if len(xrcds) == 0 {
					continue
				}
				x := xrcds[int(a)%len(xrcds)]
				err := x.Close()
				if x.Closed() && err != nil {
					okErr("Close twice", err, syscall.EINVAL)
					continue
				}
				if (err == nil) != (inDomain[x] == 0) {
					t.Fatalf("Close with %d SRQs in the domain: %v", inDomain[x], err)
				}
				okErr("Close", err, syscall.EBUSY, syscall.EINVAL)
			case 2: // create: a = comp_mask bits (a&0x3f), b: type (b&3), domain (b>>2&7), max_wr (b>>5: 0..7)
				attr := sim.SRQInitAttrEx{Attr: verbs.SRQAttr{MaxWR: uint32(b >> 5), MaxSGE: 1},
					CompMask: verbs.SRQInitMask(a & 0x3f), Type: verbs.SRQType(b & 3), PD: pd, CQ: cq}
				if len(xrcds) > 0 {
					attr.XRCD = xrcds[int(b>>2&7)%len(xrcds)]
				}
				s, err := c.CreateSRQEx(attr)
				okErr("CreateSRQEx", err, syscall.EINVAL, syscall.EOPNOTSUPP)
				if s == nil {
					continue
				}
				srqs = append(srqs, s)
				if s.XRC() {
					domainOf[s] = attr.XRCD
					inDomain[attr.XRCD]++
				}
			case 3: // destroy SRQ a
				if len(srqs) == 0 {
					continue
				}
				k := int(a) % len(srqs)
				s := srqs[k]
				if err := s.Destroy(); err != nil {
					t.Fatalf("Destroy: %v", err)
				}
				srqs = append(srqs[:k], srqs[k+1:]...)
				if x := domainOf[s]; x != nil {
					inDomain[x]--
				}
			case 5: // create an XRC_RECV QP in domain a; b&1: without the XRCD bit
				if len(xrcds) == 0 {
					continue
				}
				x := xrcds[int(a)%len(xrcds)]
				mask := sim.QPInitXRCD
				if b&1 != 0 {
					mask = sim.QPInitPD
				}
				q, err := x.CreateQP(sim.QPInitAttr{Type: verbs.QPTypeXRCRecv, CompMask: mask})
				if want := !x.Closed() && b&1 == 0; (err == nil) != want {
					t.Fatalf("XRCD.CreateQP(mask %#x, closed %v) = %v, want success %v", uint32(mask), x.Closed(), err, want)
				}
				okErr("XRCD.CreateQP", err, syscall.EINVAL)
				if q != nil {
					tgts = append(tgts, q)
					inDomain[x]++
				}
			case 6: // destroy XRC_RECV QP a
				if len(tgts) == 0 {
					continue
				}
				k := int(a) % len(tgts)
				q := tgts[k]
				x := q.XRCD()
				if err := q.Destroy(); err != nil {
					t.Fatalf("Destroy: %v", err)
				}
				tgts = append(tgts[:k], tgts[k+1:]...)
				inDomain[x]--
			case 4: // get the numbers of every live SRQ
				seen := map[uint32]bool{}
				for _, s := range srqs {
					n, err := s.GetSRQNum()
					if !s.XRC() {
						okErr("GetSRQNum of a basic SRQ", err, syscall.EOPNOTSUPP)
						continue
					}
					if err != nil || n == 0 || seen[n] {
						t.Fatalf("GetSRQNum = %#x, %v (seen %v)", n, err, seen)
					}
					seen[n] = true
				}
			}
		}
		for _, s := range srqs {
			if err := s.Destroy(); err != nil {
				t.Fatal(err)
			}
		}
		for _, q := range tgts {
			if err := q.Destroy(); err != nil {
				t.Fatal(err)
			}
		}
		for _, x := range xrcds {
			if err := x.Close(); err != nil && !x.Closed() {
				t.Fatal(err)
			}
		}
		if err := cq.Destroy(); err != nil {
			t.Fatal(err)
		}
		if err := pd.Dealloc(); err != nil {
			t.Fatal(err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	})
}
