package wc

import "github.com/verbsim/verbsim/verbs"

// The names below are aliases of the verbs package, where these types and
// constants now live (verbs holds the verbs vocabulary; this package the
// engine). Existing code keeps compiling; new code should use verbs.

// WC is verbs.WC.
type WC = verbs.WC

// Opcode is verbs.WCOpcode.
type Opcode = verbs.WCOpcode

// Flags is verbs.WCFlags.
type Flags = verbs.WCFlags

// Status is verbs.WCStatus.
type Status = verbs.WCStatus

// WROpcode is verbs.WROpcode.
type WROpcode = verbs.WROpcode

// Constants of the verbs vocabulary under their former names.
const (
	Send                = verbs.WCSend
	RDMAWrite           = verbs.WCRDMAWrite
	RDMARead            = verbs.WCRDMARead
	CompSwap            = verbs.WCCompSwap
	FetchAdd            = verbs.WCFetchAdd
	BindMW              = verbs.WCBindMW
	LocalInv            = verbs.WCLocalInv
	TSO                 = verbs.WCTSO
	AtomicWrite         = verbs.WCAtomicWrite
	Recv                = verbs.WCRecv
	RecvRDMAWithImm     = verbs.WCRecvRDMAWithImm
	TMAdd               = verbs.WCTMAdd
	TMDel               = verbs.WCTMDel
	TMSync              = verbs.WCTMSync
	TMRecv              = verbs.WCTMRecv
	TMNoTag             = verbs.WCTMNoTag
	Driver1             = verbs.WCDriver1
	Driver2             = verbs.WCDriver2
	Driver3             = verbs.WCDriver3
	GRH                 = verbs.WCGRH
	WithImm             = verbs.WCWithImm
	IPCSumOK            = verbs.WCIPCSumOK
	WithInv             = verbs.WCWithInv
	TMSyncReq           = verbs.WCTMSyncReq
	TMMatch             = verbs.WCTMMatch
	TMDataValid         = verbs.WCTMDataValid
	Success             = verbs.WCSuccess
	LocLenErr           = verbs.WCLocLenErr
	LocQPOpErr          = verbs.WCLocQPOpErr
	LocEECOpErr         = verbs.WCLocEECOpErr
	LocProtErr          = verbs.WCLocProtErr
	WRFlushErr          = verbs.WCWRFlushErr
	MWBindErr           = verbs.WCMWBindErr
	BadRespErr          = verbs.WCBadRespErr
	LocAccessErr        = verbs.WCLocAccessErr
	RemInvReqErr        = verbs.WCRemInvReqErr
	RemAccessErr        = verbs.WCRemAccessErr
	RemOpErr            = verbs.WCRemOpErr
	RetryExcErr         = verbs.WCRetryExcErr
	RNRRetryExcErr      = verbs.WCRNRRetryExcErr
	LocRDDViolErr       = verbs.WCLocRDDViolErr
	RemInvRDReqErr      = verbs.WCRemInvRDReqErr
	RemAbortErr         = verbs.WCRemAbortErr
	InvEECNErr          = verbs.WCInvEECNErr
	InvEECStateErr      = verbs.WCInvEECStateErr
	FatalErr            = verbs.WCFatalErr
	RespTimeoutErr      = verbs.WCRespTimeoutErr
	GeneralErr          = verbs.WCGeneralErr
	TMErr               = verbs.WCTMErr
	TMRndvIncomplete    = verbs.WCTMRndvIncomplete
	WRRDMAWrite         = verbs.WRRDMAWrite
	WRRDMAWriteWithImm  = verbs.WRRDMAWriteWithImm
	WRSend              = verbs.WRSend
	WRSendWithImm       = verbs.WRSendWithImm
	WRRDMARead          = verbs.WRRDMARead
	WRAtomicCmpAndSwp   = verbs.WRAtomicCmpAndSwp
	WRAtomicFetchAndAdd = verbs.WRAtomicFetchAndAdd
	WRLocalInv          = verbs.WRLocalInv
	WRBindMW            = verbs.WRBindMW
	WRSendWithInv       = verbs.WRSendWithInv
	WRTSO               = verbs.WRTSO
	WRDriver1           = verbs.WRDriver1
	WRAtomicWrite       = verbs.WRAtomicWrite
)
