package sim

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/sim/internal/qp"
	"github.com/verbsim/verbsim/sim/trace"
)

// Naming objects in the trace. A QP is named by its device and qp_num
// ("dev0/qp 0x11"); every other object by its device, its kind and its rank
// among the objects of that kind created on the device ("dev0/cq#2"). Names
// never involve addresses, so the same calls give the same trace. Every
// object carries its own name from its creation on (the engine packages'
// TraceName, sim's own objects' traceName), and every record reaches the
// trace through the fabric's domain (domain.Domain), whose sink is the
// fabric's trace log.

// installLocked connects the engine to the fabric's domain: the trace sink
// (when the fabric traces) and the hooks a verb's Leave and a blocking
// Wait call. waitBound is Config.WaitBound.
func (e *engine) installLocked(waitBound uint64) {
	d := e.f.d
	if e.log != nil {
		d.SetSinkLocked(e.emit)
	}
	d.SetHooksLocked(domain.Hooks{
		Settle:  e.settleLocked,
		Advance: e.advanceNextLocked,
		Pending: e.describePendingLocked,
		Now:     e.clock,
		// Push kicks, and settleLocked leaves nothing ready, so a Leave
		// need settle only after a kick; except on a fabric with a Remote,
		// whose clock must catch up with the wall clock at every verb
		// (catchUpLocked).
		OnKick:    e.remote == nil,
		WaitBound: waitBound,
		Deadline:  e.waitDeadlineLocked,
	}, e.mode == Auto)
}

// traceNamed is implemented by sim's own objects (PD, MR, MW, AH, XRCD,
// Context), which keep their trace name unexported.
type traceNamed interface {
	traceName() string
	setTraceName(string)
}

// peekName returns the name the next object of kind created on d will get.
func (e *engine) peekName(d *Device, kind string) string {
	if d.seq == nil {
		d.seq = map[string]int{}
	}
	return fmt.Sprintf("%s/%s#%d", d.name, kind, d.seq[kind]+1)
}

// nameLocked gives obj, just created on d, its trace name and returns it.
func (e *engine) nameLocked(d *Device, kind string, obj any) string {
	name := e.peekName(d, kind)
	d.seq[kind]++
	if n, ok := obj.(traceNamed); ok {
		n.setTraceName(name)
	}
	e.f.d.Created(obj)
	return name
}

// nameOf returns the trace name of obj.
func (e *engine) nameOf(obj any) string {
	switch o := obj.(type) {
	case domain.Object:
		return o.TraceName()
	case traceNamed:
		return o.traceName()
	}
	return fmt.Sprintf("%T", obj)
}

// qpName is the trace name of QP number num on d.
func qpName(d *Device, num uint32) string { return fmt.Sprintf("%s/qp %#x", d.name, num) }

// callLocked records a call of verb on object, with detail and the peer it
// names; a failed call (err != nil) carries the error's errno and text.
func (e *engine) callLocked(object, verb, peer, detail string, err error) {
	if e.log == nil {
		return
	}
	r := trace.Record{Kind: trace.KindVerb, Object: object, Name: verb, Peer: peer, Detail: detail}
	domain.Failed(&r, err)
	e.emit(r)
}

// waitDeadlineLocked is the domain's Deadline hook: a wait bounded by
// Config.WaitBound began to block at a tick whose bound ends at at. Only
// Background mode's goroutine moves the clock while such a wait blocks; it
// is woken to look again by then (runBackground).
func (e *engine) waitDeadlineLocked(at uint64) {
	if e.bg != nil {
		e.bg.kickLocked(at)
	}
}

// advanceNextLocked is AdvanceToNext under the lock: the hook through which
// an Auto-mode wait lets virtual time pass.
func (e *engine) advanceNextLocked() bool {
	if e.pending() > 0 {
		e.stabilizeLocked()
	}
	at, ok := e.nextDue()
	if !ok || at > MaxTick {
		return false
	}
	e.advanceLocked(max(at, e.now))
	return true
}

// describePendingLocked names the engine's future events for the error of
// a wait that gave up: the first few timers and delayed packets, by due
// tick; "" when nothing is pending.
func (e *engine) describePendingLocked() string {
	var parts []string
	if n := e.pending(); n > 0 {
		parts = append(parts, fmt.Sprintf("%d event(s) ready now", n))
	}
	timers := slices.Clone(e.timers.items)
	slices.SortFunc(timers, func(a, b *qp.Timer) int { return cmp.Or(cmp.Compare(a.At, b.At), cmp.Compare(a.Seq, b.Seq)) })
	for _, t := range timers {
		if len(parts) >= 4 {
			break
		}
		kind := "retry timer"
		if t.Kind == qp.TimerRNR {
			kind = "RNR timer"
		}
		parts = append(parts, fmt.Sprintf("the %s of %s due at t=%d", kind, t.QP.TraceName(), t.At))
	}
	if n := e.later.len(); n > 0 {
		parts = append(parts, fmt.Sprintf("%d delayed packet(s), the next due at t=%d", n, e.later.top().at))
	}
	if len(parts) == 0 {
		return ""
	}
	s := strings.Join(parts, "; ")
	if e.mode == Manual { // nothing else will move the clock for the waiter
		s += " (in Manual mode the clock moves only through Tick, AdvanceToNext or RunUntilIdle)"
	}
	return s
}
