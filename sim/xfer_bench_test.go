package sim_test

import (
	"io"
	"testing"

	"github.com/verbsim/verbsim/internal/benchkit"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/check"
	"github.com/verbsim/verbsim/sim/trace"
	"github.com/verbsim/verbsim/verbs"
)

// benchPair connects two RC QPs on two devices with 2 MiB buffers.
func benchPair(b *testing.B, typ verbs.QPType, cfg ...sim.Config) (*sim.Fabric, *end, *end) {
	b.Helper()
	c := sim.Config{}
	if len(cfg) > 0 {
		c = cfg[0]
	}
	f, da, db := twoDevices(b, c)
	x, y := newEnd(b, da, typ, 2<<20), newEnd(b, db, typ, 2<<20)
	if typ == verbs.QPTypeUD {
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
func pollOne(b *testing.B, e *end, w []verbs.WC) {
	if n, err := e.cq.Poll(w); n != 1 || err != nil || w[0].Status != verbs.WCSuccess {
		b.Fatalf("poll: %d %v %v", n, err, &w[0])
	}
}

// runWorkload runs a workload of internal/benchkit (the ones `verbsim
// bench` measures) for b.N iterations, after one untimed warm-up iteration.
func runWorkload(b *testing.B, w benchkit.Workload, err error, size int64) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
	if w.Close != nil {
		b.Cleanup(w.Close)
	}
	b.ReportAllocs()
	b.SetBytes(size)
	if _, err := w.Op(1); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	if _, err := w.Op(b.N); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkRCSend64: post a 64-byte SEND, then poll both completions.
func BenchmarkRCSend64(b *testing.B) {
	w, err := benchkit.RCSend64(sim.Config{})
	runWorkload(b, w, err, 64)
}

// BenchmarkRCSend64Traced is BenchmarkRCSend64 with a trace being recorded
// (bounded to 4096 records), to show what tracing costs.
func BenchmarkRCSend64Traced(b *testing.B) {
	w, err := benchkit.RCSend64(sim.Config{Trace: &trace.Log{Limit: 4096}})
	runWorkload(b, w, err, 64)
}

// BenchmarkRCSend64Checked is BenchmarkRCSend64 with the sanitizer on,
// every check (Config.Check), to show what it costs: each send's buffer
// is copied at post and compared at transmit and completion.
func BenchmarkRCSend64Checked(b *testing.B) {
	w, err := benchkit.RCSend64(sim.Config{Check: &check.Config{Output: io.Discard}})
	runWorkload(b, w, err, 64)
}

// BenchmarkInlineSend10kMRs is BenchmarkRCSend64 sent inline, with 10,000
// more MRs registered on the sending device: the inline payload is found by
// address among them (compare with BenchmarkInlineSendNoMRs).
func BenchmarkInlineSend10kMRs(b *testing.B) {
	w, err := benchkit.InlineSendMRs(sim.Config{}, 10_000)
	runWorkload(b, w, err, 64)
}

// BenchmarkInlineSendNoMRs is BenchmarkInlineSend10kMRs without the extra
// MRs.
func BenchmarkInlineSendNoMRs(b *testing.B) {
	w, err := benchkit.InlineSendMRs(sim.Config{}, 0)
	runWorkload(b, w, err, 64)
}

// benchExchange posts recv on y and send on x, then polls one completion
// on each side, per iteration.
func benchExchange(b *testing.B, x, y *end, recv []verbs.RecvWR, send []verbs.SendWR, size int64) {
	w := make([]verbs.WC, 1)
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
	_, x, y := benchPair(b, verbs.QPTypeUD)
	port, err := y.ctx.QueryPort(1)
	if err != nil {
		b.Fatal(err)
	}
	ah, err := x.pd.CreateAH(verbs.AHAttr{DLID: port.LID, PortNum: 1})
	if err != nil {
		b.Fatal(err)
	}
	recv := []verbs.RecvWR{{WRID: 1, SGList: []verbs.SGE{y.sge(0, 64+40)}}}
	send := []verbs.SendWR{{WRID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{x.sge(0, 64)},
		AH: ah, RemoteQPN: y.q.Num(), RemoteQKey: 1}}
	benchExchange(b, x, y, recv, send, 64)
}

// BenchmarkRDMAWrite1MiB: an RDMA WRITE of 1 MiB (256 packets at MTU 4096),
// post to completion. Compare with BenchmarkCopy1MiB.
func BenchmarkRDMAWrite1MiB(b *testing.B) {
	w, err := benchkit.RDMAWrite(sim.Config{}, 1<<20)
	runWorkload(b, w, err, 1<<20)
}

// BenchmarkCopy1MiB is a plain copy() of 1 MiB, the floor for
// BenchmarkRDMAWrite1MiB.
func BenchmarkCopy1MiB(b *testing.B) {
	runWorkload(b, benchkit.Copy(1<<20), nil, 1<<20)
}

// BenchmarkRDMARead4KiB: an RDMA READ of 4 KiB, post to completion.
func BenchmarkRDMARead4KiB(b *testing.B) {
	w, err := benchkit.RDMARead(sim.Config{}, 4096)
	runWorkload(b, w, err, 4096)
}
