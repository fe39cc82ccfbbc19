// Package pattern makes the buffer contents the traffic state machine
// (conformance/ops) writes before a request uses them, so that the
// scenario language's fill command (internal/scenario) writes the same
// bytes without depending on the conformance suite.
package pattern

import "encoding/binary"

// Fill returns n bytes that depend on seed alone: an xorshift stream.
func Fill(seed uint64, n int) []byte {
	b := make([]byte, max(n, 0))
	x := seed*0x9e3779b97f4a7c15 | 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x >> 29)
	}
	return b
}

// Payload returns the n bytes of a message with seed: Fill with the seed
// in its first eight bytes (little-endian), so that messages of eight bytes
// or more differ.
func Payload(seed uint64, n int) []byte {
	b := Fill(seed, n)
	if n >= 8 {
		binary.LittleEndian.PutUint64(b, seed)
	}
	return b
}
