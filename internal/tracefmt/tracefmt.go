// Package tracefmt renders a fabric's trace (package sim/trace) for people
// and tools: virtual time with its unit, runs of identical records
// collapsed into one line with a count, records filtered by object and by
// kind, as text or as JSON lines. It reads the records' fields (their
// Kind, their objects); it never parses their text.
//
// sim's own writers (trace.Log.WriteText, sim.Fabric.WriteTrace) stay as
// they are, one record per line with the raw tick count, because golden
// tests read them; this package is what verbsim prints.
//
// A text line reads
//
//	t=1.832917 ms #17 vsim0/qp 0x11: post_recv: 1 of 1 WR(s) posted ×503 (#17…#519)
//
// and a JSON line is the record's own JSON (trace.Record.MarshalJSON) with,
// for a run of more than one record, count, last_seq and last_tick:
//
//	{"tick":1832917,"seq":17,"kind":"verb","object":"vsim0/qp 0x11","name":"post_recv","detail":"1 of 1 WR(s) posted","what":"post_recv: 1 of 1 WR(s) posted","count":503,"last_seq":519,"last_tick":1832917}
package tracefmt

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/verbsim/verbsim/sim/trace"
)

// Filter selects records by object and by kind. The zero Filter selects
// every record.
type Filter struct {
	objects []string            // glob patterns; any may match
	kinds   map[trace.Kind]bool // nil: every kind
	text    string
}

// ParseFilter parses a filter of comma-separated terms, each key=values
// with the values separated by |:
//
//	obj=a/qp*|b/cq*,kind=packet|completion
//
// obj= takes patterns of the record's object in which * stands for any
// text and ? for one character; a pattern also matches every object under
// it ("vsim0" matches "vsim0/qp 0x11"). kind= takes names of kinds
// (trace.Kind: verb, packet, completion, event, timer, state, fault,
// other). Terms
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
				k, ok := trace.ParseKind(v)
				if !ok {
					return Filter{}, fmt.Errorf("trace filter %q: unknown kind %q (want %s)", s, v, kindList())
				}
				if f.kinds == nil {
					f.kinds = map[trace.Kind]bool{}
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
	for _, k := range trace.Kinds() {
		s = append(s, k.String())
	}
	return strings.Join(s, "|")
}

// String returns the filter as ParseFilter read it.
func (f Filter) String() string { return f.text }

// Match reports whether r passes the filter.
func (f Filter) Match(r trace.Record) bool {
	if f.kinds != nil && !f.kinds[r.Kind] {
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

// Run is one line of output: a record, or a run of identical ones (the
// same in every field but time and sequence number, one after the other
// once filtered).
type Run struct {
	First, Last trace.Record
	Count       int
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
			if Same(&last.Last, &r) {
				last.Last = r
				last.Count++
				continue
			}
		}
		out = append(out, Run{First: r, Last: r, Count: 1})
	}
	return out
}

// Same reports whether a and b tell the same thing: every field but Tick
// and Seq is equal, and so are the groups they point to.
func Same(a, b *trace.Record) bool {
	return a.Kind == b.Kind && a.Object == b.Object && a.Name == b.Name && a.Peer == b.Peer &&
		a.Detail == b.Detail && a.Errno == b.Errno && a.Why == b.Why && a.Rule == b.Rule &&
		a.Timer == b.Timer && a.Fault == b.Fault &&
		same(a.WC, b.WC) && same(a.Packet, b.Packet) && same(a.Async, b.Async)
}

// same reports whether two optional groups are both absent or equal.
func same[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
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
	fmt.Fprintf(&b, "t=%s #%d %s", FormatTime(r.First.Tick), r.First.Seq, r.First.Line())
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

// appendJSON appends the run as one JSON object: its first record's JSON,
// and for a run of more than one record count, last_seq and last_tick.
func (r Run) appendJSON(b []byte) ([]byte, error) {
	j, err := r.First.MarshalJSON()
	if err != nil {
		return b, err
	}
	if r.Count <= 1 {
		return append(b, j...), nil
	}
	b = append(b, bytes.TrimSuffix(j, []byte("}"))...)
	b = append(b, `,"count":`...)
	b = strconv.AppendInt(b, int64(r.Count), 10)
	b = append(b, `,"last_seq":`...)
	b = strconv.AppendUint(b, r.Last.Seq, 10)
	b = append(b, `,"last_tick":`...)
	b = strconv.AppendUint(b, r.Last.Tick, 10)
	return append(b, '}'), nil
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
		var line []byte
		for _, r := range runs {
			var err error
			if line, err = r.appendJSON(line[:0]); err != nil {
				return err
			}
			if _, err := bw.Write(append(line, '\n')); err != nil {
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
