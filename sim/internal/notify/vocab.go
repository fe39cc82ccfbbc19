package notify

import "github.com/verbsim/verbsim/verbs"

// The names below are aliases of the verbs package, where these types and
// constants now live (verbs holds the verbs vocabulary; this package the
// engine). Existing code keeps compiling; new code should use verbs.

// EventType is verbs.EventType.
type EventType = verbs.EventType

// Element is verbs.EventElement.
type Element = verbs.EventElement

// Constants of the verbs vocabulary under their former names.
const (
	EventCQErr            = verbs.EventCQErr
	EventQPFatal          = verbs.EventQPFatal
	EventQPReqErr         = verbs.EventQPReqErr
	EventQPAccessErr      = verbs.EventQPAccessErr
	EventCommEst          = verbs.EventCommEst
	EventSQDrained        = verbs.EventSQDrained
	EventPathMig          = verbs.EventPathMig
	EventPathMigErr       = verbs.EventPathMigErr
	EventDeviceFatal      = verbs.EventDeviceFatal
	EventPortActive       = verbs.EventPortActive
	EventPortErr          = verbs.EventPortErr
	EventLIDChange        = verbs.EventLIDChange
	EventPKeyChange       = verbs.EventPKeyChange
	EventSMChange         = verbs.EventSMChange
	EventSRQErr           = verbs.EventSRQErr
	EventSRQLimitReached  = verbs.EventSRQLimitReached
	EventQPLastWQEReached = verbs.EventQPLastWQEReached
	EventClientReregister = verbs.EventClientReregister
	EventGIDChange        = verbs.EventGIDChange
	EventWQFatal          = verbs.EventWQFatal
	ElementCQ             = verbs.ElementCQ
	ElementQP             = verbs.ElementQP
	ElementSRQ            = verbs.ElementSRQ
	ElementWQ             = verbs.ElementWQ
	ElementPort           = verbs.ElementPort
)
