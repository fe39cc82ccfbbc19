package pattern

import (
	"bytes"
	"encoding/binary"
	"testing"
)

func TestFillDependsOnSeedAlone(t *testing.T) {
	if !bytes.Equal(Fill(7, 64), Fill(7, 64)) {
		t.Fatal("Fill(7, 64) differs between calls")
	}
	if bytes.Equal(Fill(7, 64), Fill(8, 64)) {
		t.Fatal("Fill(7, 64) equals Fill(8, 64)")
	}
	if !bytes.Equal(Fill(7, 10), Fill(7, 64)[:10]) {
		t.Fatal("a shorter fill is not a prefix of a longer one")
	}
	if len(Fill(1, -1)) != 0 {
		t.Fatal("a negative length makes bytes")
	}
}

func TestPayloadCarriesItsSeed(t *testing.T) {
	p := Payload(0x1234, 16)
	if got := binary.LittleEndian.Uint64(p); got != 0x1234 {
		t.Fatalf("the payload starts with %#x, want the seed", got)
	}
	if !bytes.Equal(p[8:], Fill(0x1234, 16)[8:]) {
		t.Fatal("past the seed the payload is not the fill")
	}
	if !bytes.Equal(Payload(3, 7), Fill(3, 7)) {
		t.Fatal("a payload shorter than 8 bytes is not the fill")
	}
}
