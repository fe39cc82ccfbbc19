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

// Grace is how long Main and Wait give goroutines that are on their way out.
// A goroutine that has signalled its owner (a WaitGroup's Done, a closed
// channel) still counts until it has returned, and on a loaded machine that
// may take a while; so the wait is long, and it ends as soon as they are
// gone. Only a genuine leak waits it out, which is why a wall-clock bound is
// acceptable here: it never decides a passing run.
var Grace = time.Minute

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

// Wait waits up to Grace until no goroutine is left, besides the caller's
// and the ignored ones, whose stack contains one of marks (any goroutine at
// all when marks is empty). It returns the stacks of those still left, or ""
// when none is. A test that checks its code stops every goroutine it starts
// calls it with the package's import path:
//
//	if left := leakcheck.Wait("verbsim/internal/pingpong."); left != "" {
//		t.Errorf("goroutines outlive Run:\n%s", left)
//	}
//
// Comparing runtime.NumGoroutine before and after is wrong: it counts a
// goroutine that has signalled it is done but not yet returned.
func Wait(marks ...string) string { return wait(Grace, marks...) }

// wait returns the stacks of the marked goroutines still running after d,
// or "".
func wait(d time.Duration, marks ...string) string {
	deadline := time.Now().Add(d)
	for {
		left := filter(Leftover(), marks)
		if left == "" || time.Now().After(deadline) {
			return left
		}
		time.Sleep(time.Millisecond)
	}
}

// filter keeps the stacks of leftover that contain one of marks; all of
// them when marks is empty.
func filter(leftover string, marks []string) string {
	if len(marks) == 0 || leftover == "" {
		return leftover
	}
	var kept []string
	for _, s := range strings.Split(leftover, "\n\n") {
		for _, m := range marks {
			if strings.Contains(s, m) {
				kept = append(kept, s)
				break
			}
		}
	}
	return strings.Join(kept, "\n\n")
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
