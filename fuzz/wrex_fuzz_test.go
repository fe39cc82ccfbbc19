package fuzz

import (
	"errors"
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// FuzzWRBuilder drives the work request builder of an RC QP (ibv_wr_*)
// with call sequences from the fuzzer: starts, completes, aborts, every
// builder and setter with fuzzed arguments, on a QP whose send_ops_flags
// come from the first byte. A shadow of the batch predicts what it can:
// WRComplete without WRStart is EINVAL, the first deferred misuse
// (operation outside send_ops_flags: EOPNOTSUPP; setter before a builder
// or WRStart twice: EINVAL) is the error returned (QPX-02, QPX-05); and it
// checks that a batch is posted whole or not at all (QPX-04): a success
// posts exactly the requests built, a failure none. Every error must be a
// syscall.Errno. Fuzz it with
//
//	go test -run='^$' -fuzz=FuzzWRBuilder -fuzztime=60s ./fuzz/
func FuzzWRBuilder(f *testing.F) {
	f.Add([]byte{0xff, 0, 3, 10, 1}, false)
	f.Add([]byte{0x04, 0, 3, 10, 5, 1, 1, 0, 9, 3, 1}, true)
	f.Add([]byte{0xff, 0, 0, 1, 0, 10, 3, 2, 1}, false)
	f.Add([]byte{0xff, 0, 3, 200, 11, 40, 4, 12, 3, 1, 2}, true)
	f.Fuzz(func(t *testing.T, data []byte, rxe bool) {
		if len(data) == 0 {
			return
		}
		p := sim.DefaultProfile()
		if rxe {
			p = sim.RXEProfile()
		}
		ops := verbs.QPSendOps(data[0]) | verbs.QPSendOps(data[0]&3)<<8 | verbs.QPSendOps(data[0]&0x10)<<8 // bits 0..9 and 12 (ATOMIC_WRITE)
		ops &= verbs.SupportedSendOps(verbs.QPTypeRC, p.Readings)
		data = data[1:]
		fab, err := sim.NewFabric(sim.Config{Profile: p, Devices: []sim.DeviceConfig{{Name: "a"}, {Name: "b"}}})
		if err != nil {
			t.Fatal(err)
		}
		defer fab.Close()
		type end struct {
			q  *sim.QP
			mr *sim.MR
		}
		mk := func(name string, ex bool) end {
			d, _ := fab.Device(name)
			c, _ := d.Open()
			pd, _ := c.AllocPD()
			cq, _ := c.CreateCQ(256, nil, nil, 0)
			attr := sim.QPInitAttr{SendCQ: cq, RecvCQ: cq, Type: verbs.QPTypeRC,
				Cap: verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 64, MaxSendSGE: 2, MaxRecvSGE: 1, MaxInlineData: 16}}
			if ex {
				attr.CompMask, attr.SendOpsFlags = sim.QPInitSendOpsFlags, ops
			}
			q, err := pd.CreateQP(attr)
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			mr, _ := pd.RegMR(make([]byte, 4096), verbs.AccessLocalWrite|verbs.AccessRemoteWrite|verbs.AccessRemoteRead|verbs.AccessRemoteAtomic)
			return end{q, mr}
		}
		a, b := mk("a", true), mk("b", false)
		if err := sim.Connect(a.q, b.q, sim.ConnectOptions{}); err != nil {
			t.Fatal(err)
		}
		next := reader(&data)
		var (
			open  bool
			first syscall.Errno // the first misuse the shadow predicts
			n     int           // requests built in the open batch
			cur   bool          // the batch has a request for setters
		)
		build := func(bit verbs.QPSendOps, call func()) {
			call()
			if !open || first != 0 {
				return
			}
			if ops&bit == 0 {
				first = syscall.EOPNOTSUPP
				return
			}
			n, cur = n+1, true
		}
		set := func(call func()) {
			call()
			if open && first == 0 && !cur {
				first = syscall.EINVAL
			}
		}
		rkey, raddr := b.mr.RKey(), b.mr.Addr()
		for steps := 0; len(data) > 0 && steps < MaxOps; steps++ {
			op, x := next(), next()
			switch op % 19 {
			case 0:
				a.q.WRStart()
				if open {
					if first == 0 {
						first = syscall.EINVAL
					}
				} else {
					open, first, n, cur = true, 0, 0, false
				}
			case 1:
				b.q.PostRecv([]verbs.RecvWR{{SGList: []verbs.SGE{{Addr: b.mr.Addr(), Length: 4096, LKey: b.mr.LKey()}}}})
				before := a.q.Stats().SendPosted
				err := a.q.WRComplete()
				posted := int(a.q.Stats().SendPosted - before)
				var e syscall.Errno
				if err != nil && !errors.As(err, &e) {
					t.Fatalf("WRComplete: %v is not a syscall.Errno", err)
				}
				switch {
				case !open && !errors.Is(err, syscall.EINVAL):
					t.Fatalf("WRComplete without WRStart: %v, want EINVAL (QPX-05)", err)
				case open && first != 0 && verr.Errno(err) != first:
					t.Fatalf("WRComplete: %v, want %v", err, first)
				case err == nil && posted != n:
					t.Fatalf("WRComplete succeeded and posted %d of %d requests (QPX-04)", posted, n)
				case err != nil && posted != 0:
					t.Fatalf("WRComplete failed (%v) and posted %d requests (QPX-04)", err, posted)
				}
				open = false
			case 2:
				before := a.q.Stats().SendPosted
				a.q.WRAbort()
				if a.q.Stats().SendPosted != before {
					t.Fatal("WRAbort posted requests")
				}
				open = false
			case 3:
				build(verbs.QPExWithSend, a.q.WRSend)
			case 4:
				build(verbs.QPExWithSendImm, func() { a.q.WRSendImm(uint32(x)) })
			case 5:
				build(verbs.QPExWithRDMAWrite, func() { a.q.WRRDMAWrite(rkey, raddr+uint64(x)*16) })
			case 6:
				build(verbs.QPExWithRDMAWriteImm, func() { a.q.WRRDMAWriteImm(rkey, raddr+uint64(x)*16, 7) })
			case 7:
				build(verbs.QPExWithRDMARead, func() { a.q.WRRDMARead(rkey, raddr+uint64(x)*16) })
			case 8:
				build(verbs.QPExWithAtomicCmpSwp, func() { a.q.WRAtomicCmpSwp(rkey, raddr+uint64(x)*8, 1, 2) })
			case 9:
				build(verbs.QPExWithAtomicFetchAdd, func() { a.q.WRAtomicFetchAdd(rkey, raddr+uint64(x)*8, 1) })
			case 10:
				build(verbs.QPExWithSendInv, func() { a.q.WRSendInv(uint32(x)) })
			case 11:
				build(verbs.QPExWithLocalInv, func() { a.q.WRLocalInv(uint32(x)) })
			case 12:
				set(func() { a.q.WRSetSGE(a.mr.LKey(), a.mr.Addr()+uint64(x), uint32(x%40)) })
			case 13:
				l := make([]verbs.SGE, x%4)
				for i := range l {
					l[i] = verbs.SGE{Addr: a.mr.Addr() + uint64(i*8), Length: 8, LKey: a.mr.LKey()}
				}
				set(func() { a.q.WRSetSGEList(l) })
			case 14:
				set(func() { a.q.WRSetInlineData(make([]byte, x%24)) })
			case 15:
				set(func() { a.q.WRSetInlineDataList([][]byte{make([]byte, x%12), nil, make([]byte, x%9)}) })
			case 16:
				set(func() { a.q.WRSetUDAddr(nil, uint32(x), 0) })
			case 17:
				a.q.SetWRID(uint64(x))
				a.q.SetWRFlags(verbs.SendFlags(x) & (verbs.SendSignaled | verbs.SendSolicited | verbs.SendFence | verbs.SendInline | 1<<7))
			case 18:
				build(verbs.QPExWithAtomicWrite, func() { a.q.WRAtomicWrite(rkey, raddr+uint64(x)*8, [8]byte{byte(x)}) })
			}
		}
		a.q.WRAbort()
	})
}
