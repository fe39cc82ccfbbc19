// Package trace records what a simulated fabric does: every verb call that
// changes something and every engine event, each as one typed record
// (Record: its kind, verb or event, objects, errno, work completion,
// packet and NAK kind, timer, fault, time), and renders the records as a
// compact text timeline or as JSON lines.
//
// The text is a view of the fields, for people; tools read the fields.
// A test that wants to see an RNR NAK looks for a record whose NAK is
// NAKRNR, not for words in its text.
//
// A Log is not safe for concurrent use by itself; the fabric that owns it
// adds records under its lock. Read it (Records, WriteText, WriteJSON) when
// the fabric is idle, or through the fabric's own accessors.
package trace

import (
	"bufio"
	"encoding/json"
	"io"
	"syscall"

	"github.com/verbsim/verbsim/sim/verr"
)

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
		if _, err := bw.WriteString(r.String() + "\n"); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// WriteJSON writes one JSON object per record and line (JSON lines), in
// the shape Record.MarshalJSON describes.
func (l *Log) WriteJSON(w io.Writer) error {
	if l == nil || w == nil {
		return errNil("trace.WriteJSON")
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
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
