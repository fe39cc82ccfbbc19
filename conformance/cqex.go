package conformance

import (
	"context"
	"errors"
	"syscall"
	"time"

	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// Cases of the CQX family: extended CQs (ibv_create_cq_ex) and the poll
// iterator. They need the verbs.ExCQCreator capability; completions are added
// through the Injector capability, as in the CQ family.

// cqxCreate creates an extended CQ from attr, or returns the error. A device
// without ExCQCreator fails the case.
func cqxCreate(t *tester, e *env, attr verbs.CQInitAttrEx) (verbs.ExCQ, error) {
	t.Helper()
	cr, ok := e.Ctx.(verbs.ExCQCreator)
	if !ok {
		t.Fatalf("the context cannot create extended CQs (verbs.ExCQCreator); this case needs it")
	}
	q, err := cr.CreateCQEx(attr)
	if q == nil {
		return nil, err
	}
	e.Track(q)
	if err != nil {
		t.Errorf("ibv_create_cq_ex returned a CQ along with error %v", err)
	}
	return q, nil
}

// cqxMust creates an extended CQ from attr or fails the case.
func cqxMust(t *tester, e *env, attr verbs.CQInitAttrEx) verbs.ExCQ {
	t.Helper()
	q, err := cqxCreate(t, e, attr)
	if err != nil {
		t.Fatalf("ibv_create_cq_ex(%+v): %v", attr, err)
	}
	return q
}

// cqxWant checks that creating from attr fails with errno and returns no CQ.
func cqxWant(t *tester, e *env, what string, attr verbs.CQInitAttrEx, errno syscall.Errno) {
	t.Helper()
	q, err := cqxCreate(t, e, attr)
	if q != nil {
		t.Errorf("ibv_create_cq_ex(%s) succeeded; want %s", what, verr.Name(errno))
		return
	}
	e.WantErrno("ibv_create_cq_ex("+what+")", err, errno)
}

// cqxDrain reads q to the end with the iterator and returns the wr_ids, or
// nil if q was empty. It fails the case on an unexpected error.
func cqxDrain(t *tester, e *env, q verbs.ExCQ) []uint64 {
	t.Helper()
	err := q.StartPoll()
	if errors.Is(err, syscall.ENOENT) {
		return nil
	}
	var ids []uint64
	for ; err == nil; err = q.NextPoll() {
		id, _, cerr := q.Current()
		if cerr != nil {
			t.Errorf("wr_id of the current completion: %v", cerr)
		}
		ids = append(ids, id)
	}
	if !errors.Is(err, syscall.ENOENT) {
		t.Errorf("ibv_next_poll at the end of the batch: %v, want ENOENT", err)
	}
	e.WantOK("ibv_end_poll", q.EndPoll())
	return ids
}

// cqexCases are the cases of the CQX family in cqex.go.
var cqexCases = []Case{
	{"CQX-01", "comp_mask and flags: unsupported bits are EOPNOTSUPP", cqxCompMaskFlags},
	{"CQX-02", "wc_flags: fields the device cannot report are EOPNOTSUPP, before cqe", cqxWCFlagsUnsupported},
	{"CQX-03", "only the fields asked for in wc_flags can be read", cqxOnlyAskedFields},
	{"CQX-04", "start_poll on an empty CQ is ENOENT and opens nothing", cqxStartPollEmpty},
	{"CQX-05", "next_poll walks the completions in order and ends with ENOENT", cqxNextPollInOrder},
	{"CQX-06", "iterator misuse is reported and changes nothing", cqxIteratorMisuse},
	{"CQX-07", "no current completion outside a batch", cqxNoCurrentOutsideBatch},
	{"CQX-08", "a batch consumes what it visited at end_poll", cqxBatchConsumesVisited},
	{"CQX-09", "completion timestamps follow the virtual clock", cqxTimestamps},
	{"CQX-10", "an extended CQ is a CQ: events, acks, destroy and mixed polling", cqxIsACQ},
}

func cqxCompMaskFlags(t *tester, e *env) {
	// MASK_PD names no parent domain here: EOPNOTSUPP from a provider
	// without parent domains (the simulator), EINVAL from one with them
	// (mlx5, the drop-in library), since what it names is not one.
	if q, err := cqxCreate(t, e, verbs.CQInitAttrEx{CQE: 4, CompMask: verbs.CQInitAttrMaskPD}); q != nil {
		t.Errorf("ibv_create_cq_ex(comp_mask=PD, no parent domain) succeeded; want EOPNOTSUPP or EINVAL")
	} else if !errors.Is(err, syscall.EOPNOTSUPP) && !errors.Is(err, syscall.EINVAL) {
		t.Errorf("ibv_create_cq_ex(comp_mask=PD, no parent domain): %v, want EOPNOTSUPP (no parent domains) or EINVAL", err)
	}
	cqxWant(t, e, "comp_mask=1<<31", verbs.CQInitAttrEx{CQE: 4, CompMask: 1 << 31}, syscall.EOPNOTSUPP)
	cqxWant(t, e, "flags=1<<2", verbs.CQInitAttrEx{CQE: 4, CompMask: verbs.CQInitAttrMaskFlags, Flags: 1 << 2}, syscall.EOPNOTSUPP)
	cqxMust(t, e, verbs.CQInitAttrEx{CQE: 4, CompMask: verbs.CQInitAttrMaskFlags, Flags: verbs.CQCreateSingleThreaded})
	// flags is not read without IBV_CQ_INIT_ATTR_MASK_FLAGS.
	cqxMust(t, e, verbs.CQInitAttrEx{CQE: 4, Flags: 1 << 2})
	// IGNORE_OVERRUN: an overrun raises no CQ_ERR and leaves no error
	// state (CQ-23).
	q := cqxMust(t, e, verbs.CQInitAttrEx{CQE: 1, CompMask: verbs.CQInitAttrMaskFlags, Flags: verbs.CQCreateIgnoreOverrun})
	for i := range q.CQE() + 1 {
		e.Push(q, verbs.WC{WRID: uint64(i + 1), Opcode: verbs.WCSend}, false)
	}
	if ev, err := e.Ctx.TryGetAsyncEvent(); err == nil {
		ev.Ack()
		t.Errorf("an overrun of a CQ created with IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN raised %v", ev.EventType())
	}
	if got := cqxDrain(t, e, q); len(got) != q.CQE() {
		t.Errorf("after an ignored overrun the iterator read %d completions, want cqe=%d", len(got), q.CQE())
	}
	e.Push(q, verbs.WC{WRID: 99, Opcode: verbs.WCSend}, false)
	if got := cqxDrain(t, e, q); len(got) != 1 || got[0] != 99 {
		t.Errorf("a CQ that ignores overruns did not take a completion after being drained: %v", got)
	}
}

func cqxWCFlagsUnsupported(t *tester, e *env) {
	for _, f := range []struct {
		name string
		bits verbs.WCExFlags
	}{
		{"CVLAN", verbs.WCExCVLAN}, {"FLOW_TAG", verbs.WCExFlowTag}, {"TM_INFO", verbs.WCExTMInfo}, {"1<<12", 1 << 12}, {"1<<63", 1 << 63},
	} {
		cqxWant(t, e, "wc_flags="+f.name, verbs.CQInitAttrEx{CQE: 4, WCFlags: f.bits}, syscall.EOPNOTSUPP)
		cqxWant(t, e, "cqe=0 wc_flags="+f.name, verbs.CQInitAttrEx{CQE: 0, WCFlags: f.bits}, syscall.EOPNOTSUPP)
	}
	cqxMust(t, e, verbs.CQInitAttrEx{CQE: 4, WCFlags: verbs.WCStandardFlags})
	cqxWant(t, e, "cqe=0 standard wc_flags", verbs.CQInitAttrEx{CQE: 0, WCFlags: verbs.WCStandardFlags}, syscall.EINVAL)
	ts := verbs.WCExCompletionTimestamp | verbs.WCExCompletionTimestampWallclock
	if e.Profile.NoCQTimestamps {
		cqxWant(t, e, "wc_flags=COMPLETION_TIMESTAMP", verbs.CQInitAttrEx{CQE: 4, WCFlags: verbs.WCExCompletionTimestamp}, syscall.EOPNOTSUPP)
		cqxWant(t, e, "wc_flags=COMPLETION_TIMESTAMP_WALLCLOCK", verbs.CQInitAttrEx{CQE: 4, WCFlags: verbs.WCExCompletionTimestampWallclock}, syscall.EOPNOTSUPP)
	} else {
		cqxMust(t, e, verbs.CQInitAttrEx{CQE: 4, WCFlags: verbs.WCStandardFlags | ts})
	}
}

func cqxOnlyAskedFields(t *tester, e *env) {
	q := cqxMust(t, e, verbs.CQInitAttrEx{CQE: 4, WCFlags: verbs.WCExQPNum})
	e.Push(q, verbs.WC{WRID: 5, Opcode: verbs.WCRecv, ByteLen: 64, QPNum: 0x11, SrcQP: 0x22, ImmData: 7, WCFlags: verbs.WCWithImm}, false)
	e.WantOK("ibv_start_poll", q.StartPoll())
	if v, err := q.ReadQPNum(); err != nil || v != 0x11 {
		t.Errorf("ibv_wc_read_qp_num with QP_NUM asked for: %#x, %v; want 0x11", v, err)
	}
	if v, err := q.ReadOpcode(); err != nil || v != verbs.WCRecv {
		t.Errorf("ibv_wc_read_opcode: %v, %v; want IBV_WC_RECV (always readable)", v, err)
	}
	if v, err := q.ReadWCFlags(); err != nil || v != verbs.WCWithImm {
		t.Errorf("ibv_wc_read_wc_flags: %v, %v; want WITH_IMM (always readable)", v, err)
	}
	if _, err := q.ReadVendorErr(); err != nil {
		t.Errorf("ibv_wc_read_vendor_err: %v (always readable)", err)
	}
	for name, read := range map[string]func() (uint32, error){
		"byte_len": q.ReadByteLen, "imm_data": q.ReadImmData, "src_qp": q.ReadSrcQP,
	} {
		if v, err := read(); err == nil {
			t.Errorf("ibv_wc_read_%s without its wc_flags bit returned %d and no error; verbsim reports the misuse", name, v)
		}
	}
	e.WantOK("ibv_end_poll", q.EndPoll())
	// A CQ from ibv_create_cq reads the standard fields.
	c := e.CQ(4, nil, nil)
	x, ok := c.(verbs.ExCQ)
	if !ok {
		t.Logf("not checked: the CQs of ibv_create_cq have no poll iterator")
		return
	}
	e.Push(c, verbs.WC{WRID: 6, Opcode: verbs.WCRecv, ByteLen: 64, QPNum: 0x11, SrcQP: 0x22}, false)
	e.WantOK("ibv_start_poll on a classic CQ", x.StartPoll())
	if v, err := x.ReadByteLen(); err != nil || v != 64 {
		t.Errorf("ibv_wc_read_byte_len on a classic CQ: %d, %v; want 64 (IBV_WC_STANDARD_FLAGS)", v, err)
	}
	if v, err := x.ReadSrcQP(); err != nil || v != 0x22 {
		t.Errorf("ibv_wc_read_src_qp on a classic CQ: %#x, %v; want 0x22", v, err)
	}
	e.WantOK("ibv_end_poll", x.EndPoll())
}

func cqxStartPollEmpty(t *tester, e *env) {
	q := cqxMust(t, e, verbs.CQInitAttrEx{CQE: 4, WCFlags: verbs.WCStandardFlags})
	e.WantErrno("ibv_start_poll on an empty CQ", q.StartPoll(), syscall.ENOENT)
	// No batch is open: poll_cq works and end_poll is a misuse.
	if n, err := q.Poll(make([]verbs.WC, 1)); n != 0 || err != nil {
		t.Errorf("ibv_poll_cq after a start_poll that found nothing: %d, %v; want 0, nil", n, err)
	}
	if err := q.EndPoll(); err == nil {
		t.Errorf("ibv_end_poll after a start_poll that failed succeeded; no batch was open (CQX-06)")
	}
	e.Push(q, verbs.WC{WRID: 41, Opcode: verbs.WCSend}, false)
	e.Push(q, verbs.WC{WRID: 42, Opcode: verbs.WCSend}, false)
	e.WantOK("ibv_start_poll", q.StartPoll())
	if id, st, err := q.Current(); err != nil || id != 41 || st != verbs.WCSuccess {
		t.Errorf("after start_poll wr_id=%d status=%v (%v); want the oldest, 41, success", id, st, err)
	}
	e.WantOK("ibv_end_poll", q.EndPoll())
}

func cqxNextPollInOrder(t *tester, e *env) {
	q := cqxMust(t, e, verbs.CQInitAttrEx{CQE: 16, WCFlags: verbs.WCStandardFlags})
	var want []uint64
	for i := range 10 {
		id := uint64(100 + i)
		want = append(want, id)
		e.Push(q, verbs.WC{WRID: id, Opcode: verbs.WCRecv, ByteLen: uint32(i)}, false)
	}
	got := cqxDrain(t, e, q)
	if len(got) != len(want) {
		t.Fatalf("the iterator read %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("the iterator read %v, want %v in that order (CQ-17)", got, want)
		}
	}
	// A completion added after next_poll's ENOENT is the next one.
	e.Push(q, verbs.WC{WRID: 1, Opcode: verbs.WCSend}, false)
	e.WantOK("ibv_start_poll", q.StartPoll())
	e.WantErrno("ibv_next_poll at the end", q.NextPoll(), syscall.ENOENT)
	e.Push(q, verbs.WC{WRID: 2, Opcode: verbs.WCSend}, false)
	e.WantOK("ibv_next_poll after a completion arrived", q.NextPoll())
	if id, _, _ := q.Current(); id != 2 {
		t.Errorf("after ENOENT and a new completion next_poll gave wr_id %d, want 2", id)
	}
	e.WantOK("ibv_end_poll", q.EndPoll())
	if rest := e.PollAll(q, 4); len(rest) != 0 {
		t.Errorf("ibv_poll_cq after the batch found %d completions; end_poll consumed both", len(rest))
	}
}

func cqxIteratorMisuse(t *tester, e *env) {
	q := cqxMust(t, e, verbs.CQInitAttrEx{CQE: 4, WCFlags: verbs.WCStandardFlags})
	e.WantErrno("ibv_next_poll without start_poll", q.NextPoll(), syscall.EINVAL)
	e.WantErrno("ibv_end_poll without start_poll", q.EndPoll(), syscall.EINVAL)
	e.Push(q, verbs.WC{WRID: 1, Opcode: verbs.WCSend}, false)
	e.Push(q, verbs.WC{WRID: 2, Opcode: verbs.WCSend}, false)
	e.WantOK("ibv_start_poll", q.StartPoll())
	e.WantErrno("ibv_start_poll inside a batch", q.StartPoll(), syscall.EINVAL)
	if id, _, _ := q.Current(); id != 1 {
		t.Errorf("the refused start_poll moved the iterator to wr_id %d", id)
	}
	n, err := q.Poll(make([]verbs.WC, 2))
	e.WantErrno("ibv_poll_cq inside a batch", err, syscall.EBUSY)
	if n != 0 {
		t.Errorf("ibv_poll_cq inside a batch returned %d completions", n)
	}
	e.WantErrno("ibv_resize_cq inside a batch", q.Resize(8), syscall.EBUSY)
	e.WantOK("ibv_req_notify_cq inside a batch", q.ReqNotify(false))
	e.WantOK("ibv_end_poll", q.EndPoll())
	if got := e.PollAll(q, 4); len(got) != 1 || got[0].WRID != 2 {
		t.Errorf("after the batch ibv_poll_cq found %v, want wr_id 2 alone", got)
	}
	// Destroy ends an open batch.
	e.Push(q, verbs.WC{WRID: 3, Opcode: verbs.WCSend}, false)
	e.WantOK("ibv_start_poll", q.StartPoll())
	cqDestroy(t, e, q, "ibv_destroy_cq inside a batch")
	e.WantErrno("ibv_end_poll after destroy", q.EndPoll(), syscall.EINVAL)
}

func cqxNoCurrentOutsideBatch(t *tester, e *env) {
	q := cqxMust(t, e, verbs.CQInitAttrEx{CQE: 4, WCFlags: verbs.WCStandardFlags})
	e.Push(q, verbs.WC{WRID: 1, Opcode: verbs.WCSend}, false)
	if _, err := q.ReadOpcode(); err == nil {
		t.Errorf("ibv_wc_read_opcode before start_poll succeeded")
	}
	if _, _, err := q.Current(); err == nil {
		t.Errorf("wr_id before start_poll was available")
	}
	e.WantOK("ibv_start_poll", q.StartPoll())
	e.WantErrno("ibv_next_poll", q.NextPoll(), syscall.ENOENT)
	if _, err := q.ReadByteLen(); err == nil {
		t.Errorf("ibv_wc_read_byte_len after next_poll's ENOENT succeeded")
	}
	e.WantOK("ibv_end_poll", q.EndPoll())
	if _, err := q.ReadOpcode(); err == nil {
		t.Errorf("ibv_wc_read_opcode after end_poll succeeded")
	}
}

func cqxBatchConsumesVisited(t *tester, e *env) {
	q := cqxMust(t, e, verbs.CQInitAttrEx{CQE: 8, WCFlags: verbs.WCStandardFlags})
	for i := range 4 {
		e.Push(q, verbs.WC{WRID: uint64(i + 1), Opcode: verbs.WCSend}, false)
	}
	e.WantOK("ibv_start_poll", q.StartPoll())
	e.WantOK("ibv_next_poll", q.NextPoll())
	e.WantOK("ibv_end_poll", q.EndPoll())
	if got := e.PollAll(q, 8); len(got) != 2 || got[0].WRID != 3 || got[1].WRID != 4 {
		t.Errorf("after a batch that visited 2 of 4, ibv_poll_cq found %v; want wr_ids 3 and 4", got)
	}
	// The current completion keeps its slot until end_poll.
	full := cqxMust(t, e, verbs.CQInitAttrEx{CQE: 1, WCFlags: verbs.WCStandardFlags})
	c := full.CQE()
	for i := range c {
		e.Push(full, verbs.WC{WRID: uint64(i + 1), Opcode: verbs.WCSend}, false)
	}
	e.WantOK("ibv_start_poll", full.StartPoll())
	if over := e.Push(full, verbs.WC{WRID: 100, Opcode: verbs.WCSend}, false); !over {
		t.Errorf("a completion added to a full CQ during a batch fitted; the batch's completions keep their slots until end_poll")
	}
	e.WantOK("ibv_end_poll", full.EndPoll())
	if ev, err := cqWaitAsyncTry(e); err == nil {
		ev.Ack()
	}
	if !e.Profile.OverrunDrops {
		return // the CQ is in its error state for good (CQ-23 A)
	}
	cqxDrain(t, e, full)
	if over := e.Push(full, verbs.WC{WRID: 101, Opcode: verbs.WCSend}, false); over {
		t.Errorf("a completion added after end_poll emptied the CQ overran")
	}
}

func cqxTimestamps(t *tester, e *env) {
	if e.Profile.NoCQTimestamps {
		t.Logf("not checked: the profile offers no completion timestamps (CQX-02)")
		return
	}
	clock, ok := e.Dev.(Clock)
	if !ok {
		t.Logf("not checked: the device's time is not virtual (conformance.Clock)")
		return
	}
	q := cqxMust(t, e, verbs.CQInitAttrEx{CQE: 8, WCFlags: verbs.WCExCompletionTimestamp | verbs.WCExCompletionTimestampWallclock})
	clock.Tick(1000)
	e.Push(q, verbs.WC{WRID: 1, Opcode: verbs.WCSend}, false)
	clock.Tick(250)
	e.Push(q, verbs.WC{WRID: 2, Opcode: verbs.WCSend}, false)
	e.Push(q, verbs.WC{WRID: 3, Opcode: verbs.WCSend}, false)
	var ts, ns []uint64
	err := q.StartPoll()
	for ; err == nil; err = q.NextPoll() {
		a, err1 := q.ReadCompletionTS()
		b, err2 := q.ReadCompletionWallclockNS()
		if err := errors.Join(err1, err2); err != nil {
			t.Fatalf("reading timestamps: %v", err)
		}
		ts, ns = append(ts, a), append(ns, b)
	}
	e.WantOK("ibv_end_poll", q.EndPoll())
	if len(ts) != 3 {
		t.Fatalf("read %d completions, want 3", len(ts))
	}
	if ns[1]-ns[0] != 250 || ns[2] != ns[1] {
		t.Errorf("wallclock timestamps %v: want 250 ns apart, then equal", ns)
	}
	if ts[0] >= ts[1] || ts[1] != ts[2] {
		t.Errorf("completion timestamps %v: want increasing with the clock, equal at one tick", ts)
	}
}

func cqxIsACQ(t *tester, e *env) {
	ch := e.Channel()
	q := cqxMust(t, e, verbs.CQInitAttrEx{CQE: 8, Context: "cqx", Channel: ch, WCFlags: verbs.WCStandardFlags})
	e.WantOK("ibv_req_notify_cq", q.ReqNotify(false))
	e.Push(q, verbs.WC{WRID: 1, Opcode: verbs.WCSend}, false)
	if got := cqxDrain(t, e, q); len(got) != 1 {
		t.Errorf("iterator read %v", got)
	}
	e.Push(q, verbs.WC{WRID: 2, Opcode: verbs.WCSend}, false)
	got, cqCtx := e.GetEvent("the event of an armed extended CQ", ch)
	if got != verbs.CQ(q) || cqCtx != "cqx" {
		t.Errorf("event names %v with context %v; want the extended CQ and \"cqx\" (CQ-04)", got, cqCtx)
	}
	e.NoEvent("a second event without re-arming (NOTIFY-01)", ch)
	// Mixed polling: poll_cq and the iterator share one queue.
	for i := range 5 {
		e.Push(q, verbs.WC{WRID: uint64(10 + i), Opcode: verbs.WCSend}, false)
	}
	var ids []uint64
	buf := make([]verbs.WC, 1)
	if n, err := q.Poll(buf); n == 1 && err == nil {
		ids = append(ids, buf[0].WRID)
	}
	e.WantOK("ibv_start_poll", q.StartPoll())
	id, _, _ := q.Current()
	ids = append(ids, id)
	e.WantOK("ibv_end_poll", q.EndPoll())
	for _, w := range e.PollAll(q, 8) {
		ids = append(ids, w.WRID)
	}
	if len(ids) != 6 || ids[0] != 2 || ids[1] != 10 || ids[2] != 11 || ids[5] != 14 {
		t.Errorf("mixed polling read %v; want 2, 10..14 once each, in order", ids)
	}
	// A read but unacked event holds the destroy (CQ-13).
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := q.DestroyContext(ctx)
	if e.Profile.DestroyBusyOnUnacked {
		e.WantErrno("ibv_destroy_cq with an unacked event", err, syscall.EBUSY)
	} else if err == nil {
		t.Errorf("ibv_destroy_cq with an unacked event returned at once; it waits for the ack (CQ-13)")
	}
	e.WantOK("ibv_ack_cq_events", q.AckEvents(1))
	cqDestroy(t, e, q, "ibv_destroy_cq after the ack")
}

// cqWaitAsyncTry returns the next async event if one is queued.
func cqWaitAsyncTry(e *env) (verbs.AsyncEvent, error) { return e.Ctx.TryGetAsyncEvent() }
