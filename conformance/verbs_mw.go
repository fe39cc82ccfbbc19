package conformance

import "github.com/verbsim/verbsim/verbs"

// Memory windows (MW-01..MW-07) are optional: a device without them fails
// PD.AllocMW with EOPNOTSUPP, and the MW cases log that they checked
// nothing.

// MW is a memory window: verbs.MW, the value a BIND_MW work request
// carries in verbs.SendWR.MW.
type MW = verbs.MW
