// Package qp keeps the former names of the queue-pair vocabulary (QP types
// and states, attributes and masks, WRs, SGEs, send flags, SRQ attributes)
// as aliases of package verbs, and the transition table (Transition,
// MinimalMask) and supported send operations (SupportedSendOps) under a
// verbs.Readings. The queue-pair engine itself lives in sim/internal/qp and
// is reached only through package sim's handles. New code should import
// verbs.
package qp
