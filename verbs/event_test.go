package verbs_test

import (
	"fmt"
	"testing"

	"github.com/verbsim/verbsim/internal/abigolden"
	"github.com/verbsim/verbsim/verbs"
)

// TestEventTypesMatchGolden checks every EventType against the rows that
// rdma-core 44 printed into the golden file: the constants have the verbs.h
// values (ASYNC-04), Name is the C enumerator, Str is ibv_event_type_str,
// "unknown" past the enum included (ASYNC-17), and String is the
// enumerator, or a form with the value past the enum.
func TestEventTypesMatchGolden(t *testing.T) {
	rows, err := abigolden.Load(goldenPath)
	if err != nil {
		t.Fatal(err)
	}
	golden := abigolden.Lookup(rows, abigolden.KindEventType)
	if len(golden) == 0 {
		t.Fatal("the golden file has no event_type rows")
	}
	named := 0
	for v, g := range golden {
		typ := verbs.EventType(v)
		wantNames(t, "EventType", g, typ.Str(), typ.Name(), typ.String(), "IBV_EVENT_TYPE(%d)")
		if g.Name == "" {
			if e := typ.Element(); e != 0 {
				t.Errorf("out-of-range EventType(%d).Element() = %v, want 0", v, e)
			}
			continue
		}
		named++
		if typ.Element() == 0 {
			t.Errorf("%s has no element", g.Name)
		}
	}
	// Each constant must be the enumerator it is named after.
	consts := []struct {
		c    verbs.EventType
		name string
	}{
		{verbs.EventCQErr, "IBV_EVENT_CQ_ERR"},
		{verbs.EventQPFatal, "IBV_EVENT_QP_FATAL"},
		{verbs.EventQPReqErr, "IBV_EVENT_QP_REQ_ERR"},
		{verbs.EventQPAccessErr, "IBV_EVENT_QP_ACCESS_ERR"},
		{verbs.EventCommEst, "IBV_EVENT_COMM_EST"},
		{verbs.EventSQDrained, "IBV_EVENT_SQ_DRAINED"},
		{verbs.EventPathMig, "IBV_EVENT_PATH_MIG"},
		{verbs.EventPathMigErr, "IBV_EVENT_PATH_MIG_ERR"},
		{verbs.EventDeviceFatal, "IBV_EVENT_DEVICE_FATAL"},
		{verbs.EventPortActive, "IBV_EVENT_PORT_ACTIVE"},
		{verbs.EventPortErr, "IBV_EVENT_PORT_ERR"},
		{verbs.EventLIDChange, "IBV_EVENT_LID_CHANGE"},
		{verbs.EventPKeyChange, "IBV_EVENT_PKEY_CHANGE"},
		{verbs.EventSMChange, "IBV_EVENT_SM_CHANGE"},
		{verbs.EventSRQErr, "IBV_EVENT_SRQ_ERR"},
		{verbs.EventSRQLimitReached, "IBV_EVENT_SRQ_LIMIT_REACHED"},
		{verbs.EventQPLastWQEReached, "IBV_EVENT_QP_LAST_WQE_REACHED"},
		{verbs.EventClientReregister, "IBV_EVENT_CLIENT_REREGISTER"},
		{verbs.EventGIDChange, "IBV_EVENT_GID_CHANGE"},
		{verbs.EventWQFatal, "IBV_EVENT_WQ_FATAL"},
	}
	if len(consts) != named {
		t.Errorf("%d EventType constants, the golden file has %d enumerators", len(consts), named)
	}
	for _, k := range consts {
		if g := golden[int64(k.c)]; g.Name != k.name {
			t.Errorf("the constant for %s is %d, which the golden file calls %q", k.name, uint32(k.c), g.Name)
		}
	}
}

// wantNames checks the three spellings of one value of an enum that
// libibverbs can render against its golden row: Str is the text of the
// library's string function, Name the enumerator ("" past the enum), and
// String the enumerator, or past the enum the form outside (with %d).
func wantNames(t *testing.T, enum string, r abigolden.Row, str, name, s, outside string) {
	t.Helper()
	if str != r.Str {
		t.Errorf("%s(%d).Str() = %q, libibverbs gives %q", enum, r.Value, str, r.Str)
	}
	if name != r.Name {
		t.Errorf("%s(%d).Name() = %q, want %q", enum, r.Value, name, r.Name)
	}
	want := r.Name
	if want == "" {
		want = fmt.Sprintf(outside, r.Value)
	}
	if s != want {
		t.Errorf("%s(%d).String() = %q, want %q", enum, r.Value, s, want)
	}
}
