package model

import "github.com/verbsim/verbsim/verbs"

// neverProduced are the statuses no RC, UC or UD traffic can end with: the
// reliable datagram ones (WC-S03, S14, S15, S17, S18) and the tag-matching
// ones (WC-S22). MW_BIND_ERR (WC-S06) is not among them: a failed
// memory-window bind produces it (MW-05).
var neverProduced = map[verbs.WCStatus]string{
	verbs.WCLocEECOpErr:      "WC-S03",
	verbs.WCLocRDDViolErr:    "WC-S14",
	verbs.WCRemInvRDReqErr:   "WC-S15",
	verbs.WCInvEECNErr:       "WC-S17",
	verbs.WCInvEECStateErr:   "WC-S18",
	verbs.WCTMErr:            "WC-S22",
	verbs.WCTMRndvIncomplete: "WC-S22",
}

// NeverProduced reports whether no RC, UC or UD traffic ends with status s,
// and if so the rule that says so.
func NeverProduced(s verbs.WCStatus) (rule string, never bool) {
	rule, never = neverProduced[s]
	return rule, never
}

// ClassicOpcode reports whether o is one of the opcodes RC, UC and UD
// traffic completes with (WC-04, WC-05, WC-07).
func ClassicOpcode(o verbs.WCOpcode) bool {
	switch o {
	case verbs.WCSend, verbs.WCRDMAWrite, verbs.WCRDMARead, verbs.WCCompSwap, verbs.WCFetchAdd, verbs.WCBindMW, verbs.WCLocalInv, verbs.WCTSO, verbs.WCAtomicWrite,
		verbs.WCRecv, verbs.WCRecvRDMAWithImm:
		return true
	}
	return false
}
