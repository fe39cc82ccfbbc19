// Package simhook is the bridge between package sim and the packages of
// this module that drive a fabric from outside (package explore): sim fills
// in the variables in an init function, so that those packages reach the
// fabric's domain without sim exporting its engine.
package simhook

import (
	"strconv"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/verbs"
)

// DomainOf returns the domain of a *sim.Fabric (nil for anything else). Set
// by package sim.
var DomainOf func(fabric any) *domain.Domain

// HandleOf maps an object the domain names (the Obj of a Waiter, an object
// passed to Observer.Created) to its public handle: a *sim.CQ, a
// *sim.CompChannel, a *sim.QP, a *sim.SRQ, a *sim.Context; the object
// itself when it has no other handle. Set by package sim.
var HandleOf func(obj any) any

// FaultKind is what a packet-fault draw decides for one packet.
type FaultKind uint8

// The outcomes of a packet-fault draw.
const (
	FaultDeliver   FaultKind = iota // no fault: the packet arrives now
	FaultDrop                       // the packet is lost
	FaultDuplicate                  // the packet arrives twice
	FaultDelay                      // the packet arrives Delay ticks late
)

var faultKindNames = [...]string{"deliver", "drop", "duplicate", "delay"}

// String names the outcome ("deliver", "drop", "duplicate", "delay").
func (k FaultKind) String() string {
	if int(k) < len(faultKindNames) {
		return faultKindNames[k]
	}
	return "FaultKind(?)"
}

// FaultOutcome is one possible outcome of a draw.
type FaultOutcome struct {
	Kind  FaultKind
	Delay uint64  // ticks, for FaultDelay
	P     float64 // its probability under the fabric's configured faults
}

// String renders the outcome ("drop", "delay 1 tick").
func (o FaultOutcome) String() string {
	if o.Kind == FaultDelay {
		if o.Delay == 1 {
			return "delay 1 tick"
		}
		return "delay " + strconv.FormatUint(o.Delay, 10) + " ticks"
	}
	return o.Kind.String()
}

// FaultDraw is one packet-fault draw of a fabric whose faults (Config.Faults,
// Fabric.SetFaults) have a non-zero probability: the packet and the outcomes
// its configured faults make possible, the one with no fault (FaultDeliver)
// first when it is possible.
type FaultDraw struct {
	Packet   string // the packet and its destination, as the trace names them
	Outcomes []FaultOutcome
}

// SetFaultChooser makes choose decide the packet-fault draws of a *sim.Fabric
// (nil: the fabric's seeded source decides again, as without an explorer).
// choose is called with the domain lock held, once per packet put on the
// wire between two ports of the fabric while a fault probability is
// non-zero, and returns the index of the outcome in d.Outcomes; it must not
// call verbs. Set by package sim.
var SetFaultChooser func(fabric any, choose func(d *FaultDraw) int)

// SetAnyOrder, with on, lets a *sim.Fabric's Random schedule and Chooser
// run any ready event next, a packet before an earlier one of its path
// included: the engine as it was before XFER-32 (packets of one path
// arrive in the order they were sent). It is the mutant that the
// regression tests of XFER-32 must catch; nothing else sets it. Set by
// package sim.
var SetAnyOrder func(fabric any, on bool)

// FrontKind says what a front end tells a fabric's sanitizer (CheckFront).
type FrontKind uint8

// What a front end (the drop-in library, whose pumps read the engine's
// channels and async queues for the C program) reports of its program.
const (
	// FrontReader: Obj, a *sim.CompChannel or a *sim.Context (its async
	// queue), is read by the front end, which moves its events to the
	// program: the engine's reads are the front end's, not the program's.
	FrontReader FrontKind = iota + 1
	// FrontWait: the program starts a blocking read of Obj and nothing is
	// queued for it; Verb names the call.
	FrontWait
	// FrontWaitEnd: that read ended.
	FrontWaitEnd
	// FrontRead: the program read an event about About (a CQ, QP or SRQ;
	// nil for a port event) from Obj.
	FrontRead
	// FrontDiscard: the front end acknowledges N events of About that the
	// program never read (dropped as About is destroyed).
	FrontDiscard
)

// FrontEvent is one thing a front end tells a fabric's sanitizer.
type FrontEvent struct {
	Kind      FrontKind
	Obj       any
	About     any
	N         int
	Verb      string
	AboutKind string // "" for a completion event; "async" for an async one
}

// CheckFront tells the sanitizer of a *sim.Fabric (sim.Config.Check) what
// the program behind a front end did; without a sanitizer it does nothing.
// It takes the fabric's lock: the caller holds none of the fabric's. Set
// by package sim.
var CheckFront func(fabric any, ev FrontEvent)

// Extern is memory outside this process that an MR of the per-host daemon
// (internal/nicd) covers: a program's registered pages, which the daemon
// reads and writes with process_vm_readv and process_vm_writev. Neither
// method fails: bytes the program no longer maps read as zeros and take no
// writes. Both are called with the fabric's domain lock held and must not
// call verbs.
type Extern interface {
	ReadLocked(dst []byte, addr uint64)
	WriteLocked(src []byte, addr uint64)
}

// RegExternalMR registers the n bytes at address addr of mem in the
// protection domain pd (a *sim.PD), addressed by work requests from iova,
// as ibv_reg_mr_iova does for a program's buffer, and returns the *sim.MR.
// Its errors are PD.RegMRIOVA's. Set by package sim.
var RegExternalMR func(pd any, mem Extern, addr, n, iova uint64, access verbs.AccessFlags) (any, error)

// ReregExternalMR is MR.ReregIOVA (mr a *sim.MR, pd a *sim.PD or nil) whose
// new translation, with verbs.ReregChangeTranslation, is the n bytes at
// address addr of mem, addressed from hcaVA. Set by package sim.
var ReregExternalMR func(mr any, flags verbs.ReregFlags, pd any, mem Extern, addr, n, hcaVA uint64, access verbs.AccessFlags) error

// CQShadow mirrors the completions of a CQ (a *sim.CQ) whose consumer polls
// them outside the engine: the per-host daemon's CQs, which a C program
// polls from a ring it shares with the daemon. Its methods are those of
// the engine's cq.Shadow, whose doc says what each is told; they are
// called with the fabric's domain lock held and must not call verbs.
type CQShadow interface {
	PushedLocked(w *verbs.WC, ns uint64)
	TakenLocked() (popped, seen int)
	ResetLocked(entries func(yield func(w *verbs.WC, ns uint64) bool))
	OverrunLocked()
	BatchLocked() bool
}

// SetCQShadow makes s the shadow of cq (a *sim.CQ; nil s: none), mirroring
// what it holds at once. EINVAL for a nil or destroyed CQ. Set by package
// sim.
var SetCQShadow func(cq any, s CQShadow) error

// SyncCQ brings cq (a *sim.CQ) up to date with its shadow's consumer (what
// it polled is gone; the slots its poll iterator reached are free), as
// anything that looks at what is left in the CQ does first. Set by package
// sim.
var SyncCQ func(cq any)
