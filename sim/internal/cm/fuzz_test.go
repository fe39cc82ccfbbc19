package cm_test

import (
	"bytes"
	"testing"

	"github.com/verbsim/verbsim/sim/internal/cm"
)

// FuzzDecode feeds arbitrary bytes to Decode (CM-32): it must never panic,
// and whatever it accepts must encode back to a MAD that decodes to the
// same message.
func FuzzDecode(f *testing.F) {
	for _, m := range []cm.Msg{fullREQ(), {Attr: cm.AttrREJ, Reason: 28}, {Attr: cm.AttrSIDRREP, Status: 1}} {
		b, _ := m.Append(nil)
		f.Add(b)
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := cm.Decode(b)
		if err != nil {
			return
		}
		again, err := m.Append(nil)
		if err != nil {
			t.Fatalf("a decoded %v does not encode: %v", m.Attr, err)
		}
		m2, err := cm.Decode(again)
		if err != nil || m2.Attr != m.Attr || !bytes.Equal(m2.Private, m.Private) || m2.LocalCommID != m.LocalCommID {
			t.Fatalf("re-decoding a %v: %+v, %v", m.Attr, m2, err)
		}
		if h, err := cm.ParseCMAHeader(m.Private); err == nil {
			buf := make([]byte, cm.CMAHeaderSize)
			h.Put(buf)
			if h2, err := cm.ParseCMAHeader(buf); err != nil || h2 != h {
				t.Fatalf("CMA header round trip: %+v -> %+v, %v", h, h2, err)
			}
		}
	})
}
