package qp

import "github.com/verbsim/verbsim/verbs"

// Supported reports whether the simulator implements t: RC, UC, UD and
// the two XRC types, XRCSend (the initiator) and XRCRecv (the target).
func Supported(t verbs.QPType) bool {
	return t == verbs.QPTypeRC || t == verbs.QPTypeUC || t == verbs.QPTypeUD || t == verbs.QPTypeXRCSend || t == verbs.QPTypeXRCRecv
}

// reliable reports whether t is a reliable connected transport: RC, or
// one side of XRC, which runs RC's protocol (ACKs, retries, RNR).
func reliable(t verbs.QPType) bool {
	return t == verbs.QPTypeRC || t == verbs.QPTypeXRCSend || t == verbs.QPTypeXRCRecv
}

// sendFlagsKnown is every send flag ibv_post_send accepts.
const sendFlagsKnown = verbs.SendFence | verbs.SendSignaled | verbs.SendSolicited | verbs.SendInline | verbs.SendIPCSum
