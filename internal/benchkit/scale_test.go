package benchkit

import (
	"testing"

	"github.com/verbsim/verbsim/sim"
)

// TestScaleTiny runs the scale run with a few pairs in both modes and
// checks that every message completed; it asserts nothing about time.
func TestScaleTiny(t *testing.T) {
	for _, mode := range []sim.Mode{sim.Auto, sim.Background} {
		for _, c := range []ScaleConfig{{Pairs: 10, Msgs: 6, Workers: 3}, {Pairs: 1, Total: 9, Workers: 4}, {Pairs: 70, Msgs: 2, Workers: 2}} {
			r, err := Scale(sim.Config{Mode: mode}, c)
			if err != nil {
				t.Fatalf("mode %v, %+v: %v", mode, c, err)
			}
			per := c.Msgs
			if c.Total > 0 {
				per = (c.Total + c.Pairs - 1) / c.Pairs
			}
			want := int64(c.Pairs * (per + per%2))
			if r.Messages != want || r.Sends != want {
				t.Errorf("mode %v, %+v: %d messages, %d sends; want %d", mode, c, r.Messages, r.Sends, want)
			}
			if r.Workers != min(c.Workers, c.Pairs) || r.HeapPeak == 0 || r.SetupBytes <= 0 {
				t.Errorf("mode %v, %+v: %+v", mode, c, r)
			}
		}
	}
	if _, err := Scale(sim.Config{}, ScaleConfig{Pairs: 0, Msgs: 1, Workers: 1}); err == nil {
		t.Error("0 pairs: no error")
	}
}
