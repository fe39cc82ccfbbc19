package sim

import (
	"syscall"

	"github.com/verbsim/verbsim/internal/domain"
	simcm "github.com/verbsim/verbsim/sim/internal/cm"
	"github.com/verbsim/verbsim/sim/internal/qp"
	"github.com/verbsim/verbsim/sim/trace"
	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// host connects the QPs of one device to the device's memory and ports and
// to the fabric's engine: it implements qp.Host. Every method runs under
// the fabric's lock.
type host struct{ d *Device }

var _ qp.Host = host{}

func (h host) eng() *engine { return h.d.fabric.eng }

var _ qp.XRCHost = host{}

// XRCSRQLocked implements qp.XRCHost: the live XRC SRQ numbered num on the
// device, or nil (XRC-10).
func (h host) XRCSRQLocked(num uint32) *qp.SRQ { return h.d.srqByNum[num] }

// ReadLocked implements qp.Memory, for inline payloads.
func (h host) ReadLocked(addr uint64, n uint32) ([]byte, bool) {
	return deviceMemory(h).ReadLocked(addr, n)
}

// LocalLocked implements qp.Host.
func (h host) LocalLocked(pd any, s verbs.SGE, write bool) ([]byte, bool) {
	p, _ := pd.(*PD)
	need := verbs.AccessFlags(0)
	if write {
		need = verbs.AccessLocalWrite
	}
	b, f := h.d.mrs.lookup(p, s.LKey, false, s.Addr, uint64(s.Length), need) // lookupLKeyLocked, one call less
	return b, f == faultNone
}

// RemoteLocked implements qp.Host: rkey names an MR or a memory window
// (MW-06).
func (h host) RemoteLocked(q *qp.QP, pd any, rkey uint32, addr uint64, n uint32, need verbs.AccessFlags) ([]byte, bool) {
	p, _ := pd.(*PD)
	if n > 0 && h.d.mrs.mrLocked(rkey>>8) == nil && h.d.mrs.mws[rkey>>8] != nil {
		b, f := h.d.mrs.lookupMW(q, p, rkey, addr, uint64(n), need)
		return b, f == faultNone
	}
	b, f := h.d.lookupRKeyLocked(p, rkey, addr, uint64(n), need)
	return b, f == faultNone
}

// LocalMemLocked implements qp.Host.
func (h host) LocalMemLocked(pd any, s verbs.SGE, write bool) (qp.Mem, bool) {
	p, _ := pd.(*PD)
	need := verbs.AccessFlags(0)
	if write {
		need = verbs.AccessLocalWrite
	}
	m, f := h.d.mrs.lookupMem(p, s.LKey, false, s.Addr, uint64(s.Length), need)
	return m, f == faultNone
}

// RemoteMemLocked implements qp.Host.
func (h host) RemoteMemLocked(q *qp.QP, pd any, rkey uint32, addr uint64, n uint32, need verbs.AccessFlags) (qp.Mem, bool) {
	p, _ := pd.(*PD)
	if n > 0 && h.d.mrs.mrLocked(rkey>>8) == nil && h.d.mrs.mws[rkey>>8] != nil {
		m, f := h.d.mrs.lookupMWMem(q, p, rkey, addr, uint64(n), need)
		return m, f == faultNone
	}
	m, f := h.d.mrs.lookupMem(p, rkey, true, addr, uint64(n), need)
	return m, f == faultNone
}

// InvalidateLocked implements qp.Host (XFER-29 for MRs; MW-07 for type 2
// memory windows).
func (h host) InvalidateLocked(pd any, rkey uint32) bool {
	p, _ := pd.(*PD)
	mr := h.d.mrs.byIndex[rkey>>8]
	if mr == nil && h.d.mrs.mws[rkey>>8] != nil {
		return h.d.mrs.invalidateMW(p, rkey)
	}
	if mr == nil || mr.rkey != rkey || mr.pd != p || mr.invalid {
		return false
	}
	mr.invalid = true
	return true
}

// AHLocked implements qp.Host. An AH of another fabric is not found (the
// WR then fails as with another PD's AH, PD-04); its destroyed flag belongs
// to that fabric's lock, so it is not even read.
func (h host) AHLocked(ah any) (verbs.AHAttr, any, bool) {
	a, ok := ah.(*AH)
	if !ok || !onFabric(a, h.d.fabric) || a.dead {
		return verbs.AHAttr{}, nil, false
	}
	return a.attr, a.pd, true
}

// CheckAHLocked implements qp.Host: a UD send's AH must be verbsim's, of
// the QP's device context, and live (AV-04). Another PD of the same context
// is left to PD-04. It allocates nothing unless it fails.
func (h host) CheckAHLocked(pd, ah any) error {
	const verb = "ibv_post_send"
	a, ok := ah.(*AH)
	if !ok || a == nil {
		return verr.Errorf(verb, syscall.EINVAL, "the address handle (%T) is not one of verbsim's (AV-04)", ah)
	}
	if err := checkOwner(verb, "the address handle", pd, a, sameContext); err != nil {
		return err
	}
	if a.dead {
		return errAHDestroyed
	}
	return nil
}

var errAHDestroyed = verr.New("ibv_post_send", syscall.EINVAL, "the address handle has been destroyed (AV-04)")

// PortLocked implements qp.Host.
func (h host) PortLocked(n uint8) qp.PortInfo {
	if n == 0 || int(n) > len(h.d.ports) {
		return qp.PortInfo{ActiveMTU: verbs.MTU256}
	}
	a := h.d.ports[n-1].attr
	return qp.PortInfo{ActiveMTU: a.ActiveMTU, MaxMsgSz: a.MaxMsgSz, Up: a.State == verbs.PortActive,
		Ethernet: a.LinkLayer == verbs.LinkLayerEthernet}
}

// NewPacketLocked implements qp.Host.
func (h host) NewPacketLocked() *qp.Packet { return h.eng().newPacket() }

// SendLocked implements qp.Host.
func (h host) SendLocked(from *qp.QP, p *qp.Packet) { h.eng().sendLocked(h.d, from, p) }

// ScheduleLocked implements qp.Host.
func (h host) ScheduleLocked(q *qp.QP) {
	e := h.eng()
	e.push(event{kind: EventRun, seq: e.next(), q: q, dev: h.d})
}

// ArmLocked implements qp.Host.
func (h host) ArmLocked(t *qp.Timer, after uint64) { h.eng().armLocked(t, after) }

// StopLocked implements qp.Host.
func (h host) StopLocked(t *qp.Timer) { h.eng().stopTimer(t) }

// packetOf is the trace's description of p; a message of the connection
// manager (a CM MAD to QP 1) is described by its message and
// communication ID.
func packetOf(p *qp.Packet) *trace.Packet {
	t := &trace.Packet{Transport: p.Transport, Kind: trace.PacketKind(p.Kind), PSN: p.PSN}
	if p.DstQPN == gsiQPN && p.Transport == verbs.QPTypeUD && len(p.Payload) == simcm.MADSize {
		if m, err := simcm.Decode(p.Payload); err == nil {
			t.CM, t.CommID = cmMessages[m.Attr], m.LocalCommID
			if t.CM != trace.CMNone {
				return t
			}
		}
	}
	switch p.Kind {
	case qp.PktAck:
		t.NAK = p.Syndrome.NAK()
	case qp.PktSend, qp.PktWrite, qp.PktReadResp:
		t.Len, t.First, t.Last = len(p.Payload), p.First, p.Last
	}
	return t
}

// cmMessages are the trace's names of the CM's messages.
var cmMessages = map[simcm.Attr]trace.CMMessage{
	simcm.AttrREQ: trace.CMREQ, simcm.AttrMRA: trace.CMMRA, simcm.AttrREJ: trace.CMREJ,
	simcm.AttrREP: trace.CMREP, simcm.AttrRTU: trace.CMRTU, simcm.AttrDREQ: trace.CMDREQ,
	simcm.AttrDREP: trace.CMDREP, simcm.AttrSIDRREQ: trace.CMSIDRREQ, simcm.AttrSIDRREP: trace.CMSIDRREP,
}

// describePacket renders a packet as the trace does: "RC SEND psn=0 len=64
// first last", "CM REQ comm 0x1".
func describePacket(p *qp.Packet) string { return packetOf(p).String() }

// packetLocked records name (send, receive, drop, duplicate, delay,
// arrive) about p at object (a QP, or the device or wire it reached): to
// peer, because of why, by targeted fault number fault (0: none). It is
// called only when the fabric traces.
func (e *engine) packetLocked(obj domain.Object, object, name string, p *qp.Packet, peer, why string, fault int) {
	r := trace.Record{Kind: trace.KindPacket, Object: object, Name: name, Packet: packetOf(p), Peer: peer, Why: why, Fault: fault}
	if obj != nil {
		e.f.d.Emit(obj, r)
		return
	}
	e.emit(r)
}
