package scenario

import (
	"strings"

	"github.com/verbsim/verbsim/verbs"
)

// engine_complete.go holds complete: a completion the adapter writes with
// no QP traffic, for lessons about the CQ alone.

func statusOf(name string) verbs.WCStatus {
	if name == "success" {
		return verbs.WCSuccess
	}
	for s := verbs.WCStatus(0); s.Valid(); s++ {
		if strings.EqualFold(strings.TrimPrefix(s.Name(), "IBV_WC_"), name) {
			return s
		}
	}
	return verbs.WCGeneralErr
}

func (in *interp) doComplete(st *Step, a *args) error {
	c := a.ref("cq", "cq")
	if a.err != nil {
		return a.err
	}
	w := verbs.WC{WRID: a.num("wr_id", 0), Status: statusOf(a.str("status", "success"))}
	switch a.str("opcode", "recv") {
	case "recv":
		w.Opcode, w.ByteLen = verbs.WCRecv, 64
	case "recv_imm":
		w.Opcode, w.ByteLen = verbs.WCRecvRDMAWithImm, 64
	case "send":
		w.Opcode = verbs.WCSend
	case "write":
		w.Opcode = verbs.WCRDMAWrite
	case "read":
		w.Opcode = verbs.WCRDMARead
	}
	if w.Status != verbs.WCSuccess {
		w.ByteLen = 0
	}
	completeFields(&w, a)
	over, err := in.obj.cq[c].Push(w, a.has("solicited"))
	sol := ""
	if a.has("solicited") {
		sol = " with the solicited bit"
	}
	if err != nil {
		in.verbResult("(adapter) completion", err)
		return nil
	}
	if over {
		in.say("(adapter) wr_id %d does not fit: the CQ overran", w.WRID)
		return nil
	}
	in.say("(adapter) writes a completion into cq %s: wr_id %d %s %s%s", c, w.WRID, opName(w.Opcode), statusName(w.Status), sol)
	return nil
}
