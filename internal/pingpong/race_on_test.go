//go:build race

package pingpong

// raceEnabled reports whether the test binary was built with -race; see
// roundTrips.
const raceEnabled = true
