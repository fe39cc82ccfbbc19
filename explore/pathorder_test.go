package explore_test

import (
	"context"
	"testing"

	"github.com/verbsim/verbsim/explore"
	"github.com/verbsim/verbsim/internal/simhook"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// rcSide is one end of rcRetryZero: a QP whose CQ is on a channel, and an
// event loop that stops at the first error completion.
type rcSide struct {
	ch *sim.CompChannel
	cq *sim.CQ
	q  *sim.QP
	mr *sim.MR
}

// await runs the completion-event loop until n completions came, and
// reports the first that is not SUCCESS.
func (s *rcSide) await(ctx context.Context, w *explore.World, who string, n int) {
	wcs := make([]verbs.WC, 4)
	got := 0
	poll := func() (int, bool) {
		k, err := s.cq.Poll(wcs)
		if err != nil {
			w.Errorf("%s: poll: %v", who, err)
			return 0, false
		}
		for _, c := range wcs[:k] {
			if c.Status != verbs.WCSuccess {
				w.Errorf("%s: wr_id %d completed with %v", who, c.WRID, c.Status)
				return 0, false
			}
		}
		got += k
		return k, true
	}
	for got < n {
		k, ok := poll()
		if !ok {
			return
		}
		if k > 0 {
			continue
		}
		if err := s.cq.ReqNotify(false); err != nil {
			w.Errorf("%s: arm: %v", who, err)
			return
		}
		if k, ok = poll(); !ok {
			return
		} else if k > 0 {
			continue
		}
		if _, _, err := s.ch.GetEvent(ctx); err != nil {
			w.Errorf("%s: get_cq_event: %v", who, err)
			return
		}
		s.cq.AckEvents(1)
	}
}

// rcRetryZero is an RC connection with retry_cnt 0 and a path MTU of 256
// bytes on a fabric with no fault configured: the client sends a
// 3-packet and a 1-packet SEND, the server takes both, and each stops at
// its first error completion. With anyOrder the engine runs as before
// XFER-32 (simhook.SetAnyOrder, the mutant).
func rcRetryZero(anyOrder bool) func(*explore.World) {
	return func(w *explore.World) {
		f, err := w.NewFabric(sim.Config{Devices: []sim.DeviceConfig{{Name: "server"}, {Name: "client"}}})
		if err != nil {
			w.Fatalf("fabric: %v", err)
		}
		simhook.SetAnyOrder(f, anyOrder)
		open := func(d *sim.Device) *rcSide {
			ctx, _ := d.Open()
			pd, _ := ctx.AllocPD()
			s := &rcSide{}
			s.ch, _ = ctx.CreateCompChannel()
			s.cq, _ = ctx.CreateCQ(4, nil, s.ch, 0)
			s.mr, _ = pd.RegMR(make([]byte, 2048), verbs.AccessLocalWrite)
			s.q, err = pd.CreateQP(sim.QPInitAttr{SendCQ: s.cq, RecvCQ: s.cq, Type: verbs.QPTypeRC,
				Cap: verbs.QPCap{MaxSendWR: 2, MaxRecvWR: 2, MaxSendSGE: 1, MaxRecvSGE: 1}})
			if err != nil {
				w.Fatalf("create_qp: %v", err)
			}
			return s
		}
		server, client := open(f.Devices()[0]), open(f.Devices()[1])
		o := sim.ConnectOptions{PathMTU: verbs.MTU256, Timeout: 4, RetryCnt: 0, RNRRetry: 7, MinRNRTimer: 12, RDAtomic: 1, NoDefaults: true}
		if err := sim.Connect(client.q, server.q, o); err != nil {
			w.Fatalf("connect: %v", err)
		}
		for i := range 2 {
			server.q.PostRecv([]verbs.RecvWR{{WRID: uint64(i), SGList: []verbs.SGE{{Addr: server.mr.Addr() + uint64(1024*i), Length: 1024, LKey: server.mr.LKey()}}}})
		}
		w.Go("client", func(ctx context.Context) {
			_, err := client.q.PostSend([]verbs.SendWR{
				{WRID: 1, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{{Addr: client.mr.Addr(), Length: 600, LKey: client.mr.LKey()}}},
				{WRID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{{Addr: client.mr.Addr(), Length: 8, LKey: client.mr.LKey()}}},
			})
			if err != nil {
				w.Errorf("client: post_send: %v", err)
				return
			}
			client.await(ctx, w, "client", 2)
		})
		w.Go("server", func(ctx context.Context) { server.await(ctx, w, "server", 2) })
	}
}

// TestRCRetryZeroNoFaultsXFER32: an RC world with retry_cnt 0 and no fault
// configured passes the exhaustive search: the explorer may run any ready
// event next, but never a packet before an earlier one of its path
// (XFER-32), so no schedule has a NAK_SEQ, a retransmission or a
// RETRY_EXC_ERR. The engine without the rule (the mutant) fails it.
func TestRCRetryZeroNoFaultsXFER32(t *testing.T) {
	for _, b := range []int{-1, 2} {
		res := explore.Explore(rcRetryZero(false), explore.Options{Strategy: explore.Exhaustive, Preemptions: b, Schedules: 100000})
		if !res.Complete || res.Failure != nil {
			t.Errorf("bound %d: %v", b, res)
			if res.Failure != nil {
				t.Log(res.Failure.Timeline)
			}
		}
		t.Logf("bound %d: %v", b, res)
	}
	res := explore.Explore(rcRetryZero(true), explore.Options{Strategy: explore.Exhaustive, Preemptions: -1, Schedules: 100000})
	if res.Failure == nil {
		t.Errorf("mutant (any order): %v", res)
	} else {
		t.Logf("mutant (any order): %v: %s", res.Failure.Kind, res.Failure.Message)
	}
}
