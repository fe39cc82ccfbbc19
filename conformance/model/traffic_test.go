package model

import (
	"strings"
	"testing"

	"github.com/verbsim/verbsim/verbs"
)

// The traffic model, pinned against the catalogue: each test builds a
// small scenario by hand, plays the completions and bytes a correct device
// produces, and checks that the model accepts them and rejects a broken
// variant with the rule it breaks.

// trafficCfg is what a test world's model is made of: the readings of its
// devices and the properties of its fabric.
type trafficCfg struct {
	verbs.Readings
	Fabric
}

// exact is a perfect fabric on a device that settles within each verb and
// raises no QP events.
var exact = trafficCfg{Readings: verbs.Readings{NoQPEvents: true}, Fabric: Fabric{Settles: true, SyncFlush: true, MTU: 256}}

// fakeMem is what a device placed: receive buffers and RDMA targets.
type fakeMem struct {
	recv, target, local map[uint64][]byte
	exposed             map[int][]byte
}

func newMem() *fakeMem {
	return &fakeMem{recv: map[uint64][]byte{}, target: map[uint64][]byte{}, local: map[uint64][]byte{}, exposed: map[int][]byte{}}
}

func (f *fakeMem) Recv(id uint64) []byte   { return f.recv[id] }
func (f *fakeMem) Target(id uint64) []byte { return f.target[id] }
func (f *fakeMem) Local(id uint64) []byte  { return f.local[id] }
func (f *fakeMem) Exposed(q int) []byte    { return f.exposed[q] }

// posted gives receive r its initial contents.
func (f *fakeMem) posted(r Recv) { f.recv[r.WRID] = Pattern(r.Fill, r.Cap) }

// land places message s in receive r as a device does (XFER-02, XFER-21).
func (f *fakeMem) land(r Recv, s Send, ud bool) {
	off := 0
	if ud {
		off = GRHLen
	}
	copy(f.recv[r.WRID][off:], Payload(s.Seed, s.Len))
}

// world is a model with QPs 0..n-1, each with its own CQ (index = QP
// index), qp_num 0x100+index and LID 1+index.
type world struct {
	t   *testing.T
	m   *Traffic
	mem *fakeMem
}

func newWorld(t *testing.T, r trafficCfg, types ...verbs.QPType) *world {
	w := &world{t: t, m: NewTraffic(r.Readings, r.Fabric), mem: newMem()}
	for i, typ := range types {
		c := w.m.AddCQ()
		w.m.AddQP(QPSpec{Type: typ, Num: 0x100 + uint32(i), LID: 1 + uint16(i), SendCQ: c, RecvCQ: c, SendDepth: 8, RecvDepth: 8})
	}
	return w
}

func (w *world) ok(err error) {
	w.t.Helper()
	if err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) recv(q int, rs ...Recv) {
	w.t.Helper()
	for _, r := range rs {
		w.mem.posted(r)
	}
	w.ok(w.m.PostRecv(q, rs))
}

func (w *world) send(q int, ss ...Send) {
	w.t.Helper()
	for _, s := range ss {
		if s.Op == verbs.WRRDMAWrite || s.Op == verbs.WRRDMAWriteWithImm {
			w.mem.target[s.WRID] = Pattern(s.Fill, s.Len)
		}
	}
	w.ok(w.m.PostSend(q, ss))
}

// poll feeds completions polled from cq, asking for asked.
func (w *world) poll(cq, asked int, ws ...verbs.WC) error {
	return w.m.Poll(cq, asked, ws, w.mem)
}

// wantErr requires err to mention every one of subs.
func wantErr(t *testing.T, err error, subs ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one mentioning %q", subs)
	}
	for _, s := range subs {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("error %q does not mention %q", err, s)
		}
	}
}

func sendWC(id uint64, qpn uint32, st verbs.WCStatus, op verbs.WCOpcode) verbs.WC {
	return verbs.WC{WRID: id, Status: st, Opcode: op, QPNum: qpn}
}

func recvWC(id uint64, qpn uint32, s Send) verbs.WC {
	w := verbs.WC{WRID: id, Opcode: verbs.WCRecv, QPNum: qpn, ByteLen: uint32(s.Len)}
	if s.Op == verbs.WRRDMAWriteWithImm {
		w.Opcode = verbs.WCRecvRDMAWithImm
	}
	if s.Op == verbs.WRSendWithImm || s.Op == verbs.WRRDMAWriteWithImm {
		w.WCFlags, w.ImmData = verbs.WCWithImm, s.Imm
	}
	return w
}

func errWC(id uint64, qpn uint32, st verbs.WCStatus) verbs.WC {
	return verbs.WC{WRID: id, Status: st, QPNum: qpn}
}

// TestTrafficRCInOrderOldestReceive: RC SENDs consume receive requests
// oldest first and complete in order on both sides (XFER-01, XFER-25,
// CQ-18), with opcode, byte_len and imm (WC-04, WC-05, WC-09, WC-10); the
// bytes are scattered in order and the rest of the buffer is untouched
// (XFER-02).
func TestTrafficRCInOrderOldestReceive(t *testing.T) {
	w := newWorld(t, exact, verbs.QPTypeRC, verbs.QPTypeRC)
	w.ok(w.m.Connect(0, 1, 7, 7))
	r1, r2 := Recv{WRID: 11, Cap: 100, Fill: 1}, Recv{WRID: 12, Cap: 100, Fill: 2}
	w.recv(1, r1, r2)
	s1 := Send{WRID: 1, Op: verbs.WRSend, Len: 50, Seed: 77, Signaled: true}
	s2 := Send{WRID: 2, Op: verbs.WRSendWithImm, Len: 20, Seed: 78, Imm: 0xdead, Signaled: true}
	w.send(0, s1, s2)
	w.mem.land(r1, s1, false)
	w.mem.land(r2, s2, false)

	// The second receive before the first: XFER-01.
	wantErr(t, w.poll(1, 1, recvWC(12, 0x101, s2)), "XFER-01")
	// byte_len wrong: WC-10.
	bad := recvWC(11, 0x101, s1)
	bad.ByteLen++
	wantErr(t, w.poll(1, 1, bad), "WC-10")
	// Stopping short while a completion is due: the CQ cannot be empty.
	wantErr(t, w.poll(1, 4, recvWC(11, 0x101, s1)), "is missing")

	w = newWorld(t, exact, verbs.QPTypeRC, verbs.QPTypeRC)
	w.ok(w.m.Connect(0, 1, 7, 7))
	w.recv(1, r1, r2)
	w.send(0, s1, s2)
	w.mem.land(r1, s1, false)
	w.mem.land(r2, s2, false)
	w.ok(w.poll(0, 4, sendWC(1, 0x100, verbs.WCSuccess, verbs.WCSend), sendWC(2, 0x100, verbs.WCSuccess, verbs.WCSend)))
	w.ok(w.poll(1, 4, recvWC(11, 0x101, s1), recvWC(12, 0x101, s2)))

	// A corrupted byte past the message: XFER-02.
	w = newWorld(t, exact, verbs.QPTypeRC, verbs.QPTypeRC)
	w.ok(w.m.Connect(0, 1, 7, 7))
	w.recv(1, r1)
	w.send(0, s1)
	w.mem.land(r1, s1, false)
	w.mem.recv[11][60] ^= 1
	wantErr(t, w.poll(1, 1, recvWC(11, 0x101, s1)), "XFER-02")
}

// TestTrafficSignaling: only signaled requests complete when they succeed,
// and a completion covers the unsignaled requests before it (CQ-19, CQ-20);
// they free their slots only then (QP-29 A).
func TestTrafficSignaling(t *testing.T) {
	w := newWorld(t, exact, verbs.QPTypeUC, verbs.QPTypeUC)
	w.ok(w.m.Connect(0, 1, 0, 0))
	u1 := Send{WRID: 1, Op: verbs.WRRDMAWrite, Len: 8, Seed: 5, Fill: 9}
	u2 := Send{WRID: 2, Op: verbs.WRRDMAWrite, Len: 8, Seed: 6, Fill: 9}
	s3 := Send{WRID: 3, Op: verbs.WRRDMAWrite, Len: 8, Seed: 7, Fill: 9, Signaled: true}
	w.send(0, u1, u2, s3)
	if room, _ := w.m.Room(0); room != (Span{5, 5}) {
		t.Fatalf("room %+v, want 5", room)
	}
	wantErr(t, w.poll(0, 1, sendWC(1, 0x100, verbs.WCSuccess, verbs.WCRDMAWrite)), "CQ-19")
	w.ok(w.poll(0, 4, sendWC(3, 0x100, verbs.WCSuccess, verbs.WCRDMAWrite)))
	if room, _ := w.m.Room(0); room != (Span{8, 8}) {
		t.Fatalf("room %+v after the covering completion, want 8", room)
	}
	// The WRITEs executed: their targets must hold the payloads (XFER-11).
	for _, s := range []Send{u1, u2, s3} {
		w.mem.target[s.WRID] = Payload(s.Seed, s.Len)
	}
	released, err := w.m.Quiesced(w.mem)
	w.ok(err)
	if len(released) != 3 {
		t.Fatalf("released %v, want the three WRITEs", released)
	}
}

// room returns the send or receive room of QP q.
func (w *world) room(q int, recv bool) Span {
	send, rcv := w.m.Room(q)
	if recv {
		return rcv
	}
	return send
}

// wantRoom requires the room of a queue of QP q to be want.
func (w *world) wantRoom(q int, recv bool, want Span, when string) {
	w.t.Helper()
	if got := w.room(q, recv); got != want {
		w.t.Fatalf("%s: room %+v, want %+v", when, got, want)
	}
}

// TestTrafficSlotsOnPoll: under QP-29 A a slot is free once the completion
// covering its request is polled, so a queue whose requests have all
// completed is still full, and a post stops there with ENOMEM (QP-27).
func TestTrafficSlotsOnPoll(t *testing.T) {
	w := newWorld(t, exact, verbs.QPTypeUC, verbs.QPTypeUC)
	w.ok(w.m.Connect(0, 1, 0, 0))
	var ss []Send
	for i := range 8 {
		ss = append(ss, Send{WRID: uint64(i + 1), Op: verbs.WRRDMAWrite, Len: 4, Seed: uint64(i), Fill: 1})
	}
	w.send(0, ss[:6]...)
	w.wantRoom(0, false, Span{2, 2}, "six unsignaled WRITEs done, none covered")
	w.ok(w.m.CheckPost(0, false, 3, 2))
	wantErr(t, w.m.CheckPost(0, false, 3, 3), "QP-29", "reading A", "accepted 3, want 2")
	w.recv(1, Recv{WRID: 11, Cap: 8}, Recv{WRID: 12, Cap: 8})
	wantErr(t, w.m.CheckPost(1, true, 8, 7), "QP-31", "want 6")
}

// TestTrafficSlotsOnRetire: under QP-29 B a slot is free once the device
// has completed or flushed its request, polled or not. The model knows it
// where the completion is due now; work waiting for a timer, or a lossy
// receive a datagram may still reach, leaves the room between two bounds
// until Settle, or Quiesced, says.
func TestTrafficSlotsOnRetire(t *testing.T) {
	b := exact
	b.FreeSlotOnRetire = true
	w := newWorld(t, b, verbs.QPTypeUC, verbs.QPTypeUC)
	w.ok(w.m.Connect(0, 1, 0, 0))
	for i := range 20 { // well past the depth, nothing polled
		w.send(0, Send{WRID: uint64(i + 1), Op: verbs.WRRDMAWrite, Len: 4, Seed: uint64(i), Fill: 1})
	}
	w.wantRoom(0, false, Span{8, 8}, "UC WRITEs done, none covered")
	if held, _ := w.m.Held(0); held != 20 {
		t.Fatalf("held %d, want 20", held)
	}
	w.ok(w.m.CheckPost(0, false, 9, 8))
	wantErr(t, w.m.CheckPost(0, false, 9, 6), "QP-29", "reading B", "accepted 6, want 8")

	// RC behind an RNR wait (rnr_retry 7): nothing retires until the retry.
	w = newWorld(t, b, verbs.QPTypeRC, verbs.QPTypeRC)
	w.ok(w.m.Connect(0, 1, 7, 7))
	s := Send{WRID: 1, Op: verbs.WRSend, Len: 4, Seed: 1}
	w.send(0, s)
	w.wantRoom(0, false, Span{7, 7}, "a SEND waiting after an RNR NAK")
	r := Recv{WRID: 11, Cap: 8, Fill: 1}
	w.recv(1, r)
	w.wantRoom(1, true, Span{7, 7}, "a receive the waiting SEND takes at its retry")
	w.m.Tick() // the retry may have run
	w.wantRoom(0, false, Span{7, 8}, "after time passed")
	w.wantRoom(1, true, Span{7, 8}, "after time passed")
	w.ok(w.m.CheckPost(0, false, 8, 7))
	w.ok(w.m.CheckPost(0, false, 8, 8))
	wantErr(t, w.m.CheckPost(1, true, 8, 6), "QP-31", "want 7 to 8")
	w.m.Settle()
	w.wantRoom(0, false, Span{8, 8}, "settled")
	w.wantRoom(1, true, Span{8, 8}, "settled")
	// A flush retires at once (FLUSH-13 under SyncFlush).
	w.send(0, Send{WRID: 2, Op: verbs.WRSend, Len: 4, Seed: 2, Signaled: true})
	w.wantRoom(0, false, Span{7, 7}, "a SEND waiting again")
	w.ok(w.m.ToErr(0))
	w.wantRoom(0, false, Span{8, 8}, "flushed")

	// Lossy UD: a receive retires when a datagram arrives, which the
	// model sees only in its completion.
	lossy := b
	lossy.Lossy = true
	w = newWorld(t, lossy, verbs.QPTypeUD, verbs.QPTypeUD)
	w.ok(w.m.ReadyUD(0, 0x11))
	w.ok(w.m.ReadyUD(1, 0x22))
	w.recv(1, Recv{WRID: 11, Cap: 60, Fill: 1})
	w.wantRoom(1, true, Span{7, 7}, "nothing sent to it")
	w.send(0, Send{WRID: 1, Op: verbs.WRSend, Len: 4, Seed: 1, Dest: 1, QKey: 0x22})
	w.wantRoom(1, true, Span{7, 8}, "a datagram on its way")
	w.m.Settle()
	w.wantRoom(1, true, Span{7, 8}, "settled: arrived or lost")
	if _, err := w.m.Quiesced(w.mem); err != nil { // polled empty: it was lost
		t.Fatal(err)
	}
	w.wantRoom(1, true, Span{7, 7}, "quiesced")
}

// TestTrafficRecvTooSmall: an RC SEND larger than its receive request fails
// with REM_INV_REQ_ERR, the receive request with the profile's status
// (XFER-05), both QPs go to ERR and everything else is flushed (FLUSH-03,
// FLUSH-12).
func TestTrafficRecvTooSmall(t *testing.T) {
	for _, rxe := range []bool{false, true} {
		r := exact
		r.RecvTooSmallRemInvReq = rxe
		recvSt := verbs.WCLocLenErr
		if rxe {
			recvSt = verbs.WCRemInvReqErr
		}
		w := newWorld(t, r, verbs.QPTypeRC, verbs.QPTypeRC)
		w.ok(w.m.Connect(0, 1, 7, 7))
		w.recv(1, Recv{WRID: 11, Cap: 10, Fill: 1}, Recv{WRID: 12, Cap: 100, Fill: 2})
		w.recv(0, Recv{WRID: 21, Cap: 100, Fill: 3})
		w.send(0, Send{WRID: 1, Op: verbs.WRSend, Len: 11, Seed: 1},
			Send{WRID: 2, Op: verbs.WRSend, Len: 1, Seed: 2})
		for q := range 2 {
			w.ok(w.m.CheckState(q, verbs.QPStateErr))
		}
		wantErr(t, w.m.CheckState(1, verbs.QPStateRTS), "QP-24")
		wantErr(t, w.poll(0, 1, errWC(1, 0x100, verbs.WCRemAccessErr)), "XFER-05")
		w.ok(w.poll(0, 8, errWC(1, 0x100, verbs.WCRemInvReqErr), errWC(2, 0x100, verbs.WCWRFlushErr), errWC(21, 0x100, verbs.WCWRFlushErr)))
		w.ok(w.poll(1, 8, errWC(11, 0x101, recvSt), errWC(12, 0x101, verbs.WCWRFlushErr)))
	}
}

// TestTrafficRNR: with rnr_retry 0 a SEND without a receive request fails
// with RNR_RETRY_EXC_ERR and only the requester goes to ERR; with 7 it
// waits, for ever (the fabric never idles), until a receive request is
// posted and time passes (XFER-07).
func TestTrafficRNR(t *testing.T) {
	w := newWorld(t, exact, verbs.QPTypeRC, verbs.QPTypeRC)
	w.ok(w.m.Connect(0, 1, 0, 0))
	w.send(0, Send{WRID: 1, Op: verbs.WRSend, Len: 4, Seed: 1, Signaled: true})
	w.ok(w.m.CheckState(0, verbs.QPStateErr))
	w.ok(w.m.CheckState(1, verbs.QPStateRTS))
	w.ok(w.poll(0, 2, errWC(1, 0x100, verbs.WCRNRRetryExcErr)))

	w = newWorld(t, exact, verbs.QPTypeRC, verbs.QPTypeRC)
	w.ok(w.m.Connect(0, 1, 7, 7))
	s := Send{WRID: 1, Op: verbs.WRSend, Len: 4, Seed: 1, Signaled: true}
	w.send(0, s)
	if !w.m.Stuck() {
		t.Fatal("an RNR wait with rnr_retry 7 and no receive request must last for ever")
	}
	r := Recv{WRID: 11, Cap: 8, Fill: 1}
	w.recv(1, r)
	// The retry needs time: nothing is due yet.
	wantErr(t, w.poll(0, 1, sendWC(1, 0x100, verbs.WCSuccess, verbs.WCSend)), "cannot have completed yet")
	w.ok(w.poll(0, 1))
	w.m.Tick() // the retry may have run
	w.ok(w.poll(0, 1))
	w.m.Settle()
	if w.m.Stuck() {
		t.Fatal("still stuck after the retry")
	}
	w.mem.land(r, s, false)
	wantErr(t, w.poll(0, 1), "is missing")
	w.ok(w.poll(0, 1, sendWC(1, 0x100, verbs.WCSuccess, verbs.WCSend)))
	w.ok(w.poll(1, 2, recvWC(11, 0x101, s)))
}

// TestTrafficDeadPeer: a peer in ERR never answers: the RC requester ends
// in RETRY_EXC_ERR once its timers have run (XFER-28, FLUSH-11); a UC
// sender still succeeds and the message is lost.
func TestTrafficDeadPeer(t *testing.T) {
	w := newWorld(t, exact, verbs.QPTypeRC, verbs.QPTypeRC)
	w.ok(w.m.Connect(0, 1, 7, 7))
	w.ok(w.m.ToErr(1))
	w.send(0, Send{WRID: 1, Op: verbs.WRRDMAWrite, Len: 4, Seed: 1, Fill: 2}, Send{WRID: 2, Op: verbs.WRSend, Seed: 3})
	if !w.m.Unsettled() {
		t.Fatal("the requester's state depends on its timers: the model must ask to settle")
	}
	w.ok(w.m.CheckState(0, verbs.QPStateRTS)) // not yet
	w.ok(w.poll(0, 2))
	w.m.Settle()
	w.ok(w.m.CheckState(0, verbs.QPStateErr))
	w.ok(w.poll(0, 3, errWC(1, 0x100, verbs.WCRetryExcErr), errWC(2, 0x100, verbs.WCWRFlushErr)))
	if _, err := w.m.Quiesced(w.mem); err != nil { // the target was never written
		t.Fatal(err)
	}

	w = newWorld(t, exact, verbs.QPTypeUC, verbs.QPTypeUC)
	w.ok(w.m.Connect(0, 1, 0, 0))
	w.recv(1, Recv{WRID: 11, Cap: 8, Fill: 1})
	w.ok(w.m.ToErr(1))
	w.send(0, Send{WRID: 1, Op: verbs.WRSend, Len: 4, Seed: 1, Signaled: true})
	w.ok(w.poll(0, 2, sendWC(1, 0x100, verbs.WCSuccess, verbs.WCSend)))
	w.ok(w.poll(1, 2, errWC(11, 0x101, verbs.WCWRFlushErr)))
}

// TestTrafficUC: a UC message that finds no receive request, or does not
// fit, is lost and the request stays for the next one (XFER-09, XFER-06);
// the sender succeeds either way (XFER-26).
func TestTrafficUC(t *testing.T) {
	w := newWorld(t, exact, verbs.QPTypeUC, verbs.QPTypeUC)
	w.ok(w.m.Connect(0, 1, 0, 0))
	lost := Send{WRID: 1, Op: verbs.WRSend, Len: 4, Seed: 1, Signaled: true}
	w.send(0, lost)
	r := Recv{WRID: 11, Cap: 8, Fill: 1}
	w.recv(1, r)
	big := Send{WRID: 2, Op: verbs.WRSend, Len: 9, Seed: 2, Signaled: true}
	fits := Send{WRID: 3, Op: verbs.WRSendWithImm, Len: 8, Seed: 3, Imm: 7, Signaled: true}
	w.send(0, big, fits)
	w.mem.land(r, fits, false)
	w.ok(w.poll(0, 4, sendWC(1, 0x100, verbs.WCSuccess, verbs.WCSend), sendWC(2, 0x100, verbs.WCSuccess, verbs.WCSend), sendWC(3, 0x100, verbs.WCSuccess, verbs.WCSend)))
	wantErr(t, w.poll(1, 1, recvWC(11, 0x101, lost)), "WC-10")
	w.ok(w.poll(1, 2, recvWC(11, 0x101, fits)))
}

// TestTrafficUD: the payload lands 40 bytes into the buffer and byte_len
// counts the GRH (XFER-21, WC-10), src_qp and slid name the sender (WC-12);
// a datagram longer than the MTU succeeds unsent (XFER-20), one with
// another Q_Key is dropped (XFER-22), one too big for its request too
// (XFER-06).
func TestTrafficUD(t *testing.T) {
	w := newWorld(t, exact, verbs.QPTypeUD, verbs.QPTypeUD)
	w.ok(w.m.ReadyUD(0, 0x11))
	w.ok(w.m.ReadyUD(1, 0x22))
	r := Recv{WRID: 11, Cap: 60, Fill: 1}
	w.recv(1, r)
	oversize := Send{WRID: 1, Op: verbs.WRSend, Len: 257, Seed: 1, Dest: 1, QKey: 0x22, Signaled: true}
	wrongKey := Send{WRID: 2, Op: verbs.WRSend, Len: 4, Seed: 2, Dest: 1, QKey: 0x11, Signaled: true}
	tooBig := Send{WRID: 3, Op: verbs.WRSend, Len: 21, Seed: 3, Dest: 1, QKey: 0x22, Signaled: true}
	good := Send{WRID: 4, Op: verbs.WRSendWithImm, Len: 20, Seed: 4, Imm: 9, Dest: 1, QKey: 0x22, Signaled: true}
	w.send(0, oversize, wrongKey, tooBig, good)
	w.mem.land(r, good, true)
	w.ok(w.poll(0, 8, sendWC(1, 0x100, verbs.WCSuccess, verbs.WCSend), sendWC(2, 0x100, verbs.WCSuccess, verbs.WCSend),
		sendWC(3, 0x100, verbs.WCSuccess, verbs.WCSend), sendWC(4, 0x100, verbs.WCSuccess, verbs.WCSend)))
	got := recvWC(11, 0x101, good)
	got.ByteLen += GRHLen
	got.SrcQP, got.SLID = 0x100, 1
	bad := got
	bad.SrcQP = 0x101
	wantErr(t, w.poll(1, 1, bad), "WC-12")
	w.ok(w.poll(1, 2, got))
}

// TestTrafficLossyUC: on a lossy fabric a UC receive may get any later
// message of the connection, intact, but never an older one than the last
// seen and never the same one twice (XFER-26).
func TestTrafficLossyUC(t *testing.T) {
	r := exact
	r.Lossy = true
	w := newWorld(t, r, verbs.QPTypeUC, verbs.QPTypeUC)
	w.ok(w.m.Connect(0, 1, 0, 0))
	rs := []Recv{{WRID: 11, Cap: 64, Fill: 1}, {WRID: 12, Cap: 64, Fill: 2}, {WRID: 13, Cap: 64, Fill: 3}}
	w.recv(1, rs...)
	var ss []Send
	for i := range 3 {
		ss = append(ss, Send{WRID: uint64(i + 1), Op: verbs.WRSend, Len: 16, Seed: uint64(100 + i)})
	}
	w.send(0, ss...)
	// Message 2 arrives in the first receive: message 1 was lost.
	w.mem.land(rs[0], ss[1], false)
	w.ok(w.poll(1, 1, recvWC(11, 0x101, ss[1])))
	// Message 1 can no longer arrive.
	w.mem.land(rs[1], ss[0], false)
	wantErr(t, w.poll(1, 1, recvWC(12, 0x101, ss[0])), "XFER-26")
	// Nor message 2 again.
	w.mem.land(rs[1], ss[1], false)
	wantErr(t, w.poll(1, 1, recvWC(12, 0x101, ss[1])), "XFER-26")
	// A corrupted message 3 matches nothing.
	w.mem.land(rs[1], ss[2], false)
	w.mem.recv[12][9] ^= 0x40
	wantErr(t, w.poll(1, 1, recvWC(12, 0x101, ss[2])), "XFER-26", "differs at byte 9")
	w.mem.land(rs[1], ss[2], false)
	w.ok(w.poll(1, 1, recvWC(12, 0x101, ss[2])))
	// The last receive waits; nothing is missing.
	w.ok(w.poll(1, 1))
	w.m.Settle()
	_, err := w.m.Quiesced(w.mem)
	w.ok(err)
}

// TestTrafficLossyRCChain: under faults the NAK of a failing request may be
// lost with the ACKs before it, so the requester may run out of retries on
// an earlier request instead (XFER-10); after the first failure only
// flushes follow (FLUSH-03). The responder's side does not change.
func TestTrafficLossyRCChain(t *testing.T) {
	r := exact
	r.Lossy = true
	for _, tc := range []struct {
		name string
		sq   []verbs.WC
	}{
		{"NAK arrives", []verbs.WC{sendWC(1, 0x100, verbs.WCSuccess, verbs.WCSend), errWC(2, 0x100, verbs.WCRemInvReqErr)}},
		{"NAK lost", []verbs.WC{sendWC(1, 0x100, verbs.WCSuccess, verbs.WCSend), errWC(2, 0x100, verbs.WCRetryExcErr)}},
		{"ACK and NAK lost", []verbs.WC{errWC(1, 0x100, verbs.WCRetryExcErr), errWC(2, 0x100, verbs.WCWRFlushErr)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, r, verbs.QPTypeRC, verbs.QPTypeRC)
			w.ok(w.m.Connect(0, 1, 7, 7))
			r1, r2 := Recv{WRID: 11, Cap: 8, Fill: 1}, Recv{WRID: 12, Cap: 8, Fill: 2}
			w.recv(1, r1, r2)
			s1 := Send{WRID: 1, Op: verbs.WRSend, Len: 8, Seed: 1, Signaled: true}
			s2 := Send{WRID: 2, Op: verbs.WRSend, Len: 9, Seed: 2, Signaled: true}
			if !w.m.PredictFatal(0, []Send{s1, s2}) {
				t.Fatal("PredictFatal misses the receive that is too small")
			}
			w.send(0, s1, s2)
			w.m.Settle()
			w.mem.land(r1, s1, false)
			w.ok(w.poll(0, 3, tc.sq...))
			w.ok(w.poll(1, 3, recvWC(11, 0x101, s1), errWC(12, 0x101, verbs.WCLocLenErr)))
		})
	}
	w := newWorld(t, r, verbs.QPTypeRC, verbs.QPTypeRC)
	w.ok(w.m.Connect(0, 1, 7, 7))
	if err := w.m.PostSend(0, []Send{{WRID: 1, Op: verbs.WRSend}}); err == nil {
		t.Fatal("an RC consumer without a receive request under faults must be refused: RNR is not modelled")
	}
}

// TestTrafficWriteTargets: at quiescence a WRITE target holds the payload
// if the WRITE executed (XFER-11), its old bytes if it never reached the
// responder (FLUSH-05), and either, byte by byte, if it may have been
// partly placed.
func TestTrafficWriteTargets(t *testing.T) {
	w := newWorld(t, exact, verbs.QPTypeRC, verbs.QPTypeRC)
	w.ok(w.m.Connect(0, 1, 0, 7))
	done := Send{WRID: 1, Op: verbs.WRRDMAWrite, Len: 8, Seed: 1, Fill: 11, Signaled: true}
	w.send(0, done)
	w.mem.target[1] = Payload(1, 8)
	// A multi-packet WRITE_WITH_IMM that meets an RNR with rnr_retry 0.
	partial := Send{WRID: 2, Op: verbs.WRRDMAWriteWithImm, Len: 8, Seed: 2, Fill: 12}
	w.send(0, partial)
	w.ok(w.m.ToErr(0))
	never := Send{WRID: 3, Op: verbs.WRRDMAWrite, Len: 8, Seed: 3, Fill: 13}
	w.send(0, never)
	w.ok(w.poll(0, 4, sendWC(1, 0x100, verbs.WCSuccess, verbs.WCRDMAWrite), errWC(2, 0x100, verbs.WCRNRRetryExcErr), errWC(3, 0x100, verbs.WCWRFlushErr)))
	mixed := Pattern(12, 8)
	copy(mixed[:4], Payload(2, 8)[:4])
	w.mem.target[2] = mixed
	w.mem.target[3] = Payload(3, 8)
	_, err := w.m.Quiesced(w.mem)
	wantErr(t, err, "target of RDMA WRITE 0x3", "never reached")
}
