package qp

import (
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/verbsim/verbsim/sim/wc"
)

func TestSendOpsString(t *testing.T) {
	for _, c := range []struct {
		o    SendOps
		want string
	}{
		{0, "0"},
		{WithSend | WithRDMARead, "SEND|RDMA_READ"},
		{WithAtomicWrite | 1<<11, "ATOMIC_WRITE|0x800"},
	} {
		if got := c.o.String(); got != c.want {
			t.Errorf("%#x: %q, want %q", uint64(c.o), got, c.want)
		}
	}
}

// QPX-01: each type's set, and the rxe reading of UC.
func TestSupportedSendOps(t *testing.T) {
	if SupportedSendOps(RC, Policy{}) != sendOpsAll || SupportedSendOps(UD, RXEPolicy()) != WithSend|WithSendImm {
		t.Error("RC or UD set")
	}
	if SupportedSendOps(UC, Policy{})&WithLocalInv == 0 || SupportedSendOps(UC, RXEPolicy())&WithLocalInv != 0 {
		t.Error("UC LOCAL_INV readings")
	}
	// Every supported operation is one the transport matrix allows.
	for _, typ := range []Type{RC, UC, UD} {
		for op := range 20 {
			bit := opSendOp(wc.WROpcode(op))
			if bit == 0 {
				continue
			}
			ok, _ := opAllowed(wc.WROpcode(op), typ)
			if SupportedSendOps(typ, Policy{})&bit != 0 && !ok {
				t.Errorf("%v: %v supported but not allowed by QP-33", typ, bit)
			}
		}
	}
}

// The send_ops_flags values are those of verbs.h, when it is installed.
func TestSendOpsMatchVerbsH(t *testing.T) {
	src, err := os.ReadFile("/usr/include/infiniband/verbs.h")
	if err != nil {
		t.Skip("verbs.h not installed")
	}
	want := map[string]SendOps{
		"RDMA_WRITE": WithRDMAWrite, "RDMA_WRITE_WITH_IMM": WithRDMAWriteImm, "SEND": WithSend,
		"SEND_WITH_IMM": WithSendImm, "RDMA_READ": WithRDMARead, "ATOMIC_CMP_AND_SWP": WithAtomicCmpSwp,
		"ATOMIC_FETCH_AND_ADD": WithAtomicFetchAdd, "LOCAL_INV": WithLocalInv, "BIND_MW": WithBindMW,
		"SEND_WITH_INV": WithSendInv, "TSO": WithTSO, "ATOMIC_WRITE": WithAtomicWrite,
	}
	re := regexp.MustCompile(`IBV_QP_EX_WITH_(\w+)\s*=\s*1\s*<<\s*(\d+)`)
	seen := 0
	for _, m := range re.FindAllStringSubmatch(string(src), -1) {
		v, ok := want[m[1]]
		if !ok {
			continue
		}
		n, _ := strconv.Atoi(m[2])
		if v != 1<<n {
			t.Errorf("IBV_QP_EX_WITH_%s = 1<<%d, ours %#x", m[1], n, uint64(v))
		}
		seen++
	}
	if seen != len(want) {
		t.Errorf("found %d of %d IBV_QP_EX_WITH_* values in verbs.h", seen, len(want))
	}
}
