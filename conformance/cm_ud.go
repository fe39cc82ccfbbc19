package conformance

import (
	"net/netip"
	"syscall"

	"github.com/verbsim/verbsim/rdmacm"
	"github.com/verbsim/verbsim/verbs"
)

// Cases of UD through the CM (SIDR and multicast joins, CM-25, CM-26) and
// of multicast in the verbs (MCAST).

// cmUDCases are the cases of cm_ud.go.
var cmUDCases = []Case{
	{"CM-25", "UD lookups (SIDR)", cmSIDR},
	{"CM-26", "rdma_join_multicast and rdma_leave_multicast", cmMulticast},
	{"MCAST-01", "ibv_attach_mcast checks its arguments", mcastAttach},
	{"MCAST-02", "ibv_detach_mcast", mcastDetach},
	{"MCAST-03", "a send to a group reaches every attached QP", mcastDelivery},
}

func cmSIDR(t *tester, e *env) {
	c := cmEnvOf(t, e)
	if c == nil {
		return
	}
	sch, cch := c.channel(), c.channel()
	_, at := c.listen(sch, rdmacm.PSUDP)
	id := c.id(cch, rdmacm.PSUDP)
	c.resolve(cch, id, at)
	c.qp(id)
	c.WantErrno("a UD rdma_connect with 181 bytes of private data", id.Connect(&rdmacm.ConnParam{PrivateData: make([]byte, 181)}), syscall.EINVAL)
	c.WantOK("a UD rdma_connect", id.Connect(&rdmacm.ConnParam{PrivateData: []byte("who")}))
	req := c.ack("the lookup", sch, rdmacm.EventConnectRequest)
	srv := req.ID()
	c.track(srv)
	if got := req.UD().PrivateData; !zeroPadded(got, []byte("who"), 180) {
		t.Errorf("the lookup's private data %q, want \"who\" padded to 180 (CM-33)", got)
	}
	sq := c.qp(srv)
	c.WantErrno("a UD rdma_accept with 137 bytes of private data", srv.Accept(&rdmacm.ConnParam{PrivateData: make([]byte, 137)}), syscall.EINVAL)
	c.WantOK("a UD rdma_accept", srv.Accept(&rdmacm.ConnParam{PrivateData: []byte("me")}))
	ev := c.ack("the answer", cch, rdmacm.EventEstablished)
	ud := ev.UD()
	if ud.QPNum != sq.Num() || ud.QKey != rdmacm.UDPQKey || !zeroPadded(ud.PrivateData, []byte("me"), 136) || ud.AHAttr.PortNum != 1 {
		t.Errorf("UD ESTABLISHED: qp_num %#x qkey %#x private %q port %d; want %#x, 0x01234567, \"me\" padded to 136, 1", ud.QPNum, ud.QKey, ud.PrivateData, ud.AHAttr.PortNum, sq.Num())
	}
	c.sendRecv("a UD send to the answer's address", id, srv, []byte("datagram"), &ud)

	none := c.id(cch, rdmacm.PSUDP)
	c.resolve(cch, none, c.dst())
	c.qp(none)
	c.WantOK("a UD rdma_connect to a port nobody listens on", none.Connect(nil))
	if ev := c.ack("a lookup nobody answers", cch, rdmacm.EventUnreachable); ev.Status() != int(rdmacm.SIDRUnsupported) {
		t.Errorf("UNREACHABLE status %d, want 1 (unsupported)", ev.Status())
	}
	rej := c.id(cch, rdmacm.PSUDP)
	c.resolve(cch, rej, at)
	c.qp(rej)
	c.WantOK("a UD rdma_connect", rej.Connect(nil))
	r := c.ack("a second lookup", sch, rdmacm.EventConnectRequest)
	c.track(r.ID())
	c.WantOK("a UD rdma_reject", r.ID().Reject(nil))
	if ev := c.ack("a rejected lookup", cch, rdmacm.EventUnreachable); ev.Status() != int(rdmacm.SIDRReject) {
		t.Errorf("UNREACHABLE status %d, want 2 (reject)", ev.Status())
	}
}

func cmMulticast(t *tester, e *env) {
	c := cmEnvOf(t, e)
	if c == nil {
		return
	}
	ch := c.channel()
	group := netip.MustParseAddr("239.1.1.1")
	rc := c.id(ch, rdmacm.PSTCP)
	c.WantOK("rdma_bind_addr", rc.BindAddr(c.dst()))
	c.WantErrno("rdma_join_multicast on an RC ID", rc.JoinMulticast(group, nil), syscall.EINVAL)
	var ids []rdmacm.ID
	var av rdmacm.UDParam
	for i := range 2 {
		id := c.id(ch, rdmacm.PSUDP)
		c.WantOK("rdma_bind_addr", id.BindAddr(c.dst()))
		c.qp(id)
		c.WantOK("rdma_join_multicast", id.JoinMulticast(group, i))
		ev := c.ack("the join", ch, rdmacm.EventMulticastJoin)
		av = ev.UD()
		if ev.MulticastContext() != i || av.QPNum != 0xffffff || av.QKey != rdmacm.UDPQKey || !av.AHAttr.IsGlobal {
			t.Errorf("MULTICAST_JOIN: context %v qp_num %#x qkey %#x global %v; want %d, 0xffffff, 0x01234567, true", ev.MulticastContext(), av.QPNum, av.QKey, av.AHAttr.IsGlobal, i)
		}
		ids = append(ids, id)
	}
	src := c.id(ch, rdmacm.PSUDP)
	c.WantOK("rdma_bind_addr", src.BindAddr(c.dst()))
	c.qp(src)
	for _, id := range ids {
		c.sendRecv("a send to the group", src, id, []byte("all"), &av)
	}
	c.WantOK("rdma_leave_multicast", ids[0].LeaveMulticast(group))
	c.WantErrno("leaving a group not joined", ids[0].LeaveMulticast(group), syscall.EADDRNOTAVAIL)
	c.sendRecv("a send after one left", src, ids[1], []byte("one"), &av)
	if n, _ := ids[0].RecvCQ().Poll(make([]verbs.WC, 1)); n != 0 {
		t.Errorf("the ID that left the group received the send")
	}
}

// mcastQP makes a UD QP in RTS on the device, with its CQ.
func mcastQP(t *tester, e *env, pd verbs.PD) (verbs.QP, verbs.MulticastAttacher) {
	t.Helper()
	q := e.CQ(16, nil, nil)
	qp, err := pd.CreateQP(verbs.QPInitAttr{SendCQ: q, RecvCQ: q, Type: verbs.QPTypeUD, Cap: verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
	e.WantOK("ibv_create_qp", err)
	t.Cleanup(func() { ctx, cancel := graceful(); _ = qp.DestroyContext(ctx); cancel() })
	for _, m := range []struct {
		attr verbs.QPAttr
		mask verbs.QPAttrMask
	}{
		{verbs.QPAttr{QPState: verbs.QPStateInit, PortNum: 1, QKey: 0x77}, verbs.QPAttrState | verbs.QPAttrPKeyIndex | verbs.QPAttrPort | verbs.QPAttrQKey},
		{verbs.QPAttr{QPState: verbs.QPStateRTR}, verbs.QPAttrState},
		{verbs.QPAttr{QPState: verbs.QPStateRTS}, verbs.QPAttrState | verbs.QPAttrSQPSN},
	} {
		e.WantOK("ibv_modify_qp", qp.Modify(&m.attr, m.mask))
	}
	a, ok := qp.(verbs.MulticastAttacher)
	if !ok {
		return qp, nil
	}
	return qp, a
}

var mcastGID = verbs.GID{0xff, 0x0e, 15: 0x42}

func mcastAttach(t *tester, e *env) {
	pd := e.pdAlloc()
	_, a := mcastQP(t, e, pd)
	if a == nil {
		t.Logf("the QP has no ibv_attach_mcast (verbs.MulticastAttacher); nothing to check")
		return
	}
	lid := uint16(0xc001)
	e.WantErrno("a unicast GID", a.AttachMcast(verbs.GID{0xfe, 0x80, 15: 1}, lid), syscall.EINVAL)
	port, err := e.Ctx.QueryPort(1)
	e.WantOK("ibv_query_port", err)
	if port.LinkLayer == verbs.LinkLayerInfiniBand {
		e.WantErrno("a unicast LID on InfiniBand", a.AttachMcast(mcastGID, 5), syscall.EINVAL)
		e.WantErrno("the permissive LID", a.AttachMcast(mcastGID, 0xffff), syscall.EINVAL)
	}
	e.WantOK("ibv_attach_mcast", a.AttachMcast(mcastGID, lid))
	e.WantOK("a second ibv_attach_mcast", a.AttachMcast(mcastGID, lid))
	rcq := e.CQ(4, nil, nil)
	rc, err := pd.CreateQP(verbs.QPInitAttr{SendCQ: rcq, RecvCQ: rcq, Type: verbs.QPTypeRC, Cap: verbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}})
	e.WantOK("ibv_create_qp", err)
	defer func() { ctx, cancel := graceful(); _ = rc.DestroyContext(ctx); cancel() }()
	if ra, ok := rc.(verbs.MulticastAttacher); ok {
		e.WantErrno("an RC QP", ra.AttachMcast(mcastGID, lid), syscall.EINVAL)
	}
}

func mcastDetach(t *tester, e *env) {
	pd := e.pdAlloc()
	_, a := mcastQP(t, e, pd)
	if a == nil {
		t.Logf("the QP has no ibv_detach_mcast (verbs.MulticastAttacher); nothing to check")
		return
	}
	e.WantOK("ibv_attach_mcast", a.AttachMcast(mcastGID, 0xc001))
	e.WantOK("ibv_detach_mcast", a.DetachMcast(mcastGID, 0xc001))
	e.WantErrno("a second ibv_detach_mcast", a.DetachMcast(mcastGID, 0xc001), syscall.EINVAL)
}

func mcastDelivery(t *tester, e *env) {
	pd := e.pdAlloc()
	sender, src := mcastQP(t, e, pd)
	if src == nil {
		t.Logf("the QP has no ibv_attach_mcast (verbs.MulticastAttacher); nothing to check")
		return
	}
	type member struct {
		qp  verbs.QP
		a   verbs.MulticastAttacher
		buf []byte
		mr  verbs.MR
	}
	var ms []member
	for range 3 {
		qp, a := mcastQP(t, e, pd)
		buf := make([]byte, 128)
		mr := e.mrReg(pd, buf, uint32(verbs.AccessLocalWrite))
		_, err := qp.PostRecv([]verbs.RecvWR{{WRID: 1, SGList: []verbs.SGE{{Addr: mr.Addr(), Length: 128, LKey: mr.LKey()}}}})
		e.WantOK("ibv_post_recv", err)
		ms = append(ms, member{qp, a, buf, mr})
	}
	for _, m := range ms {
		e.WantOK("ibv_attach_mcast", m.a.AttachMcast(mcastGID, 0xc001))
	}
	e.WantOK("ibv_detach_mcast", ms[2].a.DetachMcast(mcastGID, 0xc001))
	ah, err := pd.CreateAH(verbs.AHAttr{PortNum: 1, DLID: 0xc001, IsGlobal: true, GRH: verbs.GlobalRoute{DGID: mcastGID, HopLimit: 1}})
	e.WantOK("ibv_create_ah for the group", err)
	defer ah.Destroy()
	payload := e.mrReg(pd, []byte("to the group"), 0)
	_, err = sender.PostSend([]verbs.SendWR{{WRID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, AH: ah, RemoteQPN: 0xffffff, RemoteQKey: 0x77,
		SGList: []verbs.SGE{{Addr: payload.Addr(), Length: 12, LKey: payload.LKey()}}}})
	e.WantOK("ibv_post_send to the group", err)
	if cl, ok := e.Dev.(Clock); ok {
		cl.RunUntilIdle(0)
	}
	for i, m := range ms {
		wcs := e.PollAll(m.qp.RecvCQ(), 4)
		if i == 2 {
			if len(wcs) != 0 {
				t.Errorf("the detached QP received %d completion(s)", len(wcs))
			}
			continue
		}
		if len(wcs) != 1 || wcs[0].Status != verbs.WCSuccess || wcs[0].SrcQP != sender.Num() || wcs[0].WCFlags&verbs.WCGRH == 0 || string(m.buf[40:52]) != "to the group" {
			t.Errorf("member %d: completions %+v, data %q; want one receive from qp %#x with a GRH", i, wcs, m.buf[40:52], sender.Num())
		}
	}
}
