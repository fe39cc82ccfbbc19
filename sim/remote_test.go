package sim_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// memWire joins fabrics of one process as separate processes would be
// joined: every fabric's Remote hands frames to a bounded queue of the
// destination fabric, which a goroutine of its own feeds to Receive. A full
// queue, or a fabric marked dead, loses the frame.
type memWire struct {
	mu    sync.Mutex
	byLID map[uint16]*memNode
	byGID map[verbs.GID]*memNode
}

type memNode struct {
	f    *sim.Fabric
	in   chan []byte
	dead bool
	done chan struct{}
}

// memRemote is one fabric's end of the wire.
type memRemote struct{ w *memWire }

func (r memRemote) Send(p sim.RemotePacket) error {
	r.w.mu.Lock()
	n := r.w.byLID[p.DLID]
	if p.Global {
		n = r.w.byGID[p.DGID]
	}
	dead := n == nil || n.dead
	r.w.mu.Unlock()
	if dead {
		return errors.New("no such peer")
	}
	select {
	case n.in <- append([]byte(nil), p.Frame...):
		return nil
	default:
		return errors.New("peer queue full")
	}
}

// attach makes a Background fabric with one device named name whose port
// has LID lid (InfiniBand) or only a GID (eth), joined to the wire.
func (w *memWire) attach(t *testing.T, name string, lid uint16, eth bool, faults sim.Faults, seed uint64) (*sim.Fabric, *memNode) {
	t.Helper()
	attr := sim.DefaultDeviceAttr()
	attr.NodeGUID = 0x0002c90300000000 | uint64(lid)<<8
	pa := verbs.PortAttr{LID: lid}
	if eth {
		pa = verbs.PortAttr{LinkLayer: verbs.LinkLayerEthernet}
	}
	f, err := sim.NewFabric(sim.Config{Mode: sim.Background, Remote: memRemote{w}, Faults: faults, Seed: seed,
		Devices: []sim.DeviceConfig{{Name: name, Attr: attr, Ports: []sim.PortConfig{{Attr: pa}}}}})
	if err != nil {
		t.Fatal(err)
	}
	n := &memNode{f: f, in: make(chan []byte, 1024), done: make(chan struct{})}
	c, err := f.Devices()[0].Open()
	if err != nil {
		t.Fatal(err)
	}
	gid, err := c.QueryGID(1, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	if w.byLID == nil {
		w.byLID, w.byGID = map[uint16]*memNode{}, map[verbs.GID]*memNode{}
	}
	if !eth {
		w.byLID[lid] = n
	}
	w.byGID[gid] = n
	w.mu.Unlock()
	go func() {
		defer close(n.done)
		for fr := range n.in {
			if err := f.Receive(fr); err != nil {
				t.Errorf("receive: %v", err)
			}
		}
	}()
	t.Cleanup(func() {
		w.kill(n)
		close(n.in)
		<-n.done
		f.Close()
	})
	return f, n
}

// kill makes n a dead process: frames to it are lost.
func (w *memWire) kill(n *memNode) {
	w.mu.Lock()
	n.dead = true
	w.mu.Unlock()
}

// connectRemote takes a (on one fabric) to RTS, connected to the QP of
// peer (on another) at the address of its port 1.
func connectRemote(t *testing.T, a, peer *end, sqpsn, rqpsn uint32, timeout, retry uint8) {
	t.Helper()
	pattr, err := peer.ctx.QueryPort(1)
	if err != nil {
		t.Fatal(err)
	}
	av := verbs.AHAttr{DLID: pattr.LID, PortNum: 1}
	if pattr.LinkLayer == verbs.LinkLayerEthernet {
		gid, _ := peer.ctx.QueryGID(1, 0)
		av.IsGlobal, av.GRH = true, verbs.GlobalRoute{DGID: gid, HopLimit: 64}
	}
	access := verbs.AccessRemoteWrite | verbs.AccessRemoteRead | verbs.AccessRemoteAtomic
	if a.q.Type() == verbs.QPTypeUC {
		access = verbs.AccessRemoteWrite
	}
	rtr := verbs.QPAttrState | verbs.QPAttrAV | verbs.QPAttrPathMTU | verbs.QPAttrDestQPN | verbs.QPAttrRQPSN
	rts := verbs.QPAttrState | verbs.QPAttrSQPSN
	if a.q.Type() == verbs.QPTypeRC {
		rtr |= verbs.QPAttrMaxDestRDAtomic | verbs.QPAttrMinRNRTimer
		rts |= verbs.QPAttrTimeout | verbs.QPAttrRetryCnt | verbs.QPAttrRNRRetry | verbs.QPAttrMaxQPRDAtomic
	}
	if err := errors.Join(
		a.q.Modify(&verbs.QPAttr{QPState: verbs.QPStateInit, PortNum: 1, QPAccessFlags: access},
			verbs.QPAttrState|verbs.QPAttrPKeyIndex|verbs.QPAttrPort|verbs.QPAttrAccessFlags),
		a.q.Modify(&verbs.QPAttr{QPState: verbs.QPStateRTR, PathMTU: verbs.MTU256, DestQPNum: peer.q.Num(), RQPSN: rqpsn,
			MaxDestRDAtomic: 4, MinRNRTimer: 1, AHAttr: av}, rtr),
		a.q.Modify(&verbs.QPAttr{QPState: verbs.QPStateRTS, SQPSN: sqpsn, Timeout: timeout, RetryCnt: retry,
			RNRRetry: 7, MaxRDAtomic: 4}, rts),
	); err != nil {
		t.Fatal(err)
	}
}

// waitWCs polls e's CQ until want completions arrived, failing after a
// few seconds of wall time.
func (e *end) waitWCs(t *testing.T, want int) []verbs.WC {
	t.Helper()
	var out []verbs.WC
	buf := make([]verbs.WC, 16)
	// Only a hang ends here: the transport always settles every WR
	// (success or an error after its retries), so the bound is generous.
	// The tests run in synctest bubbles, where this is the bubble's clock:
	// a hang fails at once, when every goroutine is blocked.
	deadline := time.Now().Add(60 * time.Second)
	for len(out) < want {
		n, err := e.cq.Poll(buf[:min(len(buf), want-len(out))])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, buf[:n]...)
		if n == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d completions after 60 s: %v", len(out), want, out)
			}
			time.Sleep(50 * time.Microsecond)
		}
	}
	return out
}

// remotePair is an RC (or UC) pair whose ends live on two fabrics joined
// by a memWire.
func remotePair(t *testing.T, typ verbs.QPType, eth bool, faults sim.Faults, timeout, retry uint8) (a, b *end, na, nb *memNode, w *memWire) {
	w = &memWire{}
	fa, na := w.attach(t, "a", 1, eth, faults, 1)
	fb, nb := w.attach(t, "b", 2, eth, faults, 2)
	a, b = newEnd(t, fa.Devices()[0], typ, 1<<16), newEnd(t, fb.Devices()[0], typ, 1<<16)
	connectRemote(t, a, b, 0, 1000, timeout, retry)
	connectRemote(t, b, a, 1000, 0, timeout, retry)
	return a, b, na, nb, w
}

// TestRemoteRC: an RC pair across two fabrics behaves as one on a single
// fabric: SEND with immediate scattered over two SGEs, RDMA WRITE, RDMA
// READ and both atomics, over InfiniBand (LID routing) and Ethernet (GID
// routing).
func TestRemoteRC(t *testing.T) {
	for _, eth := range []bool{false, true} {
		name := map[bool]string{false: "ib", true: "eth"}[eth]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a, b, _, _, _ := remotePair(t, verbs.QPTypeRC, eth, sim.Faults{}, 16, 7)
				msg := bytes.Repeat([]byte("verbsim!"), 100) // 4 packets at MTU 256
				copy(a.buf, msg)
				if _, err := b.q.PostRecv([]verbs.RecvWR{{WRID: 7, SGList: []verbs.SGE{b.sge(0, 500), b.sge(1000, 500)}}}); err != nil {
					t.Fatal(err)
				}
				if _, err := a.q.PostSend([]verbs.SendWR{{WRID: 1, Opcode: verbs.WRSendWithImm, Imm: 0xdeadbeef, Flags: verbs.SendSignaled,
					SGList: []verbs.SGE{a.sge(0, 300), a.sge(300, 500)}}}); err != nil {
					t.Fatal(err)
				}
				if s := a.waitWCs(t, 1)[0]; s.Status != verbs.WCSuccess || s.Opcode != verbs.WCSend {
					t.Errorf("send WC %v", &s)
				}
				r := b.waitWCs(t, 1)[0]
				if r.Status != verbs.WCSuccess || r.ByteLen != 800 || r.ImmData != 0xdeadbeef || r.SrcQP != a.q.Num() {
					t.Errorf("recv WC %v", &r)
				}
				if got := append(append([]byte{}, b.buf[:500]...), b.buf[1000:1300]...); !bytes.Equal(got, msg) {
					t.Error("scattered bytes differ")
				}
				for i := range 3000 {
					a.buf[8192+i] = byte(i * 7)
				}
				binary.NativeEndian.PutUint64(b.buf[64:], 40)
				if _, err := a.q.PostSend([]verbs.SendWR{
					{WRID: 2, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(8192, 3000)},
						RemoteAddr: b.mr.Addr() + 4096, RKey: b.mr.RKey()},
					{WRID: 3, Opcode: verbs.WRRDMARead, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(20000, 3000)},
						RemoteAddr: b.mr.Addr() + 4096, RKey: b.mr.RKey()},
					{WRID: 4, Opcode: verbs.WRAtomicFetchAndAdd, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(128, 8)},
						RemoteAddr: b.mr.Addr() + 64, RKey: b.mr.RKey(), CompareAdd: 2},
					{WRID: 5, Opcode: verbs.WRAtomicCmpAndSwp, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(136, 8)},
						RemoteAddr: b.mr.Addr() + 64, RKey: b.mr.RKey(), CompareAdd: 42, Swap: 99},
				}); err != nil {
					t.Fatal(err)
				}
				for i, w := range a.waitWCs(t, 4) {
					if w.Status != verbs.WCSuccess || w.WRID != uint64(i+2) {
						t.Errorf("WC %d: %v", i, &w)
					}
				}
				if !bytes.Equal(b.buf[4096:7096], a.buf[8192:11192]) || !bytes.Equal(a.buf[20000:23000], a.buf[8192:11192]) {
					t.Error("RDMA WRITE then READ did not move the data")
				}
				if binary.NativeEndian.Uint64(a.buf[128:]) != 40 || binary.NativeEndian.Uint64(a.buf[136:]) != 42 || binary.NativeEndian.Uint64(b.buf[64:]) != 99 {
					t.Error("atomics")
				}
			})
		})
	}
}

// TestRemoteRCLossy: with a tenth of the packets lost and some duplicated
// on arrival, 300 SENDs still arrive exactly once and in order.
func TestRemoteRCLossy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The two fabrics run in Background mode inside a synctest bubble:
		// their clocks follow the bubble's, which moves only when every
		// goroutine of the bubble is blocked, so a retry timeout fires only
		// when a packet is really lost, never because a loaded machine did
		// not run the peer's goroutines in time.
		a, b, _, _, _ := remotePair(t, verbs.QPTypeRC, false, sim.Faults{Drop: 0.1, Duplicate: 0.05}, 16, 7)
		const n = 200
		for i := 0; i < n; i += 50 {
			var rwrs []verbs.RecvWR
			for j := range 50 {
				rwrs = append(rwrs, verbs.RecvWR{WRID: uint64(i + j), SGList: []verbs.SGE{b.sge((j%50)*600, 600)}})
			}
			if _, err := b.q.PostRecv(rwrs); err != nil {
				t.Fatal(err)
			}
			var swrs []verbs.SendWR
			for j := range 50 {
				swrs = append(swrs, verbs.SendWR{WRID: uint64(i + j), Opcode: verbs.WRSendWithImm, Imm: uint32(i + j),
					Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(0, 600)}})
			}
			if _, err := a.q.PostSend(swrs); err != nil {
				t.Fatal(err)
			}
			for j, w := range a.waitWCs(t, 50) {
				if w.Status != verbs.WCSuccess || w.WRID != uint64(i+j) {
					t.Fatalf("send WC %d: %v", i+j, &w)
				}
			}
			for j, w := range b.waitWCs(t, 50) {
				if w.Status != verbs.WCSuccess || w.ImmData != uint32(i+j) {
					t.Fatalf("recv WC %d: %v", i+j, &w)
				}
			}
		}
		if n, _ := b.cq.Poll(make([]verbs.WC, 4)); n != 0 {
			t.Errorf("%d extra completions", n)
		}
	})
}

// TestRemoteDeadPeer: when the peer's process is gone, every packet to it
// is lost, and the requester ends in RETRY_EXC_ERR after retry_cnt
// timeouts, never waiting for ever.
func TestRemoteDeadPeer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, _, _, nb, w := remotePair(t, verbs.QPTypeRC, false, sim.Faults{}, 8, 3) // 1 ms timeout
		w.kill(nb)
		start := time.Now()
		if _, err := a.q.PostSend([]verbs.SendWR{{WRID: 9, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(0, 10)}}}); err != nil {
			t.Fatal(err)
		}
		if s := a.waitWCs(t, 1)[0]; s.Status != verbs.WCRetryExcErr || s.WRID != 9 {
			t.Errorf("send WC %v, want RETRY_EXC_ERR", &s)
		}
		t.Logf("RETRY_EXC_ERR after %v", time.Since(start))
		if a.q.State() != verbs.QPStateErr {
			t.Errorf("QP state %v, want ERR", a.q.State())
		}
	})
}

// TestRemoteUD: a UD datagram crosses fabrics through an AH naming the
// other fabric's LID, with its GRH space and source QPN.
func TestRemoteUD(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &memWire{}
		fa, _ := w.attach(t, "a", 1, false, sim.Faults{}, 1)
		fb, _ := w.attach(t, "b", 2, false, sim.Faults{}, 2)
		a, b := newEnd(t, fa.Devices()[0], verbs.QPTypeUD, 1<<14), newEnd(t, fb.Devices()[0], verbs.QPTypeUD, 1<<14)
		for _, e := range []*end{a, b} {
			if err := sim.ReadyUD(e.q, 0x1111); err != nil {
				t.Fatal(err)
			}
		}
		ah, err := a.pd.CreateAH(verbs.AHAttr{DLID: 2, PortNum: 1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.q.PostRecv([]verbs.RecvWR{{WRID: 3, SGList: []verbs.SGE{b.sge(0, 40+100)}}}); err != nil {
			t.Fatal(err)
		}
		copy(a.buf, "datagram")
		if _, err := a.q.PostSend([]verbs.SendWR{{WRID: 1, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(0, 100)},
			AH: ah, RemoteQPN: b.q.Num(), RemoteQKey: 0x1111}}); err != nil {
			t.Fatal(err)
		}
		if s := a.waitWCs(t, 1)[0]; s.Status != verbs.WCSuccess {
			t.Errorf("send WC %v", &s)
		}
		r := b.waitWCs(t, 1)[0]
		if r.Status != verbs.WCSuccess || r.ByteLen != 140 || r.SrcQP != a.q.Num() || r.SLID != 1 || string(b.buf[40:48]) != "datagram" {
			t.Errorf("recv WC %v", &r)
		}
	})
}
