package trace

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/verbs"
)

// FuzzRecordViews: any record, enums out of range and text of any bytes
// included, renders without a panic: its line is one line when its texts
// are, and its JSON is valid JSON whose what is the record's What.
func FuzzRecordViews(f *testing.F) {
	f.Add(uint8(2), uint8(6), uint8(1), uint8(2), uint32(2), uint32(0), uint32(5), "send", "a/qp 0x11", "b/qp 0x12", "", "why", "TEST-07", uint16(0), true)
	f.Add(uint8(99), uint8(99), uint8(99), uint8(99), uint32(99), uint32(99), uint32(99), "<&>\"\\", "\x00\xff", "", "x: y", "", "", uint16(22), false)
	f.Fuzz(func(t *testing.T, kind, pkind, nak, timer uint8, transport, status, event uint32,
		name, object, peer, detail, why, rule string, errno uint16, groups bool) {
		r := Record{Kind: Kind(kind), Name: name, Object: object, Peer: peer, Detail: detail, Why: why, Rule: rule,
			Errno: syscall.Errno(errno), Timer: TimerKind(timer), Fault: int(errno % 3)}
		if groups {
			r.Packet = &Packet{Transport: verbs.QPType(transport), Kind: PacketKind(pkind), NAK: NAKKind(nak), Len: int(status)}
			r.WC = &WC{QPNum: transport, WRID: uint64(event), Status: verbs.WCStatus(status), Opcode: verbs.WCOpcode(event)}
			r.Async = &Async{Type: verbs.EventType(event), Port: pkind}
		}
		line := r.String()
		texts := name + object + peer + detail + why + rule
		if !strings.Contains(texts, "\n") && strings.Contains(line, "\n") {
			t.Fatalf("a line break from no text: %q", line)
		}
		b, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var back struct {
			What string `json:"what"`
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if want := viaJSON(t, r.What()); back.What != want || back.Kind != r.Kind.String() {
			t.Fatalf("JSON %s: what %q kind %q, want %q %q", b, back.What, back.Kind, want, r.Kind.String())
		}
		_ = r.Rules()
	})
}

// viaJSON is s as JSON carries it: invalid UTF-8 replaced.
func viaJSON(t *testing.T, s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back string
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	return back
}
