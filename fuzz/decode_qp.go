package fuzz

import (
	"github.com/verbsim/verbsim/conformance"
	"github.com/verbsim/verbsim/verbs"
)

// DecodeQP turns raw fuzz input into a sequence of operations on QPs and the
// CQs and channels they use, for conformance.Machine. Like Decode, it reads
// one operation at a time: the low nibble of the first byte b selects it,
// its high nibble a = b>>4 is the argument, and some operations read one or
// two more bytes x and y (zeros once the input ends). QP, CQ and channel
// numbers index the objects created successfully, modulo their number.
//
//	low nibble  operation        uses
//	0x0         create-qp        a&3: send CQ; x&3: receive CQ; (x>>2)&3:
//	                             qp_type (0 RC, 1 UC, 2 UD, 3 a type that does
//	                             not exist); x&0x10: sq_sig_all; y&7:
//	                             max_send_wr (7: max_qp_wr+1); (y>>3)&7:
//	                             max_recv_wr
//	0x1 0x2     modify-qp up     a&7: QP; the next state on the way to RTS
//	                             (RTS from SQD and SQE, RESET from ERR)
//	0x3         modify-qp        a&7: QP; x&7: the target state (7 is
//	                             UNKNOWN); x&8: spoil the minimal mask
//	0x4         modify-qp        a&7: QP; a&8: to RESET, else to ERR
//	0x5         post-send        a&7: QP; x&7: requests; x>>3: which of the
//	                             first five are signaled
//	0x6         post-recv        a&7: QP; x&7: requests
//	0x7         destroy-qp       a&7: QP
//	0x8         create-cq        as Decode's 0x1
//	0x9         poll             as Decode's 0x5
//	0xA         arm              as Decode's 0x2
//	0xB         create-channel   -
//	0xC         get-event        as Decode's 0x6
//	0xD         get-async        -
//	0xE         destroy-cq       as Decode's 0x9
//	0xF         ack              as Decode's 0x7
//
// The machine skips the posts and modifies that could make a request
// execute once there is traffic (see conformance.Machine), so every input
// stays valid.
//
// Example: 08 08 00 00 24 01 01 01 06 03 05 2B 04 09 10 creates a CQ of 8
// entries and an RC QP with four slots per queue on it, takes the QP to RTS,
// posts three receives and three sends (the first and third signaled),
// moves it to ERR and polls the six flush completions.
func DecodeQP(data []byte) []conformance.Op {
	var ops []conformance.Op
	var wrid uint64
	next := reader(&data)
	cqCodes := [8]byte{0x1, 0x5, 0x2, 0x0, 0x6, 0xB, 0x9, 0x7}
	for len(data) > 0 && len(ops) < MaxOps {
		b := next()
		a := int(b >> 4)
		var op conformance.Op
		switch c := b & 0x0F; c {
		case 0x0:
			x, y := next(), next()
			op = conformance.Op{
				Kind: conformance.OpCreateQP, CQ: a & 3, RecvCQ: int(x & 3),
				QPType: [4]verbs.QPType{verbs.QPTypeRC, verbs.QPTypeUC, verbs.QPTypeUD, verbs.QPType(99)}[x>>2&3], SigAll: x&0x10 != 0,
				SendWR: int(y & 7), AboveMax: y&7 == 7, RecvWR: int(y >> 3 & 7),
			}
		case 0x1, 0x2:
			op = conformance.Op{Kind: conformance.OpModifyQP, QP: a & 7, Up: true}
		case 0x3:
			x := next()
			op = conformance.Op{Kind: conformance.OpModifyQP, QP: a & 7, Target: verbs.QPState(x & 7), Illegal: x&8 != 0}
		case 0x4:
			op = conformance.Op{Kind: conformance.OpModifyQP, QP: a & 7, Target: verbs.QPStateErr}
			if a&8 != 0 {
				op.Target = verbs.QPStateReset
			}
		case 0x5:
			x := next()
			op = conformance.Op{Kind: conformance.OpPostSend, QP: a & 7, N: int(x & 7), Signaled: x >> 3}
		case 0x6:
			op = conformance.Op{Kind: conformance.OpPostRecv, QP: a & 7, N: int(next() & 7)}
		case 0x7:
			op = conformance.Op{Kind: conformance.OpDestroyQP, QP: a & 7}
		default:
			op = decodeCQ(cqCodes[c-8], a, next, &wrid)
		}
		ops = append(ops, op)
	}
	return ops
}
