package sim

import (
	"net/netip"
	"syscall"

	"github.com/verbsim/verbsim/rdmacm"
	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// Multicast through the CM: rdma_join_multicast and rdma_leave_multicast
// (CM-26). verbsim's subnet manager answers joins at once.

// cmMcast is one join of an ID.
type cmMcast struct {
	id       *CMID
	addr     netip.Addr
	ctx      any
	flags    rdmacm.JoinFlags
	mgid     verbs.GID
	mlid     uint16
	attached bool
	// reported and acked count the events of the join (librdmacm waits
	// for their acks when leaving).
	reported, acked int
}

// JoinMulticast implements rdmacm.ID: rdma_join_multicast (CM-26).
func (id *CMID) JoinMulticast(addr netip.Addr, context any) error {
	return id.join("rdma_join_multicast", addr, rdmacm.JoinFullMember, context)
}

// JoinMulticastEx implements rdmacm.ID: rdma_join_multicast_ex with the
// address and the join flag (CM-26).
func (id *CMID) JoinMulticastEx(addr netip.Addr, flags rdmacm.JoinFlags, context any) error {
	return id.join("rdma_join_multicast_ex", addr, flags, context)
}

func (id *CMID) join(verb string, addr netip.Addr, flags rdmacm.JoinFlags, context any) error {
	done, err := id.call(verb)
	if err != nil {
		return err
	}
	a := id.a
	switch {
	case !addr.IsValid():
		return done(verr.New(verb, syscall.EINVAL, "no multicast address"))
	case !flags.Valid():
		return done(verr.Errorf(verb, syscall.EINVAL, "join flag %d is not an rdma_cm_mc_join_flags value (CM-26)", flags))
	case id.qpType != verbs.QPTypeUD:
		return done(verr.New(verb, syscall.EINVAL, "only a UD rdma_cm_id joins multicast groups (CM-26)"))
	case id.state != cmAddrBound && id.state != cmAddrResolved || id.port == nil:
		return done(verr.Errorf(verb, syscall.EINVAL, "the rdma_cm_id is %v and on no device; join after rdma_bind_addr or rdma_resolve_addr (CM-26)", id.state))
	case id.dev.removed:
		return done(verr.New(verb, syscall.ENODEV, "the device has been removed (CM-24)"))
	}
	mc := &cmMcast{id: id, addr: addr, ctx: context, flags: flags, mgid: a.mgidLocked(id, addr)}
	eth := id.port.attr.LinkLayer == verbs.LinkLayerEthernet
	if !eth {
		mc.mlid = a.mlidLocked(mc.mgid)
	}
	id.mcs = append(id.mcs, mc)
	hop := uint8(1)
	if eth && addr.Is4() {
		hop = 64
	}
	av := verbs.AHAttr{DLID: mc.mlid, IsGlobal: true, PortNum: id.port.num,
		GRH: verbs.GlobalRoute{DGID: mc.mgid, SGIDIndex: id.localGIDIndex(), HopLimit: hop}}
	a.raiseLocked(&CMEvent{typ: rdmacm.EventMulticastJoin, id: id, mc: mc, mcCtx: context,
		ud: rdmacm.UDParam{AHAttr: av, QPNum: 0xffffff, QKey: rdmacm.UDPQKey}})
	return done(a.completeLocked(verb, id))
}

// mgidLocked maps a multicast address to the group's GID (CM-26): on RoCE
// v2 an IPv4 address is mapped into IPv6 and an IPv6 address is the GID; on
// InfiniBand the IPoIB mapping, with the RDMA CM's signature for the UDP
// port space (K:cma.c cma_set_mgid, cma_iboe_set_mgid).
func (a *cmAgent) mgidLocked(id *CMID, addr netip.Addr) verbs.GID {
	if id.port.attr.LinkLayer == verbs.LinkLayerEthernet {
		return ipGID(addr)
	}
	var g verbs.GID
	if addr.Is4() {
		g = verbs.GID{0xff, 0x12, 0x40, 0x1b, 0xff, 0xff}
		v := addr.As4()
		copy(g[12:], v[:])
	} else {
		g = verbs.GID{0xff, 0x12, 0x60, 0x1b, 0xff, 0xff}
		v := addr.As16()
		copy(g[6:], v[6:])
	}
	if id.ps == rdmacm.PSUDP {
		g[3] = 0x01
	}
	return g
}

// mlidLocked is the multicast LID the subnet manager gives a group on
// InfiniBand: the same for every join of the group, from 0xC001.
func (a *cmAgent) mlidLocked(mgid verbs.GID) uint16 {
	if l, ok := a.mlids[mgid]; ok {
		return l
	}
	a.lastMLID++
	a.mlids[mgid] = a.lastMLID
	return a.lastMLID
}

// joinedLocked is librdmacm's part of reading MULTICAST_JOIN: the ID's QP
// is attached to the group, unless the join is send-only (cma:cma.c
// ucma_process_join).
func (a *cmAgent) joinedLocked(ev *CMEvent) {
	mc, id := ev.mc, ev.id
	if id.qp == nil || mc.flags == rdmacm.JoinSendOnlyFullMember || mc.attached || id.state == cmDestroying {
		return
	}
	if err := a.f.mcastLocked("ibv_attach_mcast", id.qp, id.dev, mc.mgid, mc.mlid, true); err != nil {
		ev.typ, ev.status = rdmacm.EventMulticastError, -int(verr.Errno(err))
		return
	}
	mc.attached = true
}

// LeaveMulticast implements rdmacm.ID: rdma_leave_multicast (CM-26): the
// QP is detached, the join's unread events dropped, and the call waits
// until the join's events that were read are acknowledged.
func (id *CMID) LeaveMulticast(addr netip.Addr) error {
	const verb = "rdma_leave_multicast"
	done, err := id.call(verb)
	if err != nil {
		return err
	}
	a := id.a
	var mc *cmMcast
	for i, m := range id.mcs {
		if m.addr == addr {
			mc = m
			id.mcs = append(id.mcs[:i], id.mcs[i+1:]...)
			break
		}
	}
	if mc == nil {
		return done(verr.Errorf(verb, syscall.EADDRNOTAVAIL, "the rdma_cm_id has not joined %v (CM-26)", addr))
	}
	a.leaveLocked(id, mc)
	w := func() bool { return mc.acked >= mc.reported }
	if !w() {
		if err := a.waitAcksLocked(verb, id, waitCtx); err != nil {
			return done(err)
		}
	}
	return done(nil)
}

// leaveLocked detaches the ID's QP from the group and drops the join's
// unread events.
func (a *cmAgent) leaveLocked(id *CMID, mc *cmMcast) {
	if mc.attached && id.qp != nil && !id.qp.q.DestroyedLocked() {
		_ = a.f.mcastLocked("ibv_detach_mcast", id.qp, id.dev, mc.mgid, mc.mlid, false)
	}
	mc.attached = false
	if id.ch != nil {
		id.ch.q.RemoveIfLocked(func(ev *CMEvent) bool { return ev.mc == mc })
	}
}
