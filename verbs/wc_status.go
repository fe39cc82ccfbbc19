package verbs

import "strconv"

// WCStatus is the completion status of a work request, enum ibv_wc_status.
// The numbers are fixed by the verbs ABI; WCSuccess is 0.
//
// A Status is data, not an error: a WC with a non-WCSuccess status is an
// ordinary completion that the consumer must inspect (WC-03).
type WCStatus uint32

// Completion statuses, in verbs order (rule IDs WC-S00..WC-S22). The comment
// on each constant says when verbsim produces it.
const (
	// WCSuccess: the WR finished, and so did every earlier unsignaled WR on
	// the same queue; its buffers may be reused (WC-S00).
	WCSuccess WCStatus = iota
	// WCLocLenErr: a local length check failed, on the sender or on the
	// receiver whose posted buffer was too small (WC-S01).
	WCLocLenErr
	// WCLocQPOpErr: internal QP consistency error (WC-S02).
	WCLocQPOpErr
	// WCLocEECOpErr: EE-context error; reliable datagram only, never
	// produced (WC-S03).
	WCLocEECOpErr
	// WCLocProtErr: a local SGE does not name a valid MR for the access
	// (WC-S04).
	WCLocProtErr
	// WCWRFlushErr: the WR was outstanding when, or posted after, the QP
	// entered the error state (WC-S05, FLUSH-01, FLUSH-05).
	WCWRFlushErr
	// WCMWBindErr: a memory-window bind failed (WC-S06).
	WCMWBindErr
	// WCBadRespErr: an RC requester got a response with an unexpected
	// transport opcode (WC-S07).
	WCBadRespErr
	// WCLocAccessErr: RC responder protection error on a local buffer for an
	// incoming RDMA WRITE with immediate (WC-S08).
	WCLocAccessErr
	// WCRemInvReqErr: the responder rejected the request as invalid
	// (WC-S09).
	WCRemInvReqErr
	// WCRemAccessErr: remote protection error on an RDMA or atomic target
	// (WC-S10).
	WCRemAccessErr
	// WCRemOpErr: the responder could not complete the request (WC-S11).
	WCRemOpErr
	// WCRetryExcErr: transport retries exhausted without ACK or NAK
	// (WC-S12).
	WCRetryExcErr
	// WCRNRRetryExcErr: receiver-not-ready retries exhausted (WC-S13).
	WCRNRRetryExcErr
	// WCLocRDDViolErr: reliable datagram only, never produced (WC-S14).
	WCLocRDDViolErr
	// WCRemInvRDReqErr: reliable datagram only, never produced (WC-S15).
	WCRemInvRDReqErr
	// WCRemAbortErr: the responder aborted the operation (WC-S16).
	WCRemAbortErr
	// WCInvEECNErr: reliable datagram only, never produced (WC-S17).
	WCInvEECNErr
	// WCInvEECStateErr: reliable datagram only, never produced (WC-S18).
	WCInvEECStateErr
	// WCFatalErr: catastrophic error (WC-S19).
	WCFatalErr
	// WCRespTimeoutErr: response timeout (WC-S20).
	WCRespTimeoutErr
	// WCGeneralErr: any other error (WC-S21).
	WCGeneralErr
	// WCTMErr: tag-matching error; reserved, never produced (WC-S22).
	WCTMErr
	// WCTMRndvIncomplete: tag-matching rendezvous incomplete; reserved,
	// never produced (WC-S22).
	WCTMRndvIncomplete
)

// statusInfo holds, per Status, the C enumerator name and the text that
// rdma-core 44's ibv_wc_status_str returns. The golden test in this package
// checks both columns against the real library.
var statusInfo = [...]struct{ name, str string }{
	WCSuccess:          {"IBV_WC_SUCCESS", "success"},
	WCLocLenErr:        {"IBV_WC_LOC_LEN_ERR", "local length error"},
	WCLocQPOpErr:       {"IBV_WC_LOC_QP_OP_ERR", "local QP operation error"},
	WCLocEECOpErr:      {"IBV_WC_LOC_EEC_OP_ERR", "local EE context operation error"},
	WCLocProtErr:       {"IBV_WC_LOC_PROT_ERR", "local protection error"},
	WCWRFlushErr:       {"IBV_WC_WR_FLUSH_ERR", "Work Request Flushed Error"},
	WCMWBindErr:        {"IBV_WC_MW_BIND_ERR", "memory management operation error"},
	WCBadRespErr:       {"IBV_WC_BAD_RESP_ERR", "bad response error"},
	WCLocAccessErr:     {"IBV_WC_LOC_ACCESS_ERR", "local access error"},
	WCRemInvReqErr:     {"IBV_WC_REM_INV_REQ_ERR", "remote invalid request error"},
	WCRemAccessErr:     {"IBV_WC_REM_ACCESS_ERR", "remote access error"},
	WCRemOpErr:         {"IBV_WC_REM_OP_ERR", "remote operation error"},
	WCRetryExcErr:      {"IBV_WC_RETRY_EXC_ERR", "transport retry counter exceeded"},
	WCRNRRetryExcErr:   {"IBV_WC_RNR_RETRY_EXC_ERR", "RNR retry counter exceeded"},
	WCLocRDDViolErr:    {"IBV_WC_LOC_RDD_VIOL_ERR", "local RDD violation error"},
	WCRemInvRDReqErr:   {"IBV_WC_REM_INV_RD_REQ_ERR", "remote invalid RD request"},
	WCRemAbortErr:      {"IBV_WC_REM_ABORT_ERR", "aborted error"},
	WCInvEECNErr:       {"IBV_WC_INV_EECN_ERR", "invalid EE context number"},
	WCInvEECStateErr:   {"IBV_WC_INV_EEC_STATE_ERR", "invalid EE context state"},
	WCFatalErr:         {"IBV_WC_FATAL_ERR", "fatal error"},
	WCRespTimeoutErr:   {"IBV_WC_RESP_TIMEOUT_ERR", "response timeout error"},
	WCGeneralErr:       {"IBV_WC_GENERAL_ERR", "general error"},
	WCTMErr:            {"IBV_WC_TM_ERR", "TM error"},
	WCTMRndvIncomplete: {"IBV_WC_TM_RNDV_INCOMPLETE", "TM software rendezvous"},
}

// String returns the C enumerator name of s, such as "IBV_WC_RETRY_EXC_ERR",
// or "IBV_WC_STATUS(24)" for a value outside the enum: how verbsim prints a
// status everywhere (see the package doc, "Names"). Str is
// ibv_wc_status_str's text.
func (s WCStatus) String() string {
	if s < WCStatus(len(statusInfo)) {
		return statusInfo[s].name
	}
	return "IBV_WC_STATUS(" + strconv.FormatUint(uint64(s), 10) + ")"
}

// Str returns exactly what rdma-core 44's ibv_wc_status_str returns for s:
// a fixed text for 0..23 (mixed case, e.g. "Work Request Flushed Error" for
// WCWRFlushErr) and "unknown" for any other value (ASYNC-17).
func (s WCStatus) Str() string {
	if s < WCStatus(len(statusInfo)) {
		return statusInfo[s].str
	}
	return "unknown"
}

// Valid reports whether s is a value of enum ibv_wc_status (0 to 23).
func (s WCStatus) Valid() bool { return s < WCStatus(len(statusInfo)) }

// Name returns the C enumerator name of s, such as "IBV_WC_WR_FLUSH_ERR", or
// "" if s is not a value of enum ibv_wc_status.
func (s WCStatus) Name() string {
	if s < WCStatus(len(statusInfo)) {
		return statusInfo[s].name
	}
	return ""
}
