package sim

import (
	"math"

	"github.com/verbsim/verbsim/sim/internal/qp"
	"github.com/verbsim/verbsim/verbs"
)

// The direct path (sim/internal/qp/direct.go, docs/transport.md "The
// direct path"): a posted RC or UC message whose engine events could not
// be told apart from a computation inside the post verb is carried out
// there. This file is the engine's side: when it may, where the request
// goes, and the counters the events would have moved.

var _ qp.DirectHost = host{}

// directOK reports whether the engine lets a post carry out its message
// itself: Auto or Background mode, no Chooser (the explorer's hook), no
// trace, no packet fault, random or targeted, no Remote (a Background
// fabric with one catches up with the wall clock before it settles), and
// nothing ready (the settle would run it first; with one event ready at a
// time, a Random schedule draws nothing, so it qualifies). Future events
// (timers, delayed packets) do not matter: the clock does not move while
// the message is carried out, in either path.
func (e *engine) directOK() bool {
	return !e.noDirect && e.mode != Manual && e.chooser == nil && e.log == nil && !e.f.d.Tracing() &&
		e.remote == nil && e.faults.Drop == 0 && e.faults.Duplicate == 0 && e.faults.Delay == 0 &&
		len(e.aimed) == 0 && e.pending() == 0 && !e.running
}

// routeTo is route for an address given by its parts.
func (f *Fabric) routeTo(global bool, dlid uint16, dgid verbs.GID) *port {
	if global {
		return f.byGID[dgid]
	}
	if int(dlid) < len(f.lids) {
		return f.lids[dlid]
	}
	return f.byLID[dlid]
}

// activePort returns d's port n (1-based) if it is active, else nil.
func (d *Device) activePort(n uint8) *port {
	if n < 1 || int(n) > len(d.ports) {
		return nil
	}
	if p := d.ports[n-1]; p != nil && p.attr.State == verbs.PortActive {
		return p
	}
	return nil
}

// DirectPeerLocked implements qp.DirectHost: the QP a request from q
// reaches, as sendLocked and deliverLocked would find it, provided the
// answer (an ACK or a response, addressed to the request's source, as
// qp.Packet.reply does) finds q the same way.
func (h host) DirectPeerLocked(q *qp.QP, portNum uint8, av *verbs.AHAttr, dstQPN uint32) *qp.DirectCache {
	e := h.eng()
	if !e.directOK() {
		return nil
	}
	// The answer depends on q's attributes (portNum, av, dstQPN), the
	// peer's port, the ports' states and the QPs of the devices: the last
	// answer holds while none of them has changed.
	c := q.DirectCacheLocked()
	if c.To != nil && c.Topo == e.f.topo && c.Self == q.AttrGenLocked() && c.Peer == c.To.AttrGenLocked() {
		return c
	}
	src := h.d.activePort(portNum)
	if src == nil {
		return nil
	}
	global := av.IsGlobal || src.attr.LinkLayer == verbs.LinkLayerEthernet
	dst := e.f.routeTo(global, av.DLID, av.GRH.DGID)
	if dst == nil || dst.attr.State != verbs.PortActive {
		return nil
	}
	to := dst.dev.qpLocked(dstQPN)
	if to == nil {
		return nil
	}
	from := dst.dev.activePort(to.PortNumLocked())
	if from == nil {
		return nil
	}
	// The request leaves with the GID of q's sgid_index, the answer with
	// the GID of the responder's (AV-05), as sendLocked gives them.
	sgid := src.sourceGID(av)
	rav := to.AHAttrLocked()
	var bsgid verbs.GID
	if rav.IsGlobal {
		bsgid = from.sourceGID(&rav)
	} else {
		bsgid = from.gids[0]
	}
	bglobal := global || from.attr.LinkLayer == verbs.LinkLayerEthernet
	back := e.f.routeTo(bglobal, src.attr.LID, sgid)
	if back == nil || back.attr.State != verbs.PortActive || back.dev.qpLocked(q.Num()) != q {
		return nil
	}
	*c = qp.DirectCache{To: to, Topo: e.f.topo, Self: q.AttrGenLocked(), Peer: to.AttrGenLocked(), SLID: src.attr.LID, Global: global,
		SGID: sgid, BackSLID: from.attr.LID, BackGlobal: bglobal, BackSGID: bsgid}
	return c
}

// DirectDoneLocked implements qp.DirectHost: the run, the request packets
// and (RC) the answers as events, their packets put on the wire and
// delivered. When the events would have armed the ACK timer (sequence
// numbers drawn beyond the events), a Background fabric's clock goroutine
// is woken as the arm would have woken it (armLocked): it then brings the
// clock up to the wall clock, so that virtual time moves on under a
// workload of direct messages as it did under the engine's.
func (h host) DirectDoneLocked(events, packets, seqs uint64, multi bool) {
	e := h.eng()
	if e.bg != nil && seqs > events {
		e.bg.kickLocked(math.MaxUint64) // no timer left armed: only the clock moves on
	}
	e.seq += seqs
	e.directs++
	if multi {
		e.directMulti++
	}
	e.stats.Events += events
	e.stats.Packets += packets
	e.stats.Delivered += packets
}

// DirectScratchLocked implements qp.DirectHost.
func (h host) DirectScratchLocked(n int) []byte {
	e := h.eng()
	if cap(e.directBuf) < n {
		e.directBuf = make([]byte, max(n, 4096))
	}
	return e.directBuf[:n]
}
