//go:build !race

package testprofiles

// race says whether the race detector is on.
const race = false
