package rdmacm

import "strconv"

// AddrInfoError is a failure of the name lookup of rdma_getaddrinfo, which
// returns an EAI_ code instead of setting errno (CM-11). Code holds glibc's
// value of the code.
type AddrInfoError struct {
	Code          int
	Node, Service string
}

// The EAI_ codes, with glibc's values.
const (
	EAIBadFlags = -1  // EAI_BADFLAGS
	EAINoName   = -2  // EAI_NONAME
	EAIAgain    = -3  // EAI_AGAIN
	EAIFail     = -4  // EAI_FAIL
	EAIFamily   = -6  // EAI_FAMILY
	EAISockType = -7  // EAI_SOCKTYPE
	EAIService  = -8  // EAI_SERVICE
	EAIMemory   = -10 // EAI_MEMORY
	EAISystem   = -11 // EAI_SYSTEM
)

var eaiText = map[int]string{
	EAIBadFlags: "Bad value for ai_flags", EAINoName: "Name or service not known",
	EAIAgain: "Temporary failure in name resolution", EAIFail: "Non-recoverable failure in name resolution",
	EAIFamily: "ai_family not supported", EAISockType: "ai_socktype not supported",
	EAIService: "Servname not supported for ai_socktype", EAIMemory: "Memory allocation failure",
	EAISystem: "System error",
}

// Error returns what gai_strerror says of the code, with the node and
// service.
func (e *AddrInfoError) Error() string {
	if e == nil {
		return "<nil>"
	}
	s, ok := eaiText[e.Code]
	if !ok {
		s = "EAI code " + strconv.Itoa(e.Code)
	}
	return "rdma_getaddrinfo(" + strconv.Quote(e.Node) + ", " + strconv.Quote(e.Service) + "): " + s
}
