package explore

import (
	"context"
	"testing"
	"time"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// canonical is the canonical 2-goroutine world of the benchmark: a
// producer adds 3 completions, a consumer runs the documented recipe
// (explore/patterns.Recipe(3), restated here without the import cycle).
func canonical(w *World) {
	f, _ := w.NewFabric(sim.Config{Devices: []sim.DeviceConfig{{Name: "a"}}})
	ctx, _ := f.Devices()[0].Open()
	recipePair(w, ctx, 3)
}

// recipePair starts, on a CQ of its own with its own channel, a producer
// that adds n completions and a consumer that runs the documented recipe
// (get, ack, re-arm, poll until empty) until it has them all.
func recipePair(w *World, ctx *sim.Context, n int) {
	ch, _ := ctx.CreateCompChannel()
	q, _ := ctx.CreateCQ(16, nil, ch, 0)
	q.ReqNotify(false)
	w.Go("producer", func(context.Context) {
		for i := range n {
			q.Push(verbs.WC{WRID: uint64(i), Status: verbs.WCSuccess, Opcode: verbs.WCRecv}, false)
		}
	})
	w.Go("consumer", func(c context.Context) {
		wcs := make([]verbs.WC, 4)
		for got := 0; got < n; {
			q, _, err := ch.GetEvent(c)
			if err != nil {
				return
			}
			q.AckEvents(1)
			q.ReqNotify(false)
			for n, _ := q.Poll(wcs); n > 0; n, _ = q.Poll(wcs) {
				got += n
			}
		}
	})
}

// BenchmarkExplore measures, in one run, the explorer on the canonical
// world (random walk: schedules per second, ns per step) and a plain run
// of the same world (Auto mode, Go's scheduler), and reports the
// explorer's overhead per step: (explored - plain) / steps.
func BenchmarkExplore(b *testing.B) {
	var explored, plain time.Duration
	steps, runs := 0, 0
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		r := runOnce(canonical, &randomPicker{rngFor(uint64(i))}, 2000, false, &Options{})
		explored += time.Since(t0)
		steps += r.steps
		t1 := time.Now()
		RunPlain(canonical)
		plain += time.Since(t1)
		runs++
	}
	if runs == 0 || steps == 0 {
		return
	}
	b.ReportMetric(float64(runs)/explored.Seconds(), "schedules/s")
	b.ReportMetric(float64(steps)/float64(runs), "steps/schedule")
	b.ReportMetric(float64(explored.Nanoseconds())/float64(steps), "ns/step")
	b.ReportMetric(float64(plain.Nanoseconds())/float64(runs), "plain-ns/run")
	b.ReportMetric(float64((explored-plain).Nanoseconds())/float64(steps), "overhead-ns/step")
}
