package sim

import (
	"net/netip"
	"syscall"

	"github.com/verbsim/verbsim/rdmacm"
	simcm "github.com/verbsim/verbsim/sim/internal/cm"
	"github.com/verbsim/verbsim/sim/internal/qp"
	"github.com/verbsim/verbsim/sim/trace"
	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// The handshake: rdma_connect, the passive side's requests, rdma_accept,
// rdma_reject, rdma_establish, rdma_notify and rdma_disconnect (CM-13 to
// CM-22, CM-25).

// The application's share of the private data of a REQ and a SIDR_REQ,
// after the RDMA CM header (CM-13, CM-25).
const (
	cmReqUserData  = 92 - simcm.CMAHeaderSize
	cmSIDRUserData = 216 - simcm.CMAHeaderSize
)

// Connect implements rdmacm.ID: rdma_connect (CM-13, CM-25).
func (id *CMID) Connect(param *rdmacm.ConnParam) error {
	const verb = "rdma_connect"
	done, err := id.call(verb)
	if err != nil {
		return err
	}
	a := id.a
	if err := a.connectLocked(verb, id, param); err != nil {
		return done(err)
	}
	return done(a.completeLocked(verb, id))
}

// validParamLocked is librdmacm's ucma_valid_param (RDMA_PS_TCP only).
func (id *CMID) validParamLocked(verb string, p *rdmacm.ConnParam) error {
	if id.ps != rdmacm.PSTCP {
		return nil
	}
	if p == nil {
		if id.qp == nil {
			return verr.New(verb, syscall.EINVAL, "an RDMA_PS_TCP rdma_cm_id with no QP needs a conn_param (qp_num) (CM-13)")
		}
		return nil
	}
	a := id.dev.attr
	if p.ResponderResources != rdmacm.MaxRespRes && int(p.ResponderResources) > a.MaxQPRDAtom {
		return verr.Errorf(verb, syscall.EINVAL, "responder_resources %d is above max_qp_rd_atom %d (CM-13)", p.ResponderResources, a.MaxQPRDAtom)
	}
	if p.InitiatorDepth != rdmacm.MaxInitDepth && int(p.InitiatorDepth) > a.MaxQPInitRDAtom {
		return verr.Errorf(verb, syscall.EINVAL, "initiator_depth %d is above max_qp_init_rd_atom %d (CM-13)", p.InitiatorDepth, a.MaxQPInitRDAtom)
	}
	return nil
}

func (a *cmAgent) connectLocked(verb string, id *CMID, p *rdmacm.ConnParam) error {
	if id.state != cmRouteResolved {
		return verr.Errorf(verb, syscall.EINVAL, "the rdma_cm_id is %v, not ROUTE_RESOLVED (CM-13)", id.state)
	}
	if id.dev.removed {
		return verr.New(verb, syscall.ENODEV, "the device has been removed (CM-24)")
	}
	ud := id.qpType == verbs.QPTypeUD
	var user []byte
	if p != nil {
		user = p.PrivateData
	}
	limit := cmReqUserData
	if ud {
		limit = cmSIDRUserData
	}
	if len(user) > limit {
		return verr.Errorf(verb, syscall.EINVAL, "%d bytes of private data; %v takes %d after the RDMA CM header (CM-13)", len(user), id.ps, limit)
	}
	if !ud {
		if err := id.validParamLocked(verb, p); err != nil {
			return err
		}
	}
	dev := id.dev.attr
	id.initDepth, id.respRes = uint8(min(dev.MaxQPInitRDAtom, 255)), uint8(min(dev.MaxQPRDAtom, 255))
	if p != nil && p.InitiatorDepth != rdmacm.MaxInitDepth {
		id.initDepth = p.InitiatorDepth
	}
	if p != nil && p.ResponderResources != rdmacm.MaxRespRes {
		id.respRes = p.ResponderResources
	}
	var qpn uint32
	var srq bool
	if p != nil {
		qpn, srq = p.QPNum, p.SRQ != 0
	}
	if id.qp != nil {
		qpn, srq = id.qp.Num(), id.qp.q.SRQ() != nil
	}
	priv := make([]byte, simcm.CMAHeaderSize+len(user))
	simcm.CMAHeader{SrcPort: id.src.Port(), Src: id.src.Addr(), Dst: id.dst.Addr()}.Put(priv)
	copy(priv[simcm.CMAHeaderSize:], user)
	c := a.newConnLocked(id, id.port)
	c.dlid, c.dgid, c.global = id.route.DLID, id.route.DGID, id.peerGlobal
	c.qpnGiven, c.psn, c.mtu, c.maxRetries = qpn, psnOf(c.local), id.route.MTU, cmMaxRetries
	c.serviceID = simcm.ServiceID(uint16(id.ps), id.dst.Port())
	id.state = cmConnect
	if ud {
		c.sidr, c.state = true, ibSIDRReqSent
		c.timeoutNS = cmMS(cmResponseTimeout)
		a.connSendLocked(c, &simcm.Msg{Attr: simcm.AttrSIDRREQ, LocalCommID: c.local, PKey: 0xffff,
			ServiceID: c.serviceID, Private: priv}, true, c.timeoutNS)
		return nil
	}
	rnr, flow := uint8(7), false
	c.retry = 7
	if p != nil {
		c.retry, rnr, flow = min(p.RetryCount, 7), min(p.RNRRetryCount, 7), p.FlowControl != 0
	}
	c.state = ibReqSent
	c.timeoutNS = 2*cmMS(cmPacketLifeTime) + cmMS(cmResponseTimeout)
	r := id.route
	transport := uint8(simcm.TransportRC)
	if id.qpType == verbs.QPTypeUC {
		transport = simcm.TransportUC
	}
	a.connSendLocked(c, &simcm.Msg{
		Attr: simcm.AttrREQ, LocalCommID: c.local, ServiceID: c.serviceID, LocalCAGUID: id.dev.attr.NodeGUID,
		LocalQPN: qpn, ResponderResources: id.respRes, InitiatorDepth: id.initDepth,
		RemoteCMResponseTimeout: cmResponseTimeout, LocalCMResponseTimeout: cmResponseTimeout,
		Transport: transport, FlowControl: flow, StartingPSN: c.psn, RetryCount: c.retry, RNRRetryCount: rnr,
		PKey: r.PKey, PathMTU: uint8(r.MTU), MaxCMRetries: cmMaxRetries, SRQ: srq,
		PrimaryLocalLID: r.SLID, PrimaryRemoteLID: r.DLID, PrimaryLocalGID: r.SGID, PrimaryRemoteGID: r.DGID,
		TrafficClass: r.TrafficClass, HopLimit: r.HopLimit, SubnetLocal: !id.peerGlobal,
		LocalAckTimeout: id.ackTimeout(), Private: priv,
	}, true, c.timeoutNS)
	return nil
}

// ackTimeout is the local ACK timeout code of the ID's QP (CM-34).
func (id *CMID) ackTimeout() uint8 {
	if id.ackTO != 0 {
		return id.ackTO
	}
	return cmAckTimeout
}

// reqLocked is the passive side of a REQ (CM-14, CM-15, CM-08).
func (a *cmAgent) reqLocked(p *port, pkt *qp.Packet, m *simcm.Msg) {
	k := remoteKey{m.LocalCAGUID, m.LocalCommID}
	if c := a.remote[k]; c != nil {
		switch c.state { // a retransmitted REQ (K:cm.c cm_dup_req_handler)
		case ibReqRcvd:
			a.connSendLocked(c, &simcm.Msg{Attr: simcm.AttrMRA, LocalCommID: c.local, RemoteCommID: c.remote,
				MsgTarget: simcm.MsgREQ, ServiceTimeout: cmMRAServiceTimeout}, false, 0)
		case ibTimewait:
			a.rejectRawLocked(p, pkt, m, rdmacm.RejStaleConn)
		}
		return
	}
	ps, svcPort, ok := simcm.SplitServiceID(m.ServiceID)
	hdr, herr := simcm.ParseCMAHeader(m.Private)
	if !ok || !a.serviceLocked(rdmacm.PortSpace(ps), svcPort, p) {
		a.rejectRawLocked(p, pkt, m, rdmacm.RejInvalidServiceID)
		return
	}
	l := (*CMID)(nil)
	if herr == nil {
		l = a.listenerLocked(rdmacm.PortSpace(ps), svcPort, hdr.Dst, p)
	}
	if l == nil || l.qpType == verbs.QPTypeUD || l.dev != nil && l.dev.removed {
		a.rejectRawLocked(p, pkt, m, rdmacm.RejConsumerDefined)
		return
	}
	id := a.newIDLocked(l.ch, l.ctx, l.ps, l.qpType)
	id.listen, id.state = l, cmConnect
	a.attachLocked(id, p)
	id.src, id.dst = netip.AddrPortFrom(hdr.Dst, svcPort), netip.AddrPortFrom(hdr.Src, hdr.SrcPort)
	a.setPeerLocked(id, m.PrimaryLocalLID, verbs.GID(m.PrimaryLocalGID), pkt.Global, verbs.MTU(m.PathMTU))
	id.route = rdmacm.Route{SGID: verbs.GID(m.PrimaryRemoteGID), DGID: verbs.GID(m.PrimaryLocalGID),
		SLID: m.PrimaryRemoteLID, DLID: m.PrimaryLocalLID, PKey: m.PKey, MTU: verbs.MTU(m.PathMTU),
		TrafficClass: m.TrafficClass, HopLimit: m.HopLimit, PacketLifeTime: cmPacketLifeTime, NumPaths: 1}
	id.initDepth, id.respRes = m.ResponderResources, m.InitiatorDepth
	ev := &CMEvent{typ: rdmacm.EventConnectRequest, id: id, listen: l, counted: l, conn: rdmacm.ConnParam{
		PrivateData: m.Private[simcm.CMAHeaderSize:], ResponderResources: m.InitiatorDepth,
		InitiatorDepth: m.ResponderResources, FlowControl: flag8(m.FlowControl), RetryCount: m.RetryCount,
		RNRRetryCount: m.RNRRetryCount, SRQ: flag8(m.SRQ), QPNum: m.LocalQPN,
	}}
	if !a.raiseLocked(ev) {
		// No room in the backlog: the request is dropped unanswered, and
		// its retransmission gets another chance (CM-08).
		id.state = cmDestroying
		id.ch.ids--
		id.ch = nil
		if a.f.d.Tracing() {
			a.f.d.Emit(l, trace.Record{Kind: trace.KindPacket, Name: "drop", Packet: &trace.Packet{Transport: verbs.QPTypeUD, CM: trace.CMREQ, CommID: m.LocalCommID},
				Why: "the listen backlog is full", Rule: "CM-08"})
		}
		return
	}
	c := a.newConnLocked(id, p)
	c.passive, c.state = true, ibReqRcvd
	c.remote, c.remoteGUID, c.remoteQPN, c.psn = m.LocalCommID, m.LocalCAGUID, m.LocalQPN, m.StartingPSN
	c.dlid, c.dgid, c.global = pkt.SLID, verbs.GID(pkt.SGID), pkt.Global
	c.retry, c.peerRNR, c.peerSRQ, c.mtu = m.RetryCount, m.RNRRetryCount, m.SRQ, verbs.MTU(m.PathMTU)
	c.maxRetries, c.timeoutNS = int(m.MaxCMRetries), cmMS(m.LocalCMResponseTimeout)
	a.remote[k] = c
	a.connSendLocked(c, &simcm.Msg{Attr: simcm.AttrMRA, LocalCommID: c.local, RemoteCommID: c.remote,
		MsgTarget: simcm.MsgREQ, ServiceTimeout: cmMRAServiceTimeout}, false, 0)
}

// serviceLocked reports whether a listener holds port in port space ps on
// p's device (or on every device): the InfiniBand CM's service table.
func (a *cmAgent) serviceLocked(ps rdmacm.PortSpace, port uint16, p *port) bool {
	for _, o := range a.binds[bindKey{ps, port}] {
		if o.state == cmListen && (o.dev == nil || o.dev == p.dev) {
			return true
		}
	}
	return false
}

// rejectRawLocked answers a REQ no connection was made for.
func (a *cmAgent) rejectRawLocked(p *port, pkt *qp.Packet, m *simcm.Msg, reason rdmacm.RejectReason) {
	a.sendLocked(p, pkt.SLID, verbs.GID(pkt.SGID), pkt.Global, &simcm.Msg{Attr: simcm.AttrREJ, TID: m.TID,
		RemoteCommID: m.LocalCommID, MsgTarget: simcm.MsgREQ, Reason: uint16(reason)})
}

// sidrReqLocked is the passive side of a SIDR_REQ (CM-25).
func (a *cmAgent) sidrReqLocked(p *port, pkt *qp.Packet, m *simcm.Msg) {
	reply := func(status rdmacm.SIDRStatus) {
		a.sendLocked(p, pkt.SLID, verbs.GID(pkt.SGID), pkt.Global, &simcm.Msg{Attr: simcm.AttrSIDRREP, TID: m.TID,
			LocalCommID: m.LocalCommID, Status: uint8(status), ServiceID: m.ServiceID})
	}
	for _, c := range a.conns { // a retransmitted SIDR_REQ still pending
		if c.sidr && c.passive && c.remote == m.LocalCommID && c.dgid == verbs.GID(pkt.SGID) && c.dlid == pkt.SLID {
			return
		}
	}
	ps, svcPort, ok := simcm.SplitServiceID(m.ServiceID)
	hdr, herr := simcm.ParseCMAHeader(m.Private)
	var l *CMID
	if ok && herr == nil {
		l = a.listenerLocked(rdmacm.PortSpace(ps), svcPort, hdr.Dst, p)
	}
	if l == nil || l.qpType != verbs.QPTypeUD {
		reply(rdmacm.SIDRUnsupported)
		return
	}
	id := a.newIDLocked(l.ch, l.ctx, l.ps, verbs.QPTypeUD)
	id.listen, id.state = l, cmConnect
	a.attachLocked(id, p)
	id.src, id.dst = netip.AddrPortFrom(hdr.Dst, svcPort), netip.AddrPortFrom(hdr.Src, hdr.SrcPort)
	a.setPeerLocked(id, pkt.SLID, verbs.GID(pkt.SGID), pkt.Global, 0)
	ev := &CMEvent{typ: rdmacm.EventConnectRequest, id: id, listen: l, counted: l,
		ud: rdmacm.UDParam{PrivateData: m.Private[simcm.CMAHeaderSize:]}}
	if !a.raiseLocked(ev) {
		// A UD request the backlog has no room for is refused (K:cm.c
		// cm_destroy_id in SIDR_REQ_RCVD).
		id.state = cmDestroying
		id.ch.ids--
		id.ch = nil
		reply(rdmacm.SIDRReject)
		return
	}
	c := a.newConnLocked(id, p)
	c.passive, c.sidr, c.state = true, true, ibSIDRReqRcvd
	c.remote, c.serviceID = m.LocalCommID, m.ServiceID
	c.dlid, c.dgid, c.global = pkt.SLID, verbs.GID(pkt.SGID), pkt.Global
}

// sidrRepLocked is the active side of a SIDR_REP (CM-25).
func (a *cmAgent) sidrRepLocked(m *simcm.Msg) {
	c := a.conns[m.LocalCommID]
	if c == nil || !c.sidr || c.passive || c.state != ibSIDRReqSent {
		return
	}
	id := c.id
	a.removeConnLocked(c)
	if id == nil || id.state != cmConnect {
		return
	}
	if m.Status != uint8(rdmacm.SIDRSuccess) {
		a.raiseLocked(&CMEvent{typ: rdmacm.EventUnreachable, id: id, status: int(m.Status),
			ud: rdmacm.UDParam{PrivateData: m.Private}})
		return
	}
	id.qkey = m.LocalQKey
	a.raiseLocked(&CMEvent{typ: rdmacm.EventEstablished, id: id, ud: rdmacm.UDParam{
		PrivateData: m.Private, AHAttr: id.avLocked(), QPNum: m.LocalQPN, QKey: m.LocalQKey,
	}})
}

// Accept implements rdmacm.ID: rdma_accept (CM-16). A synchronous RC ID
// then waits for ESTABLISHED.
func (id *CMID) Accept(param *rdmacm.ConnParam) error {
	const verb = "rdma_accept"
	done, err := id.call(verb)
	if err != nil {
		return err
	}
	a := id.a
	if err := a.acceptLocked(verb, id, param); err != nil {
		return done(err)
	}
	if id.qpType == verbs.QPTypeUD {
		return done(nil)
	}
	return done(a.completeLocked(verb, id))
}

func (a *cmAgent) acceptLocked(verb string, id *CMID, p *rdmacm.ConnParam) error {
	c := id.conn
	if id.state != cmConnect || id.listen == nil || c == nil || !c.passive {
		return verr.Errorf(verb, syscall.EINVAL, "the rdma_cm_id has no connection request to accept (it is %v) (CM-16)", id.state)
	}
	if id.dev.removed {
		return verr.New(verb, syscall.ENODEV, "the device has been removed (CM-24)")
	}
	var user []byte
	if p != nil {
		user = p.PrivateData
	}
	if c.sidr {
		if c.state != ibSIDRReqRcvd {
			return verr.New(verb, syscall.EINVAL, "the lookup has been answered already (CM-16)")
		}
		if len(user) > simcm.AttrSIDRREP.PrivateSize() {
			return verr.Errorf(verb, syscall.EINVAL, "%d bytes of private data; a SIDR_REP takes %d (CM-16)", len(user), simcm.AttrSIDRREP.PrivateSize())
		}
		qpn := uint32(0)
		if p != nil {
			qpn = p.QPNum
		}
		if id.qp != nil {
			qpn = id.qp.Num()
		}
		a.connSendLocked(c, &simcm.Msg{Attr: simcm.AttrSIDRREP, LocalCommID: c.remote, Status: uint8(rdmacm.SIDRSuccess),
			LocalQPN: qpn, ServiceID: c.serviceID, LocalQKey: rdmacm.UDPQKey, Private: user}, false, 0)
		a.removeConnLocked(c)
		id.owned = true
		return nil
	}
	if c.state != ibReqRcvd {
		return verr.Errorf(verb, syscall.EINVAL, "the connection is %v, not waiting for an answer (CM-16)", c.state)
	}
	if err := id.validParamLocked(verb, p); err != nil {
		return err
	}
	dev := id.dev.attr
	if p == nil || p.InitiatorDepth == rdmacm.MaxInitDepth {
		id.initDepth = min(id.initDepth, uint8(min(dev.MaxQPInitRDAtom, 255)))
	} else {
		id.initDepth = p.InitiatorDepth
	}
	if p == nil || p.ResponderResources == rdmacm.MaxRespRes {
		id.respRes = min(id.respRes, uint8(min(dev.MaxQPRDAtom, 255)))
	} else {
		id.respRes = p.ResponderResources
	}
	if id.qp != nil {
		if err := a.qpToRTSLocked(verb, id); err != nil {
			return err
		}
	}
	if len(user) > simcm.AttrREP.PrivateSize() {
		// The kernel fails the REP, then moves the QP to ERR and rejects
		// the request (K:cma.c __rdma_accept).
		id.qpToErrLocked()
		a.connSendLocked(c, &simcm.Msg{Attr: simcm.AttrREJ, LocalCommID: c.local, RemoteCommID: c.remote,
			MsgTarget: simcm.MsgREQ, Reason: uint16(rdmacm.RejConsumerDefined)}, false, 0)
		a.removeConnLocked(c)
		return verr.Errorf(verb, syscall.EINVAL, "%d bytes of private data; a REP takes %d; the request is rejected (CM-16)", len(user), simcm.AttrREP.PrivateSize())
	}
	qpn, srq := uint32(0), false
	rnr, flow := uint8(7), false
	if p != nil {
		qpn, srq, rnr, flow = p.QPNum, p.SRQ != 0, min(p.RNRRetryCount, 7), p.FlowControl != 0
	}
	if id.qp != nil {
		qpn, srq = id.qp.Num(), id.qp.q.SRQ() != nil
	}
	c.qpnGiven, c.state = qpn, ibRepSent
	a.connSendLocked(c, &simcm.Msg{Attr: simcm.AttrREP, LocalCommID: c.local, RemoteCommID: c.remote,
		LocalQPN: qpn, StartingPSN: c.psn, ResponderResources: id.respRes, InitiatorDepth: id.initDepth,
		FlowControl: flow, RNRRetryCount: rnr, SRQ: srq, LocalCAGUID: id.dev.attr.NodeGUID, Private: user,
	}, true, c.timeoutNS)
	id.owned = true
	return nil
}

// connResponseLocked is what librdmacm does on reading a CONNECT_RESPONSE
// for an ID with a QP: RTR, RTS, the RTU, and ESTABLISHED in its place
// (CM-17; cma:cma.c ucma_process_conn_resp).
func (a *cmAgent) connResponseLocked(ev *CMEvent) {
	id := ev.id
	c := id.conn
	if id.qp == nil || c == nil || c.state != ibRepRcvd {
		return
	}
	if err := a.qpToRTSLocked("rdma_get_cm_event", id); err != nil {
		id.qpToErrLocked()
		ev.typ, ev.status = rdmacm.EventConnectError, -int(verr.Errno(err))
		id.connectError = true
		return
	}
	a.connSendLocked(c, &simcm.Msg{Attr: simcm.AttrRTU, LocalCommID: c.local, RemoteCommID: c.remote}, false, 0)
	c.state = ibEstablished
	ev.typ = rdmacm.EventEstablished
}

// Establish implements rdmacm.ID: rdma_establish (CM-17).
func (id *CMID) Establish() error {
	const verb = "rdma_establish"
	done, err := id.call(verb)
	if err != nil {
		return err
	}
	c := id.conn
	switch {
	case id.qp != nil:
		return done(verr.New(verb, syscall.EINVAL, "the rdma_cm_id has a QP: the CM establishes it itself (CM-17)"))
	case c == nil || c.state != ibRepRcvd:
		return done(verr.New(verb, syscall.EINVAL, "there is no connection response to confirm (CM-17)"))
	}
	id.a.connSendLocked(c, &simcm.Msg{Attr: simcm.AttrRTU, LocalCommID: c.local, RemoteCommID: c.remote}, false, 0)
	c.state = ibEstablished
	return done(nil)
}

// Reject implements rdmacm.ID: rdma_reject (CM-19).
func (id *CMID) Reject(privateData []byte) error {
	const verb = "rdma_reject"
	done, err := id.call(verb)
	if err != nil {
		return err
	}
	a, c := id.a, id.conn
	if c == nil {
		return done(verr.New(verb, syscall.EINVAL, "the rdma_cm_id has no connection request to reject (CM-19)"))
	}
	if c.sidr {
		if c.state != ibSIDRReqRcvd {
			return done(verr.New(verb, syscall.EINVAL, "there is no lookup to reject (CM-19)"))
		}
		if len(privateData) > simcm.AttrSIDRREP.PrivateSize() {
			return done(verr.Errorf(verb, syscall.EINVAL, "%d bytes of private data; a SIDR_REP takes %d (CM-19)", len(privateData), simcm.AttrSIDRREP.PrivateSize()))
		}
		a.connSendLocked(c, &simcm.Msg{Attr: simcm.AttrSIDRREP, LocalCommID: c.remote, Status: uint8(rdmacm.SIDRReject),
			ServiceID: c.serviceID, Private: privateData}, false, 0)
		a.removeConnLocked(c)
		return done(nil)
	}
	target := uint8(simcm.MsgREQ)
	switch c.state {
	case ibReqRcvd:
	case ibRepRcvd:
		target = simcm.MsgREP
	default:
		return done(verr.Errorf(verb, syscall.EINVAL, "the connection is %v: nothing to reject (CM-19)", c.state))
	}
	if len(privateData) > simcm.AttrREJ.PrivateSize() {
		return done(verr.Errorf(verb, syscall.EINVAL, "%d bytes of private data; a REJ takes %d (CM-19)", len(privateData), simcm.AttrREJ.PrivateSize()))
	}
	a.connSendLocked(c, &simcm.Msg{Attr: simcm.AttrREJ, LocalCommID: c.local, RemoteCommID: c.remote,
		MsgTarget: target, Reason: uint16(rdmacm.RejConsumerDefined), Private: privateData}, false, 0)
	a.removeConnLocked(c)
	return done(nil)
}

// Notify implements rdmacm.ID: rdma_notify (CM-18).
func (id *CMID) Notify(event verbs.EventType) error {
	const verb = "rdma_notify"
	done, err := id.call(verb)
	if err != nil {
		return err
	}
	c := id.conn
	switch {
	case c == nil:
		return done(verr.New(verb, syscall.EINVAL, "the rdma_cm_id has no connection (CM-18)"))
	case event != verbs.EventCommEst:
		return done(verr.Errorf(verb, syscall.EINVAL, "%s is not an event the CM acts on (CM-18)", event.Name()))
	case c.state == ibEstablished:
		return done(verr.New(verb, syscall.EISCONN, "the connection is established already (CM-18)"))
	case c.state != ibRepSent:
		return done(verr.Errorf(verb, syscall.EINVAL, "the connection is %v (CM-18)", c.state))
	}
	id.a.stopLocked(&c.timer)
	c.state = ibEstablished
	id.a.raiseLocked(&CMEvent{typ: rdmacm.EventEstablished, id: id})
	return done(nil)
}

// Disconnect implements rdmacm.ID: rdma_disconnect (CM-21). A
// synchronous ID then waits for DISCONNECTED.
func (id *CMID) Disconnect() error {
	const verb = "rdma_disconnect"
	done, err := id.call(verb)
	if err != nil {
		return err
	}
	a, c := id.a, id.conn
	if c == nil || c.sidr {
		return done(verr.New(verb, syscall.EINVAL, "the rdma_cm_id has no connection (CM-21)"))
	}
	if err := id.qpToErrLocked(); err != nil {
		return done(err)
	}
	switch c.state {
	case ibEstablished:
		a.sendDREQLocked(c)
	case ibDREQRcvd:
		a.connSendLocked(c, &simcm.Msg{Attr: simcm.AttrDREP, LocalCommID: c.local, RemoteCommID: c.remote}, false, 0)
		a.enterTimewaitLocked(c)
	}
	return done(a.completeLocked(verb, id))
}

func (a *cmAgent) sendDREQLocked(c *cmConn) {
	c.state = ibDREQSent
	if c.maxRetries == 0 {
		c.maxRetries = cmMaxRetries
	}
	a.connSendLocked(c, &simcm.Msg{Attr: simcm.AttrDREQ, LocalCommID: c.local, RemoteCommID: c.remote,
		LocalQPN: c.remoteQPN}, true, c.timeoutNS)
}

// connDestroyLocked cleans a connection up when its ID is destroyed, as the
// kernel's cm_destroy_id does (CM-22).
func (a *cmAgent) connDestroyLocked(c *cmConn) {
	send := func(m *simcm.Msg) { a.connSendLocked(c, m, false, 0) }
	rej := func(reason rdmacm.RejectReason, target uint8) {
		send(&simcm.Msg{Attr: simcm.AttrREJ, LocalCommID: c.local, RemoteCommID: c.remote, MsgTarget: target, Reason: uint16(reason)})
	}
	c.id.conn = nil
	c.id = nil
	switch c.state {
	case ibReqSent, ibMRAReqRcvd:
		rej(rdmacm.RejTimeout, simcm.MsgREQ)
	case ibReqRcvd:
		rej(rdmacm.RejConsumerDefined, simcm.MsgREQ)
	case ibRepSent, ibRepRcvd:
		rej(rdmacm.RejConsumerDefined, simcm.MsgREP)
	case ibSIDRReqRcvd:
		send(&simcm.Msg{Attr: simcm.AttrSIDRREP, LocalCommID: c.remote, Status: uint8(rdmacm.SIDRReject), ServiceID: c.serviceID})
	case ibEstablished:
		a.sendDREQLocked(c) // the connection lives on until the DREP or the timeout
		return
	case ibDREQRcvd:
		send(&simcm.Msg{Attr: simcm.AttrDREP, LocalCommID: c.local, RemoteCommID: c.remote})
		a.enterTimewaitLocked(c)
		return
	case ibDREQSent, ibTimewait:
		return // its timer ends it
	}
	a.removeConnLocked(c)
}

// Migrate implements rdmacm.ID: rdma_migrate_id (CM-27, CM-04). Unread
// events of the ID move to ch; it waits, as librdmacm does, until the
// events already read from the old channel are acknowledged.
func (id *CMID) Migrate(ch rdmacm.EventChannel) error {
	const verb = "rdma_migrate_id"
	done, err := id.call(verb)
	if err != nil {
		return err
	}
	a := id.a
	var to *CMChannel
	if ch != nil {
		c, ok := ch.(*CMChannel)
		if !ok || c == nil || c.a != a {
			return done(verr.New(verb, syscall.EINVAL, "the event channel was not created by this fabric's connection manager"))
		}
		if c.dead {
			return done(verr.New(verb, syscall.EBADF, "the event channel has been destroyed"))
		}
		to = c
	} else if id.sync {
		return done(verr.New(verb, syscall.EINVAL, "the rdma_cm_id is synchronous already (CM-04)"))
	}
	from := id.ch
	if id.event != nil {
		_ = a.ackLocked(id.event)
		id.event = nil
	}
	var moved []*CMEvent
	from.q.RemoveIfLocked(func(ev *CMEvent) bool {
		if ev.counted == id {
			moved = append(moved, ev)
			return true
		}
		return false
	})
	id.setChannelLocked(to)
	for _, ev := range moved {
		id.ch.q.PushLocked(ev)
	}
	return done(a.waitAcksLocked(verb, id, waitCtx))
}
