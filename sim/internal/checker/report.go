package checker

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/verbsim/verbsim/sim/check"
)

// site is where the program was when it did something: its thread, the
// virtual time, and the program counters of its stack (symbolized only
// when a finding names the site).
type site struct {
	thread uint64
	tick   uint64
	pcs    []uintptr
}

// maxFrames bounds the stack a site keeps.
const maxFrames = 32

// here records where the calling thread is, without the virtual time
// (which needs the domain lock; see hereLocked).
func (c *Checker) here() site {
	s := site{}
	if c.cfg.Thread != nil {
		s.thread = c.cfg.Thread()
	} else {
		s.thread = goroutineID()
	}
	if c.cfg.Callers != nil {
		s.pcs = c.cfg.Callers()
		return s
	}
	var pcs [maxFrames]uintptr
	n := runtime.Callers(3, pcs[:])
	s.pcs = append([]uintptr(nil), pcs[:n]...)
	return s
}

// hereQuick is hereLocked for the sites a hot verb makes on every call
// (a posted request's): in Go without the goroutine's ID, which costs a
// walk of its stack, so a related site of a post names no thread.
func (c *Checker) hereQuick() site {
	if c.cfg.Thread != nil {
		return c.hereLocked()
	}
	var pcs [maxFrames]uintptr
	n := runtime.Callers(2, pcs[:])
	return site{tick: c.env.Now(), pcs: append([]uintptr(nil), pcs[:n]...)}
}

// hereLocked is here with the virtual time. The domain lock is held.
func (c *Checker) hereLocked() site {
	s := c.here()
	s.tick = c.env.Now()
	return s
}

// goroutineID returns the ID of the calling goroutine, which the first
// line of its stack trace names ("goroutine 7 [running]:").
func goroutineID() uint64 {
	var buf [64]byte
	s := strings.TrimPrefix(string(buf[:runtime.Stack(buf[:], false)]), "goroutine ")
	if i := strings.IndexByte(s, ' '); i > 0 {
		s = s[:i]
	}
	id, _ := strconv.ParseUint(s, 10, 64)
	return id
}

// frames symbolizes s: the Go stack without verbsim's frames, or what
// Config.Symbolize makes of the front end's program counters.
func (c *Checker) frames(s site) []check.Frame {
	if len(s.pcs) == 0 {
		return nil
	}
	if c.cfg.Symbolize != nil {
		return c.cfg.Symbolize(s.pcs)
	}
	return goFrames(s.pcs)
}

// enginePrefixes are the functions of verbsim's engine and its sanitizer,
// which a finding's stack leaves out until the first frame of the program.
var enginePrefixes = []string{
	"runtime.",
	"github.com/verbsim/verbsim/sim.",
	"github.com/verbsim/verbsim/sim/internal/",
	"github.com/verbsim/verbsim/sim/check.",
	"github.com/verbsim/verbsim/internal/domain.",
}

// goFrames symbolizes Go program counters, leaving out the leading frames
// of verbsim's engine: the first frame is the program's call of the verb.
func goFrames(pcs []uintptr) []check.Frame {
	it := runtime.CallersFrames(pcs)
	var out []check.Frame
	leading := true
	for {
		f, more := it.Next()
		if leading && isEngine(f) {
			if !more {
				break
			}
			continue
		}
		leading = false
		if f.Function != "" || f.File != "" {
			out = append(out, check.Frame{Func: f.Function, File: f.File, Line: f.Line})
		}
		if !more || len(out) == 16 {
			break
		}
	}
	return out
}

// isEngine reports whether f is a frame of verbsim's engine. A test file's
// frame is the program's, whatever its package.
func isEngine(f runtime.Frame) bool {
	if strings.HasSuffix(f.File, "_test.go") {
		return false
	}
	for _, p := range enginePrefixes {
		if strings.HasPrefix(f.Function, p) {
			return true
		}
	}
	return false
}

// related renders an earlier site for a finding.
func (c *Checker) related(what string, s site) check.Related {
	return check.Related{What: what, Tick: s.tick, Thread: s.thread, Stack: c.frames(s)}
}

// object renders r for a finding: its trace name and the program's
// cookie.
func (c *Checker) object(r *record) check.Object {
	return c.objectOf(r.obj)
}

// objectOf renders any object of the fabric for a finding.
func (c *Checker) objectOf(obj any) check.Object {
	o := check.Object{Name: c.env.Name(obj)}
	if k := c.env.Cookie(obj); k != nil {
		o.Cookie = cookie(c.env.Kind(obj), k)
	}
	return o
}

// cookie renders a program's cookie: what its CheckCookie method says (the
// drop-in library's C pointer), else its value, kept short.
func cookie(kind string, k any) string {
	name := "context"
	switch kind {
	case "cq":
		name = "cq_context"
	case "qp":
		name = "qp_context"
	case "srq":
		name = "srq_context"
	}
	var v string
	if s, ok := k.(interface{ CheckCookie() string }); ok {
		v = s.CheckCookie()
	} else {
		v = fmt.Sprintf("%v", k)
	}
	if len(v) > 40 {
		v = v[:37] + "..."
	}
	return name + " " + v
}

// finding reports f, found now at site at, under the domain lock.
func (c *Checker) finding(f check.Finding, at site) {
	f.Tick = c.env.Now()
	f.Thread = at.thread
	f.Stack = c.frames(at)
	c.rep.report(f)
}

// pendingFinding is a finding Entering made, reported once the domain
// lock is held.
type pendingFinding struct {
	kind pendingKind
	r    *record
	verb string
	at   site
}

type pendingKind uint8

const (
	pendingUse  pendingKind = iota + 1 // a verb on a destroyed object
	pendingPoll                        // two polls of one CQ at once
)

// flushLocked reports the pending findings. The domain lock is held.
func (c *Checker) flushLocked() {
	if len(c.pending) == 0 {
		return
	}
	p := c.pending
	c.pending = nil
	for _, f := range p {
		switch f.kind {
		case pendingUse:
			c.useAfterDestroyLocked(f.r, f.verb, f.at)
		case pendingPoll:
			c.concurrentPollLocked(f.r, f.at)
		}
	}
}

// reporter writes the findings: one line each to Config.Output, one JSON
// object each to Config.Log, each to Config.Report; it drops repeats and
// suppressed findings and halts when asked to.
type reporter struct {
	cfg     check.Config
	out     io.Writer
	seen    map[string]bool
	sum     check.Summary
	halting bool
}

func (p *reporter) init(cfg check.Config, on check.Set) {
	p.cfg = cfg
	p.out = cfg.Output
	if p.out == nil {
		p.out = os.Stderr
	}
	p.seen = map[string]bool{}
	p.sum = check.Summary{Checks: on, ByRule: map[string]int{}}
}

// key identifies a finding for repeats: the same rule, on the same first
// object, at the same place, is reported once.
func key(f check.Finding) string {
	k := f.Rule + "|" + f.Verb
	if len(f.Objects) > 0 {
		k += "|" + f.Objects[0].Name
	}
	if len(f.Stack) > 0 {
		k += "|" + f.Stack[0].Site()
	}
	return k
}

func (p *reporter) report(f check.Finding) {
	if p.halting {
		return
	}
	k := key(f)
	if p.seen[k] {
		return
	}
	p.seen[k] = true
	for _, s := range p.cfg.Suppress {
		if s.Matches(f) {
			p.sum.Suppressed++
			return
		}
	}
	p.sum.Findings++
	p.sum.ByRule[f.Rule]++
	fmt.Fprintln(p.out, f.String())
	if p.cfg.Log != nil {
		if b, err := json.Marshal(f); err == nil {
			p.cfg.Log.Write(append(b, '\n'))
		}
	}
	if p.cfg.Report != nil {
		p.cfg.Report(f)
	}
	if p.cfg.HaltOnError {
		p.halting = true
		p.writeSummary(p.summary())
		if p.cfg.Halt != nil {
			p.cfg.Halt()
			return
		}
		os.Exit(check.ExitCode)
	}
}

// summary returns a copy of the counts.
func (p *reporter) summary() check.Summary {
	s := p.sum
	s.ByRule = make(map[string]int, len(p.sum.ByRule))
	for r, n := range p.sum.ByRule {
		s.ByRule[r] = n
	}
	return s
}

// writeSummary writes s to the output, and to the log as a record of its
// own ({"summary": ...}).
func (p *reporter) writeSummary(s check.Summary) {
	fmt.Fprintln(p.out, s.String())
	if p.cfg.Log != nil {
		if b, err := json.Marshal(struct {
			Summary check.Summary `json:"summary"`
		}{s}); err == nil {
			p.cfg.Log.Write(append(b, '\n'))
		}
	}
}
