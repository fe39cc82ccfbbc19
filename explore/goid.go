package explore

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Goroutine identity. A synchronisation object of a world (Mutex, Chan,
// ...) is an ordinary value the world declares; the first time a
// goroutine uses it in a schedule, the object asks which world's
// goroutine that is, so that it plays by the explorer's rules there and
// by Go's everywhere else. Go gives a goroutine no identity but the
// number runtime.Stack prints, so every goroutine of a world (and the
// world function's) records that number when it starts, and the object
// looks its caller up. Each costs one runtime.Stack, about a microsecond:
// once per goroutine and once per object, per schedule.

// member is a goroutine of a schedule: its runner, and its gor (nil for
// the goroutine of the world function).
type member struct {
	r *runner
	g *gor
}

var (
	membersMu sync.RWMutex
	members   = map[uint64]member{}
	// exploring counts the schedules running: with none, an object is
	// not in a world and needs no look-up.
	exploring atomic.Int64
)

func enroll(id uint64, m member) {
	membersMu.Lock()
	members[id] = m
	membersMu.Unlock()
}

func unenroll(id uint64) {
	membersMu.Lock()
	delete(members, id)
	membersMu.Unlock()
}

// memberOf returns the schedule the calling goroutine belongs to, and
// false when it belongs to none.
func memberOf() (member, bool) {
	if exploring.Load() == 0 {
		return member{}, false
	}
	id := goid()
	membersMu.RLock()
	m, ok := members[id]
	membersMu.RUnlock()
	return m, ok
}

// goid returns the number of the calling goroutine, as runtime.Stack
// prints it ("goroutine 7 [running]:").
func goid() uint64 {
	var b [64]byte
	s := b[:runtime.Stack(b[:], false)]
	const prefix = "goroutine "
	if len(s) < len(prefix) {
		return 0
	}
	var id uint64
	for _, c := range s[len(prefix):] {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}
