// Package cq keeps the former names of the extended-CQ vocabulary as aliases
// of package verbs; the CQ readings a sim.Profile selects are fields of
// verbs.Readings (OverrunDrops, DestroyBusyOnUnacked, ExactCQE). The
// completion-queue engine itself lives in sim/internal/cq and is reached
// only through package sim's handles (sim.CQ, sim.CompChannel). New code
// should import verbs.
package cq
