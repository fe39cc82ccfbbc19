package fuzz

import (
	"iter"

	"github.com/verbsim/verbsim/conformance/ops"
	"github.com/verbsim/verbsim/verbs"
)

// DecodeQP turns raw fuzz input into operations on QPs and the CQs and
// channels they use, for m. Like Decode, it reads one operation at a time:
// the low nibble of the first byte b selects it, its high nibble a = b>>4
// is the argument, and some operations read one or two more bytes x and y
// (zeros once the input ends). QP, CQ and channel numbers index the objects
// created successfully, modulo their number.
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
// The machine refuses the posts and modifies that could make a request
// execute, and posts of no request (see ops.Machine.Allows); they are
// skipped, so every input stays valid.
//
// Example: 08 08 00 00 24 01 01 01 06 03 05 2B 04 09 10 creates a CQ of 8
// entries and an RC QP with four slots per queue on it, takes the QP to RTS,
// posts three receives and three sends (the first and third signaled),
// moves it to ERR and polls the six flush completions.
func DecodeQP(data []byte, m *ops.Machine) iter.Seq[ops.Op] {
	cqCodes := [8]byte{0x1, 0x5, 0x2, 0x0, 0x6, 0xB, 0x9, 0x7}
	return decode(data, m, func(b byte, next func() byte) (ops.Op, bool) {
		a := int(b >> 4)
		qp, haveQP := nth(m.QPs(), a&7)
		switch c := b & 0x0F; c {
		case 0x0:
			x, y := next(), next()
			sc, ok1 := nth(m.CQs(), a&3)
			rc, ok2 := nth(m.CQs(), int(x&3))
			o := ops.CreateQP{Name: m.NextName("qp"), SendCQ: sc, RecvCQ: rc,
				Type:   [4]verbs.QPType{verbs.QPTypeRC, verbs.QPTypeUC, verbs.QPTypeUD, verbs.QPType(99)}[x>>2&3],
				SigAll: x&0x10 != 0, MaxSendWR: int(y & 7), MaxRecvWR: int(y >> 3 & 7)}
			if y&7 == 7 {
				o.MaxSendWR = m.Limits().MaxQPWR + 1
			}
			return o, ok1 && ok2
		case 0x1, 0x2:
			return m.Up(qp), haveQP
		case 0x3:
			x := next()
			if x&8 != 0 {
				return m.Spoiled(qp, verbs.QPState(x&7)), haveQP
			}
			return ops.ModifyQP{QP: qp, To: verbs.QPState(x & 7)}, haveQP
		case 0x4:
			to := verbs.QPStateErr
			if a&8 != 0 {
				to = verbs.QPStateReset
			}
			return ops.ModifyQP{QP: qp, To: to}, haveQP
		case 0x5:
			x := next()
			o := ops.PostSend{QP: qp, WRIDs: m.NextWRIDs(int(x & 7)), UD: m.QPType(qp) == verbs.QPTypeUD}
			for j, id := range o.WRIDs {
				if j < 5 && (x>>3)&(1<<j) != 0 {
					o.Signaled = append(o.Signaled, id)
				}
			}
			return o, haveQP
		case 0x6:
			return ops.PostRecv{QP: qp, WRIDs: m.NextWRIDs(int(next() & 7))}, haveQP
		case 0x7:
			return ops.DestroyQP{QP: qp}, haveQP
		default:
			return decodeCQ(m, cqCodes[c-8], a, next)
		}
	})
}
