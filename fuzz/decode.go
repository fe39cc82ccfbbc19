package fuzz

import (
	"iter"

	"github.com/verbsim/verbsim/conformance/ops"
)

// MaxOps bounds the operations one input decodes to, so one input stays
// cheap.
const MaxOps = 256

// Decode turns raw fuzz input into operations on CQs and completion
// channels for m (an ops.Machine). Every byte string decodes to some
// sequence; nothing is rejected. The sequence is read one operation at a
// time, each once the one before it has been applied, because the objects
// an operation names are among those the earlier ones created.
//
// The first byte b of an operation selects it by its low nibble, and its
// high nibble a = b>>4 is the operation's argument. Some operations read one
// more byte x; an input that ends early reads zeros. CQ and channel numbers
// index the CQs created successfully and the channels created so far,
// modulo their number; an operation that names an object before any
// exists, or that m cannot apply (ops.Machine.Allows), is skipped.
//
//	low nibble  operation        uses
//	0x0         create-channel   -
//	0x1         create-cq        a&3: channel (0 none, 1..3 channel a&3-1);
//	                             x&0x1F: cqe (see below); x>>5: comp vector
//	                             (0..4 -> 0, 5 -> 1, 6 -> -1, 7 -> 65536)
//	0x2         arm              a&7: cq; a&8: solicited only
//	0x3 0x4 0xF push             a&7: cq; x&7: completion kind
//	                             (ops.WCKind); x&8: solicited bit
//	0x5         poll             a&7: cq; x%17: num_entries (0..16); a&8:
//	                             through the poll iterator
//	0x6         get-event        a&3: channel (non-blocking)
//	0x7         ack              a&7: cq; (x&7)-1: count (-1..6)
//	0x8         resize           a&7: cq; x&0x1F: cqe (see below)
//	0x9         destroy-cq       a&7: cq
//	0xA         destroy-channel  a&3: channel
//	0xB         get-async        - (non-blocking)
//	0xC         ack-async        a: which of the async events read so far
//	0xD         hold             a&7: cq
//	0xE         release          a&7: cq
//
// A cqe field c (0..31) means: 0..16 that value, 17 -1, 18 max_cqe+1, and
// 19..31 the small sizes c-18 (1..13).
//
// wr_ids are 1, 2, 3... across the pushes and posts of a run.
//
// Example: 00 11 01 02 03 00 03 00 0B is create-channel, create-cq cqe=1 on
// channel 0, arm (next), push a successful send twice (the second overruns),
// get-async.
func Decode(data []byte, m *ops.Machine) iter.Seq[ops.Op] {
	return decode(data, m, func(b byte, next func() byte) (ops.Op, bool) {
		return decodeCQ(m, b&0x0F, int(b>>4), next)
	})
}

// decode yields the operations read by one, skipping those m cannot apply.
func decode(data []byte, m *ops.Machine, one func(b byte, next func() byte) (ops.Op, bool)) iter.Seq[ops.Op] {
	return func(yield func(ops.Op) bool) {
		next := reader(&data)
		for n := 0; len(data) > 0 && n < MaxOps; n++ {
			op, ok := one(next(), next)
			if ok && m.Allows(op) && !yield(op) {
				return
			}
		}
	}
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

// nth returns names[k mod len(names)], or false when there are none.
func nth(names []string, k int) (string, bool) {
	if len(names) == 0 {
		return "", false
	}
	return names[k%len(names)], true
}

// decodeCQ decodes the operation with Decode's code c (the low nibble) and
// argument a (the high nibble), reading further bytes from next. ok is false
// when it names an object that does not exist.
func decodeCQ(m *ops.Machine, c byte, a int, next func() byte) (op ops.Op, ok bool) {
	cq, haveCQ := nth(m.CQs(), a&7)
	switch c {
	case 0x0:
		return ops.CreateChannel{Name: m.NextName("ch")}, true
	case 0x1:
		x := next()
		o := ops.CreateCQ{Name: m.NextName("cq"), CQE: cqe(m, x&0x1F), Vector: vector(x >> 5)}
		if a&3 > 0 {
			o.Channel, ok = nth(m.Channels(), a&3-1)
			return o, ok
		}
		return o, true
	case 0x2:
		return ops.Arm{CQ: cq, Solicited: a&8 != 0}, haveCQ
	case 0x3, 0x4, 0xF:
		x := next()
		return ops.Push{CQ: cq, Solicited: x&8 != 0, WC: ops.WCKind(x & 7).WC(m.NextWRIDs(1)[0])}, haveCQ
	case 0x5:
		return ops.Poll{CQ: cq, N: int(next() % 17), Ex: a&8 != 0}, haveCQ
	case 0x6:
		ch, ok := nth(m.Channels(), a&3)
		return ops.GetEvent{Channel: ch}, ok
	case 0x7:
		return ops.Ack{CQ: cq, N: int(next()&7) - 1}, haveCQ
	case 0x8:
		return ops.Resize{CQ: cq, CQE: cqe(m, next()&0x1F)}, haveCQ
	case 0x9:
		return ops.DestroyCQ{CQ: cq}, haveCQ
	case 0xA:
		ch, ok := nth(m.Channels(), a&3)
		return ops.DestroyChannel{Channel: ch}, ok
	case 0xB:
		return ops.GetAsync{}, true
	case 0xC:
		if n := m.AsyncRead(); n > 0 {
			return ops.AckAsync{Event: a % n}, true
		}
		return nil, false
	case 0xD:
		return ops.Hold{CQ: cq}, haveCQ
	case 0xE:
		return ops.Release{CQ: cq}, haveCQ
	}
	return nil, false
}

func cqe(m *ops.Machine, c byte) int {
	switch {
	case c <= 16:
		return int(c)
	case c == 17:
		return -1
	case c == 18:
		return m.Limits().MaxCQE + 1
	}
	return int(c) - 18
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
