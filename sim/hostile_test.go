package sim

import (
	"bytes"
	"testing"

	"github.com/verbsim/verbsim/sim/internal/qp"
	"github.com/verbsim/verbsim/verbs"
)

// A hostile or buggy peer: packets of the right QP numbers and PSNs with
// the wrong lengths (XFER-34), acknowledgements from the wrong address
// (XFER-27) or for PSNs never sent (XFER-35). Each case is a named function
// run under every built-in profile; none may end in a success completion
// for data that did not land, or in data landing that no request sent.

// hostileWorld is an RC (or UC) pair a -> b on two devices of a Manual
// fabric: a's requests start at PSN 100, b's at 1100, the path MTU is 1024,
// and b's MR of 8 KiB is zero.
type hostileWorld struct {
	t    *testing.T
	f    *Fabric
	a, b hostileEnd
	eth  bool
}

type hostileEnd struct {
	ctx *Context
	q   *QP
	cq  *CQ
	mr  *MR
	buf []byte
	lid uint16
	gid verbs.GID
}

func newHostileWorld(t *testing.T, p Profile, typ verbs.QPType, eth bool) *hostileWorld {
	t.Helper()
	pc := PortConfig{}
	if eth {
		pc.Attr.LinkLayer = verbs.LinkLayerEthernet
	}
	f, err := NewFabric(Config{Mode: Manual, Profile: p, Devices: []DeviceConfig{
		{Name: "a", Ports: []PortConfig{pc}}, {Name: "b", Ports: []PortConfig{pc}}, {Name: "c", Ports: []PortConfig{pc}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	w := &hostileWorld{t: t, f: f, eth: eth}
	mk := func(d *Device) hostileEnd {
		ctx, err := d.Open()
		w.must(err)
		pd, err := ctx.AllocPD()
		w.must(err)
		cq, err := ctx.CreateCQ(64, nil, nil, 0)
		w.must(err)
		buf := make([]byte, 8192)
		mr, err := pd.RegMR(buf, verbs.AccessLocalWrite|verbs.AccessRemoteWrite|verbs.AccessRemoteRead)
		w.must(err)
		q, err := pd.CreateQP(QPInitAttr{SendCQ: cq, RecvCQ: cq, Type: typ,
			Cap: verbs.QPCap{MaxSendWR: 8, MaxRecvWR: 8, MaxSendSGE: 1, MaxRecvSGE: 1}})
		w.must(err)
		pa, err := ctx.QueryPort(1)
		w.must(err)
		gid, err := ctx.QueryGID(1, 0)
		w.must(err)
		return hostileEnd{ctx: ctx, q: q, cq: cq, mr: mr, buf: buf, lid: pa.LID, gid: gid}
	}
	w.a, w.b = mk(f.Devices()[0]), mk(f.Devices()[1])
	access := verbs.AccessRemoteWrite | verbs.AccessRemoteRead
	if typ == verbs.QPTypeUC {
		access = verbs.AccessRemoteWrite
	}
	w.must(Connect(w.a.q, w.b.q, ConnectOptions{SQPSN: 100, PathMTU: verbs.MTU1024, Access: access, Timeout: 14, RetryCnt: 7}))
	return w
}

func (w *hostileWorld) must(err error) {
	w.t.Helper()
	if err != nil {
		w.t.Fatal(err)
	}
}

// forged returns a packet of kind k from QP from's address to QP to.
func (w *hostileWorld) forged(k qp.PacketKind, from, to *hostileEnd, psn uint32) *qp.Packet {
	p := &qp.Packet{Kind: k, Transport: to.q.Type(), SrcQPN: from.q.Num(), DstQPN: to.q.Num(), PSN: psn,
		Port: 1, SLID: from.lid, DLID: to.lid, Global: w.eth}
	if w.eth {
		p.SGID, p.DGID = from.gid, to.gid
	}
	return p
}

// inject queues p's arrival at to's port, after every event ready now.
func (w *hostileWorld) inject(to *hostileEnd, p *qp.Packet) {
	w.f.d.Lock()
	defer w.f.d.Unlock()
	e := w.f.eng
	pk := e.newPacket()
	buf := append(pk.Payload[:0], p.Payload...)
	*pk = *p
	pk.Payload = buf
	e.arriveLocked(to.q.PD().ctx.dev.ports[0], pk)
}

// dropNext drops the next packet a sends.
func (w *hostileWorld) dropNext() {
	_, err := w.f.InjectPacketFault(PacketFault{Action: FaultDrop, Count: 1, Match: FromQP(w.a.q)})
	w.must(err)
}

// post posts wr on a's QP.
func (w *hostileWorld) post(wr verbs.SendWR) {
	w.t.Helper()
	wr.Flags |= verbs.SendSignaled
	_, err := w.a.q.PostSend([]verbs.SendWR{wr})
	w.must(err)
}

// recv posts a receive of n bytes at offset off of b's buffer.
func (w *hostileWorld) recv(off, n uint32) {
	w.t.Helper()
	_, err := w.b.q.PostRecv([]verbs.RecvWR{{WRID: 77, SGList: []verbs.SGE{{Addr: w.b.mr.Addr() + uint64(off), Length: n, LKey: w.b.mr.LKey()}}}})
	w.must(err)
}

// polled returns what x's CQ holds now.
func (x *hostileEnd) polled(t *testing.T) []verbs.WC {
	t.Helper()
	wcs := make([]verbs.WC, 16)
	n, err := x.cq.Poll(wcs)
	if err != nil {
		t.Fatal(err)
	}
	return wcs[:n]
}

// wantNoSuccess fails unless none of wcs is a successful send completion.
func wantNoSuccess(t *testing.T, what string, wcs []verbs.WC) {
	t.Helper()
	for _, c := range wcs {
		if c.Status == verbs.WCSuccess && !c.Opcode.IsRecv() {
			t.Errorf("%s: %v: the request succeeded", what, &c)
		}
	}
}

// wantUntouched fails unless b's buffer is all zero from off for n bytes.
func (w *hostileWorld) wantUntouched(what string, off, n int) {
	w.t.Helper()
	if !bytes.Equal(w.b.buf[off:off+n], make([]byte, n)) {
		w.t.Errorf("%s: bytes landed in the target: % x...", what, w.b.buf[off:off+min(n, 16)])
	}
}

// fill returns n bytes of c.
func fill(c byte, n int) []byte { return bytes.Repeat([]byte{c}, n) }

// hostileTruncatedWrite: a single-packet WRITE of 512 bytes whose packet
// carries only 100 arrives before the genuine one: NAK, never an ACK of 512
// bytes of which 100 landed.
func hostileTruncatedWrite(t *testing.T, w *hostileWorld) {
	copy(w.a.buf, fill('g', 512))
	w.post(verbs.SendWR{WRID: 1, Opcode: verbs.WRRDMAWrite, SGList: []verbs.SGE{{Addr: w.a.mr.Addr(), Length: 512, LKey: w.a.mr.LKey()}},
		RemoteAddr: w.b.mr.Addr(), RKey: w.b.mr.RKey()})
	p := w.forged(qp.PktWrite, &w.a, &w.b, 100)
	p.Op, p.First, p.Last, p.RemoteAddr, p.RKey, p.DMALen, p.Payload = verbs.WRRDMAWrite, true, true, w.b.mr.Addr(), w.b.mr.RKey(), 512, fill('X', 100)
	w.inject(&w.b, p)
	w.f.RunUntilIdle(1 << 40)
	got := w.a.polled(t)
	wantNoSuccess(t, "a WRITE whose only packet carries 100 of its 512 bytes", got)
	if bytes.Contains(w.b.buf, []byte("X")) {
		t.Error("the truncated packet's bytes landed")
	}
	if s := w.b.q.State(); s != verbs.QPStateErr {
		t.Errorf("the responder is in %v after a length error, want ERR (NAK invalid request)", s)
	}
}

// writeDMA injects a WRITE only packet of DMA length dma and n bytes.
func hostileWriteDMA(t *testing.T, w *hostileWorld, dma uint32, n int) {
	p := w.forged(qp.PktWrite, &w.a, &w.b, 100)
	p.Op, p.First, p.Last, p.RemoteAddr, p.RKey, p.DMALen, p.Payload = verbs.WRRDMAWrite, true, true, w.b.mr.Addr(), w.b.mr.RKey(), dma, fill('X', n)
	w.inject(&w.b, p)
	w.f.RunUntilIdle(1 << 40)
	w.wantUntouched("a WRITE packet longer than its DMA length", 0, 4096)
	if s := w.b.q.State(); s != verbs.QPStateErr {
		t.Errorf("the responder is in %v, want ERR", s)
	}
	if s := w.a.q.State(); s != verbs.QPStateRTS {
		t.Errorf("the requester went to %v on a NAK for a PSN it never sent (XFER-35)", s)
	}
}

func hostileWriteDMA8(t *testing.T, w *hostileWorld) { hostileWriteDMA(t, w, 8, 1024) }
func hostileWriteDMA0(t *testing.T, w *hostileWorld) { hostileWriteDMA(t, w, 0, 1024) }

// hostileWriteMiddle: a three-packet WRITE of 2500 bytes whose middle
// packet carries 500: NAK there, the last packet's bytes never land.
func hostileWriteMiddle(t *testing.T, w *hostileWorld) {
	for i, n := range []int{1024, 500, 452} {
		p := w.forged(qp.PktWrite, &w.a, &w.b, uint32(100+i))
		p.Op, p.First, p.Last, p.Payload = verbs.WRRDMAWrite, i == 0, i == 2, fill(byte('1'+i), n)
		if i == 0 {
			p.RemoteAddr, p.RKey, p.DMALen = w.b.mr.Addr(), w.b.mr.RKey(), 2500
		}
		w.inject(&w.b, p)
	}
	w.f.RunUntilIdle(1 << 40)
	if bytes.Contains(w.b.buf, []byte("2")) || bytes.Contains(w.b.buf, []byte("3")) {
		t.Error("bytes of the short middle packet or of the packet after it landed")
	}
	if s := w.b.q.State(); s != verbs.QPStateErr {
		t.Errorf("the responder is in %v, want ERR", s)
	}
}

// hostileSendMiddle: a SEND whose middle packet is short fails the
// receive with a length error.
func hostileSendMiddle(t *testing.T, w *hostileWorld) {
	w.recv(0, 4096)
	for i, n := range []int{1024, 500, 10} {
		p := w.forged(qp.PktSend, &w.a, &w.b, uint32(100+i))
		p.Op, p.First, p.Last, p.Payload = verbs.WRSend, i == 0, i == 2, fill('s', n)
		w.inject(&w.b, p)
	}
	w.f.RunUntilIdle(1 << 40)
	got := w.b.polled(t)
	want := verbs.WCLocLenErr
	if w.f.profile.RecvTooSmallRemInvReq {
		want = verbs.WCRemInvReqErr
	}
	if len(got) != 1 || got[0].Status != want {
		t.Errorf("the receive of a SEND with a short middle packet: %v, want one %v", got, want)
	}
}

// hostileAboveMTU: a SEND packet of 2048 bytes on a path of MTU 1024.
func hostileAboveMTU(t *testing.T, w *hostileWorld) {
	w.recv(0, 4096)
	p := w.forged(qp.PktSend, &w.a, &w.b, 100)
	p.Op, p.First, p.Last, p.Payload = verbs.WRSend, true, true, fill('s', 2048)
	w.inject(&w.b, p)
	w.f.RunUntilIdle(1 << 40)
	for _, c := range w.b.polled(t) {
		if c.Status == verbs.WCSuccess {
			t.Errorf("a SEND packet above the path MTU was received: %v", &c)
		}
	}
}

// hostileShortReadResponse: a READ response short of the bytes due arrives
// before the genuine ones: dropped, and the READ completes with the
// responder's bytes.
func hostileShortReadResponse(t *testing.T, w *hostileWorld) {
	for i := range 2048 {
		w.b.buf[i] = byte(i*7 + 1)
	}
	w.post(verbs.SendWR{WRID: 1, Opcode: verbs.WRRDMARead, SGList: []verbs.SGE{{Addr: w.a.mr.Addr(), Length: 2048, LKey: w.a.mr.LKey()}},
		RemoteAddr: w.b.mr.Addr(), RKey: w.b.mr.RKey()})
	w.f.Step() // the requester sends the READ request
	p := w.forged(qp.PktReadResp, &w.b, &w.a, 100)
	p.First, p.Payload = true, fill(0xee, 500)
	w.inject(&w.a, p) // arrives before the responses the request calls for
	w.f.RunUntilIdle(1 << 40)
	got := w.a.polled(t)
	if len(got) != 1 || got[0].Status != verbs.WCSuccess {
		t.Fatalf("the READ: %v, want one SUCCESS", got)
	}
	if !bytes.Equal(w.a.buf[:2048], w.b.buf[:2048]) {
		t.Error("the READ completed with bytes the responder does not hold")
	}
}

// hostileUCWriteImm: a UC WRITE_WITH_IMM whose only packet carries 100 of
// its 512 bytes is dropped: no receive completion, nothing written.
func hostileUCWriteImm(t *testing.T, w *hostileWorld) {
	w.recv(0, 64)
	p := w.forged(qp.PktWrite, &w.a, &w.b, 100)
	p.Op, p.First, p.Last, p.RemoteAddr, p.RKey, p.DMALen, p.Imm, p.Payload = verbs.WRRDMAWriteWithImm, true, true,
		w.b.mr.Addr()+4096, w.b.mr.RKey(), 512, 9, fill('X', 100)
	w.inject(&w.b, p)
	w.f.RunUntilIdle(1 << 40)
	if got := w.b.polled(t); len(got) != 0 {
		t.Errorf("a truncated UC WRITE_WITH_IMM completed a receive: %v", got)
	}
	w.wantUntouched("a truncated UC WRITE_WITH_IMM", 4096, 512)
}

// sendLost posts a SEND on a whose packet is lost, and a receive on b.
func (w *hostileWorld) sendLost() {
	w.recv(0, 64)
	w.dropNext()
	w.post(verbs.SendWR{WRID: 1, Opcode: verbs.WRSend, SGList: []verbs.SGE{{Addr: w.a.mr.Addr(), Length: 8, LKey: w.a.mr.LKey()}}})
	w.f.Stabilize() // sent and lost
}

// wantRetried checks that nothing completed while the SEND's packet was
// lost, and that its retransmission then completes it on both sides.
func (w *hostileWorld) wantRetried(what string) {
	w.t.Helper()
	w.f.Stabilize()
	if got := w.a.polled(w.t); len(got) != 0 {
		w.t.Errorf("%s: the requester completed %v although nothing was delivered", what, got)
		return
	}
	w.f.RunUntilIdle(1 << 40)
	a, b := w.a.polled(w.t), w.b.polled(w.t)
	if len(a) != 1 || a[0].Status != verbs.WCSuccess || len(b) != 1 || b[0].Status != verbs.WCSuccess {
		w.t.Errorf("%s: after the retransmission: requester %v, responder %v; want one SUCCESS each", what, a, b)
	}
}

// hostileGhostACK: an ACK for a PSN beyond every PSN sent is dropped, not
// an acknowledgement of everything.
func hostileGhostACK(t *testing.T, w *hostileWorld) {
	w.sendLost()
	p := w.forged(qp.PktAck, &w.b, &w.a, 150)
	w.inject(&w.a, p)
	w.wantRetried("an ACK for PSN 150 when 100 was sent")
}

// hostileGhostNAK: a sequence NAK beyond every PSN sent likewise.
func hostileGhostNAK(t *testing.T, w *hostileWorld) {
	w.sendLost()
	p := w.forged(qp.PktAck, &w.b, &w.a, 150)
	p.Syndrome = qp.SynSeqErr
	w.inject(&w.a, p)
	w.wantRetried("a NAK_SEQ for PSN 150 when 100 was sent")
}

// hostileACKOtherAddress: an ACK with the peer's QP number and the right
// PSN, from another port's address, is ignored.
func hostileACKOtherAddress(t *testing.T, w *hostileWorld) {
	w.sendLost()
	c, err := w.f.Devices()[2].Open()
	w.must(err)
	pa, _ := c.QueryPort(1)
	gid, _ := c.QueryGID(1, 0)
	p := w.forged(qp.PktAck, &w.b, &w.a, 100)
	p.SLID, p.SGID = pa.LID, gid
	w.inject(&w.a, p)
	w.wantRetried("an ACK from another port")
}

// hostileRequestOtherAddress: a SEND with the peer's QP number and the
// expected PSN, from another port's address, is ignored.
func hostileRequestOtherAddress(t *testing.T, w *hostileWorld) {
	w.recv(0, 64)
	c, err := w.f.Devices()[2].Open()
	w.must(err)
	pa, _ := c.QueryPort(1)
	gid, _ := c.QueryGID(1, 0)
	p := w.forged(qp.PktSend, &w.a, &w.b, 100)
	p.Op, p.First, p.Last, p.Payload = verbs.WRSend, true, true, []byte("forged")
	p.SLID, p.SGID = pa.LID, gid
	w.inject(&w.b, p)
	w.f.RunUntilIdle(1 << 40)
	if got := w.b.polled(t); len(got) != 0 {
		t.Errorf("a SEND from another port was received: %v", got)
	}
}

func TestHostilePeer(t *testing.T) {
	cases := []struct {
		name string
		typ  verbs.QPType
		eth  bool
		run  func(*testing.T, *hostileWorld)
	}{
		{"truncated WRITE (XFER-34)", verbs.QPTypeRC, false, hostileTruncatedWrite},
		{"WRITE of DMA length 8 with 1024 bytes (XFER-34)", verbs.QPTypeRC, false, hostileWriteDMA8},
		{"WRITE of DMA length 0 with 1024 bytes (XFER-34)", verbs.QPTypeRC, false, hostileWriteDMA0},
		{"WRITE with a short middle packet (XFER-34)", verbs.QPTypeRC, false, hostileWriteMiddle},
		{"SEND with a short middle packet (XFER-34)", verbs.QPTypeRC, false, hostileSendMiddle},
		{"SEND packet above the MTU (XFER-34)", verbs.QPTypeRC, false, hostileAboveMTU},
		{"short READ response (XFER-34)", verbs.QPTypeRC, false, hostileShortReadResponse},
		{"truncated UC WRITE_WITH_IMM (XFER-34)", verbs.QPTypeUC, false, hostileUCWriteImm},
		{"ghost ACK (XFER-35)", verbs.QPTypeRC, false, hostileGhostACK},
		{"ghost NAK (XFER-35)", verbs.QPTypeRC, false, hostileGhostNAK},
		{"ACK from another LID (XFER-27)", verbs.QPTypeRC, false, hostileACKOtherAddress},
		{"ACK from another GID (XFER-27)", verbs.QPTypeRC, true, hostileACKOtherAddress},
		{"SEND from another LID (XFER-27)", verbs.QPTypeRC, false, hostileRequestOtherAddress},
		{"SEND from another GID (XFER-27)", verbs.QPTypeRC, true, hostileRequestOtherAddress},
		{"UC SEND from another GID (XFER-27)", verbs.QPTypeUC, true, hostileRequestOtherAddress},
	}
	for _, p := range Profiles() {
		for _, c := range cases {
			t.Run(p.Name+"/"+c.name, func(t *testing.T) {
				c.run(t, newHostileWorld(t, p, c.typ, c.eth))
			})
		}
	}
}
