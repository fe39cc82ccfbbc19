package simtest

import (
	"testing"
	"testing/synctest"

	"github.com/verbsim/verbsim/sim"
)

// InBubble runs body inside a testing/synctest bubble with a Background
// fabric made in it from o (o.Mode is set to sim.Background): the recipe
// for exact virtual timings with goroutines that block in GetEvent and
// timers that fire on their own. Inside the bubble one tick is one
// nanosecond of the bubble's fake clock (unless o.TickDuration says
// otherwise), so time.Now and time.Since read the fabric's virtual time,
// and time.Sleep costs no wall time. The fabric is closed by the bubble
// test's cleanup, before the bubble ends; synctest itself then checks that
// no goroutine of the bubble is left.
//
// Make pairs on the fabric with its RC, UC and UD methods, and use the
// bubble's t (body's argument), not the outer test's.
func InBubble(t *testing.T, o Options, body func(t *testing.T, f *Fabric)) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		o.Mode = sim.Background
		body(t, New(t, o))
	})
}
