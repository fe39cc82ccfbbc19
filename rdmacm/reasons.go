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

// rejectInfo holds each reason's enumerator and rdma_reject_msg's words.
var rejectInfo = map[RejectReason]struct{ name, str string }{
	RejNoQP:                      {"IB_CM_REJ_NO_QP", "no QP"},
	RejNoEEC:                     {"IB_CM_REJ_NO_EEC", "no EEC"},
	RejNoResources:               {"IB_CM_REJ_NO_RESOURCES", "no resources"},
	RejTimeout:                   {"IB_CM_REJ_TIMEOUT", "timeout"},
	RejUnsupported:               {"IB_CM_REJ_UNSUPPORTED", "unsupported"},
	RejInvalidCommID:             {"IB_CM_REJ_INVALID_COMM_ID", "invalid comm ID"},
	RejInvalidCommInstance:       {"IB_CM_REJ_INVALID_COMM_INSTANCE", "invalid comm instance"},
	RejInvalidServiceID:          {"IB_CM_REJ_INVALID_SERVICE_ID", "invalid service ID"},
	RejInvalidTransportType:      {"IB_CM_REJ_INVALID_TRANSPORT_TYPE", "invalid transport type"},
	RejStaleConn:                 {"IB_CM_REJ_STALE_CONN", "stale conn"},
	RejInvalidMTU:                {"IB_CM_REJ_INVALID_MTU", "invalid MTU"},
	RejInsufficientRespResources: {"IB_CM_REJ_INSUFFICIENT_RESP_RESOURCES", "insufficient response resources"},
	RejConsumerDefined:           {"IB_CM_REJ_CONSUMER_DEFINED", "consumer defined"},
	RejInvalidRNRRetry:           {"IB_CM_REJ_INVALID_RNR_RETRY", "invalid RNR retry"},
	RejDuplicateLocalCommID:      {"IB_CM_REJ_DUPLICATE_LOCAL_COMM_ID", "duplicate local comm ID"},
	RejInvalidClassVersion:       {"IB_CM_REJ_INVALID_CLASS_VERSION", "invalid class version"},
	RejVendorOptionNotSupported:  {"IB_CM_REJ_VENDOR_OPTION_NOT_SUPPORTED", "vendor option not supported"},
}

// String returns the reason's C enumerator of enum ib_cm_rej_reason
// ("IB_CM_REJ_CONSUMER_DEFINED"), or "RejectReason(n)" for a code it does
// not name.
func (r RejectReason) String() string {
	if i, ok := rejectInfo[r]; ok {
		return i.name
	}
	return "RejectReason(" + strconv.Itoa(int(r)) + ")"
}

// Str names the reason the way the kernel's rdma_reject_msg does for an
// InfiniBand reject ("consumer defined"), or "unrecognized reason" for a
// code it does not name.
func (r RejectReason) Str() string {
	if i, ok := rejectInfo[r]; ok {
		return i.str
	}
	return "unrecognized reason"
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

var (
	sidrEnums = [...]string{"IB_SIDR_SUCCESS", "IB_SIDR_UNSUPPORTED", "IB_SIDR_REJECT", "IB_SIDR_NO_QP",
		"IB_SIDR_REDIRECT", "IB_SIDR_UNSUPPORTED_VERSION"}
	sidrNames = [...]string{"success", "unsupported", "reject", "no QP", "redirect", "unsupported version"}
)

// String returns the status's C enumerator of enum ib_cm_sidr_status
// ("IB_SIDR_UNSUPPORTED"), or "SIDRStatus(n)" for another value.
func (s SIDRStatus) String() string {
	if s >= 0 && int(s) < len(sidrEnums) {
		return sidrEnums[s]
	}
	return "SIDRStatus(" + strconv.Itoa(int(s)) + ")"
}

// Str names the status in words ("unsupported"), or "unknown" for
// another value. librdmacm has no string function for SIDR statuses; the
// words are the IBTA's.
func (s SIDRStatus) Str() string {
	if s >= 0 && int(s) < len(sidrNames) {
		return sidrNames[s]
	}
	return "unknown"
}
