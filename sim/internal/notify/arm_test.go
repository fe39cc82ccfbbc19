package notify_test

import (
	"testing"

	"github.com/verbsim/verbsim/sim/internal/notify"
	"github.com/verbsim/verbsim/verbs"
)

// TestArmRequest checks every (pending, request) pair: next dominates in
// either order (NOTIFY-07) and repeated requests collapse (NOTIFY-08).
func TestArmRequest(t *testing.T) {
	tests := []struct {
		from          notify.Arm
		solicitedOnly bool
		want          notify.Arm
	}{
		{notify.Disarmed, false, notify.ArmNext},
		{notify.Disarmed, true, notify.ArmSolicited},
		{notify.ArmSolicited, false, notify.ArmNext},     // NOTIFY-07: upgrade
		{notify.ArmSolicited, true, notify.ArmSolicited}, // NOTIFY-08: collapse
		{notify.ArmNext, true, notify.ArmNext},           // NOTIFY-07: next kept
		{notify.ArmNext, false, notify.ArmNext},          // NOTIFY-08: collapse
	}
	for _, tt := range tests {
		if got := tt.from.Request(tt.solicitedOnly); got != tt.want {
			t.Errorf("%v.Request(solicitedOnly=%v) = %v, want %v", tt.from, tt.solicitedOnly, got, tt.want)
		}
	}
}

// TestArmFires is the truth table of NOTIFY-03, NOTIFY-04, NOTIFY-05 and
// NOTIFY-16 under both solicited policies.
func TestArmFires(t *testing.T) {
	send := verbs.WC{Status: verbs.WCSuccess, Opcode: verbs.WCSend}
	recv := verbs.WC{Status: verbs.WCSuccess, Opcode: verbs.WCRecv}
	recvImm := verbs.WC{Status: verbs.WCSuccess, Opcode: verbs.WCRecvRDMAWithImm}
	flush := verbs.WC{Status: verbs.WCWRFlushErr} // opcode undefined (WC-03)
	remErr := verbs.WC{Status: verbs.WCRemAccessErr, Opcode: verbs.WCRDMAWrite}

	type row struct {
		name      string
		arm       notify.Arm
		w         verbs.WC
		solicited bool
		want      [2]bool // [ErrorsFire, SolicitedBitOnly]
	}
	rows := []row{
		{"disarmed/recv SE", notify.Disarmed, recv, true, [2]bool{false, false}},
		{"disarmed/error", notify.Disarmed, flush, false, [2]bool{false, false}},
		{"next/send", notify.ArmNext, send, false, [2]bool{true, true}},           // NOTIFY-03
		{"next/recv", notify.ArmNext, recv, false, [2]bool{true, true}},           // NOTIFY-03
		{"next/error", notify.ArmNext, flush, false, [2]bool{true, true}},         // NOTIFY-03
		{"sol/send", notify.ArmSolicited, send, false, [2]bool{false, false}},     // NOTIFY-04
		{"sol/send SE", notify.ArmSolicited, send, true, [2]bool{false, false}},   // NOTIFY-16
		{"sol/recv", notify.ArmSolicited, recv, false, [2]bool{false, false}},     // NOTIFY-04
		{"sol/recv SE", notify.ArmSolicited, recv, true, [2]bool{true, true}},     // NOTIFY-04
		{"sol/imm SE", notify.ArmSolicited, recvImm, true, [2]bool{true, true}},   // NOTIFY-04
		{"sol/flush", notify.ArmSolicited, flush, false, [2]bool{true, false}},    // NOTIFY-05
		{"sol/flush SE", notify.ArmSolicited, flush, true, [2]bool{true, true}},   // NOTIFY-05 B: recv flush
		{"sol/rem err", notify.ArmSolicited, remErr, false, [2]bool{true, false}}, // NOTIFY-05
	}
	for _, r := range rows {
		for i, p := range []notify.SolicitedPolicy{notify.ErrorsFire, notify.SolicitedBitOnly} {
			if got := r.arm.Fires(&r.w, r.solicited, p); got != r.want[i] {
				t.Errorf("%s under %v: Fires = %v, want %v", r.name, p, got, r.want[i])
			}
		}
	}
}

func TestArmStrings(t *testing.T) {
	for a, want := range map[notify.Arm]string{
		notify.Disarmed: "disarmed", notify.ArmSolicited: "solicited", notify.ArmNext: "next", 9: "Arm(9)",
	} {
		if a.String() != want {
			t.Errorf("Arm(%d).String() = %q, want %q", uint8(a), a.String(), want)
		}
	}
	if notify.ErrorsFire.String() != "errors-fire" || notify.SolicitedBitOnly.String() != "solicited-bit-only" {
		t.Error("SolicitedPolicy strings changed")
	}
}
