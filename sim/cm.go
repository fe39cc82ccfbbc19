package sim

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"syscall"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/rdmacm"
	simcm "github.com/verbsim/verbsim/sim/internal/cm"
	"github.com/verbsim/verbsim/sim/internal/qp"
	"github.com/verbsim/verbsim/sim/trace"
	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// The connection manager (spec/catalogue.md, section CM; docs/rdma_cm.md):
// librdmacm and the kernel's RDMA CM and InfiniBand CM in one. Its state is
// guarded by the fabric's domain lock, like every engine object; its
// messages are packets to QP 1 of the ports (cm_recv.go), its timers engine
// timers (cmTimer). This file holds the agent, the CM handle and the
// constants; cm_channel.go the event channels, cm_id.go the IDs,
// cm_addr.go addressing, cm_conn.go the handshake verbs, cm_recv.go the
// protocol, cm_qp.go the QPs, cm_mcast.go multicast, cm_ep.go the
// synchronous helpers.

// The constants of the Linux CM that verbsim follows (CM-20, CM-21).
const (
	gsiQPN              = simcm.GSIQPN
	cmPacketLifeTime    = 18 // the path's packet lifetime (CMA_IBOE_PACKET_LIFETIME)
	cmResponseTimeout   = 20 // CMA_CM_RESPONSE_TIMEOUT
	cmMaxRetries        = 15 // CMA_MAX_CM_RETRIES
	cmMRAServiceTimeout = 24 // CMA_CM_MRA_SETTING's service timeout
	cmMaxBacklog        = 1024
	cmPortLow           = 32768 // the ephemeral port range (ip_local_port_range)
	cmPortHigh          = 60999
	cmEPTimeout         = 2000 // the resolution timeout of rdma_create_ep, ms
)

// cmMS converts an IBTA time code (4.096 µs × 2^t) to ticks the way the
// Linux CM does (cm_convert_to_ms): 2^(t-8) ms.
func cmMS(t uint8) uint64 {
	if t < 8 {
		t = 8
	}
	return (uint64(1) << (t - 8)) * 1_000_000
}

// cmAckTimeout is the local ACK timeout code of a path (cm_ack_timeout)
// for a device whose ca_ack_delay is 0, as verbsim's are: the packet
// lifetime plus one.
const cmAckTimeout = cmPacketLifeTime + 1

// cmAgent is a fabric's connection manager.
type cmAgent struct {
	f    *Fabric
	ctxs map[*Device]*Context // the contexts the CM opened (rdma_get_devices)
	pds  map[*Device]*PD      // their default PDs
	// binds holds the IDs bound to each port of each port space (CM-06).
	binds    map[bindKey][]*CMID
	lastPort uint16
	// conns are the InfiniBand CM connections by local communication ID;
	// remote the passive ones by the requester's (CA GUID, comm ID), to
	// recognise a retransmitted REQ (CM-32).
	conns  map[uint32]*cmConn
	remote map[remoteKey]*cmConn
	commID uint32
	seq    map[string]int // names for the trace
	gsi    map[*port]*gsiAgent
	// groups are the multicast groups the CM has joined on InfiniBand
	// ports, with the MLIDs it gave them (CM-26).
	mlids    map[verbs.GID]uint16
	lastMLID uint16
	// ids are the live IDs, in creation order.
	ids []*CMID
}

// liveIDs returns the IDs not yet destroyed, oldest first, dropping the
// destroyed ones from the list.
func (a *cmAgent) liveIDs() []*CMID {
	kept := a.ids[:0]
	for _, id := range a.ids {
		if id.state != cmDestroying {
			kept = append(kept, id)
		}
	}
	clear(a.ids[len(kept):])
	a.ids = kept
	return append([]*CMID(nil), kept...)
}

type bindKey struct {
	ps   rdmacm.PortSpace
	port uint16
}

type remoteKey struct {
	guid uint64
	comm uint32
}

func newCMAgent(f *Fabric) *cmAgent {
	return &cmAgent{
		f: f, ctxs: map[*Device]*Context{}, pds: map[*Device]*PD{}, binds: map[bindKey][]*CMID{},
		lastPort: cmPortLow - 1, conns: map[uint32]*cmConn{}, remote: map[remoteKey]*cmConn{},
		seq: map[string]int{}, gsi: map[*port]*gsiAgent{}, mlids: map[verbs.GID]uint16{}, lastMLID: lidMulticastBase,
	}
}

// gsiAgent names a port's connection manager in the trace ("dev0/cm port
// 1"): the sender and receiver of its messages.
type gsiAgent struct {
	p    *port
	name string
}

// TraceName implements domain.Object.
func (g *gsiAgent) TraceName() string { return g.name }

func (a *cmAgent) gsiOf(p *port) *gsiAgent {
	g := a.gsi[p]
	if g == nil {
		g = &gsiAgent{p: p, name: fmt.Sprintf("%s/cm port %d", p.dev.name, p.num)}
		a.gsi[p] = g
	}
	return g
}

// nameLocked names a new CM object ("cm/id#3").
func (a *cmAgent) nameLocked(kind string) string {
	a.seq[kind]++
	return fmt.Sprintf("cm/%s#%d", kind, a.seq[kind])
}

// contextLocked returns the CM's context of d, opening it the first time.
func (a *cmAgent) contextLocked(d *Device) *Context {
	c := a.ctxs[d]
	if c == nil {
		c = d.openLocked()
		c.cm = true
		a.ctxs[d] = c
	}
	return c
}

// pdLocked returns the default PD of d (librdmacm allocates one per
// device), allocating it the first time.
func (a *cmAgent) pdLocked(d *Device) (*PD, error) {
	if pd := a.pds[d]; pd != nil && !pd.dead {
		return pd, nil
	}
	pd, err := a.contextLocked(d).allocPDLocked()
	if err != nil {
		return nil, err
	}
	a.pds[d] = pd
	return pd, nil
}

// nextCommIDLocked returns a fresh local communication ID.
func (a *cmAgent) nextCommIDLocked() uint32 {
	for {
		a.commID++
		if a.commID != 0 && a.conns[a.commID] == nil {
			return a.commID
		}
	}
}

// CM is a fabric's connection manager as an application sees it: the
// rdma_* calls that take no ID. It implements rdmacm.CM; Fabric.RDMACM
// returns it. One fabric is one host: its IDs find each other's addresses
// on the fabric, and the carrier (Config.Remote) reaches other fabrics.
type CM struct{ f *Fabric }

var _ rdmacm.CM = (*CM)(nil)

// RDMACM returns the fabric's connection manager (nil for a nil fabric).
func (f *Fabric) RDMACM() *CM {
	if f == nil {
		return nil
	}
	return &CM{f: f}
}

func (m *CM) agent(verb string) (*cmAgent, error) {
	if m == nil || m.f == nil {
		return nil, verr.New(verb, syscall.EINVAL, "nil connection manager")
	}
	return m.f.cm, nil
}

// CreateEventChannel implements rdmacm.CM: rdma_create_event_channel
// (CM-02).
func (m *CM) CreateEventChannel() (rdmacm.EventChannel, error) {
	ch, err := m.createChannel()
	if err != nil {
		return nil, err
	}
	return ch, nil
}

func (m *CM) createChannel() (*CMChannel, error) {
	a, err := m.agent("rdma_create_event_channel")
	if err != nil {
		return nil, err
	}
	d := a.f.d
	d.Enter(domain.Op{Verb: "create_event_channel"})
	ch := a.newChannelLocked(false)
	d.Leave(domain.Op{Verb: "create_event_channel", Obj: ch}, nil)
	return ch, nil
}

// CreateID implements rdmacm.CM: rdma_create_id (CM-01). A nil ch makes a
// synchronous ID (CM-04).
func (m *CM) CreateID(ch rdmacm.EventChannel, context any, ps rdmacm.PortSpace) (rdmacm.ID, error) {
	id, err := m.createID("rdma_create_id", ch, context, ps, ps.QPType())
	if err != nil {
		return nil, err
	}
	return id, nil
}

func (m *CM) createID(verb string, ch rdmacm.EventChannel, context any, ps rdmacm.PortSpace, typ verbs.QPType) (_ *CMID, err error) {
	a, err := m.agent(verb)
	if err != nil {
		return nil, err
	}
	var c *CMChannel
	if ch != nil {
		var ok bool
		if c, ok = ch.(*CMChannel); !ok || c == nil || c.a != a {
			return nil, verr.New(verb, syscall.EINVAL, "the event channel was not created by this fabric's connection manager")
		}
	}
	switch ps {
	case rdmacm.PSTCP, rdmacm.PSUDP, rdmacm.PSIB:
	case rdmacm.PSIPoIB:
		return nil, verr.New(verb, syscall.EPROTONOSUPPORT, "RDMA_PS_IPOIB is not simulated (CM-01)")
	default:
		return nil, verr.Errorf(verb, syscall.EINVAL, "port space %#x is not an RDMA_PS_ value (CM-01)", uint16(ps))
	}
	d := a.f.d
	op := domain.Op{Verb: strings.TrimPrefix(verb, "rdma_")}
	d.Enter(op)
	defer func() { d.Leave(op, err) }()
	if c != nil && c.dead {
		return nil, verr.New(verb, syscall.EBADF, "the event channel has been destroyed")
	}
	id := a.newIDLocked(c, context, ps, typ)
	op.Obj = id
	if d.Tracing() {
		op.Rec = &trace.Record{Detail: fmt.Sprintf("%v %v", ps, typ)}
	}
	return id, nil
}

// newIDLocked makes an IDLE ID on channel c (nil: synchronous).
func (a *cmAgent) newIDLocked(c *CMChannel, context any, ps rdmacm.PortSpace, typ verbs.QPType) *CMID {
	id := &CMID{a: a, name: a.nameLocked("id"), ctx: context, ps: ps, qpType: typ}
	id.timer.init(id.name+" address resolution", nil, func() { a.addrTimeoutLocked(id) })
	id.setChannelLocked(c)
	a.ids = append(a.ids, id)
	a.f.d.Created(id)
	return id
}

// Devices implements rdmacm.CM: rdma_get_devices, the CM's context of each
// device, in device order.
func (m *CM) Devices() ([]verbs.Context, error) {
	a, err := m.agent("rdma_get_devices")
	if err != nil {
		return nil, err
	}
	d := a.f.d
	d.Enter(domain.Op{})
	defer d.Leave(domain.Op{}, nil)
	out := make([]verbs.Context, 0, len(a.f.devices))
	for _, dev := range a.f.devices {
		out = append(out, a.contextLocked(dev).Verbs())
	}
	return out, nil
}

// cmTimer is a timer of the connection manager: an engine timer that
// belongs to no QP (qp.TimerOwner).
type cmTimer struct {
	t    qp.Timer
	name string
	dev  *Device
	fire func()
}

func (c *cmTimer) init(name string, dev *Device, fire func()) {
	c.name, c.dev, c.fire = name, dev, fire
	c.t = qp.Timer{Owner: c, Index: -1}
}

// FireLocked implements qp.TimerOwner.
func (c *cmTimer) FireLocked() { c.fire() }

// TraceName implements qp.TimerOwner.
func (c *cmTimer) TraceName() string { return c.name }

func (c *cmTimer) device() *Device { return c.dev }

func (a *cmAgent) armLocked(c *cmTimer, after uint64) { a.f.eng.armLocked(&c.t, after) }
func (a *cmAgent) stopLocked(c *cmTimer)              { a.f.eng.stopTimer(&c.t) }

// cmCall is the bookkeeping of one CM verb on an ID: it enters the domain,
// checks the ID and leaves with the trace record.
func (a *cmAgent) enter(verb string, id *CMID) domain.Op {
	op := domain.Op{Verb: verb, Obj: id}
	a.f.d.Enter(op)
	return op
}

// errNilID is the error of a call on a nil ID.
func errNilID(verb string) error { return verr.New(verb, syscall.EINVAL, "nil rdma_cm_id") }

// waitCtx is the context of the waits librdmacm makes without one (a
// synchronous ID's calls): the engine's virtual time bounds them (CM-20).
var waitCtx = context.Background()

// zeroAddrPort reports whether a is the zero value (no address).
func zeroAddrPort(a netip.AddrPort) bool { return !a.Addr().IsValid() }
