package conformance

import "github.com/verbsim/verbsim/verbs"

// XRC (XRC-01..10) is optional: a device context that has XRC domains
// implements verbs.XRCOpener; its domains make XRC target QPs
// (verbs.XRCD.CreateQP), and an XRC_SEND QP with a builder implements
// verbs.WRBuilder.WRSetXRCSRQN. Without it the XRC cases log that they checked
// nothing. A device whose profile says NoXRC must still implement it, and
// refuse (XRC-03).

// XRCD is an XRC domain: verbs.XRCD.
type XRCD = verbs.XRCD
