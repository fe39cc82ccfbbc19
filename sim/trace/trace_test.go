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
