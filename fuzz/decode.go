package fuzz

import (
	"fmt"
	"strings"

	"github.com/verbsim/verbsim/conformance"
)

// MaxOps bounds the operations Decode returns, so one input stays cheap.
const MaxOps = 256

// Decode turns raw fuzz input into a sequence of operations on CQs and
// completion channels, for conformance.Machine. Every byte string decodes to
// some sequence; nothing is rejected.
//
// The input is read one operation at a time. The first byte b of an
// operation selects it by its low nibble, and its high nibble a = b>>4 is
// the operation's argument. Some operations read one more byte x; an input
// that ends early reads zeros. CQ and channel numbers index the CQs created
// successfully and the channels created so far, modulo their number
// (conformance.Op).
//
//	low nibble  operation        uses
//	0x0         create-channel   -
//	0x1         create-cq        a&3: channel (0 none, 1..3 channel a&3-1);
//	                             x&0x1F: cqe (see below); x>>5: comp vector
//	                             (0..4 -> 0, 5 -> 1, 6 -> -1, 7 -> 65536)
//	0x2         arm              a&7: cq; a&8: solicited only
//	0x3 0x4 0xF push             a&7: cq; x&7: completion kind
//	                             (conformance.WCKind); x&8: solicited bit
//	0x5         poll             a&7: cq; x%17: num_entries (0..16)
//	0x6         get-event        a&3: channel (non-blocking)
//	0x7         ack              a&7: cq; (x&7)-1: count (-1..6)
//	0x8         resize           a&7: cq; x&0x1F: cqe (see below)
//	0x9         destroy-cq       a&7: cq
//	0xA         destroy-channel  a&3: channel
//	0xB         get-async        - (non-blocking)
//	0xC         ack-async        a: which of the async events read so far
//	0xD         ref              a&7: cq
//	0xE         unref            a&7: cq
//
// A cqe field c (0..31) means: 0..16 that value, 17 -1, 18 max_cqe+1, and
// 19..31 the small sizes c-18 (1..13).
//
// Pushed completions get wr_ids 1, 2, 3... in input order.
//
// Example: 00 11 01 02 03 00 03 00 0B is create-channel, create-cq cqe=1 on
// channel 0, arm (next), push a successful send twice (the second overruns),
// get-async.
func Decode(data []byte) []conformance.Op {
	var ops []conformance.Op
	var wrid uint64
	next := reader(&data)
	for len(data) > 0 && len(ops) < MaxOps {
		b := next()
		ops = append(ops, decodeCQ(b&0x0F, int(b>>4), next, &wrid))
	}
	return ops
}

// reader returns a function that takes the next byte of *data, or 0 once
// it is used up.
func reader(data *[]byte) func() byte {
	return func() byte {
		if len(*data) == 0 {
			return 0
		}
		x := (*data)[0]
		*data = (*data)[1:]
		return x
	}
}

// decodeCQ decodes the operation with Decode's code c (the low nibble) and
// argument a (the high nibble), reading further bytes from next.
func decodeCQ(c byte, a int, next func() byte, wrid *uint64) conformance.Op {
	switch c {
	case 0x1:
		x := next()
		op := conformance.Op{Kind: conformance.OpCreateCQ, Channel: a&3 - 1, Vector: vector(x >> 5)}
		op.N, op.AboveMax = cqe(x & 0x1F)
		return op
	case 0x2:
		return conformance.Op{Kind: conformance.OpArm, CQ: a & 7, Solicited: a&8 != 0}
	case 0x3, 0x4, 0xF:
		x := next()
		*wrid++
		return conformance.Op{Kind: conformance.OpPush, CQ: a & 7, Solicited: x&8 != 0,
			WC: conformance.WCKind(x & 7).WC(*wrid)}
	case 0x5:
		// Bit 3 of the argument polls through the ibv_start_poll iterator.
		return conformance.Op{Kind: conformance.OpPoll, CQ: a & 7, N: int(next() % 17), Ex: a&8 != 0}
	case 0x6:
		return conformance.Op{Kind: conformance.OpGetEvent, Channel: a & 3}
	case 0x7:
		return conformance.Op{Kind: conformance.OpAck, CQ: a & 7, N: int(next()&7) - 1}
	case 0x8:
		op := conformance.Op{Kind: conformance.OpResize, CQ: a & 7}
		op.N, op.AboveMax = cqe(next() & 0x1F)
		return op
	case 0x9:
		return conformance.Op{Kind: conformance.OpDestroyCQ, CQ: a & 7}
	case 0xA:
		return conformance.Op{Kind: conformance.OpDestroyChannel, Channel: a & 3}
	case 0xB:
		return conformance.Op{Kind: conformance.OpGetAsync}
	case 0xC:
		return conformance.Op{Kind: conformance.OpAckAsync, N: a}
	case 0xD:
		return conformance.Op{Kind: conformance.OpRef, CQ: a & 7}
	case 0xE:
		return conformance.Op{Kind: conformance.OpUnref, CQ: a & 7}
	}
	return conformance.Op{Kind: conformance.OpCreateChannel}
}

func cqe(c byte) (n int, aboveMax bool) {
	switch {
	case c <= 16:
		return int(c), false
	case c == 17:
		return -1, false
	case c == 18:
		return 0, true
	}
	return int(c) - 18, false
}

func vector(v byte) int {
	switch v {
	case 5:
		return 1
	case 6:
		return -1
	case 7:
		return 1 << 16
	}
	return 0
}

// Format renders ops one per line, numbered from 0, as a failing input
// reads after decoding.
func Format(ops []conformance.Op) string {
	var b strings.Builder
	for i, op := range ops {
		fmt.Fprintf(&b, "%3d  %v\n", i, op)
	}
	return b.String()
}
