package leakcheck

import (
	"runtime"
	"strings"
	"testing"
)

// TestLeftover: a goroutine blocked on a channel is reported, with the
// function it runs, until it ends.
func TestLeftover(t *testing.T) {
	stop := make(chan struct{})
	done := make(chan struct{})
	go blockedHere(stop, done)
	// Reported as soon as it runs; until it is scheduled it may not show.
	for !strings.Contains(Leftover(), "leakcheck.blockedHere") {
		runtime.Gosched()
	}
	close(stop)
	<-done
	if left := Wait("leakcheck.blockedHere"); left != "" {
		t.Fatalf("the goroutine ended, yet the leftover is:\n%s", left)
	}
}

func blockedHere(stop, done chan struct{}) {
	<-stop
	close(done)
}

// TestWaitFilters: Wait looks only at the goroutines its marks name.
func TestWaitFilters(t *testing.T) {
	stop := make(chan struct{})
	done := make(chan struct{})
	go blockedHere(stop, done)
	defer func() { close(stop); <-done }()
	// The goroutine may not have been scheduled yet: wait, without a
	// clock, until its stack shows it.
	for !strings.Contains(Leftover(), "leakcheck.blockedHere") {
		runtime.Gosched()
	}
	if left := wait(0, "no.such.function"); left != "" {
		t.Fatalf("a goroutine the marks do not name is reported:\n%s", left)
	}
	if left := wait(0, "no.such.function", "leakcheck.blockedHere"); !strings.Contains(left, "leakcheck.blockedHere") {
		t.Fatalf("a named goroutine is not reported; leftover:\n%s", left)
	}
}
