package conformance

import (
	"syscall"

	"github.com/google/go-cmp/cmp"
	"github.com/verbsim/verbsim/sim/wc"
)

// Cases of the CQ family: completion queue lifecycle, polling and overrun.

func init() {
	register("CQ-01", "cqe bounds", func(t *T, e *Env) {
		max := e.Ctx.Limits().MaxCQE
		for _, bad := range []int{0, -1, max + 1} {
			q, err := e.Ctx.CreateCQ(bad, nil, nil, 0)
			if q != nil {
				e.Track(q)
			}
			e.WantErrno("ibv_create_cq(cqe="+itoa(bad)+")", err, syscall.EINVAL)
		}
		for _, good := range []int{1, max} {
			q, err := e.Ctx.CreateCQ(good, nil, nil, 0)
			if err != nil {
				t.Errorf("ibv_create_cq(cqe=%d): %v, want success", good, err)
				continue
			}
			e.Track(q)
		}
	})

	register("CQ-17", "FIFO, no peek, no duplicates", func(t *T, e *Env) {
		q := e.CQ(64, nil, nil)
		var want []wc.WC
		for i := range 40 {
			w := SendWC(uint64(1000 + i))
			if i%3 == 0 {
				w = RecvWC(uint64(1000 + i))
			}
			e.Push(q, w, false)
			want = append(want, w)
		}
		// Uneven batch sizes: concatenated batches must equal the insertion log.
		var got []wc.WC
		for _, k := range []int{1, 7, 2, 16, 64} {
			buf := make([]wc.WC, k)
			n, err := q.Poll(buf)
			e.WantOK("ibv_poll_cq", err)
			got = append(got, buf[:n]...)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("polled sequence differs from insertion order (-want +got):\n%s", d)
		}
		if n, _ := q.Poll(make([]wc.WC, 4)); n != 0 {
			t.Errorf("a drained CQ returned %d more completions", n)
		}
	})
}

func itoa(n int) string {
	neg := n < 0
	if neg {
		n = -n
	}
	s := ""
	for {
		s = string(rune('0'+n%10)) + s
		n /= 10
		if n == 0 {
			break
		}
	}
	if neg {
		s = "-" + s
	}
	return s
}
