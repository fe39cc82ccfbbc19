package cq

import (
	"fmt"

	"github.com/verbsim/verbsim/sim/trace"
)

// HoldsQPLocked reports whether c holds an unpolled completion of the QP
// numbered qpn: one that CQ-26's readings purge or keep.
func (c *CQ) HoldsQPLocked(qpn uint32) bool {
	if c == nil || c.state != live || c.n == 0 {
		return false
	}
	for i := 0; i < c.n; i++ {
		at := c.head + i
		if at >= len(c.ring) {
			at -= len(c.ring)
		}
		if c.ring[at].w.QPNum == qpn {
			return true
		}
	}
	return false
}

// PurgeQPLocked deletes the unpolled completions of the QP numbered qpn
// from c, keeping the others in order, and returns how many it deleted:
// what mlx5 does when a QP is reset or destroyed (mlx5_cq_clean; CQ-26 B,
// the reading ResetPurgesCQ). Their work requests retire nothing: the QP
// forgot its queues. Events already raised stay. While a poll batch is
// open (StartPoll without EndPoll) the CQ is left alone, as the batch's
// goroutine reads it without the lock.
func (c *CQ) PurgeQPLocked(qpn uint32) int {
	if c == nil || c.state != live || c.batch || (c.shadow != nil && c.shadow.BatchLocked()) {
		return 0
	}
	c.syncLocked()
	if c.n == 0 {
		return 0
	}
	size := len(c.ring)
	kept := 0
	for i := 0; i < c.n; i++ {
		from := c.head + i
		if from >= size {
			from -= size
		}
		if c.ring[from].w.QPNum == qpn {
			continue
		}
		to := c.head + kept
		if to >= size {
			to -= size
		}
		c.ring[to] = c.ring[from]
		kept++
	}
	gone := c.n - kept
	for i := kept; i < c.n; i++ {
		at := c.head + i
		if at >= size {
			at -= size
		}
		c.ring[at] = entry{}
	}
	c.n = kept
	if gone > 0 && c.d.Tracing() {
		c.emitLocked(trace.Record{Kind: trace.KindCompletion, Name: "purged", Detail: fmt.Sprintf("%d completion(s) of qp %#x", gone, qpn), Rule: "CQ-26 B"})
	}
	if gone > 0 && c.shadow != nil {
		c.shadow.ResetLocked(c.entries)
	}
	return gone
}
