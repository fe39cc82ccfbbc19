package scenario

// engine_describe.go renders what the engine returns in the script's words:
// object names, async events and completions, and the rules they show.

import (
	"fmt"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// cqName returns the scenario name of a CQ.
func (in *interp) cqName(q *sim.CQ) string {
	for n, c := range in.obj.cq {
		if c == q {
			return n
		}
	}
	return "?"
}

// qpName returns the scenario name of QP num on device dev ("": any
// device), or the number in hex.
func (in *interp) qpName(dev string, num uint32) string {
	for _, n := range in.obj.order {
		if o, ok := in.obj.qp[n]; ok && o.q.Num() == num && (dev == "" || o.dev == dev) {
			return n
		}
	}
	return fmt.Sprintf("%#x", num)
}

// isUD reports whether QP num of device dev is a UD QP.
func (in *interp) isUD(dev string, num uint32) bool {
	o, ok := in.obj.qp[in.qpName(dev, num)]
	return ok && o.q.Type() == verbs.QPTypeUD
}

// peerName returns the name of QP num, preferring one on a device other
// than dev: the sender of a UD message.
func (in *interp) peerName(dev string, num uint32) string {
	for _, n := range in.obj.order {
		if o, ok := in.obj.qp[n]; ok && o.q.Num() == num && o.dev != dev {
			return n
		}
	}
	return in.qpName(dev, num)
}

func (in *interp) describeAsync(ev sim.AsyncEvent) string {
	what := ev.Type().String()
	if c := ev.CQ(); c != nil {
		return what + " on cq " + in.cqName(c)
	}
	if o := ev.QP(); o != nil {
		for _, n := range in.obj.order {
			if x, ok := in.obj.qp[n]; ok && x.q == o {
				return what + " on qp " + n
			}
		}
		return what + " on qp " + in.qpName("", o.Num())
	}
	if o := ev.SRQ(); o != nil {
		for n, s := range in.obj.srq {
			if s == o {
				return what + " on srq " + n
			}
		}
	}
	if ev.Port() != 0 {
		return fmt.Sprintf("%s on port %d", what, ev.Port())
	}
	return what
}

// opName and statusName are how the scenarios print a completion's opcode
// and status: the C enumerator, as the trace, the timelines and WC.String
// do (package verbs, "Names").
func opName(o verbs.WCOpcode) string { return o.String() }

func statusName(s verbs.WCStatus) string { return s.String() }

// describeWC renders a completion for a learner.
func (in *interp) describeWC(dev string, w verbs.WC) string {
	if w.Status != verbs.WCSuccess {
		// Only wr_id, status, qp_num and vendor_err are valid in an error
		// completion (FLUSH-06); the opcode is not shown.
		if w.QPNum == 0 {
			return fmt.Sprintf("wr_id %d  %s", w.WRID, statusName(w.Status))
		}
		return fmt.Sprintf("wr_id %d  %s  (qp %s)", w.WRID, statusName(w.Status), in.qpName(dev, w.QPNum))
	}
	s := fmt.Sprintf("wr_id %d  %s  %s", w.WRID, statusName(w.Status), opName(w.Opcode))
	if w.Opcode.IsRecv() || w.Opcode == verbs.WCRDMARead {
		s += fmt.Sprintf("  %d bytes", w.ByteLen)
	}
	if in.isUD(dev, w.QPNum) && w.Opcode.IsRecv() {
		grh := "no GRH flag: no GRH came, those 40 are undefined"
		if w.WCFlags&verbs.WCGRH != 0 {
			grh = "GRH flag: the GRH is in those 40"
		}
		s += fmt.Sprintf(" = 40 kept for the GRH + %d of payload (%s)  src_qp %s", max(int(w.ByteLen)-40, 0), grh, in.peerName(dev, w.SrcQP))
	}
	if w.QPNum == 0 {
		return s
	}
	return s + fmt.Sprintf("  (qp %s)", in.qpName(dev, w.QPNum))
}

// explainWC notes the rules a polled completion shows.
func (in *interp) explainWC(dev string, w verbs.WC) {
	switch w.Status {
	case verbs.WCSuccess:
		if in.isUD(dev, w.QPNum) && w.Opcode.IsRecv() {
			in.note("XFER-21", "WC-10", "WC-12")
		}
	case verbs.WCWRFlushErr:
		in.note("FLUSH-01")
		for _, n := range in.obj.order {
			if o, ok := in.obj.qp[n]; ok && o.q.Num() == w.QPNum && o.dev == dev && o.unsignaled[w.WRID] {
				in.note("FLUSH-04")
			}
		}
	case verbs.WCRNRRetryExcErr:
		in.note("XFER-07", "XFER-08")
	case verbs.WCRetryExcErr:
		in.note("XFER-10")
	case verbs.WCRemAccessErr:
		in.note("XFER-14", "XFER-15")
	case verbs.WCRemInvReqErr, verbs.WCLocLenErr:
		in.note("XFER-05", "FLUSH-12")
	default:
		in.note("FLUSH-03")
	}
}
