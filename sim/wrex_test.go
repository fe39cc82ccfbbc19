package sim_test

import (
	"bytes"
	"errors"
	"syscall"
	"testing"

	"pgregory.net/rapid"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// exCap are the capacities of the builder tests' QPs: small, so that
// batches overflow the queue, the SGE limit and the inline limit.
var exCap = verbs.QPCap{MaxSendWR: 8, MaxRecvWR: 64, MaxSendSGE: 2, MaxRecvSGE: 4, MaxInlineData: 32}

// newEndEx is newEnd with a QP created as by ibv_create_qp_ex with the
// given send_ops_flags.
func newEndEx(t testing.TB, d *sim.Device, typ verbs.QPType, size int, ops verbs.QPSendOps) *end {
	t.Helper()
	e := newEnd(t, d, typ, size)
	if err := e.q.Destroy(); err != nil {
		t.Fatal(err)
	}
	q, err := e.pd.CreateQP(sim.QPInitAttr{SendCQ: e.cq, RecvCQ: e.cq, Type: typ, Cap: exCap,
		CompMask: sim.QPInitPD | sim.QPInitSendOpsFlags, SendOpsFlags: ops})
	if err != nil {
		t.Fatal(err)
	}
	e.q = q
	return e
}

// exPair connects two RC QPs created with every RC operation.
func exPair(t testing.TB, prof sim.Profile) (*end, *end) {
	t.Helper()
	_, da, db := twoDevices(t, sim.Config{Profile: prof})
	ops := verbs.SupportedSendOps(verbs.QPTypeRC, prof.Readings)
	a, b := newEndEx(t, da, verbs.QPTypeRC, 1<<14, ops), newEndEx(t, db, verbs.QPTypeRC, 1<<14, ops)
	if err := sim.Connect(a.q, b.q, sim.ConnectOptions{PathMTU: verbs.MTU256}); err != nil {
		t.Fatal(err)
	}
	return a, b
}

// QPX-01: the send_ops_flags a QP may be created with, and comp_mask.
func TestCreateQPExSendOps(t *testing.T) {
	for _, prof := range sim.ProfilesWithout(verbs.ReadingNoQPEx) {
		t.Run(prof.Name, func(t *testing.T) {
			_, d, _ := twoDevices(t, sim.Config{Profile: prof})
			e := newEnd(t, d, verbs.QPTypeRC, 64)
			create := func(typ verbs.QPType, mask sim.QPInitMask, ops verbs.QPSendOps) (*sim.QP, error) {
				return e.pd.CreateQP(sim.QPInitAttr{SendCQ: e.cq, RecvCQ: e.cq, Type: typ, Cap: exCap, CompMask: mask, SendOpsFlags: ops})
			}
			for _, typ := range []verbs.QPType{verbs.QPTypeRC, verbs.QPTypeUC, verbs.QPTypeUD} {
				sup := verbs.SupportedSendOps(typ, prof.Readings)
				q, err := create(typ, sim.QPInitSendOpsFlags, sup)
				if err != nil {
					t.Fatalf("%v with %v: %v", typ, sup, err)
				}
				if ops, ex := q.SendOpsFlags(); ops != sup || !ex {
					t.Errorf("%v: SendOpsFlags = %v, %v", typ, ops, ex)
				}
				q.Destroy()
				for bit := verbs.QPSendOps(1); bit != 1<<16; bit <<= 1 {
					if sup&bit != 0 {
						continue
					}
					if q, err := create(typ, sim.QPInitSendOpsFlags, bit); !errors.Is(err, syscall.EOPNOTSUPP) {
						t.Errorf("%v with %v: %v, want EOPNOTSUPP", typ, bit, err)
						q.Destroy()
					}
				}
			}
			ucLocalInv := verbs.SupportedSendOps(verbs.QPTypeUC, prof.Readings)&verbs.QPExWithLocalInv != 0
			if ucLocalInv == prof.SendOpsRXE {
				t.Errorf("UC LOCAL_INV supported = %v under %s", ucLocalInv, prof.Name)
			}
			for _, m := range []sim.QPInitMask{1 << 1, 1 << 2, 1 << 5, 1 << 7, 1 << 31} {
				if q, err := create(verbs.QPTypeRC, m|sim.QPInitSendOpsFlags, verbs.QPExWithSend); !errors.Is(err, syscall.EOPNOTSUPP) {
					t.Errorf("comp_mask %#x: %v, want EOPNOTSUPP", m, err)
					q.Destroy()
				}
			}
			// Without the mask bit, send_ops_flags is not read and the QP
			// has no builder.
			q, err := create(verbs.QPTypeRC, 0, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			if _, ex := q.SendOpsFlags(); ex {
				t.Error("a QP created without SEND_OPS_FLAGS reports the builder")
			}
			q.WRStart()
			q.WRSend()
			if err := q.WRComplete(); !errors.Is(err, syscall.EOPNOTSUPP) {
				t.Errorf("builder on a plain QP: %v, want EOPNOTSUPP", err)
			}
		})
	}
}

// QPX-03: a batch built with every builder lands as PostSend's would.
func TestWRBuilderOps(t *testing.T) {
	a, b := exPair(t, sim.DefaultProfile())
	copy(a.buf, "hello, builder!!")
	binary64 := func(buf []byte, v uint64) {
		for i := range 8 {
			buf[i] = byte(v >> (8 * i))
		}
	}
	binary64(b.buf[1024:], 5)
	if _, err := b.q.PostRecv([]verbs.RecvWR{{WRID: 100, SGList: []verbs.SGE{b.sge(0, 64)}}, {WRID: 101, SGList: []verbs.SGE{b.sge(64, 64)}}, {WRID: 102}}); err != nil {
		t.Fatal(err)
	}
	a.q.SetWRFlags(verbs.SendSignaled)
	a.q.WRStart()
	a.q.SetWRID(1)
	a.q.WRSend()
	a.q.WRSetSGE(a.mr.LKey(), a.mr.Addr(), 16)
	a.q.SetWRID(2)
	a.q.WRSendImm(0xabcd)
	a.q.WRSetInlineDataList([][]byte{[]byte("in"), []byte("line")})
	a.q.SetWRID(3)
	a.q.WRRDMAWrite(b.mr.RKey(), b.mr.Addr()+512)
	a.q.WRSetSGEList([]verbs.SGE{a.sge(0, 5), a.sge(7, 8)})
	a.q.SetWRID(4)
	a.q.WRRDMAWriteImm(b.mr.RKey(), b.mr.Addr()+600, 7)
	a.q.WRSetInlineData([]byte("imm"))
	a.q.SetWRID(5)
	a.q.WRRDMARead(b.mr.RKey(), b.mr.Addr()+512)
	a.q.WRSetSGE(a.mr.LKey(), a.mr.Addr()+256, 13)
	a.q.SetWRID(6)
	a.q.WRAtomicFetchAdd(b.mr.RKey(), b.mr.Addr()+1024, 10)
	a.q.WRSetSGE(a.mr.LKey(), a.mr.Addr()+2048, 8)
	a.q.SetWRID(7)
	a.q.WRAtomicCmpSwp(b.mr.RKey(), b.mr.Addr()+1024, 15, 99)
	a.q.WRSetSGE(a.mr.LKey(), a.mr.Addr()+2056, 8)
	if err := a.q.WRComplete(); err != nil {
		t.Fatal(err)
	}
	ws := a.poll(t, 7)
	for i, w := range ws {
		if w.Status != verbs.WCSuccess || w.WRID != uint64(i+1) {
			t.Fatalf("send completion %d: %v", i, &w)
		}
	}
	rs := b.poll(t, 3)
	if rs[0].ByteLen != 16 || rs[1].ByteLen != 6 || rs[1].ImmData != 0xabcd || rs[2].ImmData != 7 {
		t.Errorf("receive completions: %v", rs)
	}
	if got := string(b.buf[:16]); got != "hello, builder!!" {
		t.Errorf("SEND data %q", got)
	}
	if got := string(b.buf[64:70]); got != "inline" {
		t.Errorf("inline SEND data %q", got)
	}
	if got := string(b.buf[512:525]); got != "hellobuilder!" {
		t.Errorf("WRITE data %q", got)
	}
	if got := string(a.buf[256:269]); got != "hellobuilder!" {
		t.Errorf("READ data %q", got)
	}
	if a.buf[2048] != 5 || a.buf[2056] != 15 || b.buf[1024] != 99 {
		t.Errorf("atomics: fetched %d, %d; remote %d", a.buf[2048], a.buf[2056], b.buf[1024])
	}
}

// QPX-04, QPX-05: deferred errors drop the batch whole; misuse.
func TestWRBuilderErrors(t *testing.T) {
	for _, prof := range sim.ProfilesWithout(verbs.ReadingNoQPEx) {
		t.Run(prof.Name, func(t *testing.T) {
			a, _ := exPair(t, prof)
			rxe := prof.SendOpsRXE
			size := syscall.EINVAL // too many SGEs or inline bytes (QP-28)
			if prof.PostENOMEM {
				size = syscall.ENOMEM // mlx5's builders record ENOMEM
			}
			space := func(dflt syscall.Errno) syscall.Errno {
				if rxe {
					return syscall.ENOSPC
				}
				return dflt
			}
			cases := []struct {
				name  string
				build func(q *sim.QP)
				want  syscall.Errno
				fresh bool // no good request before build
			}{
				{"too many SGEs", func(q *sim.QP) {
					q.WRSend()
					q.WRSetSGEList([]verbs.SGE{a.sge(0, 1), a.sge(1, 1), a.sge(2, 1)})
				}, space(size), false},
				{"inline too long", func(q *sim.QP) { q.WRSend(); q.WRSetInlineData(make([]byte, 33)) }, space(size), false},
				{"queue overflow", func(q *sim.QP) {
					for range 9 {
						q.WRSend()
					}
				}, space(syscall.ENOMEM), false},
				{"inline READ", func(q *sim.QP) { q.WRRDMARead(1, 0); q.WRSetInlineData([]byte("x")) }, syscall.EINVAL, false},
				{"setter first", func(q *sim.QP) { q.WRSetSGE(1, 2, 3); q.WRSend() }, syscall.EINVAL, true},
				{"start twice", func(q *sim.QP) { q.WRSend(); q.WRStart() }, syscall.EINVAL, false},
				{"bad flags", func(q *sim.QP) { q.SetWRFlags(1 << 9); q.WRSend(); q.SetWRFlags(0) }, syscall.EINVAL, false},
			}
			for _, c := range cases {
				a.q.WRStart()
				if !c.fresh {
					a.q.WRSend() // a good request first: it must not be posted either
				}
				before := a.q.Stats().SendPosted
				c.build(a.q)
				err := a.q.WRComplete()
				if verr.Errno(err) != c.want {
					t.Errorf("%s: %v, want %v", c.name, err, c.want)
				}
				if n := a.q.Stats().SendPosted - before; n != 0 {
					t.Errorf("%s: %d requests posted", c.name, n)
				}
			}
			if err := a.q.WRComplete(); !errors.Is(err, syscall.EINVAL) {
				t.Errorf("complete without start: %v", err)
			}
			// Outside a batch a builder does nothing; abort discards.
			a.q.WRSend()
			a.q.WRStart()
			a.q.WRSend()
			a.q.WRAbort()
			a.q.WRStart()
			if err := a.q.WRComplete(); err != nil {
				t.Errorf("empty batch: %v", err)
			}
			if n := a.q.Stats().SendPosted; n != 0 {
				t.Errorf("%d requests posted by aborted or empty batches", n)
			}
			// An operation outside send_ops_flags (QPX-02).
			_, d, _ := twoDevices(t, sim.Config{Profile: prof})
			e := newEndEx(t, d, verbs.QPTypeRC, 64, verbs.QPExWithSend)
			e.q.WRStart()
			e.q.WRRDMAWrite(1, 2)
			if err := e.q.WRComplete(); !errors.Is(err, syscall.EOPNOTSUPP) {
				t.Errorf("WRITE without WITH_RDMA_WRITE: %v", err)
			}
		})
	}
}

// wrOp is one random request of the differential test.
type wrOp struct {
	op    verbs.WROpcode
	flags verbs.SendFlags
	sges  []verbs.SGE
	off   uint64
	imm   uint32
}

// TestWRBuilderMatchesPostSend is the differential test of QPX-03 and
// QPX-04: random batches posted through PostSend on one QP pair and
// through the builder on an identical pair give the same errno, the same
// completions, the same data and the same states. Where PostSend posts a
// prefix and fails, the builder posts nothing; the test then posts the
// same prefix through the builder to keep the pairs alike.
func TestWRBuilderMatchesPostSend(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		prof := sim.Profiles()[rapid.IntRange(0, 1).Draw(rt, "profile")]
		a1, b1 := exPair(t, prof)
		a2, b2 := exPair(t, prof)
		for i := range a1.buf {
			a1.buf[i], a2.buf[i] = byte(i), byte(i)
		}
		ops := []verbs.WROpcode{verbs.WRSend, verbs.WRSendWithImm, verbs.WRRDMAWrite, verbs.WRRDMAWriteWithImm, verbs.WRRDMARead, verbs.WRAtomicCmpAndSwp, verbs.WRAtomicFetchAndAdd, verbs.WRAtomicWrite}
		for round := range rapid.IntRange(1, 6).Draw(rt, "rounds") {
			for _, e := range []*end{b1, b2} {
				rs := make([]verbs.RecvWR, 4)
				for i := range rs {
					rs[i] = verbs.RecvWR{WRID: uint64(round*10 + i), SGList: []verbs.SGE{e.sge(i*256, 256)}}
				}
				if _, err := e.q.PostRecv(rs); err != nil {
					rt.Fatal(err)
				}
			}
			n := rapid.IntRange(0, 10).Draw(rt, "n")
			wrs := make([]wrOp, n)
			for i := range wrs {
				o := wrOp{op: rapid.SampledFrom(ops).Draw(rt, "op")}
				o.flags = verbs.SendFlags(rapid.SampledFrom([]uint32{0, 2, 2, 2, 8, 10, 4, 1 << 7}).Draw(rt, "flags"))
				o.imm = rapid.Uint32().Draw(rt, "imm")
				o.off = uint64(rapid.IntRange(0, 1<<13).Draw(rt, "off")) &^ 7
				for range rapid.IntRange(0, 3).Draw(rt, "nsge") {
					ln := rapid.SampledFrom([]int{0, 1, 8, 20, 40}).Draw(rt, "len")
					o.sges = append(o.sges, a1.sge(rapid.IntRange(0, 1<<13).Draw(rt, "at"), ln))
				}
				wrs[i] = o
			}
			send := make([]verbs.SendWR, n)
			for i, o := range wrs {
				send[i] = verbs.SendWR{WRID: uint64(i), Opcode: o.op, Flags: o.flags, SGList: o.sges,
					Imm: o.imm, RKey: b1.mr.RKey(), RemoteAddr: b1.mr.Addr() + 4096 + o.off, CompareAdd: uint64(o.imm), Swap: 3}
			}
			before := a2.q.Stats().SendPosted
			k, err1 := a1.q.PostSend(send)
			build := func(wrs []wrOp) error {
				q := a2.q
				q.WRStart()
				for i, o := range wrs {
					q.SetWRID(uint64(i))
					q.SetWRFlags(o.flags)
					rkey, addr := b2.mr.RKey(), b2.mr.Addr()+4096+o.off
					switch o.op {
					case verbs.WRSend:
						q.WRSend()
					case verbs.WRSendWithImm:
						q.WRSendImm(o.imm)
					case verbs.WRRDMAWrite:
						q.WRRDMAWrite(rkey, addr)
					case verbs.WRRDMAWriteWithImm:
						q.WRRDMAWriteImm(rkey, addr, o.imm)
					case verbs.WRRDMARead:
						q.WRRDMARead(rkey, addr)
					case verbs.WRAtomicCmpAndSwp:
						q.WRAtomicCmpSwp(rkey, addr, uint64(o.imm), 3)
					case verbs.WRAtomicFetchAndAdd:
						q.WRAtomicFetchAdd(rkey, addr, uint64(o.imm))
					case verbs.WRAtomicWrite:
						q.WRAtomicWrite(rkey, addr, [8]byte{1}) // the SGE list below replaces the bytes
					}
					q.WRSetSGEList(o.sges)
				}
				return q.WRComplete()
			}
			err2 := build(wrs)
			e1, e2 := verr.Errno(err1), verr.Errno(err2)
			if prof.SendOpsRXE && e1 != 0 && e2 == syscall.ENOSPC {
				e1 = e2 // rxe's errno for overflow, SGE count and inline size
			}
			if e1 != e2 {
				rt.Fatalf("PostSend: %d posted, %v; builder: %v", k, err1, err2)
			}
			if err2 != nil {
				if got := a2.q.Stats().SendPosted - before; got != 0 {
					rt.Fatalf("the failed batch posted %d requests", got)
				}
				if err := build(wrs[:k]); err != nil {
					rt.Fatalf("the prefix PostSend took fails through the builder: %v", err)
				}
			}
			for _, p := range [][2]*end{{a1, a2}, {b1, b2}} {
				w1, w2 := drain(p[0]), drain(p[1])
				if len(w1) != len(w2) {
					rt.Fatalf("%d vs %d completions:\n%v\n%v", len(w1), len(w2), w1, w2)
				}
				for i := range w1 {
					x, y := w1[i], w2[i]
					if x.WRID != y.WRID || x.Status != y.Status || x.Opcode != y.Opcode || x.ByteLen != y.ByteLen || x.ImmData != y.ImmData || x.WCFlags != y.WCFlags {
						rt.Fatalf("completion %d: %v vs %v", i, &x, &y)
					}
				}
				if !bytes.Equal(p[0].buf, p[1].buf) {
					rt.Fatal("buffers differ")
				}
				s1 := p[0].q.State()
				s2 := p[1].q.State()
				if s1 != s2 {
					rt.Fatalf("states %v vs %v", s1, s2)
				}
			}
		}
	})
}

// drain polls every completion of e's CQ.
func drain(e *end) []verbs.WC {
	var out []verbs.WC
	buf := make([]verbs.WC, 16)
	for {
		n, _ := e.cq.Poll(buf)
		if n == 0 {
			return out
		}
		out = append(out, buf[:n]...)
	}
}

// The builder's steady path allocates nothing.
func TestWRBuilderAllocs(t *testing.T) {
	a, b := exPair(t, sim.DefaultProfile())
	recv := []verbs.RecvWR{{WRID: 1, SGList: []verbs.SGE{b.sge(0, 64)}}}
	sges := []verbs.SGE{a.sge(0, 32), a.sge(32, 32)}
	inl := []byte("0123456789")
	w := make([]verbs.WC, 4)
	a.q.SetWRFlags(verbs.SendSignaled)
	allocs := testing.AllocsPerRun(200, func() {
		b.q.PostRecv(recv)
		b.q.PostRecv(recv)
		a.q.WRStart()
		a.q.WRSend()
		a.q.WRSetSGEList(sges)
		a.q.WRSendImm(1)
		a.q.WRSetInlineData(inl)
		if err := a.q.WRComplete(); err != nil {
			t.Fatal(err)
		}
		for got := 0; got < 2; {
			n, _ := a.cq.Poll(w)
			got += n
		}
		for got := 0; got < 2; {
			n, _ := b.cq.Poll(w)
			got += n
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per batch, want 0", allocs)
	}
}

// BenchmarkWRBuilderSend64 is BenchmarkRCSend64 through the builder.
func BenchmarkWRBuilderSend64(b *testing.B) {
	x, y := exPair(b, sim.DefaultProfile())
	recv := []verbs.RecvWR{{WRID: 1, SGList: []verbs.SGE{y.sge(0, 64)}}}
	w := make([]verbs.WC, 1)
	x.q.SetWRFlags(verbs.SendSignaled)
	b.ReportAllocs()
	b.SetBytes(64)
	for b.Loop() {
		if _, err := y.q.PostRecv(recv); err != nil {
			b.Fatal(err)
		}
		x.q.WRStart()
		x.q.SetWRID(2)
		x.q.WRSend()
		x.q.WRSetSGE(x.mr.LKey(), x.mr.Addr(), 64)
		if err := x.q.WRComplete(); err != nil {
			b.Fatal(err)
		}
		pollOne(b, x, w)
		pollOne(b, y, w)
	}
}

// QPX-03 with memory windows: a type 2 window bound and invalidated through
// the builder (MW-04, MW-07).
func TestWRBuilderMW(t *testing.T) {
	a, b := exPair(t, sim.DefaultProfile())
	mem := make([]byte, 256)
	mr, err := a.pd.RegMR(mem, verbs.AccessLocalWrite|verbs.AccessMWBind)
	if err != nil {
		t.Fatal(err)
	}
	mw, err := a.pd.AllocMW(verbs.MWType2)
	if err != nil {
		t.Fatal(err)
	}
	key := mw.RKey()&^0xff | (mw.RKey()+1)&0xff
	a.q.SetWRFlags(verbs.SendSignaled)
	a.q.WRStart()
	a.q.SetWRID(1)
	a.q.WRBindMW(mw, key, verbs.MWBindInfo{MR: mr, Addr: mr.Addr(), Length: 64, Access: verbs.AccessRemoteWrite})
	if err := a.q.WRComplete(); err != nil {
		t.Fatal(err)
	}
	if c := a.poll(t, 1)[0]; c.Status != verbs.WCSuccess || c.Opcode != verbs.WCBindMW {
		t.Fatalf("bind: %v", &c)
	}
	copy(b.buf, "via window")
	write := func(id uint64) verbs.WCStatus {
		if _, err := b.q.PostSend([]verbs.SendWR{{WRID: id, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
			SGList: []verbs.SGE{b.sge(0, 10)}, RKey: key, RemoteAddr: mr.Addr()}}); err != nil {
			t.Fatal(err)
		}
		return b.poll(t, 1)[0].Status
	}
	if st := write(2); st != verbs.WCSuccess || string(mem[:10]) != "via window" {
		t.Fatalf("WRITE through the window: %v, %q", st, mem[:10])
	}
	a.q.WRStart()
	a.q.SetWRID(3)
	a.q.WRLocalInv(key)
	if err := a.q.WRComplete(); err != nil {
		t.Fatal(err)
	}
	if c := a.poll(t, 1)[0]; c.Status != verbs.WCSuccess || c.Opcode != verbs.WCLocalInv {
		t.Fatalf("LOCAL_INV: %v", &c)
	}
	if st := write(4); st != verbs.WCRemAccessErr {
		t.Errorf("WRITE after LOCAL_INV: %v, want REM_ACCESS_ERR", st)
	}
}

// TestWRBuilderSettersPastCapacity: a setter that follows a builder call
// the queue had no room for must not change the last request kept; the
// batch fails as PostSend fails the same list, with ENOMEM (found by
// TestWRBuilderMatchesPostSend, seed 10142719386554965313).
func TestWRBuilderSettersPastCapacity(t *testing.T) {
	a, _ := exPair(t, sim.DefaultProfile())
	q := a.q
	depth, maxSGE := q.Cap().MaxSendWR, q.Cap().MaxSendSGE
	q.WRStart()
	for i := range depth + 2 {
		q.WRSend()
		if i == depth+1 {
			q.WRSetSGEList(make([]verbs.SGE, maxSGE+1))
		}
	}
	if err := q.WRComplete(); !errors.Is(err, syscall.ENOMEM) {
		t.Errorf("a batch of %d SENDs on a queue of %d, the last with %d SGEs: %v, want ENOMEM", depth+2, depth, maxSGE+1, err)
	}
}
