package qp_test

import (
	"testing"

	"github.com/verbsim/verbsim/sim/internal/qp"
)

func TestSupported(t *testing.T) {
	for _, ty := range []qp.Type{qp.RC, qp.UC, qp.UD, qp.RawPacket, qp.XRCSend, qp.XRCRecv, qp.Driver, qp.Type(5)} {
		if want := ty == qp.RC || ty == qp.UC || ty == qp.UD || ty == qp.XRCSend || ty == qp.XRCRecv; qp.Supported(ty) != want {
			t.Errorf("Supported(%v) = %v", ty, !want)
		}
	}
}

func TestCurStatePolicyString(t *testing.T) {
	if qp.CurStateMustMatch.String() != "must-match" || qp.CurStateTrusted.String() != "trusted" {
		t.Errorf("got %q, %q", qp.CurStateMustMatch, qp.CurStateTrusted)
	}
}
