// Package pingpong is a ping-pong over a reliable connection in the style of
// rdma-core's ibv_rc_pingpong, run against verbsim's in-memory fabric.
//
// Run builds a fabric with two devices, a server and a client, each with its
// own device context, protection domain, registered buffer, completion queue
// (and, in event mode, completion channel) and RC queue pair, connects the
// two queue pairs, and lets each side run its own loop in its own goroutine:
// the client sends a message, the server answers it, and so on for
// Config.Iters round trips. Every message carries a header (side and
// iteration) and a payload drawn from a deterministic generator, and each
// side checks every message it receives, so a lost, duplicated, reordered or
// corrupted delivery is an error, not a statistic. The fabric runs in
// Background mode, so the RC retransmission timers fire on their own while
// both sides wait, and Config.Drop and Config.Duplicate inject packet
// faults that RC must hide.
//
// docs/pingpong.md walks through the program.
package pingpong

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/verbsim/verbsim/sim/trace"
	"github.com/verbsim/verbsim/verbs"

	"github.com/verbsim/verbsim/sim"
)

// HeaderSize is the length of the header at the start of every message:
// a magic number, the sending side and the iteration number. Config.Size
// must be at least this.
const HeaderSize = 16

// The defaults of Config, those of ibv_rc_pingpong where it has one.
const (
	DefaultIters   = 1000          // -n
	DefaultSize    = 4096          // -s
	DefaultRXDepth = 500           // -r
	DefaultMTU     = verbs.MTU1024 // -m
	// DefaultTimeout is the local ACK timeout code: 4.096 µs × 2^4, about
	// 65 µs, so that a lost packet costs little wall time (rc_pingpong uses
	// 14, about 67 ms, which suits a real network, not a test).
	DefaultTimeout = 4
)

// Config describes a run. Zero fields take the defaults above.
type Config struct {
	// Iters is the number of round trips: the client sends Iters messages
	// and the server answers each one.
	Iters int
	// Size is the length of every message in bytes, header included.
	Size int
	// Events selects the completion-channel loop (rc_pingpong -e): each side
	// sleeps on its channel between completions. false: busy polling.
	Events bool
	// RXDepth is the number of receives each side keeps posted.
	RXDepth int
	// MTU is the path MTU of the connection.
	MTU verbs.MTU
	// Timeout is the RC local ACK timeout code (4.096 µs × 2^Timeout).
	Timeout uint8
	// Drop and Duplicate are the probabilities that a packet is lost or
	// arrives twice (sim.Faults). Drop must be below 1.
	Drop, Duplicate float64
	// Delay is the probability that a packet arrives late, 1 to 10 µs of
	// virtual time after it was sent, possibly overtaken by later ones.
	Delay float64
	// Seed seeds the fabric's faults and the message payloads. Runs with
	// the same Seed, Iters and Size deliver the same bytes, whatever the
	// mode and the faults.
	Seed uint64
	// Profile is the fabric's behaviour profile; the zero value is
	// sim.DefaultProfile.
	Profile sim.Profile
	// Trace, if set, receives the fabric's trace: every verb call and
	// engine event of the run. Read it after Run returns.
	Trace *trace.Log
}

// withDefaults fills the zero fields and checks the rest.
func (c Config) withDefaults() (Config, error) {
	def := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	def(&c.Iters, DefaultIters)
	def(&c.Size, DefaultSize)
	def(&c.RXDepth, DefaultRXDepth)
	if c.MTU == 0 {
		c.MTU = DefaultMTU
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	switch {
	case c.Iters < 0:
		return c, fmt.Errorf("pingpong: iterations %d: must be positive", c.Iters)
	case c.Size < HeaderSize:
		return c, fmt.Errorf("pingpong: message size %d: must be at least %d (the header)", c.Size, HeaderSize)
	case c.RXDepth < 0:
		return c, fmt.Errorf("pingpong: receive depth %d: must be positive", c.RXDepth)
	case !c.MTU.Valid():
		return c, fmt.Errorf("pingpong: %v is not an MTU code", c.MTU)
	case c.Timeout > 31:
		return c, fmt.Errorf("pingpong: ACK timeout code %d: must be at most 31", c.Timeout)
	case !(c.Drop >= 0 && c.Drop < 1):
		return c, fmt.Errorf("pingpong: drop probability %v: must be in [0, 1)", c.Drop)
	case !(c.Duplicate >= 0 && c.Duplicate <= 1):
		return c, fmt.Errorf("pingpong: duplicate probability %v: must be in [0, 1]", c.Duplicate)
	case !(c.Delay >= 0 && c.Delay <= 1):
		return c, fmt.Errorf("pingpong: delay probability %v: must be in [0, 1]", c.Delay)
	}
	return c, nil
}

// Result is what a run did.
type Result struct {
	// Config is the configuration the run used, defaults filled in.
	Config Config
	// RoundTrips is the number of round trips completed: replies the
	// client received.
	RoundTrips int
	// Bytes is the number of message bytes delivered, both ways
	// (rc_pingpong's size × iters × 2 when the run completes).
	Bytes int64
	// Client and Server are each side's account.
	Client, Server SideStats
	// Digest is the SHA-256 of Client.Digest followed by Server.Digest: two
	// runs delivered the same bytes in the same order if and only if (but
	// for a hash collision) their digests are equal.
	Digest [sha256.Size]byte
	// Stats are the fabric's engine counters at the end of the exchange:
	// packets, drops, duplicates, timers.
	Stats sim.EngineStats
	// Virtual is the simulated time the exchange took; Wall the real time.
	Virtual, Wall time.Duration
	// Portability says where the run, teardown included, depended on its
	// profile's reading of a rule on which providers differ.
	Portability sim.Portability
}

// SideStats is one side's account of a run.
type SideStats struct {
	Device string // the device the side ran on
	QPN    uint32 // its queue pair number
	LID    uint16 // the LID of its port
	// Sent and Received count messages; SendsCompleted counts the
	// successful send completions polled.
	Sent, Received, SendsCompleted int
	// Bytes is the number of message bytes received.
	Bytes int64
	// Digest is the SHA-256 of every message received, in order.
	Digest [sha256.Size]byte
	// Polls counts poll calls, EmptyPolls those that found nothing.
	Polls, EmptyPolls uint64
	// Events counts the completion events read (event mode), EmptyEvents
	// those after which the re-arm-then-drain found the CQ empty: the
	// harmless NOTIFY-13 case, see docs/notify.md.
	Events, EmptyEvents uint64
}

// USecPerIter returns the wall time of one round trip in microseconds, as
// rc_pingpong prints it.
func (r Result) USecPerIter() float64 {
	if r.RoundTrips == 0 {
		return 0
	}
	return float64(r.Wall.Nanoseconds()) / 1e3 / float64(r.RoundTrips)
}

// MbitPerSec returns the throughput in megabits per second of wall time, as
// rc_pingpong prints it.
func (r Result) MbitPerSec() float64 {
	us := float64(r.Wall.Nanoseconds()) / 1e3
	if us <= 0 {
		return 0
	}
	return float64(r.Bytes) * 8 / us
}

// Run runs the ping-pong described by cfg and returns what it did. ctx
// bounds the run: when it ends, both sides stop and Run returns an error
// that matches ctx's. Every goroutine Run starts has ended, and every
// object it created has been destroyed, when it returns. A message that
// fails its check, a failed completion or a failed verb is an error;
// nothing panics.
func Run(ctx context.Context, cfg Config) (res Result, err error) {
	cfg, err = cfg.withDefaults()
	if err != nil {
		return Result{}, err
	}
	res.Config = cfg
	f, err := sim.NewFabric(sim.Config{
		Profile: cfg.Profile,
		Devices: []sim.DeviceConfig{{Name: "vsim0"}, {Name: "vsim1"}},
		Mode:    sim.Background,
		Seed:    cfg.Seed,
		Faults:  sim.Faults{Drop: cfg.Drop, Duplicate: cfg.Duplicate, Delay: cfg.Delay},
		Trace:   cfg.Trace,
	})
	if err != nil {
		return Result{}, fmt.Errorf("pingpong: %w", err)
	}
	devs := f.Devices()
	server := &side{who: Server, cfg: cfg}
	client := &side{who: Client, cfg: cfg}
	// However Run ends, stop the clock and destroy everything, reporting
	// what could not be destroyed.
	defer func() {
		err = errors.Join(err, teardown(ctx, f, server, client))
		res.Portability = f.Portability()
	}()
	if err := server.open(devs[0]); err != nil {
		return Result{}, fmt.Errorf("pingpong: server: %w", err)
	}
	if err := client.open(devs[1]); err != nil {
		return Result{}, fmt.Errorf("pingpong: client: %w", err)
	}
	// The exchange of addresses that rc_pingpong does over a TCP socket,
	// and the three ibv_modify_qp calls per QP.
	if err := sim.Connect(client.qp, server.qp, sim.ConnectOptions{
		PathMTU: cfg.MTU, Timeout: cfg.Timeout, RetryCnt: 7, RNRRetry: 7,
	}); err != nil {
		return Result{}, fmt.Errorf("pingpong: connect: %w", err)
	}
	for _, s := range []*side{server, client} {
		if err := s.prepost(); err != nil {
			return Result{}, fmt.Errorf("pingpong: %v: post receives: %w", s.who, err)
		}
	}

	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	start, vstart := time.Now(), f.Now()
	var wg sync.WaitGroup
	var failed [2]bool
	for i, s := range []*side{server, client} {
		wg.Go(func() {
			if err := s.run(runCtx); err != nil {
				// The first error is the cause; the other side then stops
				// with the cancellation.
				failed[i] = true
				cancel(fmt.Errorf("%v: %w", s.who, err))
			}
		})
	}
	wg.Wait()
	res.Wall = time.Since(start)
	res.Virtual = time.Duration(f.Now() - vstart)
	res.Stats = f.Stats()
	res.Client, res.Server = client.stats(), server.stats()
	res.RoundTrips = client.received
	res.Bytes = res.Client.Bytes + res.Server.Bytes
	h := sha256.New()
	h.Write(res.Client.Digest[:])
	h.Write(res.Server.Digest[:])
	h.Sum(res.Digest[:0])
	if failed[0] || failed[1] {
		return res, fmt.Errorf("pingpong: after %d of %d round trips: %w", res.RoundTrips, cfg.Iters, context.Cause(runCtx))
	}
	return res, nil
}

// teardown stops the fabric's clock and destroys both sides' objects in
// dependency order: QPs, then CQs (once their events are acknowledged),
// channels, MRs, PDs and contexts.
func teardown(ctx context.Context, f *sim.Fabric, sides ...*side) error {
	// Destroying waits only for acknowledgements this program owes and
	// gives; bound it anyway, even when ctx has already ended.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	errs := []error{f.Close()}
	each := func(what string, fn func(s *side) error) {
		for _, s := range sides {
			if err := fn(s); err != nil {
				errs = append(errs, fmt.Errorf("pingpong: %v: %s: %w", s.who, what, err))
			}
		}
	}
	each("destroy QP", func(s *side) error {
		if s.qp == nil {
			return nil
		}
		return s.qp.DestroyContext(dctx)
	})
	each("destroy CQ", func(s *side) error {
		if s.cq == nil {
			return nil
		}
		// Acknowledge every event: those read and not yet acknowledged (an
		// error between GetEvent and AckEvents), and those still queued.
		if s.unacked > 0 {
			if err := s.cq.AckEvents(s.unacked); err != nil {
				return err
			}
			s.unacked = 0
		}
		if s.ch != nil {
			for {
				got, _, err := s.ch.TryGetEvent()
				if err != nil {
					break // EAGAIN: none left
				}
				if err := got.AckEvents(1); err != nil {
					return err
				}
			}
		}
		return s.cq.DestroyContext(dctx)
	})
	each("destroy completion channel", func(s *side) error {
		if s.ch == nil {
			return nil
		}
		return s.ch.Destroy()
	})
	each("deregister MR", func(s *side) error {
		if s.mr == nil {
			return nil
		}
		return s.mr.Dereg()
	})
	each("deallocate PD", func(s *side) error {
		if s.pd == nil {
			return nil
		}
		return s.pd.Dealloc()
	})
	each("close device", func(s *side) error {
		if s.vctx == nil {
			return nil
		}
		return s.vctx.Close()
	})
	return errors.Join(errs...)
}

// qpCap is what each side asks of its QP: a send queue of one, as in
// rc_pingpong, since a side never has more than one send in flight; a
// receive queue of RXDepth; one scatter/gather element each way.
func qpCap(cfg Config) verbs.QPCap {
	return verbs.QPCap{MaxSendWR: 1, MaxRecvWR: uint32(cfg.RXDepth), MaxSendSGE: 1, MaxRecvSGE: 1}
}
