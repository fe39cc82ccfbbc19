package sim_test

import (
	"errors"
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// TestSlotReclaimByProfile runs the same traffic under each profile's
// reading of QP-29 on a connected RC pair: under the default, completed
// work requests hold their slots until a completion covering them is
// polled, so an all-unsignaled stream fills the send queue for good
// (QP-30); under rxe they free their slots as they complete, on the send
// and the receive queue alike (QP-31).
func TestSlotReclaimByProfile(t *testing.T) {
	for _, p := range sim.Profiles() {
		t.Run(p.Name, func(t *testing.T) {
			onRetire := p.FreeSlotOnRetire
			if onRetire != (p.Name == "rxe" || p.Name == "siw") {
				t.Fatalf("profile %s: FreeSlotOnRetire = %v", p.Name, onRetire)
			}
			_, a, b := rcPair(t, sim.Config{Profile: p}, sim.ConnectOptions{})
			depth := int(a.q.Cap().MaxSendWR)
			rdepth := int(b.q.Cap().MaxRecvWR)
			write := func(id uint64, signaled bool) []verbs.SendWR {
				w := verbs.SendWR{WRID: id, Opcode: verbs.WRRDMAWrite, SGList: []verbs.SGE{a.sge(0, 8)},
					RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey()}
				if signaled {
					w.Flags = verbs.SendSignaled
				}
				return []verbs.SendWR{w}
			}

			recvs := func(from, n int) []verbs.RecvWR {
				out := make([]verbs.RecvWR, n)
				for i := range out {
					out[i] = verbs.RecvWR{WRID: uint64(from + i), SGList: []verbs.SGE{b.sge(0, 64)}}
				}
				return out
			}

			// Receives consumed by sends, their completions unpolled.
			if n, err := b.q.PostRecv(recvs(0, rdepth)); n != rdepth || err != nil {
				t.Fatalf("%d receives: %d, %v", rdepth, n, err)
			}
			for i := range rdepth {
				if _, err := a.q.PostSend([]verbs.SendWR{{WRID: uint64(i), Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
					SGList: []verbs.SGE{a.sge(0, 8)}}}); err != nil {
					t.Fatalf("send %d: %v", i, err)
				}
			}
			a.poll(t, rdepth)
			n, err := b.q.PostRecv(recvs(1000, rdepth))
			if onRetire && (n != rdepth || err != nil) {
				t.Fatalf("%d more receives before polling any: %d, %v; want all posted", rdepth, n, err)
			}
			if !onRetire && (n != 0 || !errors.Is(err, syscall.ENOMEM)) {
				t.Fatalf("%d more receives before polling any: %d, %v; want ENOMEM", rdepth, n, err)
			}
			b.poll(t, rdepth)
			if !onRetire { // polled: the receive queue takes its depth again
				if n, err := b.q.PostRecv(recvs(1000, rdepth)); n != rdepth || err != nil {
					t.Fatalf("%d receives once polled: %d, %v", rdepth, n, err)
				}
			}

			// An all-unsignaled stream (QP-30).
			posted := 0
			for i := range 4 * depth {
				n, err = a.q.PostSend(write(uint64(i), false))
				posted += n
				if err != nil {
					break
				}
			}
			if onRetire {
				if posted != 4*depth || err != nil {
					t.Fatalf("unsignaled stream: %d of %d posted, %v", posted, 4*depth, err)
				}
			} else if posted != depth || !errors.Is(err, syscall.ENOMEM) {
				t.Fatalf("unsignaled stream: %d posted, then %v; want %d, then ENOMEM", posted, err, depth)
			}
			if s, _ := a.q.Outstanding(); s != 0 {
				t.Fatalf("%d writes still outstanding", s)
			}
			a.poll(t, 0)
			if !onRetire {
				return // nothing can ever be posted on a again but through a reset
			}
			if _, err := a.q.PostSend(write(99, true)); err != nil {
				t.Fatal(err)
			}
			if w := a.poll(t, 1)[0]; w.WRID != 99 || w.Status != verbs.WCSuccess {
				t.Fatalf("the signaled write completed as %v", &w)
			}
		})
	}
}

// TestSlotFreedWhenIteratorReachesIt: under the default reading of QP-29 a
// send slot is held until its completion is polled, and the poll iterator
// polls a completion when it reaches it, before end_poll consumes it from
// the CQ (CQX-08), as mlx5 does: ibv_rc_pingpong -t posts its next SEND
// from inside the batch, on a queue of depth 1.
func TestSlotFreedWhenIteratorReachesIt(t *testing.T) {
	_, a, b := rcPair(t, sim.Config{}, sim.ConnectOptions{})
	depth := int(a.q.Cap().MaxSendWR)
	write := func(id uint64) error {
		_, err := a.q.PostSend([]verbs.SendWR{{WRID: id, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
			SGList: []verbs.SGE{a.sge(0, 8)}, RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey()}})
		return err
	}
	for i := range depth {
		if err := write(uint64(i)); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	if err := write(100); !errors.Is(err, syscall.ENOMEM) {
		t.Fatalf("a write beyond max_send_wr with nothing polled: %v, want ENOMEM", err)
	}
	if err := a.cq.StartPoll(); err != nil {
		t.Fatal(err)
	}
	if err := write(101); err != nil {
		t.Fatalf("a write once start_poll reached the first completion: %v, want its slot free", err)
	}
	if err := write(102); !errors.Is(err, syscall.ENOMEM) {
		t.Fatalf("a second write with one completion reached: %v, want ENOMEM", err)
	}
	if err := a.cq.NextPoll(); err != nil {
		t.Fatal(err)
	}
	if err := write(103); err != nil {
		t.Fatalf("a write once next_poll reached the second completion: %v", err)
	}
	if err := a.cq.EndPoll(); err != nil {
		t.Fatal(err)
	}
	a.poll(t, depth)
}
