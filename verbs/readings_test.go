package verbs

import (
	"reflect"
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
