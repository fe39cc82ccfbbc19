package qp_test

import (
	"testing"

	"github.com/verbsim/verbsim/sim/internal/qp"
	"github.com/verbsim/verbsim/verbs"
)

func TestSupported(t *testing.T) {
	for _, ty := range []verbs.QPType{verbs.QPTypeRC, verbs.QPTypeUC, verbs.QPTypeUD, verbs.QPTypeRawPacket, verbs.QPTypeXRCSend, verbs.QPTypeXRCRecv, verbs.QPTypeDriver, verbs.QPType(5)} {
		if want := ty == verbs.QPTypeRC || ty == verbs.QPTypeUC || ty == verbs.QPTypeUD || ty == verbs.QPTypeXRCSend || ty == verbs.QPTypeXRCRecv; qp.Supported(ty) != want {
			t.Errorf("Supported(%v) = %v", ty, !want)
		}
	}
}

func TestCurStatePolicyString(t *testing.T) {
	if qp.CurStateMustMatch.String() != "must-match" || qp.CurStateTrusted.String() != "trusted" {
		t.Errorf("got %q, %q", qp.CurStateMustMatch, qp.CurStateTrusted)
	}
}
