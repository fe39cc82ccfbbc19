package notify

import inotify "github.com/verbsim/verbsim/sim/internal/notify"

// Arm is the arming state of a CQ (sim.CQ.Armed).
type Arm = inotify.Arm

// The Arm values.
const (
	Disarmed     = inotify.Disarmed
	ArmSolicited = inotify.ArmSolicited
	ArmNext      = inotify.ArmNext
)

// SolicitedPolicy selects which completions fire a solicited-only arm; see
// sim.Profile.Solicited.
type SolicitedPolicy = inotify.SolicitedPolicy

// The SolicitedPolicy values.
const (
	ErrorsFire       = inotify.ErrorsFire
	SolicitedBitOnly = inotify.SolicitedBitOnly
)
