package verbs

import (
	"reflect"
	"strings"
	"testing"
)

// TestReadingTable checks that the table of readings covers every field of
// Readings, in declaration order, each a bool that Get and Set reach, with
// rules and both behaviours said; and that String names every reading.
func TestReadingTable(t *testing.T) {
	if s := (Readings{}).String(); s != "man-pages" {
		t.Errorf("zero Readings: %q, want man-pages", s)
	}
	typ := reflect.TypeFor[Readings]()
	if typ.NumField() != int(numReadings) {
		t.Fatalf("Readings has %d fields, the table %d readings", typ.NumField(), numReadings)
	}
	for i := range typ.NumField() {
		f, r := typ.Field(i), Reading(i)
		if f.Type.Kind() != reflect.Bool {
			t.Errorf("field %s is a %v; readings are bools", f.Name, f.Type)
			continue
		}
		if r.String() != f.Name {
			t.Errorf("reading %d is %q, field %d is %s", i, r, i, f.Name)
		}
		if r.Rules() == "" || r.Behaviour(true) == "" || r.Behaviour(false) == "" || r.Behaviour(true) == r.Behaviour(false) {
			t.Errorf("%s: rules %q, behaviours %q / %q", r, r.Rules(), r.Behaviour(true), r.Behaviour(false))
		}
		var rs Readings
		rs.SetReading(r, true)
		if !reflect.ValueOf(rs).Field(i).Bool() || !rs.Get(r) {
			t.Errorf("Set(%s) does not set field %s", r, f.Name)
		}
		if s := rs.String(); s != f.Name {
			t.Errorf("Readings{%s: true}.String() = %q", f.Name, s)
		}
		if rs.On() != ReadingSet(1)<<i {
			t.Errorf("Readings{%s: true}.On() = %v", f.Name, rs.On())
		}
		if got, err := ParseReading(f.Name); err != nil || got != r {
			t.Errorf("ParseReading(%q) = %v, %v", f.Name, got, err)
		}
	}
	if got := len(AllReadings()); got != typ.NumField() {
		t.Errorf("AllReadings has %d, want %d", got, typ.NumField())
	}
}

// TestApplyReadings checks VERBSIM_READINGS' syntax: set, clear with '-',
// blanks skipped, and an unknown name is an error listing the readings
// that changes nothing.
func TestApplyReadings(t *testing.T) {
	r := Readings{NoXRC: true}
	if err := r.Apply(" ReregKeepsKeys, ,-NoXRC,ResetPurgesCQ"); err != nil {
		t.Fatal(err)
	}
	if want := (Readings{ReregKeepsKeys: true, ResetPurgesCQ: true}); r != want {
		t.Errorf("Apply: %v, want %v", r, want)
	}
	before := r
	err := r.Apply("NoUD,Nonsense")
	if err == nil || !strings.Contains(err.Error(), `"Nonsense" is not a reading`) || !strings.Contains(err.Error(), "OverrunDrops, DestroyBusyOnUnacked") {
		t.Errorf("Apply(Nonsense): %v", err)
	}
	if r != before {
		t.Errorf("a failed Apply changed the readings: %v", r)
	}
	if _, err := ParseReading("-NoUD"); err == nil {
		t.Error("ParseReading(-NoUD) succeeded")
	}
}

// TestReadingSet checks the set's operations and its nil receiver.
func TestReadingSet(t *testing.T) {
	var s ReadingSet
	s.Add(ReadingNoUD)
	s.Add(ReadingOverrunDrops)
	s.Add(ReadingNoUD)
	s.Add(numReadings) // ignored
	if s.Len() != 2 || !s.Has(ReadingNoUD) || s.Has(ReadingNoUC) || s.String() != "OverrunDrops NoUD" {
		t.Errorf("set %v (len %d)", s, s.Len())
	}
	var nilSet *ReadingSet
	nilSet.Add(ReadingNoUD) // must not panic
	if (ReadingSet(0)).String() != "none" || Reading(200).String() != "Reading(200)" {
		t.Error("empty set or unknown reading misnamed")
	}
}

// TestReadingsSet checks that Set turns readings on and off by name and
// refuses a name that is no reading, naming the readings there are.
func TestReadingsSet(t *testing.T) {
	r := Readings{NoXRC: true}
	if err := r.Set("ExactCQE", "-NoXRC", "ResetToErr"); err != nil {
		t.Fatal(err)
	}
	if want := (Readings{ExactCQE: true, ResetToErr: true}); r != want {
		t.Errorf("got %v, want %v", r, want)
	}
	err := r.Set("NoSuchReading")
	if err == nil || !strings.Contains(err.Error(), "NoSuchReading") || !strings.Contains(err.Error(), "OverrunDrops") {
		t.Errorf("Set(NoSuchReading) = %v; want an error naming it and the readings", err)
	}
	if err := r.Set("names"); err == nil {
		t.Errorf("Set(names) accepted a method's name")
	}
}
