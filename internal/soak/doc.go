// Package soak is a concurrency soak of the simulated fabric: many
// goroutines post RC, UC and UD traffic over QPs that share completion
// queues and completion channels, while the fabric drops, duplicates and
// delays packets, forced statuses fail chosen work requests, QPs are made
// fatal and QPs are destroyed mid-traffic. Busy pollers and event-loop
// consumers (arm, get event, ack, re-arm, poll until empty: NOTIFY-14) share
// the CQs. Every completion is checked against a ledger of what was posted.
//
// # What Run checks
//
//   - Every posted signaled WR completes exactly once, with success, an
//     error or a flush, in posting order within its queue (CQ-17, CQ-18);
//     an unsignaled WR completes at most once and never with success (CQ-19,
//     CQ-21, FLUSH-04), and not at all when a later WR of its queue succeeded.
//     The one exception is a QP destroyed while WRs were outstanding: those
//     WRs vanish without completions (QP-37), and completions already in a
//     CQ may or may not stay pollable (CQ-26), so for a destroyed QP Run
//     checks at most once and reports the rest as vanished.
//   - No completion names a WR that was never posted, names the wrong QP or
//     arrives on the wrong CQ; after an error on a queue only flushes follow.
//   - An error status is one the traffic can produce by itself (flush,
//     retry exceeded) or the one forced on that very WR (Fabric.ForceStatus).
//   - Data: a successful receive holds exactly the message that was sent
//     (header, length, payload, immediate data); RC delivers every message
//     once and in order, and every SEND the sender saw succeed reached a
//     receiver that was not itself faulted (XFER-25); UC never delivers a
//     message twice or out of order; a UD datagram was really sent. RC
//     RDMA WRITE targets, READ results and atomic results are compared with
//     what they must hold, and the k-th atomic of a connection returns k,
//     so an atomic executed twice is caught; so are UC WRITE-with-immediate
//     targets (the first UCWindow of each direction).
//   - Every completion event read is acknowledged, every async event read
//     is acknowledged, no CQ overruns, every destroy returns, and every
//     object is gone at the end.
//
// Goroutines that outlive the soak are the test binary's business:
// soak_test.go's TestMain is leakcheck.Main.
//
// # Time
//
// The fabric runs in Auto mode: ready engine events run inside the verbs,
// and one clock goroutine moves virtual time with AdvanceToNext whenever a
// timer or a delayed packet is pending, and otherwise sleeps until a poster
// says it has posted (docs/time.md). An event-loop consumer blocked in
// GetEvent therefore wakes when another goroutine's verb, or the clock
// goroutine, produces a completion on one of its CQs. No wall time is read
// for any decision: a run is bounded by counts (rounds and WRs), and a slow
// machine only makes it take longer. The one wall-clock bound is
// Config.Watchdog, minutes by default, which turns a genuine hang into an
// error carrying every goroutine's stack.
//
// The seed decides the traffic mix, the lengths, the fault plan and the
// fabric's packet faults; the interleaving of the goroutines is the Go
// scheduler's. So a seed replays the same plan, not the same interleaving.
//
// # Running it
//
// go test ./internal/soak runs the short soak (also under -short and -race);
// flags select a longer one:
//
//	go test ./internal/soak -run TestSoak -soak.seed=42
//	go test ./internal/soak -run TestSoak -soak.rounds=200 -soak.wrs=2000
//	go test ./internal/soak -run TestSoak -soak.duration=10m -timeout=0
//
// docs/soak.md says more.
package soak
