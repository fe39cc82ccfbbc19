package simtest

import (
	"testing"

	"github.com/verbsim/verbsim/rdmacm"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// PairOptions configure a pair of ends. The zero value gives each end a
// 64 KiB buffer registered for local write and every remote access its
// transport allows, a send CQ and a receive CQ of 256 entries, no channel,
// a QP with room for 64 send and 64 receive WRs of 4 SGEs and 64 bytes
// inline, and no receive posted.
type PairOptions struct {
	// Fabric configures the fabric the package-level RC, UC and UD make;
	// Fabric.RC and its relatives ignore it.
	Fabric Options
	// Connect are the attributes of the connection (RC and UC): timeout,
	// retry counts, RNR timer, path MTU, access. Zero fields take
	// sim.Connect's defaults.
	Connect sim.ConnectOptions
	// BufSize is the size of each end's registered buffer (default 64 KiB).
	BufSize int
	// Access is the MR's access (default local write, and remote write,
	// read and atomic where the transport has them).
	Access verbs.AccessFlags
	// CQE is the capacity of each CQ (default 256).
	CQE int
	// SharedCQ gives each end one CQ for sends and receives.
	SharedCQ bool
	// Channel gives each end a completion channel that its CQs report to
	// (not armed: call End.Arm).
	Channel bool
	// MaxWR is the QP's send and receive queue depth (default 64).
	MaxWR int
	// Recvs is how many receives are posted on each end at once, each of
	// RecvSize bytes in the upper half of the buffer (see End.PostRecv).
	Recvs int
	// RecvSize is the size of each receive the rig posts (default 256).
	RecvSize int
	// QKey is the Q_Key of UD ends (default 0x11111111).
	QKey uint32
}

// End is one side of a pair: its context, PD, CQs, optional channel,
// registered buffer and QP. The lower half of Buf is where Send, Write and
// Read take or put their local data (from offset 0); the upper half is
// where the receives the rig posts land.
//
// The helpers that can fail the test (Post, Send, Write, Read, PostRecv,
// Poll, Await, AwaitEvent, Arm) call t.Fatalf and belong to the test's
// goroutine. An event-loop goroutine uses the fields (QP, CQs, Chan) with
// the verbs directly; Received and SGE are safe to call from it as long as
// the test goroutine is not posting receives at the same time. Poll and
// Await take completions from both CQs, so do not poll the same end from
// an event loop and the test goroutine at once.
type End struct {
	F    *Fabric
	Name string // the device's name
	Ctx  *sim.Context
	PD   *sim.PD
	// SendCQ and RecvCQ are the QP's CQs; the same CQ with
	// PairOptions.SharedCQ.
	SendCQ, RecvCQ *sim.CQ
	// Chan is the completion channel of both CQs, with PairOptions.Channel.
	Chan *sim.CompChannel
	Buf  []byte
	MR   *sim.MR
	QP   *sim.QP
	// Peer is the other end of the pair.
	Peer *End
	// AH is a UD end's address handle to its peer; QKey its Q_Key.
	AH   *sim.AH
	QKey uint32
	// ID and CMChan are the connection manager ID of an end that
	// RCOverCM connected, and the event channel it reports on.
	ID     rdmacm.ID
	CMChan rdmacm.EventChannel

	recvSize int
	nextRecv int            // the next receive slot
	recvs    map[uint64]int // wr_id of a rig-posted receive → its offset
	wcs      [16]verbs.WC   // scratch for polling
	cqs      [2]*sim.CQ     // the distinct CQs to poll, send first
}

// RC makes a fabric for t with o.Fabric and a connected RC pair on its
// first two devices.
func RC(t testing.TB, o PairOptions) (a, b *End) {
	t.Helper()
	return New(t, o.Fabric).RC(o)
}

// UC makes a fabric for t with o.Fabric and a connected UC pair.
func UC(t testing.TB, o PairOptions) (a, b *End) {
	t.Helper()
	return New(t, o.Fabric).UC(o)
}

// UD makes a fabric for t with o.Fabric and a UD pair: both QPs ready to
// send with Q_Key o.QKey, each end with an AH to the other's port.
func UD(t testing.TB, o PairOptions) (a, b *End) {
	t.Helper()
	return New(t, o.Fabric).UD(o)
}

// RC makes a connected RC pair on the fabric's first two devices (one
// device: a loopback pair on it). o.Fabric is ignored.
func (f *Fabric) RC(o PairOptions) (a, b *End) {
	f.t.Helper()
	return f.pair(verbs.QPTypeRC, o)
}

// UC makes a connected UC pair on the fabric's first two devices.
func (f *Fabric) UC(o PairOptions) (a, b *End) {
	f.t.Helper()
	return f.pair(verbs.QPTypeUC, o)
}

// UD makes a UD pair on the fabric's first two devices, each with an AH to
// the other and Q_Key o.QKey.
func (f *Fabric) UD(o PairOptions) (a, b *End) {
	f.t.Helper()
	return f.pair(verbs.QPTypeUD, o)
}

func (f *Fabric) pair(typ verbs.QPType, o PairOptions) (a, b *End) {
	t := f.t
	t.Helper()
	o = o.filled(typ)
	devs := f.Devices()
	if len(devs) == 0 {
		t.Fatalf("simtest: the fabric has no device")
	}
	db := devs[0]
	if len(devs) > 1 {
		db = devs[1]
	}
	a, b = f.end(devs[0], typ, o), f.end(db, typ, o)
	a.Peer, b.Peer = b, a
	if typ == verbs.QPTypeUD {
		for _, e := range []*End{a, b} {
			if err := sim.ReadyUD(e.QP, o.QKey); err != nil {
				t.Fatalf("simtest: ready UD QP on %s: %v", e.Name, err)
			}
			e.QKey = o.QKey
		}
		for _, e := range []*End{a, b} {
			port, err := e.Peer.Ctx.QueryPort(1)
			if err != nil {
				t.Fatalf("simtest: query port of %s: %v", e.Peer.Name, err)
			}
			if e.AH, err = e.PD.CreateAH(verbs.AHAttr{DLID: port.LID, PortNum: 1}); err != nil {
				t.Fatalf("simtest: AH from %s to %s: %v", e.Name, e.Peer.Name, err)
			}
		}
	} else if err := sim.Connect(a.QP, b.QP, o.Connect); err != nil {
		t.Fatalf("simtest: connect %v pair: %v", typ, err)
	}
	for _, e := range []*End{a, b} {
		for range o.Recvs {
			e.PostRecvSlot(uint64(1000000 + e.nextRecv))
		}
	}
	return a, b
}

// filled returns o with the defaults of the zero fields, for a pair of
// type typ.
func (o PairOptions) filled(typ verbs.QPType) PairOptions {
	if o.BufSize == 0 {
		o.BufSize = 64 << 10
	}
	if o.CQE == 0 {
		o.CQE = 256
	}
	if o.MaxWR == 0 {
		o.MaxWR = 64
	}
	if o.RecvSize == 0 {
		o.RecvSize = 256
	}
	if o.QKey == 0 {
		o.QKey = 0x11111111
	}
	if o.Access == 0 {
		o.Access = verbs.AccessLocalWrite | verbs.AccessRemoteWrite
		if typ == verbs.QPTypeRC {
			o.Access |= verbs.AccessRemoteRead | verbs.AccessRemoteAtomic
		}
	}
	return o
}

// end makes one end on d.
func (f *Fabric) end(d *sim.Device, typ verbs.QPType, o PairOptions) *End {
	f.t.Helper()
	ctx, err := d.Open()
	if err != nil {
		f.t.Fatalf("simtest: open device %s: %v", d.Name(), err)
	}
	return f.endIn(ctx, d.Name(), typ, o, nil)
}

// endIn makes one end in the device context ctx; mkQP, when set, creates
// its QP from the attributes the end would give PD.CreateQP.
func (f *Fabric) endIn(ctx *sim.Context, name string, typ verbs.QPType, o PairOptions, mkQP func(pd *sim.PD, a sim.QPInitAttr) (*sim.QP, error)) *End {
	t := f.t
	t.Helper()
	e := &End{F: f, Name: name, recvSize: o.RecvSize, recvs: map[uint64]int{}, Ctx: ctx}
	fail := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("simtest: %s on %s: %v", what, e.Name, err)
		}
	}
	var err error
	e.PD, err = e.Ctx.AllocPD()
	fail("alloc PD", err)
	if o.Channel {
		e.Chan, err = e.Ctx.CreateCompChannel()
		fail("create channel", err)
	}
	e.SendCQ, err = e.Ctx.CreateCQ(o.CQE, nil, e.Chan, 0)
	fail("create send CQ", err)
	e.RecvCQ = e.SendCQ
	e.cqs[0] = e.SendCQ
	if !o.SharedCQ {
		e.RecvCQ, err = e.Ctx.CreateCQ(o.CQE, nil, e.Chan, 0)
		fail("create recv CQ", err)
		e.cqs[1] = e.RecvCQ
	}
	e.Buf = make([]byte, o.BufSize)
	e.MR, err = e.PD.RegMR(e.Buf, o.Access)
	fail("register MR", err)
	w := uint32(o.MaxWR)
	attr := sim.QPInitAttr{SendCQ: e.SendCQ, RecvCQ: e.RecvCQ, Type: typ,
		Cap: verbs.QPCap{MaxSendWR: w, MaxRecvWR: w, MaxSendSGE: 4, MaxRecvSGE: 4, MaxInlineData: 64}}
	if mkQP == nil {
		mkQP = (*sim.PD).CreateQP
	}
	e.QP, err = mkQP(e.PD, attr)
	fail("create QP", err)
	return e
}

// SGE names n bytes at offset off of the end's buffer.
func (e *End) SGE(off, n int) verbs.SGE {
	return verbs.SGE{Addr: e.MR.Addr() + uint64(off), Length: uint32(n), LKey: e.MR.LKey()}
}

// Post posts send WRs on the end's QP, failing the test if PostSend fails.
// A UD WR without an AH is sent to the peer (AH, QP number and Q_Key
// filled in).
func (e *End) Post(wrs ...verbs.SendWR) {
	e.F.t.Helper()
	if e.QP.Type() == verbs.QPTypeUD {
		for i := range wrs {
			if wrs[i].AH == nil {
				wrs[i].AH, wrs[i].RemoteQPN, wrs[i].RemoteQKey = e.AH, e.Peer.QP.Num(), e.Peer.QKey
			}
		}
	}
	if _, err := e.QP.PostSend(wrs); err != nil {
		e.F.t.Fatalf("simtest: %s: post_send: %v", e.Name, err)
	}
}

// Send copies data to the start of the buffer and posts a signaled SEND of
// it with wr_id wrID (to the peer, on UD).
func (e *End) Send(wrID uint64, data []byte) {
	e.F.t.Helper()
	copy(e.Buf, data)
	e.Post(verbs.SendWR{WRID: wrID, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{e.SGE(0, len(data))}})
}

// Write copies data to the start of the buffer and posts a signaled RDMA
// WRITE of it to offset remoteOff of the peer's buffer.
func (e *End) Write(wrID uint64, data []byte, remoteOff int) {
	e.F.t.Helper()
	copy(e.Buf, data)
	e.Post(verbs.SendWR{WRID: wrID, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled, SGList: []verbs.SGE{e.SGE(0, len(data))},
		RemoteAddr: e.Peer.MR.Addr() + uint64(remoteOff), RKey: e.Peer.MR.RKey()})
}

// Read posts a signaled RDMA READ of n bytes at offset remoteOff of the
// peer's buffer into the start of this end's buffer.
func (e *End) Read(wrID uint64, n, remoteOff int) {
	e.F.t.Helper()
	e.Post(verbs.SendWR{WRID: wrID, Opcode: verbs.WRRDMARead, Flags: verbs.SendSignaled, SGList: []verbs.SGE{e.SGE(0, n)},
		RemoteAddr: e.Peer.MR.Addr() + uint64(remoteOff), RKey: e.Peer.MR.RKey()})
}

// PostRecv posts a receive of n bytes at offset off of the buffer with
// wr_id wrID; End.Received finds its bytes.
func (e *End) PostRecv(wrID uint64, off, n int) {
	e.F.t.Helper()
	if _, err := e.QP.PostRecv([]verbs.RecvWR{{WRID: wrID, SGList: []verbs.SGE{e.SGE(off, n)}}}); err != nil {
		e.F.t.Fatalf("simtest: %s: post_recv: %v", e.Name, err)
	}
	e.recvs[wrID] = off
}

// PostRecvSlot posts a receive of PairOptions.RecvSize bytes in the next
// slot of the buffer's upper half (slots are reused round-robin) with wr_id
// wrID. PairOptions.Recvs posts its receives this way, with wr_ids from
// 1000000 up.
func (e *End) PostRecvSlot(wrID uint64) {
	e.F.t.Helper()
	half := len(e.Buf) / 2
	slots := max(1, half/e.recvSize)
	off := half + (e.nextRecv%slots)*e.recvSize
	e.nextRecv++
	e.PostRecv(wrID, off, min(e.recvSize, len(e.Buf)-off))
}

// Received returns the bytes a successful receive completion w placed, for
// a receive posted through the rig (for UD, after the 40 bytes reserved for
// the GRH); nil for another WR.
func (e *End) Received(w verbs.WC) []byte {
	off, ok := e.recvs[w.WRID]
	if !ok || w.Status != verbs.WCSuccess {
		return nil
	}
	n := int(w.ByteLen)
	if e.QP.Type() == verbs.QPTypeUD {
		off, n = off+40, n-40
	}
	if n < 0 || off+n > len(e.Buf) {
		return nil
	}
	return e.Buf[off : off+n]
}

// Arm requests a completion event (ibv_req_notify_cq) on each of the end's
// CQs, failing the test on an error.
func (e *End) Arm() {
	e.F.t.Helper()
	for _, c := range e.cqs {
		if c == nil {
			continue
		}
		if err := c.ReqNotify(false); err != nil {
			e.F.t.Fatalf("simtest: %s: req_notify_cq: %v", e.Name, err)
		}
	}
}
