package cq

import "github.com/verbsim/verbsim/verbs"

// The names below are aliases of the verbs package, where these types and
// constants now live. This package holds only former names: the engine
// moved to sim/internal. Existing code keeps compiling; new code should
// use verbs.

// WCExFlags is verbs.WCExFlags.
type WCExFlags = verbs.WCExFlags

// InitAttrMask is verbs.CQInitAttrMask.
type InitAttrMask = verbs.CQInitAttrMask

// CreateFlags is verbs.CQCreateFlags.
type CreateFlags = verbs.CQCreateFlags

// Constants of the verbs vocabulary under their former names.
const (
	WCExByteLen                      = verbs.WCExByteLen
	WCExImm                          = verbs.WCExImm
	WCExQPNum                        = verbs.WCExQPNum
	WCExSrcQP                        = verbs.WCExSrcQP
	WCExSLID                         = verbs.WCExSLID
	WCExSL                           = verbs.WCExSL
	WCExDLIDPathBits                 = verbs.WCExDLIDPathBits
	WCExCompletionTimestamp          = verbs.WCExCompletionTimestamp
	WCExCVLAN                        = verbs.WCExCVLAN
	WCExFlowTag                      = verbs.WCExFlowTag
	WCExTMInfo                       = verbs.WCExTMInfo
	WCExCompletionTimestampWallclock = verbs.WCExCompletionTimestampWallclock
	WCStandardFlags                  = verbs.WCStandardFlags
	InitAttrMaskFlags                = verbs.CQInitAttrMaskFlags
	InitAttrMaskPD                   = verbs.CQInitAttrMaskPD
	CreateSingleThreaded             = verbs.CQCreateSingleThreaded
	CreateIgnoreOverrun              = verbs.CQCreateIgnoreOverrun
)
