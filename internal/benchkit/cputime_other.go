//go:build !unix

package benchkit

import "time"

// cpuTime is unknown here: 0.
func cpuTime() time.Duration { return 0 }
