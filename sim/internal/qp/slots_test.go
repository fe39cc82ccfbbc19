package qp

import (
	"errors"
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/verbs"
)

// The two readings of slot reclaim (QP-29, QP-31): under A a slot is free
// once the completion covering its request is polled, under B once the
// engine has completed or flushed the request.

// slotReadings are the two readings, by name.
var slotReadings = []struct {
	name     string
	onRetire bool
}{{"on-poll", false}, {"on-retire", true}}

// loopHost is a minimal Host for UC QPs on one lock: every packet goes to
// the QP numbered DstQPN, and SettleLocked runs the requesters and delivers
// the packets until nothing is left. Local SGEs must be empty.
type loopHost struct {
	fakeMem
	qps     map[uint32]*QP
	ready   []*QP
	pkts    []*Packet
	running bool
}

func (h *loopHost) LocalLocked(_ any, s verbs.SGE, _ bool) ([]byte, bool) { return nil, s.Length == 0 }
func (h *loopHost) RemoteLocked(*QP, any, uint32, uint64, uint32, verbs.AccessFlags) ([]byte, bool) {
	return nil, false
}
func (h *loopHost) LocalMemLocked(_ any, s verbs.SGE, _ bool) (Mem, bool) {
	return Mem{}, s.Length == 0
}
func (h *loopHost) RemoteMemLocked(*QP, any, uint32, uint64, uint32, verbs.AccessFlags) (Mem, bool) {
	return Mem{}, false
}
func (h *loopHost) InvalidateLocked(any, uint32) bool            { return false }
func (h *loopHost) BindLocked(*QP, *verbs.SendWR) verbs.WCStatus { return verbs.WCMWBindErr }
func (h *loopHost) BindKeyLocked(any) (uint32, error)            { return 0, syscall.EINVAL }
func (h *loopHost) AHLocked(any) (verbs.AHAttr, any, bool)       { return verbs.AHAttr{}, nil, false }
func (h *loopHost) CheckAHLocked(_, _ any) error                 { return nil }
func (h *loopHost) PortLocked(uint8) PortInfo {
	return PortInfo{ActiveMTU: verbs.MTU1024, MaxMsgSz: 1 << 31, Up: true}
}
func (h *loopHost) NewPacketLocked() *Packet { return &Packet{Payload: make([]byte, 0, 4096)} }
func (h *loopHost) SendLocked(_ *QP, p *Packet) {
	p.SLID = fullAttr(verbs.QPStateRTS).AHAttr.DLID // every QP's peer is at that LID
	h.pkts = append(h.pkts, p)
}
func (h *loopHost) ScheduleLocked(q *QP)     { h.ready = append(h.ready, q) }
func (h *loopHost) ArmLocked(*Timer, uint64) {}
func (h *loopHost) StopLocked(*Timer)        {}

func (h *loopHost) SettleLocked() {
	if h.running {
		return
	}
	h.running = true
	defer func() { h.running = false }()
	for len(h.ready) > 0 || len(h.pkts) > 0 {
		if len(h.ready) > 0 {
			q := h.ready[0]
			h.ready = h.ready[1:]
			q.RunLocked()
			continue
		}
		p := h.pkts[0]
		h.pkts = h.pkts[1:]
		if to := h.qps[p.DstQPN]; to != nil {
			to.ReceiveLocked(p)
		}
	}
}

// slotQP makes a QP with queues of depth that follows one reading of slot
// reclaim, on the rig's fake CQs and, with a host, driven by it.
func (r *rig) slotQP(t *testing.T, typ verbs.QPType, depth uint32, onRetire bool, h Host) *QP {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if lh, ok := h.(*loopHost); ok {
		r.mu.SetHooksLocked(domain.Hooks{Settle: lh.SettleLocked}, true)
	}
	r.qpnum++
	q, err := NewLocked(Config{
		Init:   InitAttr{Type: typ, SendCQ: r.scq, RecvCQ: r.rcq, Cap: verbs.QPCap{MaxSendWR: depth, MaxRecvWR: depth}},
		QPNum:  r.qpnum,
		Device: DeviceLimits{MaxQPWR: 64, MaxSGE: 4, MaxInline: 64},
		Modify: testLimits,
		Policy: Policy{FreeSlotOnRetire: onRetire},
		Domain: r.mu,
		Memory: r.mem,
		Host:   h,
	})
	if err != nil {
		t.Fatalf("NewLocked: %v", err)
	}
	if int(q.Cap().MaxSendWR) != int(depth) || int(q.Cap().MaxRecvWR) != int(depth) {
		t.Fatalf("asked for queues of %d, got %+v", depth, q.Cap())
	}
	return q
}

// connectUC takes a and b, UC QPs in RESET, to RTS, each the other's peer.
func connectUC(t *testing.T, a, b *QP) {
	t.Helper()
	for _, p := range [][2]*QP{{a, b}, {b, a}} {
		for _, s := range []verbs.QPState{verbs.QPStateInit, verbs.QPStateRTR, verbs.QPStateRTS} {
			attr := fullAttr(s)
			attr.DestQPNum = p[1].Num()
			mask, _ := verbs.MinimalMask(p[0].State(), s, verbs.QPTypeUC)
			if err := p[0].Modify(attr, mask); err != nil {
				t.Fatalf("%v→%v: %v", p[0].State(), s, err)
			}
		}
	}
}

func sends(from uint64, n int, signaled bool) []verbs.SendWR {
	out := make([]verbs.SendWR, n)
	for i := range out {
		out[i] = verbs.SendWR{WRID: from + uint64(i), Opcode: verbs.WRSend}
		if signaled {
			out[i].Flags = verbs.SendSignaled
		}
	}
	return out
}

func recvs(from uint64, n int) []verbs.RecvWR {
	out := make([]verbs.RecvWR, n)
	for i := range out {
		out[i] = verbs.RecvWR{WRID: from + uint64(i)}
	}
	return out
}

// wantPosted fails unless a post took n requests and returned errno (0 for
// none).
func wantPosted(t *testing.T, what string, n int, err error, wantN int, errno syscall.Errno) {
	t.Helper()
	if n != wantN || (errno == 0) != (err == nil) || (errno != 0 && !errors.Is(err, errno)) {
		t.Fatalf("%s: %d posted, %v; want %d, errno %d", what, n, err, wantN, errno)
	}
}

// TestSlotReclaimFlush: requests flushed by a move to ERR hold their slots
// until their completions are polled under A, and not at all under B, on
// both queues.
func TestSlotReclaimFlush(t *testing.T) {
	for _, rd := range slotReadings {
		t.Run(rd.name, func(t *testing.T) {
			r := newRig()
			q := r.slotQP(t, verbs.QPTypeRC, 4, rd.onRetire, nil)
			walk(t, q, verbs.QPStateRTS)
			n, err := q.PostSend(sends(0, 5, true))
			wantPosted(t, "5 sends into 4 slots", n, err, 4, syscall.ENOMEM)
			n, err = q.PostRecv(recvs(10, 5))
			wantPosted(t, "5 receives into 4 slots", n, err, 4, syscall.ENOMEM)
			walk(t, q, verbs.QPStateErr)
			if len(r.scq.entries) != 4 || len(r.rcq.entries) != 4 {
				t.Fatalf("%d send and %d receive flushes, want 4 and 4", len(r.scq.entries), len(r.rcq.entries))
			}
			if !rd.onRetire {
				n, err = q.PostSend(sends(20, 1, true))
				wantPosted(t, "a send in ERR, flushes unpolled", n, err, 0, syscall.ENOMEM)
				n, err = q.PostRecv(recvs(30, 1))
				wantPosted(t, "a receive in ERR, flushes unpolled", n, err, 0, syscall.ENOMEM)
				r.scq.poll(r.mu)
				r.rcq.poll(r.mu)
			}
			// A list in ERR is flushed once it is posted: it still takes at
			// most the queue's depth.
			n, err = q.PostSend(sends(20, 5, true))
			wantPosted(t, "5 sends in ERR", n, err, 4, syscall.ENOMEM)
			n, err = q.PostRecv(recvs(30, 5))
			wantPosted(t, "5 receives in ERR", n, err, 4, syscall.ENOMEM)
			if rd.onRetire {
				// Flushed at once and free at once, polled or not.
				for i := range 3 {
					n, err = q.PostSend(sends(40+uint64(4*i), 4, false))
					wantPosted(t, "4 more sends in ERR", n, err, 4, 0)
					n, err = q.PostRecv(recvs(60+uint64(4*i), 4))
					wantPosted(t, "4 more receives in ERR", n, err, 4, 0)
				}
				if s, rr := q.Outstanding(); s != 0 || rr != 0 {
					t.Fatalf("%d sends and %d receives outstanding in ERR", s, rr)
				}
			}
		})
	}
}

// TestSlotReclaimOverrun: a flush completion lost to a CQ overrun keeps its
// slot until the QP is reset under A, and frees it with the flush under B.
func TestSlotReclaimOverrun(t *testing.T) {
	for _, rd := range slotReadings {
		t.Run(rd.name, func(t *testing.T) {
			r := newRig()
			r.scq.cap = 1
			q := r.slotQP(t, verbs.QPTypeRC, 4, rd.onRetire, nil)
			walk(t, q, verbs.QPStateRTS)
			n, err := q.PostSend(sends(0, 3, true))
			wantPosted(t, "3 sends", n, err, 3, 0)
			walk(t, q, verbs.QPStateErr)
			if len(r.scq.entries) != 1 || r.scq.lost != 2 {
				t.Fatalf("%d flushes stored and %d lost, want 1 and 2", len(r.scq.entries), r.scq.lost)
			}
			r.scq.poll(r.mu) // frees the slot of wr_id 0 under A
			free := 2        // A: nothing polled covers the lost two yet
			if rd.onRetire {
				free = 4
			}
			r.scq.cap = 0 // no more overruns
			n, err = q.PostSend(sends(10, 5, true))
			wantPosted(t, "5 sends after the overrun", n, err, free, syscall.ENOMEM)
			// Polling the flushes of the later sends covers the lost ones
			// (CQ-20): all free under either reading.
			r.scq.poll(r.mu)
			n, err = q.PostSend(sends(20, 5, true))
			wantPosted(t, "5 sends after the overrun, later flushes polled", n, err, 4, syscall.ENOMEM)
			r.scq.poll(r.mu)
			// Lost completions that nothing polled covers: under A only a
			// reset frees their slots.
			r.scq.cap = 1
			n, err = q.PostSend(sends(30, 3, true))
			wantPosted(t, "3 sends with room for one flush", n, err, 3, 0)
			r.scq.poll(r.mu)
			n, err = q.PostSend(sends(40, 5, true))
			wantPosted(t, "5 sends, two flushes lost", n, err, free, syscall.ENOMEM)
			r.scq.entries = nil            // never polled
			walk(t, q, verbs.QPStateReset) // frees everything under either reading (FLUSH-08)
			walk(t, q, verbs.QPStateRTS)
			n, err = q.PostSend(sends(50, 5, true))
			wantPosted(t, "5 sends after a reset", n, err, 4, syscall.ENOMEM)
		})
	}
}

// TestSlotReclaimCompleted: under A, sends and receives that completed hold
// their slots until a completion covering them is polled, so an
// all-unsignaled stream fills the send queue for good (QP-30); under B they
// free their slots as they complete.
func TestSlotReclaimCompleted(t *testing.T) {
	for _, rd := range slotReadings {
		t.Run(rd.name, func(t *testing.T) {
			r := newRig()
			h := &loopHost{fakeMem: r.mem, qps: map[uint32]*QP{}}
			a := r.slotQP(t, verbs.QPTypeUC, 4, rd.onRetire, h)
			b := r.slotQP(t, verbs.QPTypeUC, 4, rd.onRetire, h)
			h.qps[a.Num()], h.qps[b.Num()] = a, b
			connectUC(t, a, b)

			// Receives consumed by incoming sends.
			n, err := b.PostRecv(recvs(100, 4))
			wantPosted(t, "4 receives", n, err, 4, 0)
			n, err = a.PostSend(sends(0, 4, true))
			wantPosted(t, "4 signaled sends", n, err, 4, 0)
			if len(r.scq.entries) != 4 || len(r.rcq.entries) != 4 {
				t.Fatalf("%d send and %d receive completions, want 4 and 4", len(r.scq.entries), len(r.rcq.entries))
			}
			if s, rr := a.Outstanding(); s != 0 || rr != 0 {
				t.Fatalf("sender: %d sends outstanding after they completed", s)
			}
			free, errno := 0, syscall.ENOMEM
			if rd.onRetire {
				free, errno = 4, 0
			}
			n, err = b.PostRecv(recvs(200, 4))
			wantPosted(t, "4 receives, 4 receive completions unpolled", n, err, free, errno)
			n, err = a.PostSend(sends(10, 4, false))
			wantPosted(t, "4 sends, 4 send completions unpolled", n, err, free, errno)
			r.scq.poll(r.mu)
			r.rcq.poll(r.mu)

			// An all-unsignaled stream with nobody receiving: UC drops
			// what finds no receive WR, and the sends succeed anyway.
			posted := 0
			for i := range 40 {
				n, err = a.PostSend(sends(1000+uint64(i), 1, false))
				posted += n
				if err != nil {
					break
				}
			}
			want := 40
			if !rd.onRetire {
				want = 4 // QP-30: nothing signaled, nothing reclaimed
				if !errors.Is(err, syscall.ENOMEM) {
					t.Fatalf("unsignaled stream stopped with %v, want ENOMEM", err)
				}
			}
			if posted != want {
				t.Fatalf("unsignaled stream: %d posted, want %d (last error %v)", posted, want, err)
			}
			if len(r.scq.entries) != 0 {
				t.Fatalf("%d completions of unsignaled sends", len(r.scq.entries))
			}
			if !rd.onRetire {
				return // only a reset frees them now (FLUSH-08)
			}
			// Under B nothing is held either in SQD, where nothing new
			// starts: sends posted there hold their slots until they run.
			mask, _ := verbs.MinimalMask(verbs.QPStateRTS, verbs.QPStateSQD, verbs.QPTypeUC)
			if err := a.Modify(&verbs.QPAttr{QPState: verbs.QPStateSQD}, mask); err != nil {
				t.Fatal(err)
			}
			n, err = a.PostSend(sends(2000, 5, true))
			wantPosted(t, "5 sends in SQD", n, err, 4, syscall.ENOMEM)
			mask, _ = verbs.MinimalMask(verbs.QPStateSQD, verbs.QPStateRTS, verbs.QPTypeUC)
			if err := a.Modify(&verbs.QPAttr{QPState: verbs.QPStateRTS}, mask); err != nil {
				t.Fatal(err)
			}
			r.mu.Lock()
			h.SettleLocked()
			r.mu.Unlock()
			if got := len(r.scq.entries); got != 4 {
				t.Fatalf("%d completions after SQD→RTS, want 4", got)
			}
			n, err = a.PostSend(sends(3000, 4, true))
			wantPosted(t, "4 sends after the held ones ran", n, err, 4, 0)
		})
	}
}

// TestSlotReclaimErrors: the ENOMEM of a full send queue says which
// reading freed nothing.
func TestSlotReclaimErrors(t *testing.T) {
	for _, rd := range slotReadings {
		r := newRig()
		q := r.slotQP(t, verbs.QPTypeRC, 1, rd.onRetire, nil)
		walk(t, q, verbs.QPStateRTS)
		_, err := q.PostSend(sends(0, 2, true))
		want := errSendFull
		if rd.onRetire {
			want = errSendBusy
		}
		if err != want {
			t.Errorf("%s: a full send queue gives %v, want %v", rd.name, err, want)
		}
	}
}
