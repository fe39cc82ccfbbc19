package rdmacm_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/verbsim/verbsim/internal/abigentest"
	"github.com/verbsim/verbsim/internal/abigolden"
	"github.com/verbsim/verbsim/rdmacm"
	"github.com/verbsim/verbsim/verbs"
)

var goldenPath = filepath.Join("testdata", "rdmacm44.golden")

func golden(t *testing.T) []abigolden.Row {
	t.Helper()
	rows, err := abigolden.Load(goldenPath)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestEventStrings_CM31 checks every event type, and the probes past the
// enum, against rdma_event_str of the installed librdmacm.
func TestEventStrings_CM31(t *testing.T) {
	rows := abigolden.Lookup(golden(t), "cm_event")
	if len(rows) < 16 {
		t.Fatalf("%d cm_event rows, want the 16 event types and probes", len(rows))
	}
	for v, r := range rows {
		if got := rdmacm.EventType(v).Str(); got != r.Str {
			t.Errorf("EventType(%d).Str() = %q, rdma_event_str says %q", v, got, r.Str)
		}
		if v < 16 && rdmacm.EventType(v).String() != r.Str {
			t.Errorf("EventType(%d).String() = %q, want the enumerator %q", v, rdmacm.EventType(v).String(), r.Str)
		}
	}
}

// TestConstants_CM01 checks the port spaces, join flags and constants
// against rdma_cma.h.
func TestConstants_CM01(t *testing.T) {
	rows := golden(t)
	ps := abigolden.Lookup(rows, "cm_port_space")
	for _, p := range []rdmacm.PortSpace{rdmacm.PSIPoIB, rdmacm.PSTCP, rdmacm.PSUDP, rdmacm.PSIB} {
		if r, ok := ps[int64(p)]; !ok || r.Name != p.String() {
			t.Errorf("%v = %#x: golden has %+v", p, uint16(p), r)
		}
	}
	if len(ps) != 4 {
		t.Errorf("the header has %d port spaces, the Go vocabulary 4", len(ps))
	}
	byName := map[string]int64{}
	for _, r := range rows {
		if strings.HasPrefix(r.Kind, "cm_const_") {
			byName[r.Name] = r.Value
		}
	}
	want := map[string]int64{
		"RDMA_UDP_QKEY": rdmacm.UDPQKey, "RDMA_MAX_RESP_RES": rdmacm.MaxRespRes, "RDMA_MAX_INIT_DEPTH": rdmacm.MaxInitDepth,
		"RAI_PASSIVE": int64(rdmacm.AIPassive), "RAI_NUMERICHOST": int64(rdmacm.AINumericHost),
		"RAI_NOROUTE": int64(rdmacm.AINoRoute), "RAI_FAMILY": int64(rdmacm.AIFamily),
		"RDMA_OPTION_ID": int64(rdmacm.OptionLevelID), "RDMA_OPTION_IB": int64(rdmacm.OptionLevelIB),
		"RDMA_OPTION_ID_TOS": int64(rdmacm.OptionTOS), "RDMA_OPTION_ID_REUSEADDR": int64(rdmacm.OptionReuseAddr),
		"RDMA_OPTION_ID_AFONLY": int64(rdmacm.OptionAFOnly), "RDMA_OPTION_ID_ACK_TIMEOUT": int64(rdmacm.OptionAckTimeout),
		"RDMA_OPTION_IB_PATH":          int64(rdmacm.OptionIBPath),
		"RDMA_CM_JOIN_MC_ATTR_ADDRESS": 1, "RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS": 2,
	}
	if d := cmp.Diff(want, byName); d != "" {
		t.Errorf("constants (-Go +rdma_cma.h):\n%s", d)
	}
	jf := abigolden.Lookup(rows, "cm_join_flag")
	if jf[int64(rdmacm.JoinFullMember)].Name != "RDMA_MC_JOIN_FLAG_FULLMEMBER" ||
		jf[int64(rdmacm.JoinSendOnlyFullMember)].Name != "RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER" {
		t.Errorf("join flags differ from rdma_cma.h: %+v", jf)
	}
	for v, r := range jf {
		if valid := rdmacm.JoinFlags(v).Valid(); valid != (r.Name != "RDMA_MC_JOIN_FLAG_RESERVED") {
			t.Errorf("JoinFlags(%d).Valid() = %v for %s", v, valid, r.Name)
		}
	}
}

// TestPortSpaceQPType_CM01 checks the QP type rdma_create_id gives each
// port space.
func TestPortSpaceQPType_CM01(t *testing.T) {
	for ps, want := range map[rdmacm.PortSpace]verbs.QPType{
		rdmacm.PSTCP: verbs.QPTypeRC, rdmacm.PSIB: verbs.QPTypeRC, rdmacm.PSUDP: verbs.QPTypeUD, rdmacm.PSIPoIB: verbs.QPTypeUD,
	} {
		if got := ps.QPType(); got != want {
			t.Errorf("%v.QPType() = %v, want %v", ps, got, want)
		}
	}
	if s := rdmacm.PortSpace(0x42).String(); s != "PortSpace(0x42)" {
		t.Errorf("an unknown port space renders %q", s)
	}
}

func TestReasonStrings(t *testing.T) {
	for r, want := range map[rdmacm.RejectReason][2]string{
		rdmacm.RejConsumerDefined:  {"IB_CM_REJ_CONSUMER_DEFINED", "consumer defined"},
		rdmacm.RejInvalidServiceID: {"IB_CM_REJ_INVALID_SERVICE_ID", "invalid service ID"},
		rdmacm.RejTimeout:          {"IB_CM_REJ_TIMEOUT", "timeout"},
		99:                         {"RejectReason(99)", "unrecognized reason"},
	} {
		if got := [2]string{r.String(), r.Str()}; got != want {
			t.Errorf("RejectReason(%d): String, Str = %q, want %q", r, got, want)
		}
	}
	for s, want := range map[rdmacm.SIDRStatus][2]string{
		rdmacm.SIDRSuccess: {"IB_SIDR_SUCCESS", "success"}, rdmacm.SIDRReject: {"IB_SIDR_REJECT", "reject"},
		-1: {"SIDRStatus(-1)", "unknown"}, 9: {"SIDRStatus(9)", "unknown"},
	} {
		if got := [2]string{s.String(), s.Str()}; got != want {
			t.Errorf("SIDRStatus(%d): String, Str = %q, want %q", s, got, want)
		}
	}
}

// TestGoldenMatchesLibrdmacm rebuilds abigen.c against the installed
// librdmacm and requires its output to equal the committed golden file
// (skipped with -short, or without gcc or the librdmacm headers).
func TestGoldenMatchesLibrdmacm(t *testing.T) {
	abigentest.Check(t, abigentest.Generator{Source: filepath.Join("internal", "abigen", "abigen.c"),
		Header: "/usr/include/rdma/rdma_cma.h", Lib: "-lrdmacm", Golden: goldenPath})
}
