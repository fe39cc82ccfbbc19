package sim

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/verbsim/verbsim/sim/internal/qp"
	"github.com/verbsim/verbsim/verbs"
)

// Packets from the wire are input verbsim does not control: a buggy or
// hostile peer may send anything. FuzzForeignPackets delivers arbitrary
// packets to the QPs of a fabric where RC, UC and UD pairs have traffic in
// flight, interleaved with engine steps and clock ticks, and checks that the
// engine neither panics nor invents anything: every completion names a QP of
// its device and a request that QP posted, no request completes twice, a
// successful receive never reports more bytes than its buffer holds, and
// the fabric always runs down to idle. And as each packet is delivered: one
// that a connected (RC or UC) QP must not take from where it comes (another
// LID or QP number than its peer's, XFER-27) changes nothing at all, and
// the first packet of an RDMA WRITE writes nothing outside the range its
// DMA length names (XFER-34).
func FuzzForeignPackets(f *testing.F) {
	f.Add([]byte{})
	// An RC SEND into b's receive queue at the expected PSN, then steps.
	f.Add([]byte{0, 1, 0, 0, 0x0f, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 2, 8})
	// An RDMA WRITE of 2^31+1 bytes, an ACK with a bad syndrome, a READ
	// response nobody asked for, then ticks.
	f.Add([]byte{0, 1, 1, 0, 0x4f, 0, 0, 0, 0, 0, 0, 0, 0x80, 0, 1, 2, 0,
		0, 0, 6, 0, 0x0f, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0,
		0, 4, 4, 0, 0x03, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 10, 0, 3, 200})
	// a's requester sends its four requests (PSNs 0 to 3); then an ACK of
	// PSN 1 with the peer's QP number from another LID (XFER-27).
	f.Add([]byte{2, 1, 0, 0, 6, 0, 16, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	// An RDMA WRITE to b of DMA length 0 whose only packet carries 240
	// bytes, at offset 0x1000 of b's MR (XFER-34).
	f.Add([]byte{0, 1, 1, 0, 3, 0, 0, 0, 0, 0, 0x11, 0, 0, 0, 0, 10, 0, 0})
	// UD datagrams with the right and a wrong Q_Key.
	f.Add([]byte{0, 5, 0, 2, 0x03, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0x80,
		0, 5, 0, 2, 0x03, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0x00, 2, 8})
	f.Fuzz(runWire)
}

// runWire is one input of FuzzForeignPackets. A livelock in the engine
// would hang the fuzzer without a word, so a watchdog ends the process with
// every goroutine's stack if an input runs for ten seconds (they take
// microseconds); the fuzzer then keeps the input as a crasher.
func runWire(t *testing.T, data []byte) {
	wd := time.AfterFunc(10*time.Second, func() {
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		os.Stderr.Write(buf[:n])
		os.Exit(3)
	})
	defer wd.Stop()
	{
		w := newWireWorld(t)
		for len(data) > 0 {
			op := data[0]
			data = data[1:]
			switch op % 4 {
			case 0, 1:
				var pk [17]byte
				n := copy(pk[:], data)
				data = data[n:]
				w.inject(pk)
			case 2:
				if len(data) > 0 {
					for range data[0] % 16 {
						w.f.Step()
					}
					data = data[1:]
				}
			case 3:
				if len(data) > 0 {
					w.f.Tick(uint64(data[0]) << 12)
					data = data[1:]
				}
			}
			w.check()
		}
		// Retries and RNR retries are bounded (retry_cnt and rnr_retry 1),
		// so whatever the packets did the fabric must come to rest.
		if !w.f.RunUntilIdle(1 << 50) {
			t.Fatal("the fabric never became idle")
		}
		w.check()
		if ready, future := w.f.Pending(); ready != 0 || future != 0 {
			t.Fatalf("idle with %d ready and %d future events", ready, future)
		}
	}
}

// wireWorld is two devices with an RC, a UC and a UD pair between them,
// each QP with receives posted and the QPs of device a with sends posted,
// in Manual mode so that nothing moves until the fuzzer says.
type wireWorld struct {
	t    *testing.T
	f    *Fabric
	qps  [6]*QP // rc a, rc b, uc a, uc b, ud a, ud b
	mrs  [2]*MR
	cqs  [2]*CQ
	lids [2]uint16
	// posted[qpIndex] holds the wr_ids posted, mapped to the buffer size
	// of a receive (0 for a send); done the wr_ids completed.
	posted [6]map[uint64]uint32
	done   map[uint64]bool
	wcs    []verbs.WC
}

const (
	wwSendID = 0x1000 // + 16*qp index + k
	wwRecvID = 0x2000
	wwQKey   = 0x1111
	wwMRSize = 8192
)

func newWireWorld(t *testing.T) *wireWorld {
	f, err := NewFabric(Config{Mode: Manual, Devices: []DeviceConfig{{Name: "a"}, {Name: "b"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	w := &wireWorld{t: t, f: f, done: map[uint64]bool{}, wcs: make([]verbs.WC, 64)}
	var pds [2]*PD
	for i, d := range f.Devices() {
		ctx, err := d.Open()
		w.must(err)
		pds[i], err = ctx.AllocPD()
		w.must(err)
		w.cqs[i], err = ctx.CreateCQ(1024, nil, nil, 0)
		w.must(err)
		w.mrs[i], err = pds[i].RegMR(make([]byte, wwMRSize), verbs.AccessLocalWrite|verbs.AccessRemoteWrite|verbs.AccessRemoteRead|verbs.AccessRemoteAtomic)
		w.must(err)
		pa, err := ctx.QueryPort(1)
		w.must(err)
		w.lids[i] = pa.LID
	}
	for i, typ := range []verbs.QPType{verbs.QPTypeRC, verbs.QPTypeRC, verbs.QPTypeUC, verbs.QPTypeUC, verbs.QPTypeUD, verbs.QPTypeUD} {
		side := i % 2
		q, err := pds[side].CreateQP(QPInitAttr{SendCQ: w.cqs[side], RecvCQ: w.cqs[side], Type: typ,
			Cap: verbs.QPCap{MaxSendWR: 8, MaxRecvWR: 8, MaxSendSGE: 2, MaxRecvSGE: 2, MaxInlineData: 64}})
		w.must(err)
		w.qps[i] = q
		w.posted[i] = map[uint64]uint32{}
	}
	o := ConnectOptions{Timeout: 1, RetryCnt: 1, RNRRetry: 1, MinRNRTimer: 1, NoDefaults: true,
		Access: verbs.AccessRemoteWrite | verbs.AccessRemoteRead | verbs.AccessRemoteAtomic, RDAtomic: 2}
	w.must(Connect(w.qps[0], w.qps[1], o))
	w.must(Connect(w.qps[2], w.qps[3], o))
	w.must(ReadyUD(w.qps[4], wwQKey))
	w.must(ReadyUD(w.qps[5], wwQKey))
	for i := range w.qps {
		for k := range 4 {
			id := uint64(wwRecvID + 16*i + k)
			sge := w.sge(i%2, 1024*k, 1024)
			_, err := w.qps[i].PostRecv([]verbs.RecvWR{{WRID: id, SGList: []verbs.SGE{sge}}})
			w.must(err)
			w.posted[i][id] = sge.Length
		}
	}
	b := w.mrs[1]
	w.post(0, verbs.SendWR{Opcode: verbs.WRSend, SGList: []verbs.SGE{w.sge(0, 4096, 700)}})
	w.post(0, verbs.SendWR{Opcode: verbs.WRRDMAWrite, SGList: []verbs.SGE{w.sge(0, 4096, 300)}, RemoteAddr: b.Addr() + 4096, RKey: b.RKey()})
	w.post(0, verbs.SendWR{Opcode: verbs.WRRDMARead, SGList: []verbs.SGE{w.sge(0, 6000, 200)}, RemoteAddr: b.Addr() + 4096, RKey: b.RKey()})
	w.post(0, verbs.SendWR{Opcode: verbs.WRAtomicFetchAndAdd, SGList: []verbs.SGE{w.sge(0, 7000, 8)}, RemoteAddr: b.Addr() + 7000, RKey: b.RKey(), CompareAdd: 1})
	w.post(2, verbs.SendWR{Opcode: verbs.WRSendWithImm, SGList: []verbs.SGE{w.sge(0, 4096, 500)}, Imm: 7})
	ah, err := pds[0].CreateAH(verbs.AHAttr{DLID: w.lids[1], PortNum: 1})
	w.must(err)
	w.post(4, verbs.SendWR{Opcode: verbs.WRSend, SGList: []verbs.SGE{w.sge(0, 4096, 100)}, AH: ah, RemoteQPN: w.qps[5].Num(), RemoteQKey: wwQKey})
	return w
}

func (w *wireWorld) must(err error) {
	w.t.Helper()
	if err != nil {
		w.t.Fatal(err)
	}
}

// sge names n bytes at offset off of side's MR.
func (w *wireWorld) sge(side, off, n int) verbs.SGE {
	mr := w.mrs[side]
	return verbs.SGE{Addr: mr.Addr() + uint64(off), Length: uint32(n), LKey: mr.LKey()}
}

// post posts one signaled send on QP i.
func (w *wireWorld) post(i int, wr verbs.SendWR) {
	w.t.Helper()
	wr.WRID = uint64(wwSendID + 16*i + len(w.posted[i]) - 4)
	wr.Flags |= verbs.SendSignaled
	_, err := w.qps[i].PostSend([]verbs.SendWR{wr})
	w.must(err)
	w.posted[i][wr.WRID] = 0
}

// inject puts a packet decoded from b on the wire to one of the QPs, as
// another adapter would.
func (w *wireWorld) inject(b [17]byte) {
	ti := int(b[0]) % len(w.qps)
	dst := w.qps[ti]
	side, peer := ti%2, ti^1
	flags := b[3]
	p := qp.Packet{
		Kind:      qp.PacketKind(b[1] % 9), // two kinds beyond the last
		Transport: []verbs.QPType{verbs.QPTypeRC, verbs.QPTypeUC, verbs.QPTypeUD, verbs.QPType(9)}[b[2]%4],
		First:     flags&1 != 0,
		Last:      flags&2 != 0,
		SE:        flags&4 != 0,
		Op:        verbs.WROpcode(b[4] % 12),
		SrcQPN:    w.qps[peer].Num(),
		DstQPN:    dst.Num(),
		Syndrome:  qp.Syndrome(b[7] % 8),
		RNRTimer:  b[8] % 32,
		Imm:       uint32(b[15]),
		QKey:      wwQKey,
		Port:      1,
		SLID:      w.lids[1-side],
		DLID:      w.lids[side],
	}
	// A PSN near the one each direction starts from: a's requests from 0,
	// b's from 1000 (ConnectOptions.SQPSN).
	base := 0
	if b[6]&1 != 0 {
		base = 1000
	}
	p.PSN = uint32(base+int(int8(b[5]))) & 0xffffff
	if flags&8 != 0 {
		p.SrcQPN ^= uint32(b[9]) + 1 // someone else
	}
	if flags&16 != 0 {
		p.SLID ^= 0x40
	}
	if flags&32 != 0 {
		p.QKey ^= uint32(b[10]) + 1
	}
	if flags&64 != 0 {
		p.DstQPN = uint32(b[11]) << 4 // probably no QP
	}
	target := w.mrs[side]
	p.RemoteAddr = target.Addr() + uint64(binary.BigEndian.Uint16(b[9:11])) - 256
	switch b[11] % 4 {
	case 0, 1:
		p.RKey = target.RKey()
	case 2:
		p.RKey = target.LKey()
	default:
		p.RKey = uint32(b[12]) << 8
	}
	p.DMALen = uint32(binary.BigEndian.Uint16(b[12:14]))
	if flags&128 != 0 {
		p.DMALen |= 1 << 31
	}
	p.CompareAdd, p.Swap, p.Orig = uint64(b[13]), uint64(b[14]), uint64(b[16])
	n := int(b[14]) * 24 // up to 6120 bytes: more than any MTU
	connected := dst.Type() == verbs.QPTypeRC || dst.Type() == verbs.QPTypeUC
	forged := connected && flags&(8|16) != 0
	var allowed [2]uint64 // the bytes of the target MR a first WRITE packet may change
	checkWrite := connected && !forged && p.Kind == qp.PktWrite && p.First && p.Transport == dst.Type()
	if checkWrite {
		base := w.mrs[side].Addr()
		lo := max(p.RemoteAddr, base) - base
		allowed = [2]uint64{lo, max(lo, min(p.RemoteAddr+uint64(p.DMALen), base+wwMRSize)-base)}
	}
	before := w.snapshot()
	w.f.d.Lock()
	e := w.f.eng
	pk := e.newPacket()
	pay := pk.Payload[:0]
	for i := range n {
		pay = append(pay, byte(i))
	}
	*pk = p
	pk.Payload = pay
	e.deliverLocked(pk, w.f.Devices()[side].ports[0])
	w.f.d.Unlock()
	after := w.snapshot()
	what := fmt.Sprintf("%v %v psn %d from qp %#x lid %#x to qp %d", p.Transport, p.Kind, p.PSN, p.SrcQPN, p.SLID, ti)
	if forged {
		if d := before.diff(after); d != "" {
			w.t.Fatalf("%s, not its peer's address (XFER-27): it changed %s", what, d)
		}
	}
	if checkWrite {
		for i := range after.mem[side] {
			if after.mem[side][i] != before.mem[side][i] && (uint64(i) < allowed[0] || uint64(i) >= allowed[1]) {
				w.t.Fatalf("%s, DMA length %d at offset %d of the MR: byte %d changed (XFER-34)",
					what, p.DMALen, allowed[0], i)
			}
		}
	}
}

// wireSnapshot is what a delivered packet can change that the fuzz world
// sees: the events it queues, the QPs' states, the completions waiting and
// both MRs' bytes.
type wireSnapshot struct {
	ready, future int
	states        [6]verbs.QPState
	cqs           [2]int
	mem           [2][]byte
}

func (w *wireWorld) snapshot() wireSnapshot {
	var s wireSnapshot
	s.ready, s.future = w.f.Pending()
	for i, q := range w.qps {
		s.states[i] = q.State()
	}
	for i, c := range w.cqs {
		s.cqs[i] = c.Snapshot().Len
		s.mem[i] = bytes.Clone(w.mrs[i].buf)
	}
	return s
}

// diff names what differs between s and o, or returns "".
func (s wireSnapshot) diff(o wireSnapshot) string {
	switch {
	case s.ready != o.ready || s.future != o.future:
		return fmt.Sprintf("the events pending (%d+%d -> %d+%d)", s.ready, s.future, o.ready, o.future)
	case s.states != o.states:
		return fmt.Sprintf("the QPs' states (%v -> %v)", s.states, o.states)
	case s.cqs != o.cqs:
		return fmt.Sprintf("the completions waiting (%v -> %v)", s.cqs, o.cqs)
	case !bytes.Equal(s.mem[0], o.mem[0]) || !bytes.Equal(s.mem[1], o.mem[1]):
		return "memory"
	}
	return ""
}

// check polls both CQs and checks every completion against what was
// posted.
func (w *wireWorld) check() {
	w.t.Helper()
	for side, c := range w.cqs {
		for {
			n, err := c.Poll(w.wcs)
			if err != nil {
				w.t.Fatalf("poll_cq of device %d: %v", side, err)
			}
			if n == 0 {
				break
			}
			for _, x := range w.wcs[:n] {
				w.checkWC(side, x)
			}
		}
	}
	for i, q := range w.qps {
		if s := q.State(); s > verbs.QPStateErr {
			w.t.Fatalf("qp %d is in state %v", i, s)
		}
	}
}

func (w *wireWorld) checkWC(side int, x verbs.WC) {
	w.t.Helper()
	qi := -1
	for i := side; i < len(w.qps); i += 2 {
		if w.qps[i].Num() == x.QPNum {
			qi = i
		}
	}
	what := fmt.Sprintf("device %d: completion wr_id %#x qp %#x %s", side, x.WRID, x.QPNum, x.Status.Name())
	if qi < 0 {
		w.t.Fatalf("%s names no QP of its device", what)
	}
	size, ok := w.posted[qi][x.WRID]
	if !ok {
		w.t.Fatalf("%s: qp %d never posted that wr_id", what, qi)
	}
	if w.done[x.WRID] {
		w.t.Fatalf("%s: that request already completed", what)
	}
	w.done[x.WRID] = true
	if x.Status != verbs.WCSuccess {
		switch x.Status {
		case verbs.WCLocEECOpErr, verbs.WCLocRDDViolErr, verbs.WCRemInvRDReqErr, verbs.WCInvEECNErr, verbs.WCInvEECStateErr, verbs.WCMWBindErr, verbs.WCTMErr, verbs.WCTMRndvIncomplete:
			w.t.Fatalf("%s: a status the engine never produces (WC-S03)", what)
		}
		return
	}
	recv := x.WRID >= wwRecvID
	if x.Opcode.IsRecv() != recv {
		w.t.Fatalf("%s: opcode %s on a %s request (WC-06)", what, x.Opcode.Name(), map[bool]string{true: "receive", false: "send"}[recv])
	}
	if recv && x.ByteLen > size {
		w.t.Fatalf("%s: byte_len %d above the receive buffer's %d", what, x.ByteLen, size)
	}
}
