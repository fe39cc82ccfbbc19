// Package trace records what a simulated fabric does: every verb call that
// changes something and every engine event, each as one structured record,
// and renders the records as a compact text timeline or as JSON lines.
//
// A Log is not safe for concurrent use by itself; the fabric that owns it
// adds records under its lock. Read it (Records, WriteText, WriteJSON) when
// the fabric is idle, or through the fabric's own accessors.
package trace

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"syscall"

	"github.com/verbsim/verbsim/sim/verr"
)

// Record is one thing that happened.
type Record struct {
	Tick   uint64 `json:"tick"`          // virtual time
	Seq    uint64 `json:"seq"`           // order among all records of the fabric
	Object string `json:"object"`        // what it happened to, e.g. "dev0/qp 0x11"
	What   string `json:"what"`          // what happened, e.g. "send SEND psn=0 len=64"
	Why    string `json:"why,omitempty"` // the cause or the rule, e.g. "fault: drop"
}

// String renders the record on one line:
//
//	t=4096 #12 dev0/qp 0x11: retransmit (XFER-10: ACK timeout)
func (r Record) String() string {
	if r.Why == "" {
		return fmt.Sprintf("t=%d #%d %s: %s", r.Tick, r.Seq, r.Object, r.What)
	}
	return fmt.Sprintf("t=%d #%d %s: %s (%s)", r.Tick, r.Seq, r.Object, r.What, r.Why)
}

// Log is an append-only list of records, bounded by Limit. On a nil *Log
// Add and Reset do nothing, Len and Records return zero values, and the
// writers return EINVAL, as a nil writer does (package sim's convention).
type Log struct {
	// Limit bounds the records kept; beyond it the oldest are overwritten
	// (a ring) and counted in Dropped. Zero means no bound.
	Limit   int
	Dropped uint64
	records []Record
	start   int // index of the oldest record once the ring is full
}

// Add appends r.
func (l *Log) Add(r Record) {
	if l == nil {
		return
	}
	if l.Limit > 0 && len(l.records) >= l.Limit {
		l.records[l.start] = r
		l.start = (l.start + 1) % len(l.records)
		l.Dropped++
		return
	}
	l.records = append(l.records, r)
}

// Len returns the number of records kept.
func (l *Log) Len() int {
	if l == nil {
		return 0
	}
	return len(l.records)
}

// Records returns a copy of the records kept, oldest first.
func (l *Log) Records() []Record {
	if l == nil {
		return nil
	}
	out := make([]Record, 0, len(l.records))
	out = append(out, l.records[l.start:]...)
	return append(out, l.records[:l.start]...)
}

// Reset forgets every record.
func (l *Log) Reset() {
	if l != nil {
		l.records, l.start, l.Dropped = l.records[:0], 0, 0
	}
}

// WriteText writes one line per record (Record.String).
func (l *Log) WriteText(w io.Writer) error {
	if l == nil || w == nil {
		return errNil("trace.WriteText")
	}
	bw := bufio.NewWriter(w)
	for _, r := range l.Records() {
		if _, err := fmt.Fprintln(bw, r.String()); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// WriteJSON writes one JSON object per record and line (JSON lines).
func (l *Log) WriteJSON(w io.Writer) error {
	if l == nil || w == nil {
		return errNil("trace.WriteJSON")
	}
	enc := json.NewEncoder(w)
	for _, r := range l.Records() {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}

// errNil is the error of a writer called on a nil log or with a nil writer.
func errNil(verb string) error {
	return verr.New(verb, syscall.EINVAL, "nil log or writer")
}
