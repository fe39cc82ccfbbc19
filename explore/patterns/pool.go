package patterns

import (
	"context"

	"github.com/verbsim/verbsim/explore"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// The patterns of this file use Go's synchronisation as real event loops
// do, through the explorer's types (explore.Chan, explore.WaitGroup,
// explore.Mutex), which outside a world are Go's own.

// PoolBug is what a worker pool gets wrong.
type PoolBug uint8

// The worker pools of the catalogue.
const (
	// PoolCorrect: the dispatcher counts both workers in before they
	// start, closes the jobs channel after the last job and waits for
	// them.
	PoolCorrect PoolBug = iota
	// PoolAddAfterRecv: each worker counts a job in flight (WaitGroup.Add)
	// only after it has taken it from the channel, so the dispatcher's
	// Wait may return while a job is taken and not counted.
	PoolAddAfterRecv
	// PoolNeverClosed: the dispatcher never closes the jobs channel, so
	// the workers wait for another job for ever and so does its Wait.
	PoolNeverClosed
)

// WorkerPool is a dispatcher that runs the recipe on a CQ (n completions
// from a producer) and hands each completion's wr_id to a pool of two
// workers over an unbuffered channel; the workers record what they
// processed under a mutex, and when the dispatcher has waited for them it
// checks that every wr_id was processed exactly once.
func WorkerPool(n int, bug PoolBug) func(*explore.World) {
	return func(w *explore.World) {
		e := build(w, sim.Config{}, 1, true)
		q := e.cqs[0]
		jobs := explore.NewChan[uint64](0)
		var (
			inflight explore.WaitGroup
			mu       explore.Mutex
			done     = map[uint64]int{}
		)
		w.Label(jobs, "jobs")
		w.Label(&inflight, "inflight")
		w.Label(&mu, "done")
		if bug != PoolAddAfterRecv {
			inflight.Add(2)
		}
		w.Go("producer", func(context.Context) { produce(w, q, 0, n) })
		w.Go("dispatcher", func(ctx context.Context) {
			wcs := make([]verbs.WC, 4)
			for got := 0; got < n; {
				c, _, err := e.ch.GetEvent(ctx)
				if err != nil {
					return
				}
				c.AckEvents(1)
				c.ReqNotify(false)
				for k, _ := c.Poll(wcs); k > 0; k, _ = c.Poll(wcs) {
					for _, wc := range wcs[:k] {
						jobs.Send(wc.WRID)
					}
					got += k
				}
			}
			if bug != PoolNeverClosed {
				jobs.Close()
			}
			inflight.Wait()
			mu.Lock()
			if len(done) != n {
				w.Errorf("dispatcher: %d of %d jobs done after Wait", len(done), n)
			}
			mu.Unlock()
		})
		for _, name := range []string{"worker1", "worker2"} {
			w.Go(name, func(context.Context) {
				if bug != PoolAddAfterRecv {
					defer inflight.Done()
				}
				for {
					id, ok := jobs.Recv()
					if !ok {
						return
					}
					if bug == PoolAddAfterRecv {
						inflight.Add(1) // BUG: counted after it was taken
					}
					mu.Lock()
					done[id]++
					mu.Unlock()
					if bug == PoolAddAfterRecv {
						inflight.Done()
					}
				}
			})
		}
	}
}

// MutexAcrossGetEvent guards the loop's state with a mutex, and the
// consumer keeps it locked while it waits in ibv_get_cq_event; the
// producer takes the same mutex to add a completion and count it.
func MutexAcrossGetEvent(n int) func(*explore.World) {
	return func(w *explore.World) {
		e := build(w, sim.Config{}, 1, true)
		q := e.cqs[0]
		var mu explore.Mutex
		w.Label(&mu, "state")
		pending := 0
		w.Go("producer", func(context.Context) {
			for i := range n {
				mu.Lock()
				if _, err := q.Push(verbs.WC{WRID: uint64(i), Status: verbs.WCSuccess, Opcode: verbs.WCRecv}, false); err != nil {
					w.Errorf("push: %v", err)
				}
				pending++
				mu.Unlock()
			}
		})
		w.Go("consumer", func(ctx context.Context) {
			wcs := make([]verbs.WC, 4)
			mu.Lock() // BUG: held across the wait below
			defer mu.Unlock()
			for got := 0; got < n; {
				c, _, err := e.ch.GetEvent(ctx)
				if err != nil {
					return
				}
				c.AckEvents(1)
				c.ReqNotify(false)
				for k, _ := c.Poll(wcs); k > 0; k, _ = c.Poll(wcs) {
					got += k
					pending -= k
				}
			}
		})
	}
}

// EmptyEventIsError runs the recipe but takes an event whose CQ polls
// empty at once for an error. Such events are normal: a completion that
// lands after the re-arm raises an event and is then taken by the drain
// of the event before it. Three preemptions make it: the consumer is
// switched in after the first completion, switched out after its re-arm
// (the second completion raises the next event there), and back in
// before the third.
func EmptyEventIsError(n int) func(*explore.World) {
	return func(w *explore.World) {
		e := build(w, sim.Config{}, 1, true)
		w.Go("producer", func(context.Context) { produce(w, e.cqs[0], 0, n) })
		w.Go("consumer", func(ctx context.Context) {
			wcs := make([]verbs.WC, 4)
			for got := 0; got < n; {
				c, _, err := e.ch.GetEvent(ctx)
				if err != nil {
					return
				}
				c.AckEvents(1)
				c.ReqNotify(false)
				k, _ := c.Poll(wcs)
				if k == 0 {
					w.Errorf("consumer: an event, and its CQ is empty") // BUG: an empty event is normal
					return
				}
				for ; k > 0; k, _ = c.Poll(wcs) {
					got += k
				}
			}
		})
	}
}
