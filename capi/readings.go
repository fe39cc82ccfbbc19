package main

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/verbsim/verbsim/verbs"
)

// applyReadings changes the readings of r that VERBSIM_READINGS names: a
// comma-separated list of verbs.Readings field names, each setting that
// reading, or clearing it when prefixed with '-'; e.g.
// "ReregKeepsKeys,ResetPurgesCQ,-NoXRC". An empty spec changes nothing.
// A name that is not a reading is an error naming the valid ones.
func applyReadings(r *verbs.Readings, spec string) error {
	v := reflect.ValueOf(r).Elem()
	for _, item := range strings.Split(spec, ",") {
		name := strings.TrimSpace(item)
		if name == "" {
			continue
		}
		on := true
		if rest, ok := strings.CutPrefix(name, "-"); ok {
			name, on = rest, false
		}
		f := v.FieldByName(name)
		if !f.IsValid() || f.Kind() != reflect.Bool || !f.CanSet() {
			var names []string
			for i := 0; i < v.NumField(); i++ {
				if v.Field(i).Kind() == reflect.Bool {
					names = append(names, v.Type().Field(i).Name)
				}
			}
			return fmt.Errorf("VERBSIM_READINGS: %q is not a reading; want a comma-separated list of %s, each optionally prefixed with '-'", name, strings.Join(names, ", "))
		}
		f.SetBool(on)
	}
	return nil
}
