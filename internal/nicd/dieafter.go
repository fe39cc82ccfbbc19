//go:build linux

package nicd

import (
	"syscall"

	"github.com/verbsim/verbsim/sim"
)

// VERBSIM_DIE_AFTER, the fault that makes a program a dead peer at a
// chosen moment (docs/c-programs.md): the daemon kills the process when the
// n-th packet addressed to one of its QPs arrives, before the engine
// delivers it, and drops every later one until the process's session has
// ended and its QPs are gone. A peer with that request in flight then
// retries until RETRY_EXC_ERR, as a peer of a crashed host does.

func init() { handlers[opDieAfter] = hDieAfter }

// qpKey names a QP on the fabric.
type qpKey struct {
	dev string
	qpn uint32
}

func hDieAfter(c *conn, r *req, body []byte, fds []int) (reply, error) {
	se := c.s
	if r.A == 0 || r.A > 1<<40 {
		return reply{}, syscall.EINVAL
	}
	n := int(r.A)
	seen := 0
	match := func(p sim.Packet) bool {
		se.mu.Lock()
		mine := se.qps[qpKey{p.To, p.DstQPN}]
		se.mu.Unlock()
		if !mine {
			return false
		}
		if seen++; seen == n {
			se.srv.logf("pid %d: VERBSIM_DIE_AFTER=%d: killed at the packet", se.pid, n)
			syscall.Kill(se.pid, syscall.SIGKILL)
		}
		return true
	}
	f, err := se.srv.fab.InjectPacketFault(sim.PacketFault{Match: match, Action: sim.FaultDrop, Skip: n - 1})
	if err != nil {
		return reply{}, err
	}
	se.mu.Lock()
	se.faults = append(se.faults, f)
	se.mu.Unlock()
	return reply{}, nil
}
