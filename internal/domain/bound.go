package domain

import "errors"

// ErrWaitBound is the error a wait gives up with when virtual time has
// passed its bound (Hooks.WaitBound) before it was satisfied. A wait that
// lets time pass on its own (Auto mode) against a peer that retries for
// ever (rnr_retry = 7 with no receive ever posted) would otherwise run until
// its context ends, and a test's context ends only after the test.
var ErrWaitBound = errors.New("virtual time passed the wait's bound (sim.Config.WaitBound)")

// pastBound reports whether w has waited more than the bound in virtual
// time. A Timeless wait has no bound: time cannot satisfy it, so time
// passing says nothing about it.
func (d *Domain) pastBound(w *Waiter) bool {
	b := d.hooks.WaitBound
	return b != 0 && !w.Timeless && d.Now()-w.Since > b
}

// ExpireWaitsLocked wakes every wait past its bound, so that it gives up
// with ErrWaitBound, and returns the first tick past the bound of the
// earliest of the others (ok false when there is none). The driver of a
// Background fabric calls it each time it moves the clock, and wakes again
// by that tick: such waits only block, and nothing else would wake them
// while time passes.
//
// Precondition: the lock is held.
func (d *Domain) ExpireWaitsLocked() (next uint64, ok bool) {
	b := d.hooks.WaitBound
	if b == 0 {
		return 0, false
	}
	for _, w := range d.waiters {
		switch {
		case w.Timeless:
		case d.pastBound(w):
			d.signal(w)
		case !ok || w.Since+b+1 < next:
			next, ok = w.Since+b+1, true
		}
	}
	return next, ok
}
