package tracefmt

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/verbsim/verbsim/sim/trace"
	"github.com/verbsim/verbsim/verbs"
)

func recs() []trace.Record {
	var out []trace.Record
	seq := uint64(0)
	add := func(tick uint64, r trace.Record) {
		seq++
		r.Tick, r.Seq = tick, seq
		out = append(out, r)
	}
	verb := func(obj, name, detail string) trace.Record {
		return trace.Record{Kind: trace.KindVerb, Object: obj, Name: name, Detail: detail}
	}
	send := &trace.Packet{Transport: verbs.QPTypeRC, Kind: trace.PacketSend, Len: 64, First: true, Last: true}
	add(0, verb("a/ctx#1", "open_device", ""))
	for range 3 {
		add(1832917, verb("a/qp 0x11", "post_recv", "1 of 1 WR(s) posted"))
	}
	add(1832917, verb("b/qp 0x11", "post_recv", "1 of 1 WR(s) posted"))
	add(1900000, trace.Record{Kind: trace.KindPacket, Object: "a/qp 0x11", Name: "send", Packet: send, Peer: "b/qp 0x11"})
	add(1900640, trace.Record{Kind: trace.KindPacket, Object: "b/qp 0x11", Name: "receive", Packet: send})
	add(1900640, trace.Record{Kind: trace.KindCompletion, Object: "b/cq#1", Name: "completion",
		WC: &trace.WC{QPNum: 0x11, WRID: 1, Opcode: verbs.WCRecv}})
	add(1900640, trace.Record{Kind: trace.KindEvent, Object: "b/cq#1", Name: "arm fired", Detail: "event queued on the channel"})
	add(5000000000, trace.Record{Kind: trace.KindTimer, Object: "a/qp 0x11", Name: "timer fired", Timer: trace.TimerACK, Why: "ACK timeout"})
	add(5000000000, trace.Record{Kind: trace.KindState, Object: "a/qp 0x11", Name: "state ERR", Why: "an error moved the QP to ERR"})
	add(5000000000, trace.Record{Kind: trace.KindEvent, Object: "a/ctx#1", Name: "raise", Async: &trace.Async{Type: verbs.EventQPFatal}, Peer: "a/qp 0x11"})
	add(5000000001, trace.Record{Kind: trace.KindFault, Object: "fabric", Name: "arm fault", Fault: 1, Detail: "#1 drop", Why: "skip 0, count 1"})
	add(5000000002, trace.Record{Kind: trace.KindPacket, Object: "a/qp 0x11", Name: "drop", Fault: 1, Why: "fault #1: drop",
		Packet: &trace.Packet{Transport: verbs.QPTypeRC, Kind: trace.PacketSend, PSN: 1, Len: 64, First: true, Last: true}})
	add(5000000002, trace.Record{Object: "a/qp 0x11", Name: "something new"})
	return out
}

// TestSame: a run collapses records equal in every field but time and
// sequence number, the groups they point to compared by value.
func TestSame(t *testing.T) {
	a := recs()[5]
	b := a
	b.Tick, b.Seq = 7, 99
	b.Packet = &trace.Packet{}
	*b.Packet = *a.Packet
	if !Same(&a, &b) {
		t.Errorf("%v and %v differ", a, b)
	}
	b.Packet.PSN++
	if Same(&a, &b) {
		t.Errorf("%v and %v are the same", a, b)
	}
	c := a
	c.Packet = nil
	if Same(&a, &c) || Same(&c, &a) {
		t.Error("a record with a packet is the same as one without")
	}
}

func TestFormatTime(t *testing.T) {
	for ns, want := range map[uint64]string{0: "0 ns", 640: "640 ns", 4096: "4.096 µs", 1832917: "1.832917 ms", 1500000000: "1.5 s"} {
		if got := FormatTime(ns); got != want {
			t.Errorf("FormatTime(%d) = %q, want %q", ns, got, want)
		}
	}
}

func TestTextCollapsesRuns(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, recs(), 0, Filter{}, Text); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 14 {
		t.Fatalf("%d lines:\n%s", len(lines), b.String())
	}
	for i, want := range map[int]string{
		0:  "t=0 ns #1 a/ctx#1: open_device",
		1:  "t=1.832917 ms #2 a/qp 0x11: post_recv: 1 of 1 WR(s) posted ×3 (#2…#4)",
		2:  "t=1.832917 ms #5 b/qp 0x11: post_recv: 1 of 1 WR(s) posted",
		3:  "t=1.9 ms #6 a/qp 0x11: send RC SEND psn=0 len=64 first last to b/qp 0x11",
		7:  "t=5 s #10 a/qp 0x11: timer fired (ACK timeout)",
		13: "# 15 of 15 records in 13 lines; runs of identical records are counted ×N; time is virtual",
	} {
		if lines[i] != want {
			t.Errorf("line %d: %q, want %q", i, lines[i], want)
		}
	}
	// A run whose records differ in time says until when.
	r := Collapse([]trace.Record{{Tick: 1, Seq: 1, Object: "x", Name: "y"}, {Tick: 2000, Seq: 2, Object: "x", Name: "y"}}, Filter{})
	if len(r) != 1 || r[0].String() != "t=1 ns #1 x: y ×2 (#1…#2, until t=2 µs)" {
		t.Errorf("%v", r)
	}
}

func TestFilter(t *testing.T) {
	for _, tt := range []struct {
		filter string
		seqs   []uint64 // the first record of each line
	}{
		{"kind=packet", []uint64{6, 7, 14}},
		{"kind=completion|event", []uint64{8, 9, 12}},
		{"obj=b/*", []uint64{5, 7, 8, 9}},
		{"obj=b", []uint64{5, 7, 8, 9}},
		{"obj=a/qp*,kind=verb", []uint64{2}},
		{"obj=?/cq#1|fabric", []uint64{8, 9, 13}},
		{"kind=verb,kind=timer", []uint64{1, 2, 5, 10}},
		{"obj=*0x11,kind=packet", []uint64{6, 7, 14}},
		{"obj=a/qp", []uint64{}}, // neither the object nor one under it
	} {
		f, err := ParseFilter(tt.filter)
		if err != nil {
			t.Fatalf("%s: %v", tt.filter, err)
		}
		got := []uint64{}
		for _, r := range Collapse(recs(), f) {
			got = append(got, r.First.Seq)
		}
		if !slicesEqual(got, tt.seqs) {
			t.Errorf("filter %s: lines start at %v, want %v", tt.filter, got, tt.seqs)
		}
	}
	for _, bad := range []string{"kind=packets", "obj", "color=red", "obj=", "kind=verb|", "obj=a,,kind=verb"} {
		if _, err := ParseFilter(bad); err == nil || !strings.Contains(err.Error(), "trace filter") {
			t.Errorf("ParseFilter(%q) = %v, want an error", bad, err)
		}
	}
	// Collapsing happens after filtering: a's three post_recvs stay one
	// line, b's is another.
	f, _ := ParseFilter("obj=b/*|a/qp*,kind=verb")
	if r := Collapse(recs(), f); len(r) != 2 || r[0].Count != 3 {
		t.Errorf("%v", r)
	}
}

func slicesEqual(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestJSON(t *testing.T) {
	var b bytes.Buffer
	f, _ := ParseFilter("obj=a/qp*")
	if err := Write(&b, recs(), 7, f, JSON); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if lines[0] != `{"tick":1832917,"seq":2,"kind":"verb","object":"a/qp 0x11","name":"post_recv","detail":"1 of 1 WR(s) posted","what":"post_recv: 1 of 1 WR(s) posted","count":3,"last_seq":4,"last_tick":1832917}` {
		t.Errorf("line 1: %s", lines[0])
	}
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		if m["object"] != "a/qp 0x11" {
			t.Errorf("filtered out: %s", l)
		}
	}
	if len(lines) != 6 || !strings.Contains(lines[1], `"peer":"b/qp 0x11"`) || strings.Contains(lines[1], "count") {
		t.Errorf("%s", b.String())
	}
	if _, err := ParseFormat("yaml"); err == nil {
		t.Error("ParseFormat(yaml): no error")
	}
}

func TestDroppedIsSaid(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, recs()[:1], 3, Filter{}, Text); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "# 3 older records were overwritten\n") {
		t.Errorf("%q", b.String())
	}
}
