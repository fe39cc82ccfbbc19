package verbs_test

import (
	"strings"
	"testing"

	"github.com/verbsim/verbsim/internal/abigolden"
	"github.com/verbsim/verbsim/verbs"
)

// Kinds of golden rows this package checks. The first three have
// constants in abigolden; the last three were added to abigen.c for this
// package.
const (
	kindQPState     = abigolden.KindQPState
	kindQPType      = abigolden.KindQPType
	kindAccessFlags = abigolden.KindAccessFlags
	kindAttrMask    = "qp_attr_mask" // enum ibv_qp_attr_mask (one row per bit)
	kindMTU         = "mtu"          // enum ibv_mtu
	kindMigState    = "mig_state"    // enum ibv_mig_state
)

// golden returns the named rows of one kind, keyed by C enumerator.
func golden(t *testing.T, kind string) map[string]int64 {
	t.Helper()
	rows, err := abigolden.Load(goldenPath)
	if err != nil {
		t.Fatal(err)
	}
	m := make(map[string]int64)
	for v, r := range abigolden.Lookup(rows, kind) {
		if r.Name != "" {
			m[r.Name] = v
		}
	}
	if len(m) == 0 {
		t.Fatalf("the golden file has no %s rows", kind)
	}
	return m
}

// checkGolden compares Go constants (value, C name) with the golden rows
// of kind: every constant is in the file with its value, and the file has
// no enumerator without a constant.
func checkGolden(t *testing.T, kind string, consts map[string]uint32) {
	t.Helper()
	g := golden(t, kind)
	for name, v := range consts {
		gv, ok := g[name]
		if !ok {
			t.Errorf("%s: not in the golden file", name)
			continue
		}
		if int64(v) != gv {
			t.Errorf("%s: Go value %d, verbs.h %d", name, v, gv)
		}
	}
	for name := range g {
		if _, ok := consts[name]; !ok {
			t.Errorf("%s (%s) has no Go constant", name, kind)
		}
	}
}

// TestStateGolden_QP06 checks State's values, Name and String against
// rdma-core 44 (QP-06).
func TestStateGolden_QP06(t *testing.T) {
	consts := map[string]uint32{}
	for _, s := range []verbs.QPState{verbs.QPStateReset, verbs.QPStateInit, verbs.QPStateRTR, verbs.QPStateRTS, verbs.QPStateSQD, verbs.QPStateSQE, verbs.QPStateErr, verbs.QPStateUnknown} {
		consts[s.Name()] = uint32(s)
		if got, want := s.String(), strings.TrimPrefix(s.Name(), "IBV_QPS_"); got != want {
			t.Errorf("State(%d).String() = %q, want %q", uint32(s), got, want)
		}
	}
	checkGolden(t, kindQPState, consts)
	if verbs.QPStateReset != 0 || verbs.QPStateErr != 6 || verbs.QPStateUnknown != 7 {
		t.Errorf("QP-06: RESET, ERR, UNKNOWN = %d, %d, %d; want 0, 6, 7", verbs.QPStateReset, verbs.QPStateErr, verbs.QPStateUnknown)
	}
	if s := verbs.QPState(8); s.Name() != "" || s.String() != "State(8)" || s.Valid() {
		t.Errorf("State(8): Name %q, String %q, Valid %v", s.Name(), s.String(), s.Valid())
	}
	if verbs.QPStateUnknown.Valid() || !verbs.QPStateErr.Valid() {
		t.Error("QP-06: Unknown must not be Valid, Err must")
	}
}

func TestTypeGolden(t *testing.T) {
	types := []verbs.QPType{verbs.QPTypeRC, verbs.QPTypeUC, verbs.QPTypeUD, verbs.QPTypeRawPacket, verbs.QPTypeXRCSend, verbs.QPTypeXRCRecv, verbs.QPTypeDriver}
	consts := map[string]uint32{}
	for _, ty := range types {
		consts[ty.Name()] = uint32(ty)
		if got, want := ty.String(), strings.TrimPrefix(ty.Name(), "IBV_QPT_"); got != want {
			t.Errorf("Type(%d).String() = %q, want %q", uint32(ty), got, want)
		}
	}
	checkGolden(t, kindQPType, consts)
	if ty := verbs.QPType(5); ty.Name() != "" || ty.String() != "Type(5)" {
		t.Errorf("Type(5): %q %q", ty.Name(), ty.String())
	}
}

// TestAccessFlagsGolden_MR05 checks every access bit against verbs.h
// (MR-05) and String against the enumerator names.
func TestAccessFlagsGolden_MR05(t *testing.T) {
	all := map[verbs.AccessFlags]string{
		verbs.AccessLocalWrite:      "IBV_ACCESS_LOCAL_WRITE",
		verbs.AccessRemoteWrite:     "IBV_ACCESS_REMOTE_WRITE",
		verbs.AccessRemoteRead:      "IBV_ACCESS_REMOTE_READ",
		verbs.AccessRemoteAtomic:    "IBV_ACCESS_REMOTE_ATOMIC",
		verbs.AccessMWBind:          "IBV_ACCESS_MW_BIND",
		verbs.AccessZeroBased:       "IBV_ACCESS_ZERO_BASED",
		verbs.AccessOnDemand:        "IBV_ACCESS_ON_DEMAND",
		verbs.AccessHugeTLB:         "IBV_ACCESS_HUGETLB",
		verbs.AccessRelaxedOrdering: "IBV_ACCESS_RELAXED_ORDERING",
	}
	consts := map[string]uint32{}
	for f, name := range all {
		consts[name] = uint32(f)
		if got, want := f.String(), strings.TrimPrefix(name, "IBV_ACCESS_"); got != want {
			t.Errorf("%s.String() = %q, want %q", name, got, want)
		}
	}
	checkGolden(t, kindAccessFlags, consts)
	for f, want := range map[verbs.AccessFlags]string{
		0: "0",
		verbs.AccessLocalWrite | verbs.AccessRemoteRead:           "LOCAL_WRITE|REMOTE_READ",
		verbs.AccessRemoteAtomic | 1<<12:                          "REMOTE_ATOMIC|0x1000",
		verbs.QPAccessBits:                                        "LOCAL_WRITE|REMOTE_WRITE|REMOTE_READ|REMOTE_ATOMIC",
		verbs.AccessRelaxedOrdering | verbs.AccessHugeTLB | 1<<31: "HUGETLB|RELAXED_ORDERING|0x80000000",
	} {
		if got := f.String(); got != want {
			t.Errorf("AccessFlags(%#x).String() = %q, want %q", uint32(f), got, want)
		}
	}
}

// TestAttrMaskGolden checks every mask bit against enum ibv_qp_attr_mask,
// and String and Name against the enumerator names.
func TestAttrMaskGolden(t *testing.T) {
	consts := map[string]uint32{}
	for _, b := range verbs.KnownQPAttrs.Bits() {
		consts[b.Name()] = uint32(b)
		if got, want := b.String(), strings.TrimPrefix(b.Name(), "IBV_QP_"); got != want {
			t.Errorf("%s.String() = %q, want %q", b.Name(), got, want)
		}
	}
	checkGolden(t, kindAttrMask, consts)
	named := map[verbs.QPAttrMask]string{
		verbs.QPAttrState: "IBV_QP_STATE", verbs.QPAttrCurState: "IBV_QP_CUR_STATE",
		verbs.QPAttrEnSQDAsyncNotify: "IBV_QP_EN_SQD_ASYNC_NOTIFY", verbs.QPAttrAccessFlags: "IBV_QP_ACCESS_FLAGS",
		verbs.QPAttrPKeyIndex: "IBV_QP_PKEY_INDEX", verbs.QPAttrPort: "IBV_QP_PORT", verbs.QPAttrQKey: "IBV_QP_QKEY",
		verbs.QPAttrAV: "IBV_QP_AV", verbs.QPAttrPathMTU: "IBV_QP_PATH_MTU", verbs.QPAttrTimeout: "IBV_QP_TIMEOUT",
		verbs.QPAttrRetryCnt: "IBV_QP_RETRY_CNT", verbs.QPAttrRNRRetry: "IBV_QP_RNR_RETRY", verbs.QPAttrRQPSN: "IBV_QP_RQ_PSN",
		verbs.QPAttrMaxQPRDAtomic: "IBV_QP_MAX_QP_RD_ATOMIC", verbs.QPAttrAltPath: "IBV_QP_ALT_PATH",
		verbs.QPAttrMinRNRTimer: "IBV_QP_MIN_RNR_TIMER", verbs.QPAttrSQPSN: "IBV_QP_SQ_PSN",
		verbs.QPAttrMaxDestRDAtomic: "IBV_QP_MAX_DEST_RD_ATOMIC", verbs.QPAttrPathMigState: "IBV_QP_PATH_MIG_STATE",
		verbs.QPAttrCap: "IBV_QP_CAP", verbs.QPAttrDestQPN: "IBV_QP_DEST_QPN", verbs.QPAttrRateLimit: "IBV_QP_RATE_LIMIT",
	}
	if len(named) != len(verbs.KnownQPAttrs.Bits()) {
		t.Errorf("%d named constants, KnownAttrs has %d bits", len(named), len(verbs.KnownQPAttrs.Bits()))
	}
	for b, name := range named {
		if b.Name() != name {
			t.Errorf("constant for %s has Name %q", name, b.Name())
		}
	}
	for m, want := range map[verbs.QPAttrMask]string{
		0: "0",
		verbs.QPAttrState | verbs.QPAttrPKeyIndex | verbs.QPAttrPort | verbs.QPAttrAccessFlags: "STATE|ACCESS_FLAGS|PKEY_INDEX|PORT",
		verbs.QPAttrRateLimit | 1<<21 | 1<<31:                                                  "RATE_LIMIT|0x80200000",
	} {
		if got := m.String(); got != want {
			t.Errorf("AttrMask(%#x).String() = %q, want %q", uint32(m), got, want)
		}
	}
	for _, m := range []verbs.QPAttrMask{0, verbs.QPAttrState | verbs.QPAttrPort, 1 << 21} {
		if m.Name() != "" {
			t.Errorf("AttrMask(%#x).Name() = %q, want \"\"", uint32(m), m.Name())
		}
	}
}

func TestMTUGolden(t *testing.T) {
	consts := map[string]uint32{}
	for m, bytes := range map[verbs.MTU]int{verbs.MTU256: 256, verbs.MTU512: 512, verbs.MTU1024: 1024, verbs.MTU2048: 2048, verbs.MTU4096: 4096} {
		consts[m.Name()] = uint32(m)
		if m.Bytes() != bytes || !m.Valid() {
			t.Errorf("%s: Bytes %d, Valid %v; want %d, true", m.Name(), m.Bytes(), m.Valid(), bytes)
		}
		if got, want := m.String(), strings.TrimPrefix(m.Name(), "IBV_MTU_"); got != want {
			t.Errorf("%s.String() = %q, want %q", m.Name(), got, want)
		}
	}
	checkGolden(t, kindMTU, consts)
	for _, m := range []verbs.MTU{0, 6, 1 << 31} {
		if m.Valid() || m.Bytes() != 0 || m.Name() != "" || !strings.HasPrefix(m.String(), "MTU(") {
			t.Errorf("invalid MTU %d: Valid %v Bytes %d Name %q String %q", uint32(m), m.Valid(), m.Bytes(), m.Name(), m.String())
		}
	}
}

func TestMigStateGolden(t *testing.T) {
	consts := map[string]uint32{}
	for _, m := range []verbs.MigState{verbs.MigMigrated, verbs.MigRearm, verbs.MigArmed} {
		consts[m.Name()] = uint32(m)
		if got, want := m.String(), strings.TrimPrefix(m.Name(), "IBV_MIG_"); got != want {
			t.Errorf("%s.String() = %q, want %q", m.Name(), got, want)
		}
	}
	checkGolden(t, kindMigState, consts)
	if m := verbs.MigState(3); m.Valid() || m.Name() != "" || m.String() != "MigState(3)" {
		t.Errorf("MigState(3): %v %q %q", m.Valid(), m.Name(), m.String())
	}
}
