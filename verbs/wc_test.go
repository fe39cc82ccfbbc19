package verbs_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/verbsim/verbsim/internal/abigolden"
	"github.com/verbsim/verbsim/verbs"
)

const goldenPath = "testdata/verbs44.golden"

// Every exported constant of the package, paired with the C enumerator it
// models. The golden tests look each name up in verbs44.golden.
var (
	allStatuses = []struct {
		s    verbs.WCStatus
		name string
	}{
		{verbs.WCSuccess, "IBV_WC_SUCCESS"},
		{verbs.WCLocLenErr, "IBV_WC_LOC_LEN_ERR"},
		{verbs.WCLocQPOpErr, "IBV_WC_LOC_QP_OP_ERR"},
		{verbs.WCLocEECOpErr, "IBV_WC_LOC_EEC_OP_ERR"},
		{verbs.WCLocProtErr, "IBV_WC_LOC_PROT_ERR"},
		{verbs.WCWRFlushErr, "IBV_WC_WR_FLUSH_ERR"},
		{verbs.WCMWBindErr, "IBV_WC_MW_BIND_ERR"},
		{verbs.WCBadRespErr, "IBV_WC_BAD_RESP_ERR"},
		{verbs.WCLocAccessErr, "IBV_WC_LOC_ACCESS_ERR"},
		{verbs.WCRemInvReqErr, "IBV_WC_REM_INV_REQ_ERR"},
		{verbs.WCRemAccessErr, "IBV_WC_REM_ACCESS_ERR"},
		{verbs.WCRemOpErr, "IBV_WC_REM_OP_ERR"},
		{verbs.WCRetryExcErr, "IBV_WC_RETRY_EXC_ERR"},
		{verbs.WCRNRRetryExcErr, "IBV_WC_RNR_RETRY_EXC_ERR"},
		{verbs.WCLocRDDViolErr, "IBV_WC_LOC_RDD_VIOL_ERR"},
		{verbs.WCRemInvRDReqErr, "IBV_WC_REM_INV_RD_REQ_ERR"},
		{verbs.WCRemAbortErr, "IBV_WC_REM_ABORT_ERR"},
		{verbs.WCInvEECNErr, "IBV_WC_INV_EECN_ERR"},
		{verbs.WCInvEECStateErr, "IBV_WC_INV_EEC_STATE_ERR"},
		{verbs.WCFatalErr, "IBV_WC_FATAL_ERR"},
		{verbs.WCRespTimeoutErr, "IBV_WC_RESP_TIMEOUT_ERR"},
		{verbs.WCGeneralErr, "IBV_WC_GENERAL_ERR"},
		{verbs.WCTMErr, "IBV_WC_TM_ERR"},
		{verbs.WCTMRndvIncomplete, "IBV_WC_TM_RNDV_INCOMPLETE"},
	}
	allOpcodes = []struct {
		o    verbs.WCOpcode
		name string
	}{
		{verbs.WCSend, "IBV_WC_SEND"},
		{verbs.WCRDMAWrite, "IBV_WC_RDMA_WRITE"},
		{verbs.WCRDMARead, "IBV_WC_RDMA_READ"},
		{verbs.WCCompSwap, "IBV_WC_COMP_SWAP"},
		{verbs.WCFetchAdd, "IBV_WC_FETCH_ADD"},
		{verbs.WCBindMW, "IBV_WC_BIND_MW"},
		{verbs.WCLocalInv, "IBV_WC_LOCAL_INV"},
		{verbs.WCTSO, "IBV_WC_TSO"},
		{verbs.WCAtomicWrite, "IBV_WC_ATOMIC_WRITE"},
		{verbs.WCRecv, "IBV_WC_RECV"},
		{verbs.WCRecvRDMAWithImm, "IBV_WC_RECV_RDMA_WITH_IMM"},
		{verbs.WCTMAdd, "IBV_WC_TM_ADD"},
		{verbs.WCTMDel, "IBV_WC_TM_DEL"},
		{verbs.WCTMSync, "IBV_WC_TM_SYNC"},
		{verbs.WCTMRecv, "IBV_WC_TM_RECV"},
		{verbs.WCTMNoTag, "IBV_WC_TM_NO_TAG"},
		{verbs.WCDriver1, "IBV_WC_DRIVER1"},
		{verbs.WCDriver2, "IBV_WC_DRIVER2"},
		{verbs.WCDriver3, "IBV_WC_DRIVER3"},
	}
	allFlags = []struct {
		f    verbs.WCFlags
		name string
	}{
		{verbs.WCGRH, "IBV_WC_GRH"},
		{verbs.WCWithImm, "IBV_WC_WITH_IMM"},
		{verbs.WCIPCSumOK, "IBV_WC_IP_CSUM_OK"},
		{verbs.WCWithInv, "IBV_WC_WITH_INV"},
		{verbs.WCTMSyncReq, "IBV_WC_TM_SYNC_REQ"},
		{verbs.WCTMMatch, "IBV_WC_TM_MATCH"},
		{verbs.WCTMDataValid, "IBV_WC_TM_DATA_VALID"},
	}
	allWROpcodes = []struct {
		o    verbs.WROpcode
		name string
	}{
		{verbs.WRRDMAWrite, "IBV_WR_RDMA_WRITE"},
		{verbs.WRRDMAWriteWithImm, "IBV_WR_RDMA_WRITE_WITH_IMM"},
		{verbs.WRSend, "IBV_WR_SEND"},
		{verbs.WRSendWithImm, "IBV_WR_SEND_WITH_IMM"},
		{verbs.WRRDMARead, "IBV_WR_RDMA_READ"},
		{verbs.WRAtomicCmpAndSwp, "IBV_WR_ATOMIC_CMP_AND_SWP"},
		{verbs.WRAtomicFetchAndAdd, "IBV_WR_ATOMIC_FETCH_AND_ADD"},
		{verbs.WRLocalInv, "IBV_WR_LOCAL_INV"},
		{verbs.WRBindMW, "IBV_WR_BIND_MW"},
		{verbs.WRSendWithInv, "IBV_WR_SEND_WITH_INV"},
		{verbs.WRTSO, "IBV_WR_TSO"},
		{verbs.WRDriver1, "IBV_WR_DRIVER1"},
		{verbs.WRAtomicWrite, "IBV_WR_ATOMIC_WRITE"},
	}
)

func loadGolden(t *testing.T) []abigolden.Row {
	t.Helper()
	rows, err := abigolden.Load(goldenPath)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// byName indexes the named rows of one kind by C enumerator name.
func byName(t *testing.T, rows []abigolden.Row, kind string) map[string]abigolden.Row {
	t.Helper()
	m := make(map[string]abigolden.Row)
	for _, r := range abigolden.Lookup(rows, kind) {
		if r.Name != "" {
			m[r.Name] = r
		}
	}
	if len(m) == 0 {
		t.Fatalf("golden file has no named %s rows", kind)
	}
	return m
}

// enumerators counts the named (non-probe) rows of one kind.
func enumerators(rows []abigolden.Row, kind string) int {
	n := 0
	for _, r := range abigolden.Lookup(rows, kind) {
		if r.Name != "" {
			n++
		}
	}
	return n
}

// TestStatusGolden_WCS00_WCS22_ASYNC17 checks every Status constant's value,
// Name and Str against rdma-core 44, and checks every golden row
// (including the out-of-range probes that must render "unknown") against
// Status(value). String is the enumerator, and a form with the value
// outside the enum.
func TestStatusGolden_WCS00_WCS22_ASYNC17(t *testing.T) {
	rows := loadGolden(t)
	named := byName(t, rows, abigolden.KindWCStatus)
	if got, want := len(allStatuses), enumerators(rows, abigolden.KindWCStatus); got != want {
		t.Errorf("Go declares %d statuses, libibverbs %d", got, want)
	}
	for _, c := range allStatuses {
		r, ok := named[c.name]
		if !ok {
			t.Errorf("%s: not in golden file", c.name)
			continue
		}
		if int64(c.s) != r.Value {
			t.Errorf("%s: Go value %d, C value %d", c.name, uint32(c.s), r.Value)
		}
		if got := c.s.Name(); got != c.name {
			t.Errorf("Status(%d).Name() = %q, want %q", uint32(c.s), got, c.name)
		}
	}
	for v, r := range abigolden.Lookup(rows, abigolden.KindWCStatus) {
		s := verbs.WCStatus(uint32(v))
		wantNames(t, "WCStatus", r, s.Str(), s.Name(), s.String(), "IBV_WC_STATUS(%d)")
	}
	// The probes the rest of the test relies on really are in the file.
	for _, v := range []int64{24, 100, 1<<32 - 1} {
		if r, ok := abigolden.Lookup(rows, abigolden.KindWCStatus)[v]; !ok || r.Str != "unknown" {
			t.Errorf("ASYNC-17: golden probe %d = %+v, %v; want \"unknown\"", v, r, ok)
		}
	}
}

func TestOpcodeGolden_WC07(t *testing.T) {
	rows := loadGolden(t)
	named := byName(t, rows, abigolden.KindWCOpcode)
	if got, want := len(allOpcodes), len(named); got != want {
		t.Errorf("Go declares %d WC opcodes, verbs.h %d", got, want)
	}
	for _, c := range allOpcodes {
		r, ok := named[c.name]
		if !ok {
			t.Errorf("%s: not in golden file", c.name)
			continue
		}
		if int64(c.o) != r.Value {
			t.Errorf("%s: Go value %d, C value %d", c.name, uint32(c.o), r.Value)
		}
		if got := c.o.Name(); got != c.name {
			t.Errorf("Opcode(%d).Name() = %q, want %q", uint32(c.o), got, c.name)
		}
		if got := c.o.String(); got != c.name {
			t.Errorf("Opcode(%d).String() = %q, want %q", uint32(c.o), got, c.name)
		}
	}
	// Every value 0..255 that verbs.h does not name has no Name and the
	// fallback String.
	golden := abigolden.Lookup(rows, abigolden.KindWCOpcode)
	for v := range uint32(256) {
		if _, ok := golden[int64(v)]; ok {
			continue
		}
		o := verbs.WCOpcode(v)
		if o.Name() != "" {
			t.Errorf("Opcode(%d).Name() = %q, verbs.h has no such value", v, o.Name())
		}
		if want := "IBV_WC_OPCODE(" + strconv.Itoa(int(v)) + ")"; o.String() != want {
			t.Errorf("Opcode(%d).String() = %q, want %q", v, o.String(), want)
		}
	}
}

func TestFlagsGolden_WC08(t *testing.T) {
	rows := loadGolden(t)
	named := byName(t, rows, abigolden.KindWCFlags)
	if got, want := len(allFlags), len(named); got != want {
		t.Errorf("Go declares %d WC flags, verbs.h %d", got, want)
	}
	for _, c := range allFlags {
		r, ok := named[c.name]
		if !ok {
			t.Errorf("%s: not in golden file", c.name)
			continue
		}
		if int64(c.f) != r.Value {
			t.Errorf("%s: Go value %d, C value %d", c.name, uint32(c.f), r.Value)
		}
		if got := c.f.Name(); got != c.name {
			t.Errorf("Flags(%d).Name() = %q, want %q", uint32(c.f), got, c.name)
		}
		if got, want := c.f.String(), strings.TrimPrefix(c.name, "IBV_WC_"); got != want {
			t.Errorf("Flags(%d).String() = %q, want %q", uint32(c.f), got, want)
		}
	}
}

func TestWROpcodeGolden_WC07(t *testing.T) {
	rows := loadGolden(t)
	named := byName(t, rows, abigolden.KindWROpcode)
	if got, want := len(allWROpcodes), len(named); got != want {
		t.Errorf("Go declares %d WR opcodes, verbs.h %d", got, want)
	}
	for _, c := range allWROpcodes {
		r, ok := named[c.name]
		if !ok {
			t.Errorf("%s: not in golden file", c.name)
			continue
		}
		if int64(c.o) != r.Value {
			t.Errorf("%s: Go value %d, C value %d", c.name, uint32(c.o), r.Value)
		}
		if got := c.o.Name(); got != c.name {
			t.Errorf("WROpcode(%d).Name() = %q, want %q", uint32(c.o), got, c.name)
		}
		if got := c.o.String(); got != c.name {
			t.Errorf("WROpcode(%d).String() = %q, want %q", uint32(c.o), got, c.name)
		}
	}
	golden := abigolden.Lookup(rows, abigolden.KindWROpcode)
	for v := range uint32(256) {
		if _, ok := golden[int64(v)]; ok {
			continue
		}
		o := verbs.WROpcode(v)
		if o.Name() != "" {
			t.Errorf("WROpcode(%d).Name() = %q, verbs.h has no such value", v, o.Name())
		}
		if want := "IBV_WR_OPCODE(" + strconv.Itoa(int(v)) + ")"; o.String() != want {
			t.Errorf("WROpcode(%d).String() = %q, want %q", v, o.String(), want)
		}
	}
}

// TestWCLayout checks that WC has the members of struct ibv_wc in the same
// order, widths and offsets (x86_64), so a trace of a WC reads like the C
// struct and nothing is missing.
func TestWCLayout(t *testing.T) {
	rows := loadGolden(t)
	cName := map[string]string{
		"WRID": "wr_id", "Status": "status", "Opcode": "opcode",
		"VendorErr": "vendor_err", "ByteLen": "byte_len", "ImmData": "imm_data",
		"QPNum": "qp_num", "SrcQP": "src_qp", "WCFlags": "wc_flags",
		"PKeyIndex": "pkey_index", "SLID": "slid", "SL": "sl",
		"DLIDPathBits": "dlid_path_bits",
	}
	type member struct {
		Name         string
		Offset, Size int64
	}
	var got, want []member
	typ := reflect.TypeFor[verbs.WC]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		got = append(got, member{cName[f.Name], int64(f.Offset), int64(f.Type.Size())})
	}
	for _, r := range rows {
		if r.Kind != abigolden.KindWCField {
			continue
		}
		size, err := strconv.ParseInt(r.Str, 10, 64)
		if err != nil {
			t.Fatalf("wc_field %s: bad size %q", r.Name, r.Str)
		}
		want = append(want, member{r.Name, r.Value, size})
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("WC layout differs from struct ibv_wc (-C +Go):\n%s", d)
	}
	sz := abigolden.Lookup(rows, abigolden.KindWCSizeof)
	if len(sz) != 1 {
		t.Fatalf("want one wc_sizeof row, got %d", len(sz))
	}
	for v := range sz {
		if int64(typ.Size()) != v {
			t.Errorf("sizeof WC = %d, sizeof(struct ibv_wc) = %d", typ.Size(), v)
		}
	}
}

// TestGoldenMatchesLibibverbs rebuilds abigen.c against the installed
// libibverbs and requires its output to equal the committed golden file, so
// the file cannot drift from its generator. It is skipped when gcc or the
// verbs headers are missing, and with -short.
func TestGoldenMatchesLibibverbs(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping gcc build in -short mode")
	}
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("gcc not found")
	}
	if _, err := os.Stat("/usr/include/infiniband/verbs.h"); err != nil {
		t.Skip("libibverbs-dev not installed")
	}
	bin := filepath.Join(t.TempDir(), "abigen")
	build := exec.Command(gcc, "-std=c11", "-Wall", "-Wextra", "-Werror=switch",
		"-o", bin, filepath.Join("internal", "abigen", "abigen.c"), "-libverbs")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building abigen: %v\n%s", err, out)
	}
	got, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatalf("running abigen: %v", err)
	}
	want, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is stale (-committed +installed libibverbs):\n%s\nregenerate as described in verbs/internal/abigen/README.md",
			goldenPath, cmp.Diff(string(want), string(got)))
	}
}

func TestSendCompletion_WC04(t *testing.T) {
	want := map[verbs.WROpcode]verbs.WCOpcode{
		verbs.WRSend:              verbs.WCSend,
		verbs.WRSendWithImm:       verbs.WCSend,
		verbs.WRSendWithInv:       verbs.WCSend,
		verbs.WRRDMAWrite:         verbs.WCRDMAWrite,
		verbs.WRRDMAWriteWithImm:  verbs.WCRDMAWrite,
		verbs.WRRDMARead:          verbs.WCRDMARead,
		verbs.WRAtomicCmpAndSwp:   verbs.WCCompSwap,
		verbs.WRAtomicFetchAndAdd: verbs.WCFetchAdd,
		verbs.WRBindMW:            verbs.WCBindMW,
		verbs.WRLocalInv:          verbs.WCLocalInv,
		verbs.WRTSO:               verbs.WCTSO,
		// Not in WC-04's list: verbs.h enumerator pairing (and rxe).
		verbs.WRAtomicWrite: verbs.WCAtomicWrite,
		// Not in WC-04's list: man:ibv_poll_cq NOTES.
		verbs.WRDriver1: verbs.WCDriver1,
	}
	got := make(map[verbs.WROpcode]verbs.WCOpcode)
	for v := range uint32(256) {
		o := verbs.WROpcode(v)
		op, ok := o.SendCompletion()
		if ok != (o.Name() != "") {
			t.Errorf("%v.SendCompletion() ok = %v, want it true exactly for defined opcodes", o, ok)
		}
		if ok {
			got[o] = op
		} else if op != 0 {
			t.Errorf("%v.SendCompletion() = %v, false; want zero opcode with false", o, op)
		}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("WR -> requester WC opcode (-want +got):\n%s", d)
	}
	for o, op := range got {
		if op.IsClassicRecv() {
			t.Errorf("%v completes as %v at the requester, a receive opcode", o, op)
		}
	}
}

func TestRecvCompletion_WC05(t *testing.T) {
	want := map[verbs.WROpcode]verbs.WCOpcode{
		verbs.WRSend:             verbs.WCRecv,
		verbs.WRSendWithImm:      verbs.WCRecv,
		verbs.WRSendWithInv:      verbs.WCRecv,
		verbs.WRRDMAWriteWithImm: verbs.WCRecvRDMAWithImm,
	}
	got := make(map[verbs.WROpcode]verbs.WCOpcode)
	for v := range uint32(256) {
		o := verbs.WROpcode(v)
		op, ok := o.RecvCompletion()
		if ok {
			got[o] = op
			if !op.IsClassicRecv() {
				t.Errorf("%v.RecvCompletion() = %v, not a classic receive opcode", o, op)
			}
		} else if op != 0 {
			t.Errorf("%v.RecvCompletion() = %v, false; want zero opcode with false", o, op)
		}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("WR -> responder WC opcode (-want +got):\n%s", d)
	}
}

func TestWROpcodeClassify(t *testing.T) {
	for v := range uint32(256) {
		o := verbs.WROpcode(v)
		wantSend := o == verbs.WRSend || o == verbs.WRSendWithImm || o == verbs.WRSendWithInv
		if o.IsSend() != wantSend {
			t.Errorf("%v.IsSend() = %v", o, o.IsSend())
		}
		wantImm := o == verbs.WRSendWithImm || o == verbs.WRRDMAWriteWithImm
		if o.HasImm() != wantImm {
			t.Errorf("%v.HasImm() = %v", o, o.HasImm())
		}
		// A WR consumes a receive WR exactly when it is a SEND kind or
		// carries immediate data into an RDMA write (WC-05).
		_, recv := o.RecvCompletion()
		if recv != (o.IsSend() || o == verbs.WRRDMAWriteWithImm) {
			t.Errorf("%v: RecvCompletion ok = %v, IsSend = %v", o, recv, o.IsSend())
		}
	}
}

func TestIsRecv_WC06(t *testing.T) {
	for _, c := range allOpcodes {
		t.Run(c.name, func(t *testing.T) {
			wantRecv := c.o >= 128 // every verbs.h value from RECV up has bit 7
			if got := c.o.IsRecv(); got != wantRecv {
				t.Errorf("IsRecv() = %v, want %v", got, wantRecv)
			}
			wantClassic := c.name == "IBV_WC_RECV" || c.name == "IBV_WC_RECV_RDMA_WITH_IMM"
			if got := c.o.IsClassicRecv(); got != wantClassic {
				t.Errorf("IsClassicRecv() = %v, want %v", got, wantClassic)
			}
		})
	}
	t.Run("trap", func(t *testing.T) {
		// The bit test says "receive" for a completion that answers a
		// send-side WR.
		op, ok := verbs.WRDriver1.SendCompletion()
		if !ok || !op.IsRecv() || op.IsClassicRecv() {
			t.Errorf("WRDriver1 completes as %v (ok=%v): IsRecv=%v IsClassicRecv=%v; want true, false",
				op, ok, op.IsRecv(), op.IsClassicRecv())
		}
	})
}

// TestNumbering_WC07 pins the trap that converting a WR opcode to a WC
// opcode by type conversion is wrong: it gives the right answer for exactly
// one WR opcode, by coincidence.
func TestNumbering_WC07(t *testing.T) {
	if uint32(verbs.WRSend) != 2 || uint32(verbs.WCSend) != 0 {
		t.Errorf("SEND: WR %d, WC %d; want 2, 0", uint32(verbs.WRSend), uint32(verbs.WCSend))
	}
	if uint32(verbs.WRRDMAWrite) != 0 || uint32(verbs.WCRDMAWrite) != 1 {
		t.Errorf("RDMA_WRITE: WR %d, WC %d; want 0, 1", uint32(verbs.WRRDMAWrite), uint32(verbs.WCRDMAWrite))
	}
	var coincide []verbs.WROpcode
	for _, c := range allWROpcodes {
		op, _ := c.o.SendCompletion()
		if verbs.WCOpcode(uint32(c.o)) == op {
			coincide = append(coincide, c.o)
		}
	}
	if d := cmp.Diff([]verbs.WROpcode{verbs.WRRDMAWriteWithImm}, coincide); d != "" {
		t.Errorf("WR opcodes whose cast equals their completion (-want +got):\n%s", d)
	}
}

func TestFlagsString_WC08(t *testing.T) {
	for _, tc := range []struct {
		f        verbs.WCFlags
		str, nam string
	}{
		{0, "0", ""},
		{verbs.WCGRH, "GRH", "IBV_WC_GRH"},
		{verbs.WCGRH | verbs.WCWithImm, "GRH|WITH_IMM", ""},
		{verbs.WCWithInv | verbs.WCIPCSumOK, "IP_CSUM_OK|WITH_INV", ""},
		{verbs.WCTMSyncReq | verbs.WCTMMatch | verbs.WCTMDataValid, "TM_SYNC_REQ|TM_MATCH|TM_DATA_VALID", ""},
		{0x80, "0x80", ""},
		{verbs.WCWithImm | 0x300, "WITH_IMM|0x300", ""},
		{^verbs.WCFlags(0), "GRH|WITH_IMM|IP_CSUM_OK|WITH_INV|TM_SYNC_REQ|TM_MATCH|TM_DATA_VALID|0xffffff80", ""},
	} {
		if got := tc.f.String(); got != tc.str {
			t.Errorf("Flags(%#x).String() = %q, want %q", uint32(tc.f), got, tc.str)
		}
		if got := tc.f.Name(); got != tc.nam {
			t.Errorf("Flags(%#x).Name() = %q, want %q", uint32(tc.f), got, tc.nam)
		}
	}
}

func TestWCString_WC03(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    *verbs.WC
		want string
	}{
		{"nil", nil, "<nil>"},
		{"recv", &verbs.WC{WRID: 7, Opcode: verbs.WCRecv, ByteLen: 64, QPNum: 0x11},
			"wr_id=7 status=IBV_WC_SUCCESS opcode=IBV_WC_RECV byte_len=64 qp=0x11"},
		{"recv with imm", &verbs.WC{WRID: 1, Opcode: verbs.WCRecvRDMAWithImm, ByteLen: 4096, QPNum: 0x12,
			WCFlags: verbs.WCWithImm, ImmData: 0x01020304},
			"wr_id=1 status=IBV_WC_SUCCESS opcode=IBV_WC_RECV_RDMA_WITH_IMM byte_len=4096 qp=0x12 flags=WITH_IMM imm=0x01020304"},
		{"recv with inv", &verbs.WC{WRID: 2, Opcode: verbs.WCRecv, QPNum: 0x12, WCFlags: verbs.WCWithInv, ImmData: 0xabc},
			"wr_id=2 status=IBV_WC_SUCCESS opcode=IBV_WC_RECV byte_len=0 qp=0x12 flags=WITH_INV inv_rkey=0xabc"},
		{"ud recv", &verbs.WC{WRID: 3, Opcode: verbs.WCRecv, ByteLen: 104, QPNum: 0x20, SrcQP: 0x21,
			WCFlags: verbs.WCGRH, SLID: 5, SL: 1, DLIDPathBits: 2, PKeyIndex: 3},
			"wr_id=3 status=IBV_WC_SUCCESS opcode=IBV_WC_RECV byte_len=104 qp=0x20 src_qp=0x21 flags=GRH slid=5 sl=1 dlid_path_bits=2 pkey_index=3"},
		{"send side", &verbs.WC{WRID: 1<<64 - 1, Opcode: verbs.WCRDMARead, ByteLen: 8, QPNum: 0x11},
			"wr_id=18446744073709551615 status=IBV_WC_SUCCESS opcode=IBV_WC_RDMA_READ byte_len=8 qp=0x11"},
		// Error WCs show only wr_id, status, qp and vendor_err: the
		// garbage opcode, byte_len and flags are not rendered.
		{"flush", &verbs.WC{WRID: 8, Status: verbs.WCWRFlushErr, Opcode: verbs.WCSend, ByteLen: 99,
			WCFlags: verbs.WCWithImm, QPNum: 0x11},
			"wr_id=8 status=IBV_WC_WR_FLUSH_ERR qp=0x11 vendor_err=0x0"},
		{"remote access", &verbs.WC{WRID: 9, Status: verbs.WCRemAccessErr, QPNum: 0x11, VendorErr: 0x88},
			"wr_id=9 status=IBV_WC_REM_ACCESS_ERR qp=0x11 vendor_err=0x88"},
		{"unknown status", &verbs.WC{WRID: 10, Status: 24, QPNum: 1},
			"wr_id=10 status=IBV_WC_STATUS(24) qp=0x1 vendor_err=0x0"},
		{"unknown opcode", &verbs.WC{Opcode: 8, QPNum: 1},
			"wr_id=0 status=IBV_WC_SUCCESS opcode=IBV_WC_OPCODE(8) byte_len=0 qp=0x1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.w.String(); got != tc.want {
				t.Errorf("String() =\n  %s\nwant\n  %s", got, tc.want)
			}
		})
	}
}

func TestInvalidatedRkeyIsImmData_WC08(t *testing.T) {
	for _, v := range []uint32{0, 1, 0x12345678, 1<<32 - 1} {
		w := verbs.WC{ImmData: v}
		if got := w.InvalidatedRkey(); got != v {
			t.Errorf("InvalidatedRkey() = %#x, want %#x (same storage as ImmData)", got, v)
		}
	}
}

// TestValidMatchesTheEnums: Valid is true exactly for the values that have
// an enumerator name.
func TestValidMatchesTheEnums(t *testing.T) {
	for i := range uint32(1024) {
		if o := verbs.WCOpcode(i); o.Valid() != (o.Name() != "") {
			t.Errorf("Opcode(%d).Valid() = %v, Name() = %q", i, o.Valid(), o.Name())
		}
		if s := verbs.WCStatus(i); s.Valid() != (s.Name() != "") {
			t.Errorf("Status(%d).Valid() = %v, Name() = %q", i, s.Valid(), s.Name())
		}
	}
	if !(verbs.WCGRH | verbs.WCTMDataValid).Valid() || verbs.WCFlags(1<<7).Valid() {
		t.Error("Flags.Valid disagrees with the defined bits")
	}
}
