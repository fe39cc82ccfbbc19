// Package notify keeps the former names of the async-event vocabulary as
// aliases of package verbs, and the arming states (Arm) that sim.CQ.Armed
// reports; the notification reading a sim.Profile selects is
// verbs.Readings.SolicitedBitOnly. Channels, the async queue and the tallies
// live in sim/internal/notify and are reached only through package sim's
// handles. New code should import verbs.
package notify
