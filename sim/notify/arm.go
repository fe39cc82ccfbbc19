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
