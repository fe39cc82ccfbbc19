package qp_test

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/sim/internal/qp"
	"github.com/verbsim/verbsim/verbs"
)

// TestValues_QP22 checks each value rule at and just past its bound, on a
// transition that takes the attribute. Port 1 of testLimits is InfiniBand
// (MTU 4096, 64 P_Keys, 16 GIDs), port 2 RoCE (MTU 1024, 1 P_Key, 4 GIDs,
// GRH required); max_rd_atomic ≤ 8, max_dest_rd_atomic ≤ 16.
func TestValues_QP22(t *testing.T) {
	type edit func(a *verbs.QPAttr, c *qp.Current)
	onPort2 := func(a *verbs.QPAttr, c *qp.Current) {
		c.Port = 2
		a.AHAttr = verbs.AHAttr{PortNum: 2, IsGlobal: true, GRH: verbs.GlobalRoute{SGIDIndex: 3}}
	}
	cases := []struct {
		name     string
		typ      verbs.QPType
		from, to verbs.QPState
		extra    verbs.QPAttrMask // added to the minimal mask
		edit     edit
		fail     string // what the reason must say; "" when accepted
	}{
		// port_num
		{"port 0", verbs.QPTypeRC, verbs.QPStateReset, verbs.QPStateInit, 0, func(a *verbs.QPAttr, _ *qp.Current) { a.PortNum = 0 }, "port_num 0 does not exist"},
		{"port 3 of 2", verbs.QPTypeRC, verbs.QPStateReset, verbs.QPStateInit, 0, func(a *verbs.QPAttr, _ *qp.Current) { a.PortNum = 3 }, "port_num 3 does not exist"},
		{"port 2", verbs.QPTypeRC, verbs.QPStateReset, verbs.QPStateInit, 0, func(a *verbs.QPAttr, _ *qp.Current) { a.PortNum, a.PKeyIndex = 2, 0 }, ""},
		// pkey_index, checked against the port the QP will be on
		{"pkey_index 63 of 64", verbs.QPTypeUD, verbs.QPStateReset, verbs.QPStateInit, 0, nil, ""},
		{"pkey_index 64 of 64", verbs.QPTypeUD, verbs.QPStateReset, verbs.QPStateInit, 0, func(a *verbs.QPAttr, _ *qp.Current) { a.PKeyIndex = 64 }, "pkey_index 64 is outside port 1"},
		{"pkey_index 1 on port 2", verbs.QPTypeUD, verbs.QPStateReset, verbs.QPStateInit, 0, func(a *verbs.QPAttr, _ *qp.Current) { a.PortNum, a.PKeyIndex = 2, 1 }, "pkey_index 1 is outside port 2"},
		{"INIT→INIT pkey on the QP's port 2", verbs.QPTypeRC, verbs.QPStateInit, verbs.QPStateInit, verbs.QPAttrPKeyIndex, func(a *verbs.QPAttr, c *qp.Current) { c.Port, a.PKeyIndex = 2, 0 }, ""},
		{"INIT→INIT pkey 1 on the QP's port 2", verbs.QPTypeRC, verbs.QPStateInit, verbs.QPStateInit, verbs.QPAttrPKeyIndex, func(a *verbs.QPAttr, c *qp.Current) { c.Port, a.PKeyIndex = 2, 1 }, "pkey_index 1 is outside port 2"},
		{"INIT→INIT pkey with a QP on no port", verbs.QPTypeRC, verbs.QPStateInit, verbs.QPStateInit, verbs.QPAttrPKeyIndex, func(_ *verbs.QPAttr, c *qp.Current) { c.Port = 0 }, "needs the QP's port"},
		// qp_access_flags
		{"access: all four QP bits", verbs.QPTypeUC, verbs.QPStateReset, verbs.QPStateInit, 0, func(a *verbs.QPAttr, _ *qp.Current) { a.QPAccessFlags = verbs.QPAccessBits }, ""},
		{"access: none", verbs.QPTypeUC, verbs.QPStateReset, verbs.QPStateInit, 0, func(a *verbs.QPAttr, _ *qp.Current) { a.QPAccessFlags = 0 }, ""},
		{"access: ON_DEMAND is accepted (ODP-03)", verbs.QPTypeRC, verbs.QPStateReset, verbs.QPStateInit, 0, func(a *verbs.QPAttr, _ *qp.Current) { a.QPAccessFlags |= verbs.AccessOnDemand }, ""},
		{"access: MW_BIND", verbs.QPTypeUC, verbs.QPStateReset, verbs.QPStateInit, 0, func(a *verbs.QPAttr, _ *qp.Current) { a.QPAccessFlags |= verbs.AccessMWBind }, "bits a QP does not use (MW_BIND)"},
		{"access: bit 12", verbs.QPTypeRC, verbs.QPStateInit, verbs.QPStateInit, verbs.QPAttrAccessFlags, func(a *verbs.QPAttr, _ *qp.Current) { a.QPAccessFlags = 1 << 12 }, "bits a QP does not use (0x1000)"},
		// ah_attr
		{"AV on port 1", verbs.QPTypeRC, verbs.QPStateInit, verbs.QPStateRTR, 0, nil, ""},
		{"AV port 0", verbs.QPTypeRC, verbs.QPStateInit, verbs.QPStateRTR, 0, func(a *verbs.QPAttr, _ *qp.Current) { a.AHAttr.PortNum = 0 }, "ah_attr.port_num 0 does not exist"},
		{"AV on another port than the QP's", verbs.QPTypeRC, verbs.QPStateInit, verbs.QPStateRTR, 0, func(a *verbs.QPAttr, _ *qp.Current) { a.AHAttr.PortNum = 2; a.AHAttr.IsGlobal = true }, "is not the QP's port 1"},
		{"AV global on RoCE port 2", verbs.QPTypeUC, verbs.QPStateInit, verbs.QPStateRTR, 0, onPort2, ""},
		{"AV not global on RoCE port 2", verbs.QPTypeUC, verbs.QPStateInit, verbs.QPStateRTR, 0, func(a *verbs.QPAttr, c *qp.Current) { onPort2(a, c); a.AHAttr.IsGlobal = false }, "port 2 requires a GRH"},
		{"AV sgid_index 4 of 4", verbs.QPTypeUC, verbs.QPStateInit, verbs.QPStateRTR, 0, func(a *verbs.QPAttr, c *qp.Current) { onPort2(a, c); a.AHAttr.GRH.SGIDIndex = 4 }, "sgid_index 4 is outside port 2"},
		{"AV sgid_index 15 of 16", verbs.QPTypeRC, verbs.QPStateInit, verbs.QPStateRTR, 0, func(a *verbs.QPAttr, _ *qp.Current) { a.AHAttr.IsGlobal, a.AHAttr.GRH.SGIDIndex = true, 15 }, ""},
		{"AV sgid_index 16 of 16", verbs.QPTypeRC, verbs.QPStateInit, verbs.QPStateRTR, 0, func(a *verbs.QPAttr, _ *qp.Current) { a.AHAttr.IsGlobal, a.AHAttr.GRH.SGIDIndex = true, 16 }, "sgid_index 16 is outside port 1"},
		{"SQD→SQD PORT and AV agree", verbs.QPTypeRC, verbs.QPStateSQD, verbs.QPStateSQD, verbs.QPAttrPort | verbs.QPAttrAV, func(a *verbs.QPAttr, _ *qp.Current) {
			a.PortNum, a.PKeyIndex = 2, 0
			a.AHAttr = verbs.AHAttr{PortNum: 2, IsGlobal: true}
		}, ""},
		{"SQD→SQD PORT and AV differ", verbs.QPTypeRC, verbs.QPStateSQD, verbs.QPStateSQD, verbs.QPAttrPort | verbs.QPAttrAV, func(a *verbs.QPAttr, _ *qp.Current) {
			a.AHAttr = verbs.AHAttr{PortNum: 2, IsGlobal: true}
		}, "ah_attr.port_num 2 differs from port_num 1"},
		// path_mtu
		{"path_mtu 4096 on port 1", verbs.QPTypeRC, verbs.QPStateInit, verbs.QPStateRTR, 0, func(a *verbs.QPAttr, _ *qp.Current) { a.PathMTU = verbs.MTU4096 }, ""},
		{"path_mtu 0", verbs.QPTypeRC, verbs.QPStateInit, verbs.QPStateRTR, 0, func(a *verbs.QPAttr, _ *qp.Current) { a.PathMTU = 0 }, "path_mtu 0 is not"},
		{"path_mtu 6", verbs.QPTypeUC, verbs.QPStateInit, verbs.QPStateRTR, 0, func(a *verbs.QPAttr, _ *qp.Current) { a.PathMTU = 6 }, "path_mtu 6 is not"},
		{"path_mtu 1024 on port 2", verbs.QPTypeUC, verbs.QPStateInit, verbs.QPStateRTR, 0, func(a *verbs.QPAttr, c *qp.Current) { onPort2(a, c); a.PathMTU = verbs.MTU1024 }, ""},
		{"path_mtu 2048 over port 2's 1024", verbs.QPTypeUC, verbs.QPStateInit, verbs.QPStateRTR, 0, func(a *verbs.QPAttr, c *qp.Current) { onPort2(a, c); a.PathMTU = verbs.MTU2048 }, "exceeds port 2's max_mtu 1024"},
		// responder and requester depths
		{"max_dest_rd_atomic 16", verbs.QPTypeRC, verbs.QPStateInit, verbs.QPStateRTR, 0, nil, ""},
		{"max_dest_rd_atomic 17", verbs.QPTypeRC, verbs.QPStateInit, verbs.QPStateRTR, 0, func(a *verbs.QPAttr, _ *qp.Current) { a.MaxDestRDAtomic = 17 }, "max_qp_rd_atom 16"},
		{"max_rd_atomic 8", verbs.QPTypeRC, verbs.QPStateRTR, verbs.QPStateRTS, 0, nil, ""},
		{"max_rd_atomic 0", verbs.QPTypeRC, verbs.QPStateRTR, verbs.QPStateRTS, 0, func(a *verbs.QPAttr, _ *qp.Current) { a.MaxRDAtomic = 0 }, ""},
		{"max_rd_atomic 9", verbs.QPTypeRC, verbs.QPStateRTR, verbs.QPStateRTS, 0, func(a *verbs.QPAttr, _ *qp.Current) { a.MaxRDAtomic = 9 }, "max_qp_init_rd_atom 8"},
		// 5- and 3-bit fields
		{"min_rnr_timer 31", verbs.QPTypeRC, verbs.QPStateInit, verbs.QPStateRTR, 0, nil, ""},
		{"min_rnr_timer 32", verbs.QPTypeRC, verbs.QPStateInit, verbs.QPStateRTR, 0, func(a *verbs.QPAttr, _ *qp.Current) { a.MinRNRTimer = 32 }, "min_rnr_timer 32 exceeds 31"},
		{"timeout 0 (wait forever)", verbs.QPTypeRC, verbs.QPStateRTR, verbs.QPStateRTS, 0, func(a *verbs.QPAttr, _ *qp.Current) { a.Timeout = 0 }, ""},
		{"timeout 31", verbs.QPTypeRC, verbs.QPStateRTR, verbs.QPStateRTS, 0, nil, ""},
		{"timeout 32", verbs.QPTypeRC, verbs.QPStateRTR, verbs.QPStateRTS, 0, func(a *verbs.QPAttr, _ *qp.Current) { a.Timeout = 32 }, "timeout 32 exceeds 31"},
		{"retry_cnt 7", verbs.QPTypeRC, verbs.QPStateRTR, verbs.QPStateRTS, 0, nil, ""},
		{"retry_cnt 8", verbs.QPTypeRC, verbs.QPStateRTR, verbs.QPStateRTS, 0, func(a *verbs.QPAttr, _ *qp.Current) { a.RetryCnt = 8 }, "retry_cnt 8 exceeds 7"},
		{"rnr_retry 8", verbs.QPTypeRC, verbs.QPStateRTR, verbs.QPStateRTS, 0, func(a *verbs.QPAttr, _ *qp.Current) { a.RNRRetry = 8 }, "rnr_retry 8 exceeds 7"},
		{"SQD→SQD timeout 255", verbs.QPTypeRC, verbs.QPStateSQD, verbs.QPStateSQD, verbs.QPAttrTimeout, func(a *verbs.QPAttr, _ *qp.Current) { a.Timeout = 255 }, "timeout 255 exceeds 31"},
		// path_mig_state
		{"path_mig_state ARMED", verbs.QPTypeUC, verbs.QPStateRTR, verbs.QPStateRTS, verbs.QPAttrPathMigState, nil, ""},
		{"path_mig_state 3", verbs.QPTypeUC, verbs.QPStateRTR, verbs.QPStateRTS, verbs.QPAttrPathMigState, func(a *verbs.QPAttr, _ *qp.Current) { a.PathMigState = 3 }, "path_mig_state 3 is not"},
		// alternate path
		{"alt path on port 1", verbs.QPTypeRC, verbs.QPStateInit, verbs.QPStateRTR, verbs.QPAttrAltPath, nil, ""},
		{"alt_port_num 0", verbs.QPTypeRC, verbs.QPStateInit, verbs.QPStateRTR, verbs.QPAttrAltPath, func(a *verbs.QPAttr, _ *qp.Current) { a.AltPortNum = 0 }, "alt_port_num 0 does not exist"},
		{"alt_port_num 3", verbs.QPTypeRC, verbs.QPStateRTS, verbs.QPStateRTS, verbs.QPAttrAltPath, func(a *verbs.QPAttr, _ *qp.Current) { a.AltPortNum = 3 }, "alt_port_num 3 does not exist"},
		{"alt AV on another port", verbs.QPTypeRC, verbs.QPStateInit, verbs.QPStateRTR, verbs.QPAttrAltPath, func(a *verbs.QPAttr, _ *qp.Current) {
			a.AltAHAttr = verbs.AHAttr{PortNum: 2, IsGlobal: true}
		}, "alt_ah_attr.port_num 2 differs from alt_port_num 1"},
		{"alt AV port 9", verbs.QPTypeRC, verbs.QPStateInit, verbs.QPStateRTR, verbs.QPAttrAltPath, func(a *verbs.QPAttr, _ *qp.Current) { a.AltAHAttr.PortNum = 9 }, "alt_ah_attr.port_num 9 does not exist"},
		{"alt AV sgid_index 16", verbs.QPTypeUC, verbs.QPStateRTS, verbs.QPStateRTS, verbs.QPAttrAltPath, func(a *verbs.QPAttr, _ *qp.Current) { a.AltAHAttr.GRH.SGIDIndex = 16 }, "alt_ah_attr.grh.sgid_index 16"},
		{"alt_timeout 31", verbs.QPTypeRC, verbs.QPStateSQD, verbs.QPStateRTS, verbs.QPAttrAltPath, func(a *verbs.QPAttr, _ *qp.Current) { a.AltTimeout = 31 }, ""},
		{"alt_timeout 32", verbs.QPTypeRC, verbs.QPStateSQD, verbs.QPStateRTS, verbs.QPAttrAltPath, func(a *verbs.QPAttr, _ *qp.Current) { a.AltTimeout = 32 }, "alt_timeout 32 exceeds 31"},
		{"alt_pkey_index 64", verbs.QPTypeRC, verbs.QPStateInit, verbs.QPStateRTR, verbs.QPAttrAltPath, func(a *verbs.QPAttr, _ *qp.Current) { a.AltPKeyIndex = 64 }, "alt_pkey_index 64"},
		{"alt path to a RoCE port", verbs.QPTypeRC, verbs.QPStateRTS, verbs.QPStateRTS, verbs.QPAttrAltPath, func(a *verbs.QPAttr, _ *qp.Current) {
			a.AltPortNum, a.AltPKeyIndex = 2, 0
			a.AltAHAttr = verbs.AHAttr{PortNum: 2, IsGlobal: true}
		}, "InfiniBand ports only"},
		{"alt path from a RoCE QP", verbs.QPTypeUC, verbs.QPStateRTS, verbs.QPStateRTS, verbs.QPAttrAltPath, func(_ *verbs.QPAttr, c *qp.Current) { c.Port = 2 }, "InfiniBand ports only"},
		// address vector values (AV-03)
		{"AV sl 15", verbs.QPTypeRC, verbs.QPStateInit, verbs.QPStateRTR, 0, func(a *verbs.QPAttr, _ *qp.Current) { a.AHAttr.SL = 15 }, ""},
		{"AV sl 16", verbs.QPTypeRC, verbs.QPStateInit, verbs.QPStateRTR, 0, func(a *verbs.QPAttr, _ *qp.Current) { a.AHAttr.SL = 16 }, "ah_attr.sl 16 does not fit"},
		{"AV static_rate 24", verbs.QPTypeUC, verbs.QPStateInit, verbs.QPStateRTR, 0, func(a *verbs.QPAttr, _ *qp.Current) { a.AHAttr.StaticRate = 24 }, ""},
		{"AV static_rate 1", verbs.QPTypeUC, verbs.QPStateInit, verbs.QPStateRTR, 0, func(a *verbs.QPAttr, _ *qp.Current) { a.AHAttr.StaticRate = 1 }, "static_rate 1 is not"},
		{"AV static_rate 25", verbs.QPTypeRC, verbs.QPStateInit, verbs.QPStateRTR, 0, func(a *verbs.QPAttr, _ *qp.Current) { a.AHAttr.StaticRate = 25 }, "static_rate 25 is not"},
		{"AV dlid 0 on InfiniBand", verbs.QPTypeRC, verbs.QPStateInit, verbs.QPStateRTR, 0, func(a *verbs.QPAttr, _ *qp.Current) { a.AHAttr.DLID = 0 }, "dlid 0 is reserved"},
		{"AV multicast dlid", verbs.QPTypeRC, verbs.QPStateInit, verbs.QPStateRTR, 0, func(a *verbs.QPAttr, _ *qp.Current) { a.AHAttr.DLID = 0xc001 }, "multicast or permissive"},
		{"AV permissive dlid", verbs.QPTypeUC, verbs.QPStateInit, verbs.QPStateRTR, 0, func(a *verbs.QPAttr, _ *qp.Current) { a.AHAttr.DLID = 0xffff }, "multicast or permissive"},
		{"AV dlid 0 on RoCE", verbs.QPTypeUC, verbs.QPStateInit, verbs.QPStateRTR, 0, func(a *verbs.QPAttr, c *qp.Current) {
			onPort2(a, c)
			a.AHAttr.DLID = 0
		}, ""},
		{"alt AV sl 16", verbs.QPTypeRC, verbs.QPStateRTS, verbs.QPStateRTS, verbs.QPAttrAltPath, func(a *verbs.QPAttr, _ *qp.Current) { a.AltAHAttr.SL = 16 }, "alt_ah_attr.sl 16"},
		{"alt AV dlid 0", verbs.QPTypeRC, verbs.QPStateInit, verbs.QPStateRTR, verbs.QPAttrAltPath, func(a *verbs.QPAttr, _ *qp.Current) { a.AltAHAttr.DLID = 0 }, "alt_ah_attr.dlid 0"},
		// PSNs are cut, not refused
		{"sq_psn 0x1000001", verbs.QPTypeRC, verbs.QPStateRTR, verbs.QPStateRTS, 0, func(a *verbs.QPAttr, _ *qp.Current) { a.SQPSN = 0x1000001 }, ""},
		{"rq_psn 0xFFFFFFFF", verbs.QPTypeUC, verbs.QPStateInit, verbs.QPStateRTR, 0, func(a *verbs.QPAttr, _ *qp.Current) { a.RQPSN = 0xFFFFFFFF }, ""},
	}
	for _, c := range cases {
		attr := goodAttr(c.from, c.to)
		cur := current(c.from)
		if c.edit != nil {
			c.edit(&attr, &cur)
		}
		mask, ok := verbs.MinimalMask(c.from, c.to, c.typ)
		if !ok {
			t.Fatalf("%s: %v %v→%v is not legal", c.name, c.typ, c.from, c.to)
		}
		if c.from == c.to {
			mask &^= verbs.QPAttrState // also exercise QP-11's path
		}
		before := attr
		_, err := qp.CheckModify(cur, c.typ, &attr, mask|c.extra, testLimits, defaultPolicy)
		if attr != before {
			t.Fatalf("%s: CheckModify changed attr", c.name)
		}
		if c.fail == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		wantEINVAL(t, err, c.name)
		if !strings.Contains(err.Error(), "QP-22: ") || !strings.Contains(err.Error(), c.fail) {
			t.Errorf("%s: reason %q, want QP-22 and %q", c.name, err, c.fail)
		}
	}
}

// TestPSNMasking_QP22: PSNs keep their low 24 bits, only where the mask
// names them.
func TestPSNMasking_QP22(t *testing.T) {
	in := verbs.QPAttr{SQPSN: 0x1000001, RQPSN: 0xFFFFFFFF}
	if got := verbs.NormalizeQPAttr(in, verbs.QPAttrSQPSN|verbs.QPAttrRQPSN); got.SQPSN != 0x000001 || got.RQPSN != 0xFFFFFF {
		t.Errorf("Normalize: sq_psn %#x rq_psn %#x", got.SQPSN, got.RQPSN)
	}
	if got := verbs.NormalizeQPAttr(in, verbs.QPAttrSQPSN); got.RQPSN != 0xFFFFFFFF {
		t.Errorf("Normalize touched rq_psn without its bit: %#x", got.RQPSN)
	}
	var stored verbs.QPAttr
	stored.Apply(&in, verbs.QPAttrState|verbs.QPAttrSQPSN)
	if stored.SQPSN != 0x000001 || stored.RQPSN != 0 {
		t.Errorf("Apply: sq_psn %#x rq_psn %#x", stored.SQPSN, stored.RQPSN)
	}
}

// TestApplyCoversEveryField_QP13 sets one mask bit at a time and checks
// that Apply changes exactly the fields that bit names, so that query
// reports what a successful modify set and nothing else moves. The state
// fields belong to the caller and never change.
func TestApplyCoversEveryField_QP13(t *testing.T) {
	fields := map[verbs.QPAttrMask][]string{
		verbs.QPAttrState: nil, verbs.QPAttrCurState: nil,
		verbs.QPAttrEnSQDAsyncNotify: {"EnSQDAsyncNotify"}, verbs.QPAttrAccessFlags: {"QPAccessFlags"},
		verbs.QPAttrPKeyIndex: {"PKeyIndex"}, verbs.QPAttrPort: {"PortNum"}, verbs.QPAttrQKey: {"QKey"},
		verbs.QPAttrAV: {"AHAttr"}, verbs.QPAttrPathMTU: {"PathMTU"}, verbs.QPAttrTimeout: {"Timeout"},
		verbs.QPAttrRetryCnt: {"RetryCnt"}, verbs.QPAttrRNRRetry: {"RNRRetry"}, verbs.QPAttrRQPSN: {"RQPSN"},
		verbs.QPAttrMaxQPRDAtomic: {"MaxRDAtomic"},
		verbs.QPAttrAltPath:       {"AltAHAttr", "AltPKeyIndex", "AltPortNum", "AltTimeout"},
		verbs.QPAttrMinRNRTimer:   {"MinRNRTimer"}, verbs.QPAttrSQPSN: {"SQPSN"},
		verbs.QPAttrMaxDestRDAtomic: {"MaxDestRDAtomic"}, verbs.QPAttrPathMigState: {"PathMigState"},
		verbs.QPAttrCap: {"Cap"}, verbs.QPAttrDestQPN: {"DestQPNum"}, verbs.QPAttrRateLimit: {"RateLimit"},
	}
	src := goodAttr(verbs.QPStateRTS, verbs.QPStateSQD)
	src.Cap = verbs.QPCap{MaxSendWR: 1, MaxRecvWR: 2, MaxSendSGE: 3, MaxRecvSGE: 4, MaxInlineData: 5}
	src.AltPKeyIndex, src.AltTimeout, src.RateLimit, src.SQDraining = 9, 9, 1000, true
	covered := map[string]bool{"QPState": true, "CurQPState": true, "SQDraining": true}
	for _, b := range verbs.KnownQPAttrs.Bits() {
		names, ok := fields[b]
		if !ok {
			t.Fatalf("no expectation for %v", b)
		}
		var dst verbs.QPAttr
		dst.Apply(&src, b)
		dv, sv := reflect.ValueOf(dst), reflect.ValueOf(src)
		for i := 0; i < dv.NumField(); i++ {
			name := dv.Type().Field(i).Name
			want := reflect.Zero(dv.Field(i).Type()).Interface()
			for _, n := range names {
				if n == name {
					want = sv.Field(i).Interface()
					covered[name] = true
				}
			}
			if got := dv.Field(i).Interface(); !reflect.DeepEqual(got, want) {
				t.Errorf("Apply(%v): %s = %v, want %v", b, name, got, want)
			}
		}
	}
	for i := 0; i < reflect.TypeOf(verbs.QPAttr{}).NumField(); i++ {
		if name := reflect.TypeOf(verbs.QPAttr{}).Field(i).Name; !covered[name] {
			t.Errorf("no mask bit sets Attr.%s", name)
		}
	}
	var nilAttr *verbs.QPAttr
	nilAttr.Apply(&src, verbs.KnownQPAttrs) // must not panic
	var dst verbs.QPAttr
	dst.Apply(nil, verbs.KnownQPAttrs)
	if dst != (verbs.QPAttr{}) {
		t.Error("Apply(nil) changed the attributes")
	}
}

// TestUnusedGID_AV02: a GRH naming an unused GID table entry is ENODATA,
// on the primary and the alternate path, and a used one is accepted.
func TestUnusedGID_AV02(t *testing.T) {
	lim := testLimits
	lim.Ports = slices.Clone(lim.Ports)
	lim.Ports[0].UnusedGID = func(i int) bool { return i >= 2 }
	for _, c := range []struct {
		name string
		mask verbs.QPAttrMask
		edit func(a *verbs.QPAttr)
		want error
	}{
		{"sgid_index 1", 0, func(a *verbs.QPAttr) { a.AHAttr.IsGlobal, a.AHAttr.GRH.SGIDIndex = true, 1 }, nil},
		{"sgid_index 2", 0, func(a *verbs.QPAttr) { a.AHAttr.IsGlobal, a.AHAttr.GRH.SGIDIndex = true, 2 }, syscall.ENODATA},
		{"alt sgid_index 15", verbs.QPAttrAltPath, nil, syscall.ENODATA},
		{"alt sgid_index 0", verbs.QPAttrAltPath, func(a *verbs.QPAttr) { a.AltAHAttr.GRH.SGIDIndex = 0 }, nil},
	} {
		attr := goodAttr(verbs.QPStateInit, verbs.QPStateRTR)
		if c.edit != nil {
			c.edit(&attr)
		}
		mask, _ := verbs.MinimalMask(verbs.QPStateInit, verbs.QPStateRTR, verbs.QPTypeRC)
		_, err := qp.CheckModify(current(verbs.QPStateInit), verbs.QPTypeRC, &attr, mask|c.mask, lim, defaultPolicy)
		switch {
		case c.want == nil && err != nil:
			t.Errorf("%s: %v, want success", c.name, err)
		case c.want != nil && !errors.Is(err, c.want):
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}
