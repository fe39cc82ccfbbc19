package cm_test

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/verbsim/verbsim/sim/internal/cm"
)

func fullREQ() cm.Msg {
	return cm.Msg{
		Attr: cm.AttrREQ, TID: 0x1122334455667788, LocalCommID: 0xdeadbeef,
		ServiceID: cm.ServiceID(0x0106, 7471), LocalCAGUID: 0x0002c90300000100, LocalQKey: 0,
		LocalQPN: 0xabcdef, ResponderResources: 16, InitiatorDepth: 8,
		RemoteCMResponseTimeout: 20, LocalCMResponseTimeout: 20, Transport: cm.TransportRC, FlowControl: true,
		StartingPSN: 0x123456, RetryCount: 7, RNRRetryCount: 6, PKey: 0xffff, PathMTU: 5, MaxCMRetries: 15, SRQ: true,
		PrimaryLocalLID: 1, PrimaryRemoteLID: 2, PrimaryLocalGID: [16]byte{0xfe, 0x80, 15: 1}, PrimaryRemoteGID: [16]byte{0xfe, 0x80, 15: 2},
		FlowLabel: 0xfffff, PacketRate: 0x3f, TrafficClass: 0xa0, HopLimit: 64, SL: 15, SubnetLocal: true, LocalAckTimeout: 19,
		Private: bytes.Repeat([]byte{0x5a}, 92),
	}
}

// TestRoundTrip_CM32 encodes one message of every attribute with every
// field set to a value that uses its full width, and decodes it back.
func TestRoundTrip_CM32(t *testing.T) {
	priv := func(n int) []byte { return bytes.Repeat([]byte{0xa5}, n) }
	msgs := []cm.Msg{
		fullREQ(),
		{Attr: cm.AttrMRA, LocalCommID: 1, RemoteCommID: 2, MsgTarget: cm.MsgREQ, ServiceTimeout: 24, Private: priv(222)},
		{Attr: cm.AttrREJ, LocalCommID: 1, RemoteCommID: 2, MsgTarget: cm.MsgOther, Reason: 28, Private: priv(148)},
		{Attr: cm.AttrREP, LocalCommID: 1, RemoteCommID: 2, LocalQKey: 7, LocalQPN: 0xffffff, StartingPSN: 0xffffff,
			ResponderResources: 255, InitiatorDepth: 255, TargetAckDelay: 31, FlowControl: true, RNRRetryCount: 7, SRQ: true,
			LocalCAGUID: ^uint64(0), Private: priv(196)},
		{Attr: cm.AttrRTU, LocalCommID: 1, RemoteCommID: 2, Private: priv(224)},
		{Attr: cm.AttrDREQ, LocalCommID: 1, RemoteCommID: 2, LocalQPN: 0x11, Private: priv(220)},
		{Attr: cm.AttrDREP, LocalCommID: 1, RemoteCommID: 2, Private: priv(224)},
		{Attr: cm.AttrSIDRREQ, LocalCommID: 9, PKey: 0xffff, ServiceID: cm.ServiceID(0x0111, 1), Private: priv(216)},
		{Attr: cm.AttrSIDRREP, LocalCommID: 9, Status: 2, LocalQPN: 0x12, ServiceID: cm.ServiceID(0x0111, 1), LocalQKey: 0x01234567, Private: priv(136)},
	}
	for _, m := range msgs {
		b, err := m.Append(nil)
		if err != nil {
			t.Fatalf("%v: %v", m.Attr, err)
		}
		if len(b) != cm.MADSize || b[1] != cm.ClassCM {
			t.Fatalf("%v: %d bytes, class %#x", m.Attr, len(b), b[1])
		}
		got, err := cm.Decode(b)
		if err != nil {
			t.Fatalf("%v: decode: %v", m.Attr, err)
		}
		if d := cmp.Diff(m, got); d != "" {
			t.Errorf("%v round trip (-sent +decoded):\n%s", m.Attr, d)
		}
	}
}

// TestLayout_CM32 pins a few fields of a REQ at the offsets of the IBTA's
// table 106, so that the layout cannot drift with the codec.
func TestLayout_CM32(t *testing.T) {
	m := fullREQ()
	b, _ := m.Append(nil)
	d := b[cm.HeaderSize:]
	for _, c := range []struct {
		name string
		got  []byte
		want []byte
	}{
		{"attribute ID", b[16:18], []byte{0x00, 0x10}},
		{"local comm ID", d[0:4], []byte{0xde, 0xad, 0xbe, 0xef}},
		{"service ID", d[8:16], []byte{0, 0, 0, 0, 0x01, 0x06, 0x1d, 0x2f}},
		{"local QPN and responder resources", d[32:36], []byte{0xab, 0xcd, 0xef, 16}},
		{"initiator depth", d[39:40], []byte{8}},
		{"remote CM timeout 20, RC, flow control", d[43:44], []byte{20<<3 | 0<<1 | 1}},
		{"starting PSN, local CM timeout 20, retry 7", d[44:48], []byte{0x12, 0x34, 0x56, 20<<3 | 7}},
		{"P_Key", d[48:50], []byte{0xff, 0xff}},
		{"MTU 5, RNR retry 6", d[50:51], []byte{5<<4 | 6}},
		{"max CM retries 15, SRQ", d[51:52], []byte{15<<4 | 1<<3}},
		{"SL 15, subnet local", d[94:95], []byte{15<<4 | 1<<3}},
		{"local ACK timeout 19", d[95:96], []byte{19 << 3}},
		{"private data", d[140:141], []byte{0x5a}},
	} {
		if !bytes.Equal(c.got, c.want) {
			t.Errorf("%s: % x, want % x", c.name, c.got, c.want)
		}
	}
}

func TestPrivateTooLong_CM33(t *testing.T) {
	for _, a := range []cm.Attr{cm.AttrREQ, cm.AttrREP, cm.AttrREJ, cm.AttrSIDRREQ, cm.AttrSIDRREP} {
		m := cm.Msg{Attr: a, Private: make([]byte, a.PrivateSize()+1)}
		if _, err := m.Append(nil); err != cm.ErrTooLong {
			t.Errorf("%v with %d bytes of private data: %v, want ErrTooLong", a, a.PrivateSize()+1, err)
		}
	}
	sizes := map[cm.Attr]int{cm.AttrREQ: 92, cm.AttrMRA: 222, cm.AttrREJ: 148, cm.AttrREP: 196, cm.AttrRTU: 224,
		cm.AttrDREQ: 220, cm.AttrDREP: 224, cm.AttrSIDRREQ: 216, cm.AttrSIDRREP: 136, 0x19: 0}
	for a, n := range sizes {
		if got := a.PrivateSize(); got != n {
			t.Errorf("%v.PrivateSize() = %d, want %d", a, got, n)
		}
	}
}

func TestDecodeRefuses_CM32(t *testing.T) {
	good := fullREQ()
	b, _ := good.Append(nil)
	for name, mutate := range map[string]func([]byte) []byte{
		"short":         func(b []byte) []byte { return b[:255] },
		"long":          func(b []byte) []byte { return append(b, 0) },
		"base version":  func(b []byte) []byte { b[0] = 2; return b },
		"class":         func(b []byte) []byte { b[1] = 0x03; return b },
		"class version": func(b []byte) []byte { b[2] = 1; return b },
		"method":        func(b []byte) []byte { b[3] = 0x01; return b },
		"attribute":     func(b []byte) []byte { b[17] = 0x19; return b },
		"transport":     func(b []byte) []byte { b[cm.HeaderSize+43] |= 3 << 1; return b },
		"MTU 0":         func(b []byte) []byte { b[cm.HeaderSize+50] &= 0x0f; return b },
		"MTU 6":         func(b []byte) []byte { b[cm.HeaderSize+50] = 6<<4 | b[cm.HeaderSize+50]&0x0f; return b },
	} {
		c := mutate(append([]byte(nil), b...))
		if _, err := cm.Decode(c); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

func TestCMAHeader_CM13(t *testing.T) {
	for _, h := range []cm.CMAHeader{
		{SrcPort: 40000, Src: netip.MustParseAddr("10.0.1.1"), Dst: netip.MustParseAddr("10.0.2.1")},
		{SrcPort: 1, Src: netip.MustParseAddr("fd00::1"), Dst: netip.MustParseAddr("fd00::2")},
	} {
		b := make([]byte, cm.CMAHeaderSize)
		h.Put(b)
		got, err := cm.ParseCMAHeader(b)
		if err != nil || got != h {
			t.Errorf("%+v: parsed %+v, %v", h, got, err)
		}
	}
	if _, err := cm.ParseCMAHeader(make([]byte, 10)); err == nil {
		t.Error("a 10-byte header parsed")
	}
	b := make([]byte, cm.CMAHeaderSize)
	b[1] = 5 << 4
	if _, err := cm.ParseCMAHeader(b); err == nil {
		t.Error("IP version 5 parsed")
	}
	if ps, port, ok := cm.SplitServiceID(cm.ServiceID(0x0106, 7471)); !ok || ps != 0x0106 || port != 7471 {
		t.Errorf("SplitServiceID: %#x %d %v", ps, port, ok)
	}
	if _, _, ok := cm.SplitServiceID(1 << 40); ok {
		t.Error("a service ID beyond the IP port spaces split")
	}
}
