package conformance

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// NewDevice makes a fresh device for one case.
type NewDevice func() (Device, error)

// Case is one executable rule check: a rule ID, a few words saying what the
// case checks, and the named function that checks it. Each file of the suite
// lists its cases in a table (cqCases in cq.go, ...); suite lists the tables.
type Case struct {
	ID   string // rule ID from spec/catalogue.md, e.g. "CQ-08"
	Name string // what the case checks, in a few words
	fn   func(t *tester, e *env)
}

// Source returns the file:line of the function that checks the case.
func (c Case) Source() string {
	pc := reflect.ValueOf(c.fn).Pointer()
	f := runtime.FuncForPC(pc)
	if f == nil {
		return "conformance/?"
	}
	file, line := f.FileLine(f.Entry())
	return fmt.Sprintf("conformance/%s:%d", filepath.Base(file), line)
}

// suite is every table of cases. To add a case, write its function beside
// the rules it checks and add a row to that file's table; a new file's table
// is added here.
var suite = [][]Case{
	asyncCases, avCases, avGRHCases, avPostCases, chanCases, cqCases, cqDestroyCases, cqPollCases,
	cqexCases, dmCases, flushCases, mrCases, mrReregCases, mwCases,
	mwKeyCases, notifyCases, odpCases, pdCases, qpCases, qpCqCases, qpModifyCases,
	qpOpcodeCases, qpPostCases, qpxCases, queryCases, srqCases, srqErrorCases,
	xferAsyncCases, xferAtomicwriteCases, xferDataCases, xferDropCases,
	xferErrorsCases, xferEventsCases, xferFlushCases, xferForcedCases, xferHostileCases,
	xferQpCases, xferTimersCases, xferWcCases, xrcCases, xrcQPCases,
}

// Cases returns every case of the suite, ordered by rule ID.
func Cases() []Case {
	cs := slices.Concat(suite...)
	sort.SliceStable(cs, func(i, j int) bool { return ruleLess(cs[i].ID, cs[j].ID) })
	return cs
}

// ruleLess orders "CQ-2" before "CQ-10".
func ruleLess(a, b string) bool {
	fa, na := splitID(a)
	fb, nb := splitID(b)
	if fa != fb {
		return fa < fb
	}
	if na != nb {
		return na < nb
	}
	return a < b
}

func splitID(id string) (family string, n int) {
	i := strings.LastIndexByte(id, '-')
	if i < 0 {
		return id, 0
	}
	fmt.Sscanf(strings.TrimLeft(id[i+1:], "S"), "%d", &n)
	return id[:i], n
}

// Run runs every case as a subtest named "ID/Name", each on a fresh device
// from newDevice.
func Run(t *testing.T, newDevice NewDevice) {
	t.Helper()
	for _, c := range Cases() {
		t.Run(c.ID+"/"+c.Name, func(t *testing.T) {
			runCase(&tester{tb: t, c: c}, c, newDevice)
		})
	}
}

// Check runs every case and returns all failures joined, or nil: the suite
// as a function, in the manner of fstest.TestFS.
func Check(newDevice NewDevice) error { return CheckRules(newDevice) }

// CheckRules is Check restricted to the cases of the given rule IDs; with
// none, it runs every case. Each case runs on a fresh device, so a case's
// verdict does not depend on which others ran: checking a device change
// against the rules it touches gives the same verdict on those rules as the
// whole suite, in a fraction of the time.
func CheckRules(newDevice NewDevice, ids ...string) error {
	var errs []error
	for _, c := range Cases() {
		if len(ids) > 0 && !slices.Contains(ids, c.ID) {
			continue
		}
		t := &tester{c: c}
		runCase(t, c, newDevice)
		errs = append(errs, t.errs...)
	}
	return errors.Join(errs...)
}

func runCase(t *tester, c Case, newDevice NewDevice) {
	defer t.runCleanups()
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(stop); ok {
				return
			}
			t.record(fmt.Sprintf("panic: %v", r))
			if t.tb != nil {
				t.tb.FailNow()
			}
		}
	}()
	dev, err := newDevice()
	if err != nil {
		t.Fatalf("making a device: %v", err)
	}
	ctx, err := dev.Open()
	if err != nil {
		t.Fatalf("opening the device: %v", err)
	}
	e := &env{T: t, Dev: dev, Ctx: ctx, Profile: dev.Profile()}
	t.Cleanup(e.teardown)
	c.fn(t, e)
}

// tester reports a case's failures, naming its rule and where the case is
// declared, to a *testing.T or, under Check, to a list.
type tester struct {
	tb       testing.TB
	c        Case
	errs     []error
	cleanups []func()
}

type stop struct{}

func (t *tester) record(msg string) {
	err := fmt.Errorf("%s (%s): %s (%s)", t.c.ID, t.c.Name, msg, t.c.Source())
	if t.tb != nil {
		t.tb.Helper()
		t.tb.Error(err)
		return
	}
	t.errs = append(t.errs, err)
}

// Errorf records a failure and goes on.
func (t *tester) Errorf(format string, args ...any) {
	if t.tb != nil {
		t.tb.Helper()
	}
	t.record(fmt.Sprintf(format, args...))
}

// Fatalf records a failure and ends the case.
func (t *tester) Fatalf(format string, args ...any) {
	if t.tb != nil {
		t.tb.Helper()
	}
	t.record(fmt.Sprintf(format, args...))
	if t.tb != nil {
		t.tb.FailNow()
	}
	panic(stop{})
}

// Helper marks the caller as a helper, as testing.T.Helper does.
func (t *tester) Helper() {
	if t.tb != nil {
		t.tb.Helper()
	}
}

// Logf logs under go test -v; it is silent under Check.
func (t *tester) Logf(format string, args ...any) {
	if t.tb != nil {
		t.tb.Helper()
		t.tb.Logf(format, args...)
	}
}

// Failed reports whether the case has failed so far.
func (t *tester) Failed() bool {
	if t.tb != nil {
		return t.tb.Failed()
	}
	return len(t.errs) > 0
}

// Cleanup registers f to run when the case ends, last registered first.
func (t *tester) Cleanup(f func()) { t.cleanups = append(t.cleanups, f) }

func (t *tester) runCleanups() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}

// Waits. Positive waits (something must happen) use Patience, which only
// matters when the implementation is broken; negative waits (something must
// NOT happen, e.g. a destroy that must stay blocked) use Grace. Neither
// measures speed.
var (
	// Patience bounds a wait for something that must happen. A test of the
	// suite itself may lower it to fail broken devices faster.
	Patience = 10 * time.Second
	// Grace is how long something that must not happen is given to happen.
	Grace = 50 * time.Millisecond
)

func patient() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), Patience)
}

func graceful() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), Grace)
}
