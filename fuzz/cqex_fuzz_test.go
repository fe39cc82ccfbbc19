package fuzz

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// FuzzCQEx creates an extended CQ from fuzzed ibv_cq_init_attr_ex fields and
// runs a fuzzed mix of pushes, ibv_poll_cq and the poll iterator on it,
// against a shadow queue: the create's errno follows CQX-01/02 and CQ-01,
// every completion comes out once and in order whichever API reads it, the
// iterator consumes only at end_poll (CQX-08), misuse gives the documented
// errno (CQX-06, CQX-07) and fields outside wc_flags are refused (CQX-03).
func FuzzCQEx(f *testing.F) {
	f.Add(uint64(verbs.WCStandardFlags), uint32(0), uint32(0), int16(4), []byte{0, 0, 1, 2, 2, 3, 4, 1, 3})
	f.Add(uint64(verbs.WCExQPNum|verbs.WCExCompletionTimestamp), uint32(1), uint32(2), int16(1), []byte{0, 0, 0, 1, 5, 2, 3, 4, 6})
	f.Add(uint64(1<<8), uint32(2), uint32(4), int16(0), []byte{})
	f.Fuzz(func(t *testing.T, wcFlags uint64, compMask, flags uint32, cqe int16, ops []byte) {
		for _, p := range sim.ProfilesWithout(verbs.ReadingNoCQEx) { // CQX-11 refuses them all
			runCQEx(t, p, verbs.WCExFlags(wcFlags), verbs.CQInitAttrMask(compMask), verbs.CQCreateFlags(flags), int(cqe), ops)
		}
	})
}

func runCQEx(t *testing.T, p sim.Profile, wcFlags verbs.WCExFlags, mask verbs.CQInitAttrMask, flags verbs.CQCreateFlags, cqe int, ops []byte) {
	f, err := sim.NewFabric(sim.Config{Profile: p})
	if err != nil {
		t.Fatal(err)
	}
	ctx, err := f.Devices()[0].Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	supported := verbs.WCStandardFlags
	if !p.NoCQTimestamps {
		supported |= verbs.WCExCompletionTimestamp | verbs.WCExCompletionTimestampWallclock
	}
	var want syscall.Errno
	switch {
	case mask&^verbs.CQInitAttrMaskFlags != 0, wcFlags&^supported != 0,
		mask&verbs.CQInitAttrMaskFlags != 0 && flags&^(verbs.CQCreateSingleThreaded|verbs.CQCreateIgnoreOverrun) != 0:
		want = syscall.EOPNOTSUPP
	case cqe < 1 || cqe > ctx.Device().Attr().MaxCQE:
		want = syscall.EINVAL
	}
	q, err := ctx.CreateCQEx(sim.CQInitAttr{CQE: cqe, WCFlags: wcFlags, CompMask: mask, Flags: flags})
	if want != 0 {
		if q != nil || !errors.Is(err, want) {
			t.Fatalf("%s: create(wc_flags=%#x comp_mask=%#x flags=%#x cqe=%d) = %v, %v; want %v", p.Name, uint64(wcFlags), uint32(mask), uint32(flags), cqe, q, err, want)
		}
		return
	}
	if err != nil {
		t.Fatalf("%s: create: %v", p.Name, err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := q.DestroyContext(dctx); err != nil {
			t.Errorf("destroy: %v", err)
		}
	}()
	ignore := mask&verbs.CQInitAttrMaskFlags != 0 && flags&verbs.CQCreateIgnoreOverrun != 0
	var (
		shadow []uint64 // wr_ids in the CQ, oldest first
		open   bool
		cur    int  // offset of the current completion
		end    bool // next_poll went past the last one
		broken bool // overrun under the error reading: only drain checks hold
		id     uint64
	)
	buf := make([]verbs.WC, 4)
	for _, b := range ops {
		switch b % 7 {
		case 0: // push
			id++
			over, err := q.Push(verbs.WC{WRID: id, Opcode: verbs.WCRecv, QPNum: 5}, false)
			if err != nil {
				t.Fatalf("push: %v", err)
			}
			full := len(shadow) >= q.CQE()
			if over != (full || broken) && !(broken && !full && p.OverrunDrops) {
				t.Fatalf("%s: push %d overran=%v with %d of %d stored", p.Name, id, over, len(shadow), q.CQE())
			}
			if over {
				if !ignore && !p.OverrunDrops {
					broken = true
				}
				for {
					ev, err := ctx.TryGetAsyncEvent()
					if err != nil {
						break
					}
					ev.Ack()
				}
				continue
			}
			shadow = append(shadow, id)
		case 1: // start_poll
			err := q.StartPoll()
			switch {
			case open:
				if !errors.Is(err, syscall.EINVAL) {
					t.Fatalf("start_poll inside a batch: %v", err)
				}
			case len(shadow) == 0:
				if err == nil {
					t.Fatalf("start_poll on an empty CQ succeeded")
				}
			default:
				if err != nil || q.WRID() != shadow[0] {
					t.Fatalf("start_poll: %v wr_id %d, want %d", err, q.WRID(), shadow[0])
				}
				open, cur, end = true, 0, false
			}
		case 2: // next_poll
			err := q.NextPoll()
			switch {
			case !open:
				if !errors.Is(err, syscall.EINVAL) {
					t.Fatalf("next_poll outside a batch: %v", err)
				}
			default:
				if !end {
					cur++
				}
				if cur >= len(shadow) {
					cur, end = len(shadow), true
					if err == nil {
						t.Fatalf("next_poll past the end succeeded")
					}
				} else {
					end = false
					if err != nil || q.WRID() != shadow[cur] {
						t.Fatalf("next_poll: %v wr_id %d, want %d", err, q.WRID(), shadow[cur])
					}
				}
			}
		case 3: // end_poll
			err := q.EndPoll()
			if !open {
				if !errors.Is(err, syscall.EINVAL) {
					t.Fatalf("end_poll outside a batch: %v", err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("end_poll: %v", err)
			}
			n := cur
			if !end {
				n++
			}
			shadow = shadow[n:]
			open = false
		case 4: // ibv_poll_cq
			n, err := q.Poll(buf)
			if open {
				if n != 0 || !errors.Is(err, syscall.EBUSY) {
					t.Fatalf("poll_cq inside a batch: %d, %v", n, err)
				}
				continue
			}
			if n != min(len(buf), len(shadow)) {
				t.Fatalf("poll_cq: %d, want %d", n, min(len(buf), len(shadow)))
			}
			for i := range n {
				if buf[i].WRID != shadow[i] {
					t.Fatalf("poll_cq: wr_id %d, want %d", buf[i].WRID, shadow[i])
				}
			}
			shadow = shadow[n:]
		case 5: // a read that needs byte_len
			_, err := q.ReadByteLen()
			ok := open && !end && wcFlags&verbs.WCExByteLen != 0
			if (err == nil) != ok {
				t.Fatalf("read_byte_len: %v; want success %v", err, ok)
			}
		case 6: // a read that needs the timestamp
			_, err := q.ReadCompletionTS()
			ok := open && !end && wcFlags&verbs.WCExCompletionTimestamp != 0
			if (err == nil) != ok {
				t.Fatalf("read_completion_ts: %v; want success %v", err, ok)
			}
		}
		if l := q.Len(); l != len(shadow) {
			t.Fatalf("%s: Len %d, shadow %d", p.Name, l, len(shadow))
		}
	}
	if open {
		if err := q.EndPoll(); err != nil {
			t.Fatal(err)
		}
	}
}
