package sim_test

import (
	"errors"
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// TestInjectSRQError: a catastrophic SRQ error raises IBV_EVENT_SRQ_ERR
// naming the SRQ (ASYNC-15), then takes every QP receiving through it to
// ERR with IBV_EVENT_QP_FATAL (ASYNC-08; none under rxe, ASYNC-11),
// flushing their queues. The SRQ keeps its receive WRs (FLUSH-07), and a QP
// of the same device that does not use it is untouched.
func TestInjectSRQError(t *testing.T) {
	for _, prof := range sim.ProfilesWithout(verbs.ReadingNoSRQ) {
		t.Run(prof.Name, func(t *testing.T) {
			f, err := sim.NewFabric(sim.Config{Profile: prof, Devices: []sim.DeviceConfig{{Name: "a"}}})
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			e := newEnd(t, f.Devices()[0], verbs.QPTypeRC, 4096) // not on the SRQ
			srq, err := e.pd.CreateSRQ(sim.SRQInitAttr{Attr: verbs.SRQAttr{MaxWR: 8, MaxSGE: 1}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := srq.PostRecv([]verbs.RecvWR{{WRID: 1, SGList: []verbs.SGE{e.sge(0, 64)}}, {WRID: 2, SGList: []verbs.SGE{e.sge(64, 64)}}}); err != nil {
				t.Fatal(err)
			}
			var users []*sim.QP
			for range 2 {
				q, err := e.pd.CreateQP(sim.QPInitAttr{SendCQ: e.cq, RecvCQ: e.cq, SRQ: srq, Type: verbs.QPTypeRC,
					Cap: verbs.QPCap{MaxSendWR: 4, MaxSendSGE: 1}})
				if err != nil {
					t.Fatal(err)
				}
				if err := q.Modify(&verbs.QPAttr{QPState: verbs.QPStateInit, PortNum: 1}, verbs.QPAttrState|verbs.QPAttrPort|verbs.QPAttrPKeyIndex|verbs.QPAttrAccessFlags); err != nil {
					t.Fatal(err)
				}
				users = append(users, q)
			}
			if err := f.InjectSRQError(srq); err != nil {
				t.Fatal(err)
			}
			var events []sim.AsyncEvent
			for {
				ev, err := e.ctx.TryGetAsyncEvent()
				if err != nil {
					break
				}
				events = append(events, ev)
				if err := ev.Ack(); err != nil {
					t.Fatal(err)
				}
			}
			if len(events) == 0 || events[0].Type() != verbs.EventSRQErr || events[0].SRQ() != srq {
				t.Fatalf("the first of %d events is not SRQ_ERR naming the SRQ", len(events))
			}
			fatal := map[*sim.QP]int{}
			for _, ev := range events[1:] {
				q := ev.QP()
				switch {
				case q == nil || (q != users[0] && q != users[1]):
					t.Errorf("event %v names no QP of the SRQ", ev)
				case ev.Type() == verbs.EventQPFatal:
					fatal[q]++
				case ev.Type() != verbs.EventQPLastWQEReached: // SRQ-09: ERR with an SRQ
					t.Errorf("unexpected event %v", ev)
				}
			}
			for _, q := range users {
				if q.State() != verbs.QPStateErr {
					t.Errorf("qp %#x is in %v after its SRQ failed, want ERR", q.Num(), q.State())
				}
				want := 1
				if prof.NoQPEvents {
					want = 0
				}
				if fatal[q] != want {
					t.Errorf("qp %#x: %d QP_FATAL events, want %d", q.Num(), fatal[q], want)
				}
			}
			if n := srq.Len(); n != 2 {
				t.Errorf("the SRQ holds %d receive WRs after its error, want 2 (FLUSH-07)", n)
			}
			if e.q.State() != verbs.QPStateReset {
				t.Errorf("a QP without the SRQ went to %v", e.q.State())
			}
			var wcs [4]verbs.WC
			if n, _ := e.cq.Poll(wcs[:]); n != 0 {
				t.Errorf("%d completions; the SRQ's WRs are not flushed and the QPs had none", n)
			}
			for _, q := range users {
				if err := q.Destroy(); err != nil {
					t.Fatal(err)
				}
			}
			if err := srq.Destroy(); err != nil {
				t.Fatal(err)
			}
			if err := f.InjectSRQError(srq); !errors.Is(err, syscall.EINVAL) {
				t.Errorf("InjectSRQError on a destroyed SRQ: %v, want EINVAL", err)
			}
		})
	}
}
