// Package leakcheck fails a test binary whose tests leave goroutines
// behind: verbsim promises that no goroutine outlives what owns it (a
// fabric's Background driver stops at Close, a blocked GetEvent returns when
// its channel is destroyed), and every package that starts goroutines
// checks it with
//
//	func TestMain(m *testing.M) { leakcheck.Main(m) }
package leakcheck

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Grace is how long Main waits for goroutines that are on their way out.
var Grace = 5 * time.Second

// ignored are goroutines that the runtime or the standard library keep for
// the life of the process once started, whoever started them.
var ignored = []string{
	"os/signal.signal_recv", // signal.Notify's watcher
	"os/signal.loop",
	"internal/fuzz.", // a fuzzing worker's plumbing
	"testing.(*M).",
}

// Main runs the tests, then waits up to Grace for every goroutine they
// started to end. If some remain it prints their stacks and exits 1;
// otherwise it exits with the tests' code.
func Main(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if left := wait(Grace); left != "" {
			fmt.Fprintf(os.Stderr, "leakcheck: goroutines outlive the tests:\n\n%s\n", left)
			code = 1
		}
	}
	os.Exit(code)
}

// wait returns the stacks of the goroutines still running after d, or "".
func wait(d time.Duration) string {
	deadline := time.Now().Add(d)
	for {
		left := Leftover()
		if left == "" || time.Now().After(deadline) {
			return left
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Leftover returns the stacks of the goroutines other than the caller's and
// the ignored ones, separated by blank lines, or "" when there are none.
func Leftover() string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	stacks := strings.Split(string(buf), "\n\n")
	var left []string
	for _, s := range stacks[1:] { // stacks[0] is the caller's
		if s = strings.TrimSpace(s); s != "" && !isIgnored(s) {
			left = append(left, s)
		}
	}
	return strings.Join(left, "\n\n")
}

func isIgnored(stack string) bool {
	for _, ig := range ignored {
		if strings.Contains(stack, ig) {
			return true
		}
	}
	return false
}
