package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/verbsim/verbsim/internal/tracefmt"
	"github.com/verbsim/verbsim/sim/trace"
)

// traceFlags are the flags of the commands that print the engine's trace:
// where to, which records, in which form (package internal/tracefmt).
type traceFlags struct {
	path, filterText, formatText string

	filter tracefmt.Filter
	format tracefmt.Format
}

// register defines -trace, -trace-filter and -trace-format on fs; what
// says what -trace records.
func (t *traceFlags) register(fs *flag.FlagSet, what string) {
	fs.StringVar(&t.path, "trace", "", "write "+what+" to this `file`; - for standard output")
	fs.StringVar(&t.filterText, "trace-filter", "", "keep only the trace records that match: obj=PATTERN|...,kind=KIND|... (* matches any text; kinds: verb, packet, completion, event, timer, state, fault, other)")
	fs.StringVar(&t.formatText, "trace-format", "text", "trace format: text (one line per record, time with its unit, runs of identical records counted ×N) or json (JSON lines)")
}

// check parses the filter and the format; it is an error to give them
// without -trace.
func (t *traceFlags) check() error {
	var err error
	if t.filter, err = tracefmt.ParseFilter(t.filterText); err != nil {
		return err
	}
	if t.format, err = tracefmt.ParseFormat(t.formatText); err != nil {
		return err
	}
	if t.path == "" && (t.filterText != "" || t.formatText != "text") {
		return fmt.Errorf("-trace-filter and -trace-format need -trace FILE (or -trace - for standard output)")
	}
	return nil
}

// on reports whether a trace was asked for.
func (t *traceFlags) on() bool { return t.path != "" }

// write writes recs to the -trace file, or to stdout for "-"; dropped is the
// number of older records a bounded log overwrote.
func (t *traceFlags) write(stdout io.Writer, recs []trace.Record, dropped uint64) error {
	return t.writeAll(stdout, []tracePart{{recs: recs, dropped: dropped}})
}

// tracePart is the trace of one run; label, when set, heads it in the text
// form ("# tour/06-lost-wakeup.scen, profile default").
type tracePart struct {
	label   string
	recs    []trace.Record
	dropped uint64
}

// writeAll writes the traces of several runs, one after the other, to the
// -trace file, or to stdout for "-".
func (t *traceFlags) writeAll(stdout io.Writer, parts []tracePart) (err error) {
	w := stdout
	if t.path != "-" {
		f, err := os.Create(t.path)
		if err != nil {
			return err
		}
		defer func() {
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}()
		w = f
	}
	for _, p := range parts {
		if p.label != "" && t.format == tracefmt.Text {
			if _, err := fmt.Fprintf(w, "# %s\n", p.label); err != nil {
				return err
			}
		}
		if err := tracefmt.Write(w, p.recs, p.dropped, t.filter, t.format); err != nil {
			return err
		}
	}
	return nil
}
