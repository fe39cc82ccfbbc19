//go:build unix

package benchkit

import (
	"syscall"
	"time"
)

// cpuTime is the process's user+system time, or 0 when unknown.
func cpuTime() time.Duration {
	var u syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &u) != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
