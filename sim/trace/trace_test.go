package trace

import (
	"bytes"
	"strings"
	"testing"
)

func TestRingKeepsTheNewest(t *testing.T) {
	l := &Log{Limit: 3}
	for i := range 5 {
		l.Add(Record{Seq: uint64(i)})
	}
	got := l.Records()
	if len(got) != 3 || got[0].Seq != 2 || got[2].Seq != 4 || l.Dropped != 2 {
		t.Fatalf("records %v, dropped %d", got, l.Dropped)
	}
	l.Reset()
	if l.Len() != 0 || l.Dropped != 0 {
		t.Fatal("Reset kept something")
	}
}

// TestFromIsASuffixOfRecords: From(i) is Records()[i:], for a log and for
// a ring that has wrapped, at every i and past the end.
func TestFromIsASuffixOfRecords(t *testing.T) {
	for _, limit := range []int{0, 4} {
		l := &Log{Limit: limit}
		for n := range 7 {
			all := l.Records()
			for i := range len(all) + 2 {
				var want []Record
				if i < len(all) {
					want = all[i:]
				}
				got := l.From(i)
				if len(got) != len(want) {
					t.Fatalf("limit %d, %d records: From(%d) has %d, want %d", limit, n, i, len(got), len(want))
				}
				for k := range got {
					if got[k].Seq != want[k].Seq {
						t.Fatalf("limit %d, %d records: From(%d)[%d] is %d, want %d", limit, n, i, k, got[k].Seq, want[k].Seq)
					}
				}
			}
			l.Add(Record{Seq: uint64(n)})
		}
	}
}

func TestRenderers(t *testing.T) {
	l := &Log{}
	l.Add(Record{Tick: 4096, Seq: 12, Kind: KindTimer, Object: "a/qp 0x11", Name: "ACK timeout", Timer: TimerACK, Why: "retransmit", Rule: "XFER-10"})
	l.Add(Record{Tick: 5000, Seq: 13, Kind: KindVerb, Object: "a/cq#1", Name: "poll_cq"})
	var text, js bytes.Buffer
	if err := l.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	want := "t=4096 #12 a/qp 0x11: ACK timeout (retransmit (XFER-10))\nt=5000 #13 a/cq#1: poll_cq\n"
	if text.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", text.String(), want)
	}
	if err := l.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(js.String()), "\n")
	if len(lines) != 2 || lines[0] != `{"tick":4096,"seq":12,"kind":"timer","object":"a/qp 0x11","name":"ACK timeout","timer":"ACK timeout","why":"retransmit","rule":"XFER-10","what":"ACK timeout"}` ||
		strings.Contains(lines[1], "why") {
		t.Errorf("json:\n%s", js.String())
	}
}
