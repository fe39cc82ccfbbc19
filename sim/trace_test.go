package sim_test

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/trace"
	"github.com/verbsim/verbsim/verbs"
)

// TestTraceRecordsEveryVerb makes every verb call once, some of them fail,
// and checks that each left its record, on the right object, in order, with
// the error of a failed call as its why.
func TestTraceRecordsEveryVerb(t *testing.T) {
	log := &trace.Log{}
	f, err := sim.NewFabric(sim.Config{Trace: log, Devices: []sim.DeviceConfig{{Name: "a"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	fails := func(err error) {
		t.Helper()
		if err == nil {
			t.Fatal("the call succeeded; the test wants it to fail")
		}
	}
	ctx, err := f.Devices()[0].Open()
	must(err)
	pd, err := ctx.AllocPD()
	must(err)
	dev := f.Devices()[0]
	must(dev.SetPortState(1, false))
	ev, err := ctx.TryGetAsyncEvent()
	must(err)
	must(ev.Ack())
	fails(ev.Ack())
	must(dev.SetPortState(1, true))
	ev, err = ctx.TryGetAsyncEvent()
	must(err)
	must(ev.Ack())
	buf := make([]byte, 4096)
	mr, err := pd.RegMR(buf, verbs.AccessLocalWrite)
	must(err)
	_, err = pd.RegMR(nil, verbs.AccessLocalWrite)
	fails(err)
	ah, err := pd.CreateAH(verbs.AHAttr{DLID: 1, PortNum: 1})
	must(err)
	_, err = pd.CreateAH(verbs.AHAttr{DLID: 1, PortNum: 9})
	fails(err)
	ch, err := ctx.CreateCompChannel()
	must(err)
	cq, err := ctx.CreateCQ(16, nil, ch, 0)
	must(err)
	_, err = ctx.CreateCQ(0, nil, nil, 0)
	fails(err)
	srq, err := pd.CreateSRQ(sim.SRQInitAttr{Attr: verbs.SRQAttr{MaxWR: 4, MaxSGE: 1}})
	must(err)
	_, err = srq.PostRecv([]verbs.RecvWR{{WRID: 7, SGList: []verbs.SGE{{Addr: mr.Addr(), Length: 64, LKey: mr.LKey()}}}})
	must(err)
	fails(srq.Modify(&verbs.SRQAttr{SRQLimit: 99}, verbs.SRQLimit))
	_, err = pd.CreateQP(sim.QPInitAttr{Type: verbs.QPTypeRC, Cap: verbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1}})
	fails(err)
	q, err := pd.CreateQP(sim.QPInitAttr{SendCQ: cq, RecvCQ: cq, Type: verbs.QPTypeRC,
		Cap: verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
	must(err)
	fails(q.Modify(&verbs.QPAttr{QPState: verbs.QPStateRTS}, verbs.QPAttrState))
	must(q.Modify(&verbs.QPAttr{QPState: verbs.QPStateInit, PortNum: 1}, verbs.QPAttrState|verbs.QPAttrPort|verbs.QPAttrPKeyIndex|verbs.QPAttrAccessFlags))
	_, err = q.PostRecv([]verbs.RecvWR{{WRID: 9, SGList: []verbs.SGE{{Addr: mr.Addr(), Length: 64, LKey: mr.LKey()}}}})
	must(err)
	wcs := make([]verbs.WC, 4)
	for range 3 { // three empty polls: one record
		n, err := cq.Poll(wcs)
		must(err)
		if n != 0 {
			t.Fatalf("polled %d completions from a new CQ", n)
		}
	}
	must(cq.ReqNotify(false))
	must(q.Modify(&verbs.QPAttr{QPState: verbs.QPStateErr}, verbs.QPAttrState)) // flushes wr_id 9: the arm fires
	got, _, err := ch.GetEvent(context.Background())
	must(err)
	must(got.AckEvents(1))
	fails(cq.AckEvents(1))
	if n, err := cq.Poll(wcs); err != nil || n != 1 {
		t.Fatalf("poll after the flush: %d, %v", n, err)
	}
	must(f.InjectFatal(q)) // already in ERR: nothing happens
	fails(cq.Destroy())    // the QP still uses it
	must(q.Destroy())
	must(srq.Destroy())
	must(cq.Destroy())
	fails(cq.ReqNotify(true))
	must(ch.Destroy())
	must(ah.Destroy())
	must(mr.Dereg())
	fails(mr.Dereg())
	must(pd.Dealloc())
	must(ctx.Close())

	qpName := fmt.Sprintf("a/qp %#x", q.Num())
	const (
		verb  = trace.KindVerb
		event = trace.KindEvent
		comp  = trace.KindCompletion
	)
	// Each record by its fields, and the start of its text (What).
	want := []struct {
		object string
		kind   trace.Kind
		name   string
		errno  syscall.Errno
		what   string
	}{
		{"a/ctx#1", verb, "open_device", 0, "open_device"},
		{"a/pd#1", verb, "alloc_pd", 0, "alloc_pd on a/ctx#1: handle 1"},
		{"a/port 1", trace.KindFault, "link PORT_DOWN", 0, "link PORT_DOWN"},
		{"a/ctx#1", event, "raise", 0, "raise IBV_EVENT_PORT_ERR port 1"},
		{"a/ctx#1", verb, "get_async_event", 0, "get_async_event IBV_EVENT_PORT_ERR port 1"},
		{"a/ctx#1", verb, "ack_async_event", 0, "ack_async_event IBV_EVENT_PORT_ERR port 1"},
		{"a/ctx#1", verb, "ack_async_event", syscall.EINVAL, "ack_async_event IBV_EVENT_PORT_ERR port 1"},
		{"a/ctx#1", verb, "get_async_event", 0, "get_async_event IBV_EVENT_PORT_ACTIVE port 1"},
		{"a/mr#1", verb, "reg_mr", 0, "reg_mr on a/pd#1: length 4096"},
		{"a/pd#1", verb, "reg_mr", syscall.EINVAL, "reg_mr: length 0"},
		{"a/ah#1", verb, "create_ah", 0, "create_ah on a/pd#1: port 1"},
		{"a/pd#1", verb, "create_ah", syscall.EINVAL, "create_ah: port 9"},
		{"a/chan#1", verb, "create_comp_channel", 0, "create_comp_channel"},
		{"a/cq#1", verb, "create_cq", 0, "create_cq: cqe=16"},
		{"a/ctx#1", verb, "create_cq", syscall.EINVAL, "create_cq: cqe=0"},
		{"a/srq#1", verb, "create_srq", 0, "create_srq on a/pd#1: max_wr 4"},
		{"a/srq#1", verb, "post_srq_recv", 0, "post_srq_recv: 1 of 1"},
		{"a/srq#1", verb, "modify_srq", syscall.EINVAL, "modify_srq"},
		{"a/pd#1", verb, "create_qp", syscall.EINVAL, "create_qp"},
		{qpName, verb, "create_qp", 0, "create_qp: RC"},
		{qpName, verb, "modify_qp", syscall.EINVAL, "modify_qp: RESET→RTS"},
		{qpName, verb, "modify_qp", 0, "modify_qp: RESET→INIT"},
		{qpName, verb, "post_recv", 0, "post_recv: 1 of 1"},
		{"a/cq#1", verb, "poll_cq", 0, "poll_cq: empty (num_entries 4)"},
		{"a/cq#1", verb, "req_notify_cq", 0, "req_notify_cq: solicited_only=false"},
		{qpName, verb, "modify_qp", 0, "modify_qp: INIT→ERR"},
		{"a/cq#1", comp, "completion", 0, "completion " + qpName[2:] + " wr_id 9 IBV_WC_WR_FLUSH_ERR"},
		{"a/cq#1", event, "arm fired", 0, "arm fired"},
		{"a/cq#1", verb, "get_cq_event", 0, "get_cq_event"},
		{"a/cq#1", verb, "ack_cq_events", 0, "ack_cq_events: 1"},
		{"a/cq#1", verb, "ack_cq_events", syscall.EINVAL, "ack_cq_events: 1"},
		{"a/cq#1", verb, "poll_cq", 0, "poll_cq: 1 completion(s), first wr_id 9"},
		{"a/cq#1", verb, "destroy_cq", syscall.EBUSY, "destroy_cq"},
		{qpName, verb, "destroy_qp", 0, "destroy_qp"},
		{"a/srq#1", verb, "destroy_srq", 0, "destroy_srq"},
		{"a/cq#1", verb, "destroy_cq", 0, "destroy_cq"},
		{"a/cq#1", verb, "req_notify_cq", syscall.EINVAL, "req_notify_cq: solicited_only=true"},
		{"a/chan#1", verb, "destroy_comp_channel", 0, "destroy_comp_channel"},
		{"a/ah#1", verb, "destroy_ah", 0, "destroy_ah"},
		{"a/mr#1", verb, "dereg_mr", 0, "dereg_mr"},
		{"a/mr#1", verb, "dereg_mr", syscall.EINVAL, "dereg_mr"},
		{"a/pd#1", verb, "dealloc_pd", 0, "dealloc_pd"},
		{"a/ctx#1", verb, "close_device", 0, "close_device"},
	}
	recs := log.Records()
	i := 0
	empty := 0
	for _, r := range recs {
		if r.Kind == verb && r.Name == "poll_cq" && strings.HasPrefix(r.Detail, "empty") {
			empty++
		}
		if r.Errno != 0 && !strings.HasPrefix(r.Why, "ibv_") {
			t.Errorf("%v: a failed verb whose why is not its error", r)
		}
		if w := want[min(i, len(want)-1)]; i < len(want) && r.Object == w.object && r.Kind == w.kind && r.Name == w.name &&
			r.Errno == w.errno && strings.HasPrefix(r.What(), w.what) {
			i++
		}
	}
	if i < len(want) {
		var b strings.Builder
		for _, r := range recs {
			b.WriteString(r.String() + "\n")
		}
		t.Fatalf("no record %+v (after the %d before it) in the trace:\n%s", want[i], i, b.String())
	}
	if empty != 1 {
		t.Errorf("three empty polls in a row left %d records, want 1", empty)
	}
}
