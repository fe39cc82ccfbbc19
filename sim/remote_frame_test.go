package sim

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/verbsim/verbsim/sim/internal/qp"
	"github.com/verbsim/verbsim/verbs"
)

// FuzzFrame: frames come from other processes, so decodeFrame must refuse
// or accept any bytes without panicking, and a frame it accepts encodes
// back to the same bytes (every field survives, nothing is invented).
func FuzzFrame(f *testing.F) {
	p := &qp.Packet{Kind: qp.PktSend, Transport: verbs.QPTypeRC, First: true, Last: true, SE: true, Op: verbs.WRSendWithImm,
		SrcQPN: 0x11, DstQPN: 0x12, PSN: 0xabcdef, Imm: 7, RemoteAddr: 1 << 40, RKey: 3, DMALen: 4096,
		CompareAdd: 5, Swap: 6, QKey: 0x1111, Syndrome: qp.SynRNR, RNRTimer: 12, Orig: 9, SL: 3,
		SLID: 1, DLID: 2, Global: true, SGID: verbs.GID{0: 0xfe, 1: 0x80, 15: 1}, DGID: verbs.GID{0: 0xfe, 1: 0x80, 15: 2},
		TClass: 0xb8, HopLimit: 9, FlowLabel: 0x12345, Payload: []byte("payload")}
	f.Add(appendFrame(nil, p))
	p.Payload = nil
	f.Add(appendFrame(nil, p))
	p.Transport, p.SRQN = verbs.QPTypeXRCSend, 0x123456
	f.Add(appendFrame(nil, p))
	f.Add([]byte("VS\x03"))
	f.Fuzz(func(t *testing.T, frame []byte) {
		var p qp.Packet
		if checkFrame(frame) != nil {
			return
		}
		decodeFrame(frame, &p)
		if got := appendFrame(nil, &p); !bytes.Equal(got, frame) {
			// The only field decode normalizes is the PSN, to 24 bits.
			if len(got) != len(frame) || !bytes.Equal(got[:18], frame[:18]) || !bytes.Equal(got[22:], frame[22:]) {
				t.Fatalf("round trip changed the frame:\n%x\n%x", frame, got)
			}
		}
	})
}

// TestFrameRoundTrip: every field of a packet crosses a frame, and the
// decoder reuses the pooled payload buffer.
func TestFrameRoundTrip(t *testing.T) {
	in := qp.Packet{Kind: qp.PktAtomic, Transport: verbs.QPTypeUD, Last: true, Op: verbs.WRAtomicCmpAndSwp,
		SrcQPN: 0xffffff, DstQPN: 1, PSN: 5, Imm: 0xdeadbeef, RemoteAddr: ^uint64(0), RKey: 0x1234,
		DMALen: 8, CompareAdd: 1, Swap: 2, QKey: 3, Syndrome: qp.SynRemOp, RNRTimer: 31, Orig: 4, SL: 15,
		SLID: 0xbfff, DLID: 0x10, SGID: verbs.GID{1, 2, 3}, DGID: verbs.GID{4, 5, 6}, SRQN: 0xabcdef,
		TClass: 0xff, HopLimit: 0xfe, FlowLabel: 0xfffff, Payload: bytes.Repeat([]byte{0xa5}, MaxFramePayload)}
	fr := appendFrame(nil, &in)
	if len(fr) != MaxFrame {
		t.Fatalf("frame of %d bytes, want %d", len(fr), MaxFrame)
	}
	out := qp.Packet{Payload: make([]byte, 0, 8192), Port: 9}
	buf := out.Payload[:1]
	if err := checkFrame(fr); err != nil {
		t.Fatal(err)
	}
	decodeFrame(fr, &out)
	if &out.Payload[0] != &buf[0] {
		t.Error("decode did not reuse the payload buffer")
	}
	in.Port = 0
	if !bytes.Equal(in.Payload, out.Payload) {
		t.Error("payload differs")
	}
	in.Payload, out.Payload = nil, nil
	if !reflect.DeepEqual(in, out) {
		t.Errorf("decoded %+v\nwant    %+v", out, in)
	}
	for _, bad := range [][]byte{nil, fr[:frameHeader-1], append(append([]byte{}, fr...), 0),
		append([]byte{'V', 'S', 2}, fr[3:]...), append([]byte{'V', 'S', 3, 99}, fr[4:]...),
		func() []byte { b := append([]byte{}, fr...); b[112] = 0x10; return b }()} {
		if err := checkFrame(bad); err == nil {
			t.Errorf("frame %x... decoded", bad[:min(len(bad), 8)])
		}
	}
}
