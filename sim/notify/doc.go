// Package notify keeps the former names of the async-event vocabulary as
// aliases of package verbs, and the names of the notification readings
// (Arm, SolicitedPolicy) that a sim.Profile selects and sim.CQ.Armed
// reports. Channels, the async queue and the tallies live in
// sim/internal/notify and are reached only through package sim's handles.
// New code should import verbs.
package notify
