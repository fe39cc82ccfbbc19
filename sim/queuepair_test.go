package sim_test

import (
	"errors"
	"fmt"
	"runtime"
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

type qpRig struct {
	ctx *sim.Context
	pd  *sim.PD
	cq  *sim.CQ
}

func newQPRig(t testing.TB, cfg sim.Config) *qpRig {
	t.Helper()
	ctx := open(t, cfg)
	pd, err := ctx.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := ctx.CreateCQ(256, nil, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	return &qpRig{ctx, pd, cq}
}

func (r *qpRig) qp(t testing.TB, typ verbs.QPType, c verbs.QPCap) *sim.QP {
	t.Helper()
	q, err := r.pd.CreateQP(sim.QPInitAttr{SendCQ: r.cq, RecvCQ: r.cq, Type: typ, Cap: c})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// toRTS takes an RC QP to RTS with the attributes a real connection uses.
func toRTS(q *sim.QP, remote uint32) error {
	steps := []struct {
		attr verbs.QPAttr
		mask verbs.QPAttrMask
	}{
		{verbs.QPAttr{QPState: verbs.QPStateInit, PKeyIndex: 0, PortNum: 1, QPAccessFlags: verbs.AccessRemoteWrite | verbs.AccessRemoteRead},
			verbs.QPAttrState | verbs.QPAttrPKeyIndex | verbs.QPAttrPort | verbs.QPAttrAccessFlags},
		{verbs.QPAttr{QPState: verbs.QPStateRTR, PathMTU: verbs.MTU1024, DestQPNum: remote, RQPSN: 0, MaxDestRDAtomic: 1, MinRNRTimer: 12,
			AHAttr: verbs.AHAttr{DLID: 1, PortNum: 1}},
			verbs.QPAttrState | verbs.QPAttrAV | verbs.QPAttrPathMTU | verbs.QPAttrDestQPN | verbs.QPAttrRQPSN | verbs.QPAttrMaxDestRDAtomic | verbs.QPAttrMinRNRTimer},
		{verbs.QPAttr{QPState: verbs.QPStateRTS, SQPSN: 0, Timeout: 14, RetryCnt: 7, RNRRetry: 7, MaxRDAtomic: 1},
			verbs.QPAttrState | verbs.QPAttrSQPSN | verbs.QPAttrTimeout | verbs.QPAttrRetryCnt | verbs.QPAttrRNRRetry | verbs.QPAttrMaxQPRDAtomic},
	}
	for _, s := range steps {
		if err := q.Modify(&s.attr, s.mask); err != nil {
			return err
		}
	}
	return nil
}

func TestCreateQPThroughPD(t *testing.T) {
	r := newQPRig(t, sim.Config{})
	a := r.qp(t, verbs.QPTypeRC, verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1})
	b := r.qp(t, verbs.QPTypeRC, verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4})
	if a.Num() == b.Num() || a.Num() < 0x11 {
		t.Fatalf("qp_nums %#x, %#x", a.Num(), b.Num())
	}
	if err := toRTS(a, b.Num()); err != nil {
		t.Fatal(err)
	}
	// The QP holds its CQ (CQ-11) and PD (PD-02).
	if err := r.cq.Destroy(); !errors.Is(err, syscall.EBUSY) {
		t.Fatalf("destroy CQ under a QP: %v, want EBUSY", err)
	}
	if err := r.pd.Dealloc(); !errors.Is(err, syscall.EBUSY) {
		t.Fatalf("dealloc PD under a QP: %v, want EBUSY", err)
	}
	if _, err := r.pd.CreateQP(sim.QPInitAttr{SendCQ: r.cq, Type: verbs.QPTypeRC}); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("QP without a recv CQ: %v, want EINVAL", err)
	}
	if _, err := r.pd.CreateQP(sim.QPInitAttr{SendCQ: r.cq, RecvCQ: r.cq, Type: verbs.QPTypeRC, Cap: verbs.QPCap{MaxSendWR: 1 << 20}}); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("QP above max_qp_wr: %v, want EINVAL", err)
	}
	for _, q := range []*sim.QP{a, b} {
		if err := q.Destroy(); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.cq.Destroy(); err != nil {
		t.Fatalf("destroy CQ after its QPs: %v", err)
	}
	if err := r.pd.Dealloc(); err != nil {
		t.Fatalf("dealloc PD after its QPs: %v", err)
	}
}

func TestMaxQP(t *testing.T) {
	attr := sim.DefaultDeviceAttr()
	attr.MaxQP = 2
	r := newQPRig(t, sim.Config{Devices: []sim.DeviceConfig{{Name: "d", Attr: attr}}})
	a := r.qp(t, verbs.QPTypeUD, verbs.QPCap{})
	r.qp(t, verbs.QPTypeUD, verbs.QPCap{})
	if _, err := r.pd.CreateQP(sim.QPInitAttr{SendCQ: r.cq, RecvCQ: r.cq, Type: verbs.QPTypeUD}); !errors.Is(err, syscall.ENOMEM) {
		t.Fatalf("third QP: %v, want ENOMEM", err)
	}
	a.Destroy()
	r.qp(t, verbs.QPTypeUD, verbs.QPCap{})
}

// TestInlineFromRegisteredMemory: an inline send reads registered memory
// through its address, key unchecked, at post time (QP-35).
func TestInlineFromRegisteredMemory(t *testing.T) {
	r := newQPRig(t, sim.Config{})
	buf := []byte("payload")
	mr, err := r.pd.RegMR(buf, 0)
	if err != nil {
		t.Fatal(err)
	}
	q := r.qp(t, verbs.QPTypeRC, verbs.QPCap{MaxSendWR: 2, MaxSendSGE: 1, MaxInlineData: 16})
	if err := toRTS(q, 0x99); err != nil {
		t.Fatal(err)
	}
	wr := []verbs.SendWR{{WRID: 1, Opcode: verbs.WRSend, Flags: verbs.SendInline, SGList: []verbs.SGE{{Addr: mr.Addr(), Length: 7, LKey: 0}}}}
	if _, err := q.PostSend(wr); err != nil {
		t.Fatalf("inline post from registered memory: %v", err)
	}
	wr[0].SGList[0].Addr = mr.Addr() + 4096
	if _, err := q.PostSend(wr); !errors.Is(err, syscall.EFAULT) {
		t.Fatalf("inline post outside registered memory: %v, want EFAULT", err)
	}
}

// TestSRQThroughPD: SRQs count against max_srq and hold their PD; the rxe
// profile honours a limit given at creation (SRQ-01).
func TestSRQThroughPD(t *testing.T) {
	for _, p := range sim.ProfilesWithout(verbs.ReadingNoSRQ) {
		r := newQPRig(t, sim.Config{Profile: p})
		s, err := r.pd.CreateSRQ(sim.SRQInitAttr{Attr: verbs.SRQAttr{MaxWR: 8, MaxSGE: 1, SRQLimit: 2}})
		if err != nil {
			t.Fatal(err)
		}
		a, _ := s.Query()
		if want := map[bool]uint32{false: 0, true: 2}[p.SRQLimitAtCreate]; a.SRQLimit != want {
			t.Errorf("%s: srq_limit after create %d, want %d", p.Name, a.SRQLimit, want)
		}
		if err := r.pd.Dealloc(); !errors.Is(err, syscall.EBUSY) {
			t.Fatalf("dealloc PD under an SRQ: %v", err)
		}
		q, err := r.pd.CreateQP(sim.QPInitAttr{SendCQ: r.cq, RecvCQ: r.cq, SRQ: s, Type: verbs.QPTypeRC, Cap: verbs.QPCap{MaxSendWR: 1}})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Destroy(); !errors.Is(err, syscall.EBUSY) {
			t.Fatalf("destroy SRQ under a QP: %v", err)
		}
		// ERR on an SRQ QP raises LAST_WQE_REACHED (ASYNC-14).
		if err := q.Modify(&verbs.QPAttr{QPState: verbs.QPStateInit, PortNum: 1}, verbs.QPAttrState|verbs.QPAttrPKeyIndex|verbs.QPAttrPort|verbs.QPAttrAccessFlags); err != nil {
			t.Fatal(err)
		}
		if err := q.Modify(&verbs.QPAttr{QPState: verbs.QPStateErr}, verbs.QPAttrState); err != nil {
			t.Fatal(err)
		}
		ev, err := r.ctx.TryGetAsyncEvent()
		if err != nil || ev.Type() != verbs.EventQPLastWQEReached || ev.QP() != q {
			t.Fatalf("%v, %v", ev, err)
		}
		ev.Ack()
		q.Destroy()
		if err := s.Destroy(); err != nil {
			t.Fatal(err)
		}
		if err := r.pd.Dealloc(); err != nil {
			t.Fatal(err)
		}
	}
}

// ExamplePD_CreateQP opens a device, creates an RC QP and walks it to RTS.
func ExamplePD_CreateQP() {
	fabric, _ := sim.NewFabric(sim.Config{})
	vctx, _ := fabric.Devices()[0].Open()
	pd, _ := vctx.AllocPD()
	cq, _ := vctx.CreateCQ(64, nil, nil, 0)
	q, _ := pd.CreateQP(sim.QPInitAttr{
		SendCQ: cq, RecvCQ: cq, Type: verbs.QPTypeRC,
		Cap: verbs.QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1},
	})
	fmt.Println(q.State())

	// RESET→INIT: pkey index, port and access flags are required for RC (QP-14).
	q.Modify(&verbs.QPAttr{QPState: verbs.QPStateInit, PortNum: 1, QPAccessFlags: verbs.AccessRemoteWrite},
		verbs.QPAttrState|verbs.QPAttrPKeyIndex|verbs.QPAttrPort|verbs.QPAttrAccessFlags)
	// INIT→RTR: the path and the remote QP (QP-16).
	q.Modify(&verbs.QPAttr{QPState: verbs.QPStateRTR, PathMTU: verbs.MTU1024, DestQPNum: 0x12, MaxDestRDAtomic: 1,
		MinRNRTimer: 12, AHAttr: verbs.AHAttr{DLID: 1, PortNum: 1}},
		verbs.QPAttrState|verbs.QPAttrAV|verbs.QPAttrPathMTU|verbs.QPAttrDestQPN|verbs.QPAttrRQPSN|verbs.QPAttrMaxDestRDAtomic|verbs.QPAttrMinRNRTimer)
	// RTR→RTS: timers and retry counts (QP-17).
	err := q.Modify(&verbs.QPAttr{QPState: verbs.QPStateRTS, Timeout: 14, RetryCnt: 7, RNRRetry: 7, MaxRDAtomic: 1},
		verbs.QPAttrState|verbs.QPAttrSQPSN|verbs.QPAttrTimeout|verbs.QPAttrRetryCnt|verbs.QPAttrRNRRetry|verbs.QPAttrMaxQPRDAtomic)
	fmt.Println(q.State(), err)

	// An illegal transition changes nothing (QP-07, QP-13).
	err = q.Modify(&verbs.QPAttr{QPState: verbs.QPStateRTR}, verbs.QPAttrState)
	fmt.Println(q.State(), errors.Is(err, syscall.EINVAL))
	// Output:
	// RESET
	// RTS <nil>
	// RTS true
}

// BenchmarkPostSend is the cost of posting one send WR: the state check,
// the WR checks and the copy into its slot. Slots are recycled as if the
// work had completed and been polled, by a flush and a poll every 1024 posts.
// BenchmarkPostSend measures posting alone: the validation and enqueue of
// one send WR. The fabric is in Manual mode, so nothing executes.
func BenchmarkPostSend(b *testing.B) {
	r := newQPRig(b, sim.Config{Mode: sim.Manual})
	q := r.qp(b, verbs.QPTypeRC, verbs.QPCap{MaxSendWR: 1024, MaxSendSGE: 2})
	if err := toRTS(q, 0x99); err != nil {
		b.Fatal(err)
	}
	wr := []verbs.SendWR{{WRID: 1, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{{Addr: 0x1000, Length: 64, LKey: 0x101}}}}
	buf := make([]verbs.WC, 256)
	posted := 0
	b.ReportAllocs()
	for b.Loop() {
		if posted == 1024 {
			b.StopTimer()
			q.Modify(&verbs.QPAttr{QPState: verbs.QPStateErr}, verbs.QPAttrState)
			for n, _ := r.cq.Poll(buf); n > 0; n, _ = r.cq.Poll(buf) {
			}
			q.Modify(&verbs.QPAttr{QPState: verbs.QPStateReset}, verbs.QPAttrState)
			toRTS(q, 0x99)
			posted = 0
			b.StartTimer()
		}
		if _, err := q.PostSend(wr); err != nil {
			b.Fatal(err)
		}
		posted++
	}
}

// BenchmarkCreateDestroyQP creates an RC QP with 64-deep queues and
// destroys it.
func BenchmarkCreateDestroyQP(b *testing.B) {
	r := newQPRig(b, sim.Config{})
	attr := sim.QPInitAttr{SendCQ: r.cq, RecvCQ: r.cq, Type: verbs.QPTypeRC, Cap: verbs.QPCap{MaxSendWR: 64, MaxRecvWR: 64, MaxSendSGE: 1, MaxRecvSGE: 1}}
	b.ReportAllocs()
	for b.Loop() {
		q, err := r.pd.CreateQP(attr)
		if err != nil {
			b.Fatal(err)
		}
		q.Destroy()
	}
}

// BenchmarkIdleQPMemory creates 100,000 idle RC QPs with 16-deep queues and
// one SGE each, and reports the heap they hold per QP.
func BenchmarkIdleQPMemory(b *testing.B) {
	const n = 100_000
	attr := sim.DefaultDeviceAttr()
	for b.Loop() {
		r := newQPRig(b, sim.Config{Devices: []sim.DeviceConfig{{Name: "d", Attr: attr}}})
		init := sim.QPInitAttr{SendCQ: r.cq, RecvCQ: r.cq, Type: verbs.QPTypeRC, Cap: verbs.QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1}}
		qps := make([]*sim.QP, 0, n)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for range n {
			q, err := r.pd.CreateQP(init)
			if err != nil {
				b.Fatal(err)
			}
			qps = append(qps, q)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "bytes/QP")
		for _, q := range qps {
			q.Destroy()
		}
	}
}
