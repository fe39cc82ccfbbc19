// Package ops is the conformance suite's typed operations and the state
// machines that draw them: every operation is a value of its own type
// (CreateCQ, Poll, ModifyQP, PostSend...) naming its objects as a scenario
// does, a Machine applies operations to any device of package conformance
// and to the reference model (conformance/model) at once and reports the
// first difference, and StateMachine draws operations with rapid.
//
// # One log, three readers
//
// Each operation prints as one line of the scenario language
// (internal/scenario, docs/scenarios.md), and a Machine's Log is a scenario
// of everything it applied: a header that builds a device with the limits
// and readings of the one under test, then the operations. A failing state
// machine reports its difference and that log, which
//
//   - `verbsim run FILE` replays on verbsim as it is, printing the annotated
//     timeline of every step;
//   - Parse reads back into operations, and Replay applies to any device
//     and the model again, reproducing the difference;
//   - a person reads, as the list of verbs that led to the failure.
//
// Pebble's metamorphic tests (pebble:metamorphic/ops.go, parser.go) keep
// their operation logs the same way.
//
// # Staying off the transport
//
// The Machine's QPs never let a request execute (apply_qp.go says how), so
// the model needs no transport and every operation's outcome is decided by
// one adapter alone. Traffic has its own state machine,
// TrafficStateMachine, against the traffic model of conformance/model.
package ops
