//go:build linux

package nicd

import (
	"os"
	"strconv"
	"syscall"
)

// Priority is the nice value the daemon asks for (RaisePriority).
const Priority = -10

// RaisePriority gives every thread of the daemon the nice value Priority,
// where the user may (root, or CAP_SYS_NICE), and reports whether it
// could. A NIC moves data whatever the host's processes do; a daemon
// that programs spinning on their CQs outrank for the CPU cannot, and on a
// busy machine a round trip then waits for the scheduler (docs/daemon.md
// has the figures). Threads the runtime starts later inherit the value
// from the thread that starts them.
func RaisePriority() bool {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return false
	}
	ok := true
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, Priority); err != nil {
			ok = false
		}
	}
	return ok
}
