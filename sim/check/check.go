package check

import (
	"fmt"
	"math/bits"
	"strings"
)

// Check names one check of the sanitizer: a family of misuse patterns,
// each reported with the rule of spec/catalogue.md it breaks. The zero
// value names no check.
type Check uint8

// The checks. docs/check.md describes each, with an example report.
const (
	// Wait: a blocking wait that can never end, reported as it starts:
	// ibv_get_cq_event on a channel no CQ uses or whose CQs are all
	// unarmed (CHAN-13), ibv_get_async_event on a context that has nothing
	// to raise an event (ASYNC-18).
	Wait Check = iota + 1
	// LostWakeup: a blocking ibv_get_cq_event while an armed CQ of the
	// channel holds completions that arrived before the arm, which no
	// event will announce (NOTIFY-02, NOTIFY-15).
	LostWakeup
	// Ack: a destroy that will wait for acknowledgements of events already
	// read (CQ-13, ASYNC-05), an acknowledgement of more events than were
	// read (CHAN-08), one on a CQ other than the one the event named
	// (CHAN-07).
	Ack
	// CQSize: a CQ smaller than the work requests of the queues that
	// complete into it, which a flush or a burst will overrun (CQ-25).
	CQSize
	// Signal: a send queue of unsignaled work requests with no signaled
	// one in a whole queue depth, whose slots never come back (QP-30).
	Signal
	// Buffer: a buffer the program changed between its post and its
	// completion (QP-36); a memory region deregistered, or a window
	// deallocated, while outstanding work requests name it (MR-07, MW-03).
	Buffer
	// Thread: one CQ polled by two threads at once (USE-02); one channel
	// of a single CQ read by two threads at once (CHAN-11).
	Thread
	// Destroyed: a verb on an object that was destroyed (USE-01).
	Destroyed
	// Portability: a run that relies on what only some providers do: a key
	// kept across ibv_rereg_mr (MR-15), a key that a re-registration
	// replaced (MR-15).
	Portability
	// Leak: objects still alive and events never acknowledged when the
	// program exits or closes the fabric, each with where it was created
	// or read (USE-03, CQ-13, ASYNC-05).
	Leak

	numChecks = iota + 1 // one past the last check
)

var checkNames = [...]string{"", "wait", "lost-wakeup", "ack", "cq-size", "signal", "buffer",
	"thread", "destroyed", "portability", "leak"}

// String returns the check's name as VERBSIM_CHECK spells it ("wait",
// "lost-wakeup").
func (c Check) String() string {
	if c > 0 && int(c) < len(checkNames) {
		return checkNames[c]
	}
	return fmt.Sprintf("check(%d)", uint8(c))
}

// Checks returns every check, in order.
func Checks() []Check {
	out := make([]Check, 0, numChecks-1)
	for c := Check(1); c < numChecks; c++ {
		out = append(out, c)
	}
	return out
}

// ParseCheck returns the check named name (as String spells it).
func ParseCheck(name string) (Check, bool) {
	for c := Check(1); c < numChecks; c++ {
		if checkNames[c] == name {
			return c, true
		}
	}
	return 0, false
}

// Set is a set of checks. The zero Set is empty; All has every check.
type Set uint32

// All is the set of every check.
const All = Set(1<<numChecks - 2)

// Of returns the set of the checks given.
func Of(cs ...Check) Set {
	var s Set
	for _, c := range cs {
		if c > 0 && c < numChecks {
			s |= 1 << c
		}
	}
	return s
}

// Has reports whether c is in s.
func (s Set) Has(c Check) bool { return c < 32 && s&(1<<c) != 0 }

// Without returns s without the checks given.
func (s Set) Without(cs ...Check) Set { return s &^ Of(cs...) }

// Len returns the number of checks in s.
func (s Set) Len() int { return bits.OnesCount32(uint32(s & All)) }

// String lists the checks of s by name, "all" for All, "none" for the
// empty set: the form VERBSIM_CHECK takes.
func (s Set) String() string {
	switch s & All {
	case All:
		return "all"
	case 0:
		return "none"
	}
	var names []string
	for c := Check(1); c < numChecks; c++ {
		if s.Has(c) {
			names = append(names, c.String())
		}
	}
	return strings.Join(names, ",")
}

// MarshalText renders the set as String does, for the JSON log.
func (s Set) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a set as Parse reads VERBSIM_CHECK ("all", "none",
// a list of names).
func (s *Set) UnmarshalText(b []byte) error {
	v, _, _, err := Parse(string(b))
	*s = v
	return err
}
