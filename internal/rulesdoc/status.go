package rulesdoc

import "github.com/verbsim/verbsim/internal/catalogue"

// The issues that will cover the rules the completion core leaves open.
const (
	// IssueLocalHCA is issue #3: devices, PDs, MRs, AHs, SRQs, and QPs with
	// their state machine, posting rules and flush-on-error.
	IssueLocalHCA = 3
	// IssueFabric is issue #4: data movement between QPs, transport errors,
	// virtual time, faults, the remaining profile readings and the trace.
	IssueFabric = 4
)

// span is a range of rule numbers of one family, inclusive. to == 0 means
// the whole family.
type span struct {
	family   string
	from, to int
	issue    int
}

// pendingSpans assigns the rules the completion core does not implement to
// the issue whose text lists them. Read with the issues: #3 delivers QP-01..37
// ("QP-25..40 as far as they are local"), FLUSH-01..09/13/14, SRQ-01..08/10/11,
// every MR and PD rule and the SRQ and last-WQE async events; #4 delivers
// transport, WC contents produced by traffic, FENCE, rd_atomic limits, SQD
// draining, the responder and port async events, and CQ-24. The transport
// cases (conformance/xfer_*.go) check what #4 delivered except the spans
// still listed for it. A family written "WC-S" names the status rows
// (WC-Snn); a span with to == 0 covers the whole family, so WC-S00 cannot be
// listed alone.
var pendingSpans = []span{}

// followUp names the part of a checked rule that only a later issue can
// check, because it needs objects or traffic that do not exist yet.
type followUp struct {
	what  string
	issue int
}

var followUps = map[string]followUp{}

// PendingIssue returns the issue that will implement rule id, or 0 when the
// rule belongs to the completion core that exists now.
func PendingIssue(id string) int {
	fam := catalogue.Family(id)
	n, status := catalogue.Number(id)
	if status {
		fam += "-S"
	}
	for _, s := range pendingSpans {
		if s.family == fam && (s.to == 0 || s.from <= n && n <= s.to) {
			return s.issue
		}
	}
	return 0
}
