package sim_test

// The systematic bad-input test of the public API (issue #15). Every
// exported method of the object types in badTypes must have an entry in
// badTable (bad-input cases, or a written reason why it takes none); a
// method added without one fails TestBadInput/coverage. Four sweeps then
// run:
//
//   - nil: every method on a nil receiver (the zero AsyncEvent for the one
//     value type) with zero-valued arguments, by reflection;
//   - zero: every method that takes arguments, on a live object, with
//     zero-valued arguments, by reflection;
//   - dead: every method of a type that can be destroyed, on a destroyed
//     object, with zero-valued arguments, by reflection;
//   - cases: the hand-written bad values of badTable.
//
// Each asserts that nothing panics, that every error carries a
// syscall.Errno (errors.As), and that a refused call changes nothing: the
// world's snapshot is the same before and after, and the trace gained at
// most records of the refusal. The number of method × input pairs tried is
// logged: go test -run 'TestBadInput$' -v ./sim/ | grep pairs

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/internal/notify"
	"github.com/verbsim/verbsim/sim/trace"
	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// badTypes are the types whose exported methods are covered: sim's object
// types and handles, the engine's async queue and tally (reached through
// export_test.go), and every other exported type of sim's packages with
// pointer methods. The engine objects' own hooks are covered by the
// func.engine entries.
var badTypes = []struct {
	name string
	typ  reflect.Type
}{
	{"Fabric", reflect.TypeFor[*sim.Fabric]()},
	{"Device", reflect.TypeFor[*sim.Device]()},
	{"Context", reflect.TypeFor[*sim.Context]()},
	{"PD", reflect.TypeFor[*sim.PD]()},
	{"MR", reflect.TypeFor[*sim.MR]()},
	{"MW", reflect.TypeFor[*sim.MW]()},
	{"AH", reflect.TypeFor[*sim.AH]()},
	{"CQ", reflect.TypeFor[*sim.CQ]()},
	{"CompChannel", reflect.TypeFor[*sim.CompChannel]()},
	{"QP", reflect.TypeFor[*sim.QP]()},
	{"SRQ", reflect.TypeFor[*sim.SRQ]()},
	{"XRCD", reflect.TypeFor[*sim.XRCD]()},
	{"DM", reflect.TypeFor[*sim.DM]()},
	{"AsyncQueue", reflect.TypeFor[*notify.AsyncQueue]()},
	{"Tally", reflect.TypeFor[*notify.Tally]()},
	{"AsyncEvent", reflect.TypeFor[sim.AsyncEvent]()},
	{"Fault", reflect.TypeFor[*sim.Fault]()},
	{"CM", reflect.TypeFor[*sim.CM]()},
	{"CMChannel", reflect.TypeFor[*sim.CMChannel]()},
	{"CMID", reflect.TypeFor[*sim.CMID]()},
	{"CMEvent", reflect.TypeFor[*sim.CMEvent]()},
	// The other exported pointer types of sim's packages.
	{"QPAttr", reflect.TypeFor[*verbs.QPAttr]()},
	{"WC", reflect.TypeFor[*verbs.WC]()},
	{"Log", reflect.TypeFor[*trace.Log]()},
	{"Error", reflect.TypeFor[*verr.Error]()},
	{"ReregError", reflect.TypeFor[*verbs.ReregError]()},
}

// badEntry is the coverage of one method: hand-written cases, or the
// reason it takes no bad input beyond what the sweeps try.
type badEntry struct {
	reason string
	cases  []badCase
}

// badCase is one bad input to one method.
type badCase struct {
	in string // the bad input, in words
	// want is the errno the call must fail with; 0 when the method returns
	// no error (check its results with w.failf).
	want syscall.Errno
	call func(w *badWorld) error
	// moves says the call may change the world (Tick moves the clock), so
	// the snapshot is not compared.
	moves bool
}

// failf records a problem found by a case's call, for methods whose results
// the errno does not cover.
func (w *badWorld) failf(format string, args ...any) {
	w.problems = append(w.problems, fmt.Sprintf(format, args...))
}

// callZero calls method m on recv with zero arguments, holding mu when m
// is an engine-facing ...Locked hook, and reports a panic or a call that
// never returned (see guard).
func callZero(m reflect.Method, recv reflect.Value, mu sync.Locker) (out []reflect.Value, panicked any, blocked bool) {
	args := append([]reflect.Value{recv}, zeroArgs(m)...)
	locked := strings.HasSuffix(m.Name, "Locked")
	panicked, blocked = guard(func() {
		if locked {
			mu.Lock()
			defer mu.Unlock()
		}
		out = m.Func.Call(args)
	})
	return out, panicked, blocked
}

// guard runs fn, turning a panic into a value and a call that does not
// return within a minute into blocked. Every call it guards returns in
// microseconds; the bound only turns a call that blocks for ever (a bug)
// into a failure with a name rather than a hung test, and is long enough
// that no load on the machine makes a passing call look blocked.
func guard(fn func()) (panicked any, blocked bool) {
	done := make(chan any, 1)
	go func() {
		defer func() { done <- recover() }()
		fn()
	}()
	select {
	case p := <-done:
		return p, false
	case <-time.After(time.Minute):
		return nil, true
	}
}

// methodsOf returns the exported methods of t, sorted by name.
func methodsOf(t reflect.Type) []reflect.Method {
	ms := make([]reflect.Method, t.NumMethod())
	for i := range ms {
		ms[i] = t.Method(i)
	}
	return ms
}

// zeroArgs returns zero values for the parameters of method m after the
// receiver (a variadic parameter gets no value).
func zeroArgs(m reflect.Method) []reflect.Value {
	n := m.Type.NumIn()
	if m.Type.IsVariadic() {
		n--
	}
	var args []reflect.Value
	for i := 1; i < n; i++ {
		args = append(args, reflect.Zero(m.Type.In(i)))
	}
	return args
}

var errorType = reflect.TypeFor[error]()

// lastError returns the error result of a call, if its last result is one.
func lastError(out []reflect.Value) (err error, hasErr bool) {
	if len(out) == 0 || out[len(out)-1].Type() != errorType {
		return nil, false
	}
	e, _ := out[len(out)-1].Interface().(error)
	return e, true
}

// errnoOf returns the syscall.Errno err carries, or 0.
func errnoOf(err error) syscall.Errno {
	var n syscall.Errno
	if errors.As(err, &n) {
		return n
	}
	return 0
}

// badPairs counts the method × input pairs tried, per sweep.
type badPairs struct {
	mu sync.Mutex
	n  map[string]int
}

func (p *badPairs) add(sweep string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n == nil {
		p.n = map[string]int{}
	}
	p.n[sweep]++
}

func TestBadInput(t *testing.T) {
	var pairs badPairs
	t.Run("coverage", testBadCoverage)
	t.Run("nil", func(t *testing.T) { testBadNil(t, &pairs) })
	t.Run("zero", func(t *testing.T) { testBadZero(t, &pairs) })
	t.Run("dead", func(t *testing.T) { testBadDead(t, &pairs) })
	t.Run("cases", func(t *testing.T) { testBadCases(t, &pairs) })
	total := 0
	for _, n := range pairs.n {
		total += n
	}
	t.Logf("method × input pairs tried: %d (nil receiver %d, zero arguments %d, destroyed receiver %d, hand-written %d)",
		total, pairs.n["nil"], pairs.n["zero"], pairs.n["dead"], pairs.n["cases"])
}

// testBadCoverage fails for an exported method without an entry in
// badTable, and for an entry that names no method.
func testBadCoverage(t *testing.T) {
	known := map[string]bool{}
	for _, bt := range badTypes {
		for _, m := range methodsOf(bt.typ) {
			key := bt.name + "." + m.Name
			known[key] = true
			e, ok := badTable[key]
			switch {
			case !ok:
				t.Errorf("%s has no entry in badTable: add bad-input cases, or the reason it takes none", key)
			case e.reason == "" && len(e.cases) == 0:
				t.Errorf("%s: badTable entry has neither cases nor a reason", key)
			}
		}
	}
	for key := range badTable {
		if !known[key] && !strings.HasPrefix(key, "func.") {
			t.Errorf("badTable entry %s names no method of badTypes", key)
		}
	}
}

// testBadNil calls every method on a nil receiver with zero arguments.
// The convention (package sim's doc): a method that returns an error
// returns one matching syscall.EINVAL, and every other result, of it or of
// a method without an error, is the zero value, except that String and
// Error, which are for printing, render "<nil>" as fmt does. For the value
// type AsyncEvent only the error is checked.
func testBadNil(t *testing.T, pairs *badPairs) {
	for _, bt := range badTypes {
		for _, m := range methodsOf(bt.typ) {
			key := bt.name + "." + m.Name
			pairs.add("nil")
			var out []reflect.Value
			args := append([]reflect.Value{reflect.Zero(bt.typ)}, zeroArgs(m)...)
			p, blocked := guard(func() { out = m.Func.Call(args) })
			switch {
			case p != nil:
				t.Errorf("%s on a nil receiver panicked: %v", key, p)
				continue
			case blocked:
				t.Errorf("%s on a nil receiver blocked", key)
				continue
			}
			err, hasErr := lastError(out)
			if hasErr && errnoOf(err) != syscall.EINVAL {
				t.Errorf("%s on a nil receiver: error %v, want EINVAL", key, err)
			}
			if bt.typ.Kind() != reflect.Pointer {
				continue
			}
			printer := (m.Name == "String" || m.Name == "Error") && len(out) == 1 && out[0].Kind() == reflect.String
			for i, o := range out {
				if hasErr && i == len(out)-1 {
					break
				}
				if printer && o.String() == "<nil>" {
					continue
				}
				if !o.IsZero() {
					t.Errorf("%s on a nil receiver: result %d is %v, want the zero value", key, i, o)
				}
			}
		}
	}
}

// live returns the live object of w that stands for a receiver of type
// name in the zero-argument sweep, and the lock its ...Locked methods need.
func (w *badWorld) live(name string) (reflect.Value, sync.Locker) {
	mu := sim.EngineCQ(w.cq).Domain()
	var v any
	switch name {
	case "Fabric":
		v = w.f
	case "Device":
		v = w.dev
	case "Context":
		v = w.ctx
	case "PD":
		v = w.pd
	case "XRCD":
		v = w.xrcd
	case "DM":
		v = w.dm
	case "MR":
		v = w.mr
	case "MW":
		v = w.mw
	case "AH":
		v = w.ah
	case "CQ":
		v = w.free
	case "CompChannel":
		v = w.ch
	case "QP":
		v = w.qp
	case "SRQ":
		v = w.srq
	case "AsyncQueue":
		v = sim.EngineAsyncQueue(w.ctx)
	case "Tally":
		v = sim.EngineQP(w.qp).Tally()
	case "AsyncEvent":
		v = w.ev
	case "Fault":
		v = w.fault
	case "CM":
		v = w.cm
	case "CMChannel":
		v = w.cmCh
	case "CMID":
		v = w.cmID
	case "CMEvent":
		v = w.cmEv
	case "QPAttr":
		v = &verbs.QPAttr{Timeout: 3}
	case "WC":
		v = &verbs.WC{WRID: 1}
	case "Log":
		v = w.log
	case "Error":
		v = verr.New("ibv_test", syscall.EINVAL, "for the sweep")
	default:
		panic("no live object for " + name)
	}
	return reflect.ValueOf(v), mu
}

// badZeroMoves lists the methods whose refusal of zero arguments changes
// the world by design, with the reason.
var badZeroMoves = map[string]string{
	"MR.Rereg":     "flags 0 is a command error (IBV_REREG_MR_ERR_CMD), after which the default profile leaves the MR unusable (MR-14)",
	"MR.ReregIOVA": "flags 0 is a command error (IBV_REREG_MR_ERR_CMD), after which the default profile leaves the MR unusable (MR-14)",
}

// testBadZero calls every method that takes arguments on a live object,
// each in a fresh world, with zero-valued arguments. Zero values are often
// legal (Tick(0), Poll(nil)), so the sweep asserts only what holds either
// way: no panic, no block, an error carries an errno, and a call that
// returns an error changed nothing.
func testBadZero(t *testing.T, pairs *badPairs) {
	for _, bt := range badTypes {
		for _, m := range methodsOf(bt.typ) {
			if m.Type.NumIn() < 2 {
				continue
			}
			key := bt.name + "." + m.Name
			pairs.add("zero")
			w := newBadWorld(t)
			recv, mu := w.live(bt.name)
			before, n := w.snapshot(), len(w.f.TraceRecords())
			out, p, blocked := callZero(m, recv, mu)
			switch {
			case p != nil:
				t.Errorf("%s with zero arguments panicked: %v", key, p)
				continue
			case blocked:
				t.Errorf("%s with zero arguments blocked", key)
				continue
			}
			err, _ := lastError(out)
			if err == nil {
				continue
			}
			if errnoOf(err) == 0 {
				t.Errorf("%s with zero arguments: error %q carries no syscall.Errno", key, err)
			}
			if why, ok := badZeroMoves[key]; ok {
				t.Logf("%s with zero arguments: the snapshot is not compared: %s", key, why)
			} else if d := diffSnapshots(before, w.snapshot()); d != "" {
				t.Errorf("%s with zero arguments failed (%v) but changed the world:\n%s", key, err, d)
			}
			if d := w.checkTrace(n); d != "" {
				t.Errorf("%s with zero arguments failed (%v) but traced:\n%s", key, err, d)
			}
		}
	}
}

// dead returns w's destroyed (closed, deallocated, deregistered, acked)
// object of type name, if the type has one. On a world without objects it
// only reports whether the type has one.
func (w *badWorld) dead(name string) (reflect.Value, bool) {
	var v any
	switch name {
	case "Context":
		v = w.deadCtx
	case "PD":
		v = w.deadPD
	case "XRCD":
		v = w.deadXRCD
	case "DM":
		v = w.deadDM
	case "MR":
		v = w.deadMR
	case "MW":
		v = w.deadMW
	case "AH":
		v = w.deadAH
	case "CQ":
		v = w.deadCQ
	case "CompChannel":
		v = w.deadCh
	case "QP":
		v = w.deadQP
	case "SRQ":
		v = w.deadSRQ
	case "AsyncQueue":
		v = sim.EngineAsyncQueue(w.deadCtx)
	case "AsyncEvent":
		// An acked event, with every other event of the context acked
		// too: the queue counts acks as libibverbs does, per object (per
		// queue for port events), so while another is unacked a second
		// Ack of this one is counted for that one and cannot be seen.
		if w.f != nil {
			badNoErr(w.ev.Ack())
		}
		v = w.deadEv
	case "Fault":
		v = w.deadFault
	case "CMChannel":
		v = w.deadCMCh
	case "CMID":
		v = w.deadCMID
	case "CMEvent":
		v = w.deadCMEv
	default:
		return reflect.Value{}, false
	}
	return reflect.ValueOf(v), true
}

// testBadDead calls every method of every type that can be destroyed on a
// destroyed object, with zero arguments, each in a fresh world. A
// destroyed object can change nothing: whatever the call returns, the
// world's snapshot must not move and the trace may only gain refusals;
// an error must carry an errno.
func testBadDead(t *testing.T, pairs *badPairs) {
	for _, bt := range badTypes {
		if _, ok := (&badWorld{}).dead(bt.name); !ok {
			continue
		}
		for _, m := range methodsOf(bt.typ) {
			key := bt.name + "." + m.Name
			pairs.add("dead")
			w := newBadWorld(t)
			recv, _ := w.dead(bt.name)
			before, n := w.snapshot(), len(w.f.TraceRecords())
			out, p, blocked := callZero(m, recv, sim.EngineCQ(w.cq).Domain())
			switch {
			case p != nil:
				t.Errorf("%s on a destroyed receiver panicked: %v", key, p)
				continue
			case blocked:
				t.Errorf("%s on a destroyed receiver blocked", key)
				continue
			}
			err, _ := lastError(out)
			if err != nil && errnoOf(err) == 0 {
				t.Errorf("%s on a destroyed receiver: error %q carries no syscall.Errno", key, err)
			}
			if d := diffSnapshots(before, w.snapshot()); d != "" {
				t.Errorf("%s on a destroyed receiver (error %v) changed the world:\n%s", key, err, d)
			}
			if d := w.checkTrace(n); d != "" {
				t.Errorf("%s on a destroyed receiver (error %v) traced:\n%s", key, err, d)
			}
		}
	}
}

// testBadCases runs the hand-written cases of badTable.
func testBadCases(t *testing.T, pairs *badPairs) {
	keys := make([]string, 0, len(badTable))
	for k := range badTable {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, key := range keys {
		for _, c := range badTable[key].cases {
			t.Run(key+"/"+c.in, func(t *testing.T) {
				pairs.add("cases")
				runBadCase(t, c)
			})
		}
	}
}

func runBadCase(t *testing.T, c badCase) {
	w := newBadWorld(t)
	before, n := w.snapshot(), len(w.f.TraceRecords())
	var err error
	p, blocked := guard(func() { err = c.call(w) })
	switch {
	case p != nil:
		t.Fatalf("panicked: %v", p)
	case blocked:
		t.Fatal("blocked")
	}
	switch got := errnoOf(err); {
	case c.want == 0 && err != nil:
		t.Errorf("error %v, want none", err)
	case c.want != 0 && got != c.want:
		t.Errorf("error %v (errno %v), want %s", err, got, errnoName(c.want))
	}
	for _, p := range w.problems {
		t.Error(p)
	}
	if c.moves {
		return
	}
	if d := diffSnapshots(before, w.snapshot()); d != "" {
		t.Errorf("the world changed:\n%s", d)
	}
	if d := w.checkTrace(n); err != nil && d != "" {
		t.Errorf("the trace gained records other than the refusal:\n%s", d)
	}
}

func errnoName(e syscall.Errno) string {
	if e == 0 {
		return "no error"
	}
	return fmt.Sprintf("%d (%v)", int(e), e)
}

// cancelled is a context that is already done.
func cancelled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}
