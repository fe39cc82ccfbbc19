package sim

import (
	"fmt"
	"syscall"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/sim/internal/qp"
	"github.com/verbsim/verbsim/sim/trace"
	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// Multicast (MCAST-01..03): UD QPs attached to a group by ibv_attach_mcast
// receive every UD message sent to the group's GID (or, on InfiniBand
// without a GRH, its multicast LID). The fabric keeps the groups; a group
// lives while a QP is attached to it.

// mcastTable is the fabric's multicast groups. Guarded by the domain lock.
type mcastTable struct {
	groups []*mcGroup // in the order first attached, so delivery order is stable
}

// mcGroup is one multicast group and its members, in attach order.
type mcGroup struct {
	gid     verbs.GID
	lid     uint16
	members []*qp.QP
}

// lidMulticastMax is the last multicast LID; 0xffff is the permissive LID.
const lidMulticastMax = 0xfffe

// isMulticastGID reports whether g is a multicast GID: ff00::/8, or an
// IPv4-mapped class D address (::ffff:224.0.0.0/100), which is how RoCE v2
// writes an IPv4 group (K:verbs.c rdma_is_multicast_addr).
func isMulticastGID(g verbs.GID) bool {
	if g[0] == 0xff {
		return true
	}
	for i := range 10 {
		if g[i] != 0 {
			return false
		}
	}
	return g[10] == 0xff && g[11] == 0xff && g[12]&0xf0 == 0xe0
}

// find returns the group of gid, or nil.
func (t *mcastTable) find(gid verbs.GID) *mcGroup {
	for _, g := range t.groups {
		if g.gid == gid {
			return g
		}
	}
	return nil
}

// findLID returns the group of multicast LID lid, or nil.
func (t *mcastTable) findLID(lid uint16) *mcGroup {
	for _, g := range t.groups {
		if g.lid == lid {
			return g
		}
	}
	return nil
}

// detachAll takes q out of every group, and drops groups left empty; a
// destroyed QP is detached this way (MCAST-02).
func (t *mcastTable) detachAll(q *qp.QP) {
	kept := t.groups[:0]
	for _, g := range t.groups {
		for i, m := range g.members {
			if m == q {
				g.members = append(g.members[:i], g.members[i+1:]...)
				break
			}
		}
		if len(g.members) > 0 {
			kept = append(kept, g)
		}
	}
	clear(t.groups[len(kept):])
	t.groups = kept
}

// AttachMcast attaches the QP to the multicast group gid, lid
// (ibv_attach_mcast; MCAST-01): EINVAL for a QP that is not UD, a GID
// that is not a multicast GID, or, when the QP's port is InfiniBand (or it
// has no port yet and the device has no Ethernet port), a LID outside
// 0xC000..0xFFFE. Attaching twice changes nothing.
func (q *QP) AttachMcast(gid verbs.GID, lid uint16) error {
	return q.mcast("ibv_attach_mcast", gid, lid, true)
}

// DetachMcast detaches the QP from the multicast group (ibv_detach_mcast;
// MCAST-02): EINVAL when it is not attached to it.
func (q *QP) DetachMcast(gid verbs.GID, lid uint16) error {
	return q.mcast("ibv_detach_mcast", gid, lid, false)
}

func (q *QP) mcast(verb string, gid verbs.GID, lid uint16, attach bool) (err error) {
	e := q.eng()
	if e == nil {
		return verr.New(verb, syscall.EINVAL, "nil QP")
	}
	f, d := qpFabric(q)
	if f == nil {
		return verr.New(verb, syscall.EINVAL, "the QP was not created through this package's verbs")
	}
	op := domain.Op{Verb: verb[len("ibv_"):], Obj: e}
	if f.d.Tracing() {
		op.Rec = &trace.Record{Detail: fmt.Sprintf("gid %v lid %#x", gid, lid)}
	}
	f.d.Enter(op)
	defer func() { f.d.Leave(op, err) }()
	return f.mcastLocked(verb, q, d, gid, lid, attach)
}

// mcastLocked attaches q to the group gid, lid, or detaches it, after the
// checks of MCAST-01 and MCAST-02.
func (f *Fabric) mcastLocked(verb string, q *QP, d *Device, gid verbs.GID, lid uint16, attach bool) error {
	if err := q.mcastCheckLocked(verb, d, gid, lid); err != nil {
		return err
	}
	e := q.eng()
	t := &f.mcast
	g := t.find(gid)
	if !attach {
		if g != nil {
			for i, m := range g.members {
				if m == e {
					g.members = append(g.members[:i], g.members[i+1:]...)
					if len(g.members) == 0 {
						t.detachAll(nil) // drops the empty group
					}
					return nil
				}
			}
		}
		return verr.Errorf(verb, syscall.EINVAL, "the QP is not attached to group %v (MCAST-02)", gid)
	}
	if g == nil {
		g = &mcGroup{gid: gid, lid: lid}
		t.groups = append(t.groups, g)
	}
	for _, m := range g.members {
		if m == e {
			return nil
		}
	}
	g.members = append(g.members, e)
	return nil
}

// mcastCheckLocked checks the arguments of ibv_attach_mcast and
// ibv_detach_mcast as the kernel does (K:verbs.c ib_attach_mcast,
// is_valid_mcast_lid).
func (q *QP) mcastCheckLocked(verb string, d *Device, gid verbs.GID, lid uint16) error {
	e := q.eng()
	switch {
	case e.DestroyedLocked():
		return verr.New(verb, syscall.EINVAL, "the QP has been destroyed")
	case e.Type() != verbs.QPTypeUD:
		return verr.Errorf(verb, syscall.EINVAL, "a %v QP cannot join a multicast group, only UD (MCAST-01)", e.Type())
	case !isMulticastGID(gid):
		return verr.Errorf(verb, syscall.EINVAL, "gid %v is not a multicast GID (MCAST-01)", gid)
	}
	ib := true
	if e.StateLocked() >= verbs.QPStateInit {
		if p := d.portLocked(e.PortNumLocked()); p != nil {
			ib = p.attr.LinkLayer == verbs.LinkLayerInfiniBand
		}
	} else {
		for _, p := range d.ports {
			if p.attr.LinkLayer != verbs.LinkLayerInfiniBand {
				ib = false
			}
		}
	}
	if ib && (lid < lidMulticastBase || lid > lidMulticastMax) {
		return verr.Errorf(verb, syscall.EINVAL, "lid %#x is not a multicast LID on an InfiniBand port (MCAST-01)", lid)
	}
	return nil
}

// qpFabric returns the fabric and device of a QP handle, nil for one made
// outside this package.
func qpFabric(q *QP) (*Fabric, *Device) {
	c := contextOf(q)
	if c == nil {
		return nil, nil
	}
	return c.dev.fabric, c.dev
}

// multicastDest reports whether p is addressed to a multicast group: a
// multicast DGID with a GRH, or a multicast DLID without one.
func multicastDest(p *qp.Packet) bool {
	if p.Global {
		return isMulticastGID(p.DGID)
	}
	return p.DLID >= lidMulticastBase && p.DLID <= lidMulticastMax
}

// multicastLocked delivers a UD packet sent to a group to every QP
// attached to it on the fabric (MCAST-03), each copy addressed to its QP.
// A packet sent here (outward) also leaves the fabric once through the
// Remote, for the group's members elsewhere; one that came in through
// Fabric.Receive does not go out again. A group with no member drops it.
func (e *engine) multicastLocked(d *Device, from domain.Object, p *qp.Packet, outward bool) {
	g := e.f.mcastGroup(p)
	out := outward && e.remote != nil
	if out {
		e.sendRemoteLocked(d, from, e.clonePacket(p))
	}
	if g == nil || len(g.members) == 0 {
		if !out {
			e.dropLocked(d, from, p, "no QP is attached to the multicast group", 0)
		} else {
			e.freePacket(p)
		}
		return
	}
	if e.tracing() && from != nil {
		e.packetLocked(from, "", "send", p, fmt.Sprintf("multicast group %v", verbs.GID(p.DGID)), fmt.Sprintf("%d QP(s) attached", len(g.members)), 0)
	}
	if f := &e.faults; f.Drop > 0 && e.rng.Float64() < f.Drop {
		e.dropLocked(d, from, p, "fault: drop", 0)
		return
	}
	for _, m := range g.members {
		dev := e.f.deviceOf(m)
		if dev == nil {
			continue
		}
		dst := dev.portLocked(m.PortNumLocked())
		if dst == nil {
			continue
		}
		c := e.clonePacket(p)
		c.DstQPN = m.Num()
		e.arriveLocked(dst, c)
	}
	e.freePacket(p)
}

// mcastGroup returns the group p is addressed to, or nil.
func (f *Fabric) mcastGroup(p *qp.Packet) *mcGroup {
	if p.Global {
		return f.mcast.find(p.DGID)
	}
	return f.mcast.findLID(p.DLID)
}
