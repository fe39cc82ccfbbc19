package conformance

import (
	"reflect"
	"syscall"

	"github.com/google/go-cmp/cmp"
	"github.com/verbsim/verbsim/verbs"
)

// queryCases are the cases of the QUERY family: ibv_query_qp with its mask,
// ibv_query_port, and the extended queries of the optional verbs.ExQuerier.
var queryCases = []Case{
	{"QUERY-01", "ibv_query_qp returns every attribute and the init_attr whatever the mask", queryQPAll},
	{"QUERY-02", "ibv_query_qp refuses mask bits from IBV_QP_RATE_LIMIT up with EOPNOTSUPP", queryQPMaskLimit},
	{"QUERY-03", "ibv_query_device_ex: input comp_mask EINVAL, orig_attr, phys_port_cnt_ex, the timestamp clock, zero unsupported caps", queryDeviceEx},
	{"QUERY-04", "ibv_query_port: phys_state follows the link", queryPortPhysState},
	{"QUERY-05", "ibv_query_gid_ex: the entry with its type; EINVAL outside the table, ENODATA for an empty entry", queryGIDEx},
	{"QUERY-06", "ibv_query_gid_table: the valid entries only; too little room or flags: EINVAL", queryGIDTable},
	{"QUERY-07", "ibv_get_srq_num on a basic SRQ is EOPNOTSUPP", srqNumBasic},
}

func queryQPAll(t *tester, e *env) {
	w := qpSetup(t, e)
	q := w.createWith(verbs.QPInitAttr{Type: verbs.QPTypeRC, Cap: w.qpCap(), SendCQ: w.cq, RecvCQ: w.cq, SQSigAll: true, Context: "qp-ctx"})
	w.walk(q, verbs.QPStateRTS)
	full := w.query(q)
	for _, mask := range []verbs.QPAttrMask{0, verbs.QPAttrState, verbs.QPAttrCap, verbs.QPAttrState | verbs.QPAttrAccessFlags | verbs.QPAttrSQPSN} {
		a, init, err := q.Query(mask)
		if err != nil {
			t.Errorf("ibv_query_qp(mask %v): %v, want 0", mask, err)
			continue
		}
		if d := cmp.Diff(full, a); d != "" {
			t.Errorf("ibv_query_qp(mask %v) differs from the query of every attribute (-all +masked):\n%s", mask, d)
		}
		if init.Cap != full.Cap || init.Type != verbs.QPTypeRC || !init.SQSigAll || init.SRQ != nil || init.Context != "qp-ctx" {
			t.Errorf("ibv_query_qp(mask %v): init_attr cap %+v, type %v, sq_sig_all %v, srq %v, qp_context %v; want %+v, RC, true, none, qp-ctx",
				mask, init.Cap, init.Type, init.SQSigAll, init.SRQ, init.Context, full.Cap)
		}
	}
	if e.Limits().MaxSRQWR == 0 {
		return
	}
	s := w.srq(4, 1)
	qs := w.createWith(verbs.QPInitAttr{Type: verbs.QPTypeRC, Cap: w.qpCap(), SendCQ: w.cq, RecvCQ: w.cq, SRQ: s})
	_, init, err := qs.Query(verbs.QPAttrCap)
	switch {
	case err != nil:
		t.Errorf("ibv_query_qp on a QP with an SRQ: %v", err)
	case init.SRQ == nil || init.Cap.MaxRecvWR != 0 || init.Cap.MaxRecvSGE != 0:
		t.Errorf("ibv_query_qp on a QP with an SRQ: init_attr srq=%v max_recv_wr=%d max_recv_sge=%d, want an SRQ and 0, 0",
			init.SRQ != nil, init.Cap.MaxRecvWR, init.Cap.MaxRecvSGE)
	}
}

func queryQPMaskLimit(t *tester, e *env) {
	w := qpSetup(t, e)
	q := w.create(verbs.QPTypeRC)
	for _, mask := range []verbs.QPAttrMask{verbs.QPAttrRateLimit, verbs.QPAttrState | verbs.QPAttrRateLimit, 1 << 26, 1 << 31} {
		_, _, err := q.Query(mask)
		e.WantErrno("ibv_query_qp(mask "+mask.String()+")", err, syscall.EOPNOTSUPP)
	}
	for _, mask := range []verbs.QPAttrMask{1 << 21, 1 << 24, verbs.QPAttrDestQPN} {
		_, _, err := q.Query(mask)
		e.WantOK("ibv_query_qp(mask "+mask.String()+")", err)
	}
}

func queryDeviceEx(t *tester, e *env) {
	dq, ok := e.Ctx.(verbs.ExQuerier)
	if !ok {
		t.Logf("not checked: the context has no extended queries (verbs.ExQuerier)")
		return
	}
	for _, m := range []uint32{1, 1 << 31} {
		_, err := dq.QueryDeviceEx(m)
		e.WantErrno("ibv_query_device_ex(comp_mask) with an unknown bit", err, syscall.EINVAL)
	}
	a, err := dq.QueryDeviceEx(0)
	if err != nil {
		t.Fatalf("ibv_query_device_ex: %v", err)
	}
	base, err := e.Ctx.QueryDevice()
	if err != nil {
		t.Fatalf("ibv_query_device: %v", err)
	}
	// Every field after device_cap_flags_ex but phys_port_cnt_ex, the
	// timestamp clock and the ODP caps is a capability verbsim's
	// profiles lack.
	rest := a
	rest.Orig, rest.CompMask, rest.DeviceCapFlagsEx, rest.PhysPortCntEx = verbs.DeviceAttr{}, 0, 0, 0
	rest.CompletionTimestampMask, rest.HCACoreClock = 0, 0 // checked below
	rest.MaxDMSize = 0                                     // DM-02, checked below
	rest.ODPCaps, rest.XRCODPCaps = verbs.ODPCaps{}, 0     // ODP-01
	lim := e.Limits()
	switch {
	case a.Orig != base:
		t.Errorf("ibv_query_device_ex: orig_attr differs from ibv_query_device")
	case int(a.Orig.PhysPortCnt) != lim.NumPorts || a.PhysPortCntEx != uint32(a.Orig.PhysPortCnt):
		t.Errorf("ibv_query_device_ex: phys_port_cnt %d, phys_port_cnt_ex %d, want both %d", a.Orig.PhysPortCnt, a.PhysPortCntEx, lim.NumPorts)
	case uint32(a.DeviceCapFlagsEx) != uint32(a.Orig.DeviceCapFlags):
		t.Errorf("ibv_query_device_ex: device_cap_flags_ex %#x, whose low 32 bits should be device_cap_flags %#x", a.DeviceCapFlagsEx, a.Orig.DeviceCapFlags)
	case !reflect.ValueOf(rest).IsZero() || a.CompMask != 0:
		t.Errorf("ibv_query_device_ex: unsupported capabilities read %+v, comp_mask %#x; want zero", rest, a.CompMask)
	}
	// Device memory (DM-01, DM-02): whole pages, none without it.
	switch dm := a.MaxDMSize; {
	case e.Profile.NoDM && dm != 0:
		t.Errorf("ibv_query_device_ex: max_dm_size %d on a device without device memory (DM-02); want 0", dm)
	case dm%4096 != 0:
		t.Errorf("ibv_query_device_ex: max_dm_size %d is not a multiple of 4 KiB (DM-01)", dm)
	}
	// The timestamp clock: reported exactly when CQs may ask for
	// timestamps, as a mask of low bits (rc_pingpong -t computes a
	// wrapped difference as mask - prev + ts + 1).
	m := a.CompletionTimestampMask
	switch {
	case e.Profile.NoCQTimestamps && (m != 0 || a.HCACoreClock != 0):
		t.Errorf("ibv_query_device_ex: completion_timestamp_mask %#x, hca_core_clock %d on a device without completion timestamps; want 0, 0", m, a.HCACoreClock)
	case !e.Profile.NoCQTimestamps && (m == 0 || m&(m+1) != 0 || a.HCACoreClock == 0):
		t.Errorf("ibv_query_device_ex: completion_timestamp_mask %#x, hca_core_clock %d on a device with completion timestamps; want a non-zero mask of low bits and a non-zero clock", m, a.HCACoreClock)
	}
}

func queryPortPhysState(t *tester, e *env) {
	want := func(what string, state, phys uint8) {
		t.Helper()
		p, err := e.Ctx.QueryPort(1)
		if err != nil || uint8(p.State) != state || p.PhysState != phys {
			t.Errorf("%s: ibv_query_port(1) = state %d, phys_state %d, %v; want %d, %d", what, p.State, p.PhysState, err, state, phys)
		}
	}
	want("port up", 4, 5)
	lc, ok := e.Dev.(LinkControl)
	if !ok {
		t.Logf("not checked: a port going down (conformance.LinkControl)")
		return
	}
	e.WantOK("take port 1 down", lc.SetPortState(1, false))
	want("port down", 1, 3)
	e.WantOK("bring port 1 up", lc.SetPortState(1, true))
	want("port up again", 4, 5)
}

func queryGIDEx(t *tester, e *env) {
	dq, ok := e.Ctx.(verbs.ExQuerier)
	if !ok {
		t.Logf("not checked: the context has no extended queries (verbs.ExQuerier)")
		return
	}
	p, err := queryPortInfo(e.Ctx, 1)
	if err != nil {
		t.Fatalf("ibv_query_port(1): %v", err)
	}
	g, err := dq.QueryGIDEx(1, 0, 0)
	wantType := verbs.GIDTypeIB
	if p.Ethernet {
		wantType = verbs.GIDTypeRoCEv2
	}
	if want := (verbs.GIDEntry{GID: p.GID, GIDIndex: 0, PortNum: 1, GIDType: wantType}); err != nil || g != want {
		t.Errorf("ibv_query_gid_ex(port 1, index 0) = %+v, %v; want %+v", g, err, want)
	}
	tbl := e.Limits().Port.GIDTableLen
	for _, c := range []struct {
		what               string
		port, index, flags uint32
		want               syscall.Errno
	}{
		{"port 0", 0, 0, 0, syscall.EINVAL},
		{"a port past phys_port_cnt", uint32(e.Limits().NumPorts) + 1, 0, 0, syscall.EINVAL},
		{"index gid_tbl_len", 1, uint32(tbl), 0, syscall.EINVAL},
		{"flags 1", 1, 0, 1, syscall.EINVAL},
	} {
		_, err := dq.QueryGIDEx(c.port, c.index, c.flags)
		e.WantErrno("ibv_query_gid_ex with "+c.what, err, c.want)
	}
	if tbl > 1 { // the default tables hold one GID, at index 0
		_, err := dq.QueryGIDEx(1, uint32(tbl-1), 0)
		e.WantErrno("ibv_query_gid_ex of the last, empty entry", err, syscall.ENODATA)
	}
}

func queryGIDTable(t *tester, e *env) {
	dq, ok := e.Ctx.(verbs.ExQuerier)
	if !ok {
		t.Logf("not checked: the context has no extended queries (verbs.ExQuerier)")
		return
	}
	lim := e.Limits()
	var want []verbs.GIDEntry
	for port := uint32(1); port <= uint32(lim.NumPorts); port++ {
		for i := uint32(0); i < uint32(lim.Port.GIDTableLen); i++ {
			if g, err := dq.QueryGIDEx(port, i, 0); err == nil {
				want = append(want, g)
			}
		}
	}
	got, err := dq.QueryGIDTable(len(want)+4, 0)
	if err != nil {
		t.Fatalf("ibv_query_gid_table: %v", err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("ibv_query_gid_table differs from the valid entries read one by one (-want +got):\n%s", d)
	}
	_, err = dq.QueryGIDTable(len(want)-1, 0)
	e.WantErrno("ibv_query_gid_table with room for one entry fewer than the valid ones", err, syscall.EINVAL)
	_, err = dq.QueryGIDTable(len(want), 1)
	e.WantErrno("ibv_query_gid_table with flags 1", err, syscall.EINVAL)
}

func srqNumBasic(t *tester, e *env) {
	w := qpSetup(t, e)
	if e.Limits().MaxSRQWR == 0 {
		t.Logf("not checked: the device has no SRQs")
		return
	}
	s := w.srq(4, 1)
	g, ok := s.(verbs.SRQNumGetter)
	if !ok {
		t.Logf("not checked: the SRQ has no ibv_get_srq_num (verbs.SRQNumGetter)")
		return
	}
	_, err := g.GetSRQNum()
	e.WantErrno("ibv_get_srq_num on a basic SRQ", err, syscall.EOPNOTSUPP)
}
