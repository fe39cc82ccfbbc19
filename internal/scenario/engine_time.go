package scenario

// engine_time.go holds the commands that make the fabric and move its time:
// fabric, step, stabilize, tick, run and advance.

import (
	"fmt"
	"strings"
)

func (in *interp) doFabric(st *Step, a *args) error {
	if in.f != nil {
		return &scriptError{fmt.Sprintf("%s:%d: fabric must be the first command, and comes once", in.file, st.Line)}
	}
	devs := a.list("devices")
	if len(devs) == 0 {
		devs = []string{"a", "b"}
	}
	manual := a.str("mode", "auto") == "manual"
	in.config = fabricConfig(a)
	if err := in.setReadings(a); err != nil {
		in.verbResult("create the fabric", err)
		return nil
	}
	if err := in.newFabric(devs, manual, a.num("seed", 0), in.limits(a)); err != nil {
		in.verbResult("create the fabric", err)
		return nil
	}
	mode := "auto: after each verb the engine runs until nothing is ready; timers wait for tick, run or advance"
	if manual {
		mode = "manual: nothing moves until step, stabilize, tick, run or advance"
	}
	in.say("devices %s; mode %s", strings.Join(devs, ", "), mode)
	if len(a.list("readings")) > 0 {
		in.say("readings: %v, whatever the profile says", in.profile.Readings)
	}
	return nil
}

// doStep runs step: one ready engine event.
func (in *interp) doStep(_ *Step, a *args) error {
	in.say("step: ran an event: %v", in.f.Step())
	return nil
}

// doStabilize runs stabilize: every event ready now.
func (in *interp) doStabilize(_ *Step, a *args) error {
	in.say("stabilize: %d event(s) ran", in.f.Stabilize())
	return nil
}

// doTick runs tick: the clock moves on.
func (in *interp) doTick(_ *Step, a *args) error {
	n := a.num("ns", 0) + a.num("us", 0)*1000 + a.num("ms", 0)*1000000
	in.f.Tick(n)
	in.say("the clock moved %s", fmtDur(n))
	return nil
}

// doRun runs run: the engine until idle, within a bound of virtual time.
func (in *interp) doRun(_ *Step, a *args) error {
	limit := a.num("ms", 10000) * 1000000
	if keyGiven(a, "ns") {
		limit = a.num("ns", 0)
	}
	start := in.f.Now()
	idle := in.f.RunUntilIdle(limit) // limit is counted from now (sim.Fabric.RunUntilIdle)
	if idle {
		in.say("ran until idle: %s of virtual time passed", fmtDur(in.f.Now()-start))
	} else {
		in.say("stopped after %s: events still pending", fmtDur(in.f.Now()-start))
	}
	return nil
}

// doAdvance runs advance: the clock to the next timer or delayed packet.
func (in *interp) doAdvance(_ *Step, a *args) error {
	start := in.f.Now()
	if in.f.AdvanceToNext() {
		in.say("advanced %s to the next timer or delayed packet", fmtDur(in.f.Now()-start))
	} else {
		in.say("nothing pending: the clock stays")
	}
	return nil
}
