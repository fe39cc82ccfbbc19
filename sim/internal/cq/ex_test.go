package cq_test

import (
	"errors"
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/sim/internal/cq"
	"github.com/verbsim/verbsim/sim/internal/notify"
	"github.com/verbsim/verbsim/verbs"
)

func errnoIs(err error, want syscall.Errno) bool {
	if want == 0 {
		return err == nil
	}
	return errors.Is(err, want)
}

// TestExCreateAttrs covers CQX-01 and CQX-02: unsupported comp_mask,
// wc_flags and flags bits are EOPNOTSUPP, checked before cqe; flags count
// only under IBV_CQ_INIT_ATTR_MASK_FLAGS.
func TestExCreateAttrs(t *testing.T) {
	clock := func() uint64 { return 0 }
	for _, tc := range []struct {
		name string
		cfg  cq.Config
		want syscall.Errno
	}{
		{"standard", cq.Config{CQE: 4, WCFlags: verbs.WCStandardFlags}, 0},
		{"timestamp without clock", cq.Config{CQE: 4, WCFlags: verbs.WCExCompletionTimestamp}, syscall.EOPNOTSUPP},
		{"timestamp with clock", cq.Config{CQE: 4, WCFlags: verbs.WCExCompletionTimestamp, Clock: clock, ClockKHz: 1e6}, 0},
		{"wallclock, zero kHz", cq.Config{CQE: 4, WCFlags: verbs.WCExCompletionTimestampWallclock, Clock: clock}, syscall.EOPNOTSUPP},
		{"cvlan", cq.Config{CQE: 4, WCFlags: verbs.WCExCVLAN, Clock: clock, ClockKHz: 1e6}, syscall.EOPNOTSUPP},
		{"flow tag", cq.Config{CQE: 4, WCFlags: verbs.WCExFlowTag}, syscall.EOPNOTSUPP},
		{"tm info", cq.Config{CQE: 4, WCFlags: verbs.WCExTMInfo}, syscall.EOPNOTSUPP},
		{"bit 12", cq.Config{CQE: 4, WCFlags: 1 << 12}, syscall.EOPNOTSUPP},
		{"EOPNOTSUPP before cqe", cq.Config{CQE: 0, WCFlags: verbs.WCExFlowTag}, syscall.EOPNOTSUPP},
		{"comp_mask PD", cq.Config{CQE: 4, CompMask: verbs.CQInitAttrMaskPD}, syscall.EOPNOTSUPP},
		{"comp_mask flags", cq.Config{CQE: 4, CompMask: verbs.CQInitAttrMaskFlags, Flags: verbs.CQCreateSingleThreaded | verbs.CQCreateIgnoreOverrun}, 0},
		{"unknown flag", cq.Config{CQE: 4, CompMask: verbs.CQInitAttrMaskFlags, Flags: 1 << 2}, syscall.EOPNOTSUPP},
		{"unknown flag without the mask bit is ignored", cq.Config{CQE: 4, Flags: 1 << 2}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cq.New(tc.cfg)
			if !errnoIs(err, tc.want) {
				t.Fatalf("New: %v, want %v", err, tc.want)
			}
		})
	}
}

// TestExIgnoreOverrunFlag: IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN in flags acts
// as Config.IgnoreOverrun only with IBV_CQ_INIT_ATTR_MASK_FLAGS (CQX-01,
// CQ-23).
func TestExIgnoreOverrunFlag(t *testing.T) {
	for _, mask := range []verbs.CQInitAttrMask{0, verbs.CQInitAttrMaskFlags} {
		w := newWorld()
		c := w.cq(t, cq.Config{CQE: 1, CompMask: mask, Flags: verbs.CQCreateIgnoreOverrun})
		mustPush(t, c, send(1))
		mustPush(t, c, send(2))
		ignored := mask != 0
		if got := c.Overrun(); got == ignored {
			t.Errorf("comp_mask %v: in error state %v, want %v", mask, got, !ignored)
		}
		if got := w.async.Len(); (got == 0) != ignored {
			t.Errorf("comp_mask %v: %d CQ_ERR events", mask, got)
		}
	}
}

// TestExIterator walks a batch: start, next, ENOENT at the end, end; the
// completions are consumed at end_poll (CQX-04, CQX-05, CQX-08).
func TestExIterator(t *testing.T) {
	w := newWorld()
	c := w.cq(t, cq.Config{CQE: 8, WCFlags: verbs.WCStandardFlags})
	if err := c.StartPoll(); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("StartPoll on an empty CQ: %v, want ENOENT", err)
	}
	for i := range 3 {
		mustPush(t, c, verbs.WC{WRID: uint64(10 + i), Status: verbs.WCSuccess, Opcode: verbs.WCRecv, ByteLen: uint32(100 + i), QPNum: 7, SrcQP: 9, SLID: 3, SL: 2, DLIDPathBits: 1, WCFlags: verbs.WCWithImm, ImmData: 0xabcd})
	}
	var got []uint64
	err := c.StartPoll()
	for ; err == nil; err = c.NextPoll() {
		got = append(got, c.WRID)
		if c.Status != verbs.WCSuccess {
			t.Errorf("status %v", c.Status)
		}
		op, err1 := c.ReadOpcode()
		bl, err2 := c.ReadByteLen()
		qpn, err3 := c.ReadQPNum()
		imm, err4 := c.ReadImmData()
		fl, err5 := c.ReadWCFlags()
		sl, err6 := c.ReadSL()
		if err := errors.Join(err1, err2, err3, err4, err5, err6); err != nil {
			t.Fatal(err)
		}
		if op != verbs.WCRecv || bl != uint32(100+len(got)-1) || qpn != 7 || imm != 0xabcd || fl != verbs.WCWithImm || sl != 2 {
			t.Errorf("read %v %d %d %#x %v %d", op, bl, qpn, imm, fl, sl)
		}
		if c.Len() != 3 {
			t.Errorf("Len %d during the batch, want 3: nothing is consumed before end_poll (CQX-08)", c.Len())
		}
	}
	if !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("NextPoll at the end: %v, want ENOENT", err)
	}
	if _, err := c.ReadOpcode(); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("ReadOpcode past the end: %v, want EINVAL (CQX-07)", err)
	}
	if s := c.Snapshot(); s.Batch != 3 {
		t.Errorf("Snapshot.Batch %d, want 3", s.Batch)
	}
	if err := c.EndPoll(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0] != 10 || got[2] != 12 {
		t.Fatalf("wr_ids %v", got)
	}
	if c.Len() != 0 || c.Snapshot().Stats.Polled != 3 {
		t.Fatalf("after end_poll: Len %d, stats %+v", c.Len(), c.Snapshot().Stats)
	}
}

// TestExPartialBatch: end_poll consumes only what the iterator reached; the
// rest is polled next time, in order, by either API (CQX-08).
func TestExPartialBatch(t *testing.T) {
	w := newWorld()
	c := w.cq(t, cq.Config{CQE: 8})
	for i := range 4 {
		mustPush(t, c, send(uint64(i)))
	}
	if err := c.StartPoll(); err != nil {
		t.Fatal(err)
	}
	if err := c.NextPoll(); err != nil || c.WRID != 1 {
		t.Fatalf("NextPoll: %v wr_id %d", err, c.WRID)
	}
	if err := c.EndPoll(); err != nil {
		t.Fatal(err)
	}
	buf := make([]verbs.WC, 4)
	if n, err := c.Poll(buf); n != 2 || err != nil || buf[0].WRID != 2 || buf[1].WRID != 3 {
		t.Fatalf("Poll after a partial batch: %d %v %v", n, err, buf[:n])
	}
}

// TestExPushDuringBatch: a completion added after next_poll said ENOENT is
// the next one, not skipped.
func TestExPushDuringBatch(t *testing.T) {
	w := newWorld()
	c := w.cq(t, cq.Config{CQE: 8})
	mustPush(t, c, send(1))
	if err := c.StartPoll(); err != nil {
		t.Fatal(err)
	}
	if err := c.NextPoll(); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("NextPoll: %v", err)
	}
	mustPush(t, c, send(2))
	if err := c.NextPoll(); err != nil || c.WRID != 2 {
		t.Fatalf("NextPoll after a push: %v, wr_id %d", err, c.WRID)
	}
	if err := c.EndPoll(); err != nil || c.Len() != 0 {
		t.Fatalf("EndPoll: %v, Len %d", err, c.Len())
	}
}

// TestExMisuse covers CQX-06: start twice, next or end without a batch,
// Poll and Resize during a batch; destroy ends the batch.
func TestExMisuse(t *testing.T) {
	w := newWorld()
	c := w.cq(t, cq.Config{CQE: 8})
	if err := c.NextPoll(); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("NextPoll without a batch: %v", err)
	}
	if err := c.EndPoll(); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("EndPoll without a batch: %v", err)
	}
	mustPush(t, c, send(1))
	if err := c.StartPoll(); err != nil {
		t.Fatal(err)
	}
	if err := c.StartPoll(); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("StartPoll twice: %v", err)
	}
	if c.WRID != 1 {
		t.Errorf("the failed StartPoll moved the iterator: wr_id %d", c.WRID)
	}
	if n, err := c.Poll(make([]verbs.WC, 1)); n != 0 || !errors.Is(err, syscall.EBUSY) {
		t.Errorf("Poll during a batch: %d, %v", n, err)
	}
	if err := c.Resize(16); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("Resize during a batch: %v", err)
	}
	if err := c.ReqNotify(false); err != nil {
		t.Errorf("ReqNotify during a batch: %v", err)
	}
	if err := c.Destroy(); err != nil {
		t.Fatal(err)
	}
	if err := c.EndPoll(); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("EndPoll after destroy: %v", err)
	}
	if _, err := c.ReadOpcode(); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("ReadOpcode after destroy: %v", err)
	}
}

// TestExReadNotRequested covers CQX-03: a field left out of wc_flags reads
// as zero with EINVAL; opcode, vendor_err and wc_flags are always there.
func TestExReadNotRequested(t *testing.T) {
	w := newWorld()
	c := w.cq(t, cq.Config{CQE: 8, WCFlags: verbs.WCExQPNum})
	mustPush(t, c, verbs.WC{WRID: 1, Opcode: verbs.WCRecv, ByteLen: 5, QPNum: 7, ImmData: 3})
	if err := c.StartPoll(); err != nil {
		t.Fatal(err)
	}
	if v, err := c.ReadQPNum(); v != 7 || err != nil {
		t.Errorf("ReadQPNum: %d %v", v, err)
	}
	if v, err := c.ReadOpcode(); v != verbs.WCRecv || err != nil {
		t.Errorf("ReadOpcode: %v %v", v, err)
	}
	for name, read := range map[string]func() (uint64, error){
		"byte_len":          func() (uint64, error) { v, err := c.ReadByteLen(); return uint64(v), err },
		"imm_data":          func() (uint64, error) { v, err := c.ReadImmData(); return uint64(v), err },
		"invalidated_rkey":  func() (uint64, error) { v, err := c.ReadInvalidatedRkey(); return uint64(v), err },
		"src_qp":            func() (uint64, error) { v, err := c.ReadSrcQP(); return uint64(v), err },
		"slid":              func() (uint64, error) { v, err := c.ReadSLID(); return uint64(v), err },
		"sl":                func() (uint64, error) { v, err := c.ReadSL(); return uint64(v), err },
		"dlid_path_bits":    func() (uint64, error) { v, err := c.ReadDLIDPathBits(); return uint64(v), err },
		"completion_ts":     c.ReadCompletionTS,
		"completion_wallns": c.ReadCompletionWallclockNS,
	} {
		if v, err := read(); v != 0 || !errors.Is(err, syscall.EINVAL) {
			t.Errorf("%s not requested: %d, %v; want 0, EINVAL", name, v, err)
		}
	}
	if err := c.EndPoll(); err != nil {
		t.Fatal(err)
	}
}

// TestExTimestamp covers CQX-09: the timestamp is the clock when the
// completion was stored, in cycles of ClockKHz; wallclock is nanoseconds.
func TestExTimestamp(t *testing.T) {
	w := newWorld()
	var now uint64
	c := w.cq(t, cq.Config{CQE: 8, Clock: func() uint64 { return now }, ClockKHz: 156250,
		WCFlags: verbs.WCExCompletionTimestamp | verbs.WCExCompletionTimestampWallclock})
	now = 1000
	mustPush(t, c, send(1))
	now = 1<<63 - 1
	mustPush(t, c, send(2))
	now = 5000
	if err := c.StartPoll(); err != nil {
		t.Fatal(err)
	}
	ts, err1 := c.ReadCompletionTS()
	ns, err2 := c.ReadCompletionWallclockNS()
	if ts != 156 || ns != 1000 || err1 != nil || err2 != nil {
		t.Errorf("first: ts %d ns %d (%v %v); want 156 and 1000", ts, ns, err1, err2)
	}
	if err := c.NextPoll(); err != nil {
		t.Fatal(err)
	}
	ts, _ = c.ReadCompletionTS()
	ns, _ = c.ReadCompletionWallclockNS()
	if want := uint64(1<<63-1) / 1000000 * 156250; ts < want || ns != 1<<63-1 {
		t.Errorf("late: ts %d (want about %d) ns %d", ts, want, ns)
	}
	c.EndPoll()
}

// TestExOverrunEIO: on a CQ in its overrun error state the iterator still
// returns what was stored, then EIO where it would say ENOENT (CQ-23).
func TestExOverrunEIO(t *testing.T) {
	w := newWorld()
	c := w.cq(t, cq.Config{CQE: 1, Rounding: cq.RoundExact})
	mustPush(t, c, send(1))
	mustPush(t, c, send(2))
	if err := c.StartPoll(); err != nil || c.WRID != 1 {
		t.Fatalf("StartPoll: %v %d", err, c.WRID)
	}
	if err := c.NextPoll(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("NextPoll at the end of an overrun CQ: %v, want EIO", err)
	}
	c.EndPoll()
	if err := c.StartPoll(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("StartPoll on an empty overrun CQ: %v, want EIO", err)
	}
}

// TestExBatchHoldsSlots: completions a batch has passed still occupy the CQ
// until end_poll, so a push into the last slot overruns (CQX-08).
func TestExBatchHoldsSlots(t *testing.T) {
	w := newWorld()
	c := w.cq(t, cq.Config{CQE: 1, Rounding: cq.RoundExact, Overrun: cq.OverrunDrop})
	mustPush(t, c, send(1))
	if err := c.StartPoll(); err != nil {
		t.Fatal(err)
	}
	if over := mustPush(t, c, send(2)); !over {
		t.Fatal("a push during the batch fitted: the current completion was already freed")
	}
	c.EndPoll()
	if over := mustPush(t, c, send(3)); over {
		t.Fatal("a push after end_poll overran")
	}
}

// TestExArmAndEvents: the notification rules hold across the ex poll path:
// an arm fires on the next completion after an ex-polled batch (NOTIFY-01),
// and events need acks before destroy (CQ-13).
func TestExArmAndEvents(t *testing.T) {
	w := newWorld()
	c := w.cq(t, cq.Config{CQE: 8, Channel: w.ch, Context: "ctx"})
	if err := c.ReqNotify(false); err != nil {
		t.Fatal(err)
	}
	mustPush(t, c, send(1))
	if c.StartPoll() != nil || c.EndPoll() != nil {
		t.Fatal("poll batch failed")
	}
	mustPush(t, c, send(2))
	if w.ch.Len() != 1 {
		t.Fatalf("events %d, want 1: the arm fires once (NOTIFY-01)", w.ch.Len())
	}
	if c.Armed() != notify.Disarmed {
		t.Fatal("still armed")
	}
}

func TestExHotPathAllocatesNothing(t *testing.T) {
	c := benchCQ(t, 64)
	w := send(1)
	if n := testing.AllocsPerRun(1000, func() {
		c.Push(w, false)
		c.Push(w, false)
		if c.StartPoll() == nil {
			for {
				c.ReadOpcode()
				c.ReadByteLen()
				c.ReadQPNum()
				if c.NextPoll() != nil {
					break
				}
			}
			c.EndPoll()
		}
		c.StartPoll() // ENOENT
		c.NextPoll()  // EINVAL
		c.ReadSL()    // EINVAL
	}); n != 0 {
		t.Fatalf("the ex poll path allocates %v times", n)
	}
}

// BenchmarkExPoll1 reads one completion per batch through the iterator
// (start, opcode, byte_len, qp_num, next → ENOENT, end); compare
// BenchmarkPoll1.
func BenchmarkExPoll1(b *testing.B) { benchExPoll(b, 1) }

// BenchmarkExPollBatch16 reads 16 completions per batch; compare
// BenchmarkPollBatch16.
func BenchmarkExPollBatch16(b *testing.B) { benchExPoll(b, 16) }

func benchExPoll(b *testing.B, n int) {
	const depth = 1 << 14
	c, err := cq.New(cq.Config{CQE: depth, WCFlags: verbs.WCStandardFlags})
	if err != nil {
		b.Fatal(err)
	}
	w := send(1)
	left := 0
	var sum uint64
	b.ReportAllocs()
	for b.Loop() {
		if left < n {
			b.StopTimer()
			for range depth - left {
				c.Push(w, false)
			}
			left = depth
			b.StartTimer()
		}
		if err := c.StartPoll(); err != nil {
			b.Fatal(err)
		}
		for i := 0; ; i++ {
			sum += c.WRID
			c.ReadOpcode()
			c.ReadByteLen()
			c.ReadQPNum()
			if i == n-1 {
				break
			}
			c.NextPoll()
		}
		c.EndPoll()
		left -= n
	}
	_ = sum
}
