package trace

import (
	"slices"
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/verbs"
)

// recordCase is one record and how it reads: its line (Record.Line) and
// its JSON (Record.MarshalJSON).
type recordCase struct {
	name string
	rec  Record
	line string
	json string
}

func verbCall() recordCase {
	return recordCase{"a verb with its peer and detail",
		Record{Kind: KindVerb, Object: "a/mr#1", Name: "reg_mr", Peer: "a/pd#1", Detail: "length 4096 lkey 0x102 rkey 0x182"},
		"a/mr#1: reg_mr on a/pd#1: length 4096 lkey 0x102 rkey 0x182",
		`{"tick":0,"seq":0,"kind":"verb","object":"a/mr#1","name":"reg_mr","peer":"a/pd#1","detail":"length 4096 lkey 0x102 rkey 0x182","what":"reg_mr on a/pd#1: length 4096 lkey 0x102 rkey 0x182"}`}
}

func failedVerb() recordCase {
	return recordCase{"a failed verb: its errno and error",
		Record{Kind: KindVerb, Object: "a/cq#1", Name: "destroy_cq", Errno: syscall.EBUSY, Why: "ibv_destroy_cq: EBUSY (device or resource busy): 1 QP still uses the CQ"},
		"a/cq#1: destroy_cq (ibv_destroy_cq: EBUSY (device or resource busy): 1 QP still uses the CQ)",
		`{"tick":0,"seq":0,"kind":"verb","object":"a/cq#1","name":"destroy_cq","errno":"EBUSY","why":"ibv_destroy_cq: EBUSY (device or resource busy): 1 QP still uses the CQ","what":"destroy_cq"}`}
}

func packetSent() recordCase {
	return recordCase{"a packet sent to its peer",
		Record{Kind: KindPacket, Object: "a/qp 0x11", Name: "send", Peer: "b/qp 0x12",
			Packet: &Packet{Transport: verbs.QPTypeRC, Kind: PacketSend, PSN: 3, Len: 64, First: true, Last: true}},
		"a/qp 0x11: send RC SEND psn=3 len=64 first last to b/qp 0x12",
		`{"tick":0,"seq":0,"kind":"packet","object":"a/qp 0x11","name":"send","peer":"b/qp 0x12","packet":{"transport":"RC","kind":"SEND","psn":3,"len":64,"first":true,"last":true},"what":"send RC SEND psn=3 len=64 first last to b/qp 0x12"}`}
}

func nakReceived() recordCase {
	return recordCase{"an RNR NAK received: its NAK kind",
		Record{Kind: KindPacket, Object: "a/qp 0x11", Name: "receive", Packet: &Packet{Transport: verbs.QPTypeRC, Kind: PacketAck, NAK: NAKRNR}},
		"a/qp 0x11: receive RC RNR_NAK psn=0",
		`{"tick":0,"seq":0,"kind":"packet","object":"a/qp 0x11","name":"receive","packet":{"transport":"RC","kind":"ACK","psn":0,"nak":"RNR_NAK"},"what":"receive RC RNR_NAK psn=0"}`}
}

func nakDecided() recordCase {
	return recordCase{"a responder's decision to NAK: a NAK kind with no packet",
		Record{Kind: KindPacket, Object: "b/qp 0x12", Name: "RNR NAK", Packet: &Packet{NAK: NAKRNR}, Why: "no receive WR", Rule: "TEST-07"},
		"b/qp 0x12: RNR NAK (no receive WR (TEST-07))",
		`{"tick":0,"seq":0,"kind":"packet","object":"b/qp 0x12","name":"RNR NAK","packet":{"nak":"RNR_NAK"},"why":"no receive WR","rule":"TEST-07","what":"RNR NAK"}`}
}

func completionOK() recordCase {
	return recordCase{"a completion: its WC fields",
		Record{Kind: KindCompletion, Object: "b/cq#1", Name: "completion", WC: &WC{QPNum: 0x12, WRID: 7, Opcode: verbs.WCRecv}},
		"b/cq#1: completion qp 0x12 wr_id 7 IBV_WC_SUCCESS IBV_WC_RECV",
		`{"tick":0,"seq":0,"kind":"completion","object":"b/cq#1","name":"completion","wc":{"qp_num":18,"wr_id":7,"status":"IBV_WC_SUCCESS","opcode":"IBV_WC_RECV"},"what":"completion qp 0x12 wr_id 7 IBV_WC_SUCCESS IBV_WC_RECV"}`}
}

func completionErr() recordCase {
	return recordCase{"an error completion has no valid opcode (as the catalogue says)",
		Record{Kind: KindCompletion, Object: "b/cq#1", Name: "completion", WC: &WC{QPNum: 0x12, WRID: 8, Status: verbs.WCWRFlushErr, Opcode: verbs.WCRDMAWrite}},
		"b/cq#1: completion qp 0x12 wr_id 8 IBV_WC_WR_FLUSH_ERR",
		`{"tick":0,"seq":0,"kind":"completion","object":"b/cq#1","name":"completion","wc":{"qp_num":18,"wr_id":8,"status":"IBV_WC_WR_FLUSH_ERR"},"what":"completion qp 0x12 wr_id 8 IBV_WC_WR_FLUSH_ERR"}`}
}

func asyncRaised() recordCase {
	return recordCase{"an async event on its element",
		Record{Kind: KindEvent, Object: "a/async", Name: "raise", Async: &Async{Type: verbs.EventCQErr}, Peer: "a/cq#2"},
		"a/async: raise IBV_EVENT_CQ_ERR on a/cq#2",
		`{"tick":0,"seq":0,"kind":"event","object":"a/async","name":"raise","peer":"a/cq#2","async":{"type":"IBV_EVENT_CQ_ERR"},"what":"raise IBV_EVENT_CQ_ERR on a/cq#2"}`}
}

func portEvent() recordCase {
	return recordCase{"a port event names its port",
		Record{Kind: KindEvent, Object: "a/async", Name: "raise", Async: &Async{Type: verbs.EventPortErr, Port: 1}},
		"a/async: raise IBV_EVENT_PORT_ERR port 1",
		`{"tick":0,"seq":0,"kind":"event","object":"a/async","name":"raise","async":{"type":"IBV_EVENT_PORT_ERR","port":1},"what":"raise IBV_EVENT_PORT_ERR port 1"}`}
}

func faultHit() recordCase {
	return recordCase{"a packet a targeted fault dropped: its number",
		Record{Kind: KindPacket, Object: "a/qp 0x11", Name: "drop", Fault: 2, Why: "fault #2: drop",
			Packet: &Packet{Transport: verbs.QPTypeUC, Kind: PacketWrite, PSN: 9, Len: 1024, First: true}},
		"a/qp 0x11: drop UC WRITE psn=9 len=1024 first (fault #2: drop)",
		`{"tick":0,"seq":0,"kind":"packet","object":"a/qp 0x11","name":"drop","packet":{"transport":"UC","kind":"WRITE","psn":9,"len":1024,"first":true},"fault":2,"why":"fault #2: drop","what":"drop UC WRITE psn=9 len=1024 first"}`}
}

func note() recordCase {
	return recordCase{"a note: the zero kind, text with < and & as is",
		Record{Object: "fabric", Name: "a <note> & more"},
		"fabric: a <note> & more",
		`{"tick":0,"seq":0,"kind":"other","object":"fabric","name":"a <note> & more","what":"a <note> & more"}`}
}

// The rule IDs of these tests are samples (TEST-07), not the catalogue's:
// the tests check how a record reads, not a rule.

func TestRecordViews(t *testing.T) {
	for _, tc := range []recordCase{verbCall(), failedVerb(), packetSent(), nakReceived(), nakDecided(),
		completionOK(), completionErr(), asyncRaised(), portEvent(), faultHit(), note()} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.rec.Line(); got != tc.line {
				t.Errorf("Line:\n got %s\nwant %s", got, tc.line)
			}
			b, err := tc.rec.MarshalJSON()
			if err != nil || string(b) != tc.json {
				t.Errorf("JSON (%v):\n got %s\nwant %s", err, b, tc.json)
			}
			r := tc.rec
			r.Tick, r.Seq = 7, 3
			if got, want := r.String(), "t=7 #3 "+tc.line; got != want {
				t.Errorf("String: %q, want %q", got, want)
			}
		})
	}
}

func TestRulesAndNAK(t *testing.T) {
	for _, tt := range []struct {
		rule string
		want []string
	}{{"", nil}, {"TEST-07", []string{"TEST-07"}}, {"TEST-06, TEST-26", []string{"TEST-06", "TEST-26"}}, {"TEST-26 B", []string{"TEST-26"}}} {
		r := Record{Rule: tt.rule}
		if got := r.Rules(); !slices.Equal(got, tt.want) {
			t.Errorf("Rules(%q) = %q, want %q", tt.rule, got, tt.want)
		}
	}
	if r := nakDecided().rec; r.NAK() != NAKRNR {
		t.Errorf("NAK() = %v", r.NAK())
	}
	if r := completionOK().rec; r.NAK() != NotNAK {
		t.Errorf("NAK() of a record without a packet = %v", r.NAK())
	}
}

func TestNames(t *testing.T) {
	for _, k := range Kinds() {
		if got, ok := ParseKind(k.String()); !ok || got != k {
			t.Errorf("ParseKind(%q) = %v, %v", k.String(), got, ok)
		}
	}
	if len(Kinds()) != int(numKinds) {
		t.Errorf("Kinds lists %d of %d kinds", len(Kinds()), numKinds)
	}
	if _, ok := ParseKind("packets"); ok {
		t.Error("ParseKind(packets) succeeded")
	}
	for v, want := range map[string]string{
		Kind(99).String(): "Kind(99)", PacketKind(99).String(): "PacketKind(99)", NAKKind(99).String(): "NAKKind(99)",
		TimerKind(99).String(): "TimerKind(99)", TimerRNR.String(): "RNR wait", TimerACK.String(): "ACK timeout",
		NAKSeqErr.String(): "NAK_SEQ", PacketReadResp.String(): "READ_RESP",
	} {
		if v != want {
			t.Errorf("%q, want %q", v, want)
		}
	}
}
