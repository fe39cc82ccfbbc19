package sim

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"strconv"
	"syscall"
	"time"

	"github.com/verbsim/verbsim/rdmacm"
	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// Addressing: binding to addresses and ports (CM-06), listening (CM-07),
// address and route resolution (CM-09, CM-10), rdma_getaddrinfo (CM-11)
// and the options (CM-28).

// AddrResolver is an optional interface of a Remote: it knows the ports of
// the other fabrics by their IP addresses, as ARP (on RoCE) or IPoIB
// neighbour discovery (on InfiniBand) would, so that rdma_resolve_addr
// reaches them (CM-09). ResolveAddr is called under the fabric's lock and
// must neither block nor call the fabric. ethernet says the port is RoCE
// (it is then addressed by gid), otherwise InfiniBand (lid and gid).
type AddrResolver interface {
	ResolveAddr(ip netip.Addr) (gid verbs.GID, lid uint16, mtu verbs.MTU, ethernet, ok bool)
}

// BindAddr implements rdmacm.ID: rdma_bind_addr (CM-06).
func (id *CMID) BindAddr(addr netip.AddrPort) error {
	done, err := id.call("rdma_bind_addr")
	if err != nil {
		return err
	}
	return done(id.a.bindLocked("rdma_bind_addr", id, addr))
}

func (a *cmAgent) bindLocked(verb string, id *CMID, addr netip.AddrPort) error {
	ip := addr.Addr()
	switch {
	case !ip.IsValid():
		return verr.New(verb, syscall.EINVAL, "no IPv4 or IPv6 address (librdmacm's ucma_addrlen)")
	case id.state != cmIdle:
		return verr.Errorf(verb, syscall.EINVAL, "the rdma_cm_id is %v, not IDLE (CM-06)", id.state)
	}
	var p *port
	if !ip.IsUnspecified() {
		if ip.IsLoopback() {
			return verr.Errorf(verb, syscall.ENODEV, "%v is the loopback interface's address: no RDMA device has it", ip)
		}
		if p = a.f.byAddr[ip]; p == nil {
			return verr.Errorf(verb, syscall.EADDRNOTAVAIL, "no port has address %v (CM-06)", ip)
		}
		if p.dev.removed {
			return verr.Errorf(verb, syscall.ENODEV, "the device %q of %v has been removed", p.dev.name, ip)
		}
	}
	if !id.afSet {
		id.afonly = ip.Is4()
	}
	id.src = addr
	port, err := a.takePortLocked(verb, id, addr.Port())
	if err != nil {
		id.src = netip.AddrPort{}
		return err
	}
	id.src = netip.AddrPortFrom(ip, port)
	if p != nil {
		a.attachLocked(id, p)
	}
	id.state = cmAddrBound
	return nil
}

// attachLocked binds the ID to port p's device (an ID's Verbs).
func (a *cmAgent) attachLocked(id *CMID, p *port) {
	id.dev, id.port, id.vctx = p.dev, p, a.contextLocked(p.dev)
}

// takePortLocked gives id port (0: a free one) in its port space.
func (a *cmAgent) takePortLocked(verb string, id *CMID, port uint16) (uint16, error) {
	if port == 0 {
		for range cmPortHigh - cmPortLow + 1 {
			a.lastPort++
			if a.lastPort < cmPortLow || a.lastPort > cmPortHigh {
				a.lastPort = cmPortLow
			}
			k := bindKey{id.ps, a.lastPort}
			if len(a.binds[k]) == 0 {
				a.binds[k] = append(a.binds[k], id)
				id.bound = true
				return a.lastPort, nil
			}
		}
		return 0, verr.Errorf(verb, syscall.EADDRNOTAVAIL, "every port of %v from %d to %d is taken", id.ps, cmPortLow, cmPortHigh)
	}
	k := bindKey{id.ps, port}
	if err := a.checkPortLocked(verb, id, a.binds[k], id.reuse); err != nil {
		return 0, err
	}
	a.binds[k] = append(a.binds[k], id)
	id.bound = true
	return port, nil
}

// checkPortLocked is the kernel's cma_check_port: may id use the port the
// owners hold?
func (a *cmAgent) checkPortLocked(verb string, id *CMID, owners []*CMID, reuse bool) error {
	mine := id.src.Addr()
	for _, o := range owners {
		if o == id {
			continue
		}
		if o.state != cmListen && reuse && o.reuse {
			continue
		}
		theirs := o.src.Addr()
		if id.afonly && o.afonly && mine.Is4() != theirs.Is4() {
			continue
		}
		if mine.IsUnspecified() || theirs.IsUnspecified() {
			return verr.Errorf(verb, syscall.EADDRNOTAVAIL, "port %d of %v is bound, and one of the two addresses is the wildcard (CM-06)", id.src.Port(), id.ps)
		}
		if mine == theirs {
			return verr.Errorf(verb, syscall.EADDRINUSE, "%v is already bound in %v (CM-06)", o.src, id.ps)
		}
	}
	return nil
}

// unbindLocked releases the ID's port.
func (a *cmAgent) unbindLocked(id *CMID) {
	if !id.bound {
		return
	}
	k := bindKey{id.ps, id.src.Port()}
	owners := a.binds[k]
	for i, o := range owners {
		if o == id {
			owners = append(owners[:i], owners[i+1:]...)
			break
		}
	}
	if len(owners) == 0 {
		delete(a.binds, k)
	} else {
		a.binds[k] = owners
	}
	id.bound = false
}

// Listen implements rdmacm.ID: rdma_listen (CM-07).
func (id *CMID) Listen(backlog int) error {
	const verb = "rdma_listen"
	done, err := id.call(verb)
	if err != nil {
		return err
	}
	a := id.a
	if id.state == cmIdle {
		if err := a.bindLocked(verb, id, netip.AddrPortFrom(netip.IPv4Unspecified(), 0)); err != nil {
			return done(err)
		}
	}
	if id.state != cmAddrBound {
		return done(verr.Errorf(verb, syscall.EINVAL, "the rdma_cm_id is %v, not bound (CM-07)", id.state))
	}
	if id.reuse {
		if err := a.checkPortLocked(verb, id, a.binds[bindKey{id.ps, id.src.Port()}], false); err != nil {
			return done(err)
		}
	}
	if backlog <= 0 || backlog > cmMaxBacklog {
		backlog = cmMaxBacklog
	}
	id.backlog = backlog
	id.state = cmListen
	return done(nil)
}

// listenerLocked finds the listener of a request for port in port space
// ps, addressed to dst, arriving on port p (CM-07): one bound to dst on p's
// device, or a wildcard one of dst's family.
func (a *cmAgent) listenerLocked(ps rdmacm.PortSpace, port uint16, dst netip.Addr, p *port) *CMID {
	var wild *CMID
	for _, o := range a.binds[bindKey{ps, port}] {
		if o.state != cmListen {
			continue
		}
		src := o.src.Addr()
		switch {
		case src.IsUnspecified():
			if (!o.afonly || src.Is4() == dst.Is4()) && wild == nil {
				wild = o
			}
		case src == dst && o.dev == p.dev:
			return o
		}
	}
	return wild
}

// ResolveAddr implements rdmacm.ID: rdma_resolve_addr (CM-09). The outcome
// is an event: ADDR_RESOLVED, or ADDR_ERROR after timeout of virtual time.
func (id *CMID) ResolveAddr(src, dst netip.AddrPort, timeout time.Duration) error {
	const verb = "rdma_resolve_addr"
	done, err := id.call(verb)
	if err != nil {
		return err
	}
	a := id.a
	if err := a.resolveAddrLocked(verb, id, src, dst, timeout); err != nil {
		return done(err)
	}
	return done(a.completeLocked(verb, id))
}

func (a *cmAgent) resolveAddrLocked(verb string, id *CMID, src, dst netip.AddrPort, timeout time.Duration) error {
	if !dst.Addr().IsValid() {
		return verr.New(verb, syscall.EINVAL, "no destination address")
	}
	if timeout < 0 {
		return verr.Errorf(verb, syscall.EINVAL, "timeout %v is negative", timeout)
	}
	if id.state == cmIdle && !zeroAddrPort(src) && src.Addr().Is4() != dst.Addr().Is4() {
		return verr.Errorf(verb, syscall.EINVAL, "the source %v and the destination %v are of different families (CM-09)", src, dst)
	}
	if id.state == cmIdle {
		from := src
		if zeroAddrPort(from) {
			from = netip.AddrPortFrom(netip.IPv4Unspecified(), 0)
			if dst.Addr().Is6() {
				from = netip.AddrPortFrom(netip.IPv6Unspecified(), 0)
			}
		}
		if err := a.bindLocked(verb, id, from); err != nil {
			return err
		}
	}
	switch {
	case id.src.Addr().Is4() != dst.Addr().Is4():
		return verr.Errorf(verb, syscall.EINVAL, "the destination %v is not of the family of the bound address %v (CM-09)", dst, id.src)
	case id.state != cmAddrBound:
		return verr.Errorf(verb, syscall.EINVAL, "the rdma_cm_id is %v, not bound (CM-09)", id.state)
	}
	id.dst = dst
	id.state = cmAddrQuery
	if err := a.findPeerLocked(id, dst.Addr()); err != nil {
		if errors.Is(err, errNoNeighbour) {
			a.armLocked(&id.timer, uint64(timeout))
			return nil
		}
		id.state = cmAddrBound
		id.dst = netip.AddrPort{}
		return verr.Wrap(verb, verr.Errno(err), "", err)
	}
	id.state = cmAddrResolved
	a.raiseLocked(&CMEvent{typ: rdmacm.EventAddrResolved, id: id})
	return nil
}

// errNoNeighbour says that no port answers for an address: resolution
// ends in ADDR_ERROR when the timeout passes, as an unanswered ARP does.
var errNoNeighbour = errors.New("no port has the address")

// findPeerLocked finds the port that owns ip and binds the ID to the port
// that reaches it (CM-09), filling the ID's peer.
func (a *cmAgent) findPeerLocked(id *CMID, ip netip.Addr) error {
	if ip.IsUnspecified() || ip.IsLoopback() {
		p := id.port
		if p == nil {
			p = a.loopbackPortLocked()
		}
		if p == nil {
			return verr.New("rdma_resolve_addr", syscall.ENODEV, "no device has an active port to loop back through")
		}
		if id.port == nil {
			a.attachLocked(id, p)
		}
		a.setPeerLocked(id, p.attr.LID, id.localGID(), p.attr.LinkLayer == verbs.LinkLayerEthernet, p.attr.ActiveMTU)
		return nil
	}
	if p := a.f.byAddr[ip]; p != nil && !p.dev.removed {
		eth := p.attr.LinkLayer == verbs.LinkLayerEthernet
		if id.port == nil {
			a.attachLocked(id, p)
			id.src = netip.AddrPortFrom(ip, id.src.Port())
		} else if (id.port.attr.LinkLayer == verbs.LinkLayerEthernet) != eth {
			return verr.Errorf("rdma_resolve_addr", syscall.ENETUNREACH, "%v is on another link layer than the bound port", ip)
		}
		gid := p.gids[0]
		if eth {
			gid = ipGID(ip)
		}
		a.setPeerLocked(id, p.attr.LID, gid, eth, p.attr.ActiveMTU)
		return nil
	}
	if r, ok := a.f.eng.remote.(AddrResolver); ok {
		if gid, lid, mtu, eth, ok := r.ResolveAddr(ip); ok {
			if id.port == nil {
				p := a.firstActivePortLocked(eth)
				if p == nil {
					return verr.Errorf("rdma_resolve_addr", syscall.ENETUNREACH, "no active port reaches %v", ip)
				}
				a.attachLocked(id, p)
				id.src = netip.AddrPortFrom(p.addrOfFamily(ip.Is4()), id.src.Port())
			}
			a.setPeerLocked(id, lid, gid, eth, mtu)
			return nil
		}
	}
	return errNoNeighbour
}

func (a *cmAgent) setPeerLocked(id *CMID, lid uint16, gid verbs.GID, eth bool, mtu verbs.MTU) {
	id.peerLID, id.peerGID, id.peerGlobal = lid, gid, eth
	if mtu == 0 {
		mtu = id.port.attr.ActiveMTU
	}
	id.peerMTU = mtu
}

// loopbackPortLocked is the port a wildcard destination resolves to: the
// first active port of the first device (K:cma.c cma_bind_loopback).
func (a *cmAgent) loopbackPortLocked() *port {
	for _, d := range a.f.devices {
		if d.removed {
			continue
		}
		for _, p := range d.ports {
			if p.attr.State == verbs.PortActive {
				return p
			}
		}
	}
	return nil
}

func (a *cmAgent) firstActivePortLocked(eth bool) *port {
	for _, d := range a.f.devices {
		for _, p := range d.ports {
			if !d.removed && p.attr.State == verbs.PortActive && (p.attr.LinkLayer == verbs.LinkLayerEthernet) == eth {
				return p
			}
		}
	}
	return nil
}

// addrOfFamily is the port's first address of the family.
func (p *port) addrOfFamily(v4 bool) netip.Addr {
	for _, a := range p.addrs {
		if a.Is4() == v4 {
			return a
		}
	}
	return netip.Addr{}
}

// localGID is the GID the ID's packets and paths name as their source:
// on RoCE the GID of its IP address, on InfiniBand the port's GID 0.
func (id *CMID) localGID() verbs.GID {
	if id.port.attr.LinkLayer == verbs.LinkLayerEthernet && id.src.Addr().IsValid() && !id.src.Addr().IsUnspecified() {
		return ipGID(id.src.Addr())
	}
	return id.port.gids[0]
}

// localGIDIndex is the index of localGID in the port's table.
func (id *CMID) localGIDIndex() uint8 {
	g := id.localGID()
	for i, x := range id.port.gids {
		if x == g {
			return uint8(i)
		}
	}
	return 0
}

// addrTimeoutLocked ends an address resolution nobody answered (CM-09).
func (a *cmAgent) addrTimeoutLocked(id *CMID) {
	if id.state != cmAddrQuery {
		return
	}
	id.state = cmAddrBound
	a.raiseLocked(&CMEvent{typ: rdmacm.EventAddrError, id: id, status: -int(syscall.ETIMEDOUT)})
}

// ResolveRoute implements rdmacm.ID: rdma_resolve_route (CM-10).
func (id *CMID) ResolveRoute(timeout time.Duration) error {
	const verb = "rdma_resolve_route"
	done, err := id.call(verb)
	if err != nil {
		return err
	}
	a := id.a
	if id.state != cmAddrResolved {
		return done(verr.Errorf(verb, syscall.EINVAL, "the rdma_cm_id is %v, not ADDR_RESOLVED (CM-10)", id.state))
	}
	if id.dev.removed {
		return done(verr.New(verb, syscall.ENODEV, "the device has been removed (CM-24)"))
	}
	id.route = a.routeLocked(id)
	id.state = cmRouteResolved
	a.raiseLocked(&CMEvent{typ: rdmacm.EventRouteResolved, id: id})
	return done(a.completeLocked(verb, id))
}

// routeLocked is the path of a resolved ID (CM-10).
func (a *cmAgent) routeLocked(id *CMID) rdmacm.Route {
	p := id.port
	r := rdmacm.Route{
		SGID: id.localGID(), DGID: id.peerGID, SLID: p.attr.LID, DLID: id.peerLID,
		PKey: 0xffff, MTU: min(p.attr.ActiveMTU, id.peerMTU), PacketLifeTime: cmPacketLifeTime, NumPaths: 1,
	}
	if id.peerGlobal {
		r.HopLimit, r.TrafficClass = 64, id.tos
	}
	return r
}

// GetAddrInfo implements rdmacm.CM: rdma_getaddrinfo with numeric
// addresses and ports (CM-11). A failure of the name lookup is a
// *rdmacm.AddrInfoError carrying its EAI_ code.
func (m *CM) GetAddrInfo(node, service string, hints *rdmacm.AddrInfo) ([]rdmacm.AddrInfo, error) {
	const verb = "rdma_getaddrinfo"
	if _, err := m.agent(verb); err != nil {
		return nil, err
	}
	if node == "" && service == "" && hints == nil {
		return nil, verr.New(verb, syscall.EINVAL, "neither node, service nor hints")
	}
	var h rdmacm.AddrInfo
	if hints != nil {
		h = *hints
	}
	out := rdmacm.AddrInfo{Flags: h.Flags & rdmacm.AIPassive, QPType: h.QPType, PortSpace: h.PortSpace}
	if out.PortSpace == 0 {
		out.PortSpace = rdmacm.PSTCP
		if out.QPType == verbs.QPTypeUD {
			out.PortSpace = rdmacm.PSUDP
		}
	}
	if out.QPType == 0 {
		out.QPType = out.PortSpace.QPType()
	}
	var port uint16
	if service != "" {
		n, err := strconv.ParseUint(service, 10, 16)
		if err != nil {
			return nil, &rdmacm.AddrInfoError{Code: rdmacm.EAIService, Node: node, Service: service}
		}
		port = uint16(n)
	}
	var ip netip.Addr
	switch {
	case node != "":
		var err error
		if ip, err = netip.ParseAddr(node); err != nil || ip.Zone() != "" {
			return nil, &rdmacm.AddrInfoError{Code: rdmacm.EAINoName, Node: node, Service: service}
		}
	case h.Family == rdmacm.AFInet6:
		ip = netip.IPv6Unspecified()
	default:
		ip = netip.IPv4Unspecified()
	}
	if (h.Family == rdmacm.AFInet && !ip.Is4()) || (h.Family == rdmacm.AFInet6 && !ip.Is6()) {
		return nil, &rdmacm.AddrInfoError{Code: rdmacm.EAIFamily, Node: node, Service: service}
	}
	out.Family = rdmacm.AFInet6
	if ip.Is4() {
		out.Family = rdmacm.AFInet
	}
	ap := netip.AddrPortFrom(ip, port)
	if out.Flags&rdmacm.AIPassive != 0 {
		out.Src = ap
	} else {
		out.Dst, out.DstCanonName = ap, ""
		if h.Src.IsValid() {
			out.Src = h.Src
		}
	}
	return []rdmacm.AddrInfo{out}, nil
}

// SetOption implements rdmacm.ID: rdma_set_option (CM-28). An int is 4
// bytes in the machine's order (little-endian on the hosts verbsim runs on).
func (id *CMID) SetOption(level rdmacm.OptionLevel, name rdmacm.OptionName, value []byte) error {
	const verb = "rdma_set_option"
	done, err := id.call(verb)
	if err != nil {
		return err
	}
	return done(id.setOptionLocked(verb, level, name, value))
}

func (id *CMID) setOptionLocked(verb string, level rdmacm.OptionLevel, name rdmacm.OptionName, value []byte) error {
	size := func(n int) error {
		if len(value) != n {
			return verr.Errorf(verb, syscall.EINVAL, "option %d takes %d byte(s), not %d (CM-28)", name, n, len(value))
		}
		return nil
	}
	switch level {
	case rdmacm.OptionLevelID:
	case rdmacm.OptionLevelIB:
		return verr.Errorf(verb, syscall.ENOSYS, "RDMA_OPTION_IB option %d is not simulated (CM-28)", name)
	default:
		return verr.Errorf(verb, syscall.ENOSYS, "unknown option level %d (CM-28)", level)
	}
	switch name {
	case rdmacm.OptionTOS:
		if err := size(1); err != nil {
			return err
		}
		id.tos = value[0]
	case rdmacm.OptionReuseAddr:
		if err := size(4); err != nil {
			return err
		}
		on := binary.LittleEndian.Uint32(value) != 0
		if !on && id.state != cmIdle {
			return verr.Errorf(verb, syscall.EINVAL, "REUSEADDR is switched off only on an IDLE rdma_cm_id, this one is %v (CM-28)", id.state)
		}
		id.reuse = on
	case rdmacm.OptionAFOnly:
		if err := size(4); err != nil {
			return err
		}
		if id.state != cmIdle && id.state != cmAddrBound {
			return verr.Errorf(verb, syscall.EINVAL, "AFONLY is set before the rdma_cm_id goes past ADDR_BOUND, this one is %v (CM-28)", id.state)
		}
		id.afonly, id.afSet = binary.LittleEndian.Uint32(value) != 0, true
	case rdmacm.OptionAckTimeout:
		if err := size(1); err != nil {
			return err
		}
		if value[0] > 31 {
			return verr.Errorf(verb, syscall.EINVAL, "ACK timeout code %d is above 31", value[0])
		}
		id.ackTO = value[0]
	default:
		return verr.Errorf(verb, syscall.ENOSYS, "unknown RDMA_OPTION_ID option %d (CM-28)", name)
	}
	return nil
}
