package scenario

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/verbsim/verbsim/sim/trace"
	"github.com/verbsim/verbsim/verbs"
)

// TestRecordsAreTyped: every record the tour's runs leave, under every
// profile, is typed as its readers expect. Each has a kind other than
// KindOther and a name; a name always comes with the same kind; a packet
// record on the wire describes its packet, a completion its WC, a raise
// its event, an RNR timer record the RNR timer; only verbs fail. And the
// tour shows what readers look for: RNR and error NAKs, error
// completions, async events, arm firings, both timers.
func TestRecordsAreTyped(t *testing.T) {
	kindOf := map[string]trace.Kind{}
	seen := map[string]bool{}
	for _, f := range TourFiles() {
		name := strings.TrimSuffix(filepath.Base(f), ".scen")
		for _, p := range Profiles() {
			for _, r := range runTourProfile(t, name, p).Trace {
				checkRecord(t, name+"/"+p, &r, kindOf)
				seen[r.Kind.String()+" "+r.Name] = true
				if n := r.NAK(); n != trace.NotNAK {
					seen["nak "+n.String()] = true
				}
				if r.WC != nil && r.WC.Status != verbs.WCSuccess {
					seen["error completion"] = true
				}
				if r.Timer != trace.TimerNone {
					seen["timer "+r.Timer.String()] = true
				}
			}
		}
	}
	for _, want := range []string{"nak RNR_NAK", "nak NAK_INV_REQ", "nak NAK_REM_ACCESS", "error completion", "event raise",
		"event arm fired", "timer ACK timeout", "timer RNR wait", "packet send", "packet receive", "packet drop", "state state ERR",
		"fault arm fault", "completion overrun", "packet RNR NAK", "packet responder error"} {
		if !seen[want] {
			t.Errorf("no tour shows %q", want)
		}
	}
}

// kinds are the kinds of the records readers look for by name: the
// filters of verbsim's -trace-filter, the pictures, the scenario's own
// records.
var kinds = map[string]trace.Kind{
	"send": trace.KindPacket, "receive": trace.KindPacket, "drop": trace.KindPacket, "RNR NAK": trace.KindPacket,
	"responder error": trace.KindPacket, "UD datagram dropped": trace.KindPacket,
	"completion": trace.KindCompletion, "overrun": trace.KindCompletion, "send WR failed": trace.KindCompletion,
	"arm fired": trace.KindEvent, "raise": trace.KindEvent,
	"timer fired": trace.KindTimer, "RNR wait": trace.KindTimer, "RNR timer fired": trace.KindTimer,
	"ACK timeout": trace.KindTimer, "retries exhausted": trace.KindTimer,
	"state ERR": trace.KindState, "faults": trace.KindFault, "arm fault": trace.KindFault, "link PORT_DOWN": trace.KindFault,
	"post_send": trace.KindVerb, "poll_cq": trace.KindVerb, "create_qp": trace.KindVerb, "modify_qp": trace.KindVerb,
}

func checkRecord(t *testing.T, run string, r *trace.Record, kindOf map[string]trace.Kind) {
	t.Helper()
	bad := func(why string) { t.Errorf("%s: %v: %s", run, *r, why) }
	if r.Kind == trace.KindOther || r.Name == "" {
		bad("no kind or no name")
	}
	if k, ok := kinds[r.Name]; ok && k != r.Kind {
		bad("a " + r.Name + " record must be of kind " + k.String())
	}
	if k, ok := kindOf[r.Name]; ok && k != r.Kind {
		bad("the name " + r.Name + " is also of kind " + k.String())
	}
	kindOf[r.Name] = r.Kind
	if r.Errno != 0 && r.Kind != trace.KindVerb {
		bad("an errno on a record that is no verb")
	}
	switch {
	case r.Kind == trace.KindPacket && strings.Contains(" send receive drop duplicate delay arrive ", " "+r.Name+" "):
		if r.Packet == nil || r.Packet.Transport == 0 {
			bad("a packet on the wire without its description")
		} else if r.Packet.NAK != trace.NotNAK && r.Packet.Kind != trace.PacketAck {
			bad("a NAK kind on a packet that is no acknowledgement")
		}
	case r.Kind == trace.KindCompletion && (r.Name == "completion" || r.Name == "overrun"):
		if r.WC == nil {
			bad("a completion without its WC")
		}
	case r.Name == "raise":
		if r.Async == nil || r.Kind != trace.KindEvent {
			bad("an async event without its type")
		}
	case r.Name == "RNR wait" || r.Name == "RNR timer fired":
		if r.Timer != trace.TimerRNR {
			bad("an RNR timer record without the RNR timer")
		}
	case r.Name == "ACK timeout":
		if r.Timer != trace.TimerACK {
			bad("an ACK timeout without the ACK timer")
		}
	}
}
