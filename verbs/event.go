package verbs

import "strconv"

// EventType is the type of an asynchronous event (enum ibv_event_type). The
// values are those of rdma-core 44's verbs.h (ASYNC-04).
type EventType uint32

// The async event types, in verbs order.
const (
	EventCQErr            EventType = iota // IBV_EVENT_CQ_ERR: a CQ overran (CQ-22)
	EventQPFatal                           // IBV_EVENT_QP_FATAL
	EventQPReqErr                          // IBV_EVENT_QP_REQ_ERR
	EventQPAccessErr                       // IBV_EVENT_QP_ACCESS_ERR
	EventCommEst                           // IBV_EVENT_COMM_EST
	EventSQDrained                         // IBV_EVENT_SQ_DRAINED
	EventPathMig                           // IBV_EVENT_PATH_MIG
	EventPathMigErr                        // IBV_EVENT_PATH_MIG_ERR
	EventDeviceFatal                       // IBV_EVENT_DEVICE_FATAL
	EventPortActive                        // IBV_EVENT_PORT_ACTIVE
	EventPortErr                           // IBV_EVENT_PORT_ERR
	EventLIDChange                         // IBV_EVENT_LID_CHANGE
	EventPKeyChange                        // IBV_EVENT_PKEY_CHANGE
	EventSMChange                          // IBV_EVENT_SM_CHANGE
	EventSRQErr                            // IBV_EVENT_SRQ_ERR
	EventSRQLimitReached                   // IBV_EVENT_SRQ_LIMIT_REACHED
	EventQPLastWQEReached                  // IBV_EVENT_QP_LAST_WQE_REACHED
	EventClientReregister                  // IBV_EVENT_CLIENT_REREGISTER
	EventGIDChange                         // IBV_EVENT_GID_CHANGE
	EventWQFatal                           // IBV_EVENT_WQ_FATAL
)

var eventStrings = [...]string{
	EventCQErr:            "CQ error",
	EventQPFatal:          "local work queue catastrophic error",
	EventQPReqErr:         "invalid request local work queue error",
	EventQPAccessErr:      "local access violation work queue error",
	EventCommEst:          "communication established",
	EventSQDrained:        "send queue drained",
	EventPathMig:          "path migrated",
	EventPathMigErr:       "path migration request error",
	EventDeviceFatal:      "local catastrophic error",
	EventPortActive:       "port active",
	EventPortErr:          "port error",
	EventLIDChange:        "LID change",
	EventPKeyChange:       "P_Key change",
	EventSMChange:         "SM change",
	EventSRQErr:           "SRQ catastrophic error",
	EventSRQLimitReached:  "SRQ limit reached",
	EventQPLastWQEReached: "last WQE reached",
	EventClientReregister: "client reregistration",
	EventGIDChange:        "GID table change",
	EventWQFatal:          "WQ fatal",
}

var eventNames = [...]string{
	EventCQErr:            "IBV_EVENT_CQ_ERR",
	EventQPFatal:          "IBV_EVENT_QP_FATAL",
	EventQPReqErr:         "IBV_EVENT_QP_REQ_ERR",
	EventQPAccessErr:      "IBV_EVENT_QP_ACCESS_ERR",
	EventCommEst:          "IBV_EVENT_COMM_EST",
	EventSQDrained:        "IBV_EVENT_SQ_DRAINED",
	EventPathMig:          "IBV_EVENT_PATH_MIG",
	EventPathMigErr:       "IBV_EVENT_PATH_MIG_ERR",
	EventDeviceFatal:      "IBV_EVENT_DEVICE_FATAL",
	EventPortActive:       "IBV_EVENT_PORT_ACTIVE",
	EventPortErr:          "IBV_EVENT_PORT_ERR",
	EventLIDChange:        "IBV_EVENT_LID_CHANGE",
	EventPKeyChange:       "IBV_EVENT_PKEY_CHANGE",
	EventSMChange:         "IBV_EVENT_SM_CHANGE",
	EventSRQErr:           "IBV_EVENT_SRQ_ERR",
	EventSRQLimitReached:  "IBV_EVENT_SRQ_LIMIT_REACHED",
	EventQPLastWQEReached: "IBV_EVENT_QP_LAST_WQE_REACHED",
	EventClientReregister: "IBV_EVENT_CLIENT_REREGISTER",
	EventGIDChange:        "IBV_EVENT_GID_CHANGE",
	EventWQFatal:          "IBV_EVENT_WQ_FATAL",
}

// String returns the C enumerator name of t, such as "IBV_EVENT_CQ_ERR", or
// "IBV_EVENT_TYPE(42)" for a value outside the enum: how verbsim prints an
// event type everywhere (see the package doc, "Names"). Str is
// ibv_event_type_str's text.
func (t EventType) String() string {
	if int(t) < len(eventNames) {
		return eventNames[t]
	}
	return "IBV_EVENT_TYPE(" + strconv.Itoa(int(t)) + ")"
}

// Str returns the text ibv_event_type_str gives for t, and "unknown" for a
// value outside the enum (ASYNC-17).
func (t EventType) Str() string {
	if int(t) < len(eventStrings) {
		return eventStrings[t]
	}
	return "unknown"
}

// Name returns the C enumerator name ("IBV_EVENT_CQ_ERR"), or "" for a value
// outside the enum.
func (t EventType) Name() string {
	if int(t) < len(eventNames) {
		return eventNames[t]
	}
	return ""
}

// EventElement says which member of an event's element union is meaningful.
type EventElement uint8

const (
	_           EventElement = iota // invalid
	ElementCQ                       // element.cq
	ElementQP                       // element.qp
	ElementSRQ                      // element.srq
	ElementWQ                       // element.wq
	ElementPort                     // element.port_num
)

// String returns "cq", "qp", "srq", "wq" or "port".
func (e EventElement) String() string {
	switch e {
	case ElementCQ:
		return "cq"
	case ElementQP:
		return "qp"
	case ElementSRQ:
		return "srq"
	case ElementWQ:
		return "wq"
	case ElementPort:
		return "port"
	}
	return "Element(" + strconv.Itoa(int(e)) + ")"
}

// Element returns which member of the event's element union t uses
// (ASYNC-03): the CQ for CQ_ERR; the QP for the QP events, COMM_EST,
// SQ_DRAINED, PATH_MIG(_ERR) and QP_LAST_WQE_REACHED; the SRQ for SRQ_ERR and
// SRQ_LIMIT_REACHED; the WQ for WQ_FATAL; the port number for the port events
// and DEVICE_FATAL. It returns 0 for an unknown type.
func (t EventType) Element() EventElement {
	switch t {
	case EventCQErr:
		return ElementCQ
	case EventQPFatal, EventQPReqErr, EventQPAccessErr, EventCommEst, EventSQDrained,
		EventPathMig, EventPathMigErr, EventQPLastWQEReached:
		return ElementQP
	case EventSRQErr, EventSRQLimitReached:
		return ElementSRQ
	case EventWQFatal:
		return ElementWQ
	case EventDeviceFatal, EventPortActive, EventPortErr, EventLIDChange, EventPKeyChange,
		EventSMChange, EventClientReregister, EventGIDChange:
		return ElementPort
	}
	return 0
}
