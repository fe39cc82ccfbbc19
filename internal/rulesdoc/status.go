package rulesdoc

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
// draining, the responder and port async events, and CQ-24.
var pendingSpans = []span{
	{"CQ", 18, 21, IssueFabric},   // per-queue order, signaling, error WCs
	{"CQ", 24, 24, IssueFabric},   // overrun's effect on the QP
	{"NOTIFY", 6, 6, IssueFabric}, // the SE bit set by the requester
	{"ASYNC", 8, 13, IssueFabric},
	{"ASYNC", 14, 14, IssueLocalHCA}, // LAST_WQE_REACHED
	{"ASYNC", 15, 15, IssueFabric},   // SRQ limit fires on consumption by traffic
	{"ASYNC", 16, 16, IssueFabric},   // port events
	{"QP", 5, 5, IssueFabric},        // SIGNALED vs sq_sig_all shows in successful completions
	{"QP", 30, 30, IssueFabric},      // all-unsignaled streams need successful completions
	{"QP", 36, 36, IssueFabric},      // buffers read at execution
	{"QP", 1, 37, IssueLocalHCA},
	{"QP", 38, 40, IssueFabric},  // FENCE, SQD draining, rd_atomic depth
	{"FLUSH", 3, 3, IssueFabric}, // the error chain starts with a failing WR
	{"FLUSH", 9, 9, IssueFabric}, // RC errors raised by traffic
	{"FLUSH", 1, 9, IssueLocalHCA},
	{"FLUSH", 10, 12, IssueFabric}, // errors raised by traffic
	{"FLUSH", 13, 14, IssueLocalHCA},
	{"WC", 0, 0, IssueFabric},
	{"XFER", 0, 0, IssueFabric},
	{"SRQ", 1, 8, IssueLocalHCA},
	{"SRQ", 9, 9, IssueFabric}, // RNR on an empty SRQ
	{"SRQ", 10, 11, IssueLocalHCA},
	{"MR", 3, 3, IssueFabric}, // LOCAL_WRITE checked when the device writes
	{"MR", 7, 8, IssueFabric}, // faults of WRs in flight, cross-PD keys at use
	{"MR", 0, 0, IssueLocalHCA},
	{"PD", 4, 4, IssueFabric}, // a UD WR with another PD's AH
	{"PD", 0, 0, IssueLocalHCA},
}

// followUp names the part of a checked rule that only a later issue can
// check, because it needs objects or traffic that do not exist yet.
type followUp struct {
	what  string
	issue int
}

var followUps = map[string]followUp{
	"CQ-11":     {"with real QPs, SRQs and WQs", IssueLocalHCA},
	"NOTIFY-04": {"with the SE bit of a real SEND", IssueFabric},
	"NOTIFY-05": {"with errors and flushes produced by traffic", IssueFabric},
	"ASYNC-03":  {"for QP, SRQ, WQ and port events", IssueFabric},
	"ASYNC-05":  {"for QP, SRQ and WQ destroys", IssueLocalHCA},
}

// PendingIssue returns the issue that will implement rule id, or 0 when the
// rule belongs to the completion core that exists now.
func PendingIssue(id string) int {
	fam := family(id)
	n, _ := number(id)
	for _, s := range pendingSpans {
		if s.family == fam && (s.to == 0 || s.from <= n && n <= s.to) {
			return s.issue
		}
	}
	return 0
}
