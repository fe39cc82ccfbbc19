package main

import (
	"fmt"
	"strings"

	"github.com/verbsim/verbsim/verbs"
)

// applyReadings changes the readings of r that VERBSIM_READINGS names: a
// comma-separated list of verbs.Readings field names, each setting that
// reading, or clearing it when prefixed with '-'; e.g.
// "ReregKeepsKeys,ResetPurgesCQ,-NoXRC". An empty spec changes nothing.
// A name that is not a reading is an error naming the valid ones.
func applyReadings(r *verbs.Readings, spec string) error {
	var names []string
	for _, item := range strings.Split(spec, ",") {
		if name := strings.TrimSpace(item); name != "" {
			names = append(names, name)
		}
	}
	if err := r.Set(names...); err != nil {
		return fmt.Errorf("VERBSIM_READINGS: %v", err)
	}
	return nil
}
