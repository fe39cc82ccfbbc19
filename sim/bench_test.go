package sim_test

import (
	"testing"

	"github.com/verbsim/verbsim/internal/benchkit"
	"github.com/verbsim/verbsim/sim"
)

// BenchmarkEventWakeup is the event path end to end: a consumer goroutine
// blocked in GetEvent is woken by a completion on an armed CQ, acks the
// event, re-arms and polls, while the producer waits for it to be ready for
// the next round. One op is one full round trip between two goroutines. The
// workload is benchkit.EventWakeup, the one `verbsim bench` measures.
func BenchmarkEventWakeup(b *testing.B) {
	w, err := benchkit.EventWakeup(sim.Config{})
	runWorkload(b, w, err, 0)
}

// BenchmarkChannelPingPong is the floor of BenchmarkEventWakeup: one round
// trip between two goroutines over Go channels (benchkit.ChannelPingPong).
func BenchmarkChannelPingPong(b *testing.B) {
	runWorkload(b, benchkit.ChannelPingPong(), nil, 0)
}

// BenchmarkRCSend64Background is BenchmarkRCSend64 on a Background fabric,
// whose clock goroutine follows the wall clock: what that mode adds to a
// message.
func BenchmarkRCSend64Background(b *testing.B) {
	w, err := benchkit.RCSend64(sim.Config{Mode: sim.Background})
	runWorkload(b, w, err, 64)
}
