package sim_test

import (
	"context"
	"testing"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/wc"
)

// BenchmarkEventWakeup is the event path end to end: a consumer goroutine
// blocked in GetEvent is woken by a completion on an armed CQ, acks the
// event, re-arms and polls, while the producer waits for it to be ready for
// the next round. One op is one full round trip between two goroutines.
func BenchmarkEventWakeup(b *testing.B) {
	ctx := open(b, sim.Config{})
	ch, _ := ctx.CreateCompChannel()
	q, _ := ctx.CreateCQ(64, nil, ch, 0)
	q.ReqNotify(false)
	ready := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]wc.WC, 16)
		bg := context.Background()
		for {
			ready <- struct{}{}
			got, _, err := ch.GetEvent(bg)
			if err != nil {
				return
			}
			got.AckEvents(1)
			got.ReqNotify(false)
			for {
				if n, _ := got.Poll(buf); n == 0 {
					break
				}
			}
		}
	}()
	w := wc.WC{WRID: 1, Status: wc.Success, Opcode: wc.Recv}
	b.ReportAllocs()
	for b.Loop() {
		<-ready
		q.Push(w, false)
	}
	<-ready
	q.Destroy()
	ch.Destroy() // wakes the consumer with EBADF
	<-done
}
