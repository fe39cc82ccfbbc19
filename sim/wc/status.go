package wc

import "strconv"

// Status is the completion status of a work request, enum ibv_wc_status.
// The numbers are fixed by the verbs ABI; Success is 0.
//
// A Status is data, not an error: a WC with a non-Success status is an
// ordinary completion that the consumer must inspect (WC-03).
type Status uint32

// Completion statuses, in verbs order (rule IDs WC-S00..WC-S22). The comment
// on each constant says when the simulator produces it.
const (
	// Success: the WR finished, and so did every earlier unsignaled WR on
	// the same queue; its buffers may be reused (WC-S00).
	Success Status = iota
	// LocLenErr: a local length check failed, on the sender or on the
	// receiver whose posted buffer was too small (WC-S01).
	LocLenErr
	// LocQPOpErr: internal QP consistency error (WC-S02).
	LocQPOpErr
	// LocEECOpErr: EE-context error; reliable datagram only, never
	// produced (WC-S03).
	LocEECOpErr
	// LocProtErr: a local SGE does not name a valid MR for the access
	// (WC-S04).
	LocProtErr
	// WRFlushErr: the WR was outstanding when, or posted after, the QP
	// entered the error state (WC-S05, FLUSH-01, FLUSH-05).
	WRFlushErr
	// MWBindErr: a memory-window bind failed (WC-S06).
	MWBindErr
	// BadRespErr: an RC requester got a response with an unexpected
	// transport opcode (WC-S07).
	BadRespErr
	// LocAccessErr: RC responder protection error on a local buffer for an
	// incoming RDMA WRITE with immediate (WC-S08).
	LocAccessErr
	// RemInvReqErr: the responder rejected the request as invalid
	// (WC-S09).
	RemInvReqErr
	// RemAccessErr: remote protection error on an RDMA or atomic target
	// (WC-S10).
	RemAccessErr
	// RemOpErr: the responder could not complete the request (WC-S11).
	RemOpErr
	// RetryExcErr: transport retries exhausted without ACK or NAK
	// (WC-S12).
	RetryExcErr
	// RNRRetryExcErr: receiver-not-ready retries exhausted (WC-S13).
	RNRRetryExcErr
	// LocRDDViolErr: reliable datagram only, never produced (WC-S14).
	LocRDDViolErr
	// RemInvRDReqErr: reliable datagram only, never produced (WC-S15).
	RemInvRDReqErr
	// RemAbortErr: the responder aborted the operation (WC-S16).
	RemAbortErr
	// InvEECNErr: reliable datagram only, never produced (WC-S17).
	InvEECNErr
	// InvEECStateErr: reliable datagram only, never produced (WC-S18).
	InvEECStateErr
	// FatalErr: catastrophic error (WC-S19).
	FatalErr
	// RespTimeoutErr: response timeout (WC-S20).
	RespTimeoutErr
	// GeneralErr: any other error (WC-S21).
	GeneralErr
	// TMErr: tag-matching error; reserved, never produced (WC-S22).
	TMErr
	// TMRndvIncomplete: tag-matching rendezvous incomplete; reserved,
	// never produced (WC-S22).
	TMRndvIncomplete
)

// statusInfo holds, per Status, the C enumerator name and the text that
// rdma-core 44's ibv_wc_status_str returns. The golden test in this package
// checks both columns against the real library.
var statusInfo = [...]struct{ name, str string }{
	Success:          {"IBV_WC_SUCCESS", "success"},
	LocLenErr:        {"IBV_WC_LOC_LEN_ERR", "local length error"},
	LocQPOpErr:       {"IBV_WC_LOC_QP_OP_ERR", "local QP operation error"},
	LocEECOpErr:      {"IBV_WC_LOC_EEC_OP_ERR", "local EE context operation error"},
	LocProtErr:       {"IBV_WC_LOC_PROT_ERR", "local protection error"},
	WRFlushErr:       {"IBV_WC_WR_FLUSH_ERR", "Work Request Flushed Error"},
	MWBindErr:        {"IBV_WC_MW_BIND_ERR", "memory management operation error"},
	BadRespErr:       {"IBV_WC_BAD_RESP_ERR", "bad response error"},
	LocAccessErr:     {"IBV_WC_LOC_ACCESS_ERR", "local access error"},
	RemInvReqErr:     {"IBV_WC_REM_INV_REQ_ERR", "remote invalid request error"},
	RemAccessErr:     {"IBV_WC_REM_ACCESS_ERR", "remote access error"},
	RemOpErr:         {"IBV_WC_REM_OP_ERR", "remote operation error"},
	RetryExcErr:      {"IBV_WC_RETRY_EXC_ERR", "transport retry counter exceeded"},
	RNRRetryExcErr:   {"IBV_WC_RNR_RETRY_EXC_ERR", "RNR retry counter exceeded"},
	LocRDDViolErr:    {"IBV_WC_LOC_RDD_VIOL_ERR", "local RDD violation error"},
	RemInvRDReqErr:   {"IBV_WC_REM_INV_RD_REQ_ERR", "remote invalid RD request"},
	RemAbortErr:      {"IBV_WC_REM_ABORT_ERR", "aborted error"},
	InvEECNErr:       {"IBV_WC_INV_EECN_ERR", "invalid EE context number"},
	InvEECStateErr:   {"IBV_WC_INV_EEC_STATE_ERR", "invalid EE context state"},
	FatalErr:         {"IBV_WC_FATAL_ERR", "fatal error"},
	RespTimeoutErr:   {"IBV_WC_RESP_TIMEOUT_ERR", "response timeout error"},
	GeneralErr:       {"IBV_WC_GENERAL_ERR", "general error"},
	TMErr:            {"IBV_WC_TM_ERR", "TM error"},
	TMRndvIncomplete: {"IBV_WC_TM_RNDV_INCOMPLETE", "TM software rendezvous"},
}

// String returns exactly what rdma-core 44's ibv_wc_status_str returns for
// s: a fixed text for 0..23 (mixed case, e.g. "Work Request Flushed Error"
// for WRFlushErr) and "unknown" for any other value (ASYNC-17).
func (s Status) String() string {
	if s < Status(len(statusInfo)) {
		return statusInfo[s].str
	}
	return "unknown"
}

// Valid reports whether s is a value of enum ibv_wc_status (0 to 23).
func (s Status) Valid() bool { return s < Status(len(statusInfo)) }

// Name returns the C enumerator name of s, such as "IBV_WC_WR_FLUSH_ERR", or
// "" if s is not a value of enum ibv_wc_status.
func (s Status) Name() string {
	if s < Status(len(statusInfo)) {
		return statusInfo[s].name
	}
	return ""
}

// token is the compact form WC.String uses: the enumerator name without
// its prefix, lower-cased ("success", "wr_flush_err"). It never contains a
// space, unlike String.
func (s Status) token() string {
	if n := s.Name(); n != "" {
		return lowerASCII(n[len("IBV_WC_"):])
	}
	return "status(" + strconv.FormatUint(uint64(s), 10) + ")"
}

func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return string(b)
}
