package notify

import "github.com/verbsim/verbsim/verbs"

// Arm is the notification request pending on a CQ: what ibv_req_notify_cq
// left behind. The zero value is Disarmed.
//
// An Arm is pure state. Request combines a new ibv_req_notify_cq call with the
// pending one; Fires decides whether a completion being added consumes it.
// When Fires returns true the CQ must go back to Disarmed (NOTIFY-01).
type Arm uint8

const (
	// Disarmed: no request pending; new completions raise no event.
	Disarmed Arm = iota
	// ArmSolicited: ibv_req_notify_cq(cq, 1) is pending; only solicited
	// receive completions (and, under ErrorsFire, unsuccessful ones) fire.
	ArmSolicited
	// ArmNext: ibv_req_notify_cq(cq, 0) is pending; the next completion fires.
	ArmNext
)

// String returns "disarmed", "solicited" or "next".
func (a Arm) String() string {
	switch a {
	case Disarmed:
		return "disarmed"
	case ArmSolicited:
		return "solicited"
	case ArmNext:
		return "next"
	}
	return "Arm(" + itoa(int(a)) + ")"
}

// Request returns the pending request after another ibv_req_notify_cq call
// with solicitedOnly. "Next" dominates "solicited" in either call order
// (NOTIFY-07) and repeated requests of one kind collapse into one (NOTIFY-08).
func (a Arm) Request(solicitedOnly bool) Arm {
	if !solicitedOnly || a == ArmNext {
		return ArmNext
	}
	return ArmSolicited
}

// SolicitedPolicy says which unsuccessful completions satisfy a
// solicited-only request. It is the one point where providers disagree
// (NOTIFY-05).
type SolicitedPolicy uint8

const (
	// ErrorsFire is the man-page reading and the default: every completion
	// whose status is not Success fires a solicited-only request, send or
	// receive, flushes included.
	ErrorsFire SolicitedPolicy = iota
	// SolicitedBitOnly is the soft-RoCE (rxe) reading: only the solicited bit
	// the producer passes counts. rxe never sets it on send-side completions,
	// so send errors and send flushes do not fire.
	SolicitedBitOnly
)

// String returns the policy's name.
func (p SolicitedPolicy) String() string {
	switch p {
	case ErrorsFire:
		return "errors-fire"
	case SolicitedBitOnly:
		return "solicited-bit-only"
	}
	return "SolicitedPolicy(" + itoa(int(p)) + ")"
}

// Fires reports whether adding w, whose message carried the solicited-event
// bit when solicited is true, satisfies the pending request a.
//
//   - Disarmed never fires.
//   - ArmNext fires on any completion (NOTIFY-03).
//   - ArmSolicited fires on a successful receive completion of a solicited
//     message, and under ErrorsFire on any unsuccessful completion (NOTIFY-04,
//     NOTIFY-05). A successful send completion never fires it, whatever the
//     solicited argument says (NOTIFY-16): the solicited bit belongs to the
//     receiving side of a message.
//
// Fires does not look at the CQ's contents: only completions added after the
// request reach it (NOTIFY-02).
func (a Arm) Fires(w *verbs.WC, solicited bool, p SolicitedPolicy) bool {
	switch a {
	case ArmNext:
		return true
	case ArmSolicited:
		if w.Status == verbs.WCSuccess {
			// The opcode is trustworthy only on successful completions (WC-03).
			return solicited && w.Opcode.IsClassicRecv()
		}
		if p == ErrorsFire {
			return true
		}
		return solicited
	}
	return false
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}
