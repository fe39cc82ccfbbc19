package verbs

import (
	"reflect"
	"strings"
	"testing"
)

// TestReadingsString checks that String names every reading: each field of
// Readings is a bool, and setting it alone makes String return its name.
func TestReadingsString(t *testing.T) {
	if s := (Readings{}).String(); s != "man-pages" {
		t.Errorf("zero Readings: %q, want man-pages", s)
	}
	typ := reflect.TypeFor[Readings]()
	if n := len((Readings{}).names()); n != typ.NumField() {
		t.Errorf("String names %d readings, Readings has %d fields", n, typ.NumField())
	}
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Type.Kind() != reflect.Bool {
			t.Errorf("field %s is a %v; String handles bools only", f.Name, f.Type)
			continue
		}
		var r Readings
		reflect.ValueOf(&r).Elem().Field(i).SetBool(true)
		if s := r.String(); s != f.Name {
			t.Errorf("Readings{%s: true}.String() = %q", f.Name, s)
		}
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
