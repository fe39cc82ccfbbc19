package qp

import (
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/verbsim/verbsim/verbs"
)

func TestSendOpsString(t *testing.T) {
	for _, c := range []struct {
		o    verbs.QPSendOps
		want string
	}{
		{0, "0"},
		{verbs.QPExWithSend | verbs.QPExWithRDMARead, "SEND|RDMA_READ"},
		{verbs.QPExWithAtomicWrite | 1<<11, "ATOMIC_WRITE|0x800"},
	} {
		if got := c.o.String(); got != c.want {
			t.Errorf("%#x: %q, want %q", uint64(c.o), got, c.want)
		}
	}
}

// QPX-01: each type's set, and the rxe reading of UC.
func TestSupportedSendOps(t *testing.T) {
	rxe := verbs.Readings{SendOpsRXE: RXEPolicy().SendOpsRXE}
	if verbs.SupportedSendOps(verbs.QPTypeRC, verbs.Readings{}) != ((verbs.QPExWithTSO<<1)-1)&^verbs.QPExWithTSO|verbs.QPExWithAtomicWrite || verbs.SupportedSendOps(verbs.QPTypeUD, rxe) != verbs.QPExWithSend|verbs.QPExWithSendImm {
		t.Error("RC or UD set")
	}
	if verbs.SupportedSendOps(verbs.QPTypeUC, verbs.Readings{})&verbs.QPExWithLocalInv == 0 || verbs.SupportedSendOps(verbs.QPTypeUC, rxe)&verbs.QPExWithLocalInv != 0 {
		t.Error("UC LOCAL_INV readings")
	}
	// Every supported operation is one the transport matrix allows.
	for _, typ := range []verbs.QPType{verbs.QPTypeRC, verbs.QPTypeUC, verbs.QPTypeUD} {
		for op := range 20 {
			bit := opSendOp(verbs.WROpcode(op))
			if bit == 0 {
				continue
			}
			ok, _ := opAllowed(verbs.WROpcode(op), typ)
			if verbs.SupportedSendOps(typ, verbs.Readings{})&bit != 0 && !ok {
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
	want := map[string]verbs.QPSendOps{
		"RDMA_WRITE": verbs.QPExWithRDMAWrite, "RDMA_WRITE_WITH_IMM": verbs.QPExWithRDMAWriteImm, "SEND": verbs.QPExWithSend,
		"SEND_WITH_IMM": verbs.QPExWithSendImm, "RDMA_READ": verbs.QPExWithRDMARead, "ATOMIC_CMP_AND_SWP": verbs.QPExWithAtomicCmpSwp,
		"ATOMIC_FETCH_AND_ADD": verbs.QPExWithAtomicFetchAdd, "LOCAL_INV": verbs.QPExWithLocalInv, "BIND_MW": verbs.QPExWithBindMW,
		"SEND_WITH_INV": verbs.QPExWithSendInv, "TSO": verbs.QPExWithTSO, "ATOMIC_WRITE": verbs.QPExWithAtomicWrite,
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
