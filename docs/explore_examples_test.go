package docs_test

// ---- explore.md ----

import (
	"context"
	"errors"
	"fmt"

	"github.com/verbsim/verbsim/explore"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// ppSide is one end of the ping-pong of `verbsim pingpong -e`: the event
// loop below is the one of internal/pingpong (side.go: runEvents, drain,
// pollOnce, handle), copied as a user copies their own loop into a test,
// with the message checks and the statistics left out. Each side sends
// its next message once its previous send has completed and the peer's
// message has arrived; the client sends first.
type ppSide struct {
	client bool
	iters  int
	size   int
	ch     *sim.CompChannel
	cq     *sim.CQ
	qp     *sim.QP
	mr     *sim.MR
	wcs    []verbs.WC

	sent, received, sendsDone int
	pendSend, pendRecv        bool
}

const ppSendTag = 1 << 63 // a send's wr_id; a receive's is its buffer slot

func (s *ppSide) slot(i int) verbs.SGE {
	return verbs.SGE{Addr: s.mr.Addr() + uint64(i*s.size), Length: uint32(s.size), LKey: s.mr.LKey()}
}

func (s *ppSide) postRecv(slot int) error {
	_, err := s.qp.PostRecv([]verbs.RecvWR{{WRID: uint64(slot), SGList: []verbs.SGE{s.slot(slot)}}})
	return err
}

func (s *ppSide) postSend() error {
	wr := verbs.SendWR{WRID: ppSendTag | uint64(s.sent), Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{s.slot(2)}}
	if _, err := s.qp.PostSend([]verbs.SendWR{wr}); err != nil {
		return err
	}
	s.sent++
	s.pendSend, s.pendRecv = true, true
	return nil
}

func (s *ppSide) done() bool {
	return s.sent == s.iters && s.sendsDone == s.iters && s.received == s.iters
}

// runEvents: arm, then wait for an event, acknowledge it, re-arm, and
// only then poll until the CQ is empty.
func (s *ppSide) runEvents(ctx context.Context) error {
	if err := s.cq.ReqNotify(false); err != nil {
		return err
	}
	if s.client {
		if err := s.postSend(); err != nil {
			return err
		}
	}
	for {
		if err := s.drain(); err != nil {
			return err
		}
		if s.done() {
			return nil
		}
		got, _, err := s.ch.GetEvent(ctx)
		if err != nil {
			return err
		}
		if err := got.AckEvents(1); err != nil {
			return err
		}
		if err := got.ReqNotify(false); err != nil {
			return err
		}
	}
}

func (s *ppSide) drain() error {
	for {
		n, err := s.cq.Poll(s.wcs)
		for i := range n {
			if err := s.handle(&s.wcs[i]); err != nil {
				return err
			}
		}
		if err != nil || n == 0 {
			return err
		}
	}
}

func (s *ppSide) handle(w *verbs.WC) error {
	if w.Status != verbs.WCSuccess {
		// wr_ids in decimal, the base of the trace, so that the message
		// and the timeline name a work request alike.
		return fmt.Errorf("wr_id %d completed with %s", w.WRID, w.Status.Name())
	}
	if w.WRID&ppSendTag != 0 {
		s.sendsDone++
		s.pendSend = false
	} else {
		if s.received == s.iters {
			return errors.New("one message too many")
		}
		s.received++
		if err := s.postRecv(int(w.WRID)); err != nil {
			return err
		}
		s.pendRecv = false
	}
	if s.sent < s.iters && !s.pendSend && !s.pendRecv {
		return s.postSend()
	}
	return nil
}

// pingpongWorld builds the two sides on the explorer's fabric (devices
// "server" and "client"), connects them, posts two receives each, and
// runs each side's event loop as a goroutine of the world.
func pingpongWorld(faults sim.Faults, retry uint8) func(*explore.World) {
	return func(w *explore.World) {
		f, err := w.NewFabric(sim.Config{Devices: []sim.DeviceConfig{{Name: "server"}, {Name: "client"}}, Faults: faults})
		if err != nil {
			w.Fatalf("fabric: %v", err)
		}
		open := func(dev *sim.Device, client bool) *ppSide {
			s := &ppSide{client: client, iters: 2, size: 64, wcs: make([]verbs.WC, 4), pendRecv: true}
			ctx, _ := dev.Open()
			pd, _ := ctx.AllocPD()
			s.ch, _ = ctx.CreateCompChannel()
			s.cq, _ = ctx.CreateCQ(3, nil, s.ch, 0)
			s.mr, _ = pd.RegMR(make([]byte, 3*s.size), verbs.AccessLocalWrite)
			s.qp, err = pd.CreateQP(sim.QPInitAttr{SendCQ: s.cq, RecvCQ: s.cq, Type: verbs.QPTypeRC,
				Cap: verbs.QPCap{MaxSendWR: 1, MaxRecvWR: 2, MaxSendSGE: 1, MaxRecvSGE: 1}})
			if err != nil {
				w.Fatalf("create_qp: %v", err)
			}
			return s
		}
		server, client := open(f.Devices()[0], false), open(f.Devices()[1], true)
		// NoDefaults: a RetryCnt of 0 stays 0.
		o := sim.ConnectOptions{Timeout: 4, RetryCnt: retry, RNRRetry: 7, MinRNRTimer: 12, RDAtomic: 1, NoDefaults: true}
		if err := sim.Connect(client.qp, server.qp, o); err != nil {
			w.Fatalf("connect: %v", err)
		}
		for _, s := range []*ppSide{server, client} {
			for slot := range 2 {
				if err := s.postRecv(slot); err != nil {
					w.Fatalf("post_recv: %v", err)
				}
			}
			name := map[bool]string{true: "client", false: "server"}[s.client]
			w.Go(name, func(ctx context.Context) {
				if err := s.runEvents(ctx); err != nil {
					w.Errorf("%s: %v", name, err)
				}
			})
		}
	}
}

// Example_explorePingpong explores the completion-event loop of the pingpong
// program (`verbsim pingpong -e`), copied from its source as a user copies
// their own loop into a test: two sides, two round trips. Every verb, every
// engine event (the requester runs, each packet's delivery, each ACK) and
// every blocking wait is a choice point. The loop passes.
//
// Then the fabric may lose packets (sim.Faults): every packet's fate is a
// choice point too. With RetryCnt 7 the exhaustive search, within its
// default budget of one fault per schedule, passes: one lost packet in
// any interleaving is recovered by the RC retransmission. With RetryCnt 0
// one lost packet exhausts the retries: the loop reports the
// RETRY_EXC_ERR completion (an assertion of the world), and the token
// replays it.
func Example_explorePingpong() {
	for _, s := range []explore.Strategy{explore.Random, explore.PCT} {
		res := explore.Explore(pingpongWorld(sim.Faults{}, 7), explore.Options{Strategy: s, Seed: 1, Schedules: 100})
		fmt.Println(s, "failure:", res.Failure)
	}

	res := explore.Explore(pingpongWorld(sim.Faults{}, 0), explore.Options{Strategy: explore.Exhaustive, Preemptions: -1, Schedules: 100000})
	fmt.Println("no loss, retry_cnt 0: complete", res.Complete, "failure:", res.Failure)

	lossy := sim.Faults{Drop: 0.1}
	res = explore.Explore(pingpongWorld(lossy, 7), explore.Options{Strategy: explore.Exhaustive, Preemptions: -1, Schedules: 100000})
	fmt.Println("one lost packet, retry_cnt 7: complete", res.Complete, "failure:", res.Failure)

	res = explore.Explore(pingpongWorld(lossy, 0), explore.Options{Strategy: explore.Exhaustive, Preemptions: -1, Schedules: 100000})
	f := res.Failure
	fmt.Println("one lost packet, retry_cnt 0:", f.Kind, "-", f.Message, "- faults drawn:", f.Size.Faults)
	again, _ := explore.RunToken(pingpongWorld(lossy, 0), f.Token)
	fmt.Println("replayed:", again.Message == f.Message && again.Timeline == f.Timeline)
	// Output:
	// random failure: <nil>
	// pct failure: <nil>
	// no loss, retry_cnt 0: complete true failure: <nil>
	// one lost packet, retry_cnt 7: complete true failure: <nil>
	// one lost packet, retry_cnt 0: assertion - client: wr_id 9223372036854775808 completed with IBV_WC_RETRY_EXC_ERR - faults drawn: 1
	// replayed: true
}
