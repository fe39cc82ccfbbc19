// Package patterns is the catalogue of completion-loop patterns for the
// schedule explorer (package explore): the documented recipe, which every
// strategy passes, and buggy variants of it, each with the failure the
// explorer finds. verbsim explore runs them by name; docs/explore.md
// describes each and measures how fast each strategy finds it.
//
// Every world here is small: one device context, one completion channel,
// a CQ (two for the two-CQ patterns), a producer goroutine that adds
// completions with CQ.Push (the simulator's way to make a completion
// arrive, which raises the event exactly as the engine does) and a
// consumer goroutine that runs the loop under test.
package patterns

import (
	"context"
	"fmt"

	"github.com/verbsim/verbsim/explore"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// Pattern is one world of the catalogue.
type Pattern struct {
	Name string
	// Doc says what the loop does and, for a buggy one, what goes wrong.
	Doc string
	// Want is the failure the explorer should find; 0 for a correct loop.
	Want explore.Kind
	// Also is a second kind of failure the same bug may show as (0: none).
	Also explore.Kind
	// Deep is the number of preemptions the bug needs when that is more
	// than 2, the depth the fixed strategies are set to (PCT depth 2, an
	// exhaustive bound of 2): they may pass it, and Auto finds it.
	Deep int
	// World builds the world.
	World func(w *explore.World)
}

// All returns the catalogue, the correct recipes first.
func All() []Pattern {
	all := []Pattern{
		{Name: "recipe", Doc: "the documented recipe: get -> ack -> re-arm -> poll until empty; a producer adds 3 completions", Want: 0, World: Recipe(3)},
		{Name: "recipe-2cq", Doc: "the recipe with 2 CQs on one channel, acking and re-arming the CQ the event names; 2 completions on each", Want: 0, World: Recipe2CQ(2)},
		{Name: "drain-then-arm", Doc: "poll until empty, then arm, then sleep: a completion that lands between the empty poll and the arm raises no event, and the consumer sleeps on a non-empty CQ", Want: explore.LostWakeup, World: DrainThenArm(3)},
		{Name: "one-poll-per-event", Doc: "one ibv_poll_cq of one completion per event: two completions behind one event leave one in the CQ, and no event comes for it", Want: explore.LostWakeup, World: OnePollPerEvent(3)},
		{Name: "never-acked", Doc: "the ack of an event is put off to the next turn of the loop, so the last event read is never acknowledged: ibv_destroy_cq waits for ever", Want: explore.DestroyBlocked, World: NeverAcked(3)},
		{Name: "ack-wrong-cq", Doc: "2 CQs on one channel, every event acknowledged on the first CQ: the second CQ's destroy waits for its acks for ever", Want: explore.DestroyBlocked, World: AckWrongCQ(2)},
		{Name: "solicited-error-rxe", Doc: "arm solicited-only and count on an error completion to wake the loop, as the man page promises; under the rxe profile a send-side error does not fire a solicited-only arm", Want: explore.LostWakeup, World: SolicitedError()},
		{Name: "brpc-repoll-one-cq", Doc: "from apache/brpc #3415 (fixed by #3425): a recv CQ and a send CQ on one channel; both are polled empty, both are armed, and only the send CQ is polled again: a receive completion that lands between the recv CQ's empty poll and its arm is stranded", Want: explore.LostWakeup, World: BRPCRepollOneCQ(2)},
		{Name: "ucx-ack-last-cq", Doc: "from openucx/ucx #1039: the wake-up path drains every queued event of the channel (2 CQs on it) and acks them all on the CQ of the last event: the other CQ's destroy waits for its acks for ever", Want: explore.DestroyBlocked, World: UCXAckLastCQ(2)},
		{Name: "cq-too-small", Doc: "the CQ is sized for one batch (cqe 4 rounds up to the device's minimum) while the producer may add more before the event loop drains it: the CQ overruns (IBV_EVENT_CQ_ERR) and completions are lost", Want: explore.Overrun, World: CQTooSmall()},
		{Name: "ud-expects-every-packet", Want: explore.Deadlock, World: UDExpectsEveryPacket(3, sim.Faults{Drop: 0.1}), Doc: "a UD receiver runs the recipe until it has one receive completion per datagram the sender posted, as if UD were reliable; the fabric may drop a packet (Faults{Drop: 0.1}): the sender's completions all succeed (UD does not know) and the receiver waits for ever. Found only through fault draws: without faults every schedule passes"},
		{Name: "teardown-race", Want: explore.Deadlock, Also: explore.Assertion, World: TeardownRace(2), Doc: "a teardown destroys the CQ once the producer is done, while the consumer may still be waiting on the channel: nothing wakes it (or, when the consumer is between verbs, its next ack or poll fails with EINVAL)"},
		{Name: "empty-event-is-error", Want: explore.Assertion, Deep: 3, World: EmptyEventIsError(3), Doc: "the recipe, but an event whose CQ polls empty at once is taken for an error; such events are normal (a completion added after the re-arm raises one and is taken by the drain before it); it takes three preemptions"},
		{Name: "pool", Want: 0, World: WorkerPool(3, PoolCorrect), Doc: "a dispatcher runs the recipe and hands each completion to two workers over an unbuffered channel (explore.Chan); a WaitGroup counts the workers in before they start, the channel is closed after the last job, and the dispatcher checks after Wait that every job was done once"},
		{Name: "pool-add-after-recv", Want: explore.Assertion, World: WorkerPool(3, PoolAddAfterRecv), Doc: "the worker pool, but each worker counts a job in flight (WaitGroup.Add) only after taking it from the channel: the dispatcher's Wait may return while a job is taken and not yet counted, and it finds 2 of 3 done"},
		{Name: "pool-never-closed", Want: explore.Deadlock, World: WorkerPool(3, PoolNeverClosed), Doc: "the worker pool, but the jobs channel is never closed: the workers wait in a receive that nothing will satisfy, and the dispatcher in Wait for them"},
		{Name: "mutex-across-get-event", Want: explore.Deadlock, World: MutexAcrossGetEvent(2), Doc: "the consumer holds the mutex that guards the loop's state while it waits in ibv_get_cq_event, and the producer takes it to add a completion: each waits for the other (a deadlock in C programs too)"},
	}
	return all
}

// Expected reports whether k is a failure the pattern is documented to
// show (never, for a correct one).
func (p Pattern) Expected(k explore.Kind) bool { return p.Want != 0 && (k == p.Want || k == p.Also) }

// Lookup returns the pattern named name.
func Lookup(name string) (Pattern, bool) {
	for _, p := range All() {
		if p.Name == name {
			return p, true
		}
	}
	return Pattern{}, false
}

// ends is what the worlds share: a context, a channel and CQs on it.
type ends struct {
	ctx *sim.Context
	ch  *sim.CompChannel
	cqs []*sim.CQ
}

func build(w *explore.World, cfg sim.Config, ncq int, arm bool) *ends {
	if len(cfg.Devices) == 0 {
		cfg.Devices = []sim.DeviceConfig{{Name: "a"}}
	}
	f, err := w.NewFabric(cfg)
	if err != nil {
		w.Fatalf("fabric: %v", err)
	}
	e := &ends{}
	if e.ctx, err = f.Devices()[0].Open(); err != nil {
		w.Fatalf("open: %v", err)
	}
	if e.ch, err = e.ctx.CreateCompChannel(); err != nil {
		w.Fatalf("channel: %v", err)
	}
	for i := range ncq {
		q, err := e.ctx.CreateCQ(16, i, e.ch, 0)
		if err != nil {
			w.Fatalf("cq: %v", err)
		}
		if arm {
			q.ReqNotify(false)
		}
		e.cqs = append(e.cqs, q)
	}
	return e
}

// produce adds n successful receive completions to q, wrid base.., one
// verb each.
func produce(w *explore.World, q *sim.CQ, base, n int) {
	for i := range n {
		if _, err := q.Push(verbs.WC{WRID: uint64(base + i), Status: verbs.WCSuccess, Opcode: verbs.WCRecv}, false); err != nil {
			w.Errorf("push: %v", err)
		}
	}
}

// recipe is the documented loop on one channel: wait for an event, ack it
// on the CQ it names, re-arm that CQ, poll it until empty; until want
// completions arrived.
func recipe(ctx context.Context, w *explore.World, ch *sim.CompChannel, want int) int {
	wcs := make([]verbs.WC, 4)
	got := 0
	for got < want {
		q, _, err := ch.GetEvent(ctx)
		if err != nil {
			w.Errorf("get_cq_event: %v", err)
			return got
		}
		if err := q.AckEvents(1); err != nil {
			w.Errorf("ack: %v", err)
		}
		if err := q.ReqNotify(false); err != nil {
			w.Errorf("req_notify: %v", err)
		}
		for {
			n, err := q.Poll(wcs)
			if err != nil {
				w.Errorf("poll: %v", err)
				return got
			}
			if n == 0 {
				break
			}
			got += n
		}
	}
	return got
}

// drain polls q until it is empty and returns how many completions it took.
func drain(q *sim.CQ, wcs []verbs.WC) int {
	got := 0
	for {
		k, _ := q.Poll(wcs)
		if k == 0 {
			return got
		}
		got += k
	}
}

// destroyAll destroys every CQ of cqs, reporting a failure to the world.
func destroyAll(w *explore.World, cqs []*sim.CQ) {
	for _, q := range cqs {
		if err := q.Destroy(); err != nil {
			w.Errorf("destroy_cq: %v", err)
		}
	}
}

// Recipe is the documented recipe with one producer adding n completions.
func Recipe(n int) func(*explore.World) {
	return func(w *explore.World) {
		e := build(w, sim.Config{}, 1, true)
		w.Go("producer", func(context.Context) { produce(w, e.cqs[0], 0, n) })
		w.Go("consumer", func(ctx context.Context) {
			if got := recipe(ctx, w, e.ch, n); got != n {
				w.Errorf("consumer got %d completions, want %d", got, n)
			}
		})
	}
}

// Recipe2CQ is the recipe with two CQs on one channel and n completions
// on each, from one producer per CQ.
func Recipe2CQ(n int) func(*explore.World) {
	return func(w *explore.World) {
		e := build(w, sim.Config{}, 2, true)
		w.Go("producer0", func(context.Context) { produce(w, e.cqs[0], 0, n) })
		w.Go("producer1", func(context.Context) { produce(w, e.cqs[1], 100, n) })
		w.Go("consumer", func(ctx context.Context) {
			if got := recipe(ctx, w, e.ch, 2*n); got != 2*n {
				w.Errorf("consumer got %d completions, want %d", got, 2*n)
			}
		})
	}
}

// DrainThenArm polls until empty, then arms, then sleeps.
func DrainThenArm(n int) func(*explore.World) {
	return func(w *explore.World) {
		e := build(w, sim.Config{}, 1, false)
		q := e.cqs[0]
		w.Go("producer", func(context.Context) { produce(w, q, 0, n) })
		w.Go("consumer", func(ctx context.Context) {
			wcs := make([]verbs.WC, 4)
			got := 0
			for {
				got += drain(q, wcs)
				if got >= n {
					return
				}
				q.ReqNotify(false) // BUG: armed after the last poll, not before it
				if _, _, err := e.ch.GetEvent(ctx); err != nil {
					return
				}
				q.AckEvents(1)
			}
		})
	}
}

// OnePollPerEvent takes one completion per event.
func OnePollPerEvent(n int) func(*explore.World) {
	return func(w *explore.World) {
		e := build(w, sim.Config{}, 1, true)
		w.Go("producer", func(context.Context) { produce(w, e.cqs[0], 0, n) })
		w.Go("consumer", func(ctx context.Context) {
			wcs := make([]verbs.WC, 1)
			for got := 0; got < n; {
				q, _, err := e.ch.GetEvent(ctx)
				if err != nil {
					return
				}
				q.AckEvents(1)
				q.ReqNotify(false)
				k, _ := q.Poll(wcs) // BUG: one completion per event
				got += k
			}
		})
	}
}

// NeverAcked acks each event at the top of the next turn of the loop, so
// the last one is never acknowledged; then it destroys the CQ.
func NeverAcked(n int) func(*explore.World) {
	return func(w *explore.World) {
		e := build(w, sim.Config{}, 1, true)
		w.Go("producer", func(context.Context) { produce(w, e.cqs[0], 0, n) })
		w.Go("consumer", func(ctx context.Context) {
			wcs := make([]verbs.WC, 4)
			var prev *sim.CQ
			for got := 0; got < n; {
				q, _, err := e.ch.GetEvent(ctx)
				if err != nil {
					return
				}
				if prev != nil {
					prev.AckEvents(1) // BUG: the ack of the event before; the last one is never acked
				}
				prev = q
				q.ReqNotify(false)
				got += drain(q, wcs)
			}
			if err := e.cqs[0].Destroy(); err != nil {
				w.Errorf("destroy_cq: %v", err)
			}
		})
	}
}

// AckWrongCQ acks every event on the first CQ, whichever CQ it named.
func AckWrongCQ(n int) func(*explore.World) {
	return func(w *explore.World) {
		e := build(w, sim.Config{}, 2, true)
		w.Go("producer0", func(context.Context) { produce(w, e.cqs[0], 0, n) })
		w.Go("producer1", func(context.Context) { produce(w, e.cqs[1], 100, n) })
		w.Go("consumer", func(ctx context.Context) {
			wcs := make([]verbs.WC, 4)
			acked := map[*sim.CQ]int{}
			for got := 0; got < 2*n; {
				q, _, err := e.ch.GetEvent(ctx)
				if err != nil {
					return
				}
				if e.cqs[0].AckEvents(1) == nil { // BUG: always the first CQ
					acked[e.cqs[0]]++
				}
				q.ReqNotify(false)
				got += drain(q, wcs)
			}
			destroyAll(w, e.cqs)
		})
	}
}

// SolicitedError arms solicited-only and waits for an error completion
// under the rxe profile.
func SolicitedError() func(*explore.World) {
	return func(w *explore.World) {
		e := build(w, sim.Config{Profile: sim.RXEProfile()}, 1, false)
		q := e.cqs[0]
		w.Go("producer", func(context.Context) {
			q.Push(verbs.WC{WRID: 1, Status: verbs.WCSuccess, Opcode: verbs.WCSend}, false)
			q.Push(verbs.WC{WRID: 2, Status: verbs.WCRetryExcErr, Opcode: verbs.WCSend}, false)
		})
		w.Go("consumer", func(ctx context.Context) {
			wcs := make([]verbs.WC, 4)
			q.ReqNotify(true) // BUG on rxe: only the solicited bit fires it, and a send error has none
			for {
				for {
					k, _ := q.Poll(wcs)
					for _, c := range wcs[:k] {
						if c.Status != verbs.WCSuccess {
							return // the error the loop waits for
						}
					}
					if k == 0 {
						break
					}
				}
				if _, _, err := e.ch.GetEvent(ctx); err != nil {
					return
				}
				q.AckEvents(1)
				q.ReqNotify(true)
			}
		})
	}
}

// TeardownRace destroys the CQ as soon as the producer is done, while the
// consumer may still wait on the channel.
func TeardownRace(n int) func(*explore.World) {
	return func(w *explore.World) {
		e := build(w, sim.Config{}, 1, true)
		q := e.cqs[0]
		w.Go("producer", func(context.Context) {
			produce(w, q, 0, n)
			if err := q.Destroy(); err != nil { // BUG: the consumer may not have seen them yet
				w.Errorf("destroy_cq: %v", err)
			}
		})
		w.Go("consumer", func(ctx context.Context) {
			if got := recipe(ctx, w, e.ch, n); got != n {
				w.Errorf("consumer got %d completions, want %d", got, n)
			}
		})
	}
}

// BRPCRepollOneCQ is the loop of apache/brpc's RdmaEndpoint::PollCq
// before its fix (issue #3415, pull request #3425), reduced: it polls the
// recv CQ until empty, then the send CQ until empty, then arms both and
// polls again only the send CQ before it sleeps. A producer adds n
// receive completions.
func BRPCRepollOneCQ(n int) func(*explore.World) {
	return func(w *explore.World) {
		e := build(w, sim.Config{}, 2, true)
		recvCQ, sendCQ := e.cqs[0], e.cqs[1]
		w.Go("peer", func(context.Context) { produce(w, recvCQ, 0, n) })
		w.Go("poller", func(ctx context.Context) {
			wcs := make([]verbs.WC, 4)
			got := 0
			for got < n {
				got += drain(recvCQ, wcs)
				drain(sendCQ, wcs)
				if got >= n {
					return
				}
				recvCQ.ReqNotify(false)
				sendCQ.ReqNotify(false)
				drain(sendCQ, wcs) // BUG: the recv CQ is not polled again after its arm
				q, _, err := e.ch.GetEvent(ctx)
				if err != nil {
					return
				}
				q.AckEvents(1)
			}
		})
	}
}

// UCXAckLastCQ is the wake-up path of openucx/ucx before the fix of issue
// #1039, reduced: after a blocking wait it drains every event queued on
// the channel and acks the count on the CQ the last event named. Two CQs
// share the channel, one producer each.
func UCXAckLastCQ(n int) func(*explore.World) {
	return func(w *explore.World) {
		e := build(w, sim.Config{}, 2, true)
		w.Go("producer0", func(context.Context) { produce(w, e.cqs[0], 0, n) })
		w.Go("producer1", func(context.Context) { produce(w, e.cqs[1], 100, n) })
		w.Go("worker", func(ctx context.Context) {
			wcs := make([]verbs.WC, 4)
			for got := 0; got < 2*n; {
				last, _, err := e.ch.GetEvent(ctx)
				if err != nil {
					return
				}
				events := 1
				for {
					q, _, err := e.ch.TryGetEvent()
					if err != nil {
						break
					}
					last = q
					events++
				}
				last.AckEvents(events) // BUG: every event acked on the last CQ
				for _, q := range e.cqs {
					q.ReqNotify(false)
					got += drain(q, wcs)
				}
			}
			destroyAll(w, e.cqs)
		})
	}
}

// CQTooSmall sizes the CQ at the device's smallest while the producer
// adds more completions than that before the event loop drains it.
func CQTooSmall() func(*explore.World) {
	return func(w *explore.World) {
		f, err := w.NewFabric(sim.Config{Devices: []sim.DeviceConfig{{Name: "a"}}})
		if err != nil {
			w.Fatalf("fabric: %v", err)
		}
		ctx, _ := f.Devices()[0].Open()
		ch, _ := ctx.CreateCompChannel()
		q, err := ctx.CreateCQ(4, nil, ch, 0) // BUG: sized for one batch
		if err != nil {
			w.Fatalf("cq: %v", err)
		}
		q.ReqNotify(false)
		n := q.CQE() + 1
		w.Go("producer", func(context.Context) {
			for i := range n { // a device drops what does not fit, and tells no one but the async queue
				q.Push(verbs.WC{WRID: uint64(i), Status: verbs.WCSuccess, Opcode: verbs.WCRecv}, false)
			}
		})
		w.Go("consumer", func(ctx context.Context) { recipe(ctx, w, ch, n) })
	}
}

// String is the pattern's name and doc.
// UDExpectsEveryPacket sends n UD datagrams from device a to device b of
// a fabric with the given packet faults; both sides run the recipe on a
// channel of their own, the sender until its n sends completed, the
// receiver until n datagrams arrived (BUG: UD is unreliable, a datagram
// may be lost and nothing resends it).
func UDExpectsEveryPacket(n int, faults sim.Faults) func(*explore.World) {
	return func(w *explore.World) {
		f, err := w.NewFabric(sim.Config{Devices: []sim.DeviceConfig{{Name: "a"}, {Name: "b"}}, Faults: faults})
		if err != nil {
			w.Fatalf("fabric: %v", err)
		}
		type end struct {
			ctx *sim.Context
			pd  *sim.PD
			ch  *sim.CompChannel
			cq  *sim.CQ
			qp  *sim.QP
			mr  *sim.MR
		}
		open := func(d *sim.Device) end {
			var e end
			var err error
			if e.ctx, err = d.Open(); err != nil {
				w.Fatalf("open: %v", err)
			}
			e.pd, _ = e.ctx.AllocPD()
			e.ch, _ = e.ctx.CreateCompChannel()
			e.cq, _ = e.ctx.CreateCQ(16, nil, e.ch, 0)
			e.mr, _ = e.pd.RegMR(make([]byte, 64*(n+1)), verbs.AccessLocalWrite)
			e.qp, err = e.pd.CreateQP(sim.QPInitAttr{SendCQ: e.cq, RecvCQ: e.cq, Type: verbs.QPTypeUD,
				Cap: verbs.QPCap{MaxSendWR: uint32(n), MaxRecvWR: uint32(n), MaxSendSGE: 1, MaxRecvSGE: 1}})
			if err != nil {
				w.Fatalf("create_qp: %v", err)
			}
			if err := sim.ReadyUD(e.qp, 0x1111); err != nil {
				w.Fatalf("ready: %v", err)
			}
			e.cq.ReqNotify(false)
			return e
		}
		snd, rcv := open(f.Devices()[0]), open(f.Devices()[1])
		for i := range n { // a UD receive buffer has room for the 40-byte GRH
			sge := verbs.SGE{Addr: rcv.mr.Addr() + uint64(64*i), Length: 64, LKey: rcv.mr.LKey()}
			if _, err := rcv.qp.PostRecv([]verbs.RecvWR{{WRID: uint64(i), SGList: []verbs.SGE{sge}}}); err != nil {
				w.Fatalf("post_recv: %v", err)
			}
		}
		port, _ := rcv.ctx.QueryPort(1)
		ah, err := snd.pd.CreateAH(verbs.AHAttr{DLID: port.LID, PortNum: 1})
		if err != nil {
			w.Fatalf("create_ah: %v", err)
		}
		w.Go("sender", func(ctx context.Context) {
			for i := range n {
				sge := verbs.SGE{Addr: snd.mr.Addr(), Length: 8, LKey: snd.mr.LKey()}
				wr := verbs.SendWR{WRID: uint64(100 + i), Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{sge},
					AH: ah, RemoteQPN: rcv.qp.Num(), RemoteQKey: 0x1111}
				if _, err := snd.qp.PostSend([]verbs.SendWR{wr}); err != nil {
					w.Errorf("post_send: %v", err)
					return
				}
			}
			if got := recipe(ctx, w, snd.ch, n); got != n {
				w.Errorf("sender got %d completions, want %d", got, n)
			}
		})
		w.Go("receiver", func(ctx context.Context) {
			if got := recipe(ctx, w, rcv.ch, n); got != n { // BUG: waits for every datagram
				w.Errorf("receiver got %d datagrams, want %d", got, n)
			}
		})
	}
}

func (p Pattern) String() string { return fmt.Sprintf("%s: %s", p.Name, p.Doc) }

// Measurement is how fast one strategy finds a pattern's failure, over
// several seeds.
type Measurement struct {
	Strategy explore.Strategy
	Seeds    int     // explorations run, seeds 1..Seeds
	Found    int     // explorations that found the expected failure
	Mean     float64 // schedules to the first failure, mean over those that found it
	Worst    int     // ... and the most
	// Before and After are the mean steps and preemptions of the failing
	// schedules as found and once shrunk (explore.Failure.Size).
	Before, After struct{ Steps, Preemptions float64 }
}

// Measure explores p with strategy s from seeds 1..seeds (one exploration
// for Exhaustive, which has no seed), each up to budget schedules, and
// reports how many schedules the first failure took.
func Measure(p Pattern, s explore.Strategy, seeds, budget int) Measurement {
	m := Measurement{Strategy: s, Seeds: seeds}
	if s == explore.Exhaustive {
		m.Seeds = 1
	}
	total := 0
	for seed := 1; seed <= m.Seeds; seed++ {
		res := explore.Explore(p.World, explore.Options{Strategy: s, Seed: uint64(seed), Schedules: budget, Depth: 2, Preemptions: 2})
		if f := res.Failure; f != nil && p.Expected(f.Kind) {
			m.Found++
			total += f.Schedule
			m.Worst = max(m.Worst, f.Schedule)
			m.Before.Steps += float64(f.Unshrunk.Steps)
			m.Before.Preemptions += float64(f.Unshrunk.Preemptions)
			m.After.Steps += float64(f.Size.Steps)
			m.After.Preemptions += float64(f.Size.Preemptions)
		}
	}
	if m.Found > 0 {
		n := float64(m.Found)
		m.Mean = float64(total) / n
		m.Before.Steps, m.Before.Preemptions = m.Before.Steps/n, m.Before.Preemptions/n
		m.After.Steps, m.After.Preemptions = m.After.Steps/n, m.After.Preemptions/n
	}
	return m
}

// Shrunk renders the mean sizes before and after shrinking as a table
// cell: "steps/preemptions -> steps/preemptions".
func (m Measurement) Shrunk() string {
	if m.Found == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f/%.1f → %.1f/%.1f", m.Before.Steps, m.Before.Preemptions, m.After.Steps, m.After.Preemptions)
}

// String renders the measurement as a table cell: "mean (worst), found/seeds".
func (m Measurement) String() string {
	if m.Found == 0 {
		return fmt.Sprintf("not found (0/%d)", m.Seeds)
	}
	if m.Seeds == 1 {
		return fmt.Sprintf("%d", m.Worst)
	}
	return fmt.Sprintf("%.1f (worst %d), %d/%d", m.Mean, m.Worst, m.Found, m.Seeds)
}
