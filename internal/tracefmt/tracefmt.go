// Package tracefmt renders a fabric's trace (package sim/trace) for people
// and tools: virtual time with its unit, runs of identical records
// collapsed into one line with a count, records filtered by object and by
// kind, as text or as JSON lines.
//
// sim's own writers (trace.Log.WriteText, sim.Fabric.WriteTrace) stay as
// they are, one record per line with the raw tick count, because golden
// tests read them; this package is what verbsim prints.
//
// A text line reads
//
//	t=1.832917 ms #17 vsim0/qp 0x11: post_recv: 1 of 1 WR(s) posted ×503 (#17…#519)
//
// and a JSON line
//
//	{"time_ns":1832917,"seq":17,"object":"vsim0/qp 0x11","kind":"verb","what":"post_recv: 1 of 1 WR(s) posted","count":503,"last_seq":519,"last_time_ns":1832917}
package tracefmt

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/verbsim/verbsim/sim/trace"
)

// Kind is what sort of thing a record tells.
type Kind string

// The kinds of record, in the order Kinds lists them.
const (
	Verb       Kind = "verb"       // a verb the application called: create_qp, post_send, poll_cq, ...
	Packet     Kind = "packet"     // a packet sent, received, dropped, duplicated or delayed, a NAK
	Completion Kind = "completion" // a work completion written into a CQ, or lost to an overrun
	Event      Kind = "event"      // an arm firing, an async event raised, a catastrophic error
	Timer      Kind = "timer"      // a timer armed or fired: ACK timeout, RNR wait, retries exhausted
	State      Kind = "state"      // the engine moved an object to another state (a QP to ERR)
	Fault      Kind = "fault"      // a fault configured or armed, a link taken down or up
	Other      Kind = "other"      // anything else
)

// Kinds returns every kind, in a fixed order.
func Kinds() []Kind {
	return []Kind{Verb, Packet, Completion, Event, Timer, State, Fault, Other}
}

// verbName matches the ibv_ verb names the engine traces its calls by
// (without the ibv_ prefix): open_device, post_recv, req_notify_cq, ...
var verbName = regexp.MustCompile(`^(open|close|alloc|dealloc|reg|rereg|dereg|create|destroy|modify|query|post|poll|req|get|ack|bind|attach|detach|resize)_[a-z_]+\b`)

// prefixes classify the records of the engine by how their text starts.
var prefixes = []struct {
	prefix string
	kind   Kind
}{
	{"send ", Packet}, {"receive ", Packet}, {"drop ", Packet}, {"duplicate ", Packet},
	{"delay ", Packet}, {"UD datagram", Packet}, {"RNR NAK", Packet}, {"responder error", Packet},
	{"completion ", Completion}, {"overrun", Completion}, {"send WR failed", Completion},
	{"arm fired", Event}, {"raise ", Event}, {"catastrophic", Event},
	{"timer fired", Timer}, {"RNR timer", Timer}, {"RNR wait", Timer}, {"ACK timeout", Timer}, {"retries exhausted", Timer},
	{"state ", State},
	{"faults ", Fault}, {"arm fault", Fault}, {"link ", Fault},
}

// KindOf classifies a record by its text.
func KindOf(r trace.Record) Kind {
	for _, p := range prefixes {
		if strings.HasPrefix(r.What, p.prefix) {
			return p.kind
		}
	}
	if verbName.MatchString(r.What) {
		return Verb
	}
	return Other
}

// Filter selects records by object and by kind. The zero Filter selects
// every record.
type Filter struct {
	objects []string      // glob patterns; any may match
	kinds   map[Kind]bool // nil: every kind
	text    string
}

// ParseFilter parses a filter of comma-separated terms, each key=values
// with the values separated by |:
//
//	obj=a/qp*|b/cq*,kind=packet|completion
//
// obj= takes patterns of the record's object in which * stands for any
// text and ? for one character; a pattern also matches every object under
// it ("vsim0" matches "vsim0/qp 0x11"). kind= takes names of Kinds. Terms
// of different keys must all hold; a key given twice adds its values.
func ParseFilter(s string) (Filter, error) {
	f := Filter{text: s}
	if strings.TrimSpace(s) == "" {
		return f, nil
	}
	for _, term := range strings.Split(s, ",") {
		key, vals, ok := strings.Cut(strings.TrimSpace(term), "=")
		if !ok || vals == "" {
			return Filter{}, fmt.Errorf("trace filter %q: %q is not key=value (want obj=PATTERN|... or kind=KIND|...)", s, term)
		}
		for _, v := range strings.Split(vals, "|") {
			if v == "" {
				return Filter{}, fmt.Errorf("trace filter %q: empty value in %q", s, term)
			}
			switch key {
			case "obj", "object":
				f.objects = append(f.objects, v)
			case "kind":
				k := Kind(v)
				if !slices.Contains(Kinds(), k) {
					return Filter{}, fmt.Errorf("trace filter %q: unknown kind %q (want %s)", s, v, kindList())
				}
				if f.kinds == nil {
					f.kinds = map[Kind]bool{}
				}
				f.kinds[k] = true
			default:
				return Filter{}, fmt.Errorf("trace filter %q: unknown key %q (want obj or kind)", s, key)
			}
		}
	}
	return f, nil
}

func kindList() string {
	var s []string
	for _, k := range Kinds() {
		s = append(s, string(k))
	}
	return strings.Join(s, "|")
}

// String returns the filter as ParseFilter read it.
func (f Filter) String() string { return f.text }

// Match reports whether r passes the filter.
func (f Filter) Match(r trace.Record) bool {
	if f.kinds != nil && !f.kinds[KindOf(r)] {
		return false
	}
	if len(f.objects) == 0 {
		return true
	}
	for _, p := range f.objects {
		if glob(p, r.Object) || glob(p+"/*", r.Object) {
			return true
		}
	}
	return false
}

// glob reports whether s matches pattern, where * matches any text
// (slashes included) and ? one character.
func glob(pattern, s string) bool {
	p, t := []rune(pattern), []rune(s)
	// Iterative matching with one backtrack point for the last *.
	pi, ti, star, mark := 0, 0, -1, 0
	for ti < len(t) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == t[ti]):
			pi++
			ti++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, ti
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			ti = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// Run is one line of output: a record, or a run of identical ones (same
// object, text and cause, one after the other once filtered).
type Run struct {
	First, Last trace.Record
	Count       int
	Kind        Kind
}

// Collapse filters recs and folds each run of identical records into one.
func Collapse(recs []trace.Record, f Filter) []Run {
	var out []Run
	for _, r := range recs {
		if !f.Match(r) {
			continue
		}
		if n := len(out); n > 0 {
			last := &out[n-1]
			if last.Last.Object == r.Object && last.Last.What == r.What && last.Last.Why == r.Why {
				last.Last = r
				last.Count++
				continue
			}
		}
		out = append(out, Run{First: r, Last: r, Count: 1, Kind: KindOf(r)})
	}
	return out
}

// FormatTime renders virtual time given in nanoseconds (one tick of the
// default clock) exactly, in the largest unit that keeps it readable:
// 0 ns, 640 ns, 4.096 µs, 1.832917 ms, 1.5 s.
func FormatTime(ns uint64) string {
	switch {
	case ns < 1000:
		return strconv.FormatUint(ns, 10) + " ns"
	case ns < 1000000:
		return strconv.FormatFloat(float64(ns)/1e3, 'f', -1, 64) + " µs"
	case ns < 1000000000:
		return strconv.FormatFloat(float64(ns)/1e6, 'f', -1, 64) + " ms"
	}
	return strconv.FormatFloat(float64(ns)/1e9, 'f', -1, 64) + " s"
}

// String renders the run on one line.
func (r Run) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "t=%s #%d %s: %s", FormatTime(r.First.Tick), r.First.Seq, r.First.Object, r.First.What)
	if r.First.Why != "" {
		fmt.Fprintf(&b, " (%s)", r.First.Why)
	}
	if r.Count > 1 {
		fmt.Fprintf(&b, " ×%d (#%d…#%d", r.Count, r.First.Seq, r.Last.Seq)
		if r.Last.Tick != r.First.Tick {
			fmt.Fprintf(&b, ", until t=%s", FormatTime(r.Last.Tick))
		}
		b.WriteString(")")
	}
	return b.String()
}

// Format is an output format of Write.
type Format string

// The formats.
const (
	Text Format = "text" // one line per run (Run.String), and a summary line
	JSON Format = "json" // one JSON object per run and line
)

// ParseFormat checks a format's name.
func ParseFormat(s string) (Format, error) {
	switch Format(s) {
	case Text, JSON:
		return Format(s), nil
	}
	return "", fmt.Errorf("trace format %q: want text or json", s)
}

// jsonRun is a run as a JSON line. Count, LastSeq and LastTimeNS appear
// only for a run of more than one record.
type jsonRun struct {
	TimeNS     uint64 `json:"time_ns"`
	Seq        uint64 `json:"seq"`
	Object     string `json:"object"`
	Kind       Kind   `json:"kind"`
	What       string `json:"what"`
	Why        string `json:"why,omitempty"`
	Count      int    `json:"count,omitempty"`
	LastSeq    uint64 `json:"last_seq,omitempty"`
	LastTimeNS uint64 `json:"last_time_ns,omitempty"`
}

// Write writes the records recs that pass f in format, runs of identical
// records collapsed. dropped, the number of older records a bounded log
// overwrote, is said first when not zero. The text form ends with a line
// counting the records and the lines; the JSON form is JSON lines only.
func Write(w io.Writer, recs []trace.Record, dropped uint64, f Filter, format Format) error {
	runs := Collapse(recs, f)
	bw := bufio.NewWriter(w)
	switch format {
	case JSON:
		enc := json.NewEncoder(bw)
		enc.SetEscapeHTML(false)
		for _, r := range runs {
			j := jsonRun{TimeNS: r.First.Tick, Seq: r.First.Seq, Object: r.First.Object, Kind: r.Kind, What: r.First.What, Why: r.First.Why}
			if r.Count > 1 {
				j.Count, j.LastSeq, j.LastTimeNS = r.Count, r.Last.Seq, r.Last.Tick
			}
			if err := enc.Encode(j); err != nil {
				return err
			}
		}
	default:
		if dropped > 0 {
			fmt.Fprintf(bw, "# %d older records were overwritten\n", dropped)
		}
		shown := 0
		for _, r := range runs {
			shown += r.Count
			if _, err := fmt.Fprintln(bw, r.String()); err != nil {
				return err
			}
		}
		fmt.Fprintf(bw, "# %d of %d records", shown, len(recs))
		if f.String() != "" {
			fmt.Fprintf(bw, " (filter %s)", f.String())
		}
		fmt.Fprintf(bw, " in %d lines; runs of identical records are counted ×N; time is virtual\n", len(runs))
	}
	return bw.Flush()
}
