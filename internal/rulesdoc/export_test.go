package rulesdoc

import "testing"

// PinPendingForTest replaces the pending spans and follow-ups with a fixed
// sample for the rest of t, so that a test of the rendering does not change
// as rules get checked: WC-03 and the status row WC-S05 pending on issue #4.
func PinPendingForTest(t *testing.T) {
	spans, ups := pendingSpans, followUps
	pendingSpans = []span{{"WC", 3, 3, IssueFabric}, {"WC-S", 5, 5, IssueFabric}}
	followUps = map[string]followUp{}
	t.Cleanup(func() { pendingSpans, followUps = spans, ups })
}
