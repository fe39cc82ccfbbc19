// Package explore is a schedule explorer for programs written against
// verbsim: it finds the notification races of an application's own event
// loops (the completion that lands between the last empty poll and the
// re-arm, the event read and never acknowledged, the ack on the wrong CQ)
// and hands back each failure as a short replay token and an annotated
// timeline.
//
// A world is an ordinary Go function that builds a fabric (World.NewFabric
// or World.Fabric), creates what its goroutines share, and starts them
// with World.Go (and World.Daemon for a server loop that may wait for
// ever). The explorer runs the goroutines one at a time: every verb call,
// every blocking wait (ibv_get_cq_event, ibv_get_async_event,
// rdma_get_cm_event, a destroy waiting for acks) and every engine event
// (the fabric runs in Manual mode: each packet delivery is a step of its
// own) is a choice point where it decides what moves next; so is every packet-fault draw when the
// fabric has fault probabilities (sim.Config.Faults): whether the packet
// is delivered, dropped, duplicated or delayed (Options.MaxFaults bounds
// the faults of a schedule). Strategies: a seeded random walk, PCT, and a
// bounded exhaustive search (Options).
//
// At quiescence (nothing can move) it reports a lost wake-up (a goroutine
// waits for an event while its CQ holds completions), a destroy blocked on
// unacknowledged events, a deadlock (who waits for what), completions never
// consumed; at any step a panic, or a failed assertion of the world
// (World.Errorf). Check runs an exploration inside a test; Replay and
// RunToken run a failure's token again, with the same timeline; the
// command `verbsim explore` runs the built-in patterns of package
// explore/patterns and worlds written as scenario files with thread
// blocks (`verbsim explore FILE.scen`, `-replay TOKEN FILE.scen`).
// docs/explore.md is the guide.
//
// Every goroutine of a world returns before Explore, Check or Replay does:
// when a schedule ends the explorer cancels the goroutines' context, aborts
// waits that no context ends, and closes the fabric. A schedule is bounded
// by Options.MaxSteps, not by wall time; the only wall clock is the
// watchdog's, which looks every 100 ms for a goroutine blocked where the
// explorer cannot see (a plain Go channel or sync.Mutex) and reports it.
package explore
