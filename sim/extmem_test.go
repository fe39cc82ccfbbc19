package sim_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// MRs over another process's memory (simhook.RegExternalMR, the per-host
// daemon's MRs) carry messages longer than the direct path's scratch
// buffer, on the direct path and through the engine, and a message whose
// source and target overlap in one process's memory lands as it does in
// Go memory: read whole before any of it is written (QP-36).
func TestExternalMemoryLongMessages(t *testing.T) {
	const size = 1 << 20
	cases := []struct {
		name     string
		op       verbs.WROpcode
		n        int
		src, dst int // offsets in the requester's and the responder's buffer
		oneMem   bool
	}{
		{"write 1 MiB", verbs.WRRDMAWrite, size / 2, 0, 4096, false},
		{"read 1 MiB", verbs.WRRDMARead, size / 2, 8192, 100, false},
		{"send 300 KiB", verbs.WRSend, 300 << 10, 12, 0, false},
		{"write 200 KiB overlapping", verbs.WRRDMAWrite, 200 << 10, 0, 64 << 10, true},
		{"read 200 KiB overlapping", verbs.WRRDMARead, 200 << 10, 64 << 10, 0, true},
		{"write 100 bytes", verbs.WRRDMAWrite, 100, 5, 7, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var want string
			for _, v := range []struct {
				ext, direct bool
			}{{false, true}, {false, false}, {true, true}, {true, false}} {
				got, directs := extRun(t, c.op, size, c.n, c.src, c.dst, c.oneMem, v.ext, v.direct)
				// Disjoint memory moves directly, by chunks; overlapping
				// memory of one process beyond the scratch buffer goes to
				// the engine.
				if wantDirect := v.direct && (!c.oneMem || !v.ext); (directs == 1) != wantDirect {
					t.Errorf("external memory %v, direct %v: %d messages took the direct path", v.ext, v.direct, directs)
				}
				if want == "" {
					want = got
					continue
				}
				if got != want {
					t.Errorf("external memory %v, direct %v: %.300s\nwant %.300s", v.ext, v.direct, got, want)
				}
			}
		})
	}
}

// extRun runs one message between two RC QPs of one device, in buffers of
// size bytes (one buffer for both with oneMem), and describes the
// completions and a digest of the memory; and how many messages took the
// direct path.
func extRun(t *testing.T, op verbs.WROpcode, size, n, srcOff, dstOff int, oneMem, ext, direct bool) (string, uint64) {
	t.Helper()
	f, err := sim.NewFabric(sim.Config{Devices: []sim.DeviceConfig{{Name: "a"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sim.SetDirect(f, direct)
	c, err := f.Devices()[0].Open()
	if err != nil {
		t.Fatal(err)
	}
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := c.CreateCQ(16, nil, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	all := verbs.AccessLocalWrite | verbs.AccessRemoteWrite | verbs.AccessRemoteRead
	bufs := [2][]byte{make([]byte, size), make([]byte, size)}
	if oneMem {
		bufs[1] = bufs[0]
	}
	for i := range bufs[0] {
		bufs[0][i] = byte(i*7 + i>>8)
	}
	if !oneMem {
		for i := range bufs[1] {
			bufs[1][i] = byte(i * 3)
		}
	}
	var mrs [2]*sim.MR
	for i := range mrs {
		switch {
		case i == 1 && oneMem:
			mrs[1] = mrs[0]
		case ext:
			mrs[i], err = regExt(pd, bufs[i], uint64(0x7f12_0000_0000+i<<24), all)
		default:
			mrs[i], err = pd.RegMR(bufs[i], all)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	var qps [2]*sim.QP
	for i := range qps {
		qps[i], err = pd.CreateQP(sim.QPInitAttr{SendCQ: cq, RecvCQ: cq, Type: verbs.QPTypeRC,
			Cap: verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := sim.Connect(qps[0], qps[1], sim.ConnectOptions{PathMTU: verbs.MTU4096, Access: all}); err != nil {
		t.Fatal(err)
	}
	if op == verbs.WRSend {
		r := verbs.RecvWR{WRID: 2, SGList: []verbs.SGE{{Addr: mrs[1].IOVA() + uint64(dstOff), Length: uint32(n), LKey: mrs[1].LKey()}}}
		if _, err := qps[1].PostRecv([]verbs.RecvWR{r}); err != nil {
			t.Fatal(err)
		}
	}
	w := verbs.SendWR{WRID: 1, Opcode: op, Flags: verbs.SendSignaled,
		SGList:     []verbs.SGE{{Addr: mrs[0].IOVA() + uint64(srcOff), Length: uint32(n), LKey: mrs[0].LKey()}},
		RemoteAddr: mrs[1].IOVA() + uint64(dstOff), RKey: mrs[1].RKey()}
	if _, err := qps[0].PostSend([]verbs.SendWR{w}); err != nil {
		t.Fatal(err)
	}
	f.Stabilize()
	wcs := make([]verbs.WC, 4)
	got, err := cq.Poll(wcs)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, wc := range wcs[:got] {
		wc.QPNum, wc.SrcQP = 0, 0
		fmt.Fprintf(&b, "%+v\n", wc)
	}
	for i, buf := range bufs {
		sum := uint64(0)
		for k, x := range buf {
			sum = sum*31 + uint64(x) + uint64(k)
		}
		fmt.Fprintf(&b, "buf%d %x\n", i, sum)
	}
	_, directs := sim.EngineSeq(f)
	return b.String(), directs
}
