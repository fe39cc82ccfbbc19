package sim

import (
	"fmt"

	"github.com/verbsim/verbsim/sim/internal/qp"
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

// PortLocked implements qp.Host.
func (h host) PortLocked(n uint8) qp.PortInfo {
	if n == 0 || int(n) > len(h.d.ports) {
		return qp.PortInfo{ActiveMTU: verbs.MTU256}
	}
	a := h.d.ports[n-1].attr
	return qp.PortInfo{ActiveMTU: a.ActiveMTU, MaxMsgSz: a.MaxMsgSz, Up: a.State == verbs.PortActive}
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

// describePacket renders a packet for the trace.
func describePacket(p *qp.Packet) string {
	s := fmt.Sprintf("%v %s psn=%d", p.Transport, p.Kind, p.PSN)
	switch p.Kind {
	case qp.PktAck:
		s = fmt.Sprintf("%v %s psn=%d", p.Transport, p.Syndrome, p.PSN)
	case qp.PktSend, qp.PktWrite, qp.PktReadResp:
		s += fmt.Sprintf(" len=%d", len(p.Payload))
		if p.First {
			s += " first"
		}
		if p.Last {
			s += " last"
		}
	}
	return s
}
