package rdmacm

import "strconv"

// RejectReason is the reason an InfiniBand CM REJ message carries (enum
// ib_cm_rej_reason). It is the Status of an EventRejected: 28 when the
// peer called rdma_reject, 8 when nobody listens on the service (CM-15,
// CM-19).
type RejectReason int

// The reject reasons of the IBTA CM chapter (table 108's codes), as the
// Linux CM numbers them.
const (
	RejNoQP                      RejectReason = 1
	RejNoEEC                     RejectReason = 2
	RejNoResources               RejectReason = 3
	RejTimeout                   RejectReason = 4
	RejUnsupported               RejectReason = 5
	RejInvalidCommID             RejectReason = 6
	RejInvalidCommInstance       RejectReason = 7
	RejInvalidServiceID          RejectReason = 8
	RejInvalidTransportType      RejectReason = 9
	RejStaleConn                 RejectReason = 10
	RejInvalidMTU                RejectReason = 26
	RejInsufficientRespResources RejectReason = 27
	RejConsumerDefined           RejectReason = 28
	RejInvalidRNRRetry           RejectReason = 29
	RejDuplicateLocalCommID      RejectReason = 30
	RejInvalidClassVersion       RejectReason = 31
	RejVendorOptionNotSupported  RejectReason = 35
)

var rejectNames = map[RejectReason]string{
	RejNoQP: "no QP", RejNoEEC: "no EEC", RejNoResources: "no resources", RejTimeout: "timeout",
	RejUnsupported: "unsupported", RejInvalidCommID: "invalid comm ID",
	RejInvalidCommInstance: "invalid comm instance", RejInvalidServiceID: "invalid service ID",
	RejInvalidTransportType: "invalid transport type", RejStaleConn: "stale conn",
	RejInvalidMTU: "invalid MTU", RejInsufficientRespResources: "insufficient response resources",
	RejConsumerDefined: "consumer defined", RejInvalidRNRRetry: "invalid RNR retry",
	RejDuplicateLocalCommID: "duplicate local comm ID", RejInvalidClassVersion: "invalid class version",
	RejVendorOptionNotSupported: "vendor option not supported",
}

// String names the reason the way the kernel's rdma_reject_msg does ("consumer
// defined"), or "RejectReason(n)" for a code it does not name.
func (r RejectReason) String() string {
	if s, ok := rejectNames[r]; ok {
		return s
	}
	return "RejectReason(" + strconv.Itoa(int(r)) + ")"
}

// SIDRStatus is the status of an InfiniBand CM SIDR_REP message (enum
// ib_cm_sidr_status). A SIDR_REP that is not a success ends a UD lookup
// with EventUnreachable whose Status is this value (CM-25).
type SIDRStatus int

// The SIDR statuses.
const (
	SIDRSuccess            SIDRStatus = 0
	SIDRUnsupported        SIDRStatus = 1 // no listener on the service
	SIDRReject             SIDRStatus = 2 // the listener called rdma_reject
	SIDRNoQP               SIDRStatus = 3
	SIDRRedirect           SIDRStatus = 4
	SIDRUnsupportedVersion SIDRStatus = 5
)

var sidrNames = [...]string{"success", "unsupported", "reject", "no QP", "redirect", "unsupported version"}

// String names the status, or "SIDRStatus(n)" for another value.
func (s SIDRStatus) String() string {
	if s >= 0 && int(s) < len(sidrNames) {
		return sidrNames[s]
	}
	return "SIDRStatus(" + strconv.Itoa(int(s)) + ")"
}
