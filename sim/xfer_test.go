package sim_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// end is one side of a connection: a QP with its own CQ and a registered
// buffer.
type end struct {
	ctx *sim.Context
	pd  *sim.PD
	cq  *sim.CQ
	buf []byte
	mr  *sim.MR
	q   *sim.QP
}

func newEnd(t testing.TB, d *sim.Device, typ verbs.QPType, size int) *end {
	t.Helper()
	ctx, err := d.Open()
	if err != nil {
		t.Fatal(err)
	}
	pd, err := ctx.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := ctx.CreateCQ(1024, nil, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, size)
	mr, err := pd.RegMR(buf, verbs.AccessLocalWrite|verbs.AccessRemoteWrite|verbs.AccessRemoteRead|verbs.AccessRemoteAtomic)
	if err != nil {
		t.Fatal(err)
	}
	q, err := pd.CreateQP(sim.QPInitAttr{SendCQ: cq, RecvCQ: cq, Type: typ,
		Cap: verbs.QPCap{MaxSendWR: 64, MaxRecvWR: 64, MaxSendSGE: 4, MaxRecvSGE: 4, MaxInlineData: 64}})
	if err != nil {
		t.Fatal(err)
	}
	return &end{ctx, pd, cq, buf, mr, q}
}

// sge names n bytes at offset off of the end's buffer.
func (e *end) sge(off, n int) verbs.SGE {
	return verbs.SGE{Addr: e.mr.Addr() + uint64(off), Length: uint32(n), LKey: e.mr.LKey()}
}

func (e *end) poll(t testing.TB, want int) []verbs.WC {
	t.Helper()
	out := make([]verbs.WC, 0, want)
	buf := make([]verbs.WC, 16)
	for {
		n, err := e.cq.Poll(buf)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, buf[:n]...)
		if n == 0 {
			break
		}
	}
	if len(out) != want {
		t.Fatalf("polled %d completions, want %d: %v", len(out), want, out)
	}
	return out
}

func twoDevices(t testing.TB, cfg sim.Config) (*sim.Fabric, *sim.Device, *sim.Device) {
	t.Helper()
	cfg.Devices = []sim.DeviceConfig{{Name: "a"}, {Name: "b"}}
	f, err := sim.NewFabric(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, f.Devices()[0], f.Devices()[1]
}

func rcPair(t testing.TB, cfg sim.Config, o sim.ConnectOptions) (*sim.Fabric, *end, *end) {
	t.Helper()
	f, da, db := twoDevices(t, cfg)
	a, b := newEnd(t, da, verbs.QPTypeRC, 1<<16), newEnd(t, db, verbs.QPTypeRC, 1<<16)
	if err := sim.Connect(a.q, b.q, o); err != nil {
		t.Fatal(err)
	}
	return f, a, b
}

func TestRCSendWriteReadAtomic(t *testing.T) {
	_, a, b := rcPair(t, sim.Config{}, sim.ConnectOptions{PathMTU: verbs.MTU256})
	msg := bytes.Repeat([]byte("verbsim!"), 100) // 800 bytes: 4 packets at MTU 256
	copy(a.buf, msg)
	if _, err := b.q.PostRecv([]verbs.RecvWR{{WRID: 7, SGList: []verbs.SGE{b.sge(0, 500), b.sge(1000, 500)}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.q.PostSend([]verbs.SendWR{{WRID: 1, Opcode: verbs.WRSendWithImm, Imm: 0xdeadbeef, Flags: verbs.SendSignaled,
		SGList: []verbs.SGE{a.sge(0, 300), a.sge(300, 500)}}}); err != nil {
		t.Fatal(err)
	}
	s := a.poll(t, 1)[0]
	r := b.poll(t, 1)[0]
	if s.Status != verbs.WCSuccess || s.Opcode != verbs.WCSend || s.WRID != 1 {
		t.Errorf("send WC %v", &s)
	}
	if r.Status != verbs.WCSuccess || r.Opcode != verbs.WCRecv || r.WRID != 7 || r.ByteLen != 800 || r.ImmData != 0xdeadbeef || r.WCFlags != verbs.WCWithImm {
		t.Errorf("recv WC %v", &r)
	}
	got := append(append([]byte{}, b.buf[:500]...), b.buf[1000:1300]...)
	if !bytes.Equal(got, msg) {
		t.Errorf("scattered bytes differ")
	}

	// RDMA WRITE 3000 bytes into b at 4096.
	for i := range 3000 {
		a.buf[8192+i] = byte(i * 7)
	}
	if _, err := a.q.PostSend([]verbs.SendWR{{WRID: 2, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
		SGList: []verbs.SGE{a.sge(8192, 3000)}, RemoteAddr: b.mr.Addr() + 4096, RKey: b.mr.RKey()}}); err != nil {
		t.Fatal(err)
	}
	if w := a.poll(t, 1)[0]; w.Status != verbs.WCSuccess || w.Opcode != verbs.WCRDMAWrite {
		t.Errorf("write WC %v", &w)
	}
	b.poll(t, 0)
	if !bytes.Equal(b.buf[4096:7096], a.buf[8192:11192]) {
		t.Error("RDMA WRITE did not place the data")
	}

	// RDMA READ it back into a at 20000.
	if _, err := a.q.PostSend([]verbs.SendWR{{WRID: 3, Opcode: verbs.WRRDMARead, Flags: verbs.SendSignaled,
		SGList: []verbs.SGE{a.sge(20000, 3000)}, RemoteAddr: b.mr.Addr() + 4096, RKey: b.mr.RKey()}}); err != nil {
		t.Fatal(err)
	}
	if w := a.poll(t, 1)[0]; w.Status != verbs.WCSuccess || w.Opcode != verbs.WCRDMARead || w.ByteLen != 3000 {
		t.Errorf("read WC %v", &w)
	}
	if !bytes.Equal(a.buf[20000:23000], b.buf[4096:7096]) {
		t.Error("RDMA READ did not fetch the data")
	}

	// FETCH_AND_ADD and CMP_AND_SWP on b's word at 64.
	binary.NativeEndian.PutUint64(b.buf[64:], 40)
	if _, err := a.q.PostSend([]verbs.SendWR{
		{WRID: 4, Opcode: verbs.WRAtomicFetchAndAdd, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(128, 8)},
			RemoteAddr: b.mr.Addr() + 64, RKey: b.mr.RKey(), CompareAdd: 2},
		{WRID: 5, Opcode: verbs.WRAtomicCmpAndSwp, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(136, 8)},
			RemoteAddr: b.mr.Addr() + 64, RKey: b.mr.RKey(), CompareAdd: 42, Swap: 99},
	}); err != nil {
		t.Fatal(err)
	}
	ws := a.poll(t, 2)
	if ws[0].Opcode != verbs.WCFetchAdd || ws[1].Opcode != verbs.WCCompSwap || ws[0].Status != verbs.WCSuccess || ws[1].Status != verbs.WCSuccess {
		t.Errorf("atomic WCs %v %v", &ws[0], &ws[1])
	}
	if got := binary.NativeEndian.Uint64(a.buf[128:]); got != 40 {
		t.Errorf("fetch-add returned %d, want 40", got)
	}
	if got := binary.NativeEndian.Uint64(a.buf[136:]); got != 42 {
		t.Errorf("cmp-swap returned %d, want 42", got)
	}
	if got := binary.NativeEndian.Uint64(b.buf[64:]); got != 99 {
		t.Errorf("remote word %d, want 99", got)
	}
}

func TestRNRThenRetry(t *testing.T) {
	f, a, b := rcPair(t, sim.Config{}, sim.ConnectOptions{RNRRetry: 3, MinRNRTimer: 1})
	if _, err := a.q.PostSend([]verbs.SendWR{{WRID: 1, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(0, 10)}}}); err != nil {
		t.Fatal(err)
	}
	a.poll(t, 0) // RNR NAK: waiting 10 µs
	if _, err := b.q.PostRecv([]verbs.RecvWR{{WRID: 9, SGList: []verbs.SGE{b.sge(0, 64)}}}); err != nil {
		t.Fatal(err)
	}
	a.poll(t, 0) // time has not passed
	f.Tick(10_000)
	if w := a.poll(t, 1)[0]; w.Status != verbs.WCSuccess {
		t.Errorf("send WC %v", &w)
	}
	b.poll(t, 1)

	// rnr_retry exhausted.
	if _, err := a.q.PostSend([]verbs.SendWR{{WRID: 2, Opcode: verbs.WRSend, SGList: []verbs.SGE{a.sge(0, 10)}}}); err != nil {
		t.Fatal(err)
	}
	f.RunUntilIdle(0)
	if w := a.poll(t, 1)[0]; w.Status != verbs.WCRNRRetryExcErr || w.WRID != 2 {
		t.Errorf("send WC %v", &w)
	}
	if a.q.State() != verbs.QPStateErr {
		t.Errorf("requester state %v", a.q.State())
	}
}

func TestRetryExceededAgainstSilentPeer(t *testing.T) {
	f, a, b := rcPair(t, sim.Config{}, sim.ConnectOptions{RetryCnt: 2, Timeout: 8})
	if err := b.q.Modify(&verbs.QPAttr{QPState: verbs.QPStateErr}, verbs.QPAttrState); err != nil {
		t.Fatal(err)
	}
	if _, err := a.q.PostSend([]verbs.SendWR{{WRID: 1, Opcode: verbs.WRSend, SGList: []verbs.SGE{a.sge(0, 10)}},
		{WRID: 2, Opcode: verbs.WRSend, SGList: []verbs.SGE{a.sge(0, 10)}}}); err != nil {
		t.Fatal(err)
	}
	start := f.Now()
	f.RunUntilIdle(0)
	ws := a.poll(t, 2)
	if ws[0].Status != verbs.WCRetryExcErr || ws[1].Status != verbs.WCWRFlushErr {
		t.Errorf("WCs %v, %v", &ws[0], &ws[1])
	}
	if got, want := f.Now()-start, 3*uint64(verbs.ACKTimeout(8)); got != want {
		t.Errorf("failed after %d ticks, want %d (3 timeouts)", got, want)
	}
}

func TestRCExactlyOnceUnderFaults(t *testing.T) {
	f, a, b := rcPair(t, sim.Config{Seed: 7, Faults: sim.Faults{Drop: 0.1, Duplicate: 0.1, Delay: 0.1, MaxDelay: 50}},
		sim.ConnectOptions{PathMTU: verbs.MTU256, Timeout: 4})
	const n = 40
	for i := range n {
		if _, err := b.q.PostRecv([]verbs.RecvWR{{WRID: uint64(i), SGList: []verbs.SGE{b.sge(i*1024, 1024)}}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		for j := range 600 {
			a.buf[i*1024+j] = byte(i + j)
		}
		if _, err := a.q.PostSend([]verbs.SendWR{{WRID: uint64(i), Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
			SGList: []verbs.SGE{a.sge(i*1024, 600)}}}); err != nil {
			t.Fatal(err)
		}
	}
	if !f.RunUntilIdle(1 << 40) {
		t.Fatal("not idle")
	}
	sends, recvs := a.poll(t, n), b.poll(t, n)
	for i := range n {
		if sends[i].Status != verbs.WCSuccess || sends[i].WRID != uint64(i) {
			t.Fatalf("send %d: %v", i, &sends[i])
		}
		if recvs[i].Status != verbs.WCSuccess || recvs[i].WRID != uint64(i) || recvs[i].ByteLen != 600 {
			t.Fatalf("recv %d: %v", i, &recvs[i])
		}
		if !bytes.Equal(b.buf[i*1024:i*1024+600], a.buf[i*1024:i*1024+600]) {
			t.Fatalf("message %d corrupted", i)
		}
	}
	st := f.Stats()
	if st.Dropped == 0 || st.Duplicated == 0 || st.Delayed == 0 {
		t.Errorf("faults did not fire: %+v", st)
	}
}

// udPair makes a UD QP on each of two devices, both ready with Q_Key
// 0x1111, and an AH on a's side addressed to b's port.
func udPair(t testing.TB, cfg sim.Config) (f *sim.Fabric, a, b *end, ah *sim.AH) {
	t.Helper()
	f, da, db := twoDevices(t, cfg)
	a, b = newEnd(t, da, verbs.QPTypeUD, 1<<14), newEnd(t, db, verbs.QPTypeUD, 1<<14)
	for _, q := range []*sim.QP{a.q, b.q} {
		if err := sim.ReadyUD(q, 0x1111); err != nil {
			t.Fatal(err)
		}
	}
	port, err := b.ctx.QueryPort(1)
	if err != nil {
		t.Fatal(err)
	}
	ah, err = a.pd.CreateAH(verbs.AHAttr{DLID: port.LID, PortNum: 1})
	if err != nil {
		t.Fatal(err)
	}
	return f, a, b, ah
}

func TestUDSend(t *testing.T) {
	_, a, b, ah := udPair(t, sim.Config{})
	copy(a.buf, "abc")
	if _, err := b.q.PostRecv([]verbs.RecvWR{{WRID: 5, SGList: []verbs.SGE{b.sge(0, 100)}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.q.PostSend([]verbs.SendWR{{WRID: 1, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(0, 3)},
		AH: ah, RemoteQPN: b.q.Num(), RemoteQKey: 0x1111}}); err != nil {
		t.Fatal(err)
	}
	a.poll(t, 1)
	r := b.poll(t, 1)[0]
	if r.ByteLen != 43 || r.SrcQP != a.q.Num() || string(b.buf[40:43]) != "abc" {
		t.Errorf("UD recv %v, bytes %q", &r, b.buf[40:43])
	}
}

// TestUCAtMostOnce: UC under drops, duplicates and delays delivers each
// message at most once, intact, in order, and every send succeeds
// (XFER-26).
func TestUCAtMostOnce(t *testing.T) {
	f, da, db := twoDevices(t, sim.Config{Seed: 3, Faults: sim.Faults{Drop: 0.1, Duplicate: 0.2, Delay: 0.1, MaxDelay: 20}})
	a, b := newEnd(t, da, verbs.QPTypeUC, 1<<16), newEnd(t, db, verbs.QPTypeUC, 1<<16)
	if err := sim.Connect(a.q, b.q, sim.ConnectOptions{PathMTU: verbs.MTU256}); err != nil {
		t.Fatal(err)
	}
	const n = 50
	for i := range n {
		b.q.PostRecv([]verbs.RecvWR{{WRID: uint64(i), SGList: []verbs.SGE{b.sge(i*1024, 1024)}}})
	}
	for i := range n {
		for j := range 600 {
			a.buf[i*1024+j] = byte(i ^ j)
		}
		a.q.PostSend([]verbs.SendWR{{WRID: uint64(i), Opcode: verbs.WRSendWithImm, Imm: uint32(i), Flags: verbs.SendSignaled,
			SGList: []verbs.SGE{a.sge(i*1024, 600)}}})
		f.Tick(5)
	}
	f.RunUntilIdle(0)
	for i, w := range a.poll(t, n) {
		if w.Status != verbs.WCSuccess || w.WRID != uint64(i) {
			t.Fatalf("send %d: %v", i, &w)
		}
	}
	var got [64]verbs.WC
	m, _ := b.cq.Poll(got[:])
	if m == 0 || m == n {
		t.Fatalf("%d of %d messages arrived; the faults should lose some", m, n)
	}
	last := -1
	for k, w := range got[:m] {
		msg := int(w.ImmData)
		if w.Status != verbs.WCSuccess || w.ByteLen != 600 || msg <= last {
			t.Fatalf("receive %d: %v (after message %d)", k, &w, last)
		}
		last = msg
		// Receive WRs are consumed in order, whatever was lost (XFER-01).
		if w.WRID != uint64(k) {
			t.Fatalf("receive %d took WR %d", k, w.WRID)
		}
		if !bytes.Equal(b.buf[k*1024:k*1024+600], a.buf[msg*1024:msg*1024+600]) {
			t.Fatalf("message %d corrupted", msg)
		}
	}
}
