package qp

import "github.com/verbsim/verbsim/verbs"

// The names below are aliases of the verbs package, where these types and
// constants now live (verbs holds the verbs vocabulary; this package the
// engine). Existing code keeps compiling; new code should use verbs.

// State is verbs.QPState.
type State = verbs.QPState

// Type is verbs.QPType.
type Type = verbs.QPType

// MTU is verbs.MTU.
type MTU = verbs.MTU

// MigState is verbs.MigState.
type MigState = verbs.MigState

// AccessFlags is verbs.AccessFlags.
type AccessFlags = verbs.AccessFlags

// GlobalRoute is verbs.GlobalRoute.
type GlobalRoute = verbs.GlobalRoute

// AHAttr is verbs.AHAttr.
type AHAttr = verbs.AHAttr

// Cap is verbs.QPCap.
type Cap = verbs.QPCap

// Attr is verbs.QPAttr.
type Attr = verbs.QPAttr

// AttrMask is verbs.QPAttrMask.
type AttrMask = verbs.QPAttrMask

// SendFlags is verbs.SendFlags.
type SendFlags = verbs.SendFlags

// SGE is verbs.SGE.
type SGE = verbs.SGE

// SendWR is verbs.SendWR.
type SendWR = verbs.SendWR

// MWBindInfo is verbs.MWBindInfo.
type MWBindInfo = verbs.MWBindInfo

// RecvWR is verbs.RecvWR.
type RecvWR = verbs.RecvWR

// SRQAttr is verbs.SRQAttr.
type SRQAttr = verbs.SRQAttr

// SRQAttrMask is verbs.SRQAttrMask.
type SRQAttrMask = verbs.SRQAttrMask

// SendOps is verbs.QPSendOps.
type SendOps = verbs.QPSendOps

// Constants of the verbs vocabulary under their former names.
const (
	Reset                 = verbs.QPStateReset
	Init                  = verbs.QPStateInit
	RTR                   = verbs.QPStateRTR
	RTS                   = verbs.QPStateRTS
	SQD                   = verbs.QPStateSQD
	SQE                   = verbs.QPStateSQE
	Err                   = verbs.QPStateErr
	Unknown               = verbs.QPStateUnknown
	RC                    = verbs.QPTypeRC
	UC                    = verbs.QPTypeUC
	UD                    = verbs.QPTypeUD
	RawPacket             = verbs.QPTypeRawPacket
	XRCSend               = verbs.QPTypeXRCSend
	XRCRecv               = verbs.QPTypeXRCRecv
	Driver                = verbs.QPTypeDriver
	MTU256                = verbs.MTU256
	MTU512                = verbs.MTU512
	MTU1024               = verbs.MTU1024
	MTU2048               = verbs.MTU2048
	MTU4096               = verbs.MTU4096
	Migrated              = verbs.MigMigrated
	Rearm                 = verbs.MigRearm
	Armed                 = verbs.MigArmed
	AccessLocalWrite      = verbs.AccessLocalWrite
	AccessRemoteWrite     = verbs.AccessRemoteWrite
	AccessRemoteRead      = verbs.AccessRemoteRead
	AccessRemoteAtomic    = verbs.AccessRemoteAtomic
	AccessMWBind          = verbs.AccessMWBind
	AccessZeroBased       = verbs.AccessZeroBased
	AccessOnDemand        = verbs.AccessOnDemand
	AccessHugeTLB         = verbs.AccessHugeTLB
	AccessRelaxedOrdering = verbs.AccessRelaxedOrdering
	QPAccessBits          = verbs.QPAccessBits
	PSNMask               = verbs.PSNMask
	AttrState             = verbs.QPAttrState
	AttrCurState          = verbs.QPAttrCurState
	AttrEnSQDAsyncNotify  = verbs.QPAttrEnSQDAsyncNotify
	AttrAccessFlags       = verbs.QPAttrAccessFlags
	AttrPKeyIndex         = verbs.QPAttrPKeyIndex
	AttrPort              = verbs.QPAttrPort
	AttrQKey              = verbs.QPAttrQKey
	AttrAV                = verbs.QPAttrAV
	AttrPathMTU           = verbs.QPAttrPathMTU
	AttrTimeout           = verbs.QPAttrTimeout
	AttrRetryCnt          = verbs.QPAttrRetryCnt
	AttrRNRRetry          = verbs.QPAttrRNRRetry
	AttrRQPSN             = verbs.QPAttrRQPSN
	AttrMaxQPRDAtomic     = verbs.QPAttrMaxQPRDAtomic
	AttrAltPath           = verbs.QPAttrAltPath
	AttrMinRNRTimer       = verbs.QPAttrMinRNRTimer
	AttrSQPSN             = verbs.QPAttrSQPSN
	AttrMaxDestRDAtomic   = verbs.QPAttrMaxDestRDAtomic
	AttrPathMigState      = verbs.QPAttrPathMigState
	AttrCap               = verbs.QPAttrCap
	AttrDestQPN           = verbs.QPAttrDestQPN
	AttrRateLimit         = verbs.QPAttrRateLimit
	KnownAttrs            = verbs.KnownQPAttrs
	SendFence             = verbs.SendFence
	SendSignaled          = verbs.SendSignaled
	SendSolicited         = verbs.SendSolicited
	SendInline            = verbs.SendInline
	SendIPCSum            = verbs.SendIPCSum
	SRQMaxWR              = verbs.SRQMaxWR
	SRQLimit              = verbs.SRQLimit
	WithRDMAWrite         = verbs.QPExWithRDMAWrite
	WithRDMAWriteImm      = verbs.QPExWithRDMAWriteImm
	WithSend              = verbs.QPExWithSend
	WithSendImm           = verbs.QPExWithSendImm
	WithRDMARead          = verbs.QPExWithRDMARead
	WithAtomicCmpSwp      = verbs.QPExWithAtomicCmpSwp
	WithAtomicFetchAdd    = verbs.QPExWithAtomicFetchAdd
	WithLocalInv          = verbs.QPExWithLocalInv
	WithBindMW            = verbs.QPExWithBindMW
	WithSendInv           = verbs.QPExWithSendInv
	WithTSO               = verbs.QPExWithTSO
	WithAtomicWrite       = verbs.QPExWithAtomicWrite
)

// Normalize is verbs.NormalizeQPAttr.
func Normalize(attr Attr, mask AttrMask) Attr { return verbs.NormalizeQPAttr(attr, mask) }

// Length is verbs.SGEListLength.
func Length(sges []SGE) uint64 { return verbs.SGEListLength(sges) }

// Supported reports whether the simulator implements t: RC, UC, UD and
// the two XRC types, XRCSend (the initiator) and XRCRecv (the target).
// (It was a method of Type before Type moved to verbs.)
func Supported(t Type) bool { return t == RC || t == UC || t == UD || t == XRCSend || t == XRCRecv }

// reliable reports whether t is a reliable connected transport: RC, or
// one side of XRC, which runs RC's protocol (ACKs, retries, RNR).
func reliable(t Type) bool { return t == RC || t == XRCSend || t == XRCRecv }

const sendFlagsKnown = SendFence | SendSignaled | SendSolicited | SendInline | SendIPCSum
