package sim_test

import (
	"testing"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/qp"
	"github.com/verbsim/verbsim/sim/trace"
	"github.com/verbsim/verbsim/sim/wc"
)

// benchPair connects two RC QPs on two devices with 2 MiB buffers.
func benchPair(b *testing.B, typ qp.Type, cfg ...sim.Config) (*sim.Fabric, *end, *end) {
	b.Helper()
	c := sim.Config{}
	if len(cfg) > 0 {
		c = cfg[0]
	}
	f, da, db := twoDevices(b, c)
	x, y := newEnd(b, da, typ, 2<<20), newEnd(b, db, typ, 2<<20)
	if typ == qp.UD {
		if err := sim.ReadyUD(x.q, 1); err != nil {
			b.Fatal(err)
		}
		if err := sim.ReadyUD(y.q, 1); err != nil {
			b.Fatal(err)
		}
		return f, x, y
	}
	if err := sim.Connect(x.q, y.q, sim.ConnectOptions{}); err != nil {
		b.Fatal(err)
	}
	return f, x, y
}

// pollOne polls exactly one completion or fails.
func pollOne(b *testing.B, e *end, w []wc.WC) {
	if n, err := e.cq.Poll(w); n != 1 || err != nil || w[0].Status != wc.Success {
		b.Fatalf("poll: %d %v %v", n, err, &w[0])
	}
}

// BenchmarkRCSend64: post a 64-byte SEND, then poll both completions.
func BenchmarkRCSend64(b *testing.B) { benchRCSend64(b, sim.Config{}) }

// BenchmarkRCSend64Traced is BenchmarkRCSend64 with a trace being recorded
// (bounded to 4096 records), to show what tracing costs.
func BenchmarkRCSend64Traced(b *testing.B) {
	benchRCSend64(b, sim.Config{Trace: &trace.Log{Limit: 4096}})
}

func benchRCSend64(b *testing.B, cfg sim.Config) {
	_, x, y := benchPair(b, qp.RC, cfg)
	recv := []qp.RecvWR{{WRID: 1, SGList: []qp.SGE{y.sge(0, 64)}}}
	send := []qp.SendWR{{WRID: 2, Opcode: wc.WRSend, Flags: qp.SendSignaled, SGList: []qp.SGE{x.sge(0, 64)}}}
	benchExchange(b, x, y, recv, send, 64)
}

// benchExchange posts recv on y and send on x, then polls one completion
// on each side, per iteration.
func benchExchange(b *testing.B, x, y *end, recv []qp.RecvWR, send []qp.SendWR, size int64) {
	w := make([]wc.WC, 1)
	b.ReportAllocs()
	b.SetBytes(size)
	for b.Loop() {
		if _, err := y.q.PostRecv(recv); err != nil {
			b.Fatal(err)
		}
		if _, err := x.q.PostSend(send); err != nil {
			b.Fatal(err)
		}
		pollOne(b, x, w)
		pollOne(b, y, w)
	}
}

// BenchmarkUDSend64: a 64-byte UD datagram, post to both completions.
func BenchmarkUDSend64(b *testing.B) {
	_, x, y := benchPair(b, qp.UD)
	port, err := y.ctx.QueryPort(1)
	if err != nil {
		b.Fatal(err)
	}
	ah, err := x.pd.CreateAH(sim.AHAttr{DLID: port.LID, PortNum: 1})
	if err != nil {
		b.Fatal(err)
	}
	recv := []qp.RecvWR{{WRID: 1, SGList: []qp.SGE{y.sge(0, 64+40)}}}
	send := []qp.SendWR{{WRID: 2, Opcode: wc.WRSend, Flags: qp.SendSignaled, SGList: []qp.SGE{x.sge(0, 64)},
		AH: ah, RemoteQPN: y.q.Num(), RemoteQKey: 1}}
	benchExchange(b, x, y, recv, send, 64)
}

// BenchmarkRDMAWrite1MiB: an RDMA WRITE of 1 MiB (256 packets at MTU 4096),
// post to completion. Compare with BenchmarkCopy1MiB.
func BenchmarkRDMAWrite1MiB(b *testing.B) {
	_, x, y := benchPair(b, qp.RC)
	const n = 1 << 20
	send := []qp.SendWR{{WRID: 2, Opcode: wc.WRRDMAWrite, Flags: qp.SendSignaled, SGList: []qp.SGE{x.sge(0, n)},
		RemoteAddr: y.mr.Addr(), RKey: y.mr.RKey()}}
	w := make([]wc.WC, 1)
	b.ReportAllocs()
	b.SetBytes(n)
	for b.Loop() {
		if _, err := x.q.PostSend(send); err != nil {
			b.Fatal(err)
		}
		pollOne(b, x, w)
	}
}

// BenchmarkCopy1MiB is a plain copy() of 1 MiB, the floor for
// BenchmarkRDMAWrite1MiB.
func BenchmarkCopy1MiB(b *testing.B) {
	src, dst := make([]byte, 1<<20), make([]byte, 1<<20)
	b.ReportAllocs()
	b.SetBytes(1 << 20)
	for b.Loop() {
		copy(dst, src)
	}
}

// BenchmarkRDMARead4KiB: an RDMA READ of 4 KiB, post to completion.
func BenchmarkRDMARead4KiB(b *testing.B) {
	_, x, y := benchPair(b, qp.RC)
	send := []qp.SendWR{{WRID: 2, Opcode: wc.WRRDMARead, Flags: qp.SendSignaled, SGList: []qp.SGE{x.sge(0, 4096)},
		RemoteAddr: y.mr.Addr(), RKey: y.mr.RKey()}}
	w := make([]wc.WC, 1)
	b.ReportAllocs()
	b.SetBytes(4096)
	for b.Loop() {
		if _, err := x.q.PostSend(send); err != nil {
			b.Fatal(err)
		}
		pollOne(b, x, w)
	}
}
