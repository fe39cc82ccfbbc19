package sim

import (
	"fmt"
	"syscall"

	"github.com/verbsim/verbsim/rdmacm"
	simcm "github.com/verbsim/verbsim/sim/internal/cm"
	"github.com/verbsim/verbsim/sim/internal/qp"
	"github.com/verbsim/verbsim/verbs"
)

// The InfiniBand CM protocol (K:cm.c; IBTA 12): connections, their
// messages on QP 1 and their timers (CM-13..CM-25, CM-32).

// ibState is the state of an InfiniBand CM connection (enum ib_cm_state).
type ibState uint8

const (
	ibIdle ibState = iota
	ibReqSent
	ibMRAReqRcvd
	ibReqRcvd
	ibRepSent
	ibRepRcvd
	ibEstablished
	ibDREQSent
	ibDREQRcvd
	ibTimewait
	ibSIDRReqSent
	ibSIDRReqRcvd
)

var ibStateNames = [...]string{"IDLE", "REQ_SENT", "MRA_REQ_RCVD", "REQ_RCVD", "REP_SENT", "REP_RCVD",
	"ESTABLISHED", "DREQ_SENT", "DREQ_RCVD", "TIMEWAIT", "SIDR_REQ_SENT", "SIDR_REQ_RCVD"}

func (s ibState) String() string {
	if int(s) < len(ibStateNames) {
		return ibStateNames[s]
	}
	return fmt.Sprintf("ibState(%d)", uint8(s))
}

// cmConn is one InfiniBand CM connection (the kernel's cm_id_private). It
// outlives its ID while a DREQ is retried or the connection waits in
// timewait.
type cmConn struct {
	a     *cmAgent
	id    *CMID // nil once the ID is destroyed
	name  string
	state ibState
	local uint32 // local communication ID; the request ID of a SIDR
	// remote is the peer's communication ID, remoteGUID its CA GUID.
	remote     uint32
	remoteGUID uint64
	port       *port
	// Where the peer's CM is: the source of the message that opened the
	// connection on the passive side, the route on the active side.
	dlid   uint16
	dgid   verbs.GID
	global bool

	passive   bool
	qpnGiven  uint32 // the QP number this side gave in its REQ or REP
	remoteQPN uint32
	psn       uint32 // the starting PSN, the same both ways (cma's seq_num)
	retry     uint8  // the REQ's retry count: retry_cnt of both QPs
	peerRNR   uint8  // the peer's RNR retry count: rnr_retry of our QP
	peerSRQ   bool
	mtu       verbs.MTU
	sidr      bool
	serviceID uint64

	// Retransmission of the last message that expects an answer.
	mad        []byte
	tries      int
	maxRetries int
	wait       uint64 // ticks before the next retransmission
	timeoutNS  uint64 // the connection's timeout (cm_id_priv->timeout_ms)
	timer      cmTimer
}

func (a *cmAgent) newConnLocked(id *CMID, p *port) *cmConn {
	c := &cmConn{a: a, id: id, port: p, local: a.nextCommIDLocked()}
	c.name = fmt.Sprintf("%s/cm conn %#x", p.dev.name, c.local)
	c.timer.init(c.name, p.dev, func() { a.connTimerLocked(c) })
	a.conns[c.local] = c
	id.conn = c
	return c
}

// removeConnLocked forgets the connection.
func (a *cmAgent) removeConnLocked(c *cmConn) {
	a.stopLocked(&c.timer)
	c.state = ibIdle
	if a.conns[c.local] == c {
		delete(a.conns, c.local)
	}
	k := remoteKey{c.remoteGUID, c.remote}
	if a.remote[k] == c {
		delete(a.remote, k)
	}
	if c.id != nil && c.id.conn == c {
		c.id.conn = nil
	}
}

// psnOf is the starting PSN of a connection: a hash of its communication
// ID, so that runs repeat (the kernel draws it at random).
func psnOf(comm uint32) uint32 { return (comm*0x9e3779b1 ^ 0x5bd1e995) & 0xffffff }

// sendLocked puts message m on the wire from port src to the peer's CM at
// (dlid, dgid, global).
func (a *cmAgent) sendLocked(src *port, dlid uint16, dgid verbs.GID, global bool, m *simcm.Msg) {
	e := a.f.eng
	p := e.newPacket()
	p.Kind, p.Transport, p.Op = qp.PktSend, verbs.QPTypeUD, verbs.WRSend
	p.First, p.Last = true, true
	p.SrcQPN, p.DstQPN, p.QKey = gsiQPN, gsiQPN, simcm.GSIQKey
	p.Port, p.DLID, p.DGID, p.Global = src.num, dlid, dgid, global
	buf, err := m.Append(p.Payload[:0])
	if err != nil { // the callers check the private data's length first
		e.freePacket(p)
		return
	}
	p.Payload = buf
	e.sendLocked(src.dev, a.gsiOf(src), p)
}

// connSendLocked sends m on the connection; with answer, it is kept and
// retransmitted every wait ticks until answered, maxRetries times.
func (a *cmAgent) connSendLocked(c *cmConn, m *simcm.Msg, answer bool, wait uint64) {
	m.TID = uint64(c.local)
	a.sendLocked(c.port, c.dlid, c.dgid, c.global, m)
	if !answer {
		return
	}
	c.mad, _ = m.Append(c.mad[:0])
	c.tries, c.wait = 0, wait
	a.armLocked(&c.timer, wait)
}

// connTimerLocked is a connection's timer: the end of timewait, or the
// next retransmission, or the end of the retries (CM-20).
func (a *cmAgent) connTimerLocked(c *cmConn) {
	if c.state == ibTimewait {
		a.timewaitExitLocked(c)
		return
	}
	if c.tries < c.maxRetries && len(c.mad) == simcm.MADSize {
		c.tries++
		m, err := simcm.Decode(c.mad)
		if err == nil {
			a.sendLocked(c.port, c.dlid, c.dgid, c.global, &m)
		}
		a.armLocked(&c.timer, c.wait)
		return
	}
	etimedout := -int(syscall.ETIMEDOUT)
	switch c.state {
	case ibReqSent, ibMRAReqRcvd, ibRepSent, ibSIDRReqSent:
		id := c.id
		a.removeConnLocked(c)
		if id != nil && id.state == cmConnect {
			a.raiseLocked(&CMEvent{typ: rdmacm.EventUnreachable, id: id, status: etimedout})
		}
	case ibDREQSent:
		id := c.id
		a.enterTimewaitLocked(c)
		a.disconnectedLocked(id, etimedout)
	}
}

// enterTimewaitLocked starts timewait: the local ACK timeout of the path
// (CM-21).
func (a *cmAgent) enterTimewaitLocked(c *cmConn) {
	c.state = ibTimewait
	c.mad = c.mad[:0]
	a.armLocked(&c.timer, cmMS(cmAckTimeout))
}

func (a *cmAgent) timewaitExitLocked(c *cmConn) {
	id := c.id
	a.removeConnLocked(c)
	if id != nil && id.state == cmDisconnect {
		a.raiseLocked(&CMEvent{typ: rdmacm.EventTimewaitExit, id: id})
	}
}

// disconnectedLocked reports DISCONNECTED once (K:cma.c: CONNECT to
// DISCONNECT).
func (a *cmAgent) disconnectedLocked(id *CMID, status int) {
	if id == nil || id.state != cmConnect {
		return
	}
	id.state = cmDisconnect
	a.raiseLocked(&CMEvent{typ: rdmacm.EventDisconnected, id: id, status: status})
}

// receiveLocked handles a packet that arrived at QP 1 of port p: a CM
// message (CM-32). Anything that does not decode, or names a connection
// the CM does not know, is dropped and traced.
func (a *cmAgent) receiveLocked(p *port, pkt *qp.Packet) {
	g := a.gsiOf(p)
	if pkt.Transport != verbs.QPTypeUD || pkt.QKey != simcm.GSIQKey {
		a.dropLocked(g, pkt, "not a UD message with the GSI Q_Key")
		return
	}
	m, err := simcm.Decode(pkt.Payload)
	if err != nil {
		a.dropLocked(g, pkt, err.Error())
		return
	}
	if a.f.d.Tracing() {
		a.f.eng.packetLocked(g, "", "receive", pkt, "", "", 0)
	}
	switch m.Attr {
	case simcm.AttrREQ:
		a.reqLocked(p, pkt, &m)
	case simcm.AttrSIDRREQ:
		a.sidrReqLocked(p, pkt, &m)
	case simcm.AttrSIDRREP:
		a.sidrRepLocked(&m)
	default:
		c := a.conns[m.RemoteCommID]
		if m.Attr == simcm.AttrDREQ && c == nil {
			// A DREQ for a connection this side forgot is answered all
			// the same (K:cm.c cm_issue_drep).
			a.sendLocked(p, pkt.SLID, pkt.SGID, pkt.Global, &simcm.Msg{Attr: simcm.AttrDREP, LocalCommID: m.RemoteCommID, RemoteCommID: m.LocalCommID})
			return
		}
		if c == nil || c.port != p {
			a.dropLocked(g, pkt, fmt.Sprintf("%v for no connection %#x", m.Attr, m.RemoteCommID))
			return
		}
		a.connMsgLocked(c, &m)
	}
}

func (a *cmAgent) dropLocked(g *gsiAgent, pkt *qp.Packet, why string) {
	e := a.f.eng
	e.stats.Dropped++
	if a.f.d.Tracing() {
		e.packetLocked(g, "", "drop", pkt, "", why, 0)
	}
}

// connMsgLocked handles a message of an existing connection.
func (a *cmAgent) connMsgLocked(c *cmConn, m *simcm.Msg) {
	switch m.Attr {
	case simcm.AttrMRA:
		a.mraLocked(c, m)
	case simcm.AttrREJ:
		a.rejLocked(c, m)
	case simcm.AttrREP:
		a.repLocked(c, m)
	case simcm.AttrRTU:
		if c.state == ibRepSent {
			a.stopLocked(&c.timer)
			c.state = ibEstablished
			if id := c.id; id != nil && id.state == cmConnect {
				a.raiseLocked(&CMEvent{typ: rdmacm.EventEstablished, id: id})
			}
		}
	case simcm.AttrDREQ:
		a.dreqLocked(c, m)
	case simcm.AttrDREP:
		if c.state == ibDREQSent {
			a.enterTimewaitLocked(c)
			a.disconnectedLocked(c.id, 0)
		}
	}
}

// mraLocked: the peer needs more time (CM-14, CM-20).
func (a *cmAgent) mraLocked(c *cmConn, m *simcm.Msg) {
	wait := cmMS(m.ServiceTimeout) + cmMS(cmAckTimeout)
	switch {
	case m.MsgTarget == simcm.MsgREQ && c.state == ibReqSent:
		c.state = ibMRAReqRcvd
	case m.MsgTarget == simcm.MsgREP && c.state == ibRepSent:
	default:
		return
	}
	c.wait = wait
	a.armLocked(&c.timer, wait)
}

// rejLocked: the peer refused (CM-15, CM-19).
func (a *cmAgent) rejLocked(c *cmConn, m *simcm.Msg) {
	switch c.state {
	case ibReqSent, ibMRAReqRcvd, ibRepSent, ibRepRcvd:
	case ibReqRcvd:
		a.removeConnLocked(c) // the requester withdrew: nobody to tell yet
		return
	default:
		return
	}
	id := c.id
	a.removeConnLocked(c)
	if id == nil || id.state != cmConnect {
		return
	}
	a.raiseLocked(&CMEvent{typ: rdmacm.EventRejected, id: id, status: int(m.Reason),
		conn: rdmacm.ConnParam{PrivateData: m.Private}})
}

// repLocked: the passive side accepted (CM-17).
func (a *cmAgent) repLocked(c *cmConn, m *simcm.Msg) {
	switch c.state {
	case ibReqSent, ibMRAReqRcvd:
	case ibEstablished:
		a.connSendLocked(c, &simcm.Msg{Attr: simcm.AttrRTU, LocalCommID: c.local, RemoteCommID: c.remote}, false, 0)
		return
	default:
		return
	}
	a.stopLocked(&c.timer)
	c.remote, c.remoteGUID, c.remoteQPN = m.LocalCommID, m.LocalCAGUID, m.LocalQPN
	c.peerRNR, c.peerSRQ = m.RNRRetryCount, m.SRQ
	c.state = ibRepRcvd
	id := c.id
	if id == nil {
		return
	}
	// The CM answers with an MRA: the application has the event to read
	// before the RTU goes out (K:cma.c cma_ib_handler).
	a.connSendLocked(c, &simcm.Msg{Attr: simcm.AttrMRA, LocalCommID: c.local, RemoteCommID: c.remote,
		MsgTarget: simcm.MsgREP, ServiceTimeout: cmMRAServiceTimeout}, false, 0)
	id.initDepth, id.respRes = m.ResponderResources, m.InitiatorDepth
	a.raiseLocked(&CMEvent{typ: rdmacm.EventConnectResponse, id: id, conn: rdmacm.ConnParam{
		PrivateData: m.Private, ResponderResources: m.InitiatorDepth, InitiatorDepth: m.ResponderResources,
		FlowControl: flag8(m.FlowControl), RNRRetryCount: m.RNRRetryCount, SRQ: flag8(m.SRQ), QPNum: m.LocalQPN,
	}})
}

func flag8(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// dreqLocked: the peer disconnects (CM-21).
func (a *cmAgent) dreqLocked(c *cmConn, m *simcm.Msg) {
	if m.LocalQPN != c.localQPN() {
		return
	}
	switch c.state {
	case ibRepSent, ibEstablished, ibDREQSent:
		a.stopLocked(&c.timer)
		c.state = ibDREQRcvd
		c.mad = c.mad[:0]
		a.disconnectedLocked(c.id, 0)
	case ibTimewait:
		a.connSendLocked(c, &simcm.Msg{Attr: simcm.AttrDREP, LocalCommID: c.local, RemoteCommID: c.remote}, false, 0)
	}
}

// localQPN is the QP number this side of the connection gave, which a
// DREQ names.
func (c *cmConn) localQPN() uint32 { return c.qpnGiven }
