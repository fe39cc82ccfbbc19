//go:build linux

package nicd

import (
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
)

// Dump describes every program's objects as the daemon holds them, for a
// person finding why a program waits: each CQ with what the engine holds
// and where its ring stands, each QP with its state and outstanding work
// (`verbsim nicd` writes it to its log on SIGUSR1).
func (s *Server) Dump() string {
	s.mu.Lock()
	var ss []*session
	for _, se := range s.sess {
		ss = append(ss, se)
	}
	s.mu.Unlock()
	sort.Slice(ss, func(i, j int) bool { return ss[i].id < ss[j].id })
	var b strings.Builder
	fmt.Fprintf(&b, "status: busy %d served %d\n", atomic.LoadUint32(&s.stat.Busy), atomic.LoadUint64(&s.stat.Served))
	for _, se := range ss {
		fmt.Fprintf(&b, "session %d pid %d\n", se.id, se.pid)
		se.mu.Lock()
		var hs []uint64
		for h := range se.objs {
			hs = append(hs, h)
		}
		sort.Slice(hs, func(i, j int) bool { return hs[i] < hs[j] })
		objs := make([]any, len(hs))
		for i, h := range hs {
			objs[i] = se.objs[h].v
		}
		se.mu.Unlock()
		for i, o := range objs {
			switch o := o.(type) {
			case *cqObj:
				snap := o.cq.Snapshot()
				fmt.Fprintf(&b, "  cq %#x: cqe %d len %d overrun %v arm %v stats %+v", hs[i], snap.CQE, snap.Len, snap.Overrun, snap.Arm, snap.Stats)
				o.mu.Lock()
				if r := o.ring; r != nil {
					h := r.hdr
					fmt.Fprintf(&b, " ring: size %d head %d tail %d seen %d batch %d error %d synced %d pending %d",
						r.size, atomic.LoadUint64(&h.Head), atomic.LoadUint64(&h.Tail), atomic.LoadUint64(&h.Seen),
						atomic.LoadUint32(&h.Batch), atomic.LoadUint32(&h.Error), r.synced, len(r.pending))
				}
				o.mu.Unlock()
				b.WriteByte('\n')
			case *qpObj:
				sq, rq := o.q.Outstanding()
				fmt.Fprintf(&b, "  qp %#x: num %#x %v outstanding send %d recv %d stats %+v\n", hs[i], o.q.Num(), o.q.State(), sq, rq, o.q.Stats())
			}
		}
	}
	return b.String()
}
