package ops

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/verbsim/verbsim/verbs"
)

// TestParseErrors: a line that is no operation of a Machine, or that gives
// an argument a Machine's operations never take, is refused with its line.
func TestParseErrors(t *testing.T) {
	for _, c := range []struct{ src, err string }{
		{"poll_cq n=4", "line 1: poll_cq: missing cq="},
		{"\n\nconnect a=x b=y", "line 3: connect: not an operation"},
		{"req_notify_cq cq=A next solicited", "expected next or solicited"},
		{"req_notify_cq cq=A", "expected next or solicited"},
		{"post_recv qp=q wr_id=1 len=64", "len=64: a Machine's is 0"},
		{"modify_qp qp=q state=rts dest_qpn=0x42", "dest_qpn=0x42"},
		{"modify_qp qp=q state=rts mask=(state,bogus) dest_qpn=0xfffff0", "bogus is no attribute"},
		{"complete cq=A wr_id=1 opcode=send status=fine byte_len=0", "status=fine"},
		{"poll_cq cq=A n=x", "n=x: expected a number"},
		{"destroy_cq cq=A extra", "unexpected argument extra"},
		{"create_cq ctx=ctx cqe=1", "expected the new object's name"},
		{"create_cq c ctx=other cqe=1", "ctx=other"},
		{"create_qp sq_sig_all pd=pd type=rc send_cq=c recv_cq=c send_wr=1 recv_wr=1", "expected the new object's name"},
	} {
		_, err := Parse([]byte(c.src))
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("Parse(%q) = %v, want an error with %q", c.src, err, c.err)
		}
	}
}

// TestParseSkips: narration, blank lines, expected-output blocks and the
// header are no operations.
func TestParseSkips(t *testing.T) {
	src := "# a run\nfabric devices=(a)\n\nopen_device ctx dev=a\n\nalloc_pd pd ctx=ctx\n\ncreate_ah ah pd=pd\n\n" +
		"# narration\nget_async_event ctx=ctx\n----\nibv_get_async_event(ctx) failed: EAGAIN\nresize_cq cq=x cqe=1\n\nhold cq=x\n"
	got, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]Op{GetAsync{}, Hold{CQ: "x"}}, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// FuzzParse: Parse never panics, and whatever it reads prints as lines it
// reads back the same.
func FuzzParse(f *testing.F) {
	for _, op := range []Op{
		CreateChannel{Name: "ch0"}, CreateCQ{Name: "cq0", CQE: -1, Channel: "ch0", Vector: 65536}, Arm{CQ: "cq0", Solicited: true},
		Push{CQ: "cq0", WC: verbs.WC{WRID: 7, Opcode: verbs.WCRecvRDMAWithImm, WCFlags: verbs.WCWithImm, ImmData: 7, ByteLen: 64, QPNum: 0x12}, Solicited: true},
		Push{CQ: "cq0", WC: verbs.WC{WRID: 8, Status: verbs.WCLocLenErr, QPNum: 0x11, VendorErr: 0x99}},
		Poll{CQ: "cq0", N: 3, Ex: true}, GetEvent{Channel: "ch0"}, Ack{CQ: "cq0", N: -1}, Resize{CQ: "cq0", CQE: 17},
		DestroyCQ{CQ: "cq0"}, DestroyChannel{Channel: "ch0"}, GetAsync{}, AckAsync{Event: 2}, Hold{CQ: "cq0"}, Release{CQ: "cq0"},
		CreateQP{Name: "qp0", Type: verbs.QPType(99), SendCQ: "cq0", RecvCQ: "cq1", MaxSendWR: 4, MaxRecvWR: 0, SigAll: true},
		ModifyQP{QP: "qp0", To: verbs.QPStateUnknown, Mask: verbs.QPAttrState | verbs.QPAttrCap},
		PostSend{QP: "qp0", WRIDs: []uint64{1, 2}, Signaled: []uint64{2}, UD: true}, PostRecv{QP: "qp0", WRIDs: []uint64{3}}, DestroyQP{QP: "qp0"},
	} {
		f.Add(op.String())
	}
	f.Fuzz(func(t *testing.T, src string) {
		ops, err := Parse([]byte(src))
		if err != nil {
			return
		}
		var b strings.Builder
		for _, op := range ops {
			b.WriteString(op.String() + "\n\n")
		}
		again, err := Parse([]byte(b.String()))
		if err != nil {
			t.Fatalf("%q parses, but its operations print as %q, which does not: %v", src, b.String(), err)
		}
		if d := cmp.Diff(ops, again); d != "" {
			t.Fatalf("%q: printed and parsed again, the operations differ (-first +again):\n%s", src, d)
		}
	})
}
