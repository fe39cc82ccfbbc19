// Package rapidtb runs a rapid property for a test that expects it to fail:
// Recorder is a rapid.TB that keeps the failure instead of failing the test,
// so that a test can require a state machine to catch a broken device and
// read what it printed.
package rapidtb

import (
	"fmt"
	"strings"

	"pgregory.net/rapid"
)

// Recorder is a rapid.TB that records failures instead of failing.
type Recorder struct {
	name   string
	failed bool
	msg    strings.Builder
}

// New returns a Recorder for a property of the given name.
func New(name string) *Recorder { return &Recorder{name: name} }

// stop unwinds a property that failed.
type stop struct{}

// Check runs rapid.Check against r and stops at the first failure.
func (r *Recorder) Check(prop func(*rapid.T)) {
	defer func() {
		if p := recover(); p != nil {
			if _, ok := p.(stop); !ok {
				panic(p)
			}
		}
	}()
	rapid.Check(r, prop)
}

// Message returns everything the failure printed, rapid's report included.
func (r *Recorder) Message() string { return r.msg.String() }

// Helper implements rapid.TB.
func (r *Recorder) Helper() {}

// Name implements rapid.TB.
func (r *Recorder) Name() string { return r.name }

// Logf implements rapid.TB: logs are dropped.
func (r *Recorder) Logf(string, ...any) {}

// Log implements rapid.TB: logs are dropped.
func (r *Recorder) Log(...any) {}

// Skipf implements rapid.TB: a skip is a failure.
func (r *Recorder) Skipf(f string, a ...any) { r.Fatalf("skipped: "+f, a...) }

// Skip implements rapid.TB: a skip is a failure.
func (r *Recorder) Skip(a ...any) { r.Fatal(a...) }

// SkipNow implements rapid.TB: a skip is a failure.
func (r *Recorder) SkipNow() { r.FailNow() }

// Errorf implements rapid.TB.
func (r *Recorder) Errorf(f string, a ...any) { r.failed = true; fmt.Fprintf(&r.msg, f+"\n", a...) }

// Error implements rapid.TB.
func (r *Recorder) Error(a ...any) { r.failed = true; fmt.Fprintln(&r.msg, a...) }

// Fatalf implements rapid.TB.
func (r *Recorder) Fatalf(f string, a ...any) { r.Errorf(f, a...); panic(stop{}) }

// Fatal implements rapid.TB.
func (r *Recorder) Fatal(a ...any) { r.Error(a...); panic(stop{}) }

// FailNow implements rapid.TB.
func (r *Recorder) FailNow() { r.failed = true; panic(stop{}) }

// Fail implements rapid.TB.
func (r *Recorder) Fail() { r.failed = true }

// Failed implements rapid.TB.
func (r *Recorder) Failed() bool { return r.failed }

var _ rapid.TB = (*Recorder)(nil)
