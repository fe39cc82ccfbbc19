// Package checker is the engine of verbsim's verbs sanitizer (package
// sim/check): it follows what a program does through a fabric's domain
// (every verb, every wait, the engine's notes) and reports misuse as it
// happens, each finding naming the catalogue rule it breaks.
//
// A Checker runs wherever the engine runs: inside a Go program's fabric,
// inside the drop-in library's process, or inside the NIC daemon. What it
// needs of the fabric it asks through Env; a front end that moves events
// to a program in another language (the drop-in library's event pumps)
// tells it of the program's own waits and reads (Front), so that the
// findings follow the program, not the pump.
//
// Every method is safe for concurrent use. The domain hooks are called as
// the domain documents (Entering without its lock, the others with it);
// the Checker keeps its own lock for its state, taken inside the domain's.
package checker

import (
	"sync"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/sim/check"
	"github.com/verbsim/verbsim/sim/internal/qp"
)

// Env is what a Checker needs of the fabric it checks. Package sim
// implements it. Every method is called with the domain lock held.
type Env interface {
	// Engine returns the engine object behind a handle the domain names
	// (a *sim.QP's *qp.QP), or obj itself.
	Engine(obj any) any
	// Kind names what obj is: "cq", "chan", "qp", "srq", "mr", "mw", "pd",
	// "ah", "ctx", "xrcd", "dm", "async"; "" for anything else.
	Kind(obj any) string
	// Name returns obj's name in the trace.
	Name(obj any) string
	// Cookie returns the program's cookie of obj (cq_context, qp_context,
	// srq_context), nil when it has none.
	Cookie(obj any) any
	// Context returns the device context obj was made through (a context
	// is its own; an async queue's is the context it serves).
	Context(obj any) any
	// Device returns the device obj belongs to.
	Device(obj any) any
	// Memory returns the registered memory a QP or SRQ reads and writes:
	// the n bytes at addr, or false when they are not registered.
	Memory(obj any) func(addr uint64, n uint32) ([]byte, bool)
	// Peer returns the device a connected QP sends to, nil when it is not
	// connected or the peer is on no device of the fabric.
	Peer(q *qp.QP) any
	// Now returns the virtual time.
	Now() uint64
}

// Checker is a fabric's sanitizer: the state it follows and the findings
// it has reported.
type Checker struct {
	mu  sync.Mutex
	cfg check.Config
	on  check.Set
	env Env
	d   *domain.Domain

	objs map[any]*record // every object created, by engine object; destroyed ones stay
	live int             // records not destroyed, for the order below
	// order is the creation order of the records, for reports in a stable
	// order.
	order []*record
	// stale are the keys ibv_rereg_mr replaced (MR-15). Keys it kept, under
	// a reading that keeps them, look the same to the checker whether the
	// program read them again or not, so they are not followed.
	stale map[deviceKey]*rereg
	// pending are findings made where the domain lock is not held
	// (Entering), reported at the next hook that holds it.
	pending []pendingFinding
	rep     reporter
}

// deviceKey is an lkey or rkey of one device.
type deviceKey struct {
	dev any
	key uint32
}

// rereg is a re-registration whose keys a later request names.
type rereg struct {
	mr *record
	at site
}

// record is what the checker keeps of one object.
type record struct {
	obj     any
	kind    string
	created site
	gone    *site
	// front says that a front end reads this channel or async queue (the
	// drop-in library's pump): the engine's reads are not the program's,
	// which the front end reports itself (Front).
	front bool
	// reads are the events the program read about this object and has not
	// acknowledged, oldest first: completion events of a CQ, async events
	// of a CQ, QP or SRQ (asyncReads). credit counts the acknowledgements
	// a front end makes of events the program never saw.
	reads, asyncReads   []site
	credit, asyncCredit int
	// inflight counts the ibv_poll_cq calls on a CQ between Entering and
	// their NotePolled; frontWaits the program's blocking reads of a channel that a
	// front end reports.
	inflight, frontWaits int
	// unsignaled counts the unsignaled send requests posted on a QP since
	// its last signaled one (QP-30).
	unsignaled int
	sized      bool // a CQ-25 finding was made for this CQ
	// sends are a QP's posted send requests whose source buffers are
	// watched, by sequence; recvs a QP's or SRQ's posted receives; arrived
	// the messages a QP received whose completions are not yet polled.
	sends   map[uint64]*buffer
	recvs   map[uint64]*buffer
	arrived []*buffer
}

// New returns a checker of the fabric whose domain is d, configured by
// cfg. Attach it with d.SetCheckerLocked.
func New(cfg check.Config, d *domain.Domain, env Env) *Checker {
	on := cfg.Checks
	if on == 0 {
		on = check.All
	}
	c := &Checker{cfg: cfg, on: on, env: env, d: d, objs: map[any]*record{},
		stale: map[deviceKey]*rereg{}}
	c.rep.init(cfg, on)
	return c
}

// recordLocked returns the record of obj (a handle or an engine object),
// nil when it was not created in the domain while the checker watched.
func (c *Checker) recordLocked(obj any) *record {
	if obj == nil {
		return nil
	}
	if r := c.objs[obj]; r != nil {
		return r
	}
	return c.objs[c.env.Engine(obj)]
}

// Entering implements domain.Checker: a verb on an object that was
// destroyed (USE-01); an ibv_poll_cq while another is in flight on the same
// CQ (USE-02).
func (c *Checker) Entering(op domain.Op) {
	if op.Obj == nil || op.Verb == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.objs[op.Obj]
	if r == nil {
		return
	}
	if r.gone != nil && isVerb(op.Verb) && c.on.Has(check.Destroyed) {
		c.pending = append(c.pending, pendingFinding{kind: pendingUse, r: r, verb: op.Verb, at: c.here()})
	}
	if op.Verb == verbPoll {
		r.inflight++
		if r.inflight > 1 && c.on.Has(check.Thread) {
			c.pending = append(c.pending, pendingFinding{kind: pendingPoll, r: r, verb: op.Verb, at: c.here()})
		}
	}
}

// Leaving implements domain.Checker: it reports the findings Entering
// made. Only a verb of the program's reports them, not a view of the
// simulator's ("cq read"), so that a finding is made at the same step
// whoever else looks at the fabric (an explorer's timeline).
func (c *Checker) Leaving(op domain.Op, err error) {
	if !isVerb(op.Verb) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.flushLocked()
}

// Waiting implements domain.Checker: a blocking read that can never end
// (CHAN-13, ASYNC-18), one that a lost wake-up holds up (NOTIFY-15), two
// readers of a channel of one CQ (CHAN-11).
func (c *Checker) Waiting(w *domain.Waiter) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.flushLocked()
	r := c.recordLocked(w.Obj)
	if r == nil || r.front {
		return
	}
	at := c.here()
	switch r.kind {
	case "chan":
		readers := 0
		for _, o := range c.d.Waiters() {
			if o.Obj == w.Obj {
				readers++
			}
		}
		c.channelWaitLocked(r, w.Verb, at, readers, c.d.BoundOf(w))
	case "async":
		c.asyncWaitLocked(r, w.Verb, at, c.d.BoundOf(w))
	}
}

// Note implements domain.Checker.
func (c *Checker) Note(n *domain.Note) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.flushLocked()
	switch n.Kind {
	case domain.NoteCreated:
		c.createdLocked(n.Obj)
	case domain.NoteDestroying:
		if r := c.recordLocked(n.Obj); r != nil {
			c.destroyingLocked(r)
			if r.kind == "cq" {
				c.orphanedWaitLocked(r)
			}
		}
	case domain.NoteDestroyed:
		if r := c.recordLocked(n.Obj); r != nil {
			c.destroyedLocked(r)
		}
	case domain.NoteEventRead:
		if r := c.recordLocked(n.Obj); r != nil && !r.front {
			c.readLocked(r, n.With, c.here())
		}
	case domain.NoteAcked:
		c.ackedLocked(n)
	case domain.NotePolled:
		if r := c.recordLocked(n.Obj); r != nil && r.inflight > 0 {
			r.inflight-- // the poll Entering counted is done
		}
		c.polledLocked(n)
	case domain.NotePosted:
		c.postedLocked(n)
	case domain.NoteSent, domain.NoteDone:
		c.sendProgressLocked(n)
	case domain.NotePlacing:
		c.placingLocked(n)
	case domain.NoteReceived:
		c.receivedLocked(n)
	case domain.NoteModified:
		c.modifiedLocked(n)
	case domain.NoteResized:
		if r := c.recordLocked(n.Obj); r != nil && c.on.Has(check.CQSize) {
			c.sizeCQLocked(r, "ibv_resize_cq")
		}
	case domain.NoteDeregistering:
		c.deregisteringLocked(n)
	case domain.NoteRereg:
		c.reregLocked(n)
	}
}

// createdLocked starts the record of obj.
func (c *Checker) createdLocked(obj any) {
	obj = c.env.Engine(obj)
	if c.objs[obj] != nil {
		return
	}
	r := &record{obj: obj, kind: c.env.Kind(obj), created: c.here()}
	r.created.tick = c.env.Now()
	c.objs[obj] = r
	c.order = append(c.order, r)
	c.live++
}

// destroyedLocked ends the record of r: what a verb on it now reports.
func (c *Checker) destroyedLocked(r *record) {
	if r.gone != nil {
		return
	}
	at := c.hereLocked()
	r.gone = &at
	r.sends, r.recvs, r.arrived = nil, nil, nil
	c.live--
	if c.live*2 < len(c.order) && len(c.order) > 64 {
		c.compactLocked()
	}
}

// compactLocked forgets the records of objects destroyed long enough ago
// that a program which keeps creating and destroying objects does not
// grow the checker without bound; a verb on one of those still finds the
// engine's EINVAL, only without the finding.
func (c *Checker) compactLocked() {
	keep := c.order[:0]
	for _, r := range c.order {
		if r.gone == nil {
			keep = append(keep, r)
			continue
		}
		if r.gone.tick+compactAfter < c.env.Now() || len(c.order)-len(keep) > maxGone {
			delete(c.objs, r.obj)
			continue
		}
		keep = append(keep, r)
	}
	for i := len(keep); i < len(c.order); i++ {
		c.order[i] = nil
	}
	c.order = keep
}

// compactAfter is how long, in ticks, the record of a destroyed object is
// kept for the verbs that still name it (1 s of virtual time); maxGone how
// many such records are kept at most.
const (
	compactAfter = 1_000_000_000
	maxGone      = 4096
)

// verbPoll is the verb whose calls on one CQ from two threads at once
// USE-02 is about.
const verbPoll = "ibv_poll_cq"

// isVerb reports whether an op names a verb of the program (not a view
// or a control of the simulator, which have a space in their names: "cq
// read", "cq push").
func isVerb(v string) bool {
	for i := 0; i < len(v); i++ {
		if v[i] == ' ' {
			return false
		}
	}
	return v != ""
}

// Summary returns the counts of the findings so far.
func (c *Checker) Summary() check.Summary {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rep.summary()
}

// Close ends the run: with the leak check on, it reports what is still
// alive and the events never acknowledged (USE-03, CQ-13, ASYNC-05); then,
// when anything was found, it writes the summary. The caller holds the
// domain lock.
func (c *Checker) Close(verb string) check.Summary {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.flushLocked()
	if c.on.Has(check.Leak) {
		c.leaksLocked(verb, nil)
	}
	s := c.rep.summary()
	if s.Findings > 0 {
		c.rep.writeSummary(s)
	}
	return s
}

// ClosingContext reports the objects of the device context ctx still
// alive as it closes (USE-03), with the leak check on. The caller holds the
// domain lock.
func (c *Checker) ClosingContext(ctx any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.flushLocked()
	if c.on.Has(check.Leak) {
		c.leaksLocked("ibv_close_device", ctx)
	}
}
