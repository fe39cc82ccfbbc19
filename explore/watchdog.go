package explore

import (
	"bytes"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The watchdog: a goroutine of a world that blocks on something the
// explorer cannot see (a Go channel, a sync.Mutex, a sync.WaitGroup)
// holds the turn for ever, since only one goroutine of a world moves at a
// time. While schedules run, the watchdog looks every tick at the
// schedules whose turn has not come back since the tick before; if the
// goroutine holding the turn is parked by Go in such a wait (the state
// runtime.Stack prints: "chan receive", "select", "sync.Mutex.Lock", ...)
// on two ticks in a row with no step between, the schedule fails with
// Unseen, naming the goroutine, the wait and the line of the world's code
// it waits at.
//
// The tick is wall time, but it only decides when to look: a verdict
// needs the goroutine parked in one of Go's waits, which a goroutine that
// is merely slow (a loaded machine) never is; so a correct world never
// fails for it, however slow the machine.

// watchTick is how often the watchdog looks.
const watchTick = 100 * time.Millisecond

var watch struct {
	mu      sync.Mutex
	runners map[*runner]uint64 // the progress seen at the last tick, +1 (0: not yet looked at)
	running bool
}

// watchStart registers r with the watchdog, starting it if it is not
// running.
func watchStart(r *runner) {
	watch.mu.Lock()
	defer watch.mu.Unlock()
	if watch.runners == nil {
		watch.runners = map[*runner]uint64{}
	}
	watch.runners[r] = 0
	if !watch.running {
		watch.running = true
		go watchdog()
	}
}

func watchStop(r *runner) {
	watch.mu.Lock()
	delete(watch.runners, r)
	watch.mu.Unlock()
}

// watchdog runs while schedules run; it returns at the first tick with
// none.
func watchdog() {
	t := time.NewTicker(watchTick)
	defer t.Stop()
	suspects := map[*runner]string{}
	for range t.C {
		watch.mu.Lock()
		if len(watch.runners) == 0 {
			watch.running = false
			watch.mu.Unlock()
			return
		}
		var stalled []*runner
		for r, seen := range watch.runners {
			p := r.progress.Load() + 1
			if p == seen && r.holder() != 0 {
				stalled = append(stalled, r)
			}
			watch.runners[r] = p
		}
		watch.mu.Unlock()
		if len(stalled) == 0 {
			clear(suspects)
			continue
		}
		stacks := allStacks()
		for _, r := range stalled {
			id := r.holder()
			what, where := parked(stacks, id)
			if what == "" {
				delete(suspects, r)
				continue
			}
			verdict := what + where
			if suspects[r] == verdict { // the same wait two ticks running
				delete(suspects, r)
				select {
				case r.stuck <- stuckReport{goid: id, what: what, where: where}:
				default:
				}
				continue
			}
			suspects[r] = verdict
		}
	}
}

// stuckReport is what the watchdog saw.
type stuckReport struct {
	goid        uint64
	what, where string
}

// allStacks returns the stacks of every goroutine.
func allStacks() []byte {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return buf[:n]
		}
		buf = make([]byte, 2*len(buf))
	}
}

// parked looks up goroutine id in stacks and, when Go has parked it in a
// wait the explorer cannot see, returns that wait ("a receive from a Go
// channel") and where the world's code waits (" at world_test.go:42").
func parked(stacks []byte, id uint64) (what, where string) {
	head := []byte("goroutine " + strconv.FormatUint(id, 10) + " [")
	i := bytes.Index(stacks, head)
	if i < 0 {
		return "", ""
	}
	block := stacks[i+len(head):]
	if j := bytes.Index(block, []byte("\n\n")); j >= 0 {
		block = block[:j]
	}
	state, _, _ := strings.Cut(string(block), "]")
	state, _, _ = strings.Cut(state, ",") // "chan receive, 2 minutes"
	switch {
	case strings.HasPrefix(state, "chan receive"):
		what = "a receive from a Go channel"
	case strings.HasPrefix(state, "chan send"):
		what = "a send on a Go channel"
	case strings.HasPrefix(state, "select"):
		what = "a select on Go channels"
	case strings.HasPrefix(state, "sync.Mutex"), strings.HasPrefix(state, "sync.RWMutex"):
		what = "a " + state + " (a sync mutex)"
	case strings.HasPrefix(state, "sync.WaitGroup"):
		what = "sync.WaitGroup.Wait"
	case strings.HasPrefix(state, "sync.Cond"):
		what = "sync.Cond.Wait"
	case strings.HasPrefix(state, "semacquire"), strings.HasPrefix(state, "sync."):
		what = "a wait of package sync (" + state + ")"
	default:
		return "", ""
	}
	// The first frame of the world's code: neither the runtime, nor sync,
	// nor this package.
	lines := strings.Split(string(block), "\n")
	for k := 1; k+1 < len(lines); k += 2 {
		fn := lines[k]
		if strings.HasPrefix(fn, "runtime.") || strings.HasPrefix(fn, "sync.") || strings.HasPrefix(fn, "internal/") ||
			strings.HasPrefix(fn, "reflect.") || strings.Contains(fn, "verbsim/explore.") {
			continue
		}
		file := strings.TrimSpace(lines[k+1])
		if j := strings.LastIndex(file, " +0x"); j >= 0 {
			file = file[:j]
		}
		if j := strings.LastIndex(file, "/"); j >= 0 {
			file = file[j+1:]
		}
		fn = strings.TrimSpace(fn)
		if j := strings.LastIndex(fn, "("); j > 0 {
			fn = fn[:j]
		}
		if j := strings.LastIndex(fn, "/"); j >= 0 {
			fn = fn[j+1:]
		}
		return what, fmt.Sprintf(" at %s (in %s)", file, fn)
	}
	return what, ""
}
