package soak

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// Config describes a soak. Zero fields take the defaults of Defaults.
type Config struct {
	// Seed decides the traffic, the fault plan and the fabric's faults.
	Seed uint64
	// Profile is the fabric's profile; the zero value is the default one.
	Profile sim.Profile
	// Rounds is the number of rounds. Each round creates a fresh set of
	// QPs on the long-lived devices, CQs and channels, runs the traffic,
	// and destroys the QPs again.
	Rounds int
	// WRs is the number of send WRs each QP posts in a round (fewer when
	// its connection breaks: a broken QP posts a few more, which are
	// flushed at once, and stops).
	WRs int
	// Duration, when positive, replaces Rounds: rounds start until
	// Duration has passed (checked between rounds only). For runs on
	// demand; CI runs are bounded by Rounds and WRs.
	Duration time.Duration
	// Faults are the fabric's packet faults. Zero: DefaultFaults. Set
	// NoFaults for a run without any.
	Faults   sim.Faults
	NoFaults bool
	// Watchdog bounds every wait of one round (and of the final teardown)
	// in wall time. It exists to turn a genuine hang into an error with
	// every goroutine's stack; it must be far longer than any healthy
	// round on a loaded machine. Zero: DefaultWatchdog.
	Watchdog time.Duration
	// Logf, if set, receives a line per round.
	Logf func(format string, args ...any)
}

// The defaults of Config.
const (
	DefaultRounds   = 2
	DefaultWRs      = 300
	DefaultWatchdog = 5 * time.Minute
)

// DefaultFaults are the packet faults of a soak: 2 % of the packets lost,
// 2 % duplicated, 2 % delayed by up to 10,000 ticks.
var DefaultFaults = sim.Faults{Drop: 0.02, Duplicate: 0.02, Delay: 0.02}

// Report is what a soak did. Every count is over the whole run.
type Report struct {
	Seed    uint64
	Profile string
	Rounds  int
	QPs     int // QPs created
	// SendWRs and RecvWRs count the WRs posted.
	SendWRs, RecvWRs uint64
	// Completions counts the completions polled, ByStatus by status name.
	Completions uint64
	ByStatus    map[string]uint64
	// Silent counts unsignaled WRs that succeeded without a completion
	// (covered by a later one, CQ-20).
	Silent uint64
	// Vanished counts WRs of destroyed QPs that never completed (QP-37),
	// unsignaled ones that may have succeeded silently included.
	Vanished uint64
	// Messages counts successful receives whose data was checked; Writes,
	// Reads and Atomics the RDMA operations whose results were checked.
	Messages, Writes, Reads, Atomics uint64
	// UDDuplicates counts datagrams received twice (the duplicate fault).
	UDDuplicates uint64
	// Events counts completion events read (and acknowledged);
	// EmptyEvents those after which the drain found nothing (NOTIFY-13).
	Events, EmptyEvents uint64
	// Async counts async events read (and acknowledged), by type.
	Async map[string]uint64
	// Forced, Fatal and Destroyed count the injected faults: statuses
	// forced, QPs made fatal, QPs destroyed mid-traffic.
	Forced, Fatal, Destroyed uint64
	// Engine are the fabric's counters at the end.
	Engine sim.EngineStats
	// Wall is the run's wall time, for the log only.
	Wall time.Duration
}

// String renders the report on a few lines.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d, profile %s: %d rounds, %d QPs, %d send + %d recv WRs posted, %d completions in %v\n",
		r.Seed, r.Profile, r.Rounds, r.QPs, r.SendWRs, r.RecvWRs, r.Completions, r.Wall.Round(time.Millisecond))
	fmt.Fprintf(&b, "  statuses %s; %d silent unsignaled successes, %d vanished with their destroyed QP\n",
		sortedCounts(r.ByStatus), r.Silent, r.Vanished)
	fmt.Fprintf(&b, "  checked: %d messages, %d writes, %d reads, %d atomics; %d UD duplicates\n",
		r.Messages, r.Writes, r.Reads, r.Atomics, r.UDDuplicates)
	fmt.Fprintf(&b, "  events: %d read and acked (%d found the CQ empty); async %s\n", r.Events, r.EmptyEvents, sortedCounts(r.Async))
	fmt.Fprintf(&b, "  injected: %d forced statuses, %d fatal QPs, %d QPs destroyed mid-traffic\n", r.Forced, r.Fatal, r.Destroyed)
	fmt.Fprintf(&b, "  engine: %+v", r.Engine)
	return b.String()
}

func sortedCounts(m map[string]uint64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// Sizes of every QP and buffer.
const (
	depth      = 16  // send and receive queue depth of every QP
	maxLen     = 600 // the longest message, WRITE or READ (3 packets at MTU 256)
	grhLen     = 40  // the GRH in front of a UD payload (XFER-21)
	slotLen    = maxLen + grhLen
	hdrLen     = 32            // the header of every SEND
	writeSlots = 2 * depth     // RC WRITE targets per direction, reused in turn
	readSrcLen = 1024          // the region peers READ from
	maxInline  = 128           // max_inline_data
	qkey       = 0x11111111    // the Q_Key of every UD QP
	magic      = 0x6b616f73    // "soak"
	cqsPerDev  = 4             // CQs per device
	cqe        = 2 * depth * 8 // room for 8 QPs' queues: a CQ cannot overrun (CQ-25)
	maxFaults  = 20            // errors reported in detail
	udpLenSafe = maxLen        // UD payloads stay below the port MTU
)

// UCWindow is the number of UC WRITE_WITH_IMM targets per direction whose
// data the receiver checks; later ones go to a scratch area, since a slot
// may only be reused once no late packet can write it again, which UC
// cannot promise.
const UCWindow = 256

// Tags separate the pattern streams.
const (
	tagSend = iota + 1
	tagWrite
	tagUCWrite
	tagReadSrc
)

// soak is one run.
type soak struct {
	cfg  Config
	f    *sim.Fabric
	devs []*devState
	cqs  map[*sim.CQ]*cqState

	round atomic.Pointer[roundQPs]
	dog   context.Context // the current watchdog

	kick     chan struct{} // wakes the clock goroutine
	stopBusy atomic.Bool

	forcedMu sync.Mutex
	forced   map[uint64][]verbs.WCStatus

	errMu sync.Mutex
	errs  []error
	nerrs int
	dumps int

	st stats
}

type stats struct {
	sendWRs, recvWRs, completions, silent, vanished atomic.Uint64
	messages, writes, reads, atomics, udDups        atomic.Uint64
	events, emptyEvents, forced, fatal, destroyed   atomic.Uint64
	byStatus                                        [32]atomic.Uint64
	async                                           [32]atomic.Uint64
}

type devState struct {
	dev   *sim.Device
	ctx   *sim.Context
	pd    *sim.PD
	lid   uint16
	gid   verbs.GID // GID index 0, for a RoCE port, where an AH needs a GRH
	eth   bool
	chans []*sim.CompChannel
	cqs   []*cqState
}

// cqState is a CQ and its consumers' shared state. Consumers of one CQ
// take turns: mu is held across a poll and the bookkeeping of what it
// returned, so completions are handled in the CQ's order (CQ-17), which
// the ledger needs to tell a lost completion from a late one.
type cqState struct {
	name string
	cq   *sim.CQ
	mu   sync.Mutex
	wcs  [16]verbs.WC
	want [readSrcLen]byte // scratch for expected data, under mu

	eventsRead, eventsAcked atomic.Int64
}

type roundQPs struct {
	base int
	qps  []*qpState
}

// Run runs the soak described by cfg. It returns the report and every
// violation it found, joined; a nil error means every check passed. Every
// goroutine Run starts has ended when it returns.
func Run(cfg Config) (Report, error) {
	if cfg.Rounds == 0 {
		cfg.Rounds = DefaultRounds
	}
	if cfg.WRs == 0 {
		cfg.WRs = DefaultWRs
	}
	if cfg.Watchdog == 0 {
		cfg.Watchdog = DefaultWatchdog
	}
	if cfg.Faults == (sim.Faults{}) && !cfg.NoFaults {
		cfg.Faults = DefaultFaults
	}
	if cfg.NoFaults {
		cfg.Faults = sim.Faults{}
	}
	if cfg.WRs < 8 {
		return Report{}, fmt.Errorf("soak: %d WRs per QP: at least 8", cfg.WRs)
	}
	s := &soak{
		cfg:    cfg,
		cqs:    map[*sim.CQ]*cqState{},
		kick:   make(chan struct{}, 1),
		forced: map[uint64][]verbs.WCStatus{},
	}
	start := time.Now()
	rep, err := s.run()
	rep.Wall = time.Since(start)
	return rep, err
}

func (s *soak) run() (rep Report, _ error) {
	f, err := sim.NewFabric(sim.Config{
		Profile: s.cfg.Profile,
		Devices: []sim.DeviceConfig{{Name: "a"}, {Name: "b"}},
		Mode:    sim.Auto,
		Seed:    s.cfg.Seed,
		Faults:  s.cfg.Faults,
	})
	if err != nil {
		return rep, err
	}
	s.f = f
	rep.Seed, rep.Profile = s.cfg.Seed, f.Profile().Name
	if err := s.open(); err != nil {
		return rep, errors.Join(err, s.close())
	}

	// The long-lived goroutines: the clock, busy pollers, event loops and
	// async-event readers.
	consCtx, stopCons := context.WithCancel(context.Background())
	clockStop := make(chan struct{})
	var cons sync.WaitGroup
	cons.Go(func() { s.clock(clockStop) })
	a, b := s.devs[0], s.devs[1]
	cons.Go(func() { s.busyPoller([]*cqState{a.cqs[3], b.cqs[3], a.cqs[0], b.cqs[1]}) })
	cons.Go(func() { s.busyPoller([]*cqState{b.cqs[3], a.cqs[3], b.cqs[2], a.cqs[1]}) })
	for _, d := range s.devs {
		cons.Go(func() { s.eventLoop(consCtx, d.chans[0]) }) // two waiters on one channel (CHAN-11)
		cons.Go(func() { s.eventLoop(consCtx, d.chans[0]) })
		cons.Go(func() { s.eventLoop(consCtx, d.chans[1]) })
		cons.Go(func() { s.asyncLoop(consCtx, d) })
	}

	start := time.Now()
	for r := 0; ; r++ {
		if s.cfg.Duration > 0 {
			if r > 0 && time.Since(start) >= s.cfg.Duration {
				break
			}
		} else if r >= s.cfg.Rounds {
			break
		}
		n := s.runRound(r)
		rep.Rounds++
		rep.QPs += n
		if s.cfg.Logf != nil {
			s.cfg.Logf("round %d: %d send WRs, %d completions so far, %d errors", r, s.st.sendWRs.Load(), s.st.completions.Load(), s.errCount())
		}
		if s.errCount() > 0 {
			break
		}
	}

	// Stop the consumers, then account for what they left.
	dog, cancel := context.WithTimeout(context.Background(), s.cfg.Watchdog)
	s.dog = dog
	defer hardWatchdog(2*s.cfg.Watchdog, "the final teardown")()
	s.stopBusy.Store(true)
	stopCons()
	close(clockStop)
	cons.Wait()
	err = s.close()
	cancel()
	rep.SendWRs, rep.RecvWRs = s.st.sendWRs.Load(), s.st.recvWRs.Load()
	rep.Completions, rep.Silent, rep.Vanished = s.st.completions.Load(), s.st.silent.Load(), s.st.vanished.Load()
	rep.Messages, rep.Writes, rep.Reads, rep.Atomics = s.st.messages.Load(), s.st.writes.Load(), s.st.reads.Load(), s.st.atomics.Load()
	rep.UDDuplicates = s.st.udDups.Load()
	rep.Events, rep.EmptyEvents = s.st.events.Load(), s.st.emptyEvents.Load()
	rep.Forced, rep.Fatal, rep.Destroyed = s.st.forced.Load(), s.st.fatal.Load(), s.st.destroyed.Load()
	rep.ByStatus, rep.Async = map[string]uint64{}, map[string]uint64{}
	for i := range s.st.byStatus {
		if n := s.st.byStatus[i].Load(); n > 0 {
			rep.ByStatus[verbs.WCStatus(i).Name()] = n
		}
	}
	for i := range s.st.async {
		if n := s.st.async[i].Load(); n > 0 {
			rep.Async[verbs.EventType(i).Name()] = n
		}
	}
	rep.Engine = f.Stats()
	s.errMu.Lock()
	defer s.errMu.Unlock()
	if s.nerrs > len(s.errs) {
		s.errs = append(s.errs, fmt.Errorf("... and %d more violations", s.nerrs-len(s.errs)))
	}
	return rep, errors.Join(append(s.errs, err)...)
}

// open creates what lives for the whole run: per device a context, a PD,
// two channels and four CQs, two on the first channel, one on the second
// and one without (busy-polled only). Every CQ on a channel is armed
// before anything can complete (NOTIFY-14).
func (s *soak) open() error {
	for _, dev := range s.f.Devices() {
		d := &devState{dev: dev}
		s.devs = append(s.devs, d)
		var err error
		if d.ctx, err = dev.Open(); err != nil {
			return err
		}
		port, err := d.ctx.QueryPort(1)
		if err != nil {
			return err
		}
		d.lid = port.LID
		d.eth = port.LinkLayer == verbs.LinkLayerEthernet
		if d.gid, err = d.ctx.QueryGID(1, 0); err != nil {
			return err
		}
		if d.pd, err = d.ctx.AllocPD(); err != nil {
			return err
		}
		for range 2 {
			ch, err := d.ctx.CreateCompChannel()
			if err != nil {
				return err
			}
			d.chans = append(d.chans, ch)
		}
		for i := range cqsPerDev {
			var ch *sim.CompChannel
			switch i {
			case 0, 1:
				ch = d.chans[0]
			case 2:
				ch = d.chans[1]
			}
			c := &cqState{name: fmt.Sprintf("%s/cq%d", dev.Name(), i)}
			if c.cq, err = d.ctx.CreateCQ(cqe, c.name, ch, i%d.ctx.NumCompVectors()); err != nil {
				return err
			}
			if ch != nil {
				if err := c.cq.ReqNotify(false); err != nil {
					return err
				}
			}
			d.cqs = append(d.cqs, c)
			s.cqs[c.cq] = c
		}
	}
	return nil
}

// close destroys the long-lived objects in dependency order, after
// acknowledging every completion event still unread, and checks that
// every event read was acknowledged.
func (s *soak) close() error {
	var errs []error
	for _, d := range s.devs {
		for _, c := range d.cqs {
			s.drain(c)
		}
		for _, ch := range d.chans {
			for {
				got, _, err := ch.TryGetEvent()
				if err != nil {
					break // EAGAIN: none left
				}
				c := s.cqs[got]
				c.eventsRead.Add(1)
				s.st.events.Add(1)
				if err := got.AckEvents(1); err != nil {
					errs = append(errs, fmt.Errorf("ack %s: %w", c.name, err))
				} else {
					c.eventsAcked.Add(1)
				}
			}
		}
		for _, c := range d.cqs {
			if r, a := c.eventsRead.Load(), c.eventsAcked.Load(); r != a {
				errs = append(errs, fmt.Errorf("%s: %d completion events read, %d acknowledged", c.name, r, a))
			}
			if c.cq.Len() != 0 {
				errs = append(errs, fmt.Errorf("%s: %d completions left after the last drain", c.name, c.cq.Len()))
			}
		}
	}
	dog := s.dog
	if dog == nil {
		dog = context.Background()
	}
	for _, d := range s.devs {
		for _, c := range d.cqs {
			if err := c.cq.DestroyContext(dog); err != nil {
				errs = append(errs, fmt.Errorf("destroy %s: %w", c.name, err))
			}
		}
		for _, ch := range d.chans {
			if err := ch.Destroy(); err != nil {
				errs = append(errs, fmt.Errorf("destroy channel: %w", err))
			}
		}
		if d.pd != nil {
			if err := d.pd.Dealloc(); err != nil {
				errs = append(errs, fmt.Errorf("dealloc PD: %w", err))
			}
		}
		if d.ctx != nil {
			if err := d.ctx.Close(); err != nil {
				errs = append(errs, fmt.Errorf("close %s: %w", d.dev.Name(), err))
			}
		}
	}
	errs = append(errs, s.f.Close())
	return errors.Join(errs...)
}

// fail records a violation.
func (s *soak) fail(format string, args ...any) {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	s.nerrs++
	if len(s.errs) < maxFaults {
		s.errs = append(s.errs, fmt.Errorf(format, args...))
	}
}

// hang records that the watchdog fired, with every goroutine's stack.
func (s *soak) hang(what string) {
	s.errMu.Lock()
	first := s.dumps == 0
	s.dumps++
	s.errMu.Unlock()
	if !first {
		s.fail("watchdog (%v): %s", s.cfg.Watchdog, what)
		return
	}
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	s.fail("watchdog (%v): %s; goroutines:\n%s", s.cfg.Watchdog, what, buf)
}

func (s *soak) errCount() int {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	return s.nerrs
}

// contextWithWatchdog returns the context that bounds the waits of one
// round: it ends after d of wall time.
func contextWithWatchdog(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

// hardWatchdog crashes the test binary with every goroutine's stack if
// the returned stop is not called within d. The soft watchdog (the dog
// context every wait selects on) cannot see a goroutine that spins inside
// the engine holding the fabric's lock, since everything that could notice
// then blocks on that lock; this one can.
func hardWatchdog(d time.Duration, what string) (stop func() bool) {
	t := time.AfterFunc(d, func() {
		buf := make([]byte, 1<<22)
		buf = buf[:runtime.Stack(buf, true)]
		panic(fmt.Sprintf("soak: %s has not finished after %v (a livelock under the fabric's lock?); goroutines:\n%s", what, d, buf))
	})
	return t.Stop
}

// poke leaves a token in a one-slot channel without blocking.
func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// clock moves virtual time: whenever a timer or a delayed packet is
// pending it jumps to it (Fabric.AdvanceToNext), and when nothing is
// pending it waits until a poster kicks it after a post. Ready events never
// wait for it: in Auto mode every verb runs them before returning.
func (s *soak) clock(stop chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		if s.f.AdvanceToNext() {
			continue
		}
		select {
		case <-stop:
			return
		case <-s.kick:
		}
	}
}

// busyPoller polls its CQs in turn until told to stop, yielding the
// processor after a pass that found nothing.
func (s *soak) busyPoller(cqs []*cqState) {
	for !s.stopBusy.Load() {
		found := 0
		for _, c := range cqs {
			c.mu.Lock()
			found += s.pollLocked(c)
			c.mu.Unlock()
		}
		if found == 0 {
			runtime.Gosched()
		}
	}
}

// eventLoop is the consumer of NOTIFY-14 on one channel: wait for an
// event, acknowledge it, re-arm its CQ, and only then poll the CQ until it
// is empty. The CQs were armed before any traffic.
func (s *soak) eventLoop(ctx context.Context, ch *sim.CompChannel) {
	for {
		got, cqCtx, err := ch.GetEvent(ctx)
		if err != nil {
			if ctx.Err() == nil {
				s.fail("get_cq_event: %v", err)
			}
			return
		}
		c := s.cqs[got]
		if c == nil || cqCtx != c.name {
			s.fail("an event names an unknown CQ (context %v)", cqCtx)
			return
		}
		c.eventsRead.Add(1)
		s.st.events.Add(1)
		if err := got.AckEvents(1); err != nil {
			s.fail("%s: ack_cq_events: %v", c.name, err)
			return
		}
		c.eventsAcked.Add(1)
		if err := got.ReqNotify(false); err != nil {
			s.fail("%s: req_notify_cq: %v", c.name, err)
			return
		}
		if s.drain(c) == 0 {
			s.st.emptyEvents.Add(1) // NOTIFY-13: legal
		}
	}
}

// drain polls c until it is empty and returns how many completions it
// handled.
func (s *soak) drain(c *cqState) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	total := 0
	for {
		n := s.pollLocked(c)
		total += n
		if n == 0 {
			return total
		}
	}
}

// drainAll drains every CQ.
func (s *soak) drainAll() {
	for _, d := range s.devs {
		for _, c := range d.cqs {
			s.drain(c)
		}
	}
}

// asyncLoop reads and acknowledges the async events of one context.
func (s *soak) asyncLoop(ctx context.Context, d *devState) {
	for {
		ev, err := d.ctx.GetAsyncEvent(ctx)
		if err != nil {
			if ctx.Err() == nil {
				s.fail("%s: get_async_event: %v", d.dev.Name(), err)
			}
			return
		}
		if int(ev.Type()) < len(s.st.async) {
			s.st.async[ev.Type()].Add(1)
		}
		switch ev.Type() {
		case verbs.EventQPFatal, verbs.EventCommEst, verbs.EventQPReqErr, verbs.EventQPAccessErr:
		default:
			// A CQ_ERR would mean an overrun, which the CQ sizes rule out
			// (CQ-25); nothing else is expected either.
			s.fail("%s: unexpected async event %v", d.dev.Name(), ev)
		}
		if err := ev.Ack(); err != nil {
			s.fail("%s: ack_async_event %v: %v", d.dev.Name(), ev, err)
		}
	}
}

// pollLocked polls c once and handles what it returns. c.mu is held.
func (s *soak) pollLocked(c *cqState) int {
	n, err := c.cq.Poll(c.wcs[:])
	for i := range n {
		s.handle(c, &c.wcs[i])
	}
	if err != nil {
		s.fail("%s: poll_cq: %v", c.name, err)
	}
	return n
}
